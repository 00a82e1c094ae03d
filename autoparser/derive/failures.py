"""What failed probe renders mean for the analysis: no profile at all, a weaker one, or nothing.

Rules, in order:

1. No assistant turn rendered at all (every probe raised, was blocked by the sandbox or ran into
   a time or size limit): there is no output protocol to describe, so there is no profile.
   ``analyze`` raises :class:`~autoparser.errors.TemplateError` naming the first failure, chained
   to it (``err.__cause__``), so callers can tell a sandbox block from a limit by type.
2. Some renders were blocked by the sandbox or hit a limit: what those probes would have shown is
   unknown, so the ``renders`` field is capped at 0.5 and the evidence names the failures.
3. Some renders raised otherwise (``raise_exception``, a type error on one argument form): that is
   how templates refuse shapes they do not support, which is information, not doubt; the evidence
   names them and confidence is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import TemplateError
from ..templates._exceptions import TemplateBlocked, TemplateLimitExceeded
from .extract import Findings
from .probes import Prober
from .rules import Rule

__all__ = ["HOSTILE_CONFIDENCE", "RULES", "check_renders"]

HOSTILE_CONFIDENCE = 0.5  # the cap of rule 2

BLIND = Rule("renders.blind", "renders",
             "renders blocked by the sandbox or over a limit leave unknown what they would show: cap at 0.5")
REFUSED = Rule("renders.refused", "renders",
               "renders the template refuses on purpose say what it does not support: noted, confidence unchanged")
RULES = (BLIND, REFUSED)


def check_renders(pr: Prober, f: Findings) -> None:
    """Apply the rules above to the renders ``pr`` made; raise for rule 1."""
    if not pr.failures:
        return
    label, first = pr.failures[0]
    if pr.turns_rendered == 0:
        raise TemplateError(f"the template renders no conversation: {first} (the first of {len(pr.failures)} "
                            f"failed probe renders, for {label!r})") from first
    hostile = [(lb, e) for lb, e in pr.failures if isinstance(e, (TemplateBlocked, TemplateLimitExceeded))]
    if hostile:
        f.fire(BLIND, cap=HOSTILE_CONFIDENCE, snippet=str(hostile[0][1]),
               text=f"{len(hostile)} of {pr.attempted} probe renders were blocked by the sandbox or ran into a "
                    f"limit, so what they would show is unknown: {_grouped(hostile)}")
    refused = [(lb, e) for lb, e in pr.failures if not isinstance(e, (TemplateBlocked, TemplateLimitExceeded))]
    if refused:
        f.fire(REFUSED, snippet=str(refused[0][1]),
               text=f"the template refused {len(refused)} of {pr.attempted} probe renders: {_grouped(refused)}")


def _grouped(failures: Sequence[tuple[str, TemplateError]], limit: int = 3) -> str:
    """Distinct causes with their count and the first probe that met each."""
    seen: dict[str, tuple[str, int]] = {}
    for label, err in failures:
        first, n = seen.get(str(err), (label, 0))
        seen[str(err)] = (first, n + 1)
    parts = [f"{msg} ({n}x, first for {first!r})" for msg, (first, n) in list(seen.items())[:limit]]
    more = len(seen) - limit
    return "; ".join(parts) + (f"; and {more} other causes" if more > 0 else "")
