"""The one reading of the wire format's inputs: tool lists, schema types and references, names.

The parser (engine), every grammar back-end, the exporters, the tools-file reader and the server
read tools through this package and nothing else, so that a tool the parser reads one way is
never forced another way by a grammar (a test checks that no other module reads tool shapes,
``$defs`` or type aliases itself).
"""

from __future__ import annotations

from .names import CALL_NAME, MAX_NAME, NOT_IN_NAME, is_call_name, is_name, name_class, writable
from .schema import inline_refs, json_type, json_types, normalized, resolve_ref
from .tools import ToolsError, read_tools

__all__ = [
    "CALL_NAME",
    "MAX_NAME",
    "NOT_IN_NAME",
    "ToolsError",
    "inline_refs",
    "is_call_name",
    "is_name",
    "json_type",
    "json_types",
    "name_class",
    "normalized",
    "read_tools",
    "resolve_ref",
    "writable",
]
