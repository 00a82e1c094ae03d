"""Recogniser: a header holding the name (and perhaps an id), then a JSON or relaxed object."""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Callable

from ...engine.codecs import XML_QUOTES
from ...engine.values import parse_relaxed_object
from ...profile import CodecSpec, ToolSpec
from ..extract import Findings
from ..induce import SLOT, slotted
from ..probes import INT1, KEY1, KEY2, NAME1, NAME2, VAL1, VAL2, call_id
from ..rules import Rule
from .jsoncalls import balanced_end, json_at
from .layout import markers, tool_spec

__all__ = ["RULES", "read_name_json"]

_WS = " \t\r\n"


TWO_CALL_CLOSE = Rule("tools.section_close_from_two_calls", "tools.markers",
                      "a close only the two-call render writes after the last call is the section close")

NAME_JSON = Rule("tools.codec_name_json", "tools.codec", "a name then a JSON (or relaxed) object is a call")

ID_BEFORE_NAME = Rule("tools.id_before_name", "tools.ids", "an id slot before the name starts the call's header")

NUMBERED_IDS = Rule("tools.numbered_ids", "tools.ids",
                    "text after the name that differs between calls only by their number is an id holding the name")
ESCAPED_JSON = Rule("tools.escaped_json", "tools.codec",
                    "JSON arguments written with an escaping (XML in an attribute, doubled quotes in a CSV "
                    "field) are read unescaped")
NAME_TRAILER = Rule("tools.name_in_trailer", "tools.codec",
                    "text right after the arguments that repeats the call's name closes that call ('</{name}>')")
RULES = (TWO_CALL_CLOSE, NAME_JSON, ID_BEFORE_NAME, NUMBERED_IDS, NAME_TRAILER, ESCAPED_JSON)


def read_name_json(b1: str, b2: str | None, f: Findings) -> ToolSpec | None:
    # the caller's ids are slots wherever the template writes them (after the name, or before it)
    b1 = slotted(b1, {"call_id": call_id(1)})
    b2 = slotted(slotted(b2, {"call_id": call_id(1)}), {"call_id": call_id(2)}) if b2 is not None else None
    n = b1.find(NAME1)
    k = _brace(b1, n)
    if k < 0:
        return None
    got = json_at(b1, k)
    relaxed: tuple[tuple[str, str], ...] = ()
    seps = (":", ",")
    flavor = "json"
    if got is None or not isinstance(got[0], dict) or got[0].get(KEY1) != VAL1:
        relaxed_found = _relaxed_delims(b1, k, b2)
        escaped = _escaped_json_end(b1, k) if relaxed_found is None else None
        if relaxed_found is not None:
            relaxed, seps, end = relaxed_found
            flavor = "relaxed"
        elif escaped is not None:
            end, flavor = escaped
            f.fire(ESCAPED_JSON, snippet=b1[k:end],
                   text=f"the arguments are JSON written {_ESCAPES[flavor][0]}: {b1[k:end][:60]!r}")
        else:
            return None
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
        e1 = _args_end(b2, NAME1, relaxed, flavor)
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
    named = re.match(r"\s*([^\s{}]*" + NAME1 + r"[^\s{}]*)", z)
    if not trailer and named is not None:
        # the call's own close names it (<NAME>{...}</NAME>): a trailer with the name's slot
        close1 = named.group(1)
        trailer = close1.replace(NAME1, "{name}")
        z = z[named.end():]
        if m is not None and m.lstrip(_WS).startswith(close1):
            m = m.lstrip(_WS)[len(close1):]
        f.fire(NAME_TRAILER, snippet=close1, text=f"{close1!r} after the arguments repeats the name: the call's "
                                                  f"trailer {trailer!r}")
    if b2 is not None and NAME2 in b2:
        # the one-call render may lack the section close that the two-call render writes (a
        # template bug in DeepSeek R1 distills); the model writes it, so take it from there
        e2 = _args_end(b2, NAME2, relaxed, flavor)
        z2 = b2[e2:] if e2 > 0 else ""
        if trailer:
            z2 = z2.lstrip(_WS)
            t2 = trailer.strip(_WS).replace("{name}", NAME2)
            z2 = z2[len(t2):] if z2.startswith(t2) else z2
        if len(z2.strip(_WS)) > len(z.strip(_WS)) and z2.strip(_WS).startswith(z.strip(_WS)):
            f.fire(TWO_CALL_CLOSE, snippet=z2,
                   text=f"the one-call render ends without what the two-call render "
                        f"writes after the last call ({z2.strip(_WS)!r}); taken as the section close")
            z = z2
    mk = markers(a, z, m, f, name_in_header=True)
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
                      flavor=flavor, string_delims=relaxed, relaxed_seps=seps,  # type: ignore[arg-type]
                      id_name_prefix=id_prefix, id_name_suffix=id_suffix)
    f.fire(NAME_JSON, conf=0.9, snippet=b1[n:end],
           text=f"name then {'relaxed ' if relaxed else ''}JSON arguments: header {header!r}"
                + (f", strings {relaxed[0][0]}...{relaxed[0][1]}, separators {seps[0]!r} {seps[1]!r}"
                   if relaxed else ""))
    return tool_spec(mk, codec, f)


def _args_end(s: str, name: str, relaxed: tuple[tuple[str, str], ...], flavor: str = "json") -> int:
    """Index after the arguments object that follows ``name`` in ``s`` (JSON or relaxed), or -1."""
    k = _brace(s, s.find(name))
    if flavor in _ESCAPES:
        found = _escaped_json_end(s, k)
        return found[0] if found is not None else -1
    return balanced_end(s, k) if not relaxed else _relaxed_end(s, k, relaxed)


#: JSON written with an escaping of its own: (what it is, its string quotes, how to undo it)
_ESCAPES: dict[str, tuple[str, tuple[tuple[str, str, bool], ...], Callable[[str], str]]] = {
    "xml": ("XML-escaped (an attribute's value)", XML_QUOTES, html.unescape),
    "csv": ("with its quotes doubled (a CSV field)", (('""', '""', True),), lambda t: t.replace('""', '"')),
}


def _escaped_json_end(s: str, k: int) -> tuple[int, str] | None:
    """The end of the probe's arguments written as escaped JSON at ``s[k]`` (``{&#34;key&#34;: ...}``
    as ``tojson | e`` writes them into an attribute; ``{""key"": ...}`` in a CSV field), and the
    escaping; None when no escaping undoes to the probe's arguments."""
    for flavor, (_what, quotes, undo) in _ESCAPES.items():
        end = balanced_end(s, k, quotes)
        if end < 0 or s[k:end] == undo(s[k:end]):
            continue
        try:
            got = json.loads(undo(s[k:end]))
        except ValueError:
            continue
        if isinstance(got, dict) and got.get(KEY1) in (VAL1, VAL2):
            return end, flavor
    return None


def _brace(s: str, start: int) -> int:
    """The first '{' at or after ``start`` that opens a value, not a slot of the induced pattern."""
    k = s.find("{", start)
    while k >= 0 and SLOT.match(s, k):
        k = s.find("{", k + 1)
    return k


def _relaxed_delims(s: str, k: int, s2: str | None = None
                    ) -> tuple[tuple[tuple[str, str], ...], tuple[str, str], int] | None:
    """A relaxed object ``{key<kv><delim>value<delim><sep>key2<kv>7}`` at ``s[k]``: the string
    delimiters around the string value (Gemma's ``<|"|>``), the key/value separator (what stands
    between the second key and its integer) and the member separator (what is left between the
    string value's closing delimiter and the second key). The closing delimiter is the one the
    one-argument call ``s2`` writes before its ``}``, else the opening one again, else its mirror."""
    m = re.match(r"\{\s*" + re.escape(KEY1) + r"\s*", s[k:])
    k2 = s.find(KEY2, k)
    if m is None or k2 < 0:
        return None
    mi = re.compile(r"\s*(\S{1,3}?)\s*" + str(INT1) + r"(?![\w.])").match(s, k2 + len(KEY2))
    kv = mi.group(1) if mi is not None else ":"
    at = k + m.end()
    if not s.startswith(kv, at):
        return None
    at += len(kv)
    v = s.find(VAL1, at, k2)
    if v < 0:
        return None
    d_open = s[at:v].strip(_WS)
    mid = s[v + len(VAL1):k2].strip(_WS)  # the closing delimiter, then the member separator
    if not d_open or d_open == '"' or not mid:
        return None
    d_close = ""
    if s2 is not None:
        found = re.search(re.escape(VAL2) + r"(.*?)\s*\}", s2, re.S)
        d_close = found.group(1).strip(_WS) if found is not None else ""
    for cand in (d_close, d_open, _mirror(d_open)):
        if cand and mid.startswith(cand) and len(mid) > len(cand):
            d_close = cand
            break
    else:
        return None
    seps = (kv, mid[len(d_close):].strip(_WS))
    delims = ((d_open, d_close),)
    end = _relaxed_end(s, k, delims)
    if end < 0 or seps[0] == seps[1]:
        return None
    try:
        got = parse_relaxed_object(s[k:end], delims, seps)
    except ValueError:
        return None
    # (some templates delimit every value, the integer too: its text is what counts)
    ok = isinstance(got, dict) and set(got) == {KEY1, KEY2} and got[KEY1] == VAL1 and str(got[KEY2]) == str(INT1)
    return (delims, seps, end) if ok else None


def _mirror(text: str) -> str:
    """``text`` read backwards with each bracket turned round (``‹‹`` -> ``››``, ``<<`` -> ``>>``)."""
    return "".join(_PAIRS.get(ch, ch) for ch in reversed(text))


_OPENS, _CLOSES = "<([{‹«⟪⟦「【", ">)]}›»⟫⟧」】"
_PAIRS = {**dict(zip(_OPENS, _CLOSES, strict=True)), **dict(zip(_CLOSES, _OPENS, strict=True))}


def _relaxed_end(s: str, k: int, delims: tuple[tuple[str, str], ...]) -> int:
    """Index after a relaxed object whose strings are between ``delims`` (no escapes), or -1."""
    return balanced_end(s, k, tuple((a, b, False) for a, b in delims))
