"""The return trip: how the template wants an assistant message back in the history.

A loader parses the model's answer, stores it as an OpenAI message and renders it into the next
prompt. If the message does not have the shape the template reads (arguments as a mapping or a
JSON string, reasoning under the key the template looks for), the next prompt differs from what
the model wrote and the model sees a history it never produced. These facts are read from renders
of probe turns that differ in one thing, never from the template's source:

* ``arguments``: a one-call turn rendered with a mapping and with a JSON string. A form is
  faithful when the call's name and values show and the arguments are neither printed as a Python
  dict nor JSON-encoded twice; both faithful and identical is ``either``.
* ``reasoning_field``: a final turn carrying a sentinel under each candidate key; the first key
  whose sentinel shows (also tried with ``enable_thinking``, for templates that render reasoning
  only when thinking is on).
* ``reasoning_in_history``: two exchanges, each answer with its own sentinel: which survive.
* ``empty_content`` and ``call_ids``: what the call probes needed (the shape they found).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Literal

from ..errors import TemplateError
from ..profile import HistorySpec, Profile
from .probes import NAME1, VAL1, CallShape, Prober, tools_for

__all__ = ["REASONING_FIELDS", "SAMPLE_TOOLS", "SWITCHES", "find_history", "reasoning_switches", "sample_turns"]

#: the message keys templates read reasoning from, in the order they are tried
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning", "thought", "tool_plan")

_ARGS = {"argQXa": VAL1, "argQXb": 7}
_R_OLD, _R_NEW, _R_ONE = "RQXh1", "RQXh2", "RQXh0"


def find_history(pr: Prober, prof: Profile, shape: CallShape) -> HistorySpec:
    """The return-trip facts of the template ``pr`` renders, for the profile derived from it."""
    calls = prof.tools is not None or prof.messages is not None
    field, turn, kw = _reasoning_field(pr, shape if calls else None)
    return HistorySpec(
        arguments=_arguments(pr, shape) if calls else None,
        reasoning_field=field,
        reasoning_in_history=_kept(pr, field, turn, kw) if field is not None else "never",
        empty_content="none" if shape.content is None else "empty",
        call_ids=shape.ids)


def _render(pr: Prober, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
            **kw: Any) -> str | None:
    try:
        return pr.render(messages, tools=tools, agp=False, alias_reasoning=False, **kw)
    except TemplateError:
        return None


def _turns(shape: CallShape | None, text: str) -> list[tuple[str, dict[str, Any]]]:
    """The kinds of assistant turn reasoning may be rendered on: a plain answer, a call turn (some
    templates keep reasoning only on the calls of the current agentic turn)."""
    out: list[tuple[str, dict[str, Any]]] = [("plain", {"role": "assistant", "content": text})]
    if shape is not None:
        s = replace(shape, reasoned=False)
        out.append(("call", s.message([s.call(NAME1, _ARGS, 1)])))
    return out


def _reasoning_field(pr: Prober, shape: CallShape | None) -> tuple[str | None, str, dict[str, Any]]:
    for kw in ({}, {"enable_thinking": True}):
        for kind, turn in _turns(shape, "CQXh0"):
            for key in REASONING_FIELDS:
                extra = shape.context() if (shape is not None and kind == "call") else {}
                out = _render(pr, [{"role": "user", "content": "UQXh0"}, {**turn, key: _R_ONE}],
                              tools=tools_for() if kind == "call" else None, **extra, **kw)
                if out is not None and _R_ONE in out:
                    return key, kind, kw
    return None, "plain", {}


def _kept(pr: Prober, key: str, kind: str, kw: dict[str, Any]) -> Literal["all", "last_turn", "never"]:
    """Which turns keep their reasoning in a two-exchange conversation, for the turn kind that showed
    it (a call turn is followed by its tool result)."""
    def exchange(n: int, reasoning: str) -> list[dict[str, Any]]:
        user = {"role": "user", "content": f"UQXh{n}"}
        if kind == "plain":
            return [user, {"role": "assistant", "content": f"CQXh{n}", key: reasoning}]
        turn = CallShape().message([CallShape().call(NAME1, _ARGS, n)])
        return [user, {**turn, key: reasoning},
                {"role": "tool", "tool_call_id": turn["tool_calls"][0]["id"], "content": f"TQXh{n}"}]
    out = _render(pr, [*exchange(1, _R_OLD), *exchange(2, _R_NEW)],
                  tools=tools_for() if kind == "call" else None, **kw)
    if out is None:
        return "never"
    if _R_OLD in out:
        return "all"
    return "last_turn" if _R_NEW in out else "never"


def _arguments(pr: Prober, shape: CallShape) -> Literal["object", "string", "either"]:
    tools = tools_for()
    spans = {}
    for as_string in (False, True):
        s = replace(shape, as_string=as_string)
        probe = pr.turn("history: arguments", s.message([s.call(NAME1, _ARGS, 1)]), tools=tools,
                        **s.context())
        if probe.span is not None and _faithful(probe.span):
            spans[as_string] = probe.span
    if len(spans) == 2:
        return "either" if spans[False] == spans[True] else ("string" if shape.as_string else "object")
    if spans:
        return "string" if True in spans else "object"
    return "string" if shape.as_string else "object"


def _faithful(span: str) -> bool:
    """The call and its values show, not as a Python dict nor as a JSON string encoded again."""
    if NAME1 not in span or VAL1 not in span:
        return False
    twice = json.dumps(json.dumps(_ARGS))[1:-1]
    return repr(_ARGS)[1:-1] not in span and "\\\"argQXa\\\"" not in span and twice not in span


_SAMPLE_CALLS: tuple[tuple[tuple[str, dict[str, Any]], ...], ...] = (
    (("get_weather", {"city": "Paris", "days": 3}),),
    (("get_weather", {"city": "Paris", "days": 3}), ("get_time", {"city": "Rome"})),
)


#: the tools the sample turns call (a parser reading them back types arguments by these schemas)
SAMPLE_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": n, "description": n, "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}} for n in ("get_weather", "get_time")]


def sample_turns(template: str, bos: str | None, eos: str | None,
                 prof: Profile) -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    """The template's own call turns (one call, two calls), written as the profile's return trip
    says, each with the calls it holds: what another parser must read back to claim the format.

    Empty when the template writes no calls or no turn renders them."""
    from ..history import history_message
    from ..result import Result, ToolCall

    if prof.tools is None and prof.messages is None:
        return []
    tools = SAMPLE_TOOLS
    out = []
    for calls in _SAMPLE_CALLS:
        for ids in (("call0A1b2", "call1C3d4"), ("functions.get_weather:0", "functions.get_time:1")):
            res = Result(tool_calls=[ToolCall(n, a, i) for (n, a), i in zip(calls, ids, strict=False)])
            text = _render_turn(template, bos, eos, history_message(res, prof), tools)
            if text is not None and all(n in text for n, _ in calls):
                out.append((_until_end(text, prof), [(n, dict(a)) for n, a in calls]))
                break
    return out


def _render_turn(template: str, bos: str | None, eos: str | None, message: dict[str, Any],
                 tools: list[dict[str, Any]]) -> str | None:
    for permissive in (False, True):
        for context in ({}, {"documents": [{"title": "QXdoc", "text": "QXdoc text"}]}):
            pr = Prober(template, bos, eos)
            pr.permissive = permissive
            span = pr.turn("sample", message, tools=tools, **context).span
            if span is not None and "Paris" in span:
                return span
    return None


def _until_end(text: str, prof: Profile) -> str:
    """What the model writes: up to its end-of-turn marker (a template may go on with the next header)."""
    k = text.rfind("Paris")
    ends = sorted((text.find(m, k), m) for m in prof.strip if text.find(m, k) >= 0)
    return text[:ends[0][0] + len(ends[0][1])] if ends else text


#: template variables that switch reasoning on and off, with the values tried (read from renders:
#: a variable switches reasoning when setting it changes the generation prompt around a marker)
SWITCHES: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("enable_thinking", (True, False)), ("thinking", (True, False)), ("thinking_mode", ("enabled", "disabled")),
    ("reasoning_effort", ("high", "low", "none", "no_think")), ("reasoning", (True, False)))


def reasoning_switches(template: str, bos: str | None, eos: str | None, markers: tuple[str, ...]) -> list[str]:
    """The variables whose values change the generation prompt's reasoning markers."""
    found = []
    names = [m.strip() for m in markers if m.strip()]
    for var, values in SWITCHES:
        tails = set()
        for value in (None, *values):
            pr = Prober(template, bos, eos)
            prompt = pr.prompt(**({} if value is None else {var: value}))
            if prompt is None:
                continue
            k = prompt.rfind("UQXu1")
            tail = prompt[k:] if k >= 0 else prompt[-200:]
            tails.add(tuple(n for n in names if n in tail))
        if len(tails) > 1:
            found.append(var)
    return found
