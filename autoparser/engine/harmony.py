"""Harmony framing: messages whose header says what the body is (gpt-oss).

Rules of this file:

* It reads the four Harmony modes of the machine (``states.Mode.h_header``, ``h_body``, ``h_call``,
  ``h_after``) and nothing else; which mode follows which is in ``states.TRANSITIONS``, and the
  machine (``machine.Parser``) enters ``h_header`` at a start or channel marker found in content.
* It owns the Harmony state (the channel of the message being read, the call's name and its
  bracket scanner) and writes through the parser: content, reasoning, issues and calls come out
  exactly as the machine's own, so a call announced here is streamed and ended by the machine's
  call code (``_stream_call``, ``_end_streamed``, ``_end_started``, ``_emit_calls``).
* The header text is held by the parser's buffer (``pending.Pending``): at most
  ``MAX_HEADER`` characters, after which the header is abandoned.

Theory of operation. ``<|start|>assistant<|channel|>analysis<|message|>...<|end|>``: the header
(``h_header``) is collected up to the message marker; a recipient (``to=functions.NAME``) makes
the body a call's JSON arguments (``h_call``, scanned with ``BalancedScanner`` and streamed with
``JsonArgStream``), a reasoning channel makes it reasoning, anything else content (``h_body``).
After a call its end marker is consumed (``h_after``). When the prompt ended inside a header
(``messages.header_open``), output starts in ``h_header``; text that never becomes a header is
content.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Literal

from ..profile import Profile
from .argstream import JsonArgStream
from .codecs import ParsedCall
from .markers import Kind, MarkerSet, Match
from .scanner import BalancedScanner
from .states import TRANSITIONS, Act, Mode

if TYPE_CHECKING:
    from .machine import Parser, _Region

__all__ = ["MAX_HEADER", "Harmony", "HarmonyMarkers"]

_WS = " \t\r\n"
#: a header longer than this never reached its message marker: abandoned
MAX_HEADER = 1024
CONTENT, H_CALL, H_AFTER = Mode.content, Mode.h_call, Mode.h_after
_ON_HEADER, _ON_BODY, _ON_AFTER = TRANSITIONS[Mode.h_header], TRANSITIONS[Mode.h_body], TRANSITIONS[Mode.h_after]


class HarmonyMarkers:
    """The marker sets of the Harmony modes, built once per profile (with the machine's)."""

    __slots__ = ("after", "body", "header")

    def __init__(self, p: Profile, strip: list[tuple[str, Kind]]) -> None:
        h = p.messages
        assert h is not None
        self.header = MarkerSet([(h.message, Kind.msg), (h.start, Kind.h_start), (h.channel, Kind.h_channel)]
                                + [(e, Kind.end) for e in h.ends])
        self.body = MarkerSet([(h.start, Kind.h_start), (h.channel, Kind.h_channel)]
                              + [(e, Kind.end) for e in h.ends] + strip)
        self.after = MarkerSet([(e, Kind.end) for e in h.ends])


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


class Harmony:
    """The Harmony modes' handlers for one parser (``Parser`` owns one when the profile has
    ``messages``): each takes ``(text, index, final)`` and returns the index it read up to."""

    def __init__(self, parser: Parser, markers: HarmonyMarkers) -> None:
        self._p = parser
        self._ms = markers
        h = parser.profile.messages
        # the prompt ended inside a message header: output starts with the rest of it
        self.prompt_header = h is not None and h.header_open
        self.kind = ""           # the channel of the body being read: "reasoning" or "content"
        self.blocks = 0          # content messages so far (joined with ``messages.join``)
        self.scanner: BalancedScanner | None = None
        self.region: _Region | None = None
        self.src = _HarmonySource("")
        self.name = ""

    def abandon_header(self, pos: int) -> None:
        """A header that never reached its message marker: the one the prompt opened was plain text
        (a model answering without a header); any other is a broken header, reported."""
        p = self._p
        if self.prompt_header:
            self.prompt_header = False
            text = p._pending.take_header()
            p._mode = CONTENT
            p._emit_content(text)
            return
        p._issue("invalid_header", "message header never reached its message marker", pos)
        p._mode = CONTENT

    def header(self, w: str, i: int, final: bool) -> int:
        p = self._p
        h = p.profile.messages
        assert h is not None
        m, safe = self._ms.header.scan(w, i, final)
        if m is None:
            p._pending.add_header(w[i:safe])
            if p._pending.header_len > MAX_HEADER or final:
                self.abandon_header(p._at(safe))
            return safe
        p._pending.add_header(w[i:m.start])
        step = _ON_HEADER[m.kind]
        if step.act is Act.channel:
            text = p._pending.header()
            if self.prompt_header and text.strip(_WS) and h.recipient_prefix not in text:
                # the prompt opened a header, but this is prose before the first real one
                p._emit_content(p._pending.take_header())
            self.prompt_header = False
            p._pending.add_header(" ")
            return m.end
        if step.act is Act.header_end:
            if self.prompt_header:
                self.abandon_header(p._at(m.start))
                return m.start
            p._mode = step.then
            return m.end if step.eat else m.start
        # Act.message: the header is complete
        header = p._pending.take_header()
        self.prompt_header = False
        rm = re.search(re.escape(h.recipient_prefix) + r"([^\s<>|]+)", header)
        if rm:
            self.name = rm.group(1)
            self.scanner = None
            p._mode = H_CALL  # the step's alternative: a message addressed to a function
            return m.end
        words = re.findall(r"[^\s<>|]+", header)
        if any(c in words for c in h.reasoning_channels):
            self.kind = "reasoning"
            if p._reasoning and h.join:
                p._emit_reasoning(h.join)
        else:
            self.kind = "content"
            if self.blocks and p._content and h.join:
                p._emit_content(h.join)
            self.blocks += 1
        p._mode = step.then
        return m.end

    def body(self, w: str, i: int, final: bool) -> int:
        p = self._p
        m, safe = self._ms.body.scan(w, i, final)
        emit = p._emit_reasoning if self.kind == "reasoning" else p._emit_content
        if m is None:
            emit(w[i:safe])
            return safe
        emit(w[i:m.start])
        step = _ON_BODY[m.kind]
        p._mode = step.then
        return m.end if step.eat else m.start

    def call(self, w: str, i: int, final: bool) -> int:
        p = self._p
        if self.scanner is None:
            k = i
            while k < len(w) and w[k] in _WS:
                k += 1
            if k == len(w):
                if final:
                    p._truncated = True
                    p._issue("truncated_call", f"{self.name}: no arguments", p._at(k))
                    p._mode = CONTENT
                return k
            if w[k] != "{":
                p._issue("invalid_call", f"{self.name}: arguments are not JSON", p._at(k))
                p._mode = H_AFTER
                return k
            self.scanner = BalancedScanner("{[", (('"', '"', True),), self._ms.after)
            self.region = None
            if p._stream:
                self.region = p._harmony_region()
                self.src = _HarmonySource(self.name)
            i = k
        sc = self.scanner
        st, j = sc.feed(w, i, final)
        hrg = self.region
        if hrg is not None and not hrg.stream_off:
            self.src.args.feed(w[i:j])
            p._stream_call(hrg, self.src)
        if st == "more":
            if final:
                if hrg is not None and hrg.stream_idx is not None:
                    self.src.truncated = True
                    self.src.reason = "arguments cut off"
                    self.scanner = None
                    return p._end_started(hrg, self.src, j)
                p._truncated = True
                p._issue("truncated_call", f"{self.name}: arguments cut off; dropped", p._at(j))
                p._mode = CONTENT
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
                self.src.reason = "arguments are not a JSON object"
                self.scanner = None
                p._end_started(hrg, self.src, j)
                p._mode = H_AFTER
                return j
            p._end_streamed(hrg, ParsedCall(self.name, args, None, status), p._at(j), self.src)
        elif not isinstance(args, dict):
            p._issue("invalid_call", f"{self.name}: arguments are not a JSON object", p._at(j))
        else:
            rg = p._harmony_region()
            p._emit_calls(rg, [ParsedCall(self.name, args, None, status)], p._at(j))
        self.scanner = None
        p._mode = H_AFTER
        return j

    def after(self, w: str, i: int, final: bool) -> int:
        p = self._p
        k = i
        while k < len(w) and w[k] in _WS:
            k += 1
        if k == len(w):
            if final:
                p._mode = CONTENT
            return k
        r = self._ms.after.match_at(w, k, final)
        if r is True and not final:
            return i
        if isinstance(r, Match):
            step = _ON_AFTER[r.kind]
            p._mode = step.then
            return r.end if step.eat else r.start
        p._mode = CONTENT  # other text: the call message had no end marker
        return k
