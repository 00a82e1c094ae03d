"""Lists of calls that stream call by call (``[{...}, {...}]``, ``[f(a=1), g(b=2)]``).

Rules of this file:

* One call body may hold several calls. Each is announced and streamed on its own: its slot gets
  the call's name once that is certain (``ready``), argument fragments as they become certain,
  and the call's parsed value once the call's own text has closed, so the machine can end it then
  instead of waiting for the end of the list.
* The list's own syntax (``[``, ``,``, ``]``) is read here; each call's text is read by a
  per-call transcoder (``argstream.JsonArgStream`` for JSON, ``literalstream.PythonicCallStream``
  for pythonic calls) that says where the call ended.
* Nothing here decides whether the text is a list of calls: the codec's parse of the complete
  body does. This module only stops (``dead``) at text it does not expect; the codec then falls
  back to that parse, and the machine to its rules for a call body that turned out malformed.

Theory of operation. A queue of slots, oldest first; the machine streams the oldest slot (the
*head*) and pops it once its call is parsed. Several calls may complete in one feed (a whole list
in one chunk); they wait in the queue, each with its own fragments, so no fragment of one call is
ever sent as part of another.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

__all__ = ["ArgTranscoder", "CallList", "CallSlot"]

_WS = " \t\r\n"
T = TypeVar("T")


class ArgTranscoder(Protocol):
    """One call's text in, certain argument JSON out (see ``argstream.JsonArgStream``)."""

    name: str | None
    call_id: str | None
    dead: bool
    started: bool

    @property
    def finished(self) -> bool: ...

    def feed(self, text: str, start: int = 0) -> int: ...

    def take(self) -> str: ...

    def closing(self) -> str: ...


class CallSlot(Generic[T]):
    """One call of a list: its transcoder, its raw text, and its parse once it has closed."""

    __slots__ = ("end", "parsed", "raw", "ready", "stream")

    def __init__(self, stream: ArgTranscoder) -> None:
        self.stream = stream
        self.raw: list[str] = []
        self.ready = False
        self.parsed: T | None = None
        self.end = -1   # where its text ended, as an index into the text of the feed that ended it


class CallList(Generic[T]):
    """Reads ``open item, item, ... close`` and hands each item's text to a fresh transcoder.

    ``new_call`` makes the transcoder of one call; ``finish`` parses a call's complete raw text
    (None: not a call, which stops the list); ``ready`` says whether a transcoder's call may be
    announced yet. ``trailing_comma``: a separator may precede the closer (Python lists).
    """

    def __init__(self, new_call: Callable[[], ArgTranscoder], finish: Callable[[str], T | None],
                 ready: Callable[[ArgTranscoder], bool], *, opener: str = "[", closer: str = "]",
                 trailing_comma: bool = False) -> None:
        self._new = new_call
        self._finish = finish
        self._ready = ready
        self._opener = opener
        self._closer = closer
        self._trailing = trailing_comma
        self.slots: deque[CallSlot[T]] = deque()
        self._cur: CallSlot[T] | None = None
        self._state = "open"       # open | first | item | after | done
        self.dead = False
        self._fed = 0
        self._done_at = -1

    @property
    def closed_at_end(self) -> bool:
        """The list closed exactly where the text fed so far ends, every call in it parsed."""
        return self._state == "done" and not self.dead and self._done_at == self._fed

    @property
    def head(self) -> CallSlot[T] | None:
        return self.slots[0] if self.slots else None

    def pop_ended(self) -> tuple[T, int] | None:
        """The head call's parse once it has closed (the slot leaves the queue) and where its text
        ended (``CallSlot.end``), else None."""
        if self.slots and self.slots[0].parsed is not None:
            slot = self.slots.popleft()
            assert slot.parsed is not None
            return slot.parsed, slot.end
        return None

    def feed(self, text: str, offset: int = 0) -> None:
        """Read ``text``; ``offset`` is added to the ``end`` recorded for calls that close in it."""
        i = 0
        n = len(text)
        base = self._fed
        self._fed += n
        while i < n and not self.dead and self._state != "done":
            cur = self._cur
            if cur is not None:
                k = cur.stream.feed(text, i)
                cur.raw.append(text[i:k])
                i = k
                # ready is a latch: a call whose head was complete was announceable at that point
                # of the text, whatever follows it in the same chunk (even text that kills it)
                if not cur.ready and self._ready(cur.stream):
                    cur.ready = True
                if cur.stream.dead:
                    self.dead = True
                    return
                if not cur.stream.finished:
                    return
                parsed = self._finish("".join(cur.raw))
                if parsed is None:
                    self.dead = True
                    return
                cur.ready = True
                cur.parsed = parsed
                cur.end = offset + i
                cur.raw = []
                self._cur = None
                self._state = "after"
                continue
            c = text[i]
            if c in _WS:
                i += 1
                continue
            st = self._state
            if st == "open":
                if c != self._opener:
                    self.dead = True
                    return
                self._state = "first"
                i += 1
            elif st in ("first", "item"):
                if c == self._closer and (st == "first" or self._trailing):
                    self._state = "done"
                    self._done_at = base + i + 1
                    return
                slot: CallSlot[T] = CallSlot(self._new())
                self.slots.append(slot)
                self._cur = slot
            elif c == ",":
                self._state = "item"
                i += 1
            elif c == self._closer:
                self._state = "done"
                self._done_at = base + i + 1
                return
            else:
                self.dead = True
                return
