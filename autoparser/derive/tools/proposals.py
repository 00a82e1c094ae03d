"""Hypotheses: each recogniser's reading of the aligned call renders, with the evidence it fired.

A recogniser is a function ``(b1, b2, findings) -> ToolSpec | None`` (one reading) or, for the
pattern codec, a list of readings (one per value encoding). Each runs on a fork of the findings,
so the rules it fires and the markers it strips belong to its proposal; the search
(``search.py``) adopts the winner's. Ranks order the proposals by simplicity: the named codecs
first (faster, and they carry the peers' recovery rules), the pattern codec last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...profile import ToolSpec
from ..extract import Findings
from .jsoncalls import read_json
from .namejson import read_name_json
from .pattern import read_patterns
from .pythonic import read_pythonic
from .tagged import read_tagged

__all__ = ["RECOGNISERS", "Proposal", "propose"]

Reader = Callable[[str, "str | None", Findings], "ToolSpec | None"]

#: the named codecs' recognisers, simplest first
RECOGNISERS: tuple[tuple[str, Reader], ...] = (
    ("json", read_json), ("pythonic", read_pythonic), ("name_json", read_name_json), ("tagged", read_tagged))


@dataclass
class Proposal:
    """One hypothesis about how calls are written."""

    label: str
    spec: ToolSpec
    findings: Findings
    rank: int


def propose(b1: str, b2: str | None, f: Findings) -> list[Proposal]:
    """Every recogniser's reading of the call block ``b1`` (one call) and ``b2`` (two calls)."""
    out: list[Proposal] = []
    for label, read in RECOGNISERS:
        g = f.fork()
        spec = read(b1, b2, g)
        if spec is not None:
            out.append(Proposal(label, spec, g, len(out)))
    for label, spec, g in read_patterns(b1, b2, f):
        out.append(Proposal(label, spec, g, 10 + len(out)))
    return out
