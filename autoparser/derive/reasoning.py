"""Reasoning markers: from a rendered reasoning block, or from how the generation prompt changes
when thinking is switched on and off (templates that drop reasoning from history)."""

from __future__ import annotations

import re
from typing import Any

from ..errors import TemplateError
from ..profile import ReasoningSpec
from .extract import Findings
from .markup import (
    common_prefix,
    first_token,
    last_tag,
    last_token,
    marker_tokens,
    opening_tail,
    pairs_with,
)
from .probes import (
    CONTENT,
    REASONING,
    USER,
    Probe,
    Prober,
    after_user,
)
from .rules import Rule

__all__ = ["RULES", "find_reasoning"]

BLOCK = Rule("reasoning.rendered_block", "reasoning",
             "history renders the reasoning: its markers are the tokens around the sentinel")
CALL_TURN = Rule("reasoning.call_turn_only", "reasoning",
                 "some templates keep reasoning only after the last plain answer: a call turn shows it")
OPEN_FROM_PROMPT = Rule("reasoning.open_from_prompt", "reasoning",
                        "the block's open is written by the generation prompt: its last tag pairs with the close")
WRAPPER_AFTER = Rule("reasoning.content_wrapper_after", "reasoning",
                     "the content wrapper follows the close marker and is not part of it")
SWITCH = Rule("reasoning.switch", "reasoning.switchable",
              "a thinking variable that changes the generation prompt makes reasoning switchable")
PROMPT_DIFF = Rule("reasoning.prompt_diff", "reasoning",
                   "a template that drops reasoning from history shows its markers in what thinking on/off changes")
PROMPT_TAIL = Rule("reasoning.prompt_tail_guess", "reasoning",
                   "a prompt ending in an open tag no history render shows opens a block: assume its closing form")
HISTORY_CUT = Rule("reasoning.history_cut", "reasoning",
                   "a template that drops what precedes the guessed close from a reply in history knows that block")
NONE = Rule("reasoning.none", "reasoning", "no render and no prompt switch shows a reasoning block")
PREFILLED = Rule("reasoning.prefilled", "reasoning.start",
                 "the default generation prompt ends with the open marker: output starts inside the block")
WRAPPER_GLUED = Rule("reasoning.content_wrapper_glued", "reasoning",
                     "a content wrapper that starts with an empty block's close: its last tag run opens the "
                     "content, the rest closes reasoning")
LABELLED = Rule("reasoning.labelled_open", "reasoning.open",
                "a tag followed by a label word (a channel name): the bare tag opens a block too")
WRAPPER_ENDS = Rule("reasoning.content_wrapper_ends", "reasoning.close",
                    "when the prompt opens the block, the content wrapper written in its place means "
                    "the block is over: it closes reasoning too")
PHRASE = Rule("reasoning.bracketed_phrase", "reasoning.close",
              "words inside one pair of brackets ([BEGIN FINAL RESPONSE]) are one marker: spaces do not split it")
RULES = (PHRASE, BLOCK, CALL_TURN, OPEN_FROM_PROMPT, WRAPPER_AFTER, WRAPPER_GLUED, SWITCH, PROMPT_DIFF,
         PROMPT_TAIL, HISTORY_CUT, NONE, PREFILLED, LABELLED, WRAPPER_ENDS)

_WS = " \t\r\n"


def find_reasoning(pr: Prober, f: Findings, tools: list[dict[str, Any]] | None,
                   call_turn: dict[str, Any] | None = None, context: dict[str, Any] | None = None) -> None:
    """Reasoning markers from a rendered block, else from the generation prompt's switches.

    ``call_turn`` (an assistant message with content and tool calls) is the second look, taken
    after the calls are known: some templates keep reasoning only on the turns after the last
    plain assistant message, so only a tool-call turn shows it (Kimi K2 Thinking). ``context``
    holds the extra variables that turn renders with.
    """
    msg = {"role": "assistant", "content": CONTENT, "reasoning_content": REASONING}
    span_probe: Probe | None = None
    blocks = {"role": "assistant", "content": [{"type": "thinking", "thinking": REASONING},
                                               {"type": "text", "text": CONTENT}]}
    switches: tuple[tuple[dict[str, Any], dict[str, Any]], ...] = (
        (msg, {}), (msg, {"enable_thinking": True}), (msg, {"thinking": True}), (blocks, {}))
    if call_turn is not None:
        switches = (({**call_turn, "content": CONTENT, "reasoning_content": REASONING}, context or {}),)
    for m, kw in switches:
        label = ("reasoning" + (f" {kw}" if kw else "") + (" (content blocks)" if m is blocks else "")
                 + (" on a tool-call turn" if call_turn is not None else ""))
        p = pr.turn(label, m, tools=tools, **kw)
        f.probes.append(p)
        printed_data = p.span is not None and ("'type'" in p.span or '"type"' in p.span)
        if p.span is not None and REASONING in p.span and CONTENT in p.span and not printed_data:
            opened = bool(last_token(p.span[:p.span.index(REASONING)])) or not p.prompt_tail.strip(_WS)
            if span_probe is None or opened:
                span_probe = p
            if opened:
                break
            # the prompt and the history share the block's open marker (a default prompt that writes
            # an empty block): another switch may show the marker inside the assistant's span
    if call_turn is not None:
        if span_probe is None:
            return  # the first look's findings stand
        f.drop("reasoning")
    prompts: dict[str, str | None] = {"default": after_user(pr.prompt(tools))}
    prompts["on"] = prompts["off"] = prompts["default"]
    for var in ("enable_thinking", "thinking", "reasoning"):
        if not pr.renderer.reads(var):
            continue  # a variable the template never names cannot change its prompt
        on = after_user(pr.prompt(tools, **{var: True}))
        off = after_user(pr.prompt(tools, **{var: False}))
        prompts["on"], prompts["off"] = on, off
        if on is not None and off is not None and on != off:
            f.fire(SWITCH, snippet=f"{on!r} / {off!r}",
                   text=f"the template variable {var!r} changes the generation prompt")
            break
    open_m, close_m, how = "", "", ""
    wrapper_open = ""  # the content wrapper that follows the close in renders
    how_rule, how_snippet = NONE, ""
    prompt_conf = 0.75
    if span_probe is not None:
        assert span_probe.span is not None
        s = span_probe.span
        ri, ci = s.index(REASONING), s.index(CONTENT)
        if ri < ci:
            before, between = s[:ri], s[ri + len(REASONING):ci]
            wrap = f.content_pre.strip(_WS)
            b = between.strip(_WS)
            open_m = last_token(before)
            # the content wrapper (e.g. START_RESPONSE) follows the close marker; an empty reasoning
            # block in the plain render is not a wrapper
            if wrap and b.endswith(wrap) and b != wrap and not (open_m and open_m in wrap):
                b = b[: -len(wrap)].strip(_WS)
                wrapper_open = wrap
                f.fire(WRAPPER_AFTER, snippet=between, text=f"{wrap!r} after the close is the content wrapper")
            elif wrap and b == wrap:
                # the wrapper itself starts with an empty block's close: only its last tag run opens
                # the content (…think-close then response-open, glued)
                cuts = [k for k in range(1, len(b)) if b[k] == "<" and b[k - 1] == ">"]
                if cuts:
                    # the glued run is no longer one strip token: its close ends reasoning
                    f.strip[:] = [t for t in f.strip if t != b] + [b[cuts[-1]:]] * (b[cuts[-1]:] not in f.strip)
                    b, wrapper_open = b[: cuts[-1]], b[cuts[-1]:]
                    f.fire(WRAPPER_GLUED, snippet=between,
                           text=f"{wrap!r} is a close glued to the content wrapper {wrap[cuts[-1]:]!r}")
            close_m = first_token(b)
            phrase = _bracketed_phrase(b)
            if phrase and phrase != close_m:
                close_m = phrase
                f.fire(PHRASE, snippet=between, text=f"{phrase!r} closes the block as one marker")
            if not open_m:
                for src in (span_probe.prompt_tail, prompts["on"] or "", prompts["default"] or ""):
                    tail = last_tag(src)
                    if not pairs_with(tail, close_m):  # a marker of several glued parts
                        tail = opening_tail(src, close_m)
                    if tail:
                        open_m = tail
                        f.fire(OPEN_FROM_PROMPT, snippet=src,
                               text=f"the prompt's last tag {tail!r} opens the block {close_m!r} closes")
                        break
            how = f"reasoning renders as {s[:ci + len(CONTENT)]!r}"
            how_rule, how_snippet = BLOCK, s[:ci + len(CONTENT)]
            if call_turn is not None:
                how += " (only on tool-call turns)"
                how_rule = CALL_TURN
    if not close_m:
        # the template drops reasoning from history: read the markers from the generation prompts
        on, off, dflt = prompts["on"], prompts["off"], prompts["default"]
        if on is not None and off is not None and on != off:
            n = len(common_prefix(on, off))
            a, b = on[n:], off[n:]
            ta, tb = marker_tokens(a), marker_tokens(b)
            if not ta and len(tb) == 2:
                open_m, close_m = tb
            elif not ta and len(tb) == 1:
                open_m, close_m = last_tag(on), tb[0]
            elif len(ta) == 1 and not tb:
                open_m = ta[0]
                close_m = _closing_form(open_m)
            elif len(ta) == 1 and len(tb) == 1 and pairs_with(ta[0], tb[0]):
                # on: the prompt opens the block; off: it writes the close (the block is skipped)
                open_m, close_m = ta[0], tb[0]
            if close_m:
                how = (f"the template drops reasoning from history; enable_thinking changes the "
                       f"generation prompt by {a!r} / {b!r}")
                how_rule, how_snippet = PROMPT_DIFF, f"{a!r} / {b!r}"
                if close_m in tb and pairs_with(open_m, close_m):
                    # both markers are rendered (the close by the prompt that skips the block)
                    prompt_conf = 0.85
        if not close_m and dflt is not None:
            tail = last_tag(dflt)
            guess = _closing_form(tail)
            # an opened block is the last thing the prompt writes; a tag earlier in the prompt, or
            # one that history renders around content too, is turn markup
            if guess and tail not in f.content_pre and tail not in f.content_post \
                    and dflt.rstrip(_WS).endswith(tail) and re.fullmatch(r"<[A-Za-z_][\w:-]*>", tail):
                open_m, close_m = tail, guess
                how = (f"the generation prompt ends with {tail!r}, which history renders never show; "
                       f"assumed its closing form {guess!r} (not confirmed by any render)")
                how_rule, how_snippet = PROMPT_TAIL, dflt[-80:]
                f.fire(PROMPT_TAIL, conf=0.55, snippet=how_snippet, text=how)
                cut = _history_cut(pr, tools, guess)
                if cut is not None:
                    f.fire(HISTORY_CUT, conf=0.85, snippet=cut,
                           text=f"a reply holding {guess!r} goes back into history without what precedes it: "
                                "the template knows the block (the guess is confirmed)")
    if not close_m:
        f.fire(NONE, conf=0.85, snippet=(span_probe.span if span_probe else None),
               text="no render shows a reasoning block")
        return
    if open_m and not pairs_with(open_m, close_m) and open_m == close_m:
        open_m = ""
    start = "explicit"
    dflt = prompts["default"] or ""
    opened_by_prompt = (not open_m and span_probe is not None and span_probe.span is not None
                        and span_probe.span.index(REASONING) < 2)
    if (open_m and dflt.rstrip(_WS).endswith(open_m)) or opened_by_prompt:
        start = "prefilled"
        f.fire(PREFILLED, snippet=dflt[-80:], text=f"the generation prompt opens the block ({open_m!r})")
    switchable = prompts["on"] is not None and prompts["off"] is not None and prompts["on"] != prompts["off"]
    opens: tuple[str, ...] = (open_m,) if open_m else ()
    labelled = re.fullmatch(r"(<[^<>\s]+>|\[[^\[\]\s]+\])([A-Za-z_][\w-]*)", open_m)
    if labelled:
        # a tag followed by a label word (<|channel>thought): the bare tag opens a block too
        opens = (open_m + "\n", open_m, labelled.group(1))
        f.fire(LABELLED, snippet=open_m, text=f"{labelled.group(1)!r} alone opens a block too")
    closes: tuple[str, ...] = (close_m,)
    if start == "prefilled" and wrapper_open and wrapper_open != close_m and len(marker_tokens(wrapper_open)) == 1:
        closes = (close_m, wrapper_open)
        f.fire(WRAPPER_ENDS, snippet=wrapper_open,
               text=f"{wrapper_open!r} in the output ends the block the prompt opened")
    f.reasoning = ReasoningSpec(open=opens, close=closes, start=start,  # type: ignore[arg-type]
                                switchable=switchable)
    if "reasoning" not in f.confidence:
        f.fire(how_rule, conf=0.95 if span_probe is not None else prompt_conf, snippet=how_snippet,
               text=f"open {open_m!r}, close {close_m!r}, start {start}; {how}")

def _history_cut(pr: Prober, tools: list[dict[str, Any]] | None, close: str) -> str | None:
    """The render of a conversation whose earlier reply holds ``close``, when the template wrote that
    reply without what precedes ``close`` (a template that knows the block cuts it out of history),
    else None."""
    reply = {"role": "assistant", "content": f"{REASONING}{close}{CONTENT}"}
    try:
        text = pr.render([{"role": "user", "content": USER}, reply, {"role": "user", "content": USER}],
                         tools=tools, agp=False)
    except TemplateError:
        return None
    return text[text.find(USER):] if CONTENT in text and REASONING not in text else None


def _bracketed_phrase(text: str) -> str:
    """The bracketed run ``text`` starts with when it holds spaces but no line break
    (``[BEGIN FINAL RESPONSE]``, ``<end of thought>``), else ''."""
    m = re.match(r"\[[^\[\]\n]{1,62}\]|<[^<>\n]{1,62}>", text)
    return m.group() if m and " " in m.group() and m.group()[1] != " " else ""


def _closing_form(tok: str) -> str:
    m = re.fullmatch(r"<([^/<>\s][^<>\s]*)>", tok)
    if m:
        return f"</{m.group(1)}>"
    m = re.fullmatch(r"\[([^/\[\]\s]+)\]", tok)
    if m:
        return f"[/{m.group(1)}]"
    return ""
