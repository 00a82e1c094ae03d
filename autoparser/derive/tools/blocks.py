"""The part of a call turn that is the calls: without content wrapper, reasoning or end of turn."""

from __future__ import annotations

import re
from typing import Any

from ..extract import Findings
from ..markup import common_prefix, common_suffix, first_token, marker_tokens, pairs_with
from ..probes import ARGS1, CONTENT, NAME1, REASONING, CallShape, Prober
from ..rules import Rule
from .layout import balanced_cut

__all__ = ["RULES", "after_reasoning", "call_block", "empty_content_wrapper"]

_WS = " \t\r\n"


CALL_CONTENT = Rule("content.call_turn_wrapper", "content",
                    "an empty pair before the calls that holds a call turn's content wraps content: strip it")
RULES = (CALL_CONTENT,)


def empty_content_wrapper(pr: Prober, f: Findings, a: CallShape, b1: str, tools: list[dict[str, Any]],
                           kw: dict[str, Any]) -> str:
    """An empty open/close pair before the calls that holds the content when a call turn has some
    (Llama 4 writes ``<|python_start|>text<|python_end|>`` before its JSON calls): its markers are
    the content's wrapper on call turns, not a section. Returns the pair, or ''."""
    m = re.match(r"\s*(<[^<>\s]+>)(<[^<>\s]+>)", b1)
    if m is None or not pairs_with(m.group(1), m.group(2)):
        return ""
    x, y = m.groups()
    p = pr.turn(f"1 call with content ({a.label})",
                {**a.message([a.call(NAME1, ARGS1, 1)]), "content": CONTENT}, tools=tools, **kw)
    f.probes.append(p)
    if p.span is None or x + CONTENT + y not in p.span:
        return ""
    f.fire(CALL_CONTENT, snippet=p.span,
           text=f"on call turns the content is written inside {x!r}...{y!r} before the calls (stripped)")
    f.strip.extend(t for t in (x, y) if t not in f.strip)
    return x + y


def after_reasoning(span: str, f: Findings) -> str:
    """A call turn rendered with reasoning, from after its reasoning block (open marker, text,
    close marker) on; unchanged when it shows none."""
    k = span.find(REASONING)
    if k < 0:
        return span
    rest = span[k + len(REASONING):]
    closes = f.reasoning.close if f.reasoning is not None else ()
    close = next((c for c in closes if rest.lstrip(_WS).startswith(c)), "") or first_token(rest)
    return rest.lstrip(_WS)[len(close):]


def call_block(span: str, f: Findings) -> str:
    """The part of an assistant span that is the calls: no content wrapper, no end of turn."""
    s = span
    pre = f.content_pre
    if pre and s.startswith(pre):
        s = s[len(pre):]
    elif pre.strip(_WS) and s.lstrip(_WS).startswith(pre.strip(_WS)):
        s = s.lstrip(_WS)[len(pre.strip(_WS)):]
    elif pre.strip(_WS):
        # the same markers with other whitespace between them
        rx = r"\s*" + r"\s*".join(re.escape(t) for t in pre.split()) + r"\s*"
        m = re.match(rx, s)
        if m:
            s = s[m.end():]
    post = f.content_post
    lead = common_prefix(s, post)
    if lead.strip(_WS) and lead != post and balanced_cut(lead.rstrip(_WS), len(lead.rstrip(_WS)),
                                                          len(lead.rstrip(_WS))):
        # the calls start with what closes a plain message's content (an empty content block the
        # template writes before the calls): the content's wrapper, not the calls' markers
        toks = [t for t in marker_tokens(lead) if t not in f.strip]
        f.strip.extend(toks)
        s = s[len(lead):]
    if post and s.endswith(post):
        s = s[: -len(post)]
    elif post.strip(_WS) and s.rstrip(_WS).endswith(post.strip(_WS)):
        s = s.rstrip(_WS)[: -len(post.strip(_WS))]
    elif post:
        # the end of turn may share only its tail with a plain message's (END_RESPONSE vs END_ACTION)
        shared = common_suffix(s, post)
        for i in range(len(shared)):
            # the shared tail may start inside a marker ('›‹/turn›' of '‹/act›‹/turn›'): the
            # longest part of it that is whole strip markers is the end of turn
            toks = marker_tokens(shared[i:])
            if toks and all(t in f.strip for t in toks):
                s = s[: len(s) - len(shared) + i]
                break
    return s
