"""Reading a tool's JSON schema: type names, references, and the subschema keywords.

Rules of this module:

- This is the only place that knows how clients *spell* a schema: Python/C type names (``str``,
  ``int``, ``dict`` ...) beside JSON Schema's, Pydantic's ``$defs`` and draft-07's
  ``definitions``, same-document ``$ref``. Everything else (the engine's coercer and validator,
  every grammar back-end, the exporters) asks here, so a spelling read one way by the parser is
  read the same way by the grammar that forces it.
- Nothing here raises on account of a schema: an unknown type name is reported as None (the
  caller decides: the validator drops it with a note, a grammar widens to any value), a
  reference that does not resolve stays as it is.
- Walks stop at ``MAX_SCHEMA_DEPTH`` (schemas nest, and a Python dict may contain itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

__all__ = [
    "DEFS_KEYS",
    "MAX_SCHEMA_DEPTH",
    "SUBSCHEMA_LIST",
    "SUBSCHEMA_MAP",
    "SUBSCHEMA_ONE",
    "inline_refs",
    "json_type",
    "json_types",
    "normalized",
    "resolve_ref",
]

MAX_SCHEMA_DEPTH = 32

# JSON Schema's type names, plus the Python/C spellings hand-written tool definitions use.
# Keys are lower-case; json_type lower-cases and strips the name it is given.
_TYPE_NAMES: dict[str, str] = {
    "string": "string", "str": "string", "text": "string",
    "integer": "integer", "int": "integer", "long": "integer",
    "number": "number", "float": "number", "double": "number",
    "boolean": "boolean", "bool": "boolean",
    "object": "object", "dict": "object",
    "array": "array", "list": "array",
    "null": "null", "none": "null",
}

# Keywords whose value is one subschema, a list of them, or a name -> subschema map. Values of
# every other keyword (enum, const, default, examples ...) are data and are never rewritten.
SUBSCHEMA_ONE = ("additionalProperties", "additionalItems", "items", "contains", "propertyNames", "not",
                 "if", "then", "else", "unevaluatedProperties", "unevaluatedItems")
SUBSCHEMA_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
#: where a document keeps the schemas its references point to (2020-12, draft-07)
DEFS_KEYS = ("$defs", "definitions")
SUBSCHEMA_MAP = ("properties", "patternProperties", *DEFS_KEYS, "dependentSchemas")


def json_type(name: object) -> str | None:
    """The JSON Schema type a ``type`` entry names (``"int"`` -> ``"integer"``), or None."""
    if not isinstance(name, str):
        return None
    return _TYPE_NAMES.get(name.strip().lower())


def json_types(schema: object) -> frozenset[str]:
    """The JSON types a schema's own ``type`` and ``anyOf``/``oneOf`` alternatives name.

    Aliases are read (``{"type": "str"}`` is a string); a schema without ``type`` that lists
    ``properties`` is an object. Unknown names are left out; ``$ref`` is not followed (read a
    :func:`normalized` schema for that).
    """
    out: set[str] = set()
    stack: list[tuple[object, int]] = [(schema, 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, Mapping) or depth > MAX_SCHEMA_DEPTH:
            continue
        declared = node.get("type")
        names = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
        found = {t for t in map(json_type, names) if t is not None}
        for key in ("anyOf", "oneOf"):
            alternatives = node.get(key)
            if isinstance(alternatives, list):
                stack.extend((alt, depth + 1) for alt in alternatives)
        if not found and not names and isinstance(node.get("properties"), Mapping):
            found.add("object")
        out |= found
    return frozenset(out)


def resolve_ref(root: object, ref: object) -> Any:
    """The subschema a same-document ``$ref`` (``#``, ``#/$defs/Name``) points to, or None.

    Remote and relative references resolve to None: nothing in this package fetches a schema.
    """
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    node: Any = root
    pointer = unquote(ref[1:])
    if not pointer:
        return node
    if not pointer.startswith("/"):
        return None  # a plain-name fragment ($anchor); not followed
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, (list, tuple)) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def inline_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` with same-document ``$ref`` replaced by what they point to.

    For consumers that read a schema node by node (grammars) and have no document at hand.
    Sibling keywords of a ``$ref`` are laid over the target (Pydantic writes ``{"$ref": ...,
    "default": ...}``); a single-member ``allOf`` is merged the same way. A reference met again
    inside its own expansion (a recursive model) or one that does not resolve is left as it is,
    and then the document's ``$defs``/``definitions`` are kept, so that the copy stays a complete
    schema: a node-by-node reader widens such a ``$ref`` to any value, a consumer that resolves
    references itself (xgrammar's JSON-schema node) still can.
    """
    kept: list[bool] = []

    def walk(node: Any, depth: int, active: tuple[str, ...]) -> Any:
        if depth > MAX_SCHEMA_DEPTH:
            return {}
        if isinstance(node, (list, tuple)):
            return [walk(item, depth + 1, active) for item in node]
        if not isinstance(node, Mapping):
            return node
        out: dict[str, Any] = {}
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = resolve_ref(schema, ref)
            if ref in active or not isinstance(target, Mapping):
                kept.append(True)
                return dict(node)
            out.update(walk(target, depth + 1, (*active, ref)))
        all_of = node.get("allOf")
        merge_all_of = isinstance(all_of, (list, tuple)) and len(all_of) == 1 and isinstance(all_of[0], Mapping)
        if merge_all_of:
            out.update(walk(all_of[0], depth + 1, active))  # type: ignore[index]
        for key, value in node.items():
            if key == "$ref" or (key == "allOf" and merge_all_of):
                continue
            if key in SUBSCHEMA_ONE or key in SUBSCHEMA_LIST:
                out[key] = walk(value, depth + 1, active)
            elif key in DEFS_KEYS:
                continue  # references into them are inlined; kept below only if one is left
            elif key in SUBSCHEMA_MAP and isinstance(value, Mapping):
                out[key] = {name: walk(sub, depth + 1, active) for name, sub in value.items()}
            else:
                out[key] = value
        return out

    result = walk(schema, 0, ())
    if not isinstance(result, dict):
        return {}
    if kept:
        for key in DEFS_KEYS:
            if key in schema:
                result[key] = schema[key]
    return result


def normalized(schema: object) -> dict[str, Any]:
    """The schema as a grammar reads it: references inlined, type aliases in JSON Schema's names.

    ``{"type": "int"}`` becomes ``{"type": "integer"}``, a list of names a list of canonical
    names; an unknown name is kept as written (a reader then widens it to any value). The result
    is what validation checks against, so a grammar built from it forces what the parser accepts.
    """
    if not isinstance(schema, Mapping):
        return {}

    def walk(node: Any, depth: int) -> Any:
        if depth > MAX_SCHEMA_DEPTH or not isinstance(node, Mapping):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in SUBSCHEMA_ONE:
                out[key] = [walk(v, depth + 1) for v in value] if isinstance(value, list) else walk(value, depth + 1)
            elif key in SUBSCHEMA_LIST and isinstance(value, list):
                out[key] = [walk(v, depth + 1) for v in value]
            elif key in SUBSCHEMA_MAP and isinstance(value, Mapping):
                out[key] = {name: walk(sub, depth + 1) for name, sub in value.items()}
            elif key == "type":
                out[key] = _canonical_type(value)
            else:
                out[key] = value
        return out

    result = walk(inline_refs(schema), 0)
    return result if isinstance(result, dict) else {}


def _canonical_type(declared: object) -> object:
    if isinstance(declared, str):
        return json_type(declared) or declared
    if isinstance(declared, list):
        return list(dict.fromkeys(json_type(t) or t for t in declared))
    return declared
