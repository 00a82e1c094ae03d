"""Which call turn shows the calls, and which reading of the renders wins.

The call probes go through the shapes a template may need (dict or string arguments, content or
None, ids or none, permissive semantics, reasoning, documents) until one renders a call. Then every
recogniser (``jsoncalls``, ``pythonic``, ``namejson``, ``tagged``, ``pattern``) proposes its
reading of the aligned renders, and ``search`` lets the template choose: random call turns rendered
and parsed back with each proposal; the one that reproduces the most wins, the simplest among equals.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...profile import Profile, ToolSpec
from ..extract import Findings, find_content
from ..markup import marker_tokens
from ..probes import ARGS1, ARGS2, CONTENT, NAME1, NAME2, VAL1, CallShape, Prober, call, tools_for
from ..reasoning import find_reasoning
from ..rules import Rule
from .blocks import after_reasoning, call_block, empty_content_wrapper
from .proposals import propose
from .search import choose, samples, score

__all__ = ["RULES", "find_tools"]

_WS = " \t\r\n"


# -- the rules: what each reading of the call renders may conclude, and why --------------------
# which shape renders the calls (probes.py names how a shape departs from the plain one)
FLAT_LIST = Rule("tools.flat_list", "tools.list",
                 "a template that reads a flat tool list (name, description, parameters) is probed with one")

NAMELESS = Rule("tools.nameless", "tools",
                "arguments that render without the name leave how the model names a function unknown")

UNEXPLAINED = Rule("tools.unexplained", "tools", "calls that render but that no codec reads are not derived")

NO_CALLS = Rule("tools.none", "tools", "no call render shows the call: the template renders no tool calls")

PY_DICT = Rule("tools.python_dict_arguments", "tools",
               "arguments printed as a Python dict are an artefact of the call: another shape shows the format")

SHAPE_UNREAD = Rule("tools.shape_unread", "tools",
                    "a call shape whose render no codec reads is skipped for the next shape")

ID_FOR_NAME = Rule("tools.id_for_name", "tools.codec",
                   "with ids equal to the names, where the name shows the template wrote the id: an id slot")
PY_LITERAL = Rule("tools.python_literal_arguments", "tools.codec",
                  "arguments a template prints as JSON from a string and as a Python dict from a mapping are "
                  "read either way, when the dict renders parse back too")
NEW_MESSAGE = Rule("end_of_turn.new_message_header", "end_of_turn",
                   "a message header written again between a call turn's content and its calls starts a new "
                   "message: strip it")
RULES = (FLAT_LIST, NAMELESS, UNEXPLAINED, NO_CALLS, PY_DICT, PY_LITERAL, NEW_MESSAGE, SHAPE_UNREAD, ID_FOR_NAME)


def find_tools(pr: Prober, f: Findings) -> None:
    tools = tools_for()
    plain = [CallShape("dict arguments", False, ""), CallShape("string arguments", True, ""),
             CallShape("dict arguments, no content", False, None),
             CallShape("string arguments, no content", True, None)]
    # transformers' semantics first; then calls without ids (a caller's id may replace the name);
    # then the laxer semantics of other engines (content None kept, mutable lists); then a call
    # turn that carries reasoning (some templates read it unguarded on every tool-call turn); last,
    # with retrieval documents (some templates write tool calls only on their RAG branch)
    attempts = plain + [replace(a, ids=False) for a in plain]
    attempts += [replace(a, permissive=True) for a in attempts]
    attempts += [replace(a, reasoned=True) for a in attempts]
    if pr.renderer.reads("documents"):
        attempts += [replace(a, documents=True) for a in attempts]
    if not pr.renderer.reads("tool_calls"):
        attempts = plain  # it never reads a call: other shapes cannot show one
    found = _first_rendering(pr, f, attempts, tools)
    if pr.flat_tools:
        f.fire(FLAT_LIST,
               text="the template reads a flat tool list (name, description, parameters), "
                    "not OpenAI's {type, function}; the probes passed it that way")
    if not found and any(p.span and VAL1 in p.span and NAME1 not in p.span for p in f.probes):
        # the arguments render but the name never does: the template may write the caller's id in
        # its place; calls whose ids are their names show where that slot is
        shown = {p.label for p in f.probes if p.span and VAL1 in p.span}
        again = [replace(a, id_is_name=True) for a in attempts if a.ids and f"1 call ({a.label})" in shown]
        found = _first_rendering(pr, f, again[:2], tools)
    if not found:
        pr.permissive = False
        errs = [p.error for p in f.probes if p.error and "call" in p.label]
        rendered = any(p.span and NAME1 in p.span for p in f.probes)
        args_only = any(p.span and VAL1 in p.span and NAME1 not in p.span for p in f.probes)
        if args_only and f.reasoning is None:
            find_reasoning(pr, f, tools, call_turn=CallShape().message([call(NAME1, ARGS1, 1)]))
        if args_only:
            # the call slot holds the caller's id (or nothing), never the name
            f.fire(NAMELESS, conf=0.4, snippet=next(p.span for p in f.probes if p.span and VAL1 in p.span),
                   text="the template writes tool calls without their function names (the caller's "
                        "call id, if any, stands where a name would be); how the model names the function "
                        "is not in the template, so no call format is derived")
        elif rendered:
            f.fire(UNEXPLAINED, conf=0.3, snippet=next(p.span for p in f.probes if p.span and NAME1 in p.span),
                   text="tool calls render, but no codec explains them")
        else:
            # a call render that succeeded without showing the call: the template ignores tool calls
            ignored = any(p.span is not None and "call" in p.label for p in f.probes)
            f.fire(NO_CALLS, conf=0.9 if ignored or not errs else 0.6, snippet=errs[0] if errs else "",
                   text="the template renders no tool calls"
                        + (" (it renders assistant turns with tool_calls, leaving the calls out)" if ignored
                           else f" (renders failed: {errs[0]})" if errs else ""))


def _first_rendering(pr: Prober, f: Findings, attempts: list[CallShape], tools: list[dict[str, Any]]) -> bool:
    """Try the call shapes in order; the first whose renders a codec explains sets ``f.tools``."""
    py_shape: CallShape | None = None  # the first shape whose renders print a Python dict
    for a in attempts:
        pr.permissive = a.permissive
        kw = a.context()
        p1 = pr.turn(f"1 call ({a.label})", a.message([a.call(NAME1, ARGS1, 1)]), tools=tools, **kw)
        f.probes.append(p1)
        if p1.span is None or NAME1 not in p1.span or (VAL1 not in p1.span):
            continue
        if repr(ARGS1)[1:-1] in p1.span:
            # arguments printed as a Python dict (str() of a mapping): an artefact of how the template
            # was called, not the model's format; the string-arguments shape shows the real one
            f.fire(PY_DICT, snippet=p1.span, text=f"with {a.label} the template prints the arguments as a Python dict")
            py_shape = py_shape or a
            continue
        p2 = pr.turn(f"2 calls ({a.label})", a.message([a.call(NAME1, ARGS1, 1), a.call(NAME2, ARGS2, 2)]),
                     tools=tools, **kw)
        f.probes.append(p2)
        b1 = call_block(after_reasoning(p1.span, f), f)
        b2 = call_block(after_reasoning(p2.span, f), f) if p2.span and NAME2 in p2.span else None
        wrap = empty_content_wrapper(pr, f, a, b1, tools, kw)
        if wrap:
            b1, b2 = b1.lstrip(_WS)[len(wrap):], b2.lstrip(_WS)[len(wrap):] if b2 is not None else None
        proposals = propose(b1, b2, f)
        if a.id_is_name:
            proposals = [replace(pp, spec=spec) for pp in proposals
                         if (spec := _id_for_name(pp.spec, pp.findings)) is not None]
        if not proposals:
            # e.g. dict arguments printed as a Python repr: another shape may render cleanly
            f.fire(SHAPE_UNREAD, snippet=b1,
                   text=f"with {a.label} calls render as {b1[:80]!r}, which no codec explains")
            continue
        # (every reading places the markers the same way; before the search, so that it sees them)
        _new_message_header(pr, [q.findings for q in proposals], a, proposals[0].spec, tools, kw)
        won = choose(pr, f, a, proposals, b1)
        f.adopt(won.findings)
        spec = won.spec
        if py_shape is not None:
            spec = _python_literals(pr, f, spec, py_shape)
        f.tools = spec
        f.call_shape = a
        if a.documents:
            # (the render.* rules of probes.py record how the shape departs from the plain one)
            # that branch is the model's tool-use mode: its plain answers may be wrapped differently
            find_content(pr, f, tools, **kw)
        if f.reasoning is None:
            find_reasoning(pr, f, tools, call_turn=replace(a, reasoned=False).message([a.call(NAME1, ARGS1, 1)]),
                           context=kw)
        return True
    return False


def _new_message_header(pr: Prober, readings: list[Findings], a: CallShape, spec: ToolSpec,
                        tools: list[dict[str, Any]], kw: dict[str, Any]) -> None:
    """A call turn with content written as messages (``CONTENT<end>`` then ``<header> to=NAME...``,
    one per call): between the content and the first call stand the end of turn and the message
    header again. Marker tokens there that are neither stripped nor call markers, and that the
    separator between two calls ends with, start a new message and are stripped."""
    if a.content is None or not spec.separators or not (spec.call_open or spec.section_open):
        return  # (a message per call shows as a separator between two calls)
    p = pr.turn(f"1 call with content, message header ({a.label})",
                {**a.message([a.call(NAME1, ARGS1, 1)]), "content": CONTENT}, tools=tools, **kw)
    f = readings[0]
    f.probes.append(p)
    if p.span is None or CONTENT not in p.span or NAME1 not in p.span:
        return
    start = p.span.index(CONTENT) + len(CONTENT)
    n = p.span.find(NAME1, start)
    opens = [k for m in (*spec.section_open, *spec.call_open) if (k := p.span.rfind(m, start, n)) >= 0]
    if not opens:
        return
    gap = p.span[start:min(opens)]
    # where the template starts each message: what it writes between two calls
    heads = list(spec.separators)
    for m in sorted(f.strip, key=len, reverse=True):  # (the end of turn may be glued to the header)
        gap = gap.replace(m, " ") if m.strip(_WS) else gap
    toks = [t for t in marker_tokens(gap) if t not in f.strip]
    if not toks or not all(len(t) > 1 and not t.isalnum() and any(h.endswith(t) for h in heads if h)
                           for t in toks):
        return
    for g in readings:
        g.fire(NEW_MESSAGE, snippet=gap, text=f"{' '.join(toks)!r}, which starts each message, follows the content "
                                             "of a call turn before its calls: a new message's header, stripped")
        g.strip.extend(t for t in toks if t not in g.strip)


def _python_literals(pr: Prober, f: Findings, spec: ToolSpec, py_shape: CallShape) -> ToolSpec:
    """A JSON or name-then-JSON reading whose arguments the template prints as a Python dict when
    they are a mapping: the ``python`` flavor (JSON or a Python literal), if it parses those
    renders back."""
    c = spec.codec
    if c.kind not in ("name_json", "json") or c.flavor != "json":
        return spec
    variant = replace(spec, codec=replace(c, flavor="python"))
    turns = samples(pr, py_shape, (), n=4, seed=7)
    got = score(Profile(reasoning=f.reasoning, strip=tuple(f.strip), tools=variant), turns)[0] if turns else 0
    if not turns or got < len(turns):
        return spec
    f.fire(PY_LITERAL, snippet=turns[0].span,
           text=f"with {py_shape.label} the arguments print as a Python dict; read as JSON or a Python literal, "
                f"{got}/{len(turns)} such random call turns parse back")
    return variant


def _id_for_name(spec: ToolSpec, f: Findings) -> ToolSpec | None:
    """The renders came from calls whose ids were their names: where the name showed, the template
    wrote the id. The header's name slot is an id slot (the name is read from the id)."""
    c = spec.codec
    if c.kind != "name_json" or "{name}" not in c.header:
        return None
    f.fire(ID_FOR_NAME, conf=0.7, snippet=c.header,
           text="the template writes the caller's call id where other templates write the "
                f"name (header {c.header.replace('{name}', '{id}')!r}); the model's id names the function, by a "
                "convention the template does not show")
    return replace(spec, codec=replace(c, header=c.header.replace("{name}", "{id}")))
