"""Harmony framing: messages whose header says what the body is (gpt-oss).

Rules of this file:

* It reads the four Harmony modes of the machine (``states.Mode.h_header``, ``h_body``, ``h_call``,
  ``h_after``) and nothing else; which mode follows which is in ``states.TRANSITIONS``, and the
  machine (``machine.Parser``) enters ``h_header`` at a start or channel marker found in content.
* It talks to the parser through a narrow interface: ``handle(mode, text, index, final)`` returns
  the index it read up to and the mode that follows; it writes through the parser's
  ``output.Output`` (content, reasoning, issues and calls come out exactly as the machine's own),
  keeps its header in the parser's ``pending.Pending`` (the one owner of held text) and asks
  ``at`` where an index of the working text is in the output. It never touches the parser.
* It owns the Harmony state: the channel of the message being read, the call's name, its
  bracket scanner and the stream of its arguments. The header is at most ``MAX_HEADER``
  characters, after which it is abandoned.

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
from collections.abc import Callable
from typing import Literal

from ..profile import Profile
from .argstream import JsonArgStream
from .codecs import ParsedCall
from .issues import IssueCode
from .markers import WS, Kind, MarkerSet, Match, skip_ws
from .output import CallStream, Output
from .pending import Pending
from .scanner import BalancedScanner
from .states import TRANSITIONS, Act, Mode

__all__ = ["MAX_HEADER", "Harmony", "HarmonyMarkers"]

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
    """The Harmony modes of one parser (``Parser`` makes one when the profile has ``messages``)."""

    def __init__(self, profile: Profile, markers: HarmonyMarkers, out: Output, pending: Pending,
                 at: Callable[[int], int], stream: bool) -> None:
        h = profile.messages
        assert h is not None
        self._h = h
        self._ms = markers
        self._out = out
        self._pending = pending
        self._at = at
        self._stream = stream
        # the prompt ended inside a message header: output starts with the rest of it
        self.prompt_header = h.header_open
        self.kind = ""           # the channel of the body being read: "reasoning" or "content"
        self.blocks = 0          # content messages so far (joined with ``messages.join``)
        self.scanner: BalancedScanner | None = None
        self.cs: CallStream | None = None   # the call message being streamed (None: fail-closed)
        self.src = _HarmonySource("")
        self.name = ""
        self._handlers = {Mode.h_header: self._header, Mode.h_body: self._body, Mode.h_call: self._call,
                          Mode.h_after: self._after}

    def handle(self, mode: Mode, w: str, i: int, final: bool) -> tuple[int, Mode]:
        """Read ``w`` from ``i`` in ``mode``: the index read up to, and the mode that follows."""
        return self._handlers[mode](w, i, final)

    def _abandon_header(self, pos: int) -> Mode:
        """A header that never reached its message marker: the one the prompt opened was plain text
        (a model answering without a header); any other is a broken header, reported."""
        if self.prompt_header:
            self.prompt_header = False
            text = self._pending.take_header()
            self._out.write_content(text, pos - len(text))
        else:
            self._out.issue(IssueCode.invalid_header, "message header never reached its message marker", pos)
        return CONTENT

    def _header(self, w: str, i: int, final: bool) -> tuple[int, Mode]:
        h = self._h
        pending = self._pending
        m, safe = self._ms.header.scan(w, i, final)
        if m is None:
            pending.add_header(w[i:safe])
            if pending.header_len > MAX_HEADER or final:
                return safe, self._abandon_header(self._at(safe))
            return safe, Mode.h_header
        pending.add_header(w[i:m.start])
        step = _ON_HEADER[m.kind]
        if step.act is Act.channel:
            text = pending.header()
            if self.prompt_header and text.strip(WS) and h.recipient_prefix not in text:
                # the prompt opened a header, but this is prose before the first real one
                prose = pending.take_header()
                self._out.write_content(prose, self._at(m.start) - len(prose))
            self.prompt_header = False
            pending.add_header(" ")
            return m.end, step.then
        if step.act is Act.header_end:
            if self.prompt_header:
                return m.start, self._abandon_header(self._at(m.start))
            return (m.end if step.eat else m.start), step.then
        # Act.message: the header is complete
        header = pending.take_header()
        self.prompt_header = False
        rm = re.search(re.escape(h.recipient_prefix) + r"([^\s<>|]+)", header)
        if rm:
            self.name = rm.group(1)
            self.scanner = None
            return m.end, H_CALL  # the step's alternative: a message addressed to a function
        words = re.findall(r"[^\s<>|]+", header)
        out = self._out
        if any(c in words for c in h.reasoning_channels):
            self.kind = "reasoning"
            if out.reasoning and h.join:
                out.write_reasoning(h.join)
        else:
            self.kind = "content"
            if self.blocks and out.content and h.join:
                out.write_content(h.join, self._at(m.end))
            self.blocks += 1
        return m.end, step.then

    def _body(self, w: str, i: int, final: bool) -> tuple[int, Mode]:
        m, safe = self._ms.body.scan(w, i, final)
        out = self._out
        end = safe if m is None else m.start
        if self.kind == "reasoning":
            out.write_reasoning(w[i:end])
        else:
            out.write_content(w[i:end], self._at(i))
        if m is None:
            return safe, Mode.h_body
        step = _ON_BODY[m.kind]
        return (m.end if step.eat else m.start), step.then

    def _call(self, w: str, i: int, final: bool) -> tuple[int, Mode]:
        out = self._out
        if self.scanner is None:
            k = skip_ws(w, i)
            if k == len(w):
                if final:
                    out.truncated = True
                    out.issue(IssueCode.truncated_call, f"{self.name}: no arguments", self._at(k))
                    return k, CONTENT
                return k, H_CALL
            if w[k] != "{":
                out.issue(IssueCode.invalid_call, f"{self.name}: arguments are not JSON", self._at(k))
                return k, H_AFTER
            self.scanner = BalancedScanner("{[", (('"', '"', True),), self._ms.after)
            self.cs = None
            if self._stream:
                self.cs = CallStream()
                self.src = _HarmonySource(self.name)
            i = k
        sc = self.scanner
        st, j = sc.feed(w, i, final)
        cs = self.cs
        if cs is not None and not cs.off:
            self.src.args.feed(w[i:j])
            out.stream(cs, self.src, self._at(j), self._at)
        if st == "more":
            if final:
                self.scanner = None
                if cs is not None and cs.idx is not None:
                    self.src.truncated = True
                    self.src.reason = "arguments cut off"
                    out.end_started(cs, self.src, self.name, self._at(j))
                    return j, CONTENT
                out.truncated = True
                out.issue(IssueCode.truncated_call, f"{self.name}: arguments cut off; dropped", self._at(j))
                return j, CONTENT
            return j, H_CALL
        self.scanner = None
        bounded = sc.bounded(st)
        raw, repaired = bounded if bounded is not None else ("", False)
        status: Literal["ok", "repaired"] = "repaired" if repaired else "ok"
        try:
            args = json.loads(raw)
        except ValueError:
            args = None
        if cs is not None and cs.idx is not None:
            if not isinstance(args, dict):
                self.src.reason = "arguments are not a JSON object"
                out.end_started(cs, self.src, self.name, self._at(j))
                return j, H_AFTER
            out.end_streamed(cs, ParsedCall(self.name, args, None, status), self._at(j), self.src)
        elif not isinstance(args, dict):
            out.issue(IssueCode.invalid_call, f"{self.name}: arguments are not a JSON object", self._at(j))
        else:
            out.emit_calls(CallStream(), [ParsedCall(self.name, args, None, status)], None, self._at(j), self._at)
        return j, H_AFTER

    def _after(self, w: str, i: int, final: bool) -> tuple[int, Mode]:
        k = skip_ws(w, i)
        if k == len(w):
            return k, (CONTENT if final else H_AFTER)
        r = self._ms.after.match_at(w, k, final)
        if r is True and not final:
            return i, H_AFTER
        if isinstance(r, Match):
            step = _ON_AFTER[r.kind]
            return (r.end if step.eat else r.start), step.then
        return k, CONTENT  # other text: the call message had no end marker
