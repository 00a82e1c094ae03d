"""Tool calls: which codec writes a call, and which markers wrap calls and groups of calls.

One call and two calls are rendered; the text before the first, after the last and between two
calls separates section markers, per-call markers and separators; the call's own shape (a JSON
object holding the name, a name then an object, a tag per argument, a Python call list) picks
the codec and its parameters.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import unicodedata
from dataclasses import replace
from typing import Any

from ..profile import CodecSpec, ReasoningSpec, ToolSpec
from .extract import Findings, find_content
from .induce import SLOT, constant_head, constant_tail, has_slot, number_slot, slotted
from .markup import (
    common_prefix,
    common_suffix,
    first_token,
    marker_tokens,
    pairs_with,
    split_open_header,
)
from .probes import (
    CONTENT,
    INT1,
    KEY1,
    KEY2,
    NAME1,
    NAME2,
    REASONING,
    VAL1,
    VAL2,
    CallShape,
    Prober,
    call,
    call_id,
    tools_for,
)
from .reasoning import find_reasoning
from .rules import Rule

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
CALL_CONTENT = Rule("content.call_turn_wrapper", "content",
                    "an empty pair before the calls that holds a call turn's content wraps content: strip it")
# where the markers are (aligned renders: before the first call, between two, after the last)
ONE_CALL = Rule("tools.markers_one_call", "tools.markers",
                "with only a one-call render, section and per-call markers cannot be told apart")
ALIGNED = Rule("tools.markers_aligned", "tools.markers",
               "text before the first call, between two and after the last aligns into section, call and "
               "separator markers")
SLOT_MARKER = Rule("tools.slot_marker", "tools.markers",
                   "literal text that holds a slot cannot be scanned for: its constant tail is the marker")
EMPTY_PAIR = Rule("reasoning.empty_pair_before_calls", "reasoning",
                  "an empty open/close pair written before the calls is an (empty) reasoning block")
CLOSE_THEN_EOT = Rule("tools.close_then_end_of_turn", "tools.markers",
                      "a close that pairs with the open ends the calls; markup after it ends the turn")
TRAILING_EOT = Rule("tools.trailing_end_of_turn", "tools.markers",
                    "text after the last call with no group opened before the first ends the turn")
LONE_OPEN = Rule("tools.recovery_lone_open", "tools.recovery",
                 "a marker nothing closes hands the rest to the calls: text after it that is no call is content")
TWO_LEVEL = Rule("tools.recovery_two_level", "tools.recovery",
                 "section and per-call markers both exist: unparseable section text is dropped")
BARE_JSON = Rule("tools.bare_json", "tools.bare_json",
                 "JSON calls with no marker: only one at the start of the output is a call")
SEPARATOR_OPENS = Rule("tools.separator_opens", "tools.markers",
                       "a marker only between calls opens every call (the generation prompt wrote the first)")
HEAD_OPENS = Rule("tools.header_head_opens", "tools.bare_calls",
                  "with no wrapper, the constant head of the call's header opens a call")
TWO_CALL_CLOSE = Rule("tools.section_close_from_two_calls", "tools.markers",
                      "a close only the two-call render writes after the last call is the section close")
# which codec reads the call, and its parameters
JSON_ARRAY = Rule("tools.json_array", "tools.markers",
                  "calls in a JSON array: the text around the array is the section")
JSON_CODEC = Rule("tools.codec_json", "tools.codec", "a JSON object holding the name and the arguments is a call")
PYTHONIC = Rule("tools.codec_pythonic", "tools.codec", "Python call syntax with keyword arguments is a call")
LIST_OPENS = Rule("tools.bracket_list_opens", "tools.bare_calls",
                  "a bracketed call list is distinctive enough to start a call without its wrapper")
PY_LINES = Rule("tools.pythonic_lines", "tools.codec",
                "calls without list brackets are one per line, up to the call's end marker")
NAME_JSON = Rule("tools.codec_name_json", "tools.codec", "a name then a JSON (or relaxed) object is a call")
ID_BEFORE_NAME = Rule("tools.id_before_name", "tools.ids", "an id slot before the name starts the call's header")
NUMBERED_IDS = Rule("tools.numbered_ids", "tools.ids",
                    "text after the name that differs between calls only by their number is an id holding the name")
HEADER_TAIL = Rule("tools.header_tail", "tools.codec",
                   "what the header writes after the name before the first parameter is header (a number, a slot)")
TAGGED = Rule("tools.codec_tagged", "tools.codec", "one element per argument around key and value is a tagged call")
BARE_TAGS = Rule("tools.bare_tags", "tools.bare_calls",
                 "calls that are bare tags closed by their closing form start at their own tag")
TAG_OPENS = Rule("tools.tag_opens", "tools.bare_calls",
                 "a call's own tag is distinctive enough to start a call without its wrapper")
RULES = (FLAT_LIST, NAMELESS, UNEXPLAINED, NO_CALLS, PY_DICT, SHAPE_UNREAD, ID_FOR_NAME, CALL_CONTENT, ONE_CALL,
         ALIGNED, SLOT_MARKER, EMPTY_PAIR, CLOSE_THEN_EOT, TRAILING_EOT, LONE_OPEN, TWO_LEVEL, BARE_JSON,
         SEPARATOR_OPENS, HEAD_OPENS, TWO_CALL_CLOSE, JSON_ARRAY, JSON_CODEC, PYTHONIC, LIST_OPENS, PY_LINES,
         NAME_JSON, ID_BEFORE_NAME, NUMBERED_IDS, HEADER_TAIL, TAGGED, BARE_TAGS, TAG_OPENS)

ARGS1: dict[str, Any] = {KEY1: VAL1, KEY2: INT1}

ARGS2: dict[str, Any] = {KEY1: VAL2}

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
            continue
        p2 = pr.turn(f"2 calls ({a.label})", a.message([a.call(NAME1, ARGS1, 1), a.call(NAME2, ARGS2, 2)]),
                     tools=tools, **kw)
        f.probes.append(p2)
        b1 = _call_block(_after_reasoning(p1.span, f), f)
        b2 = _call_block(_after_reasoning(p2.span, f), f) if p2.span and NAME2 in p2.span else None
        wrap = _empty_content_wrapper(pr, f, a, b1, tools, kw)
        if wrap:
            b1, b2 = b1.lstrip(_WS)[len(wrap):], b2.lstrip(_WS)[len(wrap):] if b2 is not None else None
        spec = (_json_codec(b1, b2, f) or _pythonic(b1, b2, f) or _name_json(b1, b2, f)
                or _tagged(b1, b2, f))
        if spec is None:
            # e.g. dict arguments printed as a Python repr: another shape may render cleanly
            f.fire(SHAPE_UNREAD, snippet=b1,
                   text=f"with {a.label} calls render as {b1[:80]!r}, which no codec explains")
            continue
        if a.id_is_name:
            spec = _id_for_name(spec, f)
            if spec is None:
                continue
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


def _empty_content_wrapper(pr: Prober, f: Findings, a: CallShape, b1: str, tools: list[dict[str, Any]],
                           kw: dict[str, Any]) -> str:
    """An empty open/close pair before the calls that holds the content when a call turn has some
    (Llama 4 writes ``<|python_start|>text<|python_end|>`` before its JSON calls): its markers are
    the content's wrapper on call turns, not a section. Returns the pair, or ''."""
    m = re.match(r"\s*(<[^<>\s]+>)(<[^<>\s]+>)", b1)
    if m is None or not pairs_with(m.group(1), m.group(2)):
        return ""
    x, y = m.groups()
    p = pr.turn(f"1 call with content ({a.label})",
                {**a.message([a.call(NAME1, ARGS1, 1)]), "content": CONTENT}, tools=tools, **kw)
    f.probes.append(p)
    if p.span is None or x + CONTENT + y not in p.span:
        return ""
    f.fire(CALL_CONTENT, snippet=p.span,
           text=f"on call turns the content is written inside {x!r}...{y!r} before the calls (stripped)")
    f.strip.extend(t for t in (x, y) if t not in f.strip)
    return x + y


def _after_reasoning(span: str, f: Findings) -> str:
    """A call turn rendered with reasoning, from after its reasoning block (open marker, text,
    close marker) on; unchanged when it shows none."""
    k = span.find(REASONING)
    if k < 0:
        return span
    rest = span[k + len(REASONING):]
    closes = f.reasoning.close if f.reasoning is not None else ()
    close = next((c for c in closes if rest.lstrip(_WS).startswith(c)), "") or first_token(rest)
    return rest.lstrip(_WS)[len(close):]


def _call_block(span: str, f: Findings) -> str:
    """The part of an assistant span that is the calls: no content wrapper, no end of turn."""
    s = span
    pre = f.content_pre
    if pre and s.startswith(pre):
        s = s[len(pre):]
    elif pre.strip(_WS) and s.lstrip(_WS).startswith(pre.strip(_WS)):
        s = s.lstrip(_WS)[len(pre.strip(_WS)):]
    elif pre.strip(_WS):
        # the same markers with other whitespace between them
        rx = r"\s*" + r"\s*".join(re.escape(t) for t in pre.split()) + r"\s*"
        m = re.match(rx, s)
        if m:
            s = s[m.end():]
    post = f.content_post
    lead = common_prefix(s, post)
    if lead.strip(_WS) and lead != post and _balanced_cut(lead.rstrip(_WS), len(lead.rstrip(_WS)),
                                                          len(lead.rstrip(_WS))):
        # the calls start with what closes a plain message's content (an empty content block the
        # template writes before the calls): the content's wrapper, not the calls' markers
        toks = [t for t in marker_tokens(lead) if t not in f.strip]
        f.strip.extend(toks)
        s = s[len(lead):]
    if post and s.endswith(post):
        s = s[: -len(post)]
    elif post.strip(_WS) and s.rstrip(_WS).endswith(post.strip(_WS)):
        s = s.rstrip(_WS)[: -len(post.strip(_WS))]
    elif post:
        # the end of turn may share only its tail with a plain message's (END_RESPONSE vs END_ACTION)
        shared = common_suffix(s, post)
        for i in range(len(shared)):
            # the shared tail may start inside a marker ('›‹/turn›' of '‹/act›‹/turn›'): the
            # longest part of it that is whole strip markers is the end of turn
            toks = marker_tokens(shared[i:])
            if toks and all(t in f.strip for t in toks):
                s = s[: len(s) - len(shared) + i]
                break
    return s

def _markers(a: str, z: str, m: str | None, f: Findings,
             name_in_header: bool) -> dict[str, Any]:
    """Section and per-call markers from: before the first call (a), after the last (z), and
    between two calls (m)."""
    out: dict[str, Any] = {}
    if m is None:
        f.fire(ONE_CALL, conf=0.6, snippet=a + z, text="only a one-call render: cannot tell section from call markers")
        out["call_open"], out["header_prefix"] = split_open_header(a) if name_in_header else (a.strip(_WS), "")
        out["call_close"] = z.strip(_WS)
        out["section_open"], out["section_close"], out["separators"] = "", "", ""
        return out
    close = common_prefix(z, m)
    close = close[: len(close.rstrip(_WS))]
    opn = common_suffix(a, m)
    opn = opn[len(opn) - len(opn.lstrip(_WS)):]
    if len(close) + len(opn) > len(m):
        # overlapping: the close and the next open share characters ('{{/x}}{{#x ', '‹/x›‹x›');
        # cut where the close's brackets balance, else the middle is all separator
        k = _balanced_cut(m, len(m) - len(opn), len(close))
        close, opn = (m[:k], m[k:]) if k > 0 else ("", "")
    sep = m[len(close): len(m) - len(opn)]
    if name_in_header:
        call_open, header_prefix = split_open_header(opn)
        sec_open = a[: len(a) - len(opn)].strip(_WS)
    else:
        call_open, header_prefix = opn.strip(_WS), ""
        sec_open = a[: len(a) - len(opn)].strip(_WS)
    out.update(call_open=call_open, header_prefix=header_prefix, call_close=close.strip(_WS),
               section_open=sec_open, section_close=z[len(close):].strip(_WS), separators=sep.strip(_WS))
    f.fire(ALIGNED, conf=0.95, snippet=m,
           text=f"before calls {a!r}, between {m!r}, after {z!r} -> section {sec_open!r}/"
                f"{out['section_close']!r}, call {call_open!r}/{out['call_close']!r}, separator {sep.strip(_WS)!r}")
    return out

def _bracket_step(c: str) -> int:
    """+1 for an opening bracket (any Unicode open punctuation or initial quote, or '<'), -1 for a
    closing one, 0 otherwise."""
    if c == "<":
        return 1
    if c == ">":
        return -1
    cat = unicodedata.category(c)
    return 1 if cat in ("Ps", "Pi") else -1 if cat in ("Pe", "Pf") else 0

def _balanced_cut(m: str, lo: int, hi: int) -> int:
    """The one cut ``k`` in ``[lo, hi]`` after which ``m[:k]`` is a non-empty, bracket-balanced run
    of markup (it opens at least one bracket and closes all it opened); 0 when none or several."""
    found = []
    for k in range(max(lo, 1), hi + 1):
        depth, opened, ok = 0, False, True
        for c in m[:k]:
            depth += _bracket_step(c)
            opened = opened or depth > 0
            if depth < 0:
                ok = False
                break
        if ok and opened and depth == 0 and m[:k].strip(_WS) == m[:k]:
            found.append(k)
    # several balanced cuts: markup shared by a close and the next open (a terminator such as
    # '<|sep|>' that ends every element) belongs to the element it ends
    if len(found) > 1:
        # of the balanced cuts, the one between two tags (not inside a tag's text)
        found = [k for k in found if _bracket_step(m[k - 1]) < 0 and k < len(m) and _bracket_step(m[k]) > 0]
    return found[0] if len(found) == 1 else 0

def _spec(mk: dict[str, Any], codec: CodecSpec, f: Findings, array: bool = False) -> ToolSpec:
    for k in ("section_open", "section_close", "call_open", "call_close", "separators"):
        if has_slot(mk[k]):
            # literal text that holds a slot (a routing header naming the call, an id) is not a
            # marker to scan for; its constant tail is
            lit = constant_tail(mk[k]).strip(_WS)
            f.fire(SLOT_MARKER, snippet=mk[k], text=f"{mk[k]!r} holds a slot; its constant part {lit!r} is the marker")
            mk = {**mk, k: lit}
    sec = mk["section_open"]
    tags = re.findall(r"<[^<>\s]+>|\[[^\[\]\s]+\]", sec)
    for x, y in itertools.pairwise(tags):
        if pairs_with(x, y) and sec.find(x + y) >= 0 and len(tags) > 2:
            # an empty open/close pair written before the calls: an (empty) reasoning block
            sec = sec.replace(x + y, "", 1).strip(_WS)
            if f.reasoning is None:
                f.reasoning = ReasoningSpec(open=(x,), close=(y,), start="explicit")
                f.fire(EMPTY_PAIR, conf=0.7, snippet=mk["section_open"],
                       text=f"an empty {x}{y} pair precedes the calls; taken as the "
                            "reasoning block (the template renders no reasoning text)")
            break
    mk = {**mk, "section_open": sec}
    for o, c in (("section_open", "section_close"), ("call_open", "call_close")):
        toks = marker_tokens(mk[c])
        opener = marker_tokens(mk[o])
        if len(toks) > 1 and opener and pairs_with(opener[-1], toks[0]):
            # the close pairs with the open; what the template writes after it ends the turn
            f.fire(CLOSE_THEN_EOT, snippet=mk[c], text=f"{toks[0]!r} closes {opener[-1]!r}; {''.join(toks[1:])!r} "
                                                       "after it is end-of-turn markup")
            f.strip.extend(t for t in toks[1:] if t not in f.strip)
            mk = {**mk, c: toks[0]}
    if mk["section_close"] and not mk["section_open"] and mk["call_close"]:
        # text after the last call with no group opened before the first: the turn's end (what
        # the template expects next, such as a tool response), not a group close
        f.fire(TRAILING_EOT, snippet=mk["section_close"],
               text=f"{mk['section_close']!r} follows the calls but nothing opens a group: taken as end-of-turn markup")
        f.strip.extend(t for t in marker_tokens(mk["section_close"]) if t not in f.strip)
        mk = {**mk, "section_close": ""}
    two_level = bool(mk["section_open"]) and bool(mk["call_open"])
    recovery = "drop" if two_level else "content_if_no_calls"
    # one marker that nothing closes: it hands the rest of the output to the calls, so it is a
    # control token; text after it that is no call is content, without the token
    lone = bool(mk["section_open"]) and not (mk["section_close"] or mk["call_open"] or mk["call_close"])
    if lone:
        f.fire(LONE_OPEN, snippet=mk["section_open"],
               text=f"{mk['section_open']!r} opens the calls and nothing closes them; "
                    "text after it that is not a call is kept as content without the marker")
    if two_level:
        f.fire(TWO_LEVEL, snippet=f"{mk['section_open']} {mk['call_open']}",
               text="section and per-call markers both exist; unparseable section "
                    "text is dropped, as engines parsing such sections do")
    bare = not mk["section_open"] and not mk["call_open"] and codec.kind == "json"
    look: tuple[str, ...] = ()
    at_start: tuple[str, ...] = ()
    if bare:
        look = at_start = ("[",) if array else ("{",)
        f.fire(BARE_JSON, snippet=look[0],
               text=f"calls are JSON {'arrays' if array else 'objects'} with no marker; "
                    f"one at the start of the output is a call, a {look[0]!r} later in prose is prose")
    elif not mk["section_open"] and not mk["call_open"] and mk["separators"]:
        # nothing before the first call (the generation prompt opened it) but a marker between
        # calls: that marker opens every call the model writes itself
        f.fire(SEPARATOR_OPENS, snippet=mk["separators"],
               text=f"nothing precedes the first call and {mk['separators']!r} precedes "
                    "each further one: it is the call opener (the prompt wrote the first)")
        mk = {**mk, "call_open": mk["separators"], "separators": ""}
    elif not mk["section_open"] and not mk["call_open"] and codec.kind in ("name_json", "tagged"):
        head = constant_head(codec.header).strip(_WS)
        if head:
            # no wrapper: the constant part of the call's own header opens a call
            look = (head,)
            f.fire(HEAD_OPENS, snippet=codec.header,
                   text=f"no marker wraps the calls; the constant head {head!r} of the header {codec.header!r} "
                        "opens one")
    return ToolSpec(
        codec=codec,
        lookahead_open=look,
        lookahead_at_start=at_start,
        section_open=(mk["section_open"],) if mk["section_open"] else (),
        section_close=(mk["section_close"],) if mk["section_close"] else (),
        call_open=(mk["call_open"],) if mk["call_open"] else (),
        call_close=(mk["call_close"],) if mk["call_close"] else (),
        bare_calls=False,
        separators=(mk["separators"],) if mk["separators"] else (),
        on_invalid="drop" if two_level else "content_without_marker" if lone else "content",
        on_truncated=recovery,  # type: ignore[arg-type]
    )

def _balanced_end(s: str, start: int, opener: str = "{") -> int:
    """Index after the bracket matching ``s[start]`` (JSON string aware), or -1."""
    closer = {"{": "}", "[": "]"}
    stack: list[str] = []
    i = start
    in_str = False
    while i < len(s):
        c = s[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "{[":
            stack.append(closer[c])
        elif c in "}]":
            if not stack or stack.pop() != c:
                return -1
            if not stack:
                return i + 1
        i += 1
    return -1

def _json_at(s: str, start: int) -> tuple[Any, int] | None:
    end = _balanced_end(s, start)
    if end < 0:
        return None
    try:
        return json.loads(s[start:end]), end
    except ValueError:
        return None

def _find_call_object(s: str, name: str) -> tuple[int, int, dict[str, Any]] | None:
    """The outermost JSON object around ``name`` that describes exactly one call."""
    n = s.find(name)
    best = None
    for k in range(n, -1, -1):
        if s[k] != "{":
            continue
        got = _json_at(s, k)
        if got is None or not isinstance(got[0], dict) or got[1] <= n:
            continue
        text = s[k:got[1]]
        if text.count(NAME1) + text.count(NAME2) > 1:
            break
        best = (k, got[1], got[0])
    return best

def _json_codec(b1: str, b2: str | None, f: Findings) -> ToolSpec | None:
    found = _find_call_object(b1, NAME1)
    if found is None:
        return None
    start, end, obj = found
    keys = _call_keys(obj)
    if keys is None:
        return None
    name_key, args_key, id_key, function_key, name_as_key = keys
    # wrapped in a JSON array?
    array = "allow"
    k = start - 1
    while k >= 0 and b1[k] in _WS:
        k -= 1
    a_start, a_end = start, end
    if k >= 0 and b1[k] == "[":
        got = _json_at(b1, k)
        if got is not None and isinstance(got[0], list):
            array = "require"
            a_start, a_end = k, got[1]
    codec = CodecSpec(kind="json", name_keys=(name_key,) if name_key else ("name",),
                      args_keys=(args_key,) if args_key else ("arguments",),
                      id_keys=(id_key,) if id_key else ("id",), function_key=function_key,
                      array="allow", name_as_key=name_as_key)
    a, z = b1[:a_start], b1[a_end:]
    m = None
    if b2 is not None and array != "require":  # an array holds all calls: nothing between them
        o2 = _find_call_object(b2, NAME2)
        o1 = _find_call_object(b2, NAME1)
        if o1 is not None and o2 is not None:
            m = b2[o1[1]:o2[0]]
    if array == "require":
        mk = {"call_open": "", "header_prefix": "", "call_close": "", "section_open": a.strip(_WS),
              "section_close": z.strip(_WS), "separators": ""}
        f.fire(JSON_ARRAY, conf=0.9, snippet=b1, text=f"a JSON array of calls between {a!r} and {z!r}")
    else:
        mk = _markers(a, z, m, f, name_in_header=False)
    array_bare = array == "require"
    f.fire(JSON_CODEC, conf=0.95, snippet=b1[start:end],
           text=f"JSON object per call: {b1[start:end]!r}; name key {name_key!r}, "
                f"arguments key {args_key!r}" + (f", nested in {function_key!r}" if function_key else "")
                + (", array-wrapped" if array == "require" else ""))
    return _spec(mk, codec, f, array=array_bare)

def _call_keys(obj: dict[str, Any]) -> tuple[str, str, str, str | None, bool] | None:
    if len(obj) == 1:
        ((k, v),) = obj.items()
        if k == NAME1 and _is_args(v):
            return "", "", "", None, True
    function_key = None
    inner = obj
    for k, v in obj.items():
        if isinstance(v, dict) and NAME1 in v.values():
            function_key, inner = k, v
            break
    name_key = next((k for k, v in inner.items() if v == NAME1), None)
    if name_key is None:
        return None
    args_key = next((k for k, v in inner.items() if _is_args(v)), "")
    id_key = next((k for src in (obj, inner) for k, v in src.items() if v == call_id(1)), "")
    return name_key, args_key, id_key, function_key, False

def _is_args(v: Any) -> bool:
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            return False
    return isinstance(v, dict) and v.get(KEY1) == VAL1

def _pythonic(b1: str, b2: str | None, f: Findings) -> ToolSpec | None:
    m = re.search(re.escape(NAME1) + r"\s*\(\s*" + re.escape(KEY1) + r"\s*=", b1)
    if m is None:
        return None
    k = b1.rfind("[", 0, m.start())
    start = k if k >= 0 and not b1[k + 1:m.start()].strip(_WS) else m.start()
    end = b1.find(")", m.end())
    if end < 0:
        return None
    end += 1
    j = end
    while j < len(b1) and b1[j] in _WS:
        j += 1
    if start != m.start() and j < len(b1) and b1[j] == "]":
        end = j + 1
    a, z = b1[:start], b1[end:]
    look: tuple[str, ...] = ("[",) if start != m.start() else ()
    f.fire(PYTHONIC, conf=0.9, snippet=b1[start:end], text=f"pythonic call list {b1[start:end]!r}")
    if look and a.strip(_WS):
        # as for a call's own tag: a bracketed call list is distinctive enough to be a call when
        # the model skips the wrapper (it is tried as a call list and stays text if it is not one)
        f.fire(LIST_OPENS, snippet=b1[start:end],
               text=f"a '[name(...)]' list also starts a call without {a.strip(_WS)!r}")
    bracketed = start != m.start()
    if not bracketed:
        f.fire(PY_LINES, snippet=b1[start:end],
               text="the calls are written without list brackets, one per line, up to the call's end marker")
    spec = ToolSpec(codec=CodecSpec(kind="pythonic", array="allow" if bracketed else "never"),
                    call_open=(a.strip(_WS),) if a.strip(_WS) else (),
                    call_close=(z.strip(_WS),) if z.strip(_WS) else (),
                    lookahead_open=look, on_truncated="content_if_no_calls")
    if not spec.call_open and not look:
        return None
    return spec

def _name_json(b1: str, b2: str | None, f: Findings) -> ToolSpec | None:
    # the caller's ids are slots wherever the template writes them (after the name, or before it)
    b1 = slotted(b1, {"call_id": call_id(1)})
    b2 = slotted(slotted(b2, {"call_id": call_id(1)}), {"call_id": call_id(2)}) if b2 is not None else None
    n = b1.find(NAME1)
    k = _brace(b1, n)
    if k < 0:
        return None
    got = _json_at(b1, k)
    relaxed: tuple[tuple[str, str], ...] = ()
    if got is None or not isinstance(got[0], dict) or got[0].get(KEY1) != VAL1:
        relaxed_found = _relaxed_delims(b1, k)
        if relaxed_found is None:
            return None
        relaxed, end = relaxed_found
    else:
        end = got[1]
    between = b1[n + len(NAME1):k]
    if len(between) > 80 or KEY1 in between:
        return None
    a = b1[:n]
    z = b1[end:]
    m = None
    if b2 is not None and NAME2 in b2:
        n2 = b2.find(NAME2)
        e1 = _args_end(b2, NAME1, relaxed)
        if e1 > 0:
            m = b2[e1:n2]
    # a trailer such as a closing code fence belongs to the call, not to the markers
    trailer = ""
    fence = re.match(r"\s*(```)", z)
    if fence:
        trailer = "\n```"
        z = z[fence.end():]
        if m is not None:
            mf = re.match(r"\s*(```)", m)
            if mf:
                m = m[mf.end():]
    if b2 is not None and NAME2 in b2:
        # the one-call render may lack the section close that the two-call render writes (a
        # template bug in DeepSeek R1 distills); the model writes it, so take it from there
        e2 = _args_end(b2, NAME2, relaxed)
        z2 = b2[e2:] if e2 > 0 else ""
        if trailer:
            z2 = re.sub(r"^\s*```", "", z2)
        if len(z2.strip(_WS)) > len(z.strip(_WS)) and z2.strip(_WS).startswith(z.strip(_WS)):
            f.fire(TWO_CALL_CLOSE, snippet=z2,
                   text=f"the one-call render ends without what the two-call render "
                        f"writes after the last call ({z2.strip(_WS)!r}); taken as the section close")
            z = z2
    mk = _markers(a, z, m, f, name_in_header=True)
    lead = ""
    for key in ("call_open", "section_open"):
        if "{call_id}" in mk[key] and not lead:
            # an id written before the name: from the id on, the marker is the call's header
            cut = mk[key].index("{call_id}")
            lead = mk[key][cut:]
            mk = {**mk, key: mk[key][:cut].strip(_WS)}
            f.fire(ID_BEFORE_NAME, snippet=lead,
                   text=f"the caller's id is written before the name: header starts {lead!r}")
    header = lead + mk["header_prefix"] + "{name}" + between
    id_prefix = id_suffix = ""
    if b2 is not None and NAME2 in b2:
        n2 = b2.find(NAME2)
        k2 = _brace(b2, n2)
        between2 = b2[n2 + len(NAME2):k2]
        if between2 != between:
            # the text after the name differs between calls only by the call's number:
            # NAME:0 / NAME:1 is an id the name is part of
            cp = os.path.commonprefix([between, between2])
            cs = os.path.commonprefix([between[::-1], between2[::-1]])[::-1]
            d1, d2 = between[len(cp):len(between) - len(cs)], between2[len(cp):len(between2) - len(cs)]
            if d1.isdigit() and d2.isdigit():
                header = "{id}" + cs
                id_prefix, id_suffix = mk["header_prefix"], re.escape(cp) + r"\d+"
                f.fire(NUMBERED_IDS, snippet=f"{between} / {between2}",
                       text=f"calls are numbered in the header ({d1!r}, {d2!r}): the id "
                            f"{mk['header_prefix']}NAME{cp}N carries the name")
    codec = CodecSpec(kind="name_json", header=header, trailer=trailer,
                      flavor="relaxed" if relaxed else "json", string_delims=relaxed,
                      id_name_prefix=id_prefix, id_name_suffix=id_suffix)
    f.fire(NAME_JSON, conf=0.9, snippet=b1[n:end],
           text=f"name then {'relaxed ' if relaxed else ''}JSON arguments: header {header!r}")
    return _spec(mk, codec, f)

def _args_end(s: str, name: str, relaxed: tuple[tuple[str, str], ...]) -> int:
    """Index after the arguments object that follows ``name`` in ``s`` (JSON or relaxed), or -1."""
    k = _brace(s, s.find(name))
    return _balanced_end(s, k) if not relaxed else _relaxed_end(s, k, relaxed)


def _brace(s: str, start: int) -> int:
    """The first '{' at or after ``start`` that opens a value, not a slot of the induced pattern."""
    k = s.find("{", start)
    while k >= 0 and SLOT.match(s, k):
        k = s.find("{", k + 1)
    return k


def _relaxed_delims(s: str, k: int) -> tuple[tuple[tuple[str, str], ...], int] | None:
    """Gemma-style ``{key:<delim>value<delim>}``: find the delimiters around the string value."""
    m = re.match(r"\{\s*" + re.escape(KEY1) + r"\s*:", s[k:])
    if m is None:
        return None
    v = s.find(VAL1, k + m.end())
    if v < 0:
        return None
    d_open = s[k + m.end():v]
    after = s[v + len(VAL1):]
    cut = re.search(r"[,}]", after)
    if cut is None or not d_open:
        return None
    d_close = after[:cut.start()]
    if not d_close or d_open == '"':
        return None
    delims = ((d_open, d_close),)
    end = _relaxed_end(s, k, delims)
    if end < 0:
        return None
    return delims, end

def _relaxed_end(s: str, k: int, delims: tuple[tuple[str, str], ...]) -> int:
    depth = 0
    i = k
    while i < len(s):
        for a, b in delims:
            if s.startswith(a, i):
                j = s.find(b, i + len(a))
                if j < 0:
                    return -1
                i = j + len(b)
                break
        else:
            c = s[i]
            if c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
    return -1

def _tagged(b1: str, b2: str | None, f: Findings) -> ToolSpec | None:
    # the name nearest the arguments heads the call; an earlier copy (a routing header naming the
    # recipient) is a slot of the text before the call
    k1 = b1.find(KEY1)
    n = b1.rfind(NAME1, 0, k1) if k1 >= 0 else -1
    v1 = b1.find(VAL1, k1)
    k2 = b1.find(KEY2, v1)
    v2 = b1.find(str(INT1), k2 + len(KEY2)) if k2 >= 0 else -1
    if min(n, k1, v1) < 0:
        return None
    # the header: the tag the name sits in, or the bare name
    lt = b1.rfind("<", 0, n)
    in_tag = lt >= 0 and b1.find(">", lt) > n and "<" not in b1[n:b1.find(">", n)]
    h_start = lt if in_tag else n
    h_end = b1.find(">", n) + 1 if in_tag else n + len(NAME1)
    if in_tag:
        # a doubled bracket ('<<use NAME>>') belongs to the tag
        while h_start > 0 and b1[h_start - 1] == "<" and b1[h_end:h_end + 1] == ">":
            h_start, h_end = h_start - 1, h_end + 1
    pre1 = b1[h_end:k1]
    if k2 >= 0 and v2 >= 0:
        mid = b1[v1 + len(VAL1):k2]
        p_open = common_suffix(pre1, mid)
        kv1 = b1[k1 + len(KEY1):v1]
        kv2 = b1[k2 + len(KEY2):v2]
        after_last = b1[v2 + 1:]
        p_close_full = mid[: len(mid) - len(p_open)]
    else:
        p_open = pre1
        kv1 = kv2 = b1[k1 + len(KEY1):v1]
        after_last = b1[v1 + len(VAL1):]
        p_close_full = ""
    p_open_core = p_open.lstrip(_WS)
    if not p_open_core and not kv1.strip(_WS):
        return None
    # DSML-style typed attribute: the key/value middles differ by one slot
    string_true = "true"
    if kv1 != kv2:
        cp = os.path.commonprefix([kv1, kv2])
        while cp and cp[-1].isalnum():
            cp = cp[:-1]
        r1, r2 = kv1[len(cp):], kv2[len(cp):]
        cs = os.path.commonprefix([r1[::-1], r2[::-1]])[::-1]
        while cs and cs[0].isalnum():
            cs = cs[1:]
        slot1 = kv1[len(cp): len(kv1) - len(cs)]
        kv_pattern = cp + "{string}" + cs
        string_true = slot1
    else:
        kv_pattern = kv1
    # the value's closing text: common start of what follows value 1 and value 2
    close_v: str | None
    if k2 >= 0 and v2 >= 0 and not p_close_full.strip(_WS) and not p_open.strip(_WS) and "\n" in mid:
        close_v = "\n"  # one `key: value` per line: the line break ends a value
    elif p_close_full:
        close_v = _value_close(p_close_full, after_last, KEY1, KEY2)
    else:
        close_v = _value_close_single(after_last, f)
    if close_v is None:
        return None
    param = p_open_core + "{key}" + kv_pattern + "{value}" + close_v
    # what follows the last parameter: the call's trailer, then call/section markers
    rest = after_last[len(close_v.replace("{key}", KEY2 if k2 >= 0 else KEY1)):] \
        if after_last.startswith(close_v.replace("{key}", KEY2 if k2 >= 0 else KEY1)) else after_last
    # what the header writes after the name before the first parameter opens (a separator, an
    # attribute holding the call's number)
    tail1 = pre1[: len(pre1) - len(p_open)] if k2 >= 0 and v2 >= 0 else ""
    header = b1[h_start:n] + "{name}" + (b1[n + len(NAME1):h_end] if in_tag else "")
    a = slotted(b1[:h_start], {"name": NAME1})
    m = None
    trailer = ""
    z = rest
    n2 = -1
    if b2 is not None and NAME2 in b2:
        kb = b2.find(KEY1, b2.find(NAME2))
        n2 = b2.rfind(NAME2, 0, kb) if kb >= 0 else b2.find(NAME2)
    if tail1.strip(_WS):
        tails = [tail1]
        if n2 >= 0:
            h2 = b2.find(">", n2) + 1 if in_tag else n2 + len(NAME2)  # type: ignore[union-attr]
            k2nd = b2.find(KEY1, h2)  # type: ignore[union-attr]
            after2 = b2[h2:k2nd] if k2nd >= 0 else ""  # type: ignore[index]
            if after2.endswith(p_open):
                tails.append(after2[: len(after2) - len(p_open)])
        tail = number_slot(tails, list(range(1, len(tails) + 1)))
        if tail is None:
            return None
        header += tail
        f.fire(HEADER_TAIL, snippet=tail1, text=f"the header goes on after the name with {tail!r}"
                                               + (" (the call's number is a slot)" if "{index}" in tail else ""))
    if n2 >= 0:
        assert b2 is not None
        lt2 = n2
        if in_tag:
            lt2 = b2.rfind(b1[h_start:n], 0, n2)
            lt2 = lt2 if lt2 >= 0 else b2.rfind("<", 0, n2)
        last_v = b2.rfind(VAL1, 0, n2)
        k2b = b2.find(str(INT1), last_v)
        end1 = (k2b + 1) if 0 <= k2b < lt2 else last_v + len(VAL1)
        c1 = close_v.replace("{key}", KEY2 if 0 <= k2b < lt2 else KEY1)
        m = slotted(b2[end1:lt2], {"name": NAME2})
        if m.startswith(c1):
            m = m[len(c1):]
    if in_tag:
        # a call written as a tag closes with that tag's closing form (</function>, </invoke>)
        word = re.match(r"(<+)([^\s=<>]+)", header)
        cand = f"{word.group(1)}/{word.group(2)}{'>' * len(word.group(1))}" if word else ""
        if cand and z.lstrip(_WS).startswith(cand):
            trailer = cand
            z = z.lstrip(_WS)[len(cand):]
            if m is not None and m.lstrip(_WS).startswith(cand):
                m = m.lstrip(_WS)[len(cand):]
    mk = _markers(a, z, m, f, name_in_header=False)
    head_lit = header.split("{name}")[0]
    bare_tag = in_tag and mk["call_open"] == "" and mk["section_open"] == ""
    if bare_tag and not (trailer and head_lit.startswith("<") and len(head_lit.strip(_WS)) >= 4):
        return None
    codec = CodecSpec(kind="tagged", header=header, trailer=trailer, param=param, string_true=string_true)
    f.fire(TAGGED, conf=0.9, snippet=b1[h_start:],
           text=f"tagged parameters: header {header!r}, parameter {param!r}, trailer {trailer!r}")
    spec = _spec(mk, codec, f)
    if bare_tag:
        # no wrapper at all: the call's own tag (closed by its closing form) starts a call
        spec = replace(spec, lookahead_open=(head_lit,))
        f.fire(BARE_TAGS, snippet=header, text=f"calls are bare {head_lit!r}...{trailer!r} tags")
    elif in_tag and spec.call_open and head_lit.startswith("<") and len(head_lit) >= 4:
        # the call's own tag is distinctive enough to start a call without its wrapper
        spec = replace(spec, lookahead_open=(head_lit,))
        f.fire(TAG_OPENS, snippet=header, text=f"{head_lit!r} also starts a call without {spec.call_open[0]!r}")
    return spec

def _value_close(after1: str, after_last: str, key1: str, key2: str) -> str | None:
    """Closing text of a value: what follows value 1 (and the last value) up to the next open."""
    a = after1.replace(key1, "{key}")
    b = after_last.replace(key2, "{key}")
    c = common_prefix(a, b)
    core = c.rstrip(_WS)
    if not core.strip(_WS):
        return ""
    # keep whitespace that the template puts before the close (trimmed once from values)
    return core

def _value_close_single(after: str, f: Findings) -> str | None:
    t = after.lstrip(_WS)
    m = re.match(r"\S+?>|\S+", t)
    if m is None:
        return ""
    lead = after[: len(after) - len(t)]
    return lead + m.group()
