"""Call-body codecs: the only dialect-shaped code, and all of it parameterised by the profile.

A codec parses the text of one call (or one JSON array of calls) that the machine has found
between tool markers. It is fed the machine's working text and answers, without ever rescanning
text it has consumed:

* ``more``   everything before the returned index is consumed; feed the rest again later;
* ``done``   the body ended just before the returned index; ``calls`` holds what it said;
* ``reject`` this is not a call (``truncated`` tells whether the stream merely ended too soon).

Name/argument extraction happens once per call, on the complete body, so the cost is linear.
With ``streaming`` on, a codec also reports the call's name once it is certain (``call_name``)
and argument JSON text no later text can change (``take_args``; ``args_closing`` closes it):
JSON bodies through ``argstream.JsonArgStream``, tagged bodies parameter by parameter. The
machine announces and streams from these; the complete body's parse still decides the end.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, Protocol

from ..profile import CodecSpec
from ..wire import is_name, json_types, normalized
from . import values
from .argstream import JsonArgStream
from .callstream import ArgTranscoder, CallList
from .issues import IssueCode
from .literalstream import PythonicCallStream, RelaxedArgStream
from .markers import WS, Kind, MarkerSet, Match, skip_ws
from .scanner import BalancedScanner

__all__ = ["XML_QUOTES", "ArgSource", "Body", "JsonBody", "ParsedCall", "head_name", "make_body"]

Status = Literal["more", "done", "reject"]
_MAX_HEADER = 512
#: whitespace in a pattern: the engine's whitespace (``WS``), never Unicode's wider ``\s``, so a
#: regex and the character-wise partial match (``_lit_partial``) agree
_WS_RUN = "[ \t\r\n]*"
_MAX_KEY = 256
#: characters of a JSON call body scanned before its arguments start streaming (short calls are
#: sent whole when complete). The shortest head, {"name":"f","arguments":, is 24 characters, so a
#: long argument's first delta comes within 80 - 24 = 56 characters (plus one chunk) of its start.
_STREAM_AFTER = 80


@dataclass
class ParsedCall:
    name: str
    arguments: dict[str, Any]
    id: str | None = None
    status: Literal["ok", "repaired", "truncated"] = "ok"
    issues: list[tuple[IssueCode, str]] = field(default_factory=list)
    #: streaming, a call of a list: where its own text ended (an index into the text of the feed
    #: that parsed it), so that its issues are located the same for every chunking; -1 otherwise
    end: int = -1


class ArgSource(Protocol):
    """What the machine streams a call from: its certain name, then certain argument text."""

    call_name: str | None
    call_id: str | None
    truncated: bool
    reason: str

    def take_args(self) -> str: ...

    def args_closing(self) -> str: ...


class Body:
    """Base class: subclasses implement ``feed`` and fill ``calls``."""

    def __init__(self, spec: CodecSpec, stops: MarkerSet, schemas: Mapping[str, Mapping[str, Any]],
                 known_only: bool = False) -> None:
        self.spec = spec
        self.stops = stops
        self.schemas = schemas
        self.known_only = known_only
        self.calls: list[ParsedCall] = []
        self.truncated = False
        self.reason = ""
        # argument streaming (make_body turns it on): the call's name once it is certain, and
        # JSON text of its arguments that no later text can change
        self.streaming = False
        self.call_name: str | None = None
        self.call_id: str | None = None
        # a body holding a list of calls streams them one by one: those it ended already
        self.ended: list[ParsedCall] = []
        self.calllist: CallList[ParsedCall] | None = None
        # a codec that writes the argument text itself (tagged, pattern): what is not taken yet,
        # whether a string value is open in it, whether it is closed
        self._frags: list[str] = []
        self._str_open = False
        self._args_done = False
        self._first = True          # no member written yet

    def take_args(self) -> str:
        """Argument JSON text that became certain since the last call (streaming codecs only)."""
        if self.calllist is not None:
            head = self.calllist.head
            return head.stream.take() if head is not None else ""
        out = "".join(self._frags)
        self._frags = []
        return out

    def pop_ended(self) -> ParsedCall | None:
        """A list body: the streamed call (``call_name``) once its own text has closed; the next
        call of the list becomes the streamed one. None while it has not (and for one-call bodies)."""
        if self.calllist is None:
            return None
        popped = self.calllist.pop_ended()
        if popped is None:
            return None
        call, end = popped
        call.end = end
        self.ended.append(call)
        self._sync_head()
        return call

    def _sync_head(self) -> None:
        """``call_name``/``call_id`` follow the list's oldest call not yet ended, once it is certain."""
        assert self.calllist is not None
        head = self.calllist.head
        if head is not None and head.ready:
            self.call_name, self.call_id = head.stream.name, head.stream.call_id
        else:
            self.call_name = self.call_id = None

    def _listed_calls(self) -> list[ParsedCall] | None:
        """A list body that streamed to its end: its calls as parsed one by one while streaming
        (what parsing the whole list gives, without paying for it twice)."""
        cl = self.calllist
        if cl is None or not cl.closed_at_end:
            return None
        rest = [slot.parsed for slot in cl.slots]
        if any(call is None for call in rest):
            return None
        return self.ended + [call for call in rest if call is not None]

    def args_closing(self) -> str:
        """What closes the argument text taken so far into valid JSON."""
        if self.calllist is not None:
            head = self.calllist.head
            return head.stream.closing() if head is not None else ""
        if self.call_name is None or self._args_done:
            return ""
        return ('"' if self._str_open else "") + "}"

    def feed(self, text: str, pos: int, final: bool) -> tuple[Status, int]:  # pragma: no cover
        raise NotImplementedError

    def _reject(self, reason: str, pos: int, truncated: bool = False) -> tuple[Status, int]:
        self.reason = reason
        self.truncated = truncated
        return "reject", pos

    def _header_step(self, header: _Header, text: str, pos: int, final: bool,
                     what: str) -> tuple[Status | None, int, str]:
        """Feed a header; (None, end, slot) once it is complete, else the status to return."""
        r = header.feed(text, pos, final)
        if r is None:
            return "more", len(text), ""
        kind, slot, j = r
        if kind == "more":
            return "more", j, ""
        if kind == "bad" or not slot:
            st, j = self._reject(what, pos, truncated=final and kind != "bad" and not slot)
            return st, j, ""
        return None, j, slot

    def _member(self, key: str) -> str:
        """The text that opens the next member of the streamed arguments (``_frags``)."""
        out = ("" if self._first else ", ") + json.dumps(key, ensure_ascii=False) + ": "
        self._first = False
        return out

    def _name_ok(self, name: str) -> bool:
        return bool(name) and (not self.known_only or name in self.schemas)


# -- pattern helpers ---------------------------------------------------------------------------

@lru_cache(maxsize=1024)
def _lit_regex(lit: str) -> str:
    """A literal where whitespace, and the gap between adjacent tags, match any whitespace;
    ``{index}`` (a call's number written in its header) matches digits."""
    if "{index}" in lit:
        return "[0-9]+".join(_lit_regex(part) for part in lit.split("{index}"))
    out: list[str] = []
    for i, part in enumerate(re.split(r"\s+", lit)):
        if i:
            out.append(_WS_RUN)
        pieces = part.split("><")
        out.append((">" + _WS_RUN + "<").join(re.escape(p) for p in pieces))
    return "".join(out)


@lru_cache(maxsize=1024)
def _lit_steps(lit: str) -> tuple[str, ...]:
    """``_lit_regex(lit)`` as steps: a character, ``" "`` (any run of whitespace, maybe none) or
    ``"0"`` (one or more digits): what ``_lit_partial`` walks."""
    if "{index}" in lit:
        parts = lit.split("{index}")
        out: list[str] = []
        for n, part in enumerate(parts):
            if n:
                out.append("0")
            out += _lit_steps(part)
        return tuple(out)
    steps: list[str] = []
    for i, part in enumerate(re.split(r"\s+", lit)):
        if i:
            steps.append(" ")
        for n, piece in enumerate(part.split("><")):
            if n:
                steps += [">", " ", "<"]
            steps += [c for c in piece if c != " "]
    return tuple(steps)


def _lit_partial(lit: str, text: str, pos: int = 0) -> bool:
    """Whether ``text[pos:]`` is a prefix of some text that ``_lit_regex(lit)`` matches (or a
    match that may grow): the chunk-invariant test for "may still become this literal"."""
    steps = _lit_steps(lit)
    states = {0}
    for c in text[pos:]:
        nxt: set[int] = set()
        for k in _closure(steps, states):
            if k == len(steps):
                continue
            step = steps[k]
            if step == " ":
                if c in WS:
                    nxt.add(k)
            elif step == "0":
                if c in "0123456789":
                    nxt.add(k)
                    nxt.add(k + 1)
            elif c == step:
                nxt.add(k + 1)
        if not nxt:
            return False
        states = nxt
    return True


def _closure(steps: tuple[str, ...], states: set[int]) -> set[int]:
    out = set(states)
    for k in sorted(states):
        while k < len(steps) and steps[k] == " ":
            k += 1
            out.add(k)
    return out


@lru_cache(maxsize=1024)
def _lit_compiled(lit: str) -> re.Pattern[str]:
    return re.compile(_lit_regex(lit))


def _lit_last(lit: str, text: str, lo: int, hi: int) -> int:
    """Where the last match of ``_lit_regex(lit)`` inside ``text[lo:hi]`` starts (-1: none)."""
    k = -1
    for m in _lit_compiled(lit).finditer(text, lo, hi):
        k = m.start()
    return k


def _lit_tail(lit: str, text: str, lo: int, hi: int) -> int:
    """The earliest ``k`` in ``[lo, hi)`` where ``text[k:hi]`` may still become ``lit`` (``hi``: none)."""
    if not lit:
        return hi
    first = lit.lstrip(WS)[:1]
    k = text.find(first, max(lo, hi - _MAX_HEADER), hi) if first else -1
    while 0 <= k < hi:
        if _lit_partial(lit, text[k:hi]):
            return k
        k = text.find(first, k + 1, hi)
    return hi


def _split_slot(pattern: str, slot: str) -> tuple[str, str]:
    i = pattern.index(slot)
    return pattern[:i], pattern[i + len(slot):]


def _trim_one(value: str, before: str, after: str) -> str:
    """Strip exactly the whitespace the pattern puts around a value, once each side. Where the
    pattern puts none, a value written on lines of its own (``<k>\nv\n</k>``) is formatting too:
    its first line break is dropped, and its last one with it (only then: ``v\n`` keeps it)."""
    lead = before[len(before.rstrip(WS)):]
    trail = after[: len(after) - len(after.lstrip(WS))]
    own_line = False
    if lead and value.startswith(lead):
        value = value[len(lead):]
    elif value[:1] == "\n":
        value = value[1:]
        own_line = not lead
    if trail and value.endswith(trail):
        value = value[: -len(trail)]
    elif (trail or own_line) and value[-1:] == "\n":
        value = value[:-1]
    return value


#: what may stand before a header's literal: whitespace, and a stray punctuation mark or two that
#: some models write after the call marker (Gemma 4's ``<|tool_call>:call:NAME{...}``)
_STRAY = r"\s*(?:[^\w\s<>\[\]{}()\"'`|\\]{1,2}\s*)?"
_STRAY_RE = re.compile(_STRAY)


@lru_cache(maxsize=256)
def _header_parts(pattern: str, slot: str, ends: str, extra_stops: tuple[str, ...]
                  ) -> tuple[str, re.Pattern[str] | None, re.Pattern[str], MarkerSet]:
    """Compiled pieces of a header pattern, built once per pattern (a header is made per call)."""
    prefix, suffix = _split_slot(pattern, slot)
    lit = prefix.strip(WS)
    pre = re.compile(_STRAY + _lit_regex(lit)) if lit else None
    suf = suffix.strip(WS)
    alts = []
    if suf:
        alts.append("(?P<suf>" + _lit_regex(suf) + ")")
        if suf.endswith(">") and not suf.endswith("/>"):  # an element with no body: <invoke name="f"/>
            alts.append("(?P<selfclose>" + _lit_regex(suf[:-1]) + r"\s*/>)")
    stops = [re.escape(s) for s in sorted(set(extra_stops), key=len, reverse=True) if s]
    if ends:
        stops.append("[" + re.escape(ends) + "]")
    if stops:
        alts.append("(?P<stop>" + "|".join(stops) + ")")
    suf_re = re.compile("|".join(alts)) if alts else re.compile(r"(?P<stop>\n)")
    return lit, pre, suf_re, MarkerSet((m, Kind.stop) for m in extra_stops if m)


def _in_attribute(prefix: str, suffix: str) -> bool:
    """Whether a slot is written as a quoted XML attribute value (``<invoke name="{name}">``; the
    opening quote may end the call marker before the header: ``<|open|>call tool="`` ``{name}"``)."""
    quote = suffix[:1]
    return quote in ("'", '"') and (not prefix.strip(WS) or prefix.rstrip(WS).endswith("=" + quote))


_ENTITY = re.compile(r"&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);")


def _unescape_attr(value: str) -> str:
    """An attribute value as written by a template that escapes it (``a&amp;b`` -> ``a&b``)."""
    if "&" not in value:
        return value
    return _ENTITY.sub(lambda m: html.unescape(m.group(0)), value)


class _Header:
    """Matches ``prefix{slot}suffix`` at the start of a body, incrementally.

    The slot ends at the suffix (consumed), or at one of ``ends`` characters / ``extra_stops``
    markers (not consumed: they belong to what follows, like the ``{`` opening JSON arguments
    when the suffix is optional, as Mistral's ``[ARGS]`` is).
    """

    def __init__(self, pattern: str, slot: str, ends: str = "", extra_stops: tuple[str, ...] = ()) -> None:
        self.prefix, self.suffix = _split_slot(pattern, slot)
        self._pre_lit, self._pre, self._suf, self._stops = _header_parts(pattern, slot, ends, extra_stops)
        self._attr = _in_attribute(self.prefix, self.suffix)
        self.buf = ""
        self.matched_suffix = False
        self.self_closed = False     # the header ended its element (``/>``): the call has no body

    def feed(self, text: str, pos: int, final: bool) -> tuple[str, str | None, int] | None:
        """("ok", slot, index after header) | ("bad", None, pos) | ("more", None, consumed up to)
        | None (all consumed)."""
        old = len(self.buf)
        self.buf += text[pos:]
        b = self.buf
        start = 0
        if self._pre is not None:
            m = self._pre.match(b)
            if m is None:
                lead = _STRAY_RE.match(b)
                s = b[lead.end():] if lead is not None else b
                if not final and _lit_partial(self._pre_lit, s):
                    # what may still be the prefix may also be a stop marker's beginning (the
                    # prefix and a section's end share '<|tool'): hold it back as below, so the
                    # text a rejected header read is never more than what it read as one chunk
                    h = self._stops.holdback(b, old) if self._stops else len(b)
                    if h == len(b):
                        return None
                    self.buf = b[:h]
                    return "more", None, pos + (h - old)
                return "bad", None, pos
            start = m.end()
        m2 = self._suf.search(b, start)
        if m2 is None:
            if final or len(b) > _MAX_HEADER:
                return "bad", None, pos
            # keep a possible partial stop marker out of the buffer: it belongs to what follows
            h = self._stops.holdback(b, max(start, old)) if self._stops else len(b)
            self.buf = b[:h]
            return "more", None, pos + (h - old)
        self.self_closed = m2.groupdict().get("selfclose") is not None
        self.matched_suffix = self.self_closed or m2.groupdict().get("suf") is not None
        end = m2.end() if self.matched_suffix else m2.start()
        if end < old:  # pragma: no cover - found in an earlier feed already
            return "bad", None, pos
        value = b[start:m2.start()].strip(WS)
        return "ok", _unescape_attr(value) if self._attr else value, pos + (end - old)


# -- json ---------------------------------------------------------------------------------------

_DECODER = json.JSONDecoder()
#: what JSON may hold outside strings: a stop marker starting with one of these could be part of
#: the value, so only the scanner can tell (no short phase)
_JSON_OUTSIDE = frozenset(' \t\r\n{}[],:"-+.0123456789eEtrufalsn')


@lru_cache(maxsize=64)
def _deciders(markers: tuple[str, ...]) -> re.Pattern[str] | None:
    """The characters at which the scanner may decide besides ``}`` (``]``, a stop marker's
    first character), or None when a stop marker could start inside the JSON value itself."""
    firsts = {m[0] for m in markers if m}
    if firsts & _JSON_OUTSIDE:
        return None
    return re.compile("[" + re.escape("".join(sorted(firsts | {"]"}))) + "]")


#: the names JSON calls give their arguments object across runtimes: a codec's own keys come
#: first; an object under one of these (and no own key) is the arguments too
_ARGS_ALIASES = ("arguments", "parameters", "args", "input")


def _decode_complete(text: str, i: int) -> tuple[Any, int] | None:
    """The JSON value starting at ``text[i]`` and where it ends, if it is complete and valid."""
    try:
        return _DECODER.raw_decode(text, i)
    except ValueError:
        return None


def _mark_element_ends(calls: list[ParsedCall], text: str, i: int) -> None:
    """Where each element of the complete JSON array at ``text[i]`` ends (``ParsedCall.end``): what
    streaming the array element by element records, so issues are located the same either way."""
    k = i + 1
    for call in calls:
        k = skip_ws(text, k)
        r = _decode_complete(text, k)
        if r is None:  # pragma: no cover - the whole array decoded
            return
        call.end = k = r[1]
        k = skip_ws(text, k)
        k += 1  # ',' (or the closing ']')


@lru_cache(maxsize=64)
def _call_head(name_keys: tuple[str, ...], args_keys: tuple[str, ...]) -> re.Pattern[str]:
    """``{"name": "NAME", "arguments": {`` at the start of a call body: a complete name, then the
    arguments opening (so no id key can come between them)."""
    alt = "|".join(re.escape(json.dumps(k)) for k in name_keys)
    args = "|".join(re.escape(json.dumps(k)) for k in args_keys)
    return re.compile(r'\{\s*(?:' + alt + r')\s*:\s*"([^"\\\x00-\x1f]*)"\s*,\s*(?:' + args + r')\s*:\s*\{')


def head_name(spec: CodecSpec, text: str, pos: int = 0) -> str | None:
    """The name of a JSON call body at ``text[pos]`` once its head, ``{"name": "NAME",
    "arguments": {``, is all there (None before, or for a layout that names the call otherwise).
    Streaming announces a call here: what follows the head cannot make it anything but a call."""
    if spec.name_as_key:
        return None
    head = _call_head(tuple(spec.name_keys), tuple(spec.args_keys)).match(text, pos)
    return head.group(1) if head is not None else None


class JsonBody(Body):
    """One JSON object per call, or a JSON array of them."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.scanner: BalancedScanner | None = None
        self.argstream: JsonArgStream | None = None
        self._stream_json = False
        self._py_obj = False
        self._held: list[str] = []
        self._held_len = 0
        # the short-body phase (see ``_feed_short``): on until a character that can decide appears
        self._short = False
        self._deciders: re.Pattern[str] | None = None

    def take_args(self) -> str:
        if self.calllist is not None:
            return super().take_args()
        return self.argstream.take() if self.argstream is not None else ""

    def args_closing(self) -> str:
        if self.calllist is not None:
            return super().args_closing()
        return self.argstream.closing() if self.argstream is not None else ""

    def _call_stream(self) -> JsonArgStream:
        """A transcoder of one whole call object as this codec lays it out."""
        sp = self.spec
        return JsonArgStream(whole_call=True, name_keys=tuple(sp.name_keys), args_keys=tuple(sp.args_keys),
                             id_keys=tuple(sp.id_keys), function_key=sp.function_key or "",
                             name_as_key=sp.name_as_key, name_ok=self._name_ok)

    def _ready(self, t: ArgTranscoder) -> bool:
        """A call is announced once its name is complete and its arguments opened (or at once when
        no id key could still come between them)."""
        return t.name is not None and (t.started or not self.spec.id_keys)

    def _start_list(self) -> None:
        """A JSON array of calls: each element streams through its own transcoder."""
        def finish(raw: str) -> ParsedCall | None:
            try:
                return self._call_from(json.loads(raw))
            except ValueError:
                return None

        self.calllist = CallList(self._call_stream, finish, self._ready)

    def _transcode_held(self) -> JsonArgStream:
        ast = self.argstream = self._call_stream()
        ast.feed("".join(self._held))
        self._held = []
        return ast

    def feed(self, text: str, pos: int, final: bool) -> tuple[Status, int]:
        st, j = self._feed(text, pos, final)
        if st == "reject" and self.argstream is None and self._stream_json and (
                self.call_name is not None or self._held_len > _STREAM_AFTER):
            # an announced call stays a call, with what its text made certain; and a body longer
            # than _STREAM_AFTER began to stream there, whatever the chunks (in pieces it would
            # have been announced once its name was certain)
            ast = self._transcode_held()
            if self.call_name is None and self._ready(ast):
                self.call_name, self.call_id = ast.name, ast.call_id
        return st, j

    def _feed(self, text: str, pos: int, final: bool) -> tuple[Status, int]:
        if self.scanner is None and not self._short:
            i = skip_ws(text, pos)
            if i == len(text):
                if final:
                    return self._reject("empty call body", i, truncated=True)
                return "more", i
            first = text[i]
            arr = self.spec.array
            if not ((first == "{" and arr != "require") or (first == "[" and arr != "never")):
                return self._reject(f"call body starts with {first!r}, not JSON", i)
            # the whole value may be here (it cannot be without a closing bracket): then the C
            # decoder finds its end
            fast = _decode_complete(text, i) if text.find("]" if first == "[" else "}", i) >= 0 else None
            if self.spec.flavor == "python":
                # JSON or Python literals (a template that prints a mapping): read whole, sent once complete
                calls = self.calls_from(fast[0]) if fast is not None else None
                if fast is not None and calls is not None:
                    self.calls = calls
                    return "done", fast[1]
                self.scanner = BalancedScanner("{[", (('"', '"', True), ("'", "'", True)), self.stops)
                self._py_obj = self.streaming and first == "{"  # announced once its name is read
                pos = i
            else:
                calls = self.calls_from(fast[0], text, i, fast[1]) if fast is not None else None
                if fast is not None and (calls is not None or not self.streaming):
                    # (streaming, a value that is no call goes the general way: a prefix of it
                    # may have announced a call, as it would have in pieces)
                    j = fast[1]
                    if calls is None:
                        return self._reject("JSON is not a call (no name or arguments)", j)
                    if self.streaming and first == "[":
                        _mark_element_ends(calls, text, i)
                    self.calls = calls
                    return "done", j
                self._stream_json = self.streaming and first == "{"
                self._deciders = _deciders(self.stops.markers) if first == "{" else None
                self._short = self._deciders is not None
                if not self._short:
                    self.scanner = BalancedScanner("{[", (('"', '"', True),), self.stops)
                if self.streaming and first == "[":
                    self._start_list()
                pos = i
        if self._short:
            short = self._feed_short(text, pos, final)
            if short is not None:
                return short
            # a character that may decide arrived: the scanner reads the body from its start
            prior = "".join(self._held)
            scanner = BalancedScanner("{[", (('"', '"', True),), self.stops)
            self.scanner = scanner
            st, end = scanner.feed(prior + text[pos:] if prior else text, 0 if prior else pos, final)
            j = end - len(prior) + (pos if prior else 0)
        else:
            assert self.scanner is not None
            scanner = self.scanner
            st, j = scanner.feed(text, pos, final)
        if self.calllist is not None:
            self.calllist.feed(text[pos:j], pos)
            self._sync_head()
        ast = self.argstream
        if self._py_obj and self.call_name is None:
            self._held.append(text[pos:j])
            self._name_from_head()
        if ast is not None:
            ast.feed(text[pos:j])
        elif self._stream_json:
            # A short body is only scanned: most calls end within a few feeds and are then sent
            # whole. Transcoding starts once the body is long enough for a client to wait on it,
            # or when the stream ends inside it (an announced, truncated call).
            self._held.append(text[pos:j])
            self._held_len += j - pos
            if self.call_name is None and not self.spec.name_as_key:
                # the common layout names the call before its arguments open: announce it then
                self._name_from_head()
            if st == "more" and (self._held_len > _STREAM_AFTER or final):
                ast = self._transcode_held()
        if ast is not None and self._ready(ast):
            self.call_name, self.call_id = ast.name, ast.call_id
        if st == "more":
            if final:
                # uniform end-of-stream recovery: a list of complete calls missing only its ']'
                closed = scanner.list_closed_at_end()
                try:
                    value = json.loads(closed) if closed else None
                except ValueError:
                    value = None
                calls = self.calls_from(value) if isinstance(value, list) and value else None
                if calls:
                    for c in calls:
                        c.issues.append((IssueCode.missing_end_marker, "closing ']' was missing"))
                    self.calls = calls
                    return "done", j
                return self._reject("call arguments cut off by the end of the output", j, truncated=True)
            return "more", j
        bounded = scanner.bounded(st)
        if bounded is None:
            return self._reject("unbalanced bracket in call body", j)
        raw, repaired = bounded
        status: Literal["ok", "repaired"] = "repaired" if repaired else "ok"
        try:
            value = values.parse_python_literal(raw) if self.spec.flavor == "python" else json.loads(raw)
        except ValueError as e:
            return self._reject(f"call body is not valid JSON: {e}", j)
        calls = self.calls_from(value, raw, 0, len(raw))
        if calls is None:
            return self._reject("JSON is not a call (no name or arguments)", j)
        for c in calls:
            c.status = status
            if status == "repaired":
                c.issues.append((IssueCode.repaired_arguments, "closing brackets were missing; added them"))
        self.calls = calls
        return "done", j

    def _feed_short(self, text: str, pos: int, final: bool) -> tuple[Status, int] | None:
        """The start of an object body, read without the scanner while nothing can be decided.

        The scanner decides only at a closing bracket (the value ends, or is unbalanced) or at
        a stop marker; text with none of those characters it merely consumes. So until one
        arrives (and for at most ``_STREAM_AFTER`` characters, after which the body streams),
        the text is only kept. At a ``}`` the C decoder tries the text kept and the chunk (a
        value that ends there is sent whole, as the scanner path would): no earlier ``}``
        was seen, so the value ends in this chunk or later, and where it decodes the scanner
        would end too (no stop marker can start outside the strings of valid JSON: ``_deciders``
        is None for one that could). Anything else turns the phase off, and the scanner reads
        the kept text and goes on (None). A short call, most of a tool-calling stream, so costs
        a regex search per chunk and one decode, instead of a scan.
        """
        seg = text[pos:] if pos else text
        if final:
            self._short = False
            return None
        if "}" in seg:
            held = "".join(self._held) + seg if self._held else seg
            try:
                value, end = _DECODER.raw_decode(held)
            except ValueError:
                # not complete yet (or not JSON): the scanner says which, from the start
                self._short = False
                return None
            # (no name announcement now: the call is complete, and the machine announces it
            # with its end; an id in it comes after its head, so streaming ignores it anyway)
            self._held = [held]
            self._held_len = len(held)
            j = len(text) - (len(held) - end)
            calls = self.calls_from(value, held, 0, end)
            if calls is None:
                if self.call_name is None and self._stream_json and not self.spec.name_as_key:
                    # in pieces its head would have announced it (a second name key after the
                    # arguments unmakes the call only once whole): it stays an announced call
                    self._name_from_head()
                return self._reject("JSON is not a call (no name or arguments)", j)
            self.calls = calls
            return "done", j
        deciders = self._deciders
        if (self._held_len + len(seg) > _STREAM_AFTER or deciders is None
                or deciders.search(seg) is not None):
            self._short = False
            return None
        self._held.append(seg)
        self._held_len += len(seg)
        if self.call_name is None and self._stream_json and "{" in seg and not self.spec.name_as_key:
            self._name_from_head()
        return "more", len(text)

    def _name_from_head(self) -> None:
        """Announce the call once its head is all there (``head_name``)."""
        name = head_name(self.spec, self._held[0] if len(self._held) == 1 else "".join(self._held))
        if name is not None and self._name_ok(name):
            self.call_name = name

    def calls_from(self, value: Any, text: str | None = None, start: int = 0, end: int = 0
                   ) -> list[ParsedCall] | None:
        """The calls a complete decoded body (``text[start:end]``) holds (None: it is not a call);
        keeps no state, so the machine's whole-call path reuses one body for every call."""
        if text is not None and self.streaming and type(value) is dict and self._renamed(value, text, start, end):
            return None
        items = value if isinstance(value, list) else [value]
        if isinstance(value, list) and self.spec.array == "never":
            return None
        out: list[ParsedCall] = []
        for item in items:
            call = self._call_from(item)
            if call is None:
                return None
            out.append(call)
        return out

    def _renamed(self, value: dict[str, Any], text: str, start: int, end: int) -> bool:
        """Whether a second name key after the arguments renames the call (the body is
        ``text[start:end]``): streaming announced the first (``head_name``), the decoded object
        holds the last, so the body is malformed (chunk invariance: the whole text must not read
        another name than its pieces did). Counted in place: no copy of the body per call."""
        keys = self.spec.name_keys
        if not any(text.count(f'"{k}"', start, end) > 1 for k in keys):
            return False
        start = skip_ws(text, start, end)
        announced = head_name(self.spec, text, start)
        return announced is not None and all(value.get(k) != announced for k in keys if k in value)

    def _call_from(self, obj: Any) -> ParsedCall | None:
        s = self.spec
        # the common shape first: {"name": "NAME", "arguments": {...}} and nothing else
        if type(obj) is dict and len(obj) == 2 and not s.name_as_key:
            name_key, args_key = obj
            if s.name_keys and name_key == s.name_keys[0] and args_key in s.args_keys:
                written, given = obj[name_key], obj[args_key]
                if type(written) is str and type(given) is dict and self._name_ok(written):
                    return ParsedCall(written, given)
        if not isinstance(obj, dict):
            return None
        outer: dict[str, Any] | None = None
        if s.function_key and isinstance(obj.get(s.function_key), dict):
            outer = obj
            inner = dict(obj[s.function_key])
            for k in s.id_keys:
                if k in obj and k not in inner:
                    inner[k] = obj[k]
            obj = inner
        if s.name_as_key:
            if len(obj) != 1:
                return None
            ((key, value),) = obj.items()
            return self._finish(key, value, None)
        name = next((obj[k] for k in s.name_keys if isinstance(obj.get(k), str)), None)
        if not name:
            return None
        args: Any = {}
        for k in s.args_keys:
            if k in obj:
                args = obj[k]
                break
        else:
            alias = next((k for k in _ARGS_ALIASES if isinstance(obj.get(k), dict)), None)
            if alias is not None:  # the spelling other runtimes of the dialect write
                args = obj[alias]
            elif set(obj) - {*s.name_keys, *s.id_keys, "type"}:
                return None  # no arguments but other members: an object that names something, no call
        cid_key = next((k for k in s.id_keys if k in obj and obj[k] is not None), None)
        cid = str(obj[cid_key]) if cid_key is not None else None
        if cid_key is not None and self.streaming and self._id_after_arguments(obj, outer, cid_key):
            cid = None
        return self._finish(name, args, cid)

    def _id_after_arguments(self, obj: dict[str, Any], outer: dict[str, Any] | None, key: str) -> bool:
        """Whether the id was written after the arguments began. A streamed call is announced
        when its arguments begin, with the id written so far; one written later cannot be its
        id, on any chunking (the whole text must say what the streamed text said)."""
        fkey = self.spec.function_key
        if outer is not None and fkey and key in outer and key not in outer[fkey]:
            order = list(outer)
            return order.index(key) > order.index(fkey)
        order = list(obj)
        args_at = next((order.index(k) for k in self.spec.args_keys if k in obj), None)
        return args_at is not None and order.index(key) > args_at

    def _finish(self, name: Any, args: Any, cid: str | None) -> ParsedCall | None:
        if not isinstance(name, str) or not self._name_ok(name):
            return None
        issues: list[tuple[IssueCode, str]] = []
        if isinstance(args, str):
            try:
                decoded = json.loads(args) if args.strip() else {}
            except ValueError:
                return None
            issues.append((IssueCode.double_encoded_arguments, "arguments were a JSON string; decoded it"))
            args = decoded
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return None
        return ParsedCall(name, args, cid, issues=issues)


# -- name then JSON ------------------------------------------------------------------------------

#: the string quotes of JSON written XML-escaped (an attribute's value): escaped, or left as is
XML_QUOTES: tuple[tuple[str, str, bool], ...] = (("&#34;", "&#34;", True), ("&quot;", "&quot;", True),
                                                  ("&#x22;", "&#x22;", True), ('"', '"', True))

#: the strings, and the reading, of each flavor of arguments but plain JSON's and relaxed ones
_FLAVOR_STRINGS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "python": (('"', '"', True), ("'", "'", True)), "xml": XML_QUOTES, "csv": (('""', '""', True),)}
_FLAVOR_PARSE: dict[str, Callable[[str], Any]] = {
    "python": values.parse_python_literal,
    "xml": lambda raw: json.loads(html.unescape(raw)),
    "csv": lambda raw: json.loads(raw.replace('""', '"')),
}


class NameJsonBody(Body):
    """``header`` carrying the name (or an id the name is cut from), then an object, then ``trailer``."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        s = self.spec
        self.slot = "{id}" if "{id}" in s.header else "{name}"
        header = s.header
        self.id_header: _Header | None = None
        self.id_first: _Header | None = None
        if "{call_id}" in header and header.index("{call_id}") < header.index(self.slot):
            # the caller's id written before the name (ID<|name|>NAME<|args|>{...}): its own header,
            # ended by the literal text before the name
            cut = header.index(self.slot)
            self.id_first = _Header(header[:cut], "{call_id}")
            header = header[cut:]
            self._id_stops: tuple[str, ...] = ()
        elif "{call_id}" in header:
            # a native call id written after the name (Mistral v13: NAME[CALL_ID]ID[ARGS]); optional
            cut = header.index("{call_id}")
            rest = header[cut:]
            header = header[:cut]
            after = rest[len("{call_id}"):].strip(WS)
            self.id_header = _Header(rest, "{call_id}", ends="{")
            self._id_stops = (after,) if after else ()
        else:
            self._id_stops = ()
        self.header = _Header(header, self.slot, ends="{",
                              extra_stops=(*self.stops.markers, *self._id_stops))
        self.name: str | None = None
        self.cid: str | None = None
        self.scanner: BalancedScanner | None = None
        self.argstream: ArgTranscoder | None = None
        self.phase = "id_first" if self.id_first is not None else "header"
        # a trailer that repeats the name ('</{name}>') is known once the name is
        self._trailer = (MarkerSet([(s.trailer.strip(WS), Kind.trailer)])
                         if s.trailer.strip(WS) and "{name}" not in s.trailer else None)

    def feed(self, text: str, pos: int, final: bool) -> tuple[Status, int]:
        s = self.spec
        if self.phase == "id_first":
            assert self.id_first is not None
            hst, j, slot = self._header_step(self.id_first, text, pos, final, "no call id before the name")
            if hst is not None:
                return hst, j
            if not self.id_first.matched_suffix or not is_name(slot):
                return self._reject(f"not a call id: {slot[:40]!r}", pos)
            self.cid = slot
            self.phase = "header"
            pos = j
        if self.phase == "header":
            hst, j, slot = self._header_step(self.header, text, pos, final, "no call header")
            if hst is not None:
                return hst, j
            if self.slot == "{id}":
                self.cid = slot
                name = slot
                if s.id_name_prefix and name.startswith(s.id_name_prefix):
                    name = name[len(s.id_name_prefix):]
                if s.id_name_suffix:
                    name = re.sub(s.id_name_suffix + r"\Z", "", name)
            else:
                name = slot
            if not self._name_ok(name) or not is_name(name):
                return self._reject(f"not a tool name: {name[:40]!r}", pos)
            self.name = name
            self.phase = "args"
            if self.id_header is not None:
                self.phase = "id" if self.header.matched_suffix else "id_absent"
            pos = j
        if self.phase == "id_absent":
            # no id: the marker that follows the id follows the name directly (NAME[ARGS]{...})
            lit = self._id_stops[0] if self._id_stops else ""
            i = skip_ws(text, pos)
            tail = text[i:i + len(lit)]
            if lit and not final and len(tail) < len(lit) and lit.startswith(tail):
                return "more", pos
            if lit and tail == lit:
                pos = i + len(lit)
            self.phase = "args"
        if self.phase == "id":
            assert self.id_header is not None
            hst, j, slot = self._header_step(self.id_header, text, pos, final, "no call id after the id marker")
            if hst is not None:
                return hst, j
            self.cid = slot
            self.phase = "args"
            pos = j
        if self.phase == "args":
            if self.scanner is None:
                i = skip_ws(text, pos)
                if i == len(text):
                    if final:
                        return self._reject("call has a name but no arguments", i, truncated=True)
                    return "more", i
                if text[i] != "{":
                    return self._reject(f"arguments start with {text[i]!r}", i)
                # plain JSON is read at once where it means what the flavor's reading would; a
                # CSV field's '""' is a quote, and plain JSON's empty string (the streamed
                # reading, which cannot see the end, reads the quote: so must the whole text)
                fast = _decode_complete(text, i) if s.flavor not in ("relaxed", "csv") else None
                if fast is not None and isinstance(fast[0], dict):
                    self.calls = [ParsedCall(self.name or "", fast[0], self.cid)]
                    self.phase = "trailer"
                    return self._after_args(text, fast[1], final)
                strings = _FLAVOR_STRINGS.get(s.flavor, (('"', '"', True),))
                if s.flavor == "relaxed":
                    strings = (*((a, b, False) for a, b in s.string_delims), ('"', '"', True))
                self.scanner = BalancedScanner("{[", strings, self.stops)
                if self.streaming and s.flavor in ("python", "xml", "csv"):
                    # a Python literal is sent once complete (as JSON); the name streams at once
                    self.call_name, self.call_id = self.name, self.cid
                elif self.streaming:
                    self.argstream = (RelaxedArgStream(s.string_delims, s.relaxed_seps) if s.flavor == "relaxed"
                                      else JsonArgStream(whole_call=False))
                    self.call_name, self.call_id = self.name, self.cid
                pos = i
            st, j = self.scanner.feed(text, pos, final)
            if self.argstream is not None:
                self.argstream.feed(text[pos:j])
            if st == "more":
                if final:
                    return self._reject("call arguments cut off by the end of the output", j, truncated=True)
                return "more", j
            bounded = self.scanner.bounded(st)
            if bounded is None:
                return self._reject("unbalanced bracket in arguments", j)
            raw, repaired = bounded
            status: Literal["ok", "repaired"] = "repaired" if repaired else "ok"
            args: Any
            try:
                if s.flavor == "relaxed":
                    args = values.parse_relaxed_object(raw, s.string_delims, s.relaxed_seps)
                else:
                    args = _FLAVOR_PARSE.get(s.flavor, json.loads)(raw)
            except ValueError as e:
                return self._reject(f"arguments are not valid: {e}", j)
            if not isinstance(args, dict):
                return self._reject("arguments are not an object", j)
            call = ParsedCall(self.name or "", args, self.cid, status)
            if status == "repaired":
                call.issues.append((IssueCode.repaired_arguments, "closing brackets were missing; added them"))
            self.calls = [call]
            self.phase = "trailer"
            pos = j
        return self._after_args(text, pos, final)

    def take_args(self) -> str:
        return self.argstream.take() if self.argstream is not None else ""

    def args_closing(self) -> str:
        return self.argstream.closing() if self.argstream is not None else ""

    def _after_args(self, text: str, pos: int, final: bool) -> tuple[Status, int]:
        """The optional trailer (e.g. a closing code fence) after the arguments."""
        if self._trailer is None and "{name}" in self.spec.trailer and self.name:
            self._trailer = MarkerSet([(self.spec.trailer.strip(WS).replace("{name}", self.name), Kind.trailer)])
        if self._trailer is None:
            return "done", pos
        i = skip_ws(text, pos)
        assert self._trailer is not None
        if i == len(text) and not final:
            return "more", pos
        m = self._trailer.match_at(text, i, final)
        if m is True and not final:
            return "more", pos
        if isinstance(m, Match):
            return "done", m.end
        return "done", pos


# -- tagged key/value parameters ----------------------------------------------------------------

@lru_cache(maxsize=256)
def _param_parts(param: str) -> tuple[re.Pattern[str], str, str]:
    """The regex that finds a parameter's opening, and the text around its value (once per pattern)."""
    key_pre, rest = _split_slot(param, "{key}")
    has_string = "{string}" in rest
    if has_string:
        mid1, rest2 = _split_slot(rest, "{string}")
        mid2, post = _split_slot(rest2, "{value}")
    else:
        mid1, post = _split_slot(rest, "{value}")
        mid2 = ""
    mid = mid1.strip(WS) or ">"
    # a key is at most _MAX_KEY characters (what streaming holds back while it waits for one);
    # it ends at the first text after it, and holds no opening of another parameter (a key
    # ended by a tag, ``<arg_key>param<1></arg_key>``, may hold markup-like characters)
    if len(mid) == 1:
        key = "[^" + re.escape(mid) + "]"
    else:
        key = "(?:(?!" + _lit_regex(key_pre.strip(WS)) + "|" + _lit_regex(mid) + r")[\s\S])"
    rx = _lit_regex(key_pre.strip(WS)) + "(?P<key>" + key + "{0," + str(_MAX_KEY) + "}?)"
    if has_string:
        rx += _lit_regex(mid1.strip(WS)) + r"(?P<string>[^\"'>]*?)" + _lit_regex(mid2.strip(WS))
    else:
        rx += _lit_regex(mid1.strip(WS))
    return re.compile(rx), (mid2 if has_string else mid1), post


@lru_cache(maxsize=256)
def _tagged_ends(trailer: str, stops: tuple[str, ...]) -> MarkerSet:
    """Where a tagged body ends (built once per shape: a body is made per call)."""
    return MarkerSet([(trailer, Kind.trailer)] * bool(trailer) + [(m, Kind.stop) for m in stops])


@lru_cache(maxsize=256)
def _compiled_close(close: str, line_values: bool) -> re.Pattern[str]:
    return re.compile("\n" if line_values else _lit_regex(close))


class TaggedBody(Body):
    """``header`` with the name, then ``param`` elements, until ``trailer``; values typed by schema."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        s = self.spec
        p_pre, p_post = _split_slot(s.param, "{key}")
        self.p_open = p_pre.strip(WS)
        self._key_attr = _in_attribute(p_pre or "=" + p_post[:1], p_post)
        ends = tuple(x for x in (self.p_open, s.trailer.strip(WS)) if x) + tuple(self.stops.markers)
        if not self.p_open:
            ends += ("\n",)  # no markup before a key: the name is the rest of its line
        self.header = _Header(s.header, "{name}", extra_stops=ends)
        self.name: str | None = None
        self.phase = "header"
        self.body: list[str] = []
        self._views: dict[str, dict[str, Any]] = {}
        self.all_ends = _tagged_ends(s.trailer.strip(WS), self.stops.markers)
        self._param_re, self._mid, self._post = _param_parts(s.param)
        self._post_has_key = "{key}" in self._post
        # a value in quotes (``--{key} '{value}'``) runs to its closing quote: an opening of the
        # next parameter inside the quotes is part of the value, as a shell reads the word
        q = self._mid.strip(WS)[-1:]
        quoted = q in ("'", '"') and self._post.strip(WS) == q
        # with markup before each key and a close that does not repeat the key, the next key ends a value
        self._next_key_ends = bool(self.p_open) and not self._post_has_key and not quoted
        self.coerce_issues: list[tuple[IssueCode, str]] = []
        # argument streaming: the undecided tail of the body, the parameter being read
        self._st_buf = ""
        self._st_key: str | None = None
        self._st_attr: str | None = None
        self._st_schema: Any = None
        self._st_string = False      # the value streams as a JSON string as it arrives
        self._st_close: re.Pattern[str] | None = None
        self._st_lits: tuple[str, ...] = ()
        self._st_whole = False       # the body came complete at once and did not stream
        self._st_own_line = False    # the string value began on a line of its own

    # -- argument streaming ----------------------------------------------------------------------

    def _view(self) -> dict[str, Any]:
        """The call's tool schema as the grammars read it (references and type aliases resolved;
        ``{}`` for an unknown tool): which values are raw text and how the rest is typed."""
        name = self.name or ""
        view = self._views.get(name)
        if view is None:
            view = self._views[name] = normalized(self.schemas.get(name))
        return view

    def _stream(self, chunk: str) -> None:
        """Read parameters off the body as it arrives, with the rules of ``_param_pairs``."""
        buf = self._st_buf + chunk
        close_generic = self._post.strip(WS)
        line_values = not close_generic and "\n" in self._post
        while True:
            if self._st_key is None:
                m = self._param_re.search(buf)
                if m is None:
                    # keep what may still become a parameter's opening tag
                    buf = self._param_tail(buf)
                    break
                key = self._key(m)
                self._st_attr = m.groupdict().get("string")
                props = self._view().get("properties") or {}
                sch = props.get(key) if isinstance(props, Mapping) else None
                self._st_schema = sch
                attr = self._st_attr
                self._st_string = (attr.strip() == self.spec.string_true) if attr is not None else (
                    sch is None or (isinstance(sch, Mapping) and json_types(sch) == {"string"}
                                    and "enum" not in sch and "const" not in sch))
                close = close_generic.replace("{key}", key) if self._post_has_key else close_generic
                self._st_close = _compiled_close(close, line_values)
                # a value may end at its close or at the next parameter: both are held back whole
                self._st_lits = tuple(x for x in (self.p_open, "" if line_values else close.strip(WS)) if x)
                self._st_key = key
                self._str_open = False
                buf = buf[m.end():]
                continue
            assert self._st_close is not None
            cm = self._st_close.search(buf)
            nxt = self._param_re.search(buf) if self._next_key_ends else None
            if cm is not None and nxt is None and self._next_key_ends:
                # an opening before the close whose key is not complete yet may still be the next
                # parameter (then it ends this value, as the complete parse reads it): wait
                opening = _lit_compiled(self.p_open).search(buf, 0, cm.start())
                if opening is not None and len(buf) - opening.end() <= _MAX_KEY + len(self._mid) + 8:
                    if self._st_string:  # what is certain before the opening goes, as in pieces
                        buf = self._send_safe(buf)
                    break
            if cm is not None and (nxt is None or cm.start() <= nxt.start()):
                self._end_value(buf[:cm.start()], by_close=True)
                buf = buf[cm.end():]
                continue
            if nxt is not None:
                self._end_value(buf[:nxt.start()], by_close=False)
                buf = buf[nxt.start():]
                continue
            if self._st_string:
                buf = self._send_safe(buf)
            break
        self._st_buf = buf

    def _safe_end(self, buf: str) -> int:
        """Where the text that may still be trimmed or be part of a marker begins."""
        k = len(buf.rstrip(WS))
        while True:
            k0 = k
            for lit in self._st_lits:
                h = _lit_last(lit, buf, max(0, k - len(lit) - _MAX_HEADER), k)
                if h >= 0:  # a whole marker not yet followed by what completes it
                    k = h
                k = _lit_tail(lit, buf, max(0, k - _MAX_HEADER), k)
            k = len(buf[:k].rstrip(WS))
            if k == k0:
                return k

    def _key(self, m: re.Match[str]) -> str:
        key = m.group("key").strip(WS)
        return _unescape_attr(key) if self._key_attr else key

    def _param_tail(self, buf: str) -> str:
        """The end of ``buf`` that may still become a parameter's opening tag."""
        p_open = self.p_open
        if not p_open:
            return buf[-_MAX_HEADER:]
        # the earliest opening still open (a key may hold what looks like another opening)
        m = _lit_compiled(p_open).search(buf, max(0, len(buf) - _MAX_HEADER))
        if m is not None:
            return buf[m.start():]
        return buf[_lit_tail(p_open, buf, 0, len(buf)):]

    def _send_safe(self, buf: str) -> str:
        """Send the part of a string value no later text can change; return the rest."""
        k = self._safe_end(buf)
        if k <= 0:
            return buf
        safe = buf[:k]
        if not self._str_open:
            if self._st_schema is not None and safe.strip(WS).lower() in ("", "n", "nu", "nul", "null"):
                return buf  # may still be null, which a typed schema reads as None
            lead = self._mid[len(self._mid.rstrip(WS)):]
            cut = len(lead) if lead and buf.startswith(lead) else 1 if buf[:1] == "\n" else 0
            self._st_own_line = cut == 1 and not lead  # (``_trim_one``: then the last break goes too)
            if cut >= k:
                return buf
            self._frags.append(self._member(self._st_key or "") + '"')
            self._str_open = True
            safe = buf[cut:k]
        self._frags.append(json.dumps(safe, ensure_ascii=False)[1:-1])
        return buf[k:]

    def _end_value(self, raw: str, by_close: bool) -> None:
        key = self._st_key or ""
        if self._str_open:
            if by_close:
                trail = self._post[: len(self._post) - len(self._post.lstrip(WS))]
                if trail and raw.endswith(trail):
                    raw = raw[: -len(trail)]
                elif (trail or self._st_own_line) and raw[-1:] == "\n":
                    raw = raw[:-1]
            else:
                raw = raw.rstrip(WS)
            self._frags.append(json.dumps(raw, ensure_ascii=False)[1:-1] + '"')
        else:
            if by_close:
                raw = _trim_one(raw, self._mid, self._post)
            else:
                raw = _trim_one(raw.rstrip(WS), self._mid, "")
            n = len(self.coerce_issues)
            value = self._typed(raw, self._st_schema, self._st_attr)
            del self.coerce_issues[n:]  # the final parse reports them
            self._frags.append(self._member(key) + json.dumps(value, ensure_ascii=False))
        self._st_key = None
        self._str_open = False

    def _stream_end(self, complete: bool) -> None:
        if self.call_name is None or self._args_done:
            return
        if complete and self._st_key is not None:
            # no parameter can follow now: a close that waited on one ends the value, as the
            # complete parse reads it
            cm = self._st_close.search(self._st_buf) if self._st_close is not None else None
            if cm is not None:
                self._end_value(self._st_buf[:cm.start()], by_close=True)
            else:
                self._end_value(self._st_buf, by_close=False)
        self._frags.append(self.args_closing())
        self._args_done = True

    def feed(self, text: str, pos: int, final: bool) -> tuple[Status, int]:
        whole = self.phase == "header"  # the call may be all in this text: then nothing streams
        if self.phase == "header":
            st, j, slot = self._header_step(self.header, text, pos, final, "no call header")
            if st is not None:
                return st, j
            if not self._name_ok(slot) or len(slot) > 256:
                return self._reject(f"not a tool name: {slot[:40]!r}", pos)
            self.name = slot
            self.phase = "body"
            pos = j
            if self.streaming:
                self.call_name = slot
                self._frags.append("{")
            if self.header.self_closed:  # no parameters, no trailer: the call is complete
                if self.streaming:
                    self._frags, self._args_done = [], True
                return self._finish_body(pos=pos, complete=True)
        m, safe = self.all_ends.scan(text, pos, final)
        if m is None:
            self.body.append(text[pos:safe])
            if self.streaming:
                self._stream(text[pos:safe])
            if final:
                return self._finish_body(pos=safe, complete=False)
            return "more", safe
        self.body.append(text[pos:m.start])
        if self.streaming and whole:
            self._frags = []   # complete at once: the machine sends the parsed arguments whole
            self._args_done = self._st_whole = True
        elif self.streaming:
            self._stream(text[pos:m.start])
            self._stream_end(complete=True)
        if m.kind is Kind.trailer:
            return self._finish_body(pos=m.end, complete=True)
        return self._finish_body(pos=m.start, complete=True)

    def _finish_body(self, pos: int, complete: bool) -> tuple[Status, int]:
        body = "".join(self.body)
        schema = self._view() if (self.name or "") in self.schemas else None
        try:
            pairs, partial = self._param_pairs(body, complete)
            args = self._members(pairs, schema)
        except ValueError as e:
            if self._st_whole:  # announced, then refused: what pieces would have streamed, stream now
                self._frags, self._args_done, self._st_whole = ["{"], False, False
                self._stream(body)
                self._stream_end(complete=True)
            return self._reject(str(e), pos)
        status: Literal["ok", "truncated"] = "ok"
        if partial:
            if not self.spec_partial:
                return self._reject("a parameter value was cut off by the end of the output", pos,
                                    truncated=True)
            status = "truncated"
        call = ParsedCall(self.name or "", args, None, status, list(self.coerce_issues))
        if partial:
            call.issues.append((IssueCode.partial_value, "the last parameter value was cut off; surfaced as is"))
        self.calls = [call]
        return "done", pos

    spec_partial = False

    def _members(self, pairs: list[tuple[str, str, str | None]], schema: Mapping[str, Any] | None) -> dict[str, Any]:
        """Parameters as the members of an object, typed by ``schema``'s properties."""
        props = (schema or {}).get("properties") or {}
        return {key: self._typed(raw, props.get(key) if isinstance(props, Mapping) else None, attr)
                for key, raw, attr in pairs}

    def _param_pairs(self, body: str, complete: bool) -> tuple[list[tuple[str, str, str | None]], bool]:
        """The parameters of a body in order, as (key, raw value, string attribute), and whether
        the last value was cut off. A value whose own close is missing while a closing tag of
        another key stands in it (``<city>Beijing</wrong>``) is markup gone wrong: refused."""
        out: list[tuple[str, str, str | None]] = []
        i = 0
        partial = False
        close_generic = self._post.strip(WS)
        line_values = not close_generic and "\n" in self._post  # key: value lines
        while True:
            m = self._param_re.search(body, i)
            if m is None:
                junk = body[i:].strip(WS)
                if junk and not out and i == 0:
                    raise ValueError("call body has no parameters: " + junk[:40])
                break
            if body[i:m.start()].strip(WS) and not out:
                raise ValueError("text before the first parameter")
            key = self._key(m)
            vstart = m.end()
            close = close_generic.replace("{key}", key) if self._post_has_key else close_generic
            cre = re.compile("\n" if line_values else _lit_regex(close))
            cm = cre.search(body, vstart)
            # a value runs to its close; with markup before each key, the next key ends it too
            nxt = self._param_re.search(body, vstart) if self._next_key_ends else None
            if cm is not None and (nxt is None or cm.start() <= nxt.start()):
                raw = body[vstart:cm.start()]
                raw = _trim_one(raw, self._mid, self._post)
                i = cm.end()
            else:
                end = nxt.start() if nxt is not None else len(body)
                raw = body[vstart:end]
                terminated = nxt is not None or complete
                if terminated and self._post_has_key and _any_close(close_generic).search(raw):
                    raise ValueError(f"parameter {key!r} is closed by another key's tag")
                raw = raw.rstrip(WS) if terminated else _trim_one(raw, self._mid, "")
                raw = _trim_one(raw, self._mid, "") if terminated else raw
                i = end
                if not terminated:
                    partial = True
            out.append((key, raw, m.groupdict().get("string")))
            if partial or i >= len(body):
                break
        return out, partial

    def _typed(self, raw: str, schema: Any, string_attr: str | None) -> Any:
        if string_attr is not None:
            if string_attr.strip() == self.spec.string_true:
                return raw
            try:
                return json.loads(raw)
            except ValueError:
                pass
        if isinstance(schema, Mapping):
            nested = self._nested(raw, schema)
            if nested is not None:
                return nested[0]
            value, issue = values.coerce_text(raw, schema, self._view())
            if issue:
                self.coerce_issues.append((IssueCode.coercion_fallback, issue))
            return value
        return raw

    def _nested(self, raw: str, schema: Mapping[str, Any]) -> tuple[Any] | None:
        """A value written as parameter elements itself, read by the schema: an object's members
        (``<number><real>1.5</real>…</number>``), an array's items (``<item>…</item>`` each, any
        tag name), typed recursively. None when the schema allows a string, or the value is no
        such markup (then it is coerced as text)."""
        types = json_types(schema)
        if "string" in types or not self.p_open or self.p_open not in raw or not types & {"object", "array"}:
            return None
        try:
            pairs, _ = self._param_pairs(raw, True)
        except ValueError:
            return None
        if "object" in types and not ("array" in types and len({k for k, _, _ in pairs}) < len(pairs)):
            return (self._members(pairs, schema),)
        items = schema.get("items")
        return ([self._typed(v, items if isinstance(items, Mapping) else None, attr) for _, v, attr in pairs],)


@lru_cache(maxsize=64)
def _any_close(close_generic: str) -> re.Pattern[str]:
    """Any key's closing tag, for a close that names its key (``</{key}>``)."""
    return re.compile(r"[^<>\s]*".join(_lit_regex(part) for part in close_generic.split("{key}")))


# -- pythonic ---------------------------------------------------------------------------------

_PY_START = re.compile(r"\[\s*[A-Za-z_][\w.\-]*\s*\(")
_PY_MAYBE = re.compile(r"\[\s*(?:[A-Za-z_][\w.\-]*\s*)?\Z")


class PythonicBody(Body):
    """``[name(key=value, ...), ...]`` with Python literal values."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.scanner: BalancedScanner | None = None
        self.head = ""
        self.named = False   # call lines: the first name and its "(" have been read

    def feed(self, text: str, pos: int, final: bool) -> tuple[Status, int]:
        if self.spec.array == "never":
            return self._feed_lines(text, pos, final)
        if self.scanner is None:
            i = skip_ws(text, pos)
            head = self.head + text[i:]
            if not head:
                if final:
                    return self._reject("empty call body", i, truncated=True)
                return "more", i
            if head[0] != "[":
                return self._reject("not a pythonic call list", i)
            if _PY_START.match(head) is None:
                if _PY_MAYBE.match(head) and not final and len(head) < 128:
                    return "more", i
                return self._reject("not a pythonic call list", i)
            self.scanner = BalancedScanner("[({", (("'", "'", True), ('"', '"', True)), self.stops)
            if self.streaming:
                self._start_list()
            pos = i
        st, j = self.scanner.feed(text, pos, final)
        if self.calllist is not None:
            self.calllist.feed(text[pos:j], pos)
            self._sync_head()
        if st == "more":
            if final:
                # uniform end-of-stream recovery: a complete call missing only its closing ']'
                closed = self.scanner.list_closed_at_end()
                if closed is not None:
                    try:
                        self.calls = self._to_calls(closed)
                        for c in self.calls:
                            c.issues.append((IssueCode.missing_end_marker, "closing ']' was missing"))
                        return "done", j
                    except ValueError:
                        pass
                return self._reject("call list cut off by the end of the output", j, truncated=True)
            return "more", j
        if st != "done":
            return self._reject("unbalanced call list", j)
        listed = self._listed_calls()
        if listed:
            self.calls = listed
            return "done", j
        try:
            self.calls = self._to_calls(self.scanner.text())
        except ValueError as e:
            return self._reject(str(e), j)
        return "done", j

    def _start_list(self) -> None:
        """Each call of the list streams through its own transcoder, ended at its ``)``."""
        def finish(raw: str) -> ParsedCall | None:
            try:
                calls = self._to_calls(raw)
            except ValueError:
                return None
            return calls[0] if len(calls) == 1 else None

        self.calllist = CallList(lambda: PythonicCallStream(self._name_ok), finish,
                                 lambda t: t.name is not None, trailing_comma=True)

    def _feed_lines(self, text: str, pos: int, final: bool) -> tuple[Status, int]:
        """Calls written without list brackets, one per line or comma-separated, up to the call's
        end marker (``array: never``: MiniCPM's fenced ``f(a=1)`` lines)."""
        m, safe = self.stops.scan(text, pos, final)
        end = m.start if m is not None else safe
        self.head += text[pos:end]
        if not self.named and self.head.strip(WS):
            # read on the text so far, whatever its chunks: a name, then its parenthesis
            line = _PY_LINE.match(self.head.lstrip(WS))
            if line is None:
                return self._reject("not a pythonic call", pos)
            self.named = line.group().endswith("(")
        if m is None and not final:
            return "more", end
        try:
            self.calls = self._to_calls(_top_level_lines_joined(self.head))
        except ValueError as e:
            return self._reject(str(e), end, truncated=m is None)
        return "done", end

    def _to_calls(self, raw: str) -> list[ParsedCall]:
        out = []
        for name, kwargs in values.parse_python_calls(raw):
            if not self._name_ok(name):
                raise ValueError(f"not a tool name: {name!r}")
            out.append(ParsedCall(name, dict(kwargs)))
        if not out:
            raise ValueError("empty call list")
        return out


_PY_LINE = re.compile(r"[A-Za-z_][\w.\-]*\s*(?:\(|\Z)")


def _top_level_lines_joined(raw: str) -> str:
    """``f(a=1)\ng(b=2)`` as ``f(a=1),g(b=2)``: line breaks outside brackets and quotes separate calls."""
    out: list[str] = []
    depth, quote, i = 0, "", 0
    while i < len(raw):
        c = raw[i]
        if quote:
            if c == "\\":
                out.append(raw[i:i + 2])
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "\n" and depth == 0:
            prev = "".join(out).rstrip(WS)
            c = "," if prev and not prev.endswith(",") and raw[i:].strip(WS) else " "
        out.append(c)
        i += 1
    return "".join(out).strip(WS).rstrip(",")


_KINDS: dict[str, type[Body]] = {
    "json": JsonBody,
    "name_json": NameJsonBody,
    "tagged": TaggedBody,
    "pythonic": PythonicBody,
}


def make_body(spec: CodecSpec, stops: MarkerSet, schemas: Mapping[str, Mapping[str, Any]],
              known_only: bool = False, partial_values: bool = False,
              header_stops: tuple[str, ...] = (), streaming: bool = False) -> Body:
    if spec.kind == "pattern":  # a format spelled out as data (engine/pattern.py)
        from .pattern import PatternBody

        pattern = PatternBody(spec, stops, schemas, known_only)
        pattern.partial_values = partial_values
        pattern.streaming = streaming
        return pattern
    body = _KINDS[spec.kind](spec, stops, schemas, known_only)
    if isinstance(body, NameJsonBody) and header_stops:
        body.header = _Header(body.header.prefix + body.slot + body.header.suffix, body.slot, ends="{",
                              extra_stops=(*stops.markers, *body._id_stops, *header_stops))
    if isinstance(body, TaggedBody):
        body.spec_partial = partial_values
    body.streaming = streaming
    return body
