"""Recogniser: a header holding the name, then one element per argument around key and value."""

from __future__ import annotations

import os
import re
from dataclasses import replace

from ...profile import CodecSpec, ToolSpec
from ..extract import Findings
from ..induce import number_slot, slotted
from ..markup import common_prefix, common_suffix
from ..probes import INT1, KEY1, KEY2, NAME1, NAME2, VAL1
from ..rules import Rule
from .layout import markers, tool_spec

__all__ = ["RULES", "read_tagged"]

_WS = " \t\r\n"


HEADER_TAIL = Rule("tools.header_tail", "tools.codec",
                   "what the header writes after the name before the first parameter is header (a number, a slot)")

TAGGED = Rule("tools.codec_tagged", "tools.codec", "one element per argument around key and value is a tagged call")

BARE_TAGS = Rule("tools.bare_tags", "tools.bare_calls",
                 "calls that are bare tags closed by their closing form start at their own tag")

TAG_OPENS = Rule("tools.tag_opens", "tools.bare_calls",
                 "a call's own tag is distinctive enough to start a call without its wrapper")
RULES = (HEADER_TAIL, TAGGED, BARE_TAGS, TAG_OPENS)


def read_tagged(b1: str, b2: str | None, f: Findings) -> ToolSpec | None:
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
    mk = markers(a, z, m, f, name_in_header=False)
    head_lit = header.split("{name}")[0]
    bare_tag = in_tag and mk["call_open"] == "" and mk["section_open"] == ""
    if bare_tag and not (trailer and head_lit.startswith("<") and len(head_lit.strip(_WS)) >= 4):
        return None
    codec = CodecSpec(kind="tagged", header=header, trailer=trailer, param=param, string_true=string_true)
    f.fire(TAGGED, conf=0.9, snippet=b1[h_start:],
           text=f"tagged parameters: header {header!r}, parameter {param!r}, trailer {trailer!r}")
    spec = tool_spec(mk, codec, f)
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
