"""From probe renders to Profile fields.

Each function reads the spans of a few probes and returns the fields it could establish, with
the evidence that established them and how sure it is. Nothing here knows any model's markers:
markers are whatever the template wrote around the sentinels.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any

from ..profile import CodecSpec, ReasoningSpec, ToolSpec
from .markup import common_prefix, common_suffix, first_token, last_token, pairs_with, split_open_header
from .probes import (
    CONTENT,
    KEY1,
    KEY2,
    NAME1,
    NAME2,
    REASONING,
    USER,
    VAL1,
    VAL2,
    Probe,
    Prober,
    call,
    tools_for,
)

__all__ = ["Findings", "find_content", "find_reasoning", "find_tools"]

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
    tools_kw: dict[str, Any] = field(default_factory=dict)   # how the template wanted calls shaped

    def say(self, fieldname: str, conf: float, text: str) -> None:
        self.confidence[fieldname] = conf
        self.evidence.append(f"{fieldname}: {text}")


# -- content and end of turn --------------------------------------------------------------------

def find_content(pr: Prober, f: Findings, tools: list[dict[str, Any]] | None) -> bool:
    p = pr.turn("content", {"role": "assistant", "content": CONTENT}, tools=tools)
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


# -- reasoning ------------------------------------------------------------------------------------

def find_reasoning(pr: Prober, f: Findings, tools: list[dict[str, Any]] | None) -> None:
    msg = {"role": "assistant", "content": CONTENT, "reasoning_content": REASONING}
    span_probe: Probe | None = None
    blocks = {"role": "assistant", "content": [{"type": "thinking", "thinking": REASONING},
                                               {"type": "text", "text": CONTENT}]}
    switches: tuple[tuple[dict[str, Any], dict[str, Any]], ...] = (
        (msg, {}), (msg, {"enable_thinking": True}), (msg, {"thinking": True}), (blocks, {}))
    for m, kw in switches:
        label = "reasoning" + (f" {kw}" if kw else "") + (" (content blocks)" if m is blocks else "")
        p = pr.turn(label, m, tools=tools, **kw)
        f.probes.append(p)
        printed_data = p.span is not None and ("'type'" in p.span or '"type"' in p.span)
        if p.span is not None and REASONING in p.span and CONTENT in p.span and not printed_data:
            span_probe = p
            break
    prompts: dict[str, str | None] = {"default": _after_user(pr.prompt(tools))}
    for var in ("enable_thinking", "thinking", "reasoning"):
        on = _after_user(pr.prompt(tools, **{var: True}))
        off = _after_user(pr.prompt(tools, **{var: False}))
        prompts["on"], prompts["off"] = on, off
        if on is not None and off is not None and on != off:
            f.evidence.append(f"reasoning.switch: the template variable {var!r} changes the generation prompt")
            break
    open_m, close_m, how = "", "", ""
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
            close_m = first_token(b)
            if not open_m:
                for src in (span_probe.prompt_tail, prompts["on"] or "", prompts["default"] or ""):
                    tail = last_tag(src)
                    if pairs_with(tail, close_m):
                        open_m = tail
                        break
            how = f"reasoning renders as {s[:ci + len(CONTENT)]!r}"
    if not close_m:
        # the template drops reasoning from history: read the markers from the generation prompts
        on, off, dflt = prompts["on"], prompts["off"], prompts["default"]
        if on is not None and off is not None and on != off:
            n = len(common_prefix(on, off))
            a, b = on[n:], off[n:]
            ta, tb = a.split(), b.split()
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
                f.say("reasoning", 0.55, how)
    if not close_m:
        f.say("reasoning", 0.85, "no render shows a reasoning block")
        return
    if open_m and not pairs_with(open_m, close_m) and open_m == close_m:
        open_m = ""
    start = "explicit"
    dflt = prompts["default"] or ""
    opened_by_prompt = (not open_m and span_probe is not None and span_probe.span is not None
                        and span_probe.span.index(REASONING) < 2)
    if (open_m and dflt.rstrip(_WS).endswith(open_m)) or opened_by_prompt:
        start = "prefilled"
    switchable = prompts["on"] is not None and prompts["off"] is not None and prompts["on"] != prompts["off"]
    opens: tuple[str, ...] = (open_m,) if open_m else ()
    labelled = re.fullmatch(r"(<[^<>\s]+>|\[[^\[\]\s]+\])([A-Za-z_][\w-]*)", open_m)
    if labelled:
        # a tag followed by a label word (<|channel>thought): the bare tag opens a block too
        opens = (open_m + "\n", open_m, labelled.group(1))
    f.reasoning = ReasoningSpec(open=opens, close=(close_m,), start=start,  # type: ignore[arg-type]
                                switchable=switchable)
    if "reasoning" not in f.confidence:
        f.say("reasoning", 0.95 if span_probe is not None else prompt_conf,
              f"open {open_m!r}, close {close_m!r}, start {start}; {how}")


def marker_tokens(s: str) -> list[str]:
    """Whitespace-separated tokens, with runs of glued tags split into single tags."""
    out: list[str] = []
    for tok in s.split():
        tags = re.findall(r"<[^<>\s]+>|\[[^\[\]\s]+\]", tok)
        out.extend(tags if tags and "".join(tags) == tok else [tok])
    return out


def _after_user(prompt: str | None) -> str | None:
    """The generation prompt from the user's message on: where reasoning switches show."""
    if prompt is None:
        return None
    k = prompt.rfind(USER)
    return prompt[k + len(USER):] if k >= 0 else prompt


def last_tag(s: str) -> str:
    """The last ``<...>`` or ``[...]`` tag in a text (markers are often glued together)."""
    tags = re.findall(r"<[^<>\s]+>|\[[^\[\]\s]+\]", s)
    return tags[-1] if tags else ""


def _closing_form(tok: str) -> str:
    m = re.fullmatch(r"<([^/<>\s][^<>\s]*)>", tok)
    if m:
        return f"</{m.group(1)}>"
    m = re.fullmatch(r"\[([^/\[\]\s]+)\]", tok)
    if m:
        return f"[/{m.group(1)}]"
    return ""


# -- tool calls -------------------------------------------------------------------------------------

ARGS1: dict[str, Any] = {KEY1: VAL1, KEY2: 7}
ARGS2: dict[str, Any] = {KEY1: VAL2}


def _call_msg(calls: list[dict[str, Any]], content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": calls}


def find_tools(pr: Prober, f: Findings) -> None:
    tools = tools_for()
    shapes = [("dict arguments", False, ""), ("string arguments", True, ""),
              ("dict arguments, no content", False, None), ("string arguments, no content", True, None)]
    found = False
    for label, as_str, content in shapes:
        p1 = pr.turn(f"1 call ({label})", _call_msg([call(NAME1, ARGS1, 1, as_str)], content), tools=tools)
        f.probes.append(p1)
        if p1.span is None or NAME1 not in p1.span or (VAL1 not in p1.span):
            continue
        p2 = pr.turn(f"2 calls ({label})", _call_msg([call(NAME1, ARGS1, 1, as_str),
                                                      call(NAME2, ARGS2, 2, as_str)], content), tools=tools)
        f.probes.append(p2)
        b1 = _call_block(p1.span, f)
        b2 = _call_block(p2.span, f) if p2.span and NAME2 in p2.span else None
        spec = (_json_codec(b1, b2, f) or _pythonic(b1, b2, f) or _name_json(b1, b2, f)
                or _tagged(b1, b2, f))
        if spec is None:
            # e.g. dict arguments printed as a Python repr: another shape may render cleanly
            f.evidence.append(f"tools: with {label} calls render as {b1[:80]!r}, which no codec explains")
            continue
        f.tools = spec
        f.tools_kw = {"as_string": as_str, "content": content}
        found = True
        break
    if not found:
        errs = [p.error for p in f.probes if p.error and "call" in p.label]
        rendered = any(p.span and NAME1 in p.span for p in f.probes)
        if rendered:
            f.say("tools", 0.3, "tool calls render, but no codec explains them")
        else:
            # a call render that succeeded without showing the call: the template ignores tool calls
            ignored = any(p.span is not None and "call" in p.label for p in f.probes)
            f.say("tools", 0.9 if ignored or not errs else 0.6,
                  "the template renders no tool calls"
                  + (" (it renders assistant turns with tool_calls, leaving the calls out)" if ignored
                     else f" (renders failed: {errs[0]})" if errs else ""))


def _call_block(span: str, f: Findings) -> str:
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


def _markers(a: str, z: str, m: str | None, f: Findings,
             name_in_header: bool) -> dict[str, Any]:
    """Section and per-call markers from: before the first call (a), after the last (z), and
    between two calls (m)."""
    out: dict[str, Any] = {}
    if m is None:
        f.say("tools.markers", 0.6, "only a one-call render: cannot tell section from call markers")
        out["call_open"], out["header_prefix"] = split_open_header(a) if name_in_header else (a.strip(_WS), "")
        out["call_close"] = z.strip(_WS)
        out["section_open"], out["section_close"], out["separators"] = "", "", ""
        return out
    close = common_prefix(z, m)
    close = close[: len(close.rstrip(_WS))]
    opn = common_suffix(a, m)
    opn = opn[len(opn) - len(opn.lstrip(_WS)):]
    if len(close) + len(opn) > len(m):
        # overlapping: the close and the next open share characters ('{{/x}}{{#x ', '‹/x›‹x›');
        # cut where the close's brackets balance, else the middle is all separator
        k = _balanced_cut(m, len(m) - len(opn), len(close))
        close, opn = (m[:k], m[k:]) if k > 0 else ("", "")
    sep = m[len(close): len(m) - len(opn)]
    if name_in_header:
        call_open, header_prefix = split_open_header(opn)
        sec_open = a[: len(a) - len(opn)].strip(_WS)
    else:
        call_open, header_prefix = opn.strip(_WS), ""
        sec_open = a[: len(a) - len(opn)].strip(_WS)
    out.update(call_open=call_open, header_prefix=header_prefix, call_close=close.strip(_WS),
               section_open=sec_open, section_close=z[len(close):].strip(_WS), separators=sep.strip(_WS))
    f.say("tools.markers", 0.95,
          f"before calls {a!r}, between {m!r}, after {z!r} -> section {sec_open!r}/"
          f"{out['section_close']!r}, call {call_open!r}/{out['call_close']!r}, separator {sep.strip(_WS)!r}")
    return out


def _bracket_step(c: str) -> int:
    """+1 for an opening bracket (any Unicode open punctuation or initial quote, or '<'), -1 for a
    closing one, 0 otherwise."""
    if c == "<":
        return 1
    if c == ">":
        return -1
    cat = unicodedata.category(c)
    return 1 if cat in ("Ps", "Pi") else -1 if cat in ("Pe", "Pf") else 0


def _balanced_cut(m: str, lo: int, hi: int) -> int:
    """The one cut ``k`` in ``[lo, hi]`` after which ``m[:k]`` is a non-empty, bracket-balanced run
    of markup (it opens at least one bracket and closes all it opened); 0 when none or several."""
    found = []
    for k in range(max(lo, 1), hi + 1):
        depth, opened, ok = 0, False, True
        for c in m[:k]:
            depth += _bracket_step(c)
            opened = opened or depth > 0
            if depth < 0:
                ok = False
                break
        if ok and opened and depth == 0 and m[:k].strip(_WS) == m[:k]:
            found.append(k)
    return found[0] if len(found) == 1 else 0


def _spec(mk: dict[str, Any], codec: CodecSpec, f: Findings) -> ToolSpec:
    sec = mk["section_open"]
    tags = re.findall(r"<[^<>\s]+>|\[[^\[\]\s]+\]", sec)
    for x, y in itertools.pairwise(tags):
        if pairs_with(x, y) and sec.find(x + y) >= 0 and len(tags) > 2:
            # an empty open/close pair written before the calls: an (empty) reasoning block
            sec = sec.replace(x + y, "", 1).strip(_WS)
            if f.reasoning is None:
                f.reasoning = ReasoningSpec(open=(x,), close=(y,), start="explicit")
                f.say("reasoning", 0.7, f"an empty {x}{y} pair precedes the calls; taken as the "
                      "reasoning block (the template renders no reasoning text)")
            break
    mk = {**mk, "section_open": sec}
    two_level = bool(mk["section_open"]) and bool(mk["call_open"])
    recovery = "drop" if two_level else "content_if_no_calls"
    if two_level:
        f.evidence.append("tools.recovery: section and per-call markers both exist; unparseable section "
                          "text is dropped, as engines parsing such sections do")
    bare = not mk["section_open"] and not mk["call_open"] and codec.kind == "json"
    if bare:
        f.evidence.append("tools.bare_json: calls are JSON objects with no marker; one at the start of "
                          "the output is a call, a '{' later in prose is prose")
    return ToolSpec(
        codec=codec,
        lookahead_open=("{",) if bare else (),
        lookahead_at_start=("{",) if bare else (),
        section_open=(mk["section_open"],) if mk["section_open"] else (),
        section_close=(mk["section_close"],) if mk["section_close"] else (),
        call_open=(mk["call_open"],) if mk["call_open"] else (),
        call_close=(mk["call_close"],) if mk["call_close"] else (),
        bare_calls=False,
        separators=(mk["separators"],) if mk["separators"] else (),
        on_invalid="drop" if two_level else "content",
        on_truncated=recovery,  # type: ignore[arg-type]
    )


def _balanced_end(s: str, start: int, opener: str = "{") -> int:
    """Index after the bracket matching ``s[start]`` (JSON string aware), or -1."""
    closer = {"{": "}", "[": "]"}
    stack: list[str] = []
    i = start
    in_str = False
    while i < len(s):
        c = s[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "{[":
            stack.append(closer[c])
        elif c in "}]":
            if not stack or stack.pop() != c:
                return -1
            if not stack:
                return i + 1
        i += 1
    return -1


def _json_at(s: str, start: int) -> tuple[Any, int] | None:
    end = _balanced_end(s, start)
    if end < 0:
        return None
    try:
        return json.loads(s[start:end]), end
    except ValueError:
        return None


def _find_call_object(s: str, name: str) -> tuple[int, int, dict[str, Any]] | None:
    """The outermost JSON object around ``name`` that describes exactly one call."""
    n = s.find(name)
    best = None
    for k in range(n, -1, -1):
        if s[k] != "{":
            continue
        got = _json_at(s, k)
        if got is None or not isinstance(got[0], dict) or got[1] <= n:
            continue
        text = s[k:got[1]]
        if text.count(NAME1) + text.count(NAME2) > 1:
            break
        best = (k, got[1], got[0])
    return best


def _json_codec(b1: str, b2: str | None, f: Findings) -> ToolSpec | None:
    found = _find_call_object(b1, NAME1)
    if found is None:
        return None
    start, end, obj = found
    keys = _call_keys(obj)
    if keys is None:
        return None
    name_key, args_key, id_key, function_key, name_as_key = keys
    # wrapped in a JSON array?
    array = "allow"
    k = start - 1
    while k >= 0 and b1[k] in _WS:
        k -= 1
    a_start, a_end = start, end
    if k >= 0 and b1[k] == "[":
        got = _json_at(b1, k)
        if got is not None and isinstance(got[0], list):
            array = "require"
            a_start, a_end = k, got[1]
    codec = CodecSpec(kind="json", name_keys=(name_key,) if name_key else ("name",),
                      args_keys=(args_key,) if args_key else ("arguments",),
                      id_keys=(id_key,) if id_key else ("id",), function_key=function_key,
                      array="allow", name_as_key=name_as_key)
    a, z = b1[:a_start], b1[a_end:]
    m = None
    if b2 is not None:
        if array == "require":
            k2 = b2.find("[", len(common_prefix(b1, b2)) - 1 if common_prefix(b1, b2) else 0)
            a2 = b2[:b2.find("[", max(0, len(a) - 1))] if "[" in b2 else ""
            del k2, a2
        else:
            o2 = _find_call_object(b2, NAME2)
            o1 = _find_call_object(b2, NAME1)
            if o1 is not None and o2 is not None:
                m = b2[o1[1]:o2[0]]
    if array == "require":
        mk = {"call_open": "", "header_prefix": "", "call_close": "", "section_open": a.strip(_WS),
              "section_close": z.strip(_WS), "separators": ""}
        f.say("tools.markers", 0.9, f"a JSON array of calls between {a!r} and {z!r}")
    else:
        mk = _markers(a, z, m, f, name_in_header=False)
    f.say("tools.codec", 0.95, f"JSON object per call: {b1[start:end]!r}; name key {name_key!r}, "
          f"arguments key {args_key!r}" + (f", nested in {function_key!r}" if function_key else "")
          + (", array-wrapped" if array == "require" else ""))
    return _spec(mk, codec, f)


def _call_keys(obj: dict[str, Any]) -> tuple[str, str, str, str | None, bool] | None:
    if len(obj) == 1:
        ((k, v),) = obj.items()
        if k == NAME1 and _is_args(v):
            return "", "", "", None, True
    function_key = None
    inner = obj
    for k, v in obj.items():
        if isinstance(v, dict) and NAME1 in v.values():
            function_key, inner = k, v
            break
    name_key = next((k for k, v in inner.items() if v == NAME1), None)
    if name_key is None:
        return None
    args_key = next((k for k, v in inner.items() if _is_args(v)), "")
    id_key = next((k for src in (obj, inner) for k, v in src.items() if v == "QXid00001"), "")
    return name_key, args_key, id_key, function_key, False


def _is_args(v: Any) -> bool:
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            return False
    return isinstance(v, dict) and v.get(KEY1) == VAL1


def _pythonic(b1: str, b2: str | None, f: Findings) -> ToolSpec | None:
    m = re.search(re.escape(NAME1) + r"\s*\(\s*" + re.escape(KEY1) + r"\s*=", b1)
    if m is None:
        return None
    k = b1.rfind("[", 0, m.start())
    start = k if k >= 0 and not b1[k + 1:m.start()].strip(_WS) else m.start()
    end = b1.find(")", m.end())
    if end < 0:
        return None
    end += 1
    j = end
    while j < len(b1) and b1[j] in _WS:
        j += 1
    if start != m.start() and j < len(b1) and b1[j] == "]":
        end = j + 1
    a, z = b1[:start], b1[end:]
    look: tuple[str, ...] = ("[",) if start != m.start() and not a.strip(_WS) else ()
    f.say("tools.codec", 0.9, f"pythonic call list {b1[start:end]!r}")
    spec = ToolSpec(codec=CodecSpec(kind="pythonic"),
                    call_open=(a.strip(_WS),) if a.strip(_WS) else (),
                    call_close=(z.strip(_WS),) if z.strip(_WS) else (),
                    lookahead_open=look, on_truncated="content_if_no_calls")
    if not spec.call_open and not look:
        return None
    return spec


def _name_json(b1: str, b2: str | None, f: Findings) -> ToolSpec | None:
    n = b1.find(NAME1)
    k = b1.find("{", n)
    if k < 0:
        return None
    got = _json_at(b1, k)
    relaxed: tuple[tuple[str, str], ...] = ()
    if got is None or not isinstance(got[0], dict) or got[0].get(KEY1) != VAL1:
        relaxed_found = _relaxed_delims(b1, k)
        if relaxed_found is None:
            return None
        relaxed, end = relaxed_found
    else:
        end = got[1]
    between = b1[n + len(NAME1):k].replace("QXid00001", "{call_id}")
    if len(between) > 80 or KEY1 in between:
        return None
    a = b1[:n]
    z = b1[end:]
    m = None
    if b2 is not None and NAME2 in b2:
        n2 = b2.find(NAME2)
        k1 = b2.find("{", b2.find(NAME1))
        e1 = _balanced_end(b2, k1) if not relaxed else _relaxed_end(b2, k1, relaxed)
        if e1 > 0:
            m = b2[e1:n2]
    # a trailer such as a closing code fence belongs to the call, not to the markers
    trailer = ""
    fence = re.match(r"\s*(```)", z)
    if fence:
        trailer = "\n```"
        z = z[fence.end():]
        if m is not None:
            mf = re.match(r"\s*(```)", m)
            if mf:
                m = m[mf.end():]
    mk = _markers(a, z, m, f, name_in_header=True)
    header = mk["header_prefix"] + "{name}" + between
    id_prefix = id_suffix = ""
    if b2 is not None and NAME2 in b2:
        n2 = b2.find(NAME2)
        k2 = b2.find("{", n2)
        between2 = b2[n2 + len(NAME2):k2]
        if between2 != between:
            # the text after the name differs between calls only by the call's number:
            # NAME:0 / NAME:1 is an id the name is part of
            cp = os.path.commonprefix([between, between2])
            cs = os.path.commonprefix([between[::-1], between2[::-1]])[::-1]
            d1, d2 = between[len(cp):len(between) - len(cs)], between2[len(cp):len(between2) - len(cs)]
            if d1.isdigit() and d2.isdigit():
                header = "{id}" + cs
                id_prefix, id_suffix = mk["header_prefix"], re.escape(cp) + r"\d+"
                f.evidence.append(f"tools.ids: calls are numbered in the header ({d1!r}, {d2!r}): the id "
                                  f"{mk['header_prefix']}NAME{cp}N carries the name")
    codec = CodecSpec(kind="name_json", header=header, trailer=trailer,
                      flavor="relaxed" if relaxed else "json", string_delims=relaxed,
                      id_name_prefix=id_prefix, id_name_suffix=id_suffix)
    f.say("tools.codec", 0.9, f"name then {'relaxed ' if relaxed else ''}JSON arguments: header {header!r}")
    return _spec(mk, codec, f)


def _relaxed_delims(s: str, k: int) -> tuple[tuple[tuple[str, str], ...], int] | None:
    """Gemma-style ``{key:<delim>value<delim>}``: find the delimiters around the string value."""
    m = re.match(r"\{\s*" + re.escape(KEY1) + r"\s*:", s[k:])
    if m is None:
        return None
    v = s.find(VAL1, k + m.end())
    if v < 0:
        return None
    d_open = s[k + m.end():v]
    after = s[v + len(VAL1):]
    cut = re.search(r"[,}]", after)
    if cut is None or not d_open:
        return None
    d_close = after[:cut.start()]
    if not d_close or d_open == '"':
        return None
    delims = ((d_open, d_close),)
    end = _relaxed_end(s, k, delims)
    if end < 0:
        return None
    return delims, end


def _relaxed_end(s: str, k: int, delims: tuple[tuple[str, str], ...]) -> int:
    depth = 0
    i = k
    while i < len(s):
        for a, b in delims:
            if s.startswith(a, i):
                j = s.find(b, i + len(a))
                if j < 0:
                    return -1
                i = j + len(b)
                break
        else:
            c = s[i]
            if c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
    return -1


def _tagged(b1: str, b2: str | None, f: Findings) -> ToolSpec | None:
    n = b1.find(NAME1)
    k1 = b1.find(KEY1, n)
    v1 = b1.find(VAL1, k1)
    k2 = b1.find(KEY2, v1)
    v2 = b1.find("7", k2 + len(KEY2)) if k2 >= 0 else -1
    if min(n, k1, v1) < 0:
        return None
    # the header: the tag the name sits in, or the bare name
    lt = b1.rfind("<", 0, n)
    in_tag = lt >= 0 and b1.find(">", lt) > n and "<" not in b1[n:b1.find(">", n)]
    h_start = lt if in_tag else n
    h_end = b1.find(">", n) + 1 if in_tag else n + len(NAME1)
    if in_tag:
        # a doubled bracket ('<<use NAME>>') belongs to the tag
        while h_start > 0 and b1[h_start - 1] == "<" and b1[h_end:h_end + 1] == ">":
            h_start, h_end = h_start - 1, h_end + 1
    pre1 = b1[h_end:k1]
    if k2 >= 0 and v2 >= 0:
        mid = b1[v1 + len(VAL1):k2]
        p_open = common_suffix(pre1, mid)
        kv1 = b1[k1 + len(KEY1):v1]
        kv2 = b1[k2 + len(KEY2):v2]
        after_last = b1[v2 + 1:]
        p_close_full = mid[: len(mid) - len(p_open)]
    else:
        p_open = pre1
        kv1 = kv2 = b1[k1 + len(KEY1):v1]
        after_last = b1[v1 + len(VAL1):]
        p_close_full = ""
    p_open_core = p_open.lstrip(_WS)
    if not p_open_core and not kv1.strip(_WS):
        return None
    # DSML-style typed attribute: the key/value middles differ by one slot
    string_true = "true"
    if kv1 != kv2:
        cp = os.path.commonprefix([kv1, kv2])
        while cp and cp[-1].isalnum():
            cp = cp[:-1]
        r1, r2 = kv1[len(cp):], kv2[len(cp):]
        cs = os.path.commonprefix([r1[::-1], r2[::-1]])[::-1]
        while cs and cs[0].isalnum():
            cs = cs[1:]
        slot1 = kv1[len(cp): len(kv1) - len(cs)]
        kv_pattern = cp + "{string}" + cs
        string_true = slot1
    else:
        kv_pattern = kv1
    # the value's closing text: common start of what follows value 1 and value 2
    close_v: str | None
    if k2 >= 0 and v2 >= 0 and not p_close_full.strip(_WS) and not p_open.strip(_WS) and "\n" in mid:
        close_v = "\n"  # one `key: value` per line: the line break ends a value
    elif p_close_full:
        close_v = _value_close(p_close_full, after_last, KEY1, KEY2)
    else:
        close_v = _value_close_single(after_last, f)
    if close_v is None:
        return None
    param = p_open_core + "{key}" + kv_pattern + "{value}" + close_v
    # what follows the last parameter: the call's trailer, then call/section markers
    rest = after_last[len(close_v.replace("{key}", KEY2 if k2 >= 0 else KEY1)):] \
        if after_last.startswith(close_v.replace("{key}", KEY2 if k2 >= 0 else KEY1)) else after_last
    header = b1[h_start:n] + "{name}" + (b1[n + len(NAME1):h_end] if in_tag else "")
    a = b1[:h_start]
    m = None
    trailer = ""
    z = rest
    if b2 is not None and NAME2 in b2:
        n2 = b2.find(NAME2)
        lt2 = n2
        if in_tag:
            lt2 = b2.rfind(b1[h_start:n], 0, n2)
            lt2 = lt2 if lt2 >= 0 else b2.rfind("<", 0, n2)
        last_v = b2.rfind(VAL1, 0, n2)
        k2b = b2.find("7", last_v)
        end1 = (k2b + 1) if 0 <= k2b < lt2 else last_v + len(VAL1)
        c1 = close_v.replace("{key}", KEY2 if 0 <= k2b < lt2 else KEY1)
        m = b2[end1:lt2]
        if m.startswith(c1):
            m = m[len(c1):]
    if in_tag:
        # a call written as a tag closes with that tag's closing form (</function>, </invoke>)
        word = re.match(r"(<+)([^\s=<>]+)", header)
        cand = f"{word.group(1)}/{word.group(2)}{'>' * len(word.group(1))}" if word else ""
        if cand and z.lstrip(_WS).startswith(cand):
            trailer = cand
            z = z.lstrip(_WS)[len(cand):]
            if m is not None and m.lstrip(_WS).startswith(cand):
                m = m.lstrip(_WS)[len(cand):]
    mk = _markers(a, z, m, f, name_in_header=False)
    head_lit = header.split("{name}")[0]
    bare_tag = in_tag and mk["call_open"] == "" and mk["section_open"] == ""
    if bare_tag and not (trailer and head_lit.startswith("<") and len(head_lit.strip(_WS)) >= 4):
        return None
    codec = CodecSpec(kind="tagged", header=header, trailer=trailer, param=param, string_true=string_true)
    f.say("tools.codec", 0.9, f"tagged parameters: header {header!r}, parameter {param!r}, "
          f"trailer {trailer!r}")
    spec = _spec(mk, codec, f)
    if bare_tag:
        # no wrapper at all: the call's own tag (closed by its closing form) starts a call
        spec = replace(spec, lookahead_open=(head_lit,))
        f.evidence.append(f"tools.bare_calls: calls are bare {head_lit!r}...{trailer!r} tags")
    elif in_tag and spec.call_open and head_lit.startswith("<") and len(head_lit) >= 4:
        # the call's own tag is distinctive enough to start a call without its wrapper
        spec = replace(spec, lookahead_open=(head_lit,))
        f.evidence.append(f"tools.bare_calls: {head_lit!r} also starts a call without {spec.call_open[0]!r}")
    return spec


def _value_close(after1: str, after_last: str, key1: str, key2: str) -> str | None:
    """Closing text of a value: what follows value 1 (and the last value) up to the next open."""
    a = after1.replace(key1, "{key}")
    b = after_last.replace(key2, "{key}")
    c = common_prefix(a, b)
    core = c.rstrip(_WS)
    if not core.strip(_WS):
        return ""
    # keep whitespace that the template puts before the close (trimmed once from values)
    return core


def _value_close_single(after: str, f: Findings) -> str | None:
    t = after.lstrip(_WS)
    m = re.match(r"\S+?>|\S+", t)
    if m is None:
        return ""
    lead = after[: len(after) - len(t)]
    return lead + m.group()
