"""Deriving a Profile from a chat template: probes, extraction, self-check, confidence, naming.

``analyze(template)`` is pure derivation when ``known=False``: no builtin profile, name list or
fingerprint is consulted, which is what the accuracy figures measure. With ``known=True`` (the
default) a derived profile whose wire format matches a builtin dialect also takes that
dialect's recovery rules and alternative spellings, which no template can reveal, but only where
the template's own renders agree (``known.py``): the renders always win, and ``Profile.builtin``
records what was taken, added and declined.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from ..errors import AutoparserError, TemplateError
from ..profile import BuiltinUse, Profile
from .confidence import combine
from .extract import Findings, find_content
from .failures import check_renders, check_said
from .history import find_history
from .known import with_builtin
from .match import name_profile
from .messages import find_messages
from .probes import OUT_OF_TIME, UNPASSED, Prober, tools_for
from .reasoning import find_reasoning
from .rules import Evidence
from .selfcheck import CheckResult, self_check
from .settings import find_settings
from .structure import structural_checks, validated
from .tools import find_tools

__all__ = ["Analysis", "analyze", "analyze_detailed", "detect", "fingerprint", "overrides"]


@dataclass
class Analysis:
    """A derived profile together with everything that led to it (for ``--explain``)."""

    profile: Profile
    findings: Findings
    check: CheckResult
    seconds: float
    renders: int
    # what the renders alone give: the profile known=False returns (with a model id, up to its
    # tie-break in naming); with known=True, ``profile`` is this plus what the builtin adds
    derived: Profile

    @property
    def evidence(self) -> list[Evidence]:
        """The structured evidence behind the profile (``profile.evidence`` is its text rendering)."""
        return self.findings.structured()

    def to_dict(self) -> dict[str, Any]:
        """What ``autoparse PATH --json`` adds to the profile: the evidence and the round trip."""
        c = self.check
        return {"evidence": [e.to_dict() for e in self.evidence],
                "rules_fired": sorted(self.findings.fired()),
                "self_check": {"rendered": c.rendered, "passed": c.passed, "lossy": c.lossy,
                               "kinds": dict(c.kinds), "failed_kinds": dict(c.failed_kinds),
                               "failures": c.failures[:3]},
                "renders": self.renders, "seconds": round(self.seconds, 4)}


def analyze(chat_template: str, bos_token: str | None = None, eos_token: str | None = None,
            known: bool = True, special_tokens: tuple[str, ...] = (), model_id: str | None = None) -> Profile:
    """Derive the output protocol of the model that uses ``chat_template``."""
    return analyze_detailed(chat_template, bos_token, eos_token, known=known,
                            special_tokens=special_tokens, model_id=model_id).profile


def analyze_detailed(chat_template: str, bos_token: str | None = None, eos_token: str | None = None,
                     *, known: bool = True, special_tokens: tuple[str, ...] = (),
                     model_id: str | None = None, check_messages: int = 10,
                     time_budget: float = 20.0) -> Analysis:
    """:func:`analyze` with everything that led to the profile; ``time_budget`` bounds all renders
    together (seconds), beyond each render's own limit."""
    t0 = time.perf_counter()
    if isinstance(chat_template, str) and not chat_template.strip():  # renders nothing: not a profile
        raise TemplateError("the chat template is empty")
    pr = Prober(chat_template, bos_token, eos_token, time_budget=time_budget)
    f = Findings()
    tools = tools_for()
    if not find_content(pr, f, tools) and find_content(pr, f, None):
        tools = []
    find_reasoning(pr, f, tools or None)
    find_tools(pr, f)
    if f.tools is not None:
        for rule, why, cap in f.call_shape.departures():
            f.fire(rule, cap=cap, snippet=f.call_shape.label, text=f"call probes rendered with {why}")
    if pr.filled:
        f.fire(UNPASSED, conf=0.85, snippet=", ".join(pr.filled),
               text=f"the template reads variables no caller passes ({', '.join(map(repr, pr.filled))}); "
                    "the probes bound them to empty strings")
    messages = find_messages(f, pr.prompt(tools or None))
    check_said(f)  # renders that show nothing the assistant said: TemplateError, not a profile
    if eos_token and eos_token not in f.strip and not eos_token.isspace():
        f.strip.append(eos_token)
    reasoning_markers = set()
    if f.reasoning is not None:
        # (a content wrapper that also closes the block stays a wrapper: reasoning.content_wrapper_ends)
        reasoning_markers = {*f.reasoning.open, *f.reasoning.close[:1]}
    strip = tuple(dict.fromkeys(t for t in f.strip if t and t not in reasoning_markers))
    prof = Profile(name=None, description="derived from a chat template", reasoning=f.reasoning,
                   strip=strip, tools=f.tools)
    if messages is not None:
        # headers route every body: no separate reasoning or call markers, and header text is
        # never stripped as an end-of-turn token
        parts = (messages.channel, messages.message, messages.start)
        prof = replace(prof, reasoning=None, tools=None, messages=messages,
                       strip=tuple(t for t in strip if not any(x in t for x in parts)))
    prof = validated(prof, f)  # a derived profile obeys the same rules as a profile file
    structural_checks(prof, f, special_tokens)
    check = self_check(pr, prof, n=check_messages, shape=f.call_shape)
    check_renders(pr, f)  # no assistant turn rendered at all: TemplateError, not a profile
    history = find_history(pr, prof, f.call_shape)  # the return trip, from renders (kept below)
    if messages is not None:  # the headers replace the reasoning and call findings
        for k in ("reasoning", "tools", "tools.codec", "tools.markers"):
            f.confidence.pop(k, None)
    if pr.out_of_time is not None:
        f.fire(OUT_OF_TIME, conf=0.3, snippet=str(pr.out_of_time),
               text=f"probes stopped: {pr.out_of_time}; what they would have shown is unknown")
    prof = replace(prof, prompt_settings=find_settings(pr, f, tools or None, prof.reasoning))
    conf = combine(f, check, has_calls=prof.tools is not None or prof.messages is not None)
    name, hint_note = name_profile(prof, model_id, use_hint=known)  # model_id: a tie-break, never more
    if hint_note is not None:
        f.line(hint_note)
    if check.rendered:
        f.line(f"self-check: {check.passed}/{check.rendered} random assistant messages parsed back exactly")
    for fail in check.failures[:3]:
        f.line(f"self-check failure: {fail}")
    prof = replace(prof, name=name, confidence=conf, history=history)
    derived = replace(prof, field_confidence=dict(f.confidence), evidence=tuple(f.evidence))
    override = _override_for(chat_template) if known else None
    if override is not None:
        prof = _from_override(derived, override)
    elif known and name is not None:
        prof = with_builtin(prof, name, check, f)  # what the builtin adds where the renders agree
        prof = replace(prof, field_confidence=dict(f.confidence), evidence=tuple(f.evidence))
    else:
        prof = derived
    return Analysis(prof, f, check, time.perf_counter() - t0, pr.renders, derived)


def overrides() -> list[dict[str, Any]]:
    """Data fixes for templates whose protocol derivation cannot recover, keyed by fingerprint.

    Each entry names the dialect, says why derivation cannot get there, and carries a test vector
    (tests/test_derive_overrides.py parses it with that dialect). Consulted only with known=True.
    """
    import json
    from importlib import resources

    text = resources.files(__package__).joinpath("overrides.json").read_text(encoding="utf-8")
    data: list[dict[str, Any]] = json.loads(text)
    return data


def fingerprint(chat_template: str) -> str:
    import hashlib

    return hashlib.sha256(chat_template.encode("utf-8")).hexdigest()


def _override_for(chat_template: str) -> dict[str, Any] | None:
    fp = fingerprint(chat_template)
    return next((o for o in overrides() if o["sha256"] == fp), None)


def _from_override(prof: Profile, o: dict[str, Any]) -> Profile:
    from ..dialects import get_profile

    b = get_profile(o["dialect"])
    parts = (("messages", b.messages), ("tools", b.tools), ("reasoning", b.reasoning), ("strip", b.strip))
    reasoning, dr, declined = b.reasoning, prof.reasoning, {}
    if reasoning is not None and dr is not None and (reasoning.start, reasoning.switchable) != (dr.start,
                                                                                                dr.switchable):
        # where the generation prompt leaves the output is read from the prompt, as on the default path;
        # the settings say which values of the template's variables open the block
        declined["reasoning.start"] = (f"the generation prompt shows {dr.start!r}; the override's dialect says "
                                       f"{reasoning.start!r}")
        reasoning = replace(reasoning, start=dr.start, switchable=dr.switchable)
    return replace(b, name=o["dialect"], confidence=max(prof.confidence, 0.9),
                   field_confidence=prof.field_confidence, reasoning=reasoning,
                   prompt_settings=prof.prompt_settings if reasoning is not None else (), history=prof.history,
                   builtin=BuiltinUse(o["dialect"], taken=tuple(k for k, v in parts if v), declined=declined),
                   evidence=(*prof.evidence, f"override for template {o['template']!r} "
                             f"(sha256 {o['sha256'][:12]}...): dialect {o['dialect']!r} because {o['reason']}"))


def detect(chat_template: str | None = None, model_id: str | None = None, *, known: bool = True,
           **kw: Any) -> Profile:
    """The profile for a model: derived from its template, or by model id when none is given."""
    if chat_template:
        try:
            return analyze(chat_template, known=known, model_id=model_id, **kw)
        except TemplateError:
            if not model_id:
                raise
    if model_id:
        from .match import dialect_for_model_id

        name = dialect_for_model_id(model_id)
        if name is not None:
            from ..dialects import get_profile

            return replace(get_profile(name), evidence=(f"model id {model_id!r} names dialect {name!r}",),
                           confidence=0.6)
    raise AutoparserError("detect() needs a chat template or a model id it recognises")
