"""From probe renders to Profile fields: what is known before any tool call (content, end of turn).

The extraction is split by field: this module holds the shared ``Findings`` and the content /
end-of-turn rules, ``reasoning.py`` the reasoning markers, ``calls.py`` the tool-call markers and
codec. Nothing in them knows any model's markers: markers are whatever the template wrote around
the sentinels.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any

from ..profile import ReasoningSpec, ToolSpec
from .markup import (
    marker_tokens,
    pairs_with,
)
from .probes import (
    CONTENT,
    CallShape,
    Probe,
    Prober,
)

__all__ = ["Findings", "find_content"]

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

    def say(self, fieldname: str, conf: float, text: str) -> None:
        self.confidence[fieldname] = conf
        self.evidence.append(f"{fieldname}: {text}")

def find_content(pr: Prober, f: Findings, tools: list[dict[str, Any]] | None, **kw: Any) -> bool:
    p = pr.turn("content" + (f" {sorted(kw)}" if kw else ""), {"role": "assistant", "content": CONTENT},
                tools=tools, **kw)
    f.probes.append(p)
    if p.span is None or CONTENT not in p.span:
        f.say("content", 0.2, "the template did not render a plain assistant message"
              + (f" ({p.error})" if p.error else ""))
        return False
    i = p.span.index(CONTENT)
    f.content_pre, f.content_post = p.span[:i], p.span[i + len(CONTENT):]
    wrap = marker_tokens(f.content_pre)
    eot = _end_markers(f.content_post, wrap[-1] if wrap else "")
    f.strip.extend(eot)
    if wrap:
        f.strip.extend(_prose_safe(wrap, f.content_pre))
        f.evidence.append(f"content: written after {f.content_pre!r} (stripped, unless reasoning markers)")
    f.say("end_of_turn", 0.95 if eot else 0.8,
          f"text after the content: {f.content_post!r}" if eot else "nothing follows the content")
    return True

def _end_markers(post: str, wrapper: str) -> list[str]:
    """The markers that end a plain assistant message, to strip from output.

    Tokens that look like markup are stripped wherever they occur. Plain words and punctuation
    runs (``over``, ``###``, ``Response:``) are prose too, so they are stripped only as part of
    the whole end-of-turn text. A content wrapper's closing form glued to the end of turn
    (``</say><|end|>``, ``‹/answer›‹/turn›``) is split off it.
    """
    toks = marker_tokens(post)
    if toks and wrapper and len(marker_tokens(toks[0])) == 1:
        first = toks[0]
        for k in range(len(first) - 1, 0, -1):
            if pairs_with(wrapper, first[:k]):
                toks[:1] = [first[:k], first[k:]]
                break
    return _prose_safe(toks, post)

def _prose_safe(toks: list[str], text: str) -> list[str]:
    """The markup tokens of ``text``, plus the whole of it when some tokens were prose."""
    out = [t for t in toks if _is_markup(t)]
    whole = text.strip(_WS)
    if len(out) < len(toks) and whole not in out:
        out.append(whole)
    return out

def _is_markup(tok: str) -> bool:
    """Whether a token looks like a marker: a symbol (emoji), or a word inside brackets or bars.
    Bare words and bare bracket runs (``{``, ``]]``) are prose and JSON."""
    cats = [unicodedata.category(c) for c in tok]
    if "So" in cats:
        return True
    bracket = any(c in "<>[]{}|" or k in ("Ps", "Pe", "Pi", "Pf") for c, k in zip(tok, cats, strict=True))
    return bracket and any(c.isalnum() for c in tok)
