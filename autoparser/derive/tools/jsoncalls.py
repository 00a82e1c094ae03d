"""Recogniser: one JSON object per call (or an array of them) holding the name and the arguments."""

from __future__ import annotations

import json
from typing import Any

from ...engine.scanner import BalancedScanner
from ...profile import CodecSpec, ToolSpec
from ..extract import Findings
from ..probes import KEY1, NAME1, NAME2, VAL1, call_id
from ..rules import Rule
from .layout import markers, tool_spec

__all__ = ["RULES", "balanced_end", "json_at", "read_json"]

_WS = " \t\r\n"


# which codec reads the call, and its parameters
JSON_ARRAY = Rule("tools.json_array", "tools.markers",
                  "calls in a JSON array: the text around the array is the section")

JSON_CODEC = Rule("tools.codec_json", "tools.codec", "a JSON object holding the name and the arguments is a call")
RULES = (JSON_ARRAY, JSON_CODEC)


def balanced_end(s: str, start: int, strings: tuple[tuple[str, str, bool], ...] = (('"', '"', True),)) -> int:
    """Index after the bracketed value opening at ``s[start]`` (strings aware), or -1: the engine's
    scanner decides, as it does when it parses the same text."""
    if start < 0 or start >= len(s) or s[start] not in "{[":
        return -1
    status, end = BalancedScanner("{[", strings).feed(s, start, True)
    return end if status == "done" else -1


def json_at(s: str, start: int) -> tuple[Any, int] | None:
    end = balanced_end(s, start)
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
        got = json_at(s, k)
        if got is None or not isinstance(got[0], dict) or got[1] <= n:
            continue
        text = s[k:got[1]]
        if text.count(NAME1) + text.count(NAME2) > 1:
            break
        best = (k, got[1], got[0])
    return best


def read_json(b1: str, b2: str | None, f: Findings) -> ToolSpec | None:
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
        got = json_at(b1, k)
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
        mk = markers(a, z, m, f, name_in_header=False)
    array_bare = array == "require"
    f.fire(JSON_CODEC, conf=0.95, snippet=b1[start:end],
           text=f"JSON object per call: {b1[start:end]!r}; name key {name_key!r}, "
                f"arguments key {args_key!r}" + (f", nested in {function_key!r}" if function_key else "")
                + (", array-wrapped" if array == "require" else ""))
    return tool_spec(mk, codec, f, array=array_bare)


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
