"""The streaming machine: one generic, profile-driven parser for every dialect.

Rules of this file:

* Everything that decides which state the parse is in lives here. Codecs (``codecs.py``) only
  parse the body of one call; marker search and holdback live in ``markers.py``.
* No I/O, no imports of jinja2 / openvino / transformers: text in, events out.
* Nothing emitted is ever taken back. Text is held only while it may still be part of a marker,
  while a tool call is incomplete, or while a reasoning block has not yet said whether the call
  it contains is a call (``call_in_reasoning="defer"``). A call is announced (``ToolCallStart``)
  once its name is certain (``stream_arguments=True``: then its arguments stream, as fragments
  a codec has made certain) or once it is complete and valid (``False``); either way a call once
  announced stays a call: cut off or malformed, it ends with status ``truncated``/``invalid``.
* Decisions depend on the text, never on where chunks were cut: every handler either makes a
  decision that the full text would also make at that point, or waits for more text. Hence the
  coalesced events of any chunking equal those of the whole text.

Theory of operation. The parser owns one small working string: what it held back last time
(``_carry``, never longer than the longest marker or the current call's unconsumed tail) plus
the new chunk. A *mode* handler consumes from an index and returns the next index; a handler that
cannot decide returns the same index and the rest becomes the carry. Handlers change ``_mode``
(content, undecided, reasoning, defer, region, skip, and Harmony's header/body/call); the
table ``_handlers`` maps each mode to its handler. A handler that discovers that text it consumed was not what it looked
like (a rejected tool call) pushes that text back (``_push``) to be read again as content.
``close()`` runs the handlers once more with ``final=True`` so that everything pending is
decided, then applies the end-of-stream rules.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import AutoparserError, OptionError, ParseError
from ..events import (
    CallStatus,
    ContentDelta,
    Event,
    ReasoningDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from ..policy import Policy
from ..profile import Profile
from ..result import Issue, Result, ToolCall
from . import values
from .argstream import JsonArgStream
from .codecs import ArgSource, Body, ParsedCall, make_body
from .markers import MarkerSet, Match
from .scanner import BalancedScanner

__all__ = ["Parser"]

_WS = " \t\r\n"
_MAX_HARMONY_HEADER = 1024
#: ``json.dumps(value, ensure_ascii=False)`` without building an encoder per call
_DUMPS = json.JSONEncoder(ensure_ascii=False).encode


class _Compiled:
    """Marker sets derived from a profile, built once per profile object."""

    def __init__(self, p: Profile) -> None:
        r = p.reasoning
        t = p.tools
        h = p.messages
        strip = [(m, "strip") for m in (*p.strip, *p.content_open, *p.content_close)]
        openers: list[tuple[str, str]] = []
        if t is not None:
            openers += [(m, "section") for m in t.section_open]
            if t.bare_calls or not t.section_open:
                openers += [(m, "call") for m in t.call_open]
        look = ([(m, "look") for m in t.lookahead_open if m not in t.lookahead_at_start]
                if t is not None else [])
        look_start = [(m, "look") for m in t.lookahead_at_start] if t is not None else []
        harmony: list[tuple[str, str]] = []
        if h is not None:
            harmony = [(h.start, "h_start"), (h.channel, "h_channel")] + [(e, "strip") for e in h.ends]
        r_open = [(m, "r_open") for m in r.open] if r else []
        r_close = [(m, "r_close") for m in r.close] if r else []
        base = strip + openers + look + harmony
        self.content_on = MarkerSet(base + r_open)
        self.content_off = MarkerSet(base)
        self.start_on = MarkerSet(base + r_open + look_start) if look_start else self.content_on
        self.start_off = MarkerSet(base + look_start) if look_start else self.content_off
        self.undecided = MarkerSet(base + r_open + r_close)
        self.reasoning = MarkerSet(r_close + [(m, "strip") for m in (r.open if r else ())] + strip
                                   + openers)
        r_open_strip = [(m, "strip") for m in (r.open if r else ())]
        self.reasoning_closed_only = MarkerSet(r_close + r_open_strip + strip)
        self.defer = MarkerSet(r_close)
        if t is not None:
            self.body_stops = MarkerSet([(m, "c_close") for m in t.call_close]
                                        + [(m, "s_close") for m in t.section_close])
            self.header_stops = tuple(t.section_open)
            eot = [(m, "eot") for m in p.strip]
            # right after a call nothing but calls has been written, so what may start the output
            # (a bare JSON call) may start the next call too
            self.between = MarkerSet([(m, "s_close") for m in t.section_close]
                                     + [(m, "s_open") for m in t.section_open] + eot
                                     + [(m, "c_open") for m in t.call_open]
                                     + [(m, "c_close") for m in t.call_close]
                                     + [(m, "sep") for m in t.separators]
                                     + look + look_start)
            self.after = MarkerSet([(m, "c_close") for m in t.call_close]
                                   + [(m, "s_close") for m in t.section_close]
                                   + [(m, "s_open") for m in t.section_open] + eot
                                   + [(m, "c_open") for m in t.call_open]
                                   + look + look_start)
            self.skip_section = MarkerSet([(m, "end") for m in t.section_close])
            self.skip_call = MarkerSet([(m, "end") for m in (*t.call_close, *t.section_close)])
        if h is not None:
            self.h_header = MarkerSet([(h.message, "msg"), (h.start, "h_start"), (h.channel, "h_channel")]
                                      + [(e, "end") for e in h.ends])
            self.h_body = MarkerSet([(h.start, "h_start"), (h.channel, "h_channel")]
                                    + [(e, "end") for e in h.ends] + strip)
            self.h_after = MarkerSet([(e, "end") for e in h.ends])


def _compiled(p: Profile) -> _Compiled:
    c = p.__dict__.get("_compiled_markers")
    if c is None:
        c = _Compiled(p)
        object.__setattr__(p, "_compiled_markers", c)
    assert isinstance(c, _Compiled)
    return c


@dataclass
class _Region:
    via: str                    # "section" | "call" | "look"
    marker: str                 # the opening marker text ("" for lookahead)
    state: str = "between"      # "between" | "call" | "after"
    raw: list[str] = field(default_factory=list)
    raw_has_marker: bool = True
    body: Body | None = None
    call_open_used: bool = False
    emitted: int = 0            # call bodies parsed in this region (an empty JSON array counts)
    known_only: bool = False
    # the call being streamed: its index once announced, the argument text sent for it
    stream_idx: int | None = None
    stream_id: str = ""
    stream_known: bool = True
    stream_off: bool = False
    stream_sent: list[str] = field(default_factory=list)
    stream_ended: int = 0       # calls of the current body (a list) already ended while streaming


class _HarmonySource:
    """A Harmony call's arguments as they stream: the name came from the message header."""

    def __init__(self, name: str) -> None:
        self.call_name: str | None = name
        self.call_id: str | None = None
        self.args = JsonArgStream(whole_call=False)
        self.truncated = False
        self.reason = ""

    def take_args(self) -> str:
        return self.args.take()

    def args_closing(self) -> str:
        return self.args.closing()


Mode = Literal["content", "undecided", "reasoning", "defer", "region", "skip", "h_header", "h_body",
               "h_call", "h_after"]


class Parser:
    """Feed text chunks, get events; ``result()`` aggregates them. One parser per response."""

    def __init__(self, profile: Profile, *, tools: object = None, reasoning: str | None = None,
                 policy: Policy | str | None = None, stream_arguments: bool = True) -> None:
        if not isinstance(profile, Profile):
            raise TypeError(f"profile must be an autoparser.Profile, got {type(profile).__name__}")
        self.profile = profile
        self.policy = Policy.coerce(policy)
        self._stream = bool(stream_arguments)
        self._schemas = values.tool_schemas(tools)
        self._schema_noted: set[str] = set()  # tools whose unusable-schema notes were reported
        self._have_tools = tools is not None
        self._c = _compiled(profile)
        r = profile.reasoning
        start: str
        if reasoning is None:
            start = r.start if r is not None else "off"
        elif reasoning in ("prefilled", "auto", "off", "explicit"):
            start = reasoning
        else:
            raise OptionError("reasoning must be None, 'prefilled', 'auto', 'explicit' or 'off', "
                              f"got {reasoning!r}")
        if r is None and start in ("prefilled", "auto"):
            raise OptionError(f"reasoning={start!r}: this profile has no reasoning markers")
        self._reasoning_on = start != "off"
        self._mode: Mode = (
            "reasoning" if start == "prefilled" else "undecided" if start == "auto" else "content")
        self._content_ms = self._c.content_on if self._reasoning_on else self._c.content_off
        self._start_ms = self._c.start_on if self._reasoning_on else self._c.start_off
        self._at_start = True   # nothing but whitespace emitted yet
        self._carry = ""
        self._push: str | None = None
        self._closed = False
        self._pos = 0
        self._events: list[Event] = []
        self._reasoning: list[str] = []
        self._content: list[str] = []
        self._calls: list[ToolCall] = []
        self._issues: list[Issue] = []
        self._index = 0
        self._r_blocks = 1 if start == "prefilled" else 0
        self._held: list[str] = []        # undecided or deferred text
        self._region: _Region | None = None
        self._h_header: list[str] = []
        # the prompt ended inside a message header: output starts with the rest of it
        self._h_prompt_header = profile.messages is not None and profile.messages.header_open
        if self._h_prompt_header:
            self._mode = "h_header"
        self._h_kind = ""
        self._h_blocks = 0
        self._h_scanner: BalancedScanner | None = None
        self._h_region: _Region | None = None
        self._h_src = _HarmonySource("")
        self._h_name = ""
        self._truncated = False
        self._unclosed_reported = False
        self._skip_ms = MarkerSet(())
        self._handlers = {m: getattr(self, "_m_" + m) for m in (
            "content", "undecided", "reasoning", "defer", "region", "skip", "h_header", "h_body",
            "h_call", "h_after")}

    # -- public API ----------------------------------------------------------------------------
    def feed(self, text: str, special: bool = False) -> list[Event]:
        """Parse the next chunk. ``special`` (whether it is one special token) matters only in
        token mode (``profile.parser(special_tokens=...)``, ``tokenmode.py``); here it is ignored."""
        if not isinstance(text, str):
            raise TypeError(f"feed() takes str, got {type(text).__name__}; decode bytes first "
                            "(e.g. chunk.decode('utf-8'))")
        if self._closed:
            raise AutoparserError("feed() after close(): this parser has finished; create a new one "
                                  "with profile.parser() for the next response")
        self._events = []
        self._run(text, final=False)
        return self._events

    def close(self) -> list[Event]:
        """End of stream: decide everything still pending. Idempotent."""
        if self._closed:
            return []
        self._events = []
        self._closed = True
        self._run("", final=True)
        while True:
            push = self._end_of_stream()
            if push is None:
                break
            self._run(push, final=True)
        return self._events

    def result(self) -> Result:
        finish: Literal["stop", "tool_calls", "length"] = "stop"
        if self._stream and any(c.status == "truncated" for c in self._calls):
            finish = "length"  # the output was cut inside a call that was already announced
        elif self._calls:
            finish = "tool_calls"
        elif self._truncated:
            finish = "length"
        return Result("".join(self._reasoning), "".join(self._content), list(self._calls),
                      list(self._issues), finish)

    # -- the loop -------------------------------------------------------------------------------
    def _run(self, text: str, final: bool) -> None:
        w = self._carry + text if self._carry else text
        self._carry = ""
        base = self._pos
        i = 0
        # the common case first: plain content with no marker character at all
        if (self._mode == "content" and not final and not self._at_start
                and not self._content_ms.could_start(w)):
            self._emit_content(w)
            self._pos += len(w)
            return
        n = len(w)
        handlers = self._handlers
        while True:
            if i == n and not final:
                break  # nothing left to decide on: every handler would wait for more text
            mode = self._mode
            rg = self._region
            rstate = rg.state if rg is not None else ""
            body = rg.body if rg is not None else None
            j = handlers[mode](w, i, final)
            if self._push is not None:
                push = self._push
                self._push = None
                w = push + w[j:]
                n = len(w)
                base += j - len(push)
                i = 0
                continue
            if j == i and mode == self._mode:
                now = self._region
                if now is rg and (now is None or (now.state == rstate and now.body is body)):
                    break
            i = j
        self._carry = w[i:]
        self._pos = base + i

    def _state(self) -> tuple[str, str, int]:
        rg = self._region
        return (self._mode, rg.state, id(rg.body)) if rg is not None else (self._mode, "", 0)

    def _at(self, i: int) -> int:
        return self._pos + i

    # -- emission -------------------------------------------------------------------------------
    def _emit_content(self, text: str) -> None:
        if not text:
            return
        if self._calls and text.strip(_WS):
            pol = self.policy.text_after_call
            if pol == "drop":
                return
            if pol == "raise":
                self._issue("text_after_call", "text after a tool call", 0, "raise")
        self._content.append(text)
        self._events.append(ContentDelta(text))

    def _emit_reasoning(self, text: str) -> None:
        if text:
            self._reasoning.append(text)
            self._events.append(ReasoningDelta(text))

    def _issue(self, code: str, message: str, pos: int, action: str = "") -> None:
        self._issues.append(Issue(code, message, pos))
        if action == "raise":
            raise ParseError(code, message, pos)

    # -- content, reasoning ----------------------------------------------------------------------
    def _m_content(self, w: str, i: int, final: bool) -> int:
        if self._at_start and not (self._reasoning or self._index):
            k = i
            while k < len(w) and w[k] in _WS:
                k += 1
            if k == len(w) and not final:
                self._emit_content(w[i:k])
                return k
            m0 = self._start_ms.match_at(w, k, final) if k < len(w) else None
            if m0 is True and not final:
                self._emit_content(w[i:k])
                return k
            if isinstance(m0, Match) and m0.kind == "strip":
                # a stripped marker writes nothing: the output has still not started
                self._emit_content(w[i:k])
                return m0.end
            self._at_start = False
            if isinstance(m0, Match):
                self._emit_content(w[i:k])
                return self._dispatch(m0, w, final)
        self._at_start = False
        m, safe = self._content_ms.scan(w, i, final)
        if m is None:
            self._emit_content(w[i:safe])
            return safe
        self._emit_content(w[i:m.start])
        return self._dispatch(m, w, final)

    def _dispatch(self, m: Match, w: str, final: bool) -> int:
        k = m.kind
        if k == "strip":
            return m.end
        if k == "r_open":
            self._open_reasoning()
            return m.end
        if k in ("section", "call", "look"):
            return self._enter_region(k, m)
        if k in ("h_start", "h_channel"):
            self._h_header = []
            self._mode = "h_header"
            return m.end
        raise AssertionError(k)  # pragma: no cover - the content marker set has no other kinds

    def _open_reasoning(self) -> None:
        r = self.profile.reasoning
        if r is not None and r.join and self._reasoning and self._r_blocks:
            self._emit_reasoning(r.join)
        self._r_blocks += 1
        self._mode = "reasoning"

    def _m_undecided(self, w: str, i: int, final: bool) -> int:
        m, safe = self._c.undecided.scan(w, i, final)
        if m is None:
            self._held.append(w[i:safe])
            if final:
                self._flush_held(as_reasoning=False)
                self._mode = "content"
            return safe
        self._held.append(w[i:m.start])
        if m.kind == "strip":
            return m.end
        if m.kind == "r_close":
            self._flush_held(as_reasoning=True)
            self._r_blocks += 1
            self._mode = "content"
            return m.end
        self._flush_held(as_reasoning=False)
        self._mode = "content"
        return m.start

    def _flush_held(self, as_reasoning: bool) -> None:
        text = "".join(self._held)
        self._held = []
        if as_reasoning:
            self._emit_reasoning(text)
        else:
            self._emit_content(text)

    def _m_reasoning(self, w: str, i: int, final: bool) -> int:
        pol = self.policy.call_in_reasoning
        ms = self._c.reasoning_closed_only if pol == "reasoning" else self._c.reasoning
        m, safe = ms.scan(w, i, final)
        if m is None:
            self._emit_reasoning(w[i:safe])
            return safe
        self._emit_reasoning(w[i:m.start])
        if m.kind == "r_close":
            self._mode = "content"
            return m.end
        if m.kind == "strip":
            return m.end
        # a tool-call marker inside an open reasoning block
        if pol == "raise":
            self._issue("call_in_reasoning", "tool-call marker inside reasoning", self._at(m.start), "raise")
        if pol == "call":
            self._issue("call_in_reasoning", "tool-call marker ended the reasoning block", self._at(m.start))
            self._mode = "content"
            return m.start
        self._mode = "defer"
        self._held = [m.marker]
        return m.end

    def _m_defer(self, w: str, i: int, final: bool) -> int:
        m, safe = self._c.defer.scan(w, i, final)
        if m is None:
            self._held.append(w[i:safe])
            return safe
        self._held.append(w[i:m.start])
        # the block closed: what looked like a call was part of the reasoning
        self._flush_held(as_reasoning=True)
        self._mode = "content"
        return m.end

    def _end_of_stream(self) -> str | None:
        """End-of-stream rules for the mode the text ended in; may return text to read again."""
        mode = self._mode
        if mode == "defer":
            text = "".join(self._held)
            self._held = []
            self._mode = "content"
            self._issue("call_in_reasoning", "the reasoning block never closed; the tool call in it "
                        "ended it", self._pos)
            return text
        if mode == "reasoning":
            if not self._unclosed_reported:
                self._unclosed_reported = True
                self._truncated = True
                self._issue("unclosed_reasoning", "the output ended inside a reasoning block", self._pos,
                            "raise" if self.policy.unclosed_reasoning == "raise" else "")
            return None
        if mode == "undecided":
            self._flush_held(as_reasoning=False)
            self._mode = "content"
            return None
        if mode in ("h_header", "h_call", "h_after", "h_body"):
            self._mode = "content"
            return None
        if mode in ("region", "skip"):  # pragma: no cover - handlers finish regions at final
            self._region = None
            self._mode = "content"
        return None

    # -- tool-call regions ------------------------------------------------------------------------
    def _enter_region(self, kind: str, m: Match) -> int:
        t = self.profile.tools
        assert t is not None
        if kind == "look":
            rg = _Region("look", "", state="call", raw_has_marker=False,
                         known_only=m.marker in t.lookahead_known_only)
            self._region = rg
            self._mode = "region"
            return m.start
        rg = _Region(kind, m.marker, state="between" if kind == "section" else "call")
        rg.raw.append(m.marker)
        rg.call_open_used = kind == "call"
        self._region = rg
        self._mode = "region"
        return m.end

    def _m_region(self, w: str, i: int, final: bool) -> int:
        rg = self._region
        assert rg is not None
        if rg.state == "between":
            return self._region_between(rg, w, i, final)
        if rg.state == "call":
            return self._region_call(rg, w, i, final)
        return self._region_after(rg, w, i, final)

    def _skip_ws(self, rg: _Region, w: str, i: int) -> int:
        k = i
        n = len(w)
        while k < n and w[k] in _WS:
            k += 1
        if k > i:
            rg.raw.append(w[i:k])
        return k

    def _end_region(self) -> None:
        self._region = None
        self._mode = "content"

    def _region_between(self, rg: _Region, w: str, i: int, final: bool) -> int:
        t = self.profile.tools
        assert t is not None
        k = self._skip_ws(rg, w, i)
        if k == len(w):
            if final:
                if rg.via == "section" and t.section_close and rg.emitted:
                    self._issue("missing_end_marker", "tool-call section was not closed", self._at(k))
                if not rg.emitted and rg.via == "section":
                    return self._reject(rg, w, k, truncated=True, reason="tool-call section is empty")
                self._end_region()
            return k
        r = self._c.between.match_at(w, k, final)
        if r is True and not final:
            return k
        if isinstance(r, Match):
            if r.kind in ("s_open", "eot"):  # the turn (or a new section) begins: this one is over
                if r.kind == "eot" and not rg.emitted:
                    return self._reject(rg, w, k, truncated=True, reason="tool-call marker at the end of the turn")
                self._end_region()
                return k
            rg.raw.append(r.marker)
            if r.kind == "s_close":
                if not rg.emitted:
                    return self._reject(rg, w, r.end, truncated=False, reason="tool-call section has no call")
                self._end_region()
                return r.end
            if r.kind == "c_open":
                rg.state = "call"
                rg.call_open_used = True
                return r.end
            if r.kind == "look":
                rg.raw.pop()
                rg.state = "call"
                rg.known_only = r.marker in t.lookahead_known_only
                return k
            return r.end  # separators, stray call-close markers
        kind = t.codec.kind
        if t.call_open and not (rg.via == "section" and kind in ("json", "pythonic")
                                and w[k] in "{["):
            if rg.via == "section" and t.section_close:
                return self._reject(rg, w, k, truncated=False, reason="text inside a tool-call section")
            self._end_region()
            return k
        if kind in ("json", "pythonic") and w[k] not in "{[":
            if rg.emitted:
                self._end_region()
                return k
            return self._reject(rg, w, k, truncated=False, reason="tool-call marker not followed by a call")
        rg.state = "call"
        return k

    def _region_call(self, rg: _Region, w: str, i: int, final: bool) -> int:
        t = self.profile.tools
        assert t is not None
        if rg.body is None:
            k = i
            while k < len(w) and w[k] in _WS:
                k += 1
            if k == len(w) and not final:
                return i
            spec = t.codec
            if (t.alt_codec is not None and k < len(w) and w[k] in "{["
                    and spec.kind not in ("json", "pythonic")):
                spec = t.alt_codec
            rg.body = make_body(spec, self._c.body_stops, self._schemas, rg.known_only, t.partial_values,
                                self._c.header_stops,
                                # marker-less calls stream only once complete: until then the
                                # text may still be content
                                streaming=self._stream and rg.via != "look")
        body = rg.body
        st, j = body.feed(w, i, final)
        if j > i:
            rg.raw.append(w[i:j])
        if body.streaming:
            self._stream_call(rg, body, self._at(j))
        if st == "more":
            return j
        if st == "reject":
            if rg.stream_idx is not None:
                return self._end_started(rg, body, j)
            if rg.stream_ended:
                return self._drop_rest(rg, body, j)
            return self._reject(rg, w, j, truncated=body.truncated, reason=body.reason)
        self._emit_calls(rg, body.calls, self._at(j))
        rg.body = None
        rg.state = "after"
        return j

    def _region_after(self, rg: _Region, w: str, i: int, final: bool) -> int:
        t = self.profile.tools
        assert t is not None
        k = self._skip_ws(rg, w, i)
        if k == len(w):
            if final:
                if (rg.call_open_used and t.call_close) or (rg.via == "section" and t.section_close):
                    self._issue("missing_end_marker", "tool call was not closed; recovered it at the end "
                                "of the output", self._at(k))
                self._end_region()
            return k
        r = self._c.after.match_at(w, k, final)
        if r is True and not final:
            return k
        if isinstance(r, Match):
            if r.kind == "c_close":
                if rg.via == "section":
                    rg.state = "between"
                    rg.raw = []
                    return r.end
                # an orphan section close right after a bare call belongs to it too
                self._end_region()
                return r.end
            if r.kind == "s_close":
                if rg.call_open_used and t.call_close:
                    self._issue("missing_end_marker", "tool call was not closed before the section end",
                                self._at(k))
                self._end_region()
                return r.end
            if r.kind in ("s_open", "eot"):
                if r.kind == "eot" and rg.call_open_used and t.call_close:
                    self._issue("missing_end_marker", "tool call was not closed before the end of the turn",
                                self._at(k))
                self._end_region()
                return k
            if r.kind == "look":
                rg.state = "call"
                rg.known_only = r.marker in t.lookahead_known_only
                return k
            # the next call starts without this one being closed
            if t.call_close:
                self._issue("missing_end_marker", "tool call was not closed before the next one",
                            self._at(k))
            if rg.via == "section":
                rg.state = "between"
                return k
            self._end_region()
            return k
        if rg.via == "section":
            rg.state = "between"
            return k
        if rg.call_open_used and t.call_close:
            self._issue("missing_end_marker", "tool call was not closed; text follows it", self._at(k))
        self._end_region()
        return k

    def _stream_call(self, rg: _Region, body: ArgSource, pos: int = 0) -> None:
        """Announce the call once its name is certain, then send what its arguments made certain.
        A list body ends each of its calls as soon as that call's text has closed."""
        while True:
            if rg.stream_idx is None and not rg.stream_off:
                self._announce(rg, body)
            if rg.stream_idx is not None:
                text = body.take_args()
                if text:
                    rg.stream_sent.append(text)
                    self._events.append(ToolCallArgsDelta(rg.stream_idx, text))
            ended = body.pop_ended() if isinstance(body, Body) else None
            if ended is None:
                return
            rg.stream_ended += 1
            at = self._at(ended.end) if ended.end >= 0 else pos
            if rg.stream_idx is not None:
                self._end_streamed(rg, ended, at, None)
            else:  # never announced (an unknown tool the policy drops): as without streaming
                self._emit_call(ended, at)
            rg.stream_off = False

    def _announce(self, rg: _Region, body: ArgSource) -> None:
        name = body.call_name
        if name is None:
            return
        known = not self._have_tools or name in self._schemas
        if not known and self.policy.unknown_tool != "forward":
            rg.stream_off = True  # dropped or raised on at the end, as without streaming
            return
        idx = self._start_call(name, body.call_id)
        rg.stream_idx = idx
        rg.stream_id = body.call_id or f"call_{idx}"
        rg.stream_known = known
        rg.stream_sent = []

    def _finish_stream(self, rg: _Region, body: ArgSource | None,
                       parsed: dict[str, Any] | None = None) -> dict[str, object] | None:
        """Send the rest of a streamed call's arguments; their value (None if nothing was sent).

        ``parsed``: the complete body's arguments. When what was sent is a prefix of their JSON
        (the transcoder stopped at text only the complete parse understands, such as a Python
        comment), the rest of that JSON is sent instead of closing what was sent."""
        assert rg.stream_idx is not None
        rest = body.take_args() if body is not None else ""
        if body is not None:
            sent = "".join(rg.stream_sent) + rest if parsed is not None and (rest or rg.stream_sent) else ""
            full = _DUMPS(parsed) if sent else ""
            rest += full[len(sent):] if sent and full.startswith(sent) else body.args_closing()
        if rest:
            rg.stream_sent.append(rest)
            self._events.append(ToolCallArgsDelta(rg.stream_idx, rest))
        if not rg.stream_sent:
            return None
        value = json.loads("".join(rg.stream_sent))
        assert isinstance(value, dict)
        return value

    def _end_started(self, rg: _Region, body: ArgSource, j: int) -> int:
        """An announced call whose body turned out cut off or malformed: it stays a call."""
        truncated = body.truncated
        code = "truncated_call" if truncated else "invalid_call"
        if truncated:
            self._truncated = True
        pol = self.policy.truncated_call if truncated else self.policy.malformed_arguments
        name = body.call_name or ""
        self._issue(code, f"{name}: {body.reason}; kept the arguments that were complete", self._at(j),
                    "raise" if pol == "raise" else "")
        args = self._finish_stream(rg, body)
        if args is None:
            args = {}
            assert rg.stream_idx is not None
            self._events.append(ToolCallArgsDelta(rg.stream_idx, "{}"))
        status: CallStatus = "truncated" if truncated else "invalid"
        assert rg.stream_idx is not None
        if not rg.stream_known:
            self._issue("unknown_tool", f"call to a tool not in the request: {name!r}", self._at(j))
        self._events.append(ToolCallEnd(rg.stream_idx, args, status))
        self._calls.append(ToolCall(name, args, rg.stream_id, status, rg.stream_known))
        rg.stream_idx = None
        self._end_region()
        return j

    def _drop_rest(self, rg: _Region, body: Body, j: int) -> int:
        """A list body that ended calls while streaming, then broke: those calls stay (nothing is
        taken back); the rest of its text is dropped, with an issue."""
        t = self.profile.tools
        assert t is not None
        truncated = body.truncated
        if truncated:
            self._truncated = True  # finish stays "tool_calls": complete calls, then cut text
        pol = self.policy.truncated_call if truncated else self.policy.malformed_arguments
        self._issue("truncated_call" if truncated else "invalid_call",
                    f"{body.reason}; the {rg.stream_ended} call(s) before it stay, the rest was dropped",
                    self._at(j), "raise" if pol == "raise" else "")
        rg.stream_ended = 0
        closes = t.section_close if rg.via == "section" else t.call_close or t.section_close
        self._end_region()
        if not truncated and closes:
            self._mode = "skip"
            self._skip_ms = self._c.skip_section if rg.via == "section" else self._c.skip_call
        return j

    def _start_call(self, name: str, cid: str | None) -> int:
        idx = self._index
        self._index += 1
        known = not self._have_tools or name in self._schemas
        self._events.append(ToolCallStart(idx, cid or f"call_{idx}", name, known))
        return idx

    def _reject(self, rg: _Region, w: str, j: int, truncated: bool, reason: str) -> int:
        t = self.profile.tools
        assert t is not None
        recovery: str = t.on_truncated if truncated else t.on_invalid
        if truncated:
            self._truncated = True
            if self.policy.truncated_call == "raise":
                self._issue("truncated_call", reason, self._at(j), "raise")
            if self.policy.truncated_call == "drop":
                recovery = "drop"
        elif self.policy.malformed_arguments == "raise":
            self._issue("invalid_call", reason, self._at(j), "raise")
        if recovery == "content_if_no_calls":
            recovery = "content" if not self._calls else "drop"
        self._issue("truncated_call" if truncated else "invalid_call",
                    f"{reason}; its text was {'dropped' if recovery == 'drop' else 'kept as content'}",
                    self._at(j))
        raw = "".join(rg.raw)
        self._region = None
        self._mode = "content"
        if recovery == "drop":
            closes = t.section_close if rg.via == "section" else t.call_close or t.section_close
            if not truncated and closes:
                self._mode = "skip"
                self._skip_ms = self._c.skip_section if rg.via == "section" else self._c.skip_call
            return j
        if rg.via == "look" and not rg.emitted:
            # the lookahead marker was not a call: its first character is content, read on after it
            if not raw:
                self._emit_content(w[j:j + 1])
                return j + 1
            self._emit_content(raw[0])
            if len(raw) > 1:
                self._push = raw[1:]
            return j
        if rg.raw_has_marker and rg.marker and raw.startswith(rg.marker):
            if recovery == "content":
                self._emit_content_raw(rg.marker)
            raw = raw[len(rg.marker):]
        if raw:
            self._push = raw
        return j

    def _emit_content_raw(self, text: str) -> None:
        """Content that is the literal text of a rejected marker (never re-scanned)."""
        self._content.append(text)
        self._events.append(ContentDelta(text))

    def _m_skip(self, w: str, i: int, final: bool) -> int:
        m, safe = self._skip_ms.scan(w, i, final)
        if m is None:
            if final:
                self._mode = "content"
            return safe
        self._mode = "content"
        return m.end

    def _emit_calls(self, rg: _Region, calls: list[ParsedCall], pos: int) -> None:
        """Announce parsed calls; ``pos`` (where the call text ended) locates their issues."""
        done = rg.stream_ended  # ended while streaming: only issues the complete parse added remain
        ended = rg.body.ended if rg.body is not None else []
        for n, c in enumerate(calls):
            if n < done:
                for code, msg in c.issues:
                    if n >= len(ended) or (code, msg) not in ended[n].issues:
                        self._issue(code, f"{c.name}: {msg}", pos)
            elif n == done and rg.stream_idx is not None:
                self._end_streamed(rg, c, pos, rg.body)
            else:
                self._emit_call(c, self._at(c.end) if c.end >= 0 else pos)
        rg.stream_ended = 0
        rg.stream_off = False
        rg.emitted += max(1, len(calls))
        rg.raw = []
        rg.raw_has_marker = False

    def _end_streamed(self, rg: _Region, c: ParsedCall, pos: int, src: ArgSource | None) -> None:
        """The complete body of a call that was announced early: send the rest, then its end."""
        idx = rg.stream_idx
        assert idx is not None
        args = self._finish_stream(rg, src, c.arguments)
        rg.stream_idx = None
        status: CallStatus = c.status
        if not rg.stream_known:
            self._issue("unknown_tool", f"call to a tool not in the request: {c.name!r}", pos)
        for code, msg in c.issues:
            self._issue(code, f"{c.name}: {msg}", pos)
        if args is None:  # nothing could stream (e.g. arguments written as a JSON string)
            args = c.arguments
            self._events.append(ToolCallArgsDelta(idx, _DUMPS(args)))
        elif args != c.arguments:
            self._issue("stream_mismatch", f"{c.name}: the streamed arguments differ from the parsed "
                        "ones; kept what was sent", pos)
            if status == "ok":
                status = "repaired"
        if self._have_tools and rg.stream_known:
            status = self._check_schema(c.name, args, status, pos)
        self._events.append(ToolCallEnd(idx, args, status))
        self._calls.append(ToolCall(c.name, args, rg.stream_id, status, rg.stream_known))

    def _check_schema(self, name: str, arguments: dict[str, Any], status: CallStatus, pos: int) -> CallStatus:
        """Validate a known tool's arguments (streamed or whole: one check for both paths); a schema
        the validator cannot use is reported once per tool and never blocks the call."""
        schema = self._schemas.get(name)
        if name not in self._schema_noted:
            self._schema_noted.add(name)
            for note in values.schema_notes(schema):
                self._issue("schema_unusable", f"{name}: {note}", pos)
        problems = values.validate_arguments(arguments, schema)
        if problems:
            msg = f"{name}: arguments do not match the tool schema: {'; '.join(problems)}"
            self._issue("schema_mismatch", msg, pos, "raise" if self.policy.schema_mismatch == "raise" else "")
            if status == "ok":
                return "invalid"
        return status

    def _emit_call(self, c: ParsedCall, pos: int) -> None:
        known = not self._have_tools or c.name in self._schemas
        if not known:
            pol = self.policy.unknown_tool
            if pol == "raise":
                self._issue("unknown_tool", f"call to unknown tool {c.name!r}", pos, "raise")
            if pol == "drop":
                self._issue("unknown_tool", f"dropped a call to unknown tool {c.name!r}", pos)
                return
            self._issue("unknown_tool", f"call to a tool not in the request: {c.name!r}", pos)
        idx = self._start_call(c.name, c.id)
        cid = c.id or f"call_{idx}"
        for code, msg in c.issues:
            self._issue(code, f"{c.name}: {msg}", pos)
        status: CallStatus = c.status
        if self._have_tools and known:
            status = self._check_schema(c.name, c.arguments, status, pos)
        self._events.append(ToolCallArgsDelta(idx, _DUMPS(c.arguments)))
        self._events.append(ToolCallEnd(idx, c.arguments, status))
        self._calls.append(ToolCall(c.name, c.arguments, cid, status, known))

    # -- Harmony messages ---------------------------------------------------------------------------
    def _abandon_header(self, pos: int) -> None:
        """A header that never reached its message marker: the one the prompt opened was plain text
        (a model answering without a header); any other is a broken header, reported."""
        if self._h_prompt_header:
            self._h_prompt_header = False
            text = "".join(self._h_header)
            self._h_header = []
            self._mode = "content"
            self._emit_content(text)
            return
        self._issue("invalid_header", "message header never reached its message marker", pos)
        self._mode = "content"

    def _m_h_header(self, w: str, i: int, final: bool) -> int:
        h = self.profile.messages
        assert h is not None
        m, safe = self._c.h_header.scan(w, i, final)
        if m is None:
            self._h_header.append(w[i:safe])
            if sum(map(len, self._h_header)) > _MAX_HARMONY_HEADER or final:
                self._abandon_header(self._at(safe))
            return safe
        self._h_header.append(w[i:m.start])
        if m.kind == "h_channel":
            text = "".join(self._h_header)
            if self._h_prompt_header and text.strip(_WS) and h.recipient_prefix not in text:
                # the prompt opened a header, but this is prose before the first real one
                self._emit_content(text)
                self._h_header = []
            self._h_prompt_header = False
            self._h_header.append(" ")
            return m.end
        if m.kind != "msg":
            if self._h_prompt_header:
                self._abandon_header(self._at(m.start))
                return m.start
            self._mode = "content"
            return m.start if m.kind == "h_start" else m.end
        header = "".join(self._h_header)
        self._h_prompt_header = False
        rm = re.search(re.escape(h.recipient_prefix) + r"([^\s<>|]+)", header)
        if rm:
            self._h_name = rm.group(1)
            self._h_scanner = None
            self._mode = "h_call"
            return m.end
        words = re.findall(r"[^\s<>|]+", header)
        if any(c in words for c in h.reasoning_channels):
            self._h_kind = "reasoning"
            if self._reasoning and h.join:
                self._emit_reasoning(h.join)
        else:
            self._h_kind = "content"
            if self._h_blocks and self._content and h.join:
                self._emit_content(h.join)
            self._h_blocks += 1
        self._mode = "h_body"
        return m.end

    def _m_h_body(self, w: str, i: int, final: bool) -> int:
        m, safe = self._c.h_body.scan(w, i, final)
        emit = self._emit_reasoning if self._h_kind == "reasoning" else self._emit_content
        if m is None:
            emit(w[i:safe])
            return safe
        emit(w[i:m.start])
        if m.kind == "strip":
            return m.end
        self._mode = "content"
        return m.end if m.kind == "end" else m.start

    def _m_h_call(self, w: str, i: int, final: bool) -> int:
        if self._h_scanner is None:
            k = i
            while k < len(w) and w[k] in _WS:
                k += 1
            if k == len(w):
                if final:
                    self._truncated = True
                    self._issue("truncated_call", f"{self._h_name}: no arguments", self._at(k))
                    self._mode = "content"
                return k
            if w[k] != "{":
                self._issue("invalid_call", f"{self._h_name}: arguments are not JSON", self._at(k))
                self._mode = "h_after"
                return k
            self._h_scanner = BalancedScanner("{[", (('"', '"', True),), self._c.h_after)
            self._h_region = None
            if self._stream:
                self._h_region = _Region("harmony", "")
                self._h_src = _HarmonySource(self._h_name)
            i = k
        sc = self._h_scanner
        st, j = sc.feed(w, i, final)
        hrg = self._h_region
        if hrg is not None and not hrg.stream_off:
            self._h_src.args.feed(w[i:j])
            self._stream_call(hrg, self._h_src)
        if st == "more":
            if final:
                if hrg is not None and hrg.stream_idx is not None:
                    self._h_src.truncated = True
                    self._h_src.reason = "arguments cut off"
                    self._h_scanner = None
                    return self._end_started(hrg, self._h_src, j)
                self._truncated = True
                self._issue("truncated_call", f"{self._h_name}: arguments cut off; dropped", self._at(j))
                self._mode = "content"
            return j
        bounded = sc.bounded(st)
        raw, repaired = bounded if bounded is not None else ("", False)
        status: Literal["ok", "repaired"] = "repaired" if repaired else "ok"
        try:
            args = json.loads(raw)
        except ValueError:
            args = None
        if hrg is not None and hrg.stream_idx is not None:
            if not isinstance(args, dict):
                self._h_src.reason = "arguments are not a JSON object"
                self._h_scanner = None
                self._end_started(hrg, self._h_src, j)
                self._mode = "h_after"
                return j
            self._end_streamed(hrg, ParsedCall(self._h_name, args, None, status), self._at(j), self._h_src)
        elif not isinstance(args, dict):
            self._issue("invalid_call", f"{self._h_name}: arguments are not a JSON object", self._at(j))
        else:
            rg = _Region("harmony", "")
            self._emit_calls(rg, [ParsedCall(self._h_name, args, None, status)], self._at(j))
        self._h_scanner = None
        self._mode = "h_after"
        return j

    def _m_h_after(self, w: str, i: int, final: bool) -> int:
        k = i
        while k < len(w) and w[k] in _WS:
            k += 1
        if k == len(w):
            if final:
                self._mode = "content"
            return k
        r = self._c.h_after.match_at(w, k, final)
        if r is True and not final:
            return i
        self._mode = "content"
        return r.end if isinstance(r, Match) else k

