"""Where the markers are: section, per-call markers and separators from aligned call renders.

The text before the first call (``a``), after the last (``z``) and between two calls (``m``)
align: what closes a call is the common start of ``z`` and ``m``, what opens one the common end of
``a`` and ``m``, the rest is the section's and the separator. Then the rules that turn markers into
a ``ToolSpec``: slotted text, empty pairs, end-of-turn markup after a close, recovery choices.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from typing import Any

from ...profile import CodecSpec, ReasoningSpec, ToolSpec
from ..extract import Findings
from ..induce import constant_head, constant_tail, has_slot
from ..markup import common_prefix, common_suffix, marker_tokens, pairs_with, split_open_header
from ..rules import Rule

__all__ = ["RULES", "balanced_cut", "markers", "tool_spec"]

_WS = " \t\r\n"


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
RULES = (ONE_CALL, ALIGNED, SLOT_MARKER, EMPTY_PAIR, CLOSE_THEN_EOT, TRAILING_EOT, LONE_OPEN, TWO_LEVEL, BARE_JSON,
         SEPARATOR_OPENS, HEAD_OPENS)


def markers(a: str, z: str, m: str | None, f: Findings,
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
        k = balanced_cut(m, len(m) - len(opn), len(close))
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


def balanced_cut(m: str, lo: int, hi: int) -> int:
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


def tool_spec(mk: dict[str, Any], codec: CodecSpec, f: Findings, array: bool = False) -> ToolSpec:
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
