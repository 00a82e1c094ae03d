"""Recogniser: the call as a pattern of literal text and slots, induced from aligned renders.

Theory (wrapper induction, RoadRunner-style). The first probe call has two arguments of
different types (a string and an integer); aligned on the sentinels, the two arguments are two
instances of one argument template ``P {key} Q {value} R`` with the separator ``S`` between them:

    before-name  NAME  H  KEY1 Q1 VALUE1  X  KEY2 Q2 VALUE2  T

``P`` is what ``H`` (after the name) and ``X`` (between the arguments) end with, ``R`` what ``X``
and ``T`` (after the last argument) start with, ``S`` the middle of ``X``; where ``P`` and ``R``
overlap, a cut between two tags (or, failing that, ``R``) takes the shared text. Text that
differs between the two arguments only by a word is a ``{type}`` slot (``<str key=…>`` /
``<int key=…>``); the same word in the value's close repeats it. A key written again after the
value (``<city>Paris</city>``) is the same slot written twice. What lies between the name and the
first argument is the call's head; a closing form of the head's tag after the last argument is
its tail; the rest, aligned over one and two calls, are the section and call markers
(``layout.markers``). The value's spelling proposes its encodings: quoted with ``"`` (JSON, a
Python literal, TOML), with ``'`` (Python), or bare (raw text, XML-escaped, percent-encoded, a
shell word). The probes cannot tell these apart; the search (``search.py``) does, with values that
need escaping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ...profile import CodecSpec, PatternSpec, ToolSpec
from ..extract import Findings
from ..induce import number_slot, slotted
from ..markup import common_prefix, common_suffix, split_open_header
from ..probes import INT1, KEY1, KEY2, NAME1, NAME2, VAL1, VAL2, call_id
from ..rules import Rule
from .layout import balanced_cut, markers, tool_spec

__all__ = ["RULES", "read_patterns"]

_WS = " \t\r\n"

PATTERN = Rule("tools.codec_pattern", "tools.codec",
               "arguments that repeat one template between the name and the end are a pattern of literals and slots")
TYPE_SLOT = Rule("tools.pattern_type_slot", "tools.codec",
                 "a word that differs between a string and an integer argument spells the value's type")
KEY_REPEATED = Rule("tools.pattern_key_repeated", "tools.codec",
                    "the key written again after the value closes the argument's element")
HEAD_TAIL = Rule("tools.pattern_call_tail", "tools.codec",
                 "the closing form of the call head's tag after the last argument ends the call")
HEAD_CONSUMED = Rule("tools.pattern_head_marker", "tools.markers",
                     "with no wrapper, the constant head of the call opens it, as a marker")
NUMBERED = Rule("tools.pattern_numbered", "tools.codec",
                "a token next to each call that differs between calls only by their number is the call's own")
LINE_TAIL = Rule("tools.pattern_line_calls", "tools.codec",
                 "calls that nothing closes, separated by line breaks, are one line each")
HEAD_LOOKAHEAD = Rule("tools.pattern_head_lookahead", "tools.markers",
                      "a call head too short to be a marker is where a call is tried, kept as the call's text")
ENCODINGS_PROPOSED = Rule("tools.pattern_encodings", "tools.codec",
                          "the probe value's quoting narrows the value encodings: the search tests those left")
INDENTED = Rule("tools.pattern_indented_block", "tools.codec",
                "arguments that each open with a line break and the same indentation are an indented block")
OPEN_ENDS = Rule("tools.pattern_open_ends_call", "tools.codec",
                 "a call that nothing closes ends where the next call opens")
POSITIONAL = Rule("tools.pattern_positional", "tools.codec",
                  "values written without their keys are the tool's parameters in the schema's order")
TAG_CUT = Rule("tools.pattern_tag_cut", "tools.codec",
               "text that both closes an argument and opens the next is cut where the close's brackets balance")
RULES = (PATTERN, POSITIONAL, INDENTED, OPEN_ENDS, TAG_CUT, TYPE_SLOT, KEY_REPEATED, HEAD_TAIL, HEAD_CONSUMED,
         HEAD_LOOKAHEAD, NUMBERED, LINE_TAIL, ENCODINGS_PROPOSED)

# slot placeholders while aligning (private-use characters: no bracket or word meaning)
_N, _K, _V, _T, _I = "\ue000", "\ue001", "\ue002", "\ue003", "\ue004"
_SLOTS = {_N: "{name}", _K: "{key}", _V: "{value}", _T: "{type}", _I: "{call_id}"}
_FAMILIES = {'"': ("json", "python", "toml"), "'": ("python", "shell"), "": ("raw", "xml", "percent", "shell")}


@dataclass(frozen=True)
class _Call:
    """One call of a render, aligned: where its name, keys and values are."""

    name: int        # index of the name
    k1: int
    v1: tuple[int, int]
    k2: int
    v2: tuple[int, int]


def _locate(s: str, name: str, quote: str, second: bool) -> _Call | None:
    """The first call named ``name`` in ``s`` with its two probe arguments (the second probe call
    has one argument: ``second``)."""
    k1 = s.find(KEY1, s.find(name))
    n = s.rfind(name, 0, k1) if k1 >= 0 else -1
    if n < 0:
        return None
    val = VAL2 if second else VAL1
    v1 = s.find(quote + val + quote, k1)
    if v1 < 0:
        return None
    v1e = v1 + len(val) + 2 * len(quote)
    if second:
        return _Call(n, k1, (v1, v1e), -1, (-1, -1))
    k2 = s.find(KEY2, v1e)
    if k2 < 0:
        return None
    m = re.compile(r"(?<![\w.])" + str(INT1) + r"(?![\w.])").search(s, k2 + len(KEY2))
    if m is None:
        return None
    return _Call(n, k1, (v1, v1e), k2, (m.start(), m.end()))


def _word_diff(a: str, b: str, at_end: bool) -> tuple[str, str] | None:
    """Two texts that agree on their end (``at_end``) or their start except for one word next to
    the agreeing part (``<str key="`` / ``</int key="``): the two words."""
    if at_end:
        a, b = a[::-1], b[::-1]
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    while i > 0 and (a[i - 1].isalnum() or a[i - 1] == "_"):
        i -= 1
    wa = re.match(r"\w*", a[i:])
    wb = re.match(r"\w*", b[i:])
    x, y = (wa.group() if wa else ""), (wb.group() if wb else "")
    if at_end:
        x, y = x[::-1], y[::-1]
    return (x, y) if x and y and x != y else None


def _typed(text: str, words: tuple[str, str] | None, which: int) -> str:
    """``text`` with the type word of argument ``which`` (0: the string, 1: the integer) as a slot."""
    if words is None:
        return text
    return re.sub(r"(?<!\w)" + re.escape(words[which]) + r"(?!\w)", _T, text)


def _raw_len(pattern: str, words: tuple[str, str] | None, which: int, key: str) -> int:
    """Length of the render text a piece of the argument pattern stands for."""
    return len(pattern.replace(_T, words[which] if words else "").replace(_K, key))


def read_patterns(b1: str, b2: str | None, f: Findings) -> list[tuple[str, ToolSpec, Findings]]:
    """Every pattern reading of the call renders (one per value encoding the probe allows): a
    quoted string value is a quoted literal, or quotes around raw text."""
    ids = {"call_id": call_id(1)}
    s1 = slotted(b1, ids).replace("{call_id}", _I)
    s2 = slotted(slotted(b2, ids), {"call_id": call_id(2)}).replace("{call_id}", _I) if b2 else None
    quote = next((q for q in ('"', "'") if q + VAL1 + q in s1), "")
    if quote and KEY1 not in s1 and KEY2 not in s1:
        return _read_positional(s1, s2, b1, f, quote)
    out = _read(s1, s2, b1, f, quote)
    return out + _read(s1, s2, b1, f, "") if quote else out


def _read_positional(s1: str, s2: str | None, b1: str, f: Findings, quote: str
                     ) -> list[tuple[str, ToolSpec, Findings]]:
    """Values without their keys (``NAME("v", 7)``): the string and the integer are two instances
    of one argument template ``P {value} R`` with the separator between them, as in ``_read``; the
    n-th value is the tool's n-th parameter. Only literal encodings (values that end by
    themselves) can be told apart without keys."""
    n = s1.find(NAME1)
    v1 = s1.find(quote + VAL1 + quote, n) if n >= 0 else -1
    if v1 < 0:
        return []
    v1e = v1 + len(VAL1) + 2 * len(quote)
    m = re.compile(r"(?<![\w.])" + str(INT1) + r"(?![\w.])").search(s1, v1e)
    if m is None:
        return []
    h, x, t = s1[n + len(NAME1):v1], s1[v1e:m.start()], s1[m.end():]
    p, r = common_suffix(h, x), common_prefix(x, t)
    while p and len(p) + len(r) > len(x):
        p = p[1:]
    sep = x[len(r): len(x) - len(p)]
    if not sep.strip(_WS) or any(w in sep for w in (NAME1, NAME2, VAL1)):
        return []
    head = h[: len(h) - len(p)]
    marker_text, header_prefix = _split_head(s1[:n])
    z = t[len(r):]
    mm: str | None = None
    if s2 is not None:
        e1 = s2.find(quote + VAL1 + quote)
        k2 = s2.find(NAME2)
        m1 = re.compile(r"(?<![\w.])" + str(INT1) + r"(?![\w.])").search(s2, e1) if e1 >= 0 else None
        if m1 is not None and 0 <= m1.end() + len(r) <= k2:
            mm = _split_head(s2[m1.end() + len(r):k2])[0]
    call_text = header_prefix + "{name}" + head + "{args}"
    arg = p + "{value}" + r
    if _I in call_text or any(w in call_text + arg for w in (NAME1, NAME2, KEY1, KEY2, VAL1, VAL2)):
        return []
    g = f.fork()
    mk = markers(marker_text, z, mm, g, name_in_header=False)
    ends = tuple(t for t in f.strip if t.strip(_WS) and t in f.content_post)
    out = []
    for enc in ("json", "python", "toml") if quote == '"' else ("python",):
        gg = g.fork()
        pat = PatternSpec(call=call_text, arg=arg, arg_sep=sep, value=enc, ends=ends)
        gg.fire(POSITIONAL, conf=0.8, snippet=b1[max(0, n):m.end() + 20],
                text=f"values without keys: call {call_text!r}, argument {arg!r}, separator {sep!r}, values {enc}; "
                     "the n-th value is the tool's n-th parameter")
        spec = _head_as_marker(tool_spec(dict(mk), CodecSpec(kind="pattern", pattern=pat), gg), gg)
        out.append((f"pattern/positional/{enc}", spec, gg))
    return out


def _read(s1: str, s2: str | None, b1: str, f: Findings, quote: str) -> list[tuple[str, ToolSpec, Findings]]:
    c = _locate(s1, NAME1, quote, second=False)
    if c is None:
        return []
    h = s1[c.name + len(NAME1):c.k1]
    x = s1[c.v1[1]:c.k2]
    t = s1[c.v2[1]:]
    q1 = s1[c.k1 + len(KEY1):c.v1[0]]
    q2 = s1[c.k2 + len(KEY2):c.v2[0]]
    g = f.fork()
    # a word that differs between the string and the integer argument is the value's type
    # (keys as their slot: a key written again is not a type)
    x_k, t_k = x.replace(KEY1, _K), t.replace(KEY2, _K)
    words = (_word_diff(q1, q2, at_end=False) or _word_diff(h, x_k, at_end=True)
             or _word_diff(x_k, t_k, at_end=False))
    if words is not None and (not words[0].isidentifier() or words[0][0].isdigit()):
        words = None
    if words is not None:
        g.fire(TYPE_SLOT, snippet=s1[max(0, c.k1 - 20):c.v2[1] + 20],
               text=f"the arguments' {words[0]!r} / {words[1]!r} spell their types (string / integer)")
    q = _typed(q1, words, 0)
    if _typed(q2, words, 1) != q:
        return []
    # the argument's open (P): what the head and the text between the arguments end with; its
    # close (R): what the text between them and the text after the last start with (the key
    # written again as its slot)
    p = common_suffix(_typed(h, words, 0), _typed(x, words, 1))
    r = common_prefix(_typed(x, words, 0).replace(KEY1, _K), _typed(t, words, 1).replace(KEY2, _K))
    len_r = _raw_len(r, words, 0, KEY1)
    over = _raw_len(p, words, 1, KEY2) + len_r - len(x)
    if over > 0 and re.fullmatch(r"\n[ \t]+", p[: over + 1] + p[over + 1:].split(_K, 1)[0].split(_T, 1)[0]) \
            and not r[len(r) - over:].strip(_WS):
        # a line break and an indentation both open the argument (an indented block of 'key: value'
        # lines): the open keeps the shared line break, so a line with less indentation ends the block
        r = r[: len(r) - over]
        len_r -= over
        g.fire(INDENTED, snippet=p, text=f"arguments are lines indented by {len(p) - 1} columns")
    if words is None and over > 0 and len(p) + len(r) > len(x.replace(KEY1, _K)):
        # overlapping ('</k>\n<' both closes one argument and opens the next): cut between two
        # tags, where the close's brackets balance
        xk = x.replace(KEY1, _K)
        k = balanced_cut(xk, len(xk) - len(p), len(r))
        if k > 0 and xk[:k] == r[:k]:
            r, p = xk[:k], xk[k:]
            len_r = _raw_len(r, words, 0, KEY1)
            g.fire(TAG_CUT, snippet=x,
                   text=f"between two arguments {x!r}: the close {r.replace(_K, '{key}')!r}, the open {p!r}")
    while p and _raw_len(p, words, 1, KEY2) + len_r > len(x):
        p = p[1:]  # overlapping: the close keeps the shared text
    sep = x[len_r: len(x) - _raw_len(p, words, 1, KEY2)]
    if any(w in sep for w in (KEY1, KEY2, NAME1, NAME2)) or (words and any(w in sep for w in words)):
        return []
    if _K in r:
        g.fire(KEY_REPEATED, snippet=r, text=f"the argument closes with its key again: {r.replace(_K, '{key}')!r}")
    head_tail = _typed(h, words, 0)[: len(_typed(h, words, 0)) - len(p)]
    before = s1[:c.name]
    marker_text, header_prefix = _split_head(before)
    # the call's tail: the closing form of its head's tag, right after the last argument
    after = t[_raw_len(r, words, 1, KEY2):]
    tail = ""
    tag = re.match(r"\s*<+([^\s=<>/\"']+)", header_prefix + NAME1 + head_tail)
    if tag is not None and after.lstrip(_WS).startswith(f"</{tag.group(1)}>"):
        tail = after[: len(after) - len(after.lstrip(_WS))] + f"</{tag.group(1)}>"
        g.fire(HEAD_TAIL, snippet=after, text=f"{tail.strip(_WS)!r} closes the call's {tag.group(0).strip()!r}")
    # between two calls: from the end of the first call (its last argument, its tail) to the
    # head of the second; the heads of both calls (a number that counts the calls is a slot)
    m: str | None = None
    heads = [(marker_text, header_prefix + _N + head_tail)]
    tails = [after[len(tail):]]
    c1 = _locate(s2, NAME1, quote, second=False) if s2 is not None else None
    c2 = _locate(s2, NAME2, quote, second=True) if s2 is not None else None
    if s2 is not None and c1 is not None and c2 is not None and c1.v2[1] < c2.name:
        rest2 = s2[c1.v2[1] + _raw_len(r, words, 1, KEY2):c2.name]
        close1 = tail.strip(_WS)
        if close1 and rest2.lstrip(_WS).startswith(close1):
            rest2 = rest2.lstrip(_WS)[len(close1):]
        after2 = s2[c2.v1[1] + _raw_len(r, words, 0, KEY1):]
        close2 = close1.replace(NAME1, NAME2)
        if close2 and after2.lstrip(_WS).startswith(close2):
            after2 = after2.lstrip(_WS)[len(close2):]
        # a token right after the call that counts the calls ('#/1' / '#/2') is the call's tail
        first = [_first_token(tails[0]), _first_token(after2)]
        numbered = number_slot(first, [1, 2]) if all(first) else None
        if numbered is not None and "{index}" in numbered and rest2.lstrip(_WS).startswith(first[0]):
            tail += tails[0][: tails[0].index(first[0])] + numbered
            tails[0] = tails[0][tails[0].index(first[0]) + len(first[0]):]
            rest2 = rest2.lstrip(_WS)[len(first[0]):]
            g.fire(NUMBERED, snippet=" / ".join(first), text=f"the call ends with its number: {numbered!r}")
        marker2, prefix2 = _split_head(rest2)
        # ... and one right before it ('#1 ' / '#2 ') starts it
        lead = [_last_token(heads[0][0]), _last_token(marker2)]
        numbered = number_slot(lead, [1, 2]) if all(lead) else None
        if numbered is not None and "{index}" in numbered:
            heads = [(heads[0][0][: len(heads[0][0]) - len(lead[0])], lead[0] + heads[0][1])]
            marker2, prefix2 = marker2[: len(marker2) - len(lead[1])], lead[1] + prefix2
            g.fire(NUMBERED, snippet=" / ".join(lead), text=f"the call starts with its number: {numbered!r}")
        head2 = _typed(prefix2 + _N + s2[c2.name + len(NAME2):c2.k1], words, 0)
        if head2.endswith(p):
            heads.append((marker2, head2[: len(head2) - len(p)]))
        m = marker2
    z = tails[0]
    gap = m[: len(m) - len(common_suffix(heads[0][0], m).lstrip(_WS))] if m is not None else ""
    if not tail and not r.strip(_WS) and m is not None and not gap.strip(_WS) and "\n" in gap \
            and not z.lstrip(" \t").startswith("\n"):
        # nothing closes a call and a line break separates two: a call is one line
        tail = "\n"
        g.fire(LINE_TAIL, snippet=m, text="calls separated by a line break, with nothing closing them, end at it")
    head = number_slot([hd for _, hd in heads], list(range(1, len(heads) + 1))) or heads[0][1]
    tail = tail.replace(NAME1, "{name}")
    arg = p + _K + q + _V + r
    for ch, slot in _SLOTS.items():
        head, arg, tail = head.replace(ch, slot), arg.replace(ch, slot), tail.replace(ch, slot)
    call_text = head + "{args}" + tail
    if "{name}" not in head or any(w in call_text + arg + sep for w in (NAME1, NAME2, KEY1, KEY2, VAL1, VAL2)):
        return []
    types: tuple[tuple[str, Any], ...] = ((words[0], "string"), (words[1], "integer")) if words else ()
    mk = markers(heads[0][0], z, m, g, name_in_header=False)
    # the end of the turn ends a call too (the template may write it right after the last value)
    ends = tuple(t for t in f.strip if t.strip(_WS) and t in f.content_post)
    encodings = _FAMILIES[quote]
    g.fire(ENCODINGS_PROPOSED, snippet=quote + VAL1 + quote,
           text=f"the string value is written {quote + VAL1 + quote!r}: encodings {', '.join(encodings)}")
    out = []
    for enc in encodings:
        gg = g.fork()
        pat = PatternSpec(call=call_text, arg=arg, arg_sep=sep, value=enc, types=types,  # type: ignore[arg-type]
                          ends=ends)
        gg.fire(PATTERN, conf=0.9, snippet=b1[c.name:c.v2[1] + 20],
                text=f"call {call_text!r}, argument {arg!r}, separator {sep!r}, values {enc}")
        spec = _head_as_marker(tool_spec(dict(mk), CodecSpec(kind="pattern", pattern=pat), gg), gg)
        if spec.call_open and not spec.call_close and spec.codec.pattern is not None and (
                enc in _FAMILIES['"'] or all(len(o) > 1 and any(ch.isalnum() for ch in o) for o in spec.call_open)):
            # nothing closes a call: the next call's opener ends it (outside a value; a text value
            # ends at it only where it is a word, not punctuation such as a '[' the value may hold)
            spec = replace(spec, codec=replace(spec.codec, pattern=replace(
                spec.codec.pattern, ends=tuple(dict.fromkeys((*spec.codec.pattern.ends, *spec.call_open))))))
            gg.fire(OPEN_ENDS, snippet=spec.call_open[0],
                    text=f"nothing closes a call: {spec.call_open[0]!r}, which opens the next, ends it")
        out.append((f"pattern/{enc}", spec, gg))
    return out


def _split_head(text: str) -> tuple[str, str]:
    """The text before a call's name as (markers, the call's own head): the head is the tag the
    name sits in or the word glued to it (``split_open_header``), and goes back to the caller's
    id when the id is written before the name."""
    marker, prefix = split_open_header(text)
    k = text.rfind(_I)
    if k >= 0 and k < len(text) - len(prefix):
        marker, prefix = text[:k], text[k:]
    else:
        marker = text[: len(text) - len(prefix)]
    return marker, prefix


def _last_token(text: str) -> str:
    toks = text.split()
    return toks[-1] + text[len(text.rstrip(_WS)):] if toks and text.rstrip(_WS).endswith(toks[-1]) else ""


def _first_token(text: str) -> str:
    toks = text.split()
    return toks[0] if toks else ""


def _head_as_marker(spec: ToolSpec, f: Findings) -> ToolSpec:
    """No marker wraps the calls: the call's constant head opens it as a marker (so a call cut
    off after its head is a truncated call, not text)."""
    c = spec.codec
    if spec.call_open or spec.section_open or c.pattern is None:
        return spec
    head = c.pattern.call.split("{", 1)[0]
    lit = head.strip(_WS)
    if not lit:
        return spec
    if len(lit) < 2 or c.pattern.call[len(head):].startswith("{index}"):
        # too short to be a marker (or the call's number follows): the call is tried from it
        f.fire(HEAD_LOOKAHEAD, snippet=c.pattern.call,
               text=f"no marker wraps the calls: a call is tried wherever {lit!r} starts one")
        return replace(spec, lookahead_open=(lit,))
    f.fire(HEAD_CONSUMED, snippet=c.pattern.call,
           text=f"no marker wraps the calls: their constant head {lit!r} opens each")
    pat = replace(c.pattern, call=c.pattern.call[len(head):])
    return replace(spec, codec=replace(c, pattern=pat), call_open=(lit,), lookahead_open=())
