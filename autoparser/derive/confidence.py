"""How sure a derivation is: the evidence combined into one number that separates right from wrong.

Three independent sources, each a named rule whose evidence says what it did:

- what the probes established, field by field (the rules that set ``Findings.confidence``); the
  weakest field that decides parsing bounds the whole, because a profile is as wrong as its
  worst field;
- the round trip (``selfcheck.py``): random messages the template writes, in every shape it can
  write, parsed back. A failed message is an output the profile will get wrong, so the rate
  scales the confidence down; a round trip that never exercised calls cannot vouch for them;
- agreement: a field derived from the probes and confirmed by the round trip's independent
  renders (2+ calls, calls after content) is raised to what the round trip shows; a field the
  round trip cannot see (that a model never reasons, what ends its turn when the template writes
  nothing) keeps its own confidence. Structural checks and permissive semantics have already
  capped the fields they concern.

Calibrated on the corpus measures (analysis/corpus.md, "Calibration"): failing derivations stay
below 0.9, passing ones sit at 0.85 or above; nothing here reads a template's name or text.
"""

from __future__ import annotations

from .extract import Findings
from .rules import Rule
from .selfcheck import CheckResult

__all__ = ["CORE_FIELDS", "RULES", "combine"]

# the fields whose confidence bounds the profile's: what it parses, and how sure the renders were
CORE_FIELDS = ("content", "reasoning", "tools", "tools.codec", "tools.render", "tools.markers", "variables",
               "renders", "end_of_turn", "messages", "strip")

UNCHECKED = Rule("confidence.unchecked", "confidence",
                 "no message rendered that could be parsed back: the profile is an untested claim")
ROUND_TRIP = Rule("confidence.round_trip", "confidence",
                  "random messages the template writes, parsed back exactly, confirm the profile")
ROUND_TRIP_FAILED = Rule("confidence.round_trip_failed", "confidence",
                         "a message the template writes that the profile cannot parse back is a wrong parse")
CALLS_UNCHECKED = Rule("confidence.calls_unchecked", "confidence",
                       "a call format that no round-trip message exercised is not confirmed")
LOSSY = Rule("confidence.lossy", "confidence",
             "messages the template cannot write faithfully say nothing about the profile: left out")
CONFIRMED = Rule("confidence.confirmed_by_round_trip", "tools.codec",
                 "call fields confirmed by round-trip renders independent of the probes that derived them")
RULES = (UNCHECKED, ROUND_TRIP, ROUND_TRIP_FAILED, CALLS_UNCHECKED, LOSSY, CONFIRMED)

_CONFIRMED_LEVEL = 0.95


def combine(f: Findings, check: CheckResult, *, has_calls: bool) -> float:
    """The profile's confidence from the field confidences and the round trip (records evidence)."""
    calls_ok = sum(v for k, v in check.kinds.items() if k.startswith("calls"))
    calls_bad = sum(v for k, v in check.failed_kinds.items() if k.startswith("calls"))
    if check.lossy:
        f.fire(LOSSY, text=f"{check.lossy} message(s) the template cannot write faithfully were left out")
    if has_calls and check.rate == 1.0 and not calls_bad and check.kinds["calls2"] \
            and (check.kinds["calls+content"] or check.kinds["calls1"]):
        # the call fields the probes derived are confirmed by renders that share no probe data
        for name in ("tools.codec", "tools.markers", "messages"):
            value = f.confidence.get(name)
            if value is not None and 0.85 <= value < _CONFIRMED_LEVEL:
                f.fire(CONFIRMED, fieldname=name, conf=_CONFIRMED_LEVEL,
                       text=f"raised from {value:.2f}: {calls_ok} call message(s) with 1-3 calls parsed back")
    core = [v for k, v in f.confidence.items() if k in CORE_FIELDS]
    base = min(core) if core else 0.5
    if not check.rendered:
        score = min(base, 0.5)
        f.fire(UNCHECKED, cap=score, text="no random message rendered in a form that could be parsed back")
        return round(score, 3)
    rate = check.rate
    score = base
    if rate < 1.0:
        score = base * (0.4 + 0.6 * rate)
        if rate < 0.9:
            score = min(score, 0.6)
        f.fire(ROUND_TRIP_FAILED, cap=round(score, 3), snippet=check.failures[0] if check.failures else "",
               text=f"{check.passed}/{check.rendered} messages parsed back; failing kinds "
                    f"{dict(check.failed_kinds)}")
    else:
        f.fire(ROUND_TRIP, text=f"{check.passed}/{check.rendered} messages parsed back ({dict(check.kinds)})")
    if has_calls and not calls_ok:
        score = min(score, 0.75)
        f.fire(CALLS_UNCHECKED, cap=score, text="no call message was parsed back")
    return round(min(score, 0.99), 3)
