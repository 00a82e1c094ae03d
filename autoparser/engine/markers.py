"""Finding marker strings in a stream, holding back only what may still become a marker.

The one primitive every state of the machine uses: given the text available now, where is the
earliest marker (longest spelling wins at one position), and how much of the tail must be held
back because it is a proper prefix of some marker. Holdback is minimal by construction: a tail is
held only if it is a prefix of a marker, never "just in case".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

__all__ = ["WS", "Kind", "MarkerSet", "Match", "skip_ws", "tail_prefix"]

#: the engine's whitespace (never Unicode's wider ``\s``)
WS = " \t\r\n"


def skip_ws(text: str, i: int, end: int | None = None) -> int:
    """The first index from ``i`` (before ``end``, default the text's end) that is not whitespace."""
    n = len(text) if end is None else end
    while i < n and text[i] in WS:
        i += 1
    return i


def tail_prefix(text: str, lit: str, lo: int) -> int:
    """Where the longest end of ``text[lo:]`` that is a proper prefix of ``lit`` starts (the text
    to hold back while ``lit`` may still complete); ``len(text)`` when there is none."""
    n = len(text)
    for k in range(min(len(lit) - 1, n - lo), 0, -1):
        if lit.startswith(text[n - k:]):
            return n - k
    return n


class Kind(Enum):
    """What a marker means to whoever searches for it: the machine's transition table
    (``machine.TRANSITIONS``) is keyed by these, codecs and the scanner use the last three."""

    # members are singletons compared with ``is``: hash by identity (a C slot, as cheap as a str;
    # Enum's own ``__hash__`` is a Python function, too slow for the per-marker table lookups)
    __hash__ = object.__hash__

    strip = "strip"          # writes nothing (content wrappers, end-of-turn tokens outside calls)
    r_open = "r_open"        # a reasoning block opens
    r_close = "r_close"      # a reasoning block closes
    section = "section"      # a tool-call section opens (in content)
    call = "call"            # a tool call opens with no section around it (in content)
    look = "look"            # text that may start a marker-less call (read again as its body)
    h_start = "h_start"      # Harmony: a message starts (its header follows)
    h_channel = "h_channel"  # Harmony: the channel part of a header
    msg = "msg"              # Harmony: the header ends, the message body follows
    end = "end"              # the end of what is being skipped / of a Harmony message
    c_open = "c_open"        # inside a section: the next call opens
    c_close = "c_close"      # a call closes
    s_open = "s_open"        # a new section opens (the one being read is over)
    s_close = "s_close"      # a section closes
    sep = "sep"              # a separator between calls
    eot = "eot"              # the end of the turn
    stop = "stop"            # codecs, scanner: an end marker that bounds a call body
    trailer = "trailer"      # codecs: the text that ends a call after its arguments
    string = "string"        # scanner: a string opens


@dataclass(frozen=True, slots=True)
class Match:
    start: int
    end: int
    marker: str
    kind: Kind


class MarkerSet:
    """An immutable set of (marker, kind) pairs compiled for searching."""

    __slots__ = ("_first", "_kinds", "_max", "_prefixes", "_re", "markers")

    def __init__(self, pairs: Iterable[tuple[str, Kind]]) -> None:
        kinds: dict[str, Kind] = {}
        for marker, kind in pairs:
            if marker and marker not in kinds:
                kinds[marker] = kind
        self._kinds = kinds
        self.markers = tuple(sorted(kinds, key=lambda m: (-len(m), m)))
        self._max = max((len(m) for m in self.markers), default=0)
        self._re = re.compile("|".join(re.escape(m) for m in self.markers)) if self.markers else None
        self._first = (
            re.compile("[" + "".join(sorted({re.escape(m[0]) for m in self.markers})) + "]")
            if self.markers else None
        )
        self._prefixes = frozenset(m[:i] for m in self.markers for i in range(1, len(m)))

    def __bool__(self) -> bool:
        return bool(self.markers)

    @property
    def longest(self) -> int:
        return self._max

    @property
    def prefixes(self) -> frozenset[str]:
        """Every proper prefix of a marker (a tail that must be held back)."""
        return self._prefixes

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> Match | None:
        if self._re is None:
            return None
        m = self._re.search(text, pos) if endpos is None else self._re.search(text, pos, endpos)
        if m is None:
            return None
        s = m.group()
        return Match(m.start(), m.end(), s, self._kinds[s])

    def scan(self, text: str, pos: int, final: bool) -> tuple[Match | None, int]:
        """Earliest marker in ``text[pos:]``, or where the certain text ends.

        Returns ``(match, match.start)`` for a marker that cannot grow into a longer one, else
        ``(None, safe)``: ``text[pos:safe]`` holds no marker and ``text[safe:]`` must be held back
        (empty when ``final``).
        """
        m = self.search(text, pos)
        if m is not None:
            if not final and len(text) - m.start < self._max and text[m.start:] in self._prefixes:
                return None, m.start
            return m, m.start
        if final:
            return None, len(text)
        return None, max(pos, self.holdback(text, pos))

    def could_start(self, text: str, pos: int = 0) -> bool:
        """Whether any marker's first character occurs in ``text[pos:]`` (a fast negative test)."""
        return self._first is not None and self._first.search(text, pos) is not None

    def holdback(self, text: str, pos: int = 0) -> int:
        """Index from which ``text`` must be held: its longest suffix that is a marker prefix."""
        n = len(text)
        first = self._first
        if first is None:
            return n
        # every marker prefix starts with a marker's first character: try only those positions of
        # the tail, earliest (longest suffix) first, instead of slicing every suffix
        m = first.search(text, max(pos, n - self._max + 1))
        while m is not None:
            k = m.start()
            if text[k:] in self._prefixes:
                return k
            m = first.search(text, k + 1)
        return n

    def match_at(self, text: str, pos: int, final: bool = False) -> Match | bool | None:
        """The marker starting exactly at ``pos``; ``True`` if one still may (the text ends first).

        At the end of the stream (``final``) nothing can grow any more, so a complete marker is
        returned even when it is the prefix of a longer one.
        """
        if self._re is None:
            return None
        m = self._re.match(text, pos)
        if not final and len(text) - pos < self._max and text[pos:] in self._prefixes:
            return True
        if m is not None:
            s = m.group()
            return Match(m.start(), m.end(), s, self._kinds[s])
        return None
