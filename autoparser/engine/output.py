"""What a parser has written, and the one place anything gets written: text, issues, calls.

Rules of this file:

* Every event a parser emits is made here (``ContentDelta``, ``ReasoningDelta`` and the three call
  events), and everything ``result()`` aggregates is kept here. The machine (``machine.Parser``)
  and Harmony (``harmony.Harmony``) decide *what* the text is; this module writes it.
* An issue is recorded with its ``IssueCode`` and a position in the output that depends on the
  text only (never on where chunks were cut). Whether it raises is the policy's: the field that
  governs its situation (``issues.GOVERNED_BY``, or the one the caller names when the situation
  decides it) set to ``"raise"`` makes it a ``ParseError`` right after it is recorded.
* A call is written one of two ways: whole (``emit_call``: start, arguments, end together), or
  streamed (``announce`` once its name is certain, ``stream`` argument text as it becomes
  certain, then ``end_streamed`` with its complete parse or ``end_started`` if its text turned out
  cut off or malformed). A streamed call's state is a ``CallStream``; a call once announced
  stays a call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, Literal

from ..errors import ParseError
from ..events import CallStatus, ContentDelta, Event, ReasoningDelta, ToolCallArgsDelta, ToolCallEnd, ToolCallStart
from ..policy import Policy
from ..result import Issue, Result, ToolCall
from . import values
from .codecs import ArgSource, Body, ParsedCall
from .issues import GOVERNED_BY, IssueCode

__all__ = ["CallStream", "Output", "dumps"]

_WS = " \t\r\n"
#: ``json.dumps(value, ensure_ascii=False)`` without building an encoder per call: the C encoder
#: made once (no circular-reference check: arguments are decoded JSON or codec output, never cyclic)
_C_ENCODE = c_make_encoder(None, None, encode_basestring, None, ": ", ", ", False, False, True) \
    if c_make_encoder is not None else None


def dumps(value: object) -> str:
    if _C_ENCODE is None:  # pragma: no cover - CPython always has the C encoder
        return json.dumps(value, ensure_ascii=False)
    return "".join(_C_ENCODE(value, 0))


@dataclass(slots=True)
class CallStream:
    """The call being streamed from one body: its index once announced, the text sent for it."""

    idx: int | None = None
    id: str = ""
    known: bool = True
    off: bool = False            # never announced: a tool the policy drops or raises on
    sent: list[str] = field(default_factory=list)
    ended: int = 0               # calls of the current body (a list) already ended while streaming


class Output:
    """Events of the current ``feed()``, the text and calls so far, the issues."""

    __slots__ = ("_after_call", "_have_tools", "_passes", "_policy", "_schemas", "calls", "content", "events",
                 "index", "issues", "reasoning", "truncated")

    def __init__(self, policy: Policy, schemas: Mapping[str, Any], have_tools: bool) -> None:
        self._policy = policy
        self._schemas = schemas
        self._have_tools = have_tools
        # per tool, the schema test of the common case (valid arguments), made when the tool's
        # first call reports its unusable-schema notes (once per tool)
        self._passes: dict[str, Callable[[dict[str, Any]], object]] = {}
        self.events: list[Event] = []
        self.reasoning: list[str] = []
        self.content: list[str] = []
        # (name, arguments, id, status, known) of each call: made into ToolCall by result() only
        self.calls: list[tuple[str, dict[str, Any], str, CallStatus, bool]] = []
        self.issues: list[Issue] = []
        self.index = 0           # calls started
        self.truncated = False   # the output ended inside something (finish "length")
        self._after_call = False  # visible text after a call was reported

    def result(self, streaming: bool) -> Result:
        finish: Literal["stop", "tool_calls", "length"] = "stop"
        if streaming and any(c[3] == "truncated" for c in self.calls):
            finish = "length"  # the output was cut inside a call that was already announced
        elif self.calls:
            finish = "tool_calls"
        elif self.truncated:
            finish = "length"
        return Result("".join(self.reasoning), "".join(self.content), [ToolCall(*c) for c in self.calls],
                      list(self.issues), finish)

    # -- text and issues -------------------------------------------------------------------------
    def write_content(self, text: str, pos: int) -> None:
        """Content; ``pos``: where ``text`` starts in the output (locates a text-after-call issue:
        with ``text_after_call`` ``drop`` or ``raise``, once, at the first visible character)."""
        if not text:
            return
        if self.calls:
            pol = self._policy.text_after_call
            if pol != "content" and not self._after_call and text.strip(_WS):
                # (kept as content it is no repair and no loss: nothing to report)
                self._after_call = True
                lead = len(text) - len(text.lstrip(_WS))
                self.issue(IssueCode.text_after_call, "visible text after a tool call" + (
                    "; dropped" if pol == "drop" else ""), pos + lead)
            if pol == "drop":  # everything after a call, whitespace too: the same on every chunking
                return
        self.content.append(text)
        self.events.append(ContentDelta(text))

    def write_reasoning(self, text: str) -> None:
        if text:
            self.reasoning.append(text)
            self.events.append(ReasoningDelta(text))

    def issue(self, code: IssueCode, message: str, pos: int, governed_by: str = "") -> None:
        """Record an issue; raise it when the policy field that governs it says ``"raise"``."""
        self.issues.append(Issue(code, message, pos))
        if getattr(self._policy, governed_by or GOVERNED_BY[code]) == "raise":
            raise ParseError(code.value, message, pos)

    def known(self, name: str) -> bool:
        return not self._have_tools or name in self._schemas

    # -- calls written whole ------------------------------------------------------------------------
    def emit_call(self, c: ParsedCall, pos: int) -> None:
        """A complete call: start, arguments and end together (``pos`` locates its issues)."""
        known = self.known(c.name)
        if not known:
            pol = self._policy.unknown_tool
            if pol == "drop":
                self.issue(IssueCode.unknown_tool, f"dropped a call to unknown tool {c.name!r}", pos)
                return
            self.issue(IssueCode.unknown_tool, f"call to a tool not in the request: {c.name!r}", pos)
        idx = self.index
        self.index += 1
        cid = c.id or f"call_{idx}"
        events = self.events
        events.append(ToolCallStart(idx, cid, c.name, known))
        for code, msg in c.issues:
            self.issue(code, f"{c.name}: {msg}", pos)
        status: CallStatus = c.status
        if self._have_tools and known:
            status = self._check_schema(c.name, c.arguments, status, pos)
        events.append(ToolCallArgsDelta(idx, dumps(c.arguments)))
        events.append(ToolCallEnd(idx, c.arguments, status))
        self.calls.append((c.name, c.arguments, cid, status, known))

    def _check_schema(self, name: str, arguments: dict[str, Any], status: CallStatus, pos: int) -> CallStatus:
        """Validate a known tool's arguments (streamed or whole: one check for both paths); a schema
        the validator cannot use is reported once per tool and never blocks the call."""
        quick = self._passes.get(name)
        schema = self._schemas.get(name)
        if quick is None:
            for note in values.schema_notes(schema):
                self.issue(IssueCode.schema_unusable, f"{name}: {note}", pos)
            quick = self._passes[name] = values.quick_check(schema)
        try:
            quick(arguments)
        except Exception:  # a problem, or a check that could not tell: the full check decides
            pass
        else:
            return status
        problems = values.validate_arguments(arguments, schema)
        if problems:
            self.issue(IssueCode.schema_mismatch,
                       f"{name}: arguments do not match the tool schema: {'; '.join(problems)}", pos)
            if status == "ok":
                return "invalid"
        return status

    # -- calls streamed -----------------------------------------------------------------------------
    def announce(self, cs: CallStream, name: str, call_id: str | None) -> None:
        """Start the call ``cs`` streams, unless it is to a tool the policy drops or raises on (then
        it is decided at its end, as without streaming)."""
        known = self.known(name)
        if not known and self._policy.unknown_tool != "forward":
            cs.off = True
            return
        idx = self.index
        self.index += 1
        cs.idx = idx
        cs.id = call_id or f"call_{idx}"
        cs.known = known
        cs.sent = []
        self.events.append(ToolCallStart(idx, cs.id, name, known))

    def stream(self, cs: CallStream, body: ArgSource, pos: int, at: Callable[[int], int]) -> None:
        """Announce the call once its name is certain, then send what its arguments made certain.
        A list body ends each of its calls as soon as that call's text has closed (``at`` turns
        the index where it ended into a position; ``pos`` is used when the body does not say)."""
        while True:
            if cs.idx is None and not cs.off and body.call_name is not None:
                self.announce(cs, body.call_name, body.call_id)
            if cs.idx is not None:
                text = body.take_args()
                if text:
                    cs.sent.append(text)
                    self.events.append(ToolCallArgsDelta(cs.idx, text))
            ended = body.pop_ended() if isinstance(body, Body) else None
            if ended is None:
                return
            cs.ended += 1
            where = at(ended.end) if ended.end >= 0 else pos
            if cs.idx is not None:
                self.end_streamed(cs, ended, where, None)
            else:  # never announced (an unknown tool the policy drops): as without streaming
                self.emit_call(ended, where)
            cs.off = False

    def _finish_stream(self, cs: CallStream, body: ArgSource | None,
                       parsed: dict[str, Any] | None = None) -> dict[str, object] | None:
        """Send the rest of a streamed call's arguments; their value (None if nothing was sent).

        ``parsed``: the complete body's arguments. When what was sent is a prefix of their JSON
        (the transcoder stopped at text only the complete parse understands, such as a Python
        comment), the rest of that JSON is sent instead of closing what was sent."""
        assert cs.idx is not None
        rest = body.take_args() if body is not None else ""
        if body is not None:
            sent = "".join(cs.sent) + rest if parsed is not None and (rest or cs.sent) else ""
            full = dumps(parsed) if sent else ""
            rest += full[len(sent):] if sent and full.startswith(sent) else body.args_closing()
        if rest:
            cs.sent.append(rest)
            self.events.append(ToolCallArgsDelta(cs.idx, rest))
        if not cs.sent:
            return None
        value = json.loads("".join(cs.sent))
        assert isinstance(value, dict)
        return value

    def end_streamed(self, cs: CallStream, c: ParsedCall, pos: int, src: ArgSource | None) -> None:
        """The complete body of a call that was announced early: send the rest, then its end."""
        idx = cs.idx
        assert idx is not None
        args = self._finish_stream(cs, src, c.arguments)
        cs.idx = None
        status: CallStatus = c.status
        if not cs.known:
            self.issue(IssueCode.unknown_tool, f"call to a tool not in the request: {c.name!r}", pos)
        for code, msg in c.issues:
            self.issue(code, f"{c.name}: {msg}", pos)
        if args is None:  # nothing could stream (e.g. arguments written as a JSON string)
            args = c.arguments
            self.events.append(ToolCallArgsDelta(idx, dumps(args)))
        elif args != c.arguments:
            if status == "ok":
                status = "repaired"
            self.issue(IssueCode.stream_mismatch, f"{c.name}: the streamed arguments differ from the parsed "
                       "ones; kept what was sent", pos)
        if self._have_tools and cs.known:
            status = self._check_schema(c.name, args, status, pos)
        self.events.append(ToolCallEnd(idx, args, status))
        self.calls.append((c.name, args, cs.id, status, cs.known))

    def end_started(self, cs: CallStream, body: ArgSource, name: str, pos: int) -> None:
        """An announced call whose body turned out cut off or malformed: it stays a call, with the
        arguments that were complete, status ``truncated`` or ``invalid``."""
        truncated = body.truncated
        if truncated:
            self.truncated = True
        self.issue(IssueCode.truncated_call if truncated else IssueCode.invalid_call,
                   f"{name}: {body.reason}; kept the arguments that were complete", pos)
        args = self._finish_stream(cs, body)
        assert cs.idx is not None
        if args is None:
            args = {}
            self.events.append(ToolCallArgsDelta(cs.idx, "{}"))
        status: CallStatus = "truncated" if truncated else "invalid"
        if not cs.known:
            self.issue(IssueCode.unknown_tool, f"call to a tool not in the request: {name!r}", pos)
        self.events.append(ToolCallEnd(cs.idx, args, status))
        self.calls.append((name, args, cs.id, status, cs.known))
        cs.idx = None

    def emit_calls(self, cs: CallStream, calls: list[ParsedCall], src: Body | None, pos: int,
                   at: Callable[[int], int]) -> None:
        """The parsed calls of a complete body: those ended while streaming (``cs.ended`` of them,
        as they were then) only add the issues the complete parse found; the streamed one ends
        (the rest of its arguments from ``src``); the rest are written whole. ``pos`` (where the
        body ended) locates their issues."""
        done = cs.ended
        ended = src.ended if src is not None else []
        for n, c in enumerate(calls):
            if n < done:
                for code, msg in c.issues:
                    if n >= len(ended) or (code, msg) not in ended[n].issues:
                        self.issue(code, f"{c.name}: {msg}", pos)
            elif n == done and cs.idx is not None:
                self.end_streamed(cs, c, pos, src)
            else:
                self.emit_call(c, at(c.end) if c.end >= 0 else pos)
        cs.ended = 0
        cs.off = False
