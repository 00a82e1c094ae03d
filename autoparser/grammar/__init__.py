"""Grammars for a profile's tool calls: one tree per request (:mod:`.layout`; nodes and back-ends in
:mod:`.tree`), checked against the parser by ``tests/test_grammar_property.py``.

* :func:`grammar_for` / :func:`structured_output_for` / :func:`for_request`: the canonical layout
  forced (OpenVINO GenAI / xgrammar: a regex, or a structural tag where schemas need xgrammar).
* :func:`example_calls`: calls written in that layout (by construction text the grammar accepts).
* :func:`build_grammar`: every spelling the parser reads, as GBNF (llama.cpp, lazy: the tool-call
  part from a trigger on), EBNF (the whole response: prose without a trigger, then the calls),
  Lark (llguidance; the same grammar as the GBNF) or an xgrammar structural tag (one tag per
  trigger). Harmony gets the whole turn from its header markers on (see ``Layout.harmony``).

Tool choice (:func:`for_request`, the one place these semantics live): ``"none"`` or no tools, no
grammar; ``"auto"``, free text until the format's first marker, then a forced call (a format
whose first marker cannot serve as a trigger, a bare ``{``, gets none); ``"required"``, one call
(1 to ``max_calls`` with ``parallel_tool_calls``) and nothing else; a named function, exactly one
call of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from autoparser.grammar.layout import Layout, tool_schemas
from autoparser.grammar.tree import (
    Excluding,
    GrammarError,
    Node,
    alt,
    opt,
    print_rules,
    regex_literal,
    render,
    seq,
    to_spec,
    triggered,
)
from autoparser.profile import Profile
from autoparser.wire import ToolsError, read_tools

__all__ = ["GrammarError", "GrammarExport", "GrammarFormat", "Mode", "build_grammar", "example_calls", "for_request",
           "grammar_dialects", "grammar_for", "reasoning_spec", "regex_literal", "structured_output_for"]

Mode = Literal["required", "auto"]
GrammarFormat = Literal["gbnf", "ebnf", "lark", "structural-tag"]
_JTYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def _layout(profile: Profile, tools: object) -> Layout:
    if profile.tools is None and profile.messages is None:
        only = "reasoning and content" if profile.reasoning is not None else "content"
        raise GrammarError(f"profile {profile.name or '<derived>'!r} has no tool-call format to constrain "
                           f"(its output is {only} only): run without a grammar, or use a profile whose "
                           "model writes tool calls")
    if profile.tools is not None and profile.messages is not None:
        raise GrammarError(f"profile {profile.name or '<derived>'!r} has both tool markers and Harmony "
                           "header-routed messages; a grammar for the two together is not supported")
    return Layout(profile, list(tool_schemas(tools, profile).items()))


def grammar_for(profile: Profile, tools: object, *, mode: Mode = "required", min_calls: int = 1,
                max_calls: int | None = 1) -> dict[str, Any]:
    """A structured-output spec forcing ``profile``'s tool-call format for ``tools``.

    ``tools``: OpenAI-style tool definitions (any shape :mod:`autoparser.wire` reads); none: any
    tool name and arguments. ``mode="required"``: ``min_calls`` to ``max_calls`` calls (None: no
    limit) and nothing else; ``"auto"``: free text, then, once the model writes the first marker,
    one complete call block (the marker must be distinctive). Returns a JSON-able dict for
    :func:`~autoparser.live.structured.build_structured_output`.
    """
    if min_calls < 1 or (max_calls is not None and max_calls < min_calls):
        raise GrammarError(f"need 1 <= min_calls <= max_calls, got {min_calls}, {max_calls}")
    if mode not in ("required", "auto"):
        raise GrammarError(f"unknown mode {mode!r} (required or auto)")
    tree = _layout(profile, tools).tree((min_calls, max_calls))
    return to_spec(tree) if mode == "required" else {"kind": "structural_tags", "tag": triggered(tree)}


def structured_output_for(profile: Profile, tools: object, **kw: Any) -> Any:
    """:func:`grammar_for` built into an ``openvino_genai.StructuredOutputConfig`` (imports OpenVINO)."""
    from autoparser.live.structured import build_structured_output

    return build_structured_output(grammar_for(profile, tools, **kw))


def example_calls(profile: Profile, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """``calls`` written exactly as :func:`grammar_for` lays them out (each argument a ``const``)."""
    if not calls:
        raise GrammarError("no calls to write")
    _layout(profile, {n: {} for n, _ in calls})  # checks the profile and the names
    consts = [(n, {"type": "object", "required": list(a), "properties": {
        k: {"const": v, "type": _JTYPES.get(type(v), "null")} for k, v in a.items()}}) for n, a in calls]
    return render(Layout(profile, consts).tree((len(calls), len(calls))))


def reasoning_spec(profile: Profile, text_pattern: str, then_pattern: str, *,
                   prefilled: bool = False) -> dict[str, Any]:
    """A regex spec for a reasoning block in ``profile``'s markers followed by ``then_pattern``
    (``prefilled``: the prompt wrote the open marker). ``text_pattern`` should not produce the close."""
    r = profile.reasoning
    if r is None or not r.close:
        raise GrammarError(f"profile {profile.name or '(derived)'} has no reasoning markers")
    opening = "" if prefilled or not r.open else regex_literal(r.open[0])
    return {"kind": "regex", "regex": f"{opening}{text_pattern}{regex_literal(r.close[0])}{then_pattern}"}


def for_request(profile: Profile, tools: object, tool_choice: object = "auto", *, parallel_tool_calls: bool = True,
                max_calls: int | None = None) -> dict[str, Any] | None:
    """The structured-output spec enforcing ``tool_choice`` in ``profile``'s call format, or None.

    Raises :class:`GrammarError` when a call must be forced (``required``, a named function) and
    cannot be: no call format, a tool the format cannot write, or a name the tools do not list.
    """
    try:
        schemas = read_tools(tools, strict=True)
    except ToolsError as exc:
        raise GrammarError(str(exc)) from None
    mode, name = _choice(tool_choice)
    if mode == "none" or not schemas:
        if mode in ("required", "named"):
            raise GrammarError(f"tool_choice {tool_choice!r} needs tools")
        return None
    if mode == "named":
        if name not in schemas:
            raise GrammarError(f"tool_choice names {name!r}, which is not among the tools")
        schemas = {name: schemas[name]}
    most = max_calls if parallel_tool_calls and mode != "named" else 1
    required = grammar_for(profile, schemas, mode="required", min_calls=1, max_calls=most)
    if mode != "auto":
        return required
    try:
        spec = grammar_for(profile, schemas, mode="auto", max_calls=1)
    except GrammarError:
        return None
    if most != 1:  # each triggered block is one call; with parallel calls, the text may go on
        spec["tag"]["stop_after_first"] = False
    return spec


def _choice(value: object) -> tuple[str, str | None]:
    if value in ("none", "auto", "required"):
        return str(value), None
    if isinstance(value, Mapping):
        fn = value.get("function", value)
        name = fn.get("name") if isinstance(fn, Mapping) else None
        if isinstance(name, str) and name:
            return "named", name
    raise GrammarError(f"tool_choice must be 'none', 'auto', 'required' or a named function, got {value!r}")


@dataclass(frozen=True)
class GrammarExport:
    """A rendered grammar plus what an engine needs to apply it."""

    format: GrammarFormat
    text: str
    #: words that start the constrained part anywhere in the output (llama.cpp ``word`` triggers)
    triggers: tuple[str, ...]
    #: prefixes that start it only at the very beginning of the output (Llama 3's bare ``{``)
    start_triggers: tuple[str, ...] = ()
    #: the same grammar in llguidance Lark (structural tag: ``[[begin, grammar], ...]`` as JSON)
    lark: str = ""


def grammar_dialects() -> dict[str, str]:
    """Which builtin dialects get a grammar, and why the others do not (for docs and tests)."""
    from autoparser.dialects import dialects, get_profile

    out: dict[str, str] = {}
    for d in dialects():
        p = get_profile(d.name)
        out[d.name] = "covered" if p.tools is not None or p.messages is not None else "no tool calls"
    return out


def build_grammar(profile: Profile, tools: object = None, fmt: GrammarFormat = "gbnf") -> GrammarExport:
    """A grammar accepting every spelling of ``profile``'s tool calls, typed by ``tools``' schemas.

    Without tools, any tool name and any JSON arguments (the shape is still enforced). A profile
    without a tool-call format (``think``) raises :class:`GrammarError`: a caller asking for a tool
    grammar has a wrong assumption, and an empty grammar would hide it.
    """
    if fmt not in ("gbnf", "ebnf", "lark", "structural-tag"):
        raise GrammarError(f"unknown grammar format {fmt!r} (valid: ebnf, gbnf, lark, structural-tag)")
    layout = _layout(profile, tools)
    part = layout.tree((1, None))
    m = profile.messages
    if m is not None:
        all_triggers: tuple[str, ...] = (m.channel, m.start)
        start_triggers: tuple[str, ...] = ()
        prose_stops = [m.start, m.channel]
    else:
        all_triggers = layout.triggers()
        start_triggers = tuple(x for x in all_triggers if x in layout.t.lookahead_at_start)
        prose_stops = [x for x in all_triggers if len(x) > 1]  # ``{``/``[`` only start calls at the beginning
    triggers = tuple(x for x in all_triggers if x not in start_triggers)
    header = [f"autoparser grammar for dialect {profile.name or '<derived>'} ({fmt})",
              "tools: " + (", ".join(n for n, _ in layout.tools if n) or "any (no tools given)")]
    if fmt == "structural-tag":
        tags = [(trig, layout.after[trig]) for trig in all_triggers if trig in layout.after]
        if not tags:
            raise GrammarError(f"dialect {profile.name or '<derived>'!r}: its calls start with "
                               f"{', '.join(map(repr, triggers))}, which a structural tag cannot trigger on "
                               "(the marker belongs to the call itself); use ebnf or gbnf")
        doc = {"type": "structural_tag", "format": {
            "type": "triggered_tags", "triggers": [b for b, _ in tags], "at_least_one": False,
            "stop_after_first": False, "tags": [{"type": "tag", "begin": b, "end": "",
                                                 "content": {"type": "grammar", "grammar": print_rules(n, "gbnf")}}
                                                for b, n in tags]}}
        lark = json.dumps([[b, print_rules(n, "lark")] for b, n in tags], ensure_ascii=False)
        return GrammarExport(fmt, json.dumps(doc, ensure_ascii=False, indent=2), tuple(b for b, _ in tags), (), lark)
    root: Node = part
    if fmt == "ebnf":
        prose = Excluding(tuple(prose_stops))
        root = seq(prose, opt(part)) if not start_triggers else alt([part, seq(prose, opt(part))])
        header.append("whole response: prose without a trigger, then optionally the tool calls")
    else:
        header.append("lazy triggers (llama.cpp grammar_triggers, type word): "
                      + json.dumps(list(triggers), ensure_ascii=False))
        if start_triggers:
            header.append("also when the output starts with: " + json.dumps(list(start_triggers)))
    lark = print_rules(root, "lark")
    text = lark if fmt == "lark" else print_rules(root, "gbnf", header)
    return GrammarExport(fmt, text, triggers, start_triggers, lark)
