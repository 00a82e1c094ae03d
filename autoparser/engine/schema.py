"""Tool-schema validation by a real JSON Schema implementation (fastjsonschema), compiled once.

Rules of this module (the engine relies on them):

- Validation is the last check before a caller authorises and dispatches a call, so it is done by
  a complete, maintained JSON Schema implementation, not by a hand-written subset. fastjsonschema
  was chosen over jsonschema + referencing for the per-call cost (docs/engine.md, "Schema
  validation"): it compiles a schema to a Python function once; a small call then costs a few µs.
- Nothing here raises on account of a schema or a value. A schema the library cannot compile
  (invalid, unsatisfiable, or with a ``$ref`` outside the document) yields *notes* and no
  validator: the call goes through unvalidated and the caller reports the notes once. A remote
  ``$ref`` is refused before the library sees it, because the library would fetch it with urllib.
- Compiled validators are cached by the schema's canonical JSON (and, for the repeated calls of
  one parser, by the identity of the schema object), so a schema is compiled once per process.
- fastjsonschema implements draft-04/06/07. Clients write 2020-12 (Pydantic v2: ``$defs``,
  ``prefixItems``, ``$ref`` with sibling keywords), draft-07 (``definitions``) and OpenAPI
  (``nullable``), and hand-written tools use Python type names (``int``). ``draft07_view``
  rewrites those spellings into their draft-07 equivalents, keyword by keyword, before compiling;
  the property tests check the verdict against jsonschema's 2020-12 validator.
- Problems are data (``Problem``: instance path, keyword, the keyword's value, the offending
  value); their ``str`` is the message, ``location.city: required``.

How a schema is *spelt* (type aliases, ``$defs``, the subschema keywords) is read from
:mod:`autoparser.wire.schema`, as the coercer and the grammars read it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autoparser.wire.schema import (
    MAX_SCHEMA_DEPTH,
    SUBSCHEMA_LIST,
    SUBSCHEMA_MAP,
    SUBSCHEMA_ONE,
    json_type,
)

__all__ = [
    "Problem",
    "check_arguments",
    "draft07_view",
    "quick_check",
]

# How many distinct compiled schemas the process keeps (a server sees few distinct tool lists).
_CACHE_SIZE = 512

_ONE, _MANY, _MAP = SUBSCHEMA_ONE, SUBSCHEMA_LIST, SUBSCHEMA_MAP

# Keywords that only annotate: a ``$ref`` with only these beside it needs no allOf wrapper.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly",
                          "writeOnly", "$comment", "$id", "$anchor", "$schema"})

_DRAFT07_URIS = ("json-schema.org/draft-04/", "json-schema.org/draft-06/", "json-schema.org/draft-07/")


# -- problems --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Problem:
    """One way a call's arguments fail their schema.

    ``path`` is the instance path (keys and list indexes) of the offending value, ``()`` for the
    arguments object itself; for ``required`` it ends with the missing name and for
    ``additionalProperties`` with the extra one, because that is where a reader looks.
    ``keyword`` is the JSON Schema keyword that failed; ``expected`` its value in the schema.
    """

    path: tuple[str | int, ...]
    keyword: str
    expected: Any = None
    value: Any = None

    @property
    def where(self) -> str:
        out = ""
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
        return out or "arguments"

    def __str__(self) -> str:
        key, want, got = self.keyword, self.expected, _show(self.value)
        if key == "required":
            return f"{self.where}: required"
        if key == "additionalProperties":
            return f"{self.where}: not allowed (additionalProperties is false)"
        if key == "type":
            kinds = [want] if isinstance(want, str) else want if isinstance(want, (list, tuple)) else [want]
            return f"{self.where}: expected {' or '.join(map(str, kinds))}, got {json_type_of(self.value)}"
        if key == "enum":
            return f"{self.where}: {got} is not one of {_show(want)}"
        if key == "const":
            return f"{self.where}: {got} is not {_show(want)}"
        if key in _COMPARISONS:
            return f"{self.where}: {got} {_COMPARISONS[key]} {key} {_show(want)}"
        if key == "anyOf":
            return f"{self.where}: {got} matches none of the anyOf alternatives"
        if key == "oneOf":
            return f"{self.where}: {got} does not match exactly one of the oneOf alternatives"
        return f"{self.where}: {got} fails {key} {_show(want)}"


_COMPARISONS = {
    "maximum": ">", "minimum": "<", "exclusiveMaximum": ">=", "exclusiveMinimum": "<=",
    "maxLength": "longer than", "minLength": "shorter than", "maxItems": "longer than",
    "minItems": "shorter than", "maxProperties": "larger than", "minProperties": "smaller than",
}


def _show(value: object, limit: int = 60) -> str:
    """Short JSON spelling of a value for messages (a 1 MB value must not become a 1 MB message)."""
    try:
        spelled = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        spelled = repr(value)
    return spelled if len(spelled) <= limit else spelled[:limit] + "..."


def json_type_of(value: object) -> str:
    """The JSON name of a value's type (Python's name for a value JSON has no type for)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _foreign_ref(schema: object) -> str | None:
    """The first ``$ref`` that does not point into this document, or None."""
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            continue
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if ref is not None and not (isinstance(ref, str) and ref.startswith("#")):
                return str(ref)
            for key, value in node.items():
                if key not in ("enum", "const", "default", "examples"):
                    stack.append((value, depth + 1))
        elif isinstance(node, (list, tuple)):
            stack.extend((item, depth + 1) for item in node)
    return None


# -- the draft-07 view of a schema -----------------------------------------------------------------


def draft07_view(schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Rewrite 2020-12, OpenAPI and Python spellings into draft-07, which fastjsonschema runs.

    Returns the rewritten copy and notes about what could not be kept. Each rewrite is an exact
    equivalence: ``$ref`` with constraint siblings becomes ``allOf`` [ref, siblings] (2020-12
    applies both; draft-07 ignores the siblings); ``prefixItems`` + ``items`` become ``items``
    array + ``additionalItems``; ``dependentRequired``/``dependentSchemas`` become
    ``dependencies``; OpenAPI ``nullable: true`` adds ``null`` to ``type``; Python type names
    (``int``, ``float`` ...) become JSON Schema names. A type name nobody knows is dropped with a
    note (it constrains nothing we can check). A schema declaring draft-04/06/07 in ``$schema``
    keeps draft-07 ``$ref`` semantics.
    """
    notes: list[str] = []
    declared = schema.get("$schema")
    old_draft = isinstance(declared, str) and any(uri in declared for uri in _DRAFT07_URIS)

    def walk(node: Any, depth: int) -> Any:
        if depth > MAX_SCHEMA_DEPTH:
            notes.append(f"schema nested deeper than {MAX_SCHEMA_DEPTH} levels; the rest is not checked")
            return {}
        if not isinstance(node, Mapping):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _ONE:
                out[key] = [walk(v, depth + 1) for v in value] if isinstance(value, (list, tuple)) else walk(
                    value, depth + 1)
            elif key in _MANY and isinstance(value, (list, tuple)):
                out[key] = [walk(v, depth + 1) for v in value]
            elif key in _MAP and isinstance(value, Mapping):
                out[key] = {name: walk(sub, depth + 1) for name, sub in value.items()}
            else:
                out[key] = value
        if out.get("$schema") is declared and depth == 0 and not old_draft:
            out.pop("$schema", None)
        _fix_types(out, notes)
        if not old_draft:
            _fix_2020(out)
        return out

    result = walk(schema, 0)
    return (result if isinstance(result, dict) else {}), notes


def _fix_types(node: dict[str, Any], notes: list[str]) -> None:
    declared = node.get("type")
    names = [declared] if isinstance(declared, str) else list(declared) if isinstance(declared, (list, tuple)) else None
    if names is None:
        if node.get("nullable") is True and "enum" in node and isinstance(node["enum"], list):
            node["enum"] = [*node["enum"], None]
        return
    kinds: list[str] = []
    for name in names:
        kind = json_type(name)
        if kind is None:
            notes.append(f"unknown type {_show(name)} is not checked")
            node.pop("type", None)
            return
        if kind not in kinds:
            kinds.append(kind)
    if node.get("nullable") is True:
        if "null" not in kinds:
            kinds.append("null")
        if isinstance(node.get("enum"), list) and None not in node["enum"]:
            node["enum"] = [*node["enum"], None]
    node["type"] = kinds[0] if len(kinds) == 1 else kinds


def _fix_2020(node: dict[str, Any]) -> None:
    if "$ref" in node and any(key not in _ANNOTATIONS and key != "$ref" for key in node):
        node["allOf"] = [{"$ref": node.pop("$ref")}, *node.get("allOf", ())]
    prefix = node.pop("prefixItems", None)
    if isinstance(prefix, list):
        rest = node.pop("items", None)
        node["items"] = prefix
        if rest is not None:
            node["additionalItems"] = rest
    dependent: dict[str, Any] = {}
    for key in ("dependentRequired", "dependentSchemas"):
        value = node.pop(key, None)
        if isinstance(value, Mapping):
            dependent.update(value)
    if dependent:
        node["dependencies"] = {**dependent, **(node.get("dependencies") or {})}


# -- compiling and checking ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A compiled validator (None when the schema is unusable) and why parts are not checked.

    ``failures`` holds the library's exception classes, so the per-call path imports nothing.
    """

    validate: Callable[[Any], Any] | None
    notes: tuple[str, ...]
    failures: tuple[type[Exception], type[Exception]] | None = None


_by_text: dict[str, _Compiled] = {}
_by_identity: dict[int, tuple[object, _Compiled]] = {}


def _refuse_fetch(uri: str) -> Any:
    raise ValueError(f"remote $ref {uri!r} is not fetched")


def _compile(schema: Mapping[str, Any]) -> _Compiled:
    foreign = _foreign_ref(schema)
    if foreign is not None:
        return _Compiled(None, (f"$ref {_show(foreign)} points outside the schema; calls are not validated",))
    view, notes = draft07_view(schema)
    try:
        import fastjsonschema
    except ImportError:
        return _Compiled(None, ("fastjsonschema is not installed; calls are not validated",))
    handlers = dict.fromkeys(("http", "https", "file", "ftp", ""), _refuse_fetch)
    try:
        validate = fastjsonschema.compile(view, handlers=handlers, use_default=False, use_formats=False,
                                          fast_fail=False)
    except Exception as exc:  # invalid schema: JsonSchemaDefinitionException, re.error, ValueError ...
        message = str(exc).replace("\n", " ")[:200]
        return _Compiled(None, (*notes, f"schema is not valid JSON Schema ({message}); calls are not validated"))
    failures = (fastjsonschema.JsonSchemaValuesException, fastjsonschema.JsonSchemaValueException)
    return _Compiled(validate, tuple(notes), failures)


def compiled(schema: Mapping[str, Any]) -> _Compiled:
    """The cached compiled form of ``schema``; never raises."""
    hit = _by_identity.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    try:
        text = json.dumps(schema, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError) as exc:
        result = _Compiled(None, (f"schema is not JSON ({type(exc).__name__}); calls are not validated",))
    else:
        found = _by_text.get(text)
        if found is None:
            found = _compile(schema)
            _evict(_by_text)
            _by_text[text] = found
        result = found
    _evict(_by_identity)
    _by_identity[id(schema)] = (schema, result)  # the strong reference keeps the id from reuse
    return result


def _evict(cache: dict[Any, Any]) -> None:
    """Drop the oldest entries of a full cache; a race with another thread costs a recompile only."""
    # RuntimeError: changed size during iteration; StopIteration: emptied meanwhile
    with contextlib.suppress(RuntimeError, StopIteration):
        while len(cache) >= _CACHE_SIZE:
            cache.pop(next(iter(cache)), None)


def schema_notes(schema: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Why ``schema`` is (partly) not checked; empty for a schema that fully compiles."""
    if not isinstance(schema, Mapping):
        return ()
    return compiled(schema).notes


def quick_check(schema: Mapping[str, Any] | None) -> Callable[[dict[str, Any]], object]:
    """A check that returns when arguments certainly match ``schema`` and raises otherwise.

    The per-call fast path (the engine keeps one per tool): it is the compiled validator itself,
    so a valid call costs the validator and nothing else. Raising means "ask
    ``check_arguments``", which then finds the problems (or none, for a validator that failed in
    some unexpected way), so the verdict is always ``check_arguments``'s.
    """
    if type(schema) is not dict and not isinstance(schema, Mapping):
        return _no_check
    found = compiled(schema)
    if found.validate is None or found.failures is None:
        return _no_check
    return found.validate


def _no_check(arguments: dict[str, Any]) -> None:
    return None


def check_arguments(arguments: object, schema: Mapping[str, Any] | None) -> list[Problem]:
    """Every problem of ``arguments`` against ``schema``; empty when valid or not checkable."""
    # type() fast paths: an ABC isinstance check costs as much as validating a small call
    if type(schema) is not dict and not isinstance(schema, Mapping):
        return []
    if type(arguments) is not dict and not isinstance(arguments, Mapping):
        return [Problem((), "type", "object", arguments)]
    found = compiled(schema)
    if found.validate is None or found.failures is None:
        return []
    many, one = found.failures
    try:
        found.validate(arguments)
    except many as exc:
        errors: Sequence[Any] = getattr(exc, "errors", ())
    except one as exc:
        errors = [exc]
    except RecursionError:
        return [Problem((), "maxDepth", MAX_SCHEMA_DEPTH, None)]
    else:
        return []
    problems: list[Problem] = []
    for error in errors:
        problems.extend(_problems(arguments, error))
    return problems


def _problems(arguments: Mapping[str, Any], error: Any) -> list[Problem]:
    """Turn one library error into problems at real instance paths (list indexes as ints)."""
    path: list[str | int] = []
    node: Any = arguments
    for part in list(error.path or ())[1:]:  # the first element names the root ("data")
        if isinstance(node, (list, tuple)) and str(part).isdigit():
            path.append(int(part))
            node = node[int(part)] if int(part) < len(node) else None
        else:
            path.append(str(part))
            node = node.get(str(part)) if isinstance(node, Mapping) else None
    rule = str(error.rule or "false")
    expected = error.rule_definition
    value = error.value
    if rule == "required" and isinstance(expected, (list, tuple)) and isinstance(value, Mapping):
        missing = [name for name in expected if isinstance(name, str) and name not in value]
        return [Problem((*path, name), "required", expected) for name in missing] or [
            Problem(tuple(path), rule, expected)]
    if rule == "additionalProperties" and isinstance(value, Mapping):
        extras = _extra_keys(value, error.definition)
        if extras:
            return [Problem((*path, key), rule, expected, value[key]) for key in extras]
    return [Problem(tuple(path), rule, expected, value)]


def _extra_keys(value: Mapping[str, Any], definition: object) -> list[str]:
    import re

    if not isinstance(definition, Mapping):
        return []
    props = definition.get("properties")
    patterns = definition.get("patternProperties")
    known = set(props) if isinstance(props, Mapping) else set()
    compiled_patterns = []
    for pattern in patterns if isinstance(patterns, Mapping) else ():
        try:
            compiled_patterns.append(re.compile(pattern))
        except re.error:
            continue
    return [key for key in value if key not in known and not any(p.search(key) for p in compiled_patterns)]
