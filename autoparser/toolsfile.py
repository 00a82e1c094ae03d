"""Reading a tools file: the one place the command line turns ``--tools FILE`` into a tool list.

Why one place: ``autoparse PATH --emit``, ``autoparse parse`` and ``autoparse batch`` each took a
tools file and read it their own way, so the same file could be a clean grammar in one command, a
traceback in another and a grammar forcing a tool named ``tools`` in a third. Every command calls
:func:`read_tools_file`; it accepts the two shapes people have at hand:

- a JSON list of tool definitions (OpenAI's ``{"type": "function", "function": {"name", ...}}``,
  or bare ``{"name", "parameters"}`` objects);
- a request body: a JSON object with a ``"tools"`` list (the rest of the body is ignored).

Each item is read by :func:`autoparser.wire.read_tools` (the parser's and the grammars' reader,
so OpenAI, flat and Anthropic ``input_schema`` items all work).

Anything else is a :class:`~autoparser.errors.SourceError` that names the file and says which shape
was expected. Tools that are not functions (``{"type": "web_search"}``) are kept: a parser ignores
them, a grammar says it cannot use them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import SourceError
from .wire import ToolsError, read_tools

__all__ = ["read_tools_file", "tools_from_json"]

_SHAPES = 'a JSON list of tool definitions, or a request body with a "tools" list'


def tools_from_json(value: object) -> list[dict[str, Any]]:
    """The tool list in a decoded JSON value (either shape above).

    Raises :class:`ValueError` saying what is wrong but not where: the caller names the file, row
    or argument.
    """
    if isinstance(value, Mapping):
        if "tools" not in value:
            keys = ", ".join(repr(k) for k in list(value)[:5]) or "none"
            raise ValueError(f"expected {_SHAPES}; got an object without \"tools\" (keys: {keys})")
        value = value["tools"]
        if not isinstance(value, list):
            raise ValueError(f'"tools" must be a list of tool definitions, got {_json_type(value)}')
    elif not isinstance(value, list):
        raise ValueError(f"expected {_SHAPES}; got {_json_type(value)}")
    try:
        read_tools(value, strict=True, skip_foreign=True)
    except ToolsError as exc:
        raise ValueError(str(exc)) from None
    return [dict(item) for item in value]


def read_tools_file(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The tools in a JSON file; a missing, unreadable, empty or malformed file is a
    :class:`~autoparser.errors.SourceError` naming the file."""
    from .templates._hf import read_json

    data = read_json(Path(path))
    try:
        return tools_from_json(data)
    except ValueError as exc:
        raise SourceError(str(path), f"not a tools file: {exc}") from None


def _json_type(value: object) -> str:
    """The JSON name of a decoded value's type (what the user wrote, not Python's name for it)."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)
