"""Probe conversations: render the template on messages that differ in one thing at a time.

Every probe message carries unique sentinel strings (``QX`` plus a letter and a digit) that no
template contains, so where a sentinel lands in a render says exactly where that part of the
message went. A probe that raises is recorded as evidence (``Probe.error``), never re-raised:
templates refuse some shapes (string vs dict arguments, id formats) and that refusal is itself
information.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..errors import TemplateError
from .rules import Rule

__all__ = ["ARGS1", "ARGS2", "INT1", "NAME1", "NAME2", "RULES", "CallShape", "Probe", "Prober", "after_user", "call",
           "call_id", "tools_for"]

# the call-turn shapes a template may need before it renders a call, and what needing one says
SHAPE_STRING_ARGS = Rule("render.string_arguments", "tools.render",
                         "the template renders calls only when arguments are a JSON string, not a mapping")
SHAPE_NO_CONTENT = Rule("render.content_none", "tools.render",
                        "the template renders calls only when the call turn's content is None")
SHAPE_NO_IDS = Rule("render.no_ids", "tools.ids",
                    "with a caller's id the template writes the id where the name goes: probe without ids")
SHAPE_PERMISSIVE = Rule("render.permissive", "tools.render",
                        "calls render only under other engines' laxer semantics: the model saw renders like these")
SHAPE_REASONED = Rule("render.reasoned", "tools.render",
                      "calls render only on turns that carry reasoning (read unguarded)")
SHAPE_DOCUMENTS = Rule("render.documents", "tools.render",
                       "calls render only on the retrieval branch (documents given)")
UNPASSED = Rule("variables.unpassed", "variables",
                "a variable no caller passes shapes the system prompt, not the turn: bind it to ''")
OUT_OF_TIME = Rule("renders.out_of_time", "renders",
                   "probes stopped by the time budget leave unknown what they would have shown")
RULES = (OUT_OF_TIME, SHAPE_STRING_ARGS, SHAPE_NO_CONTENT, SHAPE_NO_IDS, SHAPE_PERMISSIVE, SHAPE_REASONED,
         SHAPE_DOCUMENTS, UNPASSED)

NAME1, NAME2 = "fnQXa", "fnQXb"
KEY1, KEY2 = "argQXa", "argQXb"
VAL1, VAL2 = "valQXa1", "valQXb2"
INT1 = 7  # the second argument of the first probe call: an integer, so its text differs from a string's
CONTENT, REASONING, USER = "CQXc1", "RQXr1", "UQXu1"


ARGS1: dict[str, Any] = {KEY1: VAL1, KEY2: INT1}  # the first probe call's arguments
ARGS2: dict[str, Any] = {KEY1: VAL2}  # the second's


def call_id(index: int) -> str:
    """The caller's id of probe call ``index`` (1-based): 9 alphanumerics, as some templates insist."""
    return f"QXid{index:05d}"


def tools_for(names: Sequence[str] = (NAME1, NAME2)) -> list[dict[str, Any]]:
    params = {"type": "object", "properties": {KEY1: {"type": "string", "description": "a"},
                                               KEY2: {"type": "integer", "description": "b"}},
              "required": [KEY1]}
    return [{"type": "function", "function": {"name": n, "description": f"tool {n}", "parameters": params}}
            for n in names]


def call(name: str, args: Mapping[str, Any], index: int, as_string: bool = False,
         with_id: bool = True, id_is_name: bool = False) -> dict[str, Any]:
    """An OpenAI-format tool call; ids are 9 alphanumerics (some templates insist on that).

    Without an id some templates write the id the model itself emits (Kimi K2's
    ``functions.NAME:0``), where with one they write the caller's id instead of the name.
    ``id_is_name`` gives the call the name as its id: a template that copies the id where
    others write the name then shows where its id slot is.
    """
    arguments: Any = json.dumps(dict(args), ensure_ascii=False) if as_string else dict(args)
    out: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if id_is_name:
        return {"id": name, **out}
    return {"id": call_id(index), **out} if with_id else out


@dataclass(frozen=True)
class CallShape:
    """How a tool-call turn is written for a template: what the call probes found renders.

    Argument form and content first; then whether ids are given (a caller's id may replace the
    name), the permissive semantics, reasoning on the turn, retrieval documents in the context.
    The self-check writes its random call turns the same way.
    """

    form: str = "dict arguments"
    as_string: bool = False
    content: str | None = ""
    ids: bool = True
    permissive: bool = False
    reasoned: bool = False
    documents: bool = False
    id_is_name: bool = False

    @property
    def label(self) -> str:
        extra = [x for x, on in (("no ids", not self.ids), ("permissive", self.permissive),
                                 ("with reasoning", self.reasoned), ("with documents", self.documents),
                                 ("ids that are the names", self.id_is_name)) if on]
        return ", ".join([self.form, *extra])

    def departures(self) -> list[tuple[Rule, str, float | None]]:
        """How this shape departs from the plain one: (rule, why, confidence cap) for each departure."""
        out: list[tuple[Rule, str, float | None]] = []
        if self.as_string:
            out.append((SHAPE_STRING_ARGS, "arguments passed as a JSON string", None))
        if self.content is None:
            out.append((SHAPE_NO_CONTENT, "call turns carry content None", None))
        if not self.ids:
            out.append((SHAPE_NO_IDS, "calls render with their names only when the caller gives no id", None))
        if self.permissive:
            out.append((SHAPE_PERMISSIVE, "content None kept, lists mutable, tojson of an iterator", 0.85))
        if self.reasoned:
            out.append((SHAPE_REASONED, "the call turn carries reasoning", 0.85))
        if self.documents:
            out.append((SHAPE_DOCUMENTS, "retrieval documents in the context", 0.85))
        return out

    def call(self, name: str, args: Mapping[str, Any], index: int) -> dict[str, Any]:
        return call(name, args, index, self.as_string, self.ids, self.id_is_name)

    def message(self, calls: list[dict[str, Any]], reasoning: str = REASONING) -> dict[str, Any]:
        """An assistant turn with ``calls`` (and ``reasoning`` when the shape carries it)."""
        msg = {"role": "assistant", "content": self.content, "tool_calls": calls}
        return {**msg, "reasoning_content": reasoning} if self.reasoned else msg

    def context(self) -> dict[str, Any]:
        """Extra template variables the turn renders with."""
        return {"documents": [{"title": "QXdoc", "text": "QXdoc text"}]} if self.documents else {}


@dataclass
class Probe:
    """One rendered assistant turn: the text the model would have produced after the prompt."""

    label: str
    span: str | None = None          # the assistant's output (None when the render failed)
    prompt_tail: str = ""            # what the generation prompt adds that the history lacks
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Prober:
    """Renders probes for one template, with the fallbacks templates need."""

    def __init__(self, template: str, bos: str | None = None, eos: str | None = None,
                 time_budget: float = 20.0) -> None:
        from ..templates.render import TemplateRenderer

        # one clock for every probe: probes are compared with each other, and a template that
        # prints the time (Hunyuan's, to the second) must not differ between two by the clock alone
        self.renderer = TemplateRenderer(template, now=datetime.now())
        self.permissive = False  # set once the analysis needs the engines' laxer semantics
        self.bos = bos or ""
        self.eos = eos or ""
        self.log: list[str] = []
        self.renders = 0
        self.out_of_time: TemplateError | None = None
        # each render has its own limit; this bounds them all (a template just under the render
        # limit would otherwise keep the analysis busy for minutes over its dozens of probes)
        self.deadline = time.monotonic() + time_budget
        self.time_budget = time_budget
        self._prompts: dict[str, str] = {}
        self.filled: dict[str, str] = {}  # non-standard variables the template reads, bound to ''
        # the template reads a flat tool list ([{name, description, parameters}]) rather than
        # OpenAI's [{type, function: {...}}]: set once a render shows it
        self.flat_tools = False
        # what a failed render was for and why, in order; and how many assistant turns did render
        # (none at all means there is no protocol to derive: see derive/failures.py)
        self.failures: list[tuple[str, TemplateError]] = []
        self.turns_rendered = 0
        self.attempted = 0  # probe renders asked for (turns and generation prompts)

    def render(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None,
               agp: bool, **kw: Any) -> str:
        from ..templates._exceptions import TemplateLimitExceeded

        if self.out_of_time is None and time.monotonic() > self.deadline:
            self.out_of_time = TemplateLimitExceeded(
                "time", f"the analysis used up its time budget of {self.time_budget:g} s")
            raise self.out_of_time  # the first probe past the budget fails with the cause itself
        if self.out_of_time is not None:
            # one render already ran into the time limit: every further probe would wait as long
            # again (an analysis renders dozens), so they all fail now with the same reason
            raise TemplateLimitExceeded("time", f"not rendered: an earlier render failed ({self.out_of_time})")
        from ..templates.render import TemplateRenderer

        self.renders += 1
        if self.renderer.permissive != self.permissive:
            self.renderer = TemplateRenderer(self.renderer.source, permissive=self.permissive,
                                             now=self.renderer.now)
        while True:
            try:
                return self.renderer.render(messages, tools=_flat(tools) if self.flat_tools else tools,
                                            add_generation_prompt=agp,
                                            bos_token=self.bos, eos_token=self.eos, **{**self.filled, **kw})
            except TemplateLimitExceeded as e:
                if e.limit == "time":
                    self.out_of_time = e
                raise
            except TemplateError as e:
                if tools and not self.flat_tools and "undefined" in str(e).lower():
                    # an OpenAI-format tool list the template reads as flat ('dict object' has no
                    # attribute 'description'): one render with the flat list decides
                    try:
                        out = self.renderer.render(messages, tools=_flat(tools), add_generation_prompt=agp,
                                                   bos_token=self.bos, eos_token=self.eos,
                                                   **{**self.filled, **kw})
                    except TemplateLimitExceeded as e2:
                        if e2.limit == "time":
                            self.out_of_time = e2
                        raise
                    except TemplateError:
                        pass
                    else:
                        self.flat_tools = True
                        self.log.append("the template reads a flat tool list (name, description, "
                                        "parameters), not OpenAI's {type, function}")
                        return out
                # a variable no caller passes (firefunction's `functions`, `datetime`): it shapes the
                # system prompt, not the assistant's turn, so an empty string lets the probe render
                m = re.search(r"'(\w+)' is undefined", str(e))
                if m is None or m.group(1) in self.filled or m.group(1) in kw or len(self.filled) >= 4:
                    raise
                self.filled[m.group(1)] = ""
                self.log.append(f"template variable {m.group(1)!r} is not one a caller passes; rendered as ''")

    def turn(self, label: str, assistant: dict[str, Any], *, tools: list[dict[str, Any]] | None = None,
             history: list[dict[str, Any]] | None = None, **kw: Any) -> Probe:
        """Render ``history + [assistant]`` and cut out the assistant's output."""
        base = history if history is not None else [{"role": "user", "content": USER}]
        self.attempted += 1
        try:
            prompt = self._prompt(base, tools, kw)
            full = self.render([*base, assistant], tools=tools, agp=False, **kw)
        except TemplateError as e:
            self.log.append(f"{label}: render failed: {e}")
            self.failures.append((label, e))
            return Probe(label, error=str(e))
        self.turns_rendered += 1
        n = boundary(prompt, full)
        return Probe(label, span=full[n:], prompt_tail=prompt[n:])

    def _prompt(self, base: list[dict[str, Any]], tools: list[dict[str, Any]] | None, kw: dict[str, Any]) -> str:
        """The generation prompt for ``base``: the same for every probe of one history, so rendered once."""
        key = json.dumps([base, tools, kw, self.permissive, self.filled], sort_keys=True, default=str)
        if key not in self._prompts:
            self._prompts[key] = self.render(base, tools=tools, agp=True, **kw)
        return self._prompts[key]

    def setting_prompt(self, tools: list[dict[str, Any]] | None, **kw: Any) -> str | None:
        """The generation prompt with a template variable set to a probe value, or None when the
        template refuses it. Not a probe of the protocol: a failure is not recorded, binds no
        variable, and a render over its limit does not stop the analysis."""
        if self.out_of_time is not None or time.monotonic() > self.deadline:
            return None
        self.renders += 1
        try:
            return self.renderer.render([{"role": "user", "content": USER}],
                                        tools=_flat(tools) if self.flat_tools else tools, add_generation_prompt=True,
                                        bos_token=self.bos, eos_token=self.eos, **{**self.filled, **kw})
        except TemplateError:  # refused, or over a limit (the time limit included)
            return None

    def prompt(self, tools: list[dict[str, Any]] | None = None, **kw: Any) -> str | None:
        self.attempted += 1
        try:
            return self.render([{"role": "user", "content": USER}], tools=tools, agp=True, **kw)
        except TemplateError as e:
            self.log.append(f"generation prompt failed: {e}")
            self.failures.append(("generation prompt", e))
            return None


def _flat(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """OpenAI-format tools as the bare function objects some templates iterate over."""
    if tools is None:
        return None
    return [dict(t["function"]) if isinstance(t.get("function"), dict) else t for t in tools]


def boundary(a: str, b: str) -> int:
    """Length of the common prefix of two renders, backed off so it does not cut a marker.

    A cut inside ``<|channel>`` / ``<tool_call>`` would make both tails start mid-marker; backing
    off to the start of an unclosed tag (``<`` or ``[`` not yet followed by its closer) keeps
    markers whole. Whitespace is not a marker, so no backing off past it.
    """
    n = len(os.path.commonprefix([a, b]))
    if n == len(a) or n == 0:
        return n
    head = a[:n]
    for opener, closer in (("<", ">"), ("[", "]")):
        k = head.rfind(opener)
        if k >= 0 and head.find(closer, k) < 0 and not any(c.isspace() for c in head[k:]):
            n = min(n, k)
    return n


def after_user(prompt: str | None) -> str | None:
    """The generation prompt from the user's message on: where reasoning switches show."""
    if prompt is None:
        return None
    k = prompt.rfind(USER)
    return prompt[k + len(USER):] if k >= 0 else prompt
