"""Structural checks: what a derived profile must look like whatever the renders said.

They need no render: probe data never leaks into markers, an open marker has its closing form,
markers the tokenizer knows as special tokens are confirmed by it, and the profile obeys the same
loading rules as a profile file. Each check is a named rule; a failed check lowers the confidence
of the field it concerns.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ProfileError
from ..profile import Profile
from .extract import Findings
from .markup import pairs_with
from .rules import Rule

__all__ = ["RULES", "markers_of", "structural_checks", "validated"]

LEAK = Rule("structure.sentinel_leak", "tools.markers",
            "a marker holding probe data is an artefact of the probe, not the model's format")
REASONING_UNPAIRED = Rule("structure.reasoning_unpaired", "reasoning",
                          "reasoning markers that are not an open/close pair may be two unrelated tags")
MARKERS_UNPAIRED = Rule("structure.markers_unpaired", "tools.markers",
                        "call or section markers that do not pair may be a header and a footer, not a wrapper")
SPECIAL = Rule("structure.special_tokens", "markers",
               "a marker the tokenizer declares a special token is one the model emits as a unit")
REJECTED = Rule("structure.profile_rejected", "tools",
                "a derived part that breaks the profile's loading rules cannot parse anything: leave it out",
                guard=True)
RULES = (LEAK, REASONING_UNPAIRED, MARKERS_UNPAIRED, SPECIAL, REJECTED)

_SENTINEL = "QX"  # every probe sentinel carries it (probes.py)


def markers_of(p: Profile) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {"strip": p.strip}
    if p.reasoning is not None:
        out["reasoning"] = (*p.reasoning.open, *p.reasoning.close)
    if p.tools is not None:
        t = p.tools
        out["tools.markers"] = (*t.section_open, *t.section_close, *t.call_open, *t.call_close)
        out["tools.codec"] = tuple(x for x in (t.codec.header, t.codec.param, t.codec.trailer) if x)
    return out


def validated(prof: Profile, f: Findings) -> Profile:
    """``prof`` as a profile file would load, leaving out a part that breaks the rules."""
    try:
        Profile.from_dict(prof.to_dict())
    except ProfileError as e:
        fieldname = e.field.split(".")[0]
        f.fire(REJECTED, fieldname=fieldname, conf=0.2, snippet=e.field,
               text=f"derived {e.field} is unusable ({e}); left out")
        prof = replace(prof, tools=None) if e.field.startswith("tools") else replace(prof, reasoning=None)
        Profile.from_dict(prof.to_dict())
    return prof


def structural_checks(p: Profile, f: Findings, special_tokens: tuple[str, ...]) -> None:
    """Run the checks on ``p``: a failed one fires its rule."""
    for fieldname, markers in markers_of(p).items():
        leaked = [m for m in markers if _SENTINEL in m]
        if leaked:
            f.fire(LEAK, fieldname=fieldname, cap=0.3, snippet=" ".join(leaked),
                   text=f"structural check failed: probe data leaked into markers {leaked}")
    r = p.reasoning
    if r is not None and r.open and r.close and not any(pairs_with(o.strip(), c) for o in r.open
                                                        for c in r.close):
        f.fire(REASONING_UNPAIRED, cap=0.8, snippet=f"{r.open[0]} {r.close[0]}",
               text=f"reasoning markers {r.open[0]!r} / {r.close[0]!r} are not an open/close pair")
    t = p.tools
    if t is not None:
        for a, b in ((t.section_open, t.section_close), (t.call_open, t.call_close)):
            if a and b and not pairs_with(a[0], b[0]):
                f.fire(MARKERS_UNPAIRED, snippet=f"{a[0]} {b[0]}",
                       text=f"{a[0]!r} / {b[0]!r} are not an open/close pair")
    if special_tokens:
        special = set(special_tokens)
        known = sorted({m for ms in markers_of(p).values() for m in ms if m in special})
        if known:
            f.fire(SPECIAL, snippet=" ".join(known),
                   text=f"the tokenizer's special tokens confirm markers {', '.join(known)}")
