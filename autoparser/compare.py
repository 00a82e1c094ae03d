"""Comparing parse results the way the peer conformance rules do.

Whitespace runs in reasoning and content are collapsed and the ends trimmed (several engines
differ only in a space at a call boundary); tool calls compare in order, by name and by deep
equality of arguments; ids are not compared. Used by the conformance tests, the corpus report
and anyone checking a parser against expected output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .result import Result

__all__ = ["normalize", "summary"]


def _text(s: str | None) -> str:
    return re.sub(r"\s+", " ", s or "").strip()


def _args(a: Any) -> Any:
    if isinstance(a, str):
        try:
            return json.loads(a)
        except ValueError:
            return a
    return a


def normalize(d: Mapping[str, Any]) -> dict[str, Any]:
    """An ``{"reasoning", "content", "tool_calls"}`` mapping (expected output) in comparable form."""
    return {"reasoning": _text(d.get("reasoning")), "content": _text(d.get("content")),
            "tool_calls": [{"name": c["name"], "arguments": _args(c.get("arguments", {}))}
                           for c in d.get("tool_calls") or []]}


def summary(res: Result) -> dict[str, Any]:
    """A parse result in the same comparable form as :func:`normalize`."""
    return normalize({"reasoning": res.reasoning, "content": res.content,
                      "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in res.tool_calls]})
