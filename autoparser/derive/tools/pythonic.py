"""Recogniser: Python call syntax with keyword arguments (``[f(a=1), g(b="x")]``, or call lines)."""

from __future__ import annotations

import re

from ...profile import CodecSpec, ToolSpec
from ..extract import Findings
from ..probes import KEY1, NAME1
from ..rules import Rule

__all__ = ["RULES", "read_pythonic"]

_WS = " \t\r\n"


PYTHONIC = Rule("tools.codec_pythonic", "tools.codec", "Python call syntax with keyword arguments is a call")

LIST_OPENS = Rule("tools.bracket_list_opens", "tools.bare_calls",
                  "a bracketed call list is distinctive enough to start a call without its wrapper")

PY_LINES = Rule("tools.pythonic_lines", "tools.codec",
                "calls without list brackets are one per line, up to the call's end marker")
RULES = (PYTHONIC, LIST_OPENS, PY_LINES)


def read_pythonic(b1: str, b2: str | None, f: Findings) -> ToolSpec | None:
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
