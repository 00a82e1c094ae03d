"""Finding where a bracketed value ends, incrementally, without parsing it.

JSON, Gemma's relaxed objects and Python call lists all end where their outermost bracket closes,
and brackets inside strings do not count. This scanner tracks exactly that (bracket stack, string
state, escapes) over chunks, jumping between interesting characters with one compiled regex, so
a 1 MB string argument costs one regex search per chunk and nothing is scanned twice. The text
it has consumed is kept in ``pieces``; parsing happens once, when the value is complete.

It also stops, outside strings, at any of the ``stops`` markers (a call's end marker), so that a
body missing its closing braces can be repaired when the end marker bounds it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

from .markers import Kind, MarkerSet, tail_prefix

__all__ = ["BalancedScanner", "ScanStatus"]

ScanStatus = Literal["done", "stop", "more", "error"]

_PAIRS = {"}": "{", "]": "[", ")": "("}
_CLOSER = {o: c for c, o in _PAIRS.items()}

_Compiled = tuple[str, str, tuple[tuple[str, str, bool], ...], MarkerSet, "re.Pattern[str]",
                  dict[int, "re.Pattern[str]"], "re.Pattern[str] | None"]
_JSON_STRINGS = (('"', '"', True),)


@lru_cache(maxsize=256)
def _compiled(brackets: str, strings: tuple[tuple[str, str, bool], ...],
              stops: tuple[str, ...]) -> _Compiled:
    """Regexes and marker sets for one scanner shape, built once (a scanner is made per call)."""
    closers = "".join(c for c, o in _PAIRS.items() if o in brackets)
    tokens = MarkerSet([(s[0], Kind.string) for s in strings] + [(m, Kind.stop) for m in stops])
    alts = [re.escape(s[0]) for s in sorted(strings, key=lambda s: -len(s[0]))]
    alts += [re.escape(m) for m in stops]
    alts.append("[" + re.escape(brackets + closers) + "]")
    str_re = {i: re.compile(re.escape(c) + (r"|\\" if esc else "")) for i, (_o, c, esc) in enumerate(strings)}
    # JSON strings only: one match skips a run of plain characters and complete strings inside a
    # value (what the token loop below would step through one string at a time). It never passes
    # a bracket, an incomplete string or where a stop marker may start, so every decision of the
    # loop is left to the loop; a stop marker spelled with a quote or bracket turns it off.
    special = brackets + closers + '"' + "".join(sorted({m[0] for m in stops}))
    skip = (re.compile(r'(?:[^' + re.escape(special) + r']+|"(?:[^"\\]|\\.)*")*', re.DOTALL)
            if strings == _JSON_STRINGS and not any(set(m) & set(brackets + closers + '"') for m in stops)
            else None)
    return brackets, closers, strings, tokens, re.compile("|".join(alts)), str_re, skip


class BalancedScanner:
    """Scans one bracketed value starting at its opening bracket."""

    __slots__ = ("_brackets", "_closers", "_esc", "_in", "_out_re", "_prefixes", "_skip_re", "_str_close", "_str_re",
                 "_strings", "_tokens", "pieces", "stack")

    def __init__(
        self,
        brackets: str = "{[",
        strings: Sequence[tuple[str, str, bool]] = (('"', '"', True),),
        stops: MarkerSet | None = None,
    ) -> None:
        c = _compiled(brackets, tuple(strings), stops.markers if stops else ())
        (self._brackets, self._closers, self._strings, self._tokens, self._out_re, self._str_re,
         self._skip_re) = c
        self._prefixes = self._tokens.prefixes
        self._in: int | None = None
        self._str_close = ""
        self._esc = False
        self.stack: list[str] = []
        self.pieces: list[str] = []

    def text(self) -> str:
        return "".join(self.pieces)

    def bounded(self, status: ScanStatus) -> tuple[str, bool] | None:
        """The value's text once scanning ended: as written (``done``), or with its closing
        brackets added when an end marker bounded it (``stop``: a repair, hence the flag).
        None for an unbalanced closer."""
        if status == "done":
            return self.text(), False
        if status == "stop":
            return self.text() + "".join(_CLOSER[b] for b in reversed(self.stack)), True
        return None

    def list_closed_at_end(self) -> str | None:
        """At the end of the stream, a list of complete items missing only its ``]``, closed."""
        if self.stack == ["["] and self._in is None:
            return self.text().rstrip(" \t\r\n").rstrip(",") + "]"
        return None

    def feed(self, text: str, pos: int, final: bool) -> tuple[ScanStatus, int]:
        """Consume from ``pos``; returns (status, index).

        ``done``: the value ended just before ``index``. ``stop``: a stop marker starts at
        ``index`` outside any string. ``more``: everything before
        ``index`` was consumed; ``text[index:]`` must be fed again with more text. ``error``: an
        unbalanced closing bracket at ``index``.
        """
        i = pos
        n = len(text)
        hold_out = -1
        while i < n:
            if self._in is not None:
                if self._esc:
                    # an escape skips one character, or the whole closing delimiter when that is
                    # longer (a doubled quote '""' escaped as '\""' in JSON written into CSV)
                    c = self._str_close
                    if len(c) > 1 and not final and n - i < len(c) and c.startswith(text[i:]):
                        self.pieces.append(text[pos:i])
                        return "more", i
                    self._esc = False
                    i += len(c) if len(c) > 1 and text.startswith(c, i) else 1
                    continue
                m = self._str_re[self._in].search(text, i)
                if m is None:
                    # a partial closing delimiter may sit at the end
                    hold = n if final else tail_prefix(text, self._str_close, i)
                    self.pieces.append(text[pos:hold])
                    return "more", hold
                if m.group() == "\\":
                    self._esc = True
                    i = m.end()
                    continue
                self._in = None
                i = m.end()
                if not self.stack:
                    self.pieces.append(text[pos:i])
                    return "done", i
                continue
            if self._skip_re is not None and self.stack:
                run = self._skip_re.match(text, i)
                if run is not None:  # always (the pattern matches the empty string)
                    i = run.end()
            m = self._out_re.search(text, i)
            if not final:
                # the holdback can only start in the last (longest marker - 1) characters: before
                # those, a found token needs no holdback computed
                if hold_out < 0 and (m is None or m.start() >= n - self._tokens.longest + 1):
                    hold_out = self._tokens.holdback(text, 0) if self._tokens else n
                if m is None or (hold_out >= 0 and m.start() >= hold_out):
                    h = max(hold_out, i)
                    self.pieces.append(text[pos:h])
                    return "more", h
                # a token that may still grow into a longer one (match_at(...) is True, inlined)
                if n - m.start() < self._tokens.longest and text[m.start():] in self._prefixes:
                    self.pieces.append(text[pos:m.start()])
                    return "more", m.start()
            elif m is None:
                self.pieces.append(text[pos:n])
                return "more", n
            tok = m.group()
            j = m.start()
            if len(tok) == 1 and tok in self._brackets:
                self.stack.append(tok)
                i = m.end()
                continue
            if len(tok) == 1 and tok in self._closers:
                if not self.stack or self.stack[-1] != _PAIRS[tok]:
                    self.pieces.append(text[pos:j])
                    return "error", j
                self.stack.pop()
                i = m.end()
                if not self.stack:
                    self.pieces.append(text[pos:i])
                    return "done", i
                continue
            for k, (o, c, _esc) in enumerate(self._strings):
                if tok == o:
                    self._in = k
                    self._str_close = c
                    self._esc = False
                    i = m.end()
                    break
            else:
                self.pieces.append(text[pos:j])
                return "stop", j
        self.pieces.append(text[pos:n])
        return "more", n
