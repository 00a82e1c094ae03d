"""The aggregate of a parse: what ``Parser.result()`` and ``autoparser.parse()`` return."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from .events import CallStatus

__all__ = ["Issue", "Result", "ToolCall"]


@dataclass(frozen=True, slots=True)
class Issue:
    """Something the lenient parser repaired or noticed. ``position`` is a character offset."""

    code: str
    message: str
    position: int

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "position": self.position}


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str
    status: CallStatus = "ok"
    known: bool = True

    @property
    def arguments_json(self) -> str:
        """Arguments as the JSON string OpenAI's wire format carries."""
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Result:
    reasoning: str = ""
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    finish: Literal["stop", "tool_calls", "length"] = "stop"
