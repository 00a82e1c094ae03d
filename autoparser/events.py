"""Events the streaming engine returns from ``feed()`` and ``close()``.

Like h11's events: immutable, slotted, and nothing but data. Coalescing adjacent deltas of the same
kind gives the same sequence for every chunking of the same text (the engine's main guarantee).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "CallStatus",
    "ContentDelta",
    "Event",
    "ReasoningDelta",
    "ToolCallArgsDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "coalesce",
]

CallStatus = Literal["ok", "repaired", "truncated", "invalid"]


class Event:
    """Base class of all events."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ReasoningDelta(Event):
    text: str


@dataclass(frozen=True, slots=True)
class ContentDelta(Event):
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStart(Event):
    """A call whose name is complete and that can no longer turn out not to be a call.

    ``known`` is False when tools were given and this is not one."""

    index: int
    id: str
    name: str
    known: bool


@dataclass(frozen=True, slots=True)
class ToolCallArgsDelta(Event):
    """A fragment of the call's arguments as JSON text; a call's fragments concatenate to valid JSON,
    and what was sent so far, with its open string and brackets closed, is valid JSON too."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEnd(Event):
    """The call is finished; ``arguments`` equals the JSON of its ``ToolCallArgsDelta`` texts.

    Every started call ends, and is in the result: ``ok``; ``repaired`` (closing brackets added,
    bounded by the end marker); ``truncated`` (the output ended inside a call already announced,
    or a dialect whose peers surface a cut-off last value; flagged); ``invalid`` (malformed after
    it was announced, or arguments that do not match the tool's schema; forwarded, flagged).
    """

    index: int
    arguments: dict[str, Any]
    status: CallStatus


def coalesce(events: Iterable[Event]) -> list[Event]:
    """Adjacent deltas of one kind (and call) merged into one.

    The engine's chunk-invariance guarantee is stated on this form: for any chunking of the same
    text, the coalesced event lists are equal.
    """
    if not isinstance(events, Iterable):
        raise TypeError(f"events must be an iterable of autoparser events, got {type(events).__name__}")
    out: list[Event] = []
    for e in events:
        if not isinstance(e, Event):
            raise TypeError(f"events must hold autoparser events, got {type(e).__name__}")
        last = out[-1] if out else None
        if isinstance(e, ContentDelta) and isinstance(last, ContentDelta):
            out[-1] = ContentDelta(last.text + e.text)
        elif isinstance(e, ReasoningDelta) and isinstance(last, ReasoningDelta):
            out[-1] = ReasoningDelta(last.text + e.text)
        elif isinstance(e, ToolCallArgsDelta) and isinstance(last, ToolCallArgsDelta) and last.index == e.index:
            out[-1] = ToolCallArgsDelta(e.index, last.text + e.text)
        else:
            out.append(e)
    return out
