"""The streaming machine: one generic, profile-driven parser for every dialect.

Rules of this file:

* Everything that decides what the text being read *is* happens here or in the modules it
  delegates to, each with one job: which state follows which is data in ``states.py``
  (``TRANSITIONS``, ``AT_END``, ``IN_REGION``, ``OTHER``; docs/engine.md draws it), marker search
  and holdback is ``markers.py``, the body of one call is a codec's (``codecs.py``), Harmony's
  header-routed messages are ``harmony.py``'s (behind ``Harmony.handle``, which says the next
  mode), everything written (events, text, issues, calls) is written by one ``output.Output``,
  and every text the parser holds unwritten is held by one ``pending.Pending``.
* No I/O, no imports of jinja2 / openvino / transformers: text in, events out.
* Nothing emitted is ever taken back. Text is held only while it may still be part of a marker,
  while a tool call is incomplete, or while a reasoning block has not yet said whether the call
  it contains is a call (``call_in_reasoning="defer"``). A call is announced (``ToolCallStart``)
  once its name is certain (``stream_arguments=True``: then its arguments stream, as fragments
  a codec has made certain) or once it is complete and valid (``False``); either way a call once
  announced stays a call: cut off or malformed, it ends with status ``truncated``/``invalid``.
* Decisions depend on the text up to their point, never on where chunks were cut: every handler
  either makes a decision that the full text would also make at that point, or waits for more
  text, and every state is entered one way, the table's (a call marker in content leads to
  ``Mode.whole``, whose handler decodes a complete call at once or hands it to the region).
  Hence the coalesced events of any chunking equal those of the whole text (the differential
  fuzzer, ``tests/test_fuzz.py``, is the referee).

Theory of operation. The parser reads one small working string: what it could not decide on
last time (``Pending.carry``: a proper prefix of a marker, or the tail of a call body its codec
waits on) plus the new chunk. The mode (``states.Mode``) names the handler (``_handlers``:
``_m_content``, ``_m_undecided``, ``_m_reasoning``, ``_m_defer``, ``_m_whole``, ``_m_region``,
``_m_skip``, and ``_m_harmony`` for Harmony's four); a handler consumes from an index and returns
the next one. At a
marker it looks up ``TRANSITIONS[mode][marker kind]`` (``IN_REGION[spot][kind]`` inside tool
calls) and does what the entry says (``_take``: its act, its next mode, whether the marker is
consumed or read again). A handler that cannot decide returns the same index and the rest
becomes the carry. A handler that discovers that text it consumed was not what it looked like
(a rejected tool call) pushes that text back (``_push``) to be read again as content. ``close()``
runs the handlers once more with ``final=True`` so that everything pending is decided, then
applies ``AT_END`` (``_end_step``).

Who holds which text, and what bounds it: ``Pending`` holds the carry (the longest marker, or
the call being read), the undecided or deferred text (one reasoning block) and a Harmony header
(``harmony.MAX_HEADER``); a region's ``raw`` and its codec body hold the call being read (dropped
when it ends); nothing else is kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..errors import AutoparserError, OptionError
from ..events import Event
from ..policy import Policy
from ..profile import Profile
from ..result import Result
from ..wire import read_tools
from .codecs import _STREAM_AFTER, Body, JsonBody, head_name, make_body
from .harmony import Harmony, HarmonyMarkers
from .issues import IssueCode
from .markers import Kind, MarkerSet, Match, skip_ws
from .output import CallStream, Output
from .pending import Pending
from .states import AT_END, IN_REGION, TRANSITIONS, Act, Mode, Spot, Step

__all__ = ["Parser"]


# Enum member access is a metaclass lookup (slow on 3.11); the hot paths use these names.
CONTENT, UNDECIDED, REASONING, DEFER = Mode.content, Mode.undecided, Mode.reasoning, Mode.defer
REGION, SKIP, WHOLE = Mode.region, Mode.skip, Mode.whole
_NO_MATCH = Match(-1, -1, "", Kind.call)
H_HEADER, H_BODY, H_CALL, H_AFTER = Mode.h_header, Mode.h_body, Mode.h_call, Mode.h_after
BETWEEN, CALL, AFTER = Spot.between, Spot.call, Spot.after
_NONE = Act.none
# the rows of the transition table each handler consults
_ON_CONTENT, _ON_UNDECIDED, _ON_REASONING = TRANSITIONS[CONTENT], TRANSITIONS[UNDECIDED], TRANSITIONS[REASONING]
_ON_DEFER, _ON_SKIP = TRANSITIONS[DEFER], TRANSITIONS[SKIP]
_IN_BETWEEN, _IN_AFTER = IN_REGION[BETWEEN], IN_REGION[AFTER]
#: the handler of each mode but Harmony's (``harmony.Harmony`` has those), built once
_HANDLER_NAMES = tuple((m, "_m_" + m.value) for m in Mode if m not in (H_HEADER, H_BODY, H_CALL, H_AFTER))


_DECODE = json.JSONDecoder().raw_decode


class _Compiled:
    """Marker sets derived from a profile, built once per profile object."""

    def __init__(self, p: Profile) -> None:
        r = p.reasoning
        t = p.tools
        h = p.messages
        strip = [(m, Kind.strip) for m in (*p.strip, *p.content_open, *p.content_close)]
        openers: list[tuple[str, Kind]] = []
        if t is not None:
            openers += [(m, Kind.section) for m in t.section_open]
            if t.bare_calls or not t.section_open:
                openers += [(m, Kind.call) for m in t.call_open]
        look = ([(m, Kind.look) for m in t.lookahead_open if m not in t.lookahead_at_start]
                if t is not None else [])
        look_start = [(m, Kind.look) for m in t.lookahead_at_start] if t is not None else []
        harmony: list[tuple[str, Kind]] = []
        if h is not None:
            harmony = [(h.start, Kind.h_start), (h.channel, Kind.h_channel)] + [(e, Kind.strip) for e in h.ends]
        r_open = [(m, Kind.r_open) for m in r.open] if r else []
        r_close = [(m, Kind.r_close) for m in r.close] if r else []
        base = strip + openers + look + harmony
        self.content_on = MarkerSet(base + r_open)
        self.content_off = MarkerSet(base)
        self.start_on = MarkerSet(base + r_open + look_start) if look_start else self.content_on
        self.start_off = MarkerSet(base + look_start) if look_start else self.content_off
        self.undecided = MarkerSet(base + r_open + r_close)
        r_open_strip = [(m, Kind.strip) for m in (r.open if r else ())]
        self.reasoning = MarkerSet(r_close + r_open_strip + strip + openers)
        self.reasoning_closed_only = MarkerSet(r_close + r_open_strip + strip)
        self.defer = MarkerSet(r_close)
        self.whole_calls = False
        self.array = "never"
        self.plain_close = ""
        self.at_start_of_carry: dict[str, Match] = {}
        if t is not None:
            c_close = [(m, Kind.c_close) for m in t.call_close]
            s_close = [(m, Kind.s_close) for m in t.section_close]
            s_open = [(m, Kind.s_open) for m in t.section_open]
            eot = [(m, Kind.eot) for m in p.strip]
            c_open = [(m, Kind.c_open) for m in t.call_open]
            sep = [(m, Kind.sep) for m in t.separators]
            # a tagged call with neither trailer nor end marker ends where the next call's separator begins
            open_tagged = t.codec.kind == "tagged" and not t.codec.trailer.strip() and not t.call_close
            self.body_stops = MarkerSet(c_close + s_close + (sep if open_tagged else []))
            self.header_stops = tuple(t.section_open)
            # right after a call nothing but calls has been written, so what may start the output
            # (a bare JSON call) may start the next call too
            self.between = MarkerSet(s_close + s_open + eot + c_open + c_close + sep + look + look_start)
            self.after = MarkerSet(c_close + s_close + s_open + eot + c_open + sep + look + look_start)
            # complete calls found whole in the working text take one short path (``_whole_call``)
            self.whole_calls = (t.codec.kind == "json" and t.codec.flavor == "json" and t.alt_codec is None
                                and bool(t.call_close))
            # a held call's marker where the next chunk's working text has it (``Parser._hold``)
            self.at_start_of_carry = {m: Match(0, len(m), m, Kind.call) for m in t.call_open}
            self.array = t.codec.array
            # the one end marker, when no other marker after a call starts with it (then finding
            # it is a ``startswith``)
            close = t.call_close[0] if len(t.call_close) == 1 else ""
            found = self.after.match_at(close, 0, True) if close else None
            self.plain_close = close if (
                isinstance(found, Match) and found.kind is Kind.c_close
                and not any(m != close and m.startswith(close) for m in self.after.markers)) else ""
            self.skip_section = MarkerSet([(m, Kind.end) for m in t.section_close])
            self.skip_call = MarkerSet([(m, Kind.end) for m in (*t.call_close, *t.section_close)])
        self.harmony = HarmonyMarkers(p, strip) if h is not None else None


def _compiled(p: Profile) -> _Compiled:
    c = p.__dict__.get("_compiled_markers")
    if c is None:
        c = _Compiled(p)
        object.__setattr__(p, "_compiled_markers", c)
    assert isinstance(c, _Compiled)
    return c


@dataclass(slots=True)
class _Region:
    via: Kind                   # section, call, look (a marker-less call), msg (a Harmony message)
    marker: str                 # the opening marker text ("" for lookahead)
    state: Spot = Spot.between  # where in the region the text is
    raw: list[str] = field(default_factory=list)
    raw_has_marker: bool = True
    start: int = 0              # where the call being read (or the region) starts in the output
    body: Body | None = None
    call_open_used: bool = False
    emitted: int = 0            # call bodies parsed in this region (an empty JSON array counts)
    known_only: bool = False
    cs: CallStream = field(default_factory=CallStream)  # the call being streamed


class Parser:
    """Feed text chunks, get events; ``result()`` aggregates them. One parser per response."""

    def __init__(self, profile: Profile, *, tools: object = None, reasoning: str | None = None,
                 policy: Policy | str | None = None, stream_arguments: bool = True) -> None:
        if not isinstance(profile, Profile):
            raise TypeError(f"profile must be an autoparser.Profile, got {type(profile).__name__}")
        self.profile = profile
        self.policy = Policy.coerce(policy)
        self._stream = bool(stream_arguments)
        self._schemas = read_tools(tools)
        self._out = Output(self.policy, self._schemas, tools is not None)  # everything written
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
            REASONING if start == "prefilled" else UNDECIDED if start == "auto" else CONTENT)
        self._content_ms = self._c.content_on if self._reasoning_on else self._c.content_off
        self._start_ms = self._c.start_on if self._reasoning_on else self._c.start_off
        self._at_start = True   # nothing but whitespace emitted yet
        self._pending = Pending()  # every text the parser holds unwritten: carry, held, header
        self._push: str | None = None
        self._closed = False
        self._pos = 0
        self._r_blocks = 1 if start == "prefilled" else 0
        self._region: _Region | None = None
        self._unclosed_reported = False
        self._skip_ms = MarkerSet(())
        self._decoder: JsonBody | None = None  # decodes whole calls (``_whole_call``)
        self._held: CallStream | None = None  # a call held whole and already announced (``_hold``)
        self._call_at = _NO_MATCH  # the call marker the whole state reads on from
        self._handlers = {mode: getattr(self, name) for mode, name in _HANDLER_NAMES}
        self._harmony: Harmony | None = None
        if self._c.harmony is not None:  # Harmony framing: its four modes are harmony.Harmony's
            self._harmony = Harmony(profile, self._c.harmony, self._out, self._pending, self._at, self._stream)
            self._handlers.update(dict.fromkeys((H_HEADER, H_BODY, H_CALL, H_AFTER), self._m_harmony))
            if self._harmony.prompt_header:
                self._mode = H_HEADER

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
        out = self._out
        out.events = []
        self._run(text, final=False)
        return out.events

    def close(self) -> list[Event]:
        """End of stream: decide everything still pending. Idempotent."""
        if self._closed:
            return []
        self._out.events = []
        self._closed = True
        self._run("", final=True)
        while True:
            push = self._end_step(AT_END[self._mode])
            if push is None:
                break
            self._run(push, final=True)
        return self._out.events

    def result(self) -> Result:
        return self._out.result(self._stream)

    # -- the loop -------------------------------------------------------------------------------
    def _run(self, text: str, final: bool) -> None:
        pending = self._pending
        w = pending.carry + text if pending.carry else text
        pending.carry = ""
        base = self._pos
        i = 0
        # the common case first: plain content with no marker character at all
        if (self._mode is CONTENT and not final and not self._at_start
                and not self._content_ms.could_start(w)):
            self._out.write_content(w, base)
            self._pos += len(w)
            return
        n = len(w)
        # the other common case: inside a call body, which takes the whole chunk
        rg = self._region
        if (not final and i == 0 and rg is not None and rg.body is not None and self._mode is REGION
                and rg.state is CALL):
            j = self._region_call(rg, w, 0, False)
            if j == n and self._push is None:
                self._pos = base + n
                return
            if self._push is not None:
                w, base = self._reread(w, j, base)
                n = len(w)
            else:
                i = j
        handlers = self._handlers
        while True:
            if i == n and not final:
                break  # nothing left to decide on: every handler would wait for more text
            mode = self._mode
            rg = self._region
            rstate = rg.state if rg is not None else None
            body = rg.body if rg is not None else None
            j = handlers[mode](w, i, final)
            if self._push is not None:
                w, base = self._reread(w, j, base)
                n = len(w)
                i = 0
                continue
            if j == i and mode == self._mode:
                now = self._region
                if now is rg and (now is None or (now.state is rstate and now.body is body)):
                    break
            i = j
        pending.carry = w[i:]
        self._pos = base + i

    def _reread(self, w: str, j: int, base: int) -> tuple[str, int]:
        """The working text once a handler pushed text back: that text, then ``w`` from ``j``;
        and where it starts in the output (positions, ``_at``, count from there)."""
        push = self._push
        assert push is not None
        self._push = None
        base += j - len(push)
        self._pos = base
        return push + w[j:], base

    def _at(self, i: int) -> int:
        return self._pos + i

    def _m_harmony(self, w: str, i: int, final: bool) -> int:
        """The four Harmony modes: ``harmony.Harmony`` reads them and says which mode follows."""
        assert self._harmony is not None
        j, self._mode = self._harmony.handle(self._mode, w, i, final)
        return j

    # -- content, reasoning ----------------------------------------------------------------------
    def _m_content(self, w: str, i: int, final: bool) -> int:
        out = self._out
        if self._at_start and not (out.reasoning or out.index):
            k = skip_ws(w, i)
            if k == len(w) and not final:
                out.write_content(w[i:k], self._at(i))
                return k
            m0 = self._start_ms.match_at(w, k, final) if k < len(w) else None
            if m0 is True and not final:
                out.write_content(w[i:k], self._at(i))
                return k
            if isinstance(m0, Match) and m0.kind is Kind.strip:
                # a stripped marker writes nothing: the output has still not started
                out.write_content(w[i:k], self._at(i))
                return m0.end
            self._at_start = False
            if isinstance(m0, Match):
                out.write_content(w[i:k], self._at(i))
                return self._take(_ON_CONTENT[m0.kind], m0)
        self._at_start = False
        m, safe = self._content_ms.scan(w, i, final)
        if m is None:
            out.write_content(w[i:safe], self._at(i))
            return safe
        out.write_content(w[i:m.start], self._at(i))
        return self._take(_ON_CONTENT[m.kind], m)

    def _take(self, step: Step, m: Match) -> int:
        """Do what the table says a marker does: the step's act, then its next mode; the index the
        next mode reads on from (after the marker, or at it if the next mode reads it again)."""
        act = step.act
        if act is not _NONE:
            if act is Act.open_reasoning:  # joined to the block before it
                r = self.profile.reasoning
                if r is not None and r.join and self._out.reasoning and self._r_blocks:
                    self._out.write_reasoning(r.join)
                self._r_blocks += 1
            elif act is Act.region:
                self._enter_region(m.kind, m)
            elif act is Act.header:
                self._pending.take_header()  # a new header starts
            elif act is Act.prompt_block:
                self._flush_held(as_reasoning=True)
                self._r_blocks += 1
            elif act is Act.held_content:
                self._flush_held(as_reasoning=False)
            elif act is Act.held_reasoning:
                self._flush_held(as_reasoning=True)
            else:  # pragma: no cover - the handlers decide the other acts themselves
                raise AssertionError(act)
        self._mode = step.then
        if step.then is WHOLE:
            self._call_at = m  # (the whole state reads on from this marker: no second search)
        return m.end if step.eat else m.start

    def _m_undecided(self, w: str, i: int, final: bool) -> int:
        m, safe = self._c.undecided.scan(w, i, final)
        if m is None:
            self._pending.hold(w[i:safe])
            if final:
                self._end_step(AT_END[UNDECIDED])
            return safe
        self._pending.hold(w[i:m.start])
        return self._take(_ON_UNDECIDED[m.kind], m)

    def _flush_held(self, as_reasoning: bool) -> None:
        text = self._pending.take_held()
        if as_reasoning:
            self._out.write_reasoning(text)
        else:
            self._out.write_content(text, self._pos)

    def _m_reasoning(self, w: str, i: int, final: bool) -> int:
        pol = self.policy.call_in_reasoning
        ms = self._c.reasoning_closed_only if pol == "reasoning" else self._c.reasoning
        m, safe = ms.scan(w, i, final)
        if m is None:
            self._out.write_reasoning(w[i:safe])
            return safe
        self._out.write_reasoning(w[i:m.start])
        step = _ON_REASONING[m.kind]
        if step.act is not Act.call_in_reasoning:
            return self._take(step, m)
        # a tool-call marker inside an open reasoning block
        if pol == "raise":
            self._out.issue(IssueCode.call_in_reasoning, "tool-call marker inside reasoning", self._at(m.start))
        if pol == "call":  # the step's alternative: the marker ends the block and is read again
            self._out.issue(IssueCode.call_in_reasoning, "tool-call marker ended the reasoning block",
                            self._at(m.start))
            self._mode = CONTENT
            return m.start
        self._mode = step.then
        self._pending.take_held()  # (nothing is held in reasoning)
        self._pending.hold(m.marker)
        return m.end

    def _m_defer(self, w: str, i: int, final: bool) -> int:
        m, safe = self._c.defer.scan(w, i, final)
        if m is None:
            self._pending.hold(w[i:safe])
            return safe
        self._pending.hold(w[i:m.start])
        # the block closed: what looked like a call was part of the reasoning
        return self._take(_ON_DEFER[m.kind], m)

    def _end_step(self, step: Step) -> str | None:
        """An end-of-stream rule (``AT_END``) of the mode the text ended in; may return text to read
        again."""
        act = step.act
        if act is Act.reread_held:
            text = self._pending.take_held()
            self._mode = step.then
            self._out.issue(IssueCode.call_in_reasoning, "the reasoning block never closed; the tool call "
                            "in it ended it", self._pos)
            return text
        if act is Act.unclosed:
            if not self._unclosed_reported:
                self._unclosed_reported = True
                self._out.truncated = True
                self._out.issue(IssueCode.unclosed_reasoning, "the output ended inside a reasoning block",
                                self._pos)
            return None
        if act is Act.held_content:
            self._flush_held(as_reasoning=False)
        elif act is Act.need_call:  # pragma: no cover - the region handlers finish at final
            self._region = None
        self._mode = step.then
        return None

    # -- a call marker in content: the whole call at once, or the region --------------------------
    def _m_whole(self, w: str, i: int, final: bool) -> int:
        """At a call marker found in content (``Mode.whole``): a call whose JSON body and end
        marker are in hand is decoded in one step (``_whole_call``); a short one not complete yet
        is held whole (the loop keeps it as the carry); anything else is the region's."""
        m = self._call_at
        if m.start != i:  # held last time: the carry starts with the marker
            m = self._c.at_start_of_carry[m.marker]
        j = self._whole_call(m, w, final) if self._c.whole_calls else None
        if j is not None:
            return j
        self._enter_region(Kind.call, m)
        held = self._held
        if held is not None:  # announced while it was held: the region streams it on
            self._held = None
            rg = self._region
            assert rg is not None
            rg.cs = held
        self._mode = REGION
        return m.end

    def _whole_call(self, m: Match, w: str, final: bool) -> int | None:
        """A call whose marker, JSON body and end marker are all in ``w``: decoded in one step.

        The region path (``_enter_region`` .. ``_region_after``) for the one case that is most of
        a tool-calling workload, taken only where that path's every decision is already made by
        the text in hand: the body is one complete JSON object that is a call (the C decoder
        finds its end where the body's own fast path does, and the same extraction reads it), and
        the end marker follows it (without one, the region's after state reads what follows). It
        emits exactly what the region path would emit, in the same chunk. A body not complete
        yet is held, marker and all (returns ``m.start``: the loop keeps it as the carry), while
        it is short (``_STREAM_AFTER`` characters after the marker), its name announced once its
        head is complete (streaming) and its arguments sent whole when it ends, as for a short
        body: a short call costs one decode however it is chunked. Anything else (None: a body
        that is not a call, an array of calls, a long body, the end of the stream) is the
        region's, which reads the same text, a call announced while held staying announced.
        ``tests/test_fast_paths.py`` feeds both paths the same inputs and compares the events; the
        fuzzer compares chunkings.
        """
        n = len(w)
        k = skip_ws(w, m.end)
        hold = not final and n - m.end <= _STREAM_AFTER
        if k == n:
            return m.start if hold else None
        # one object (an array of calls goes to the region path, which streams it call by call)
        if w[k] != "{" or self._c.array == "require":
            return None
        if w.find("}", k) < 0:
            return self._hold(m, w, k) if hold else None
        try:
            value, j = _DECODE(w, k)
        except ValueError:  # not complete yet, or not JSON: the region path tells which
            return self._hold(m, w, k) if hold else None
        body = self._decoder
        if body is None:
            t = self.profile.tools
            assert t is not None
            made = make_body(t.codec, self._c.body_stops, self._schemas, streaming=self._stream)
            assert isinstance(made, JsonBody)
            body = self._decoder = made
        calls = body.calls_from(value, w, k, j)
        if not calls:
            return None
        # a complete call: the region path announces it here too, whatever follows
        pos = self._pos + j
        out = self._out
        for c in calls:
            held = self._held
            if held is not None:  # announced while it was held: the rest, as the region path ends it
                self._held = None
                out.end_streamed(held, c, pos, None)
            else:
                out.emit_call(c, pos)
        e = skip_ws(w, j)
        close = self._c.plain_close
        self._mode = CONTENT
        if close and w.startswith(close, e):  # what ``after.match_at`` finds there, without a Match
            return e + len(close)
        r = self._c.after.match_at(w, e, final) if e < n else None
        if isinstance(r, Match) and r.kind is Kind.c_close:
            return r.end
        # not closed in this text: the region's after state reads what follows, as it would have
        self._region = _Region(Kind.call, m.marker, state=AFTER, raw_has_marker=False, call_open_used=True,
                               emitted=len(calls), start=self._at(m.start))
        self._mode = REGION
        return j

    def _hold(self, m: Match, w: str, k: int) -> int:
        """Keep the text from ``m`` for the next chunk: nothing in it is decided yet, except
        perhaps the call's name (streaming: announced once the head is all there, as the body's
        short phase does: ``codecs.head_name``)."""
        if self._stream and self._held is None and w.find("{", k + 1) > k:
            t = self.profile.tools
            assert t is not None
            name = head_name(t.codec, w, k)
            if name:
                cs = CallStream()
                self._out.announce(cs, name, None)
                if cs.idx is not None:  # (an unknown tool the policy drops is never announced)
                    self._held = cs
        return m.start

    # -- tool-call regions ------------------------------------------------------------------------
    def _enter_region(self, kind: Kind, m: Match) -> None:
        t = self.profile.tools
        assert t is not None
        if kind is Kind.look:
            self._region = _Region(Kind.look, "", state=CALL, raw_has_marker=False, start=self._at(m.start),
                                   known_only=m.marker in t.lookahead_known_only)
            return
        rg = _Region(kind, m.marker, state=BETWEEN if kind is Kind.section else CALL, start=self._at(m.start))
        rg.raw.append(m.marker)
        rg.call_open_used = kind is Kind.call
        self._region = rg

    def _m_region(self, w: str, i: int, final: bool) -> int:
        rg = self._region
        assert rg is not None
        if rg.state is BETWEEN:
            return self._region_between(rg, w, i, final)
        if rg.state is CALL:
            return self._region_call(rg, w, i, final)
        return self._region_after(rg, w, i, final)

    def _skip_ws(self, rg: _Region, w: str, i: int) -> int:
        k = skip_ws(w, i)
        if k > i:
            rg.raw.append(w[i:k])
        return k

    def _end_region(self) -> None:
        self._region = None
        self._mode = CONTENT

    def _region_between(self, rg: _Region, w: str, i: int, final: bool) -> int:
        t = self.profile.tools
        assert t is not None
        k = self._skip_ws(rg, w, i)
        if k == len(w):
            if final:
                if rg.via is Kind.section and t.section_close and rg.emitted:
                    self._out.issue(IssueCode.missing_end_marker, "tool-call section was not closed", self._at(k),
                                    "truncated_call")
                if not rg.emitted and rg.via is Kind.section:
                    return self._reject(rg, w, k, truncated=True, reason="tool-call section is empty")
                self._end_region()
            return k
        r = self._c.between.match_at(w, k, final)
        if r is True and not final:
            return k
        if isinstance(r, Match):
            step = _IN_BETWEEN[r.kind]
            act = step.act
            if step.eat:
                rg.raw.append(r.marker)
            if act is Act.need_call and not rg.emitted:
                if r.kind is Kind.eot:
                    return self._reject(rg, w, k, truncated=True, reason="tool-call marker at the end of the turn")
                return self._reject(rg, w, r.end, truncated=False, reason="tool-call section has no call")
            then = step.then
            if then is CONTENT:  # the turn (or a new section) begins, or the section ends
                self._end_region()
            elif isinstance(then, Spot):
                rg.state = then
                rg.start = self._at(k)
                if act is Act.call_open:
                    rg.call_open_used = True
                elif act is Act.look:
                    rg.known_only = r.marker in t.lookahead_known_only
            return r.end if step.eat else k
        kind = t.codec.kind
        if t.call_open and not (rg.via is Kind.section and kind in ("json", "pythonic")
                                and w[k] in "{["):
            if rg.via is Kind.section and t.section_close:
                return self._reject(rg, w, k, truncated=False, reason="text inside a tool-call section")
            self._end_region()
            return k
        if kind in ("json", "pythonic") and w[k] not in "{[":
            if rg.emitted:
                self._end_region()
                return k
            return self._reject(rg, w, k, truncated=False, reason="tool-call marker not followed by a call")
        rg.state = CALL
        rg.start = self._at(k)
        return k

    def _region_call(self, rg: _Region, w: str, i: int, final: bool) -> int:
        t = self.profile.tools
        assert t is not None
        if rg.body is None:
            k = skip_ws(w, i)
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
                                streaming=self._stream and rg.via is not Kind.look)
        body = rg.body
        st, j = body.feed(w, i, final)
        if j > i:
            rg.raw.append(w[i:j])
        cs = rg.cs
        if body.streaming:
            self._out.stream(cs, body, self._at(j), self._at)
        if st == "more":
            return j
        if st == "reject":
            if cs.idx is not None:
                # an announced call whose body turned out cut off or malformed: it stays a call
                self._out.end_started(cs, body, body.call_name or "", self._at(j))
                return self._call_broken(rg, body.truncated, j)
            if cs.ended:
                # a list that ended calls while streaming, then broke: those calls stay (nothing is
                # taken back); the rest of its text is dropped, with an issue
                if body.truncated:
                    self._out.truncated = True  # finish stays "tool_calls": complete calls, then cut text
                self._out.issue(IssueCode.truncated_call if body.truncated else IssueCode.invalid_call,
                                f"{body.reason}; the {cs.ended} call(s) before it stay, the rest was dropped",
                                self._at(j))
                cs.ended = 0
                return self._call_broken(rg, body.truncated, j)
            return self._reject(rg, w, j, truncated=body.truncated, reason=body.reason)
        self._out.emit_calls(cs, body.calls, body, self._at(j), self._at)
        rg.emitted += max(1, len(body.calls))
        rg.raw = []
        rg.raw_has_marker = False
        rg.body = None
        rg.state = AFTER
        return j

    def _call_broken(self, rg: _Region, truncated: bool, j: int) -> int:
        """The region ends at a call that broke after it was announced; the rest of a malformed
        call's text is the call's (its end marker too), never content."""
        self._end_region()
        if not truncated:
            self._skip_rest(rg)
        return j

    def _region_after(self, rg: _Region, w: str, i: int, final: bool) -> int:
        t = self.profile.tools
        assert t is not None
        k = self._skip_ws(rg, w, i)
        if k == len(w) or (final and w[k:] in self._c.after.prefixes
                           and not isinstance(self._c.after.match_at(w, k, final), Match)):
            # (the output ended here, or inside the end marker: a cut-off marker is no content; a
            # whole end marker that also begins a longer one, '@@' of '@@call', is that end marker)
            if final:
                if (rg.call_open_used and t.call_close) or (rg.via is Kind.section and t.section_close):
                    self._out.issue(IssueCode.missing_end_marker, "tool call was not closed; recovered it at "
                                    "the end of the output", self._at(k), "truncated_call")
                self._end_region()
                return len(w)
            return k
        r = self._c.after.match_at(w, k, final)
        if r is True and not final:
            return k
        if isinstance(r, Match):
            step = _IN_AFTER[r.kind]
            act = step.act
            then = step.then
            if act is Act.check_closed:
                if rg.call_open_used and t.call_close:
                    where = "the section end" if r.kind is Kind.s_close else "the end of the turn"
                    self._out.issue(IssueCode.missing_end_marker, f"tool call was not closed before {where}",
                                    self._at(k))
            elif act is Act.close_call or act is Act.next_call:
                if act is Act.next_call and t.call_close:
                    self._out.issue(IssueCode.missing_end_marker, "tool call was not closed before the next one",
                                    self._at(k))
                if rg.via is not Kind.section:
                    then = CONTENT  # the step's alternative: a call outside a section is the region
                elif act is Act.close_call:
                    rg.raw = []
            if then is CONTENT:
                self._end_region()
            elif isinstance(then, Spot):
                rg.state = then
                rg.start = self._at(k)
                if act is Act.look:  # inside an open call block the marker is no lookalike
                    rg.known_only = r.marker in t.lookahead_known_only and not rg.call_open_used
            return r.end if step.eat else k
        if rg.via is Kind.section:
            rg.state = BETWEEN
            return k
        if rg.call_open_used and t.call_close:
            self._out.issue(IssueCode.missing_end_marker, "tool call was not closed; text follows it", self._at(k))
        self._end_region()
        return k

    def _skip_rest(self, rg: _Region) -> None:
        """Read on, dropping text, past the end marker of a call (or of its section) whose text
        cannot be used; nothing to skip to when the dialect has no end marker."""
        t = self.profile.tools
        if t is None or rg.via not in (Kind.section, Kind.call):
            return
        closes = t.section_close if rg.via is Kind.section else t.call_close or t.section_close
        if closes:
            self._mode = SKIP
            self._skip_ms = self._c.skip_section if rg.via is Kind.section else self._c.skip_call

    def _reject(self, rg: _Region, w: str, j: int, truncated: bool, reason: str) -> int:
        """A region whose text is no call: recorded at the call's start, then its text is content
        (read again after its marker) or dropped, per the profile's recovery rule and the policy."""
        t = self.profile.tools
        assert t is not None
        out = self._out
        recovery: str = t.on_truncated if truncated else t.on_invalid
        if truncated:
            out.truncated = True
            if self.policy.truncated_call == "drop":
                recovery = "drop"
        if recovery == "content_if_no_calls":
            recovery = "content" if not out.calls else "drop"
        out.issue(IssueCode.truncated_call if truncated else IssueCode.invalid_call,
                  f"{reason}; its text was {'dropped' if recovery == 'drop' else 'kept as content'}", rg.start)
        raw = "".join(rg.raw)
        self._end_region()
        if rg.via is Kind.look:
            if truncated and recovery == "drop":
                return len(w)  # (at the end: the rest of the output is the cut-off call)
            # the lookahead marker was not a call: its first character is content, read on after it
            # (the next reading starts past it, so the same text is never a lookahead twice)
            if not raw:
                out.write_content(w[j:j + 1], self._at(j))
                return j + 1
            out.write_content(raw[0], rg.start)
            if len(raw) > 1:
                self._push = raw[1:]
            return j
        if recovery == "drop":
            if not truncated:
                self._skip_rest(rg)
            return j
        if rg.raw_has_marker and rg.marker and raw.startswith(rg.marker):
            if recovery == "content":
                out.write_content(rg.marker, rg.start)
            raw = raw[len(rg.marker):]
        if raw:
            self._push = raw
        return j

    def _m_skip(self, w: str, i: int, final: bool) -> int:
        m, safe = self._skip_ms.scan(w, i, final)
        if m is None:
            if final:
                self._end_step(AT_END[SKIP])
            return safe
        return self._take(_ON_SKIP[m.kind], m)
