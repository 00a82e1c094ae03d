"""autoparser: derive a model's output protocol from its chat template, and parse its output.

The public names are re-exported here; heavy optional parts (template analysis, OpenVINO GenAI)
are imported only when used.
"""

from __future__ import annotations

from typing import Any

from .dialects import DialectInfo, dialects, get_profile
from .errors import AutoparserError, ParseError, ProfileError, TemplateError, UnknownDialectError
from .events import (
    ContentDelta,
    Event,
    ReasoningDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    coalesce,
)
from .parse import parse
from .policy import Policy
from .profile import Profile
from .result import Issue, Result, ToolCall

__version__ = "0.1.0"

__all__ = [
    "AutoparserError",
    "ContentDelta",
    "DialectInfo",
    "Event",
    "Issue",
    "ParseError",
    "Policy",
    "Profile",
    "ProfileError",
    "ReasoningDelta",
    "Result",
    "TemplateError",
    "ToolCall",
    "ToolCallArgsDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "UnknownDialectError",
    "coalesce",
    "dialects",
    "get_profile",
    "parse",
]


def __getattr__(name: str) -> Any:
    """Lazy access to the parts that need optional dependencies."""
    if name == "load":
        from .specs import load

        return load
    if name in ("analyze", "detect"):
        import importlib

        try:
            derive = importlib.import_module(".derive", __name__)
        except ModuleNotFoundError as e:  # template analysis is not installed in this build
            raise AttributeError(f"autoparser.{name} is not available: {e}") from None
        return getattr(derive, name)
    if name == "resolve":
        from .export.resolve import resolve

        return resolve
    if name == "openai":
        # ``from . import openai`` would look the name up on this package first and re-enter this
        # function; importing by full name binds the submodule as an attribute without that.
        import importlib

        return importlib.import_module(".openai", __name__)
    raise AttributeError(f"module 'autoparser' has no attribute {name!r}")
