"""From probe renders to Profile fields: what is known before any tool call (content, end of turn).

The extraction is split by field: this module holds the shared ``Findings`` and the content /
end-of-turn rules, ``reasoning.py`` the reasoning markers, ``calls.py`` the tool-call markers and
codec. Nothing in them knows any model's markers: markers are whatever the template wrote around
the sentinels.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..profile import ReasoningSpec, ToolSpec
from .markup import (
    marker_tokens,
    pairs_with,
    tag_runs,
)
from .probes import (
    CONTENT,
    CallShape,
    Probe,
    Prober,
)
from .rules import Evidence, Rule, clip

__all__ = ["RULES", "Findings", "find_content"]

CONTENT_WRAPPER = Rule("content.wrapper", "content",
                       "markup the template writes before a plain answer wraps content: strip it")
EOT_MARKERS = Rule("end_of_turn.markers", "end_of_turn",
                   "markup after a plain answer ends the turn: strip it wherever it occurs")
EOT_NONE = Rule("end_of_turn.none", "end_of_turn",
                "nothing follows a plain answer: the turn ends with the output (as sure as any absence: 0.85)")
EOT_SPLIT = Rule("end_of_turn.split_wrapper", "end_of_turn",
                 "a content wrapper's closing form glued to the end of turn is a marker of its own")
EOT_PROSE = Rule("end_of_turn.prose_whole", "strip",
                 "plain words after the answer are prose too: strip them only as the whole end text")
NO_CONTENT = Rule("content.unrendered", "content",
                  "a template that cannot render a plain assistant message leaves content unknown")
RULES = (CONTENT_WRAPPER, EOT_MARKERS, EOT_NONE, EOT_SPLIT, EOT_PROSE, NO_CONTENT)

_WS = " \t\r\n"


@dataclass
class Findings:
    """What the probes established, field by field."""

    evidence: list[str] = field(default_factory=list)
    confidence: dict[str, float] = field(default_factory=dict)
    probes: list[Probe] = field(default_factory=list)
    content_pre: str = ""
    content_post: str = ""
    strip: list[str] = field(default_factory=list)
    reasoning: ReasoningSpec | None = None
    tools: ToolSpec | None = None
    call_shape: CallShape = field(default_factory=CallShape)  # how the template wants call turns

    records: list[Evidence] = field(default_factory=list)

    def fire(self, rule: Rule, *, text: str, snippet: str | None = "", conf: float | None = None,
             cap: float | None = None, fieldname: str | None = None) -> Evidence:
        """Record that ``rule`` decided something: structured evidence, its line, its confidence effect.

        ``snippet`` is the render text the rule read; ``conf`` sets the field's confidence,
        ``cap`` bounds it; ``fieldname`` overrides the rule's field (a rule shared by fields).
        """
        name = fieldname or rule.field
        effect: Any = "note"
        value = None
        if conf is not None:
            effect, value = "set", conf
        elif cap is not None:
            effect, value = "cap", min(self.confidence.get(name, 1.0), cap)
        if value is not None and name != "confidence":  # "confidence" is the profile's own (confidence.py)
            self.confidence[name] = value
        ev = Evidence(name, rule.name, text, clip(snippet), effect, value)
        self._record(ev)
        return ev

    def _record(self, ev: Evidence) -> None:
        """Keep ``ev`` and its line once: a rule that fires twice on the same reading (a probe
        retried without tools) says one thing."""
        if ev not in self.records:
            self.records.append(ev)
        if ev.line() not in self.evidence:
            self.evidence.append(ev.line())

    def line(self, text: str) -> None:
        """A plain evidence line (no rule decided it: a count, a note), kept once."""
        if text not in self.evidence:
            self.evidence.append(text)

    def drop(self, fieldname: str) -> None:
        """Forget what was established for ``fieldname`` (a later, better look replaces it)."""
        def mine(name: str) -> bool:
            return name == fieldname or name.startswith(fieldname + ".")

        for k in [k for k in self.confidence if mine(k)]:
            del self.confidence[k]
        self.records[:] = [r for r in self.records if not mine(r.field)]
        self.evidence[:] = [e for e in self.evidence if not mine(e.partition(":")[0])]

    def structured(self) -> list[Evidence]:
        """Every evidence line as a record (lines other code appended as text get an empty rule)."""
        by_line = {r.line(): r for r in self.records}
        out = []
        for line in self.evidence:
            rec = by_line.get(line)
            if rec is None:
                head, sep, rest = line.partition(": ")
                plain = sep and " " not in head
                rec = Evidence(head if plain else "", "", rest if plain else line)
            out.append(rec)
        return out

    def fired(self) -> set[str]:
        return {r.rule for r in self.records if r.rule}

    def fork(self) -> Findings:
        """A copy to try a hypothesis on: what it fires and changes stays in the copy until
        :meth:`adopt` takes it (the probes rendered so far are shared)."""
        return replace(self, evidence=list(self.evidence), confidence=dict(self.confidence),
                       strip=list(self.strip), records=list(self.records))

    def adopt(self, other: Findings) -> None:
        """Take everything a fork established (the winning hypothesis)."""
        for f in fields(self):
            if f.name != "probes":
                setattr(self, f.name, getattr(other, f.name))

def find_content(pr: Prober, f: Findings, tools: list[dict[str, Any]] | None, **kw: Any) -> bool:
    p = pr.turn("content" + (f" {sorted(kw)}" if kw else ""), {"role": "assistant", "content": CONTENT},
                tools=tools, **kw)
    f.probes.append(p)
    if p.span is None or CONTENT not in p.span:
        f.fire(NO_CONTENT, conf=0.2, snippet=p.span or p.error,
               text="the template did not render a plain assistant message" + (f" ({p.error})" if p.error else ""))
        return False
    i = p.span.index(CONTENT)
    f.content_pre, f.content_post = p.span[:i], p.span[i + len(CONTENT):]
    wrap = marker_tokens(f.content_pre)
    eot = _end_markers(f, f.content_post, wrap[-1] if wrap else "")
    f.strip.extend(eot)
    if wrap:
        f.strip.extend(_prose_safe(f, wrap, f.content_pre))
        f.fire(CONTENT_WRAPPER, snippet=f.content_pre,
               text=f"written after {f.content_pre!r} (stripped, unless reasoning markers)")
    if eot:
        f.fire(EOT_MARKERS, conf=0.95, snippet=f.content_post, text=f"text after the content: {f.content_post!r}")
    else:
        f.fire(EOT_NONE, conf=0.85, snippet=p.span, text="nothing follows the content")
    return True

def _end_markers(f: Findings, post: str, wrapper: str) -> list[str]:
    """The markers that end a plain assistant message, to strip from output.

    Tokens that look like markup are stripped wherever they occur. Plain words and punctuation
    runs (``over``, ``###``, ``Response:``) are prose too, so they are stripped only as part of
    the whole end-of-turn text. A content wrapper's closing form glued to the end of turn
    (``</say><|end|>``, ``‹/answer›‹/turn›``) is split off it.
    """
    toks = tag_runs(post)
    if toks and wrapper and len(marker_tokens(toks[0])) == 1:
        first = toks[0]
        for k in range(len(first) - 1, 0, -1):
            if pairs_with(wrapper, first[:k]):
                toks[:1] = [first[:k], first[k:]]
                f.fire(EOT_SPLIT, snippet=post,
                       text=f"{first!r} is {wrapper!r}'s closing form {first[:k]!r} then {first[k:]!r}")
                break
    return _prose_safe(f, toks, post)

def _prose_safe(f: Findings, toks: list[str], text: str) -> list[str]:
    """The markup tokens of ``text``, plus the whole of it when some tokens were prose."""
    out = [t for t in toks if _is_markup(t)]
    whole = text.strip(_WS)
    if len(out) < len(toks) and whole not in out:
        out.append(whole)
        f.fire(EOT_PROSE, snippet=text,
               text=f"{whole!r} holds prose-like tokens: stripped only as a whole")
    return out

def _is_markup(tok: str) -> bool:
    """Whether a token looks like a marker: a symbol (emoji), or a word inside brackets or bars.
    Bare words and bare bracket runs (``{``, ``]]``) are prose and JSON."""
    cats = [unicodedata.category(c) for c in tok]
    if "So" in cats:
        return True
    bracket = any(c in "<>[]{}|" or k in ("Ps", "Pe", "Pi", "Pf") for c, k in zip(tok, cats, strict=True))
    return bracket and any(c.isalnum() for c in tok)
