"""What failed probe renders mean for the analysis: no profile at all, a weaker one, or nothing.

Rules, in order:

0. Renders that show nothing the assistant said (an empty template, one that prints only the
   user's message or a constant): the template describes no output either, so ``analyze`` raises
   :class:`~autoparser.errors.TemplateError` too, with no ``__cause__`` (nothing raised).
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
from .probes import CONTENT, KEY1, NAME1, REASONING, Prober
from .rules import Rule

__all__ = ["HOSTILE_CONFIDENCE", "RULES", "check_renders", "check_said"]

SAID = (CONTENT, REASONING, NAME1, KEY1)  # what an assistant turn's probe writes that a render may show

HOSTILE_CONFIDENCE = 0.5  # the cap of rule 2

BLIND = Rule("renders.blind", "renders",
             "renders blocked by the sandbox or over a limit leave unknown what they would show: cap at 0.5")
REFUSED = Rule("renders.refused", "renders",
               "renders the template refuses on purpose say what it does not support: noted, confidence unchanged")
RULES = (BLIND, REFUSED)


def check_renders(pr: Prober, f: Findings) -> None:
    """Apply the rules above to the renders ``pr`` made; raise for rules 0 and 1."""
    if pr.failures and pr.turns_rendered == 0:
        label, first = pr.failures[0]
        raise TemplateError(f"the template renders no conversation: {first} (the first of {len(pr.failures)} "
                            f"failed probe renders, for {label!r})") from first
    if not pr.failures:
        return
    hostile = [(lb, e) for lb, e in pr.failures if isinstance(e, (TemplateBlocked, TemplateLimitExceeded))]
    if hostile:
        f.fire(BLIND, cap=HOSTILE_CONFIDENCE, snippet=str(hostile[0][1]),
               text=f"{len(hostile)} of {pr.attempted} probe renders were blocked by the sandbox or ran into a "
                    f"limit, so what they would show is unknown: {_grouped(hostile)}")
    refused = [(lb, e) for lb, e in pr.failures if not isinstance(e, (TemplateBlocked, TemplateLimitExceeded))]
    if refused:
        f.fire(REFUSED, snippet=str(refused[0][1]),
               text=f"the template refused {len(refused)} of {pr.attempted} probe renders: {_grouped(refused)}")


def check_said(f: Findings) -> None:
    """Rule 0: raise when the renders so far show nothing the assistant said (before the self-check
    spends renders on a template that describes no output)."""
    if f.reasoning is not None or f.tools is not None or any(p.span and any(s in p.span for s in SAID)
                                                             for p in f.probes):
        return
    rendered = [p.span for p in f.probes if p.span is not None]
    if not rendered:
        return  # every probe failed: rule 1 names the first cause
    raise TemplateError(f"the template renders no conversation: none of the {len(rendered)} assistant turns it "
                        "rendered shows what the assistant said (its content, reasoning or calls); the first "
                        f"is {rendered[0][:80]!r}")


def _grouped(failures: Sequence[tuple[str, TemplateError]], limit: int = 3) -> str:
    """Distinct causes with their count and the first probe that met each."""
    seen: dict[str, tuple[str, int]] = {}
    for label, err in failures:
        first, n = seen.get(str(err), (label, 0))
        seen[str(err)] = (first, n + 1)
    parts = [f"{msg} ({n}x, first for {first!r})" for msg, (first, n) in list(seen.items())[:limit]]
    more = len(seen) - limit
    return "; ".join(parts) + (f"; and {more} other causes" if more > 0 else "")
