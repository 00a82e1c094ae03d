"""Events the streaming engine returns from ``feed()`` and ``close()``.

Like h11's events: immutable, slotted, and nothing but data. Coalescing adjacent deltas of the same
kind gives the same sequence for every chunking of the same text (the engine's main guarantee).
"""

from __future__ import annotations

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
]

CallStatus = Literal["ok", "repaired", "truncated", "invalid", "dropped"]


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
    """A call whose name is complete. ``known`` is False when tools were given and this is not one."""

    index: int
    id: str
    name: str
    known: bool


@dataclass(frozen=True, slots=True)
class ToolCallArgsDelta(Event):
    """A fragment of the call's arguments as JSON text; a call's fragments concatenate to valid JSON."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEnd(Event):
    """The call is finished. ``status`` says whether it is usable as is.

    ``dropped`` withdraws a call that was announced but turned out not to be a usable call (for
    example its arguments were cut off mid-value): it is not part of the result's ``tool_calls``,
    and its raw text is returned as content or dropped as the profile's recovery rules say. Every
    other status is a call in the result.
    """

    index: int
    arguments: dict[str, Any]
    status: CallStatus
