"""The text a parser holds and has not written yet: the one owner of the machine's buffers.

Rules of this file:

* Every piece of text the machine (``machine.Parser`` and ``harmony.Harmony``) keeps between two
  ``feed()`` calls, or across markers, is held here, with the reason it may be held and what
  bounds it. Nothing is held "just in case".
* Text below the machine is held by its owners, each bounded by the call it belongs to: a
  region's ``raw`` (the call's literal text, pushed back as content if the call is rejected), a
  codec body's pieces and a ``BalancedScanner``'s ``pieces`` (the call body until it is complete,
  parsed once), a ``JsonArgStream``'s undecided token (a key, a number, an escape). When a call
  ends, all of them are dropped.

Theory of operation. ``carry`` is the unread tail of the working string: what the last handler
could not decide on (a proper prefix of a marker: at most the longest marker minus one
character; or the unconsumed tail of a call body the codec waits on). ``feed()`` reads
``carry + chunk``. ``held`` is text read but not yet written because what it is is undecided:
before the first marker with ``reasoning="auto"`` (reasoning or content) and a call marker
inside reasoning with ``call_in_reasoning="defer"`` (reasoning or a call): bounded by the
reasoning block, and released whole when a marker or the end decides. ``header`` is a Harmony
message header being read, bounded by ``harmony.MAX_HEADER``.
"""

from __future__ import annotations

__all__ = ["Pending"]


class Pending:
    """The parser's held text: ``carry`` (read directly by the feed loop), ``held``, ``header``."""

    __slots__ = ("_header", "_header_len", "_held", "carry")

    def __init__(self) -> None:
        self.carry = ""
        self._held: list[str] = []
        self._header: list[str] = []
        self._header_len = 0

    # -- held: read, undecided -------------------------------------------------------------
    def hold(self, text: str) -> None:
        self._held.append(text)

    def take_held(self) -> str:
        """The held text, released (the caller writes it as what was decided)."""
        text = "".join(self._held)
        self._held = []
        return text

    # -- header: a Harmony message header being read ----------------------------------------
    def add_header(self, text: str) -> None:
        self._header.append(text)
        self._header_len += len(text)

    @property
    def header_len(self) -> int:
        return self._header_len

    def header(self) -> str:
        """The header so far (kept)."""
        return "".join(self._header)

    def take_header(self) -> str:
        """The header so far, released."""
        text = "".join(self._header)
        self._header = []
        self._header_len = 0
        return text
