"""Reading a tool list: the one place that knows the shapes clients write tools in.

Shapes read (each item; the list may mix them):

- OpenAI Chat Completions: ``{"type": "function", "function": {"name", "parameters", ...}}``;
- flat (Responses API, hand-written, Llama's): ``{"type": "function", "name", "parameters"}`` or
  ``{"name", "parameters"}``;
- Anthropic: ``{"name", "input_schema"}``;
- a mapping ``{name: parameters schema}`` instead of a list (grammar callers; not the parser's
  ``tools=`` argument, where a mapping is a caller bug).

The parameters schema is returned as given (a copy; ``{}`` when absent): validation reads it as
the client wrote it. Readers that walk it node by node (grammars) read
:func:`autoparser.wire.schema.normalized` of it, which resolves ``$ref``/``$defs`` and type
aliases the way validation does.

Two modes. ``strict=False`` (the parser): a request with one odd item must still parse, so
malformed items and non-function tools are skipped. ``strict=True`` (grammars, tools files): a
malformed item raises :class:`ToolsError` naming its index, because a grammar built without it
would force calls the caller did not ask for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ToolsError", "read_tools"]


class ToolsError(ValueError):
    """A tool list (or one item of it) is not in any shape :func:`read_tools` reads."""


def read_tools(tools: object, *, strict: bool = False, skip_foreign: bool = False) -> dict[str, dict[str, Any]]:
    """``{name: parameters schema}`` for a tool list in any shape above; None reads as no tools.

    ``strict``: raise :class:`ToolsError` for a malformed item (and accept a name -> schema
    mapping); otherwise skip it, and raise ``TypeError`` for anything but a list or tuple.
    ``skip_foreign`` (strict only): tools of another type (``{"type": "web_search"}``) are
    skipped rather than refused. When a name appears twice, the last definition wins.
    """
    if tools is None:
        return {}
    if strict and isinstance(tools, Mapping):
        return {str(k): dict(v) if isinstance(v, Mapping) else {} for k, v in tools.items()}
    if not isinstance(tools, (list, tuple)):
        if strict:
            raise ToolsError(f"tools must be a list of tool definitions, got {type(tools).__name__}")
        raise TypeError(f"tools must be a list of tool definitions (OpenAI format) or None, not {type(tools).__name__}")
    out: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(tools):
        try:
            found = _read_item(item)
        except ToolsError as exc:
            if strict and not (skip_foreign and str(exc) == _FOREIGN):
                raise ToolsError(f"tools[{index}] {exc}") from None
            continue
        name, params = found
        out[name] = params
    return out


_FOREIGN = "is not a function tool"
_SHAPE = '(expected {"type": "function", "function": {"name": ..., "parameters": ...}})'


def _read_item(item: object) -> tuple[str, dict[str, Any]]:
    if not isinstance(item, Mapping):
        raise ToolsError(f"must be an object, got {type(item).__name__}")
    spec: object = item
    if "function" in item:
        spec = item["function"]
        if not isinstance(spec, Mapping):
            raise ToolsError(f"has a 'function' that is not an object {_SHAPE}")
    elif item.get("type", "function") != "function":
        raise ToolsError(_FOREIGN)
    assert isinstance(spec, Mapping)
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ToolsError(f"has no function name {_SHAPE}")
    params = spec.get("parameters")
    if params is None:
        params = spec.get("input_schema")
    return name, dict(params) if isinstance(params, Mapping) else {}
