"""Argument values: tool schemas, schema-driven coercion, literal parsers and validation.

Rules of this module (the engine relies on them):

- Everything here is pure: no I/O, no state, no module-level side effects beyond constant tables
  and compiled patterns.
- The *parsers* (``parse_python_literal``, ``parse_python_calls``, ``parse_relaxed_object``) are
  strict: they return a JSON-compatible value or raise ``ValueError``. The engine decides what a
  failure means (keep the raw text as content, repair, mark the call invalid), so a parser never
  guesses.
- The *coercer* and the *validator* (``coerce_text``, ``validate_arguments``) never raise. They sit
  on the path of every tool call, and one odd schema or value must not lose a whole call (mlx-lm's
  qwen3-coder parser used to crash on ``int('2026-01-15')`` and drop the call). They report
  problems instead. Validation itself is a real JSON Schema implementation's (``schema.py``,
  fastjsonschema); this module only adapts it to the engine's call sites.
- Only JSON-compatible values come out: ``dict`` with ``str`` keys, ``list``, ``str``, ``int``,
  finite ``float``, ``bool``, ``None``. Tuples become lists; NaN and infinities are refused,
  because ``ToolCall.arguments_json`` must be valid JSON.

Theory of coercion (conformance policy 8: "JSON dialects preserve the JSON type as written; XML and
tag dialects coerce by schema, with fallback to the raw string"): a tag dialect writes every value
as bare text, so the parameter's JSON schema is the only evidence of the intended type. Without a
schema nothing is guessed. The schema is read as validation reads it (through same-document
``$ref``, ``allOf`` and ``anyOf``), so coercion never produces a type the validator then rejects
for its type alone. With one, a ``null`` literal is null (every peer treats it specially,
even for string-typed parameters), then the non-string alternatives are tried from the most to the
least structured, and a string alternative (or an unconstrained one) takes whatever is left. When
nothing fits, the raw text is kept and an issue message says why.
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from autoparser.wire import schema as wire_schema

from . import schema as schema_mod

__all__ = [
    "bare_key_re",
    "check_arguments",
    "coerce_text",
    "parse_python_calls",
    "parse_python_literal",
    "parse_relaxed_object",
    "schema_notes",
    "validate_arguments",
]

# -- schema reading --------------------------------------------------------------------------------

# The order in which coercion tries non-string alternatives: most structured first, so that a
# value that parses as an object under ``anyOf(object, string)`` becomes the object.
_COERCE_ORDER: tuple[str, ...] = ("object", "array", "integer", "number", "boolean")

# Schemas nest (anyOf inside properties inside items ...) and a Python dict may even contain
# itself; every recursive walk over a schema stops at this depth instead of overflowing.
_MAX_SCHEMA_DEPTH = wire_schema.MAX_SCHEMA_DEPTH

# Largest decimal exponent accepted when turning "1e5"-style text into an exact int; beyond it the
# int would be enormous (a denial-of-service vector) and Python refuses such ints in str() anyway.
_MAX_INT_EXPONENT = 4000

# Floats beyond 2**53 are not exact integers, so "integral float -> int" stops there.
_MAX_EXACT_FLOAT_INT = 2**53


class _TypeInfo:
    """What a (possibly composed) schema allows, flattened for coercion.

    ``types`` holds normalised JSON-schema type names. ``open`` is true when some alternative
    carries no type information at all (an unresolvable ``$ref``, ``const``, an unknown type
    name), which means "anything goes" for that alternative: the raw string is then an acceptable
    fallback. ``members`` lists the ``enum``/``const`` values some alternative names (None: no
    alternative names any). A schema with no types and ``open`` set constrains nothing.
    """

    __slots__ = ("members", "open", "types")

    def __init__(self, types: set[str] | None = None, open_: bool = False,
                 members: list[Any] | None = None) -> None:
        self.types: set[str] = types if types is not None else set()
        self.open = open_
        self.members = members

    @property
    def unconstrained(self) -> bool:
        return self.open and not self.types and self.members is None


def _both(left: _TypeInfo, right: _TypeInfo) -> _TypeInfo:
    """What satisfies both (``allOf``, ``$ref`` beside other keywords): the intersection."""
    if left.unconstrained:
        return right
    if right.unconstrained:
        return left
    types = left.types & right.types
    for narrow, wide in ((left.types, right.types), (right.types, left.types)):
        if "integer" in narrow and "number" in wide:
            types.add("integer")
    if left.open:
        types |= right.types
    if right.open:
        types |= left.types
    members = left.members if left.members is not None else right.members
    if left.members is not None and right.members is not None:
        members = [m for m in left.members if m in right.members]
    return _TypeInfo(types, left.open and right.open, members)


def _read_types(schema: object, root: object, depth: int) -> _TypeInfo:
    """Read ``schema`` as validation does: through same-document ``$ref`` and ``allOf`` (intersection)
    and ``anyOf``/``oneOf`` (union), so a ``$ref``'d model is an object.

    ``type`` wins over ``anyOf``/``oneOf`` when both are present: the alternatives then usually
    add constraints (``required`` sets) rather than types, and reading them as open alternatives
    would wrongly accept any raw string.
    """
    if depth > _MAX_SCHEMA_DEPTH or not isinstance(schema, Mapping):
        return _TypeInfo(open_=True)
    info = _TypeInfo()
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else declared if isinstance(declared, (list, tuple)) else None
    alternatives = next((schema[key] for key in ("anyOf", "oneOf")
                         if isinstance(schema.get(key), (list, tuple)) and schema[key]), None)
    if names is not None:
        for entry in names:
            norm = wire_schema.json_type(entry)
            if norm is None:
                info.open = True
            else:
                info.types.add(norm)
    elif alternatives is not None:
        for alternative in alternatives:
            part = _read_types(alternative, root, depth + 1)
            info.types |= part.types
            info.open = info.open or part.open
            if part.members is not None:
                info.members = [*(info.members or ()), *part.members]
    elif isinstance(schema.get("properties"), Mapping):
        # A schema that lists properties describes an object, one with items an array, even when
        # its author left ``type`` out; that is reading the schema, not guessing from the value.
        info.types.add("object")
    elif isinstance(schema.get("items"), Mapping):
        info.types.add("array")
    else:
        info.open = True
    if schema.get("nullable") is True:
        info.types.add("null")
    members = schema.get("enum")
    if isinstance(members, (list, tuple)) and members:
        info.members = list(members)
    elif "const" in schema:
        info.members = [schema["const"]]
    ref = schema.get("$ref")
    if ref is not None:
        target = wire_schema.resolve_ref(root, ref)
        info = _both(info, _read_types(target, root, depth + 1) if target is not None else _TypeInfo(open_=True))
    all_of = schema.get("allOf")
    if isinstance(all_of, (list, tuple)):
        for member in all_of:
            info = _both(info, _read_types(member, root, depth + 1))
    return info


# -- scalar text parsing (shared by coercion and the relaxed parser) -------------------------------

_NULL_LITERALS = frozenset({"null", "NULL", "Null"})
_BOOLEANS = {"true": True, "false": False}
_INT_RE = re.compile(r"[+-]?[0-9]+", re.ASCII)
# Lenient decimal number: optional sign, digits with optional fraction (or a bare fraction), and an
# optional exponent. No hex, no underscores, no "inf"/"nan" (float() would accept all of those).
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def _to_integer(text: str) -> int | None:
    """Parse integer text, including integral decimal forms ('1.23e5', '5.0'); None if not one."""
    if _INT_RE.fullmatch(text) or not _NUMBER_RE.fullmatch(text):
        value = _to_number(text)  # digits (None beyond the int-string conversion limit), or no number
        return value if isinstance(value, int) else None
    try:
        exact = Decimal(text)
    except InvalidOperation:
        return None
    if not exact.is_finite() or exact.adjusted() > _MAX_INT_EXPONENT:
        return None
    if exact != exact.to_integral_value():
        return None
    return int(exact)


def _to_number(text: str) -> int | float | None:
    """Parse number text; integral values come back as int (as vLLM's and Ollama's coercers do,
    and as conformance vector oll-q3c-number-edge-forms expects for '1.23e5')."""
    if _INT_RE.fullmatch(text):
        try:
            return int(text)
        except ValueError:  # beyond the int-string conversion limit
            return None
    if not _NUMBER_RE.fullmatch(text):
        return None
    try:
        value = float(text)
    except (ValueError, OverflowError):
        return None
    if not math.isfinite(value):
        return None
    if value.is_integer() and abs(value) <= _MAX_EXACT_FLOAT_INT:
        return int(value)
    return value


def _to_boolean(text: str) -> bool | None:
    return _BOOLEANS.get(text.lower())


def _reject_constant(name: str) -> Any:
    """``json.loads`` hook: NaN and Infinity are not JSON and cannot be re-serialised as JSON."""
    raise ValueError(f"non-finite number {name} is not JSON")


def _loads_json(text: str) -> Any:
    """``json.loads`` that tolerates raw control characters in strings (models emit literal
    newlines) and refuses non-finite numbers; raises ValueError on any failure."""
    try:
        return json.loads(text, strict=False, parse_constant=_reject_constant)
    except (RecursionError, MemoryError) as exc:
        raise ValueError(f"value too deeply nested or too large: {type(exc).__name__}") from None


# Sentinel for "this coercion did not apply"; None cannot serve, it is a legitimate value.
_NO_VALUE: Any = object()


def _to_container(text: str, kind: type[Any]) -> Any:
    """Parse text as JSON, then as a Python literal, keeping it only if it is of ``kind``.

    The Python-literal fallback exists because models write ``{'a': True}`` in tag dialects
    (conformance vector mlx-qwen3c-python-literal-dict; mlx-lm and vLLM use literal_eval too).
    Returns the sentinel ``_NO_VALUE`` when neither parse yields a ``kind``.
    """
    for parse in (_loads_json, parse_python_literal):
        try:
            value = parse(text)
        except ValueError:
            continue
        if isinstance(value, kind):
            return value
    return _NO_VALUE


def _coerce_as(kind: str, text: str) -> Any:
    """Coerce stripped text to one JSON-schema type, or return ``_NO_VALUE``."""
    if kind in ("object", "array"):
        return _to_container(text, dict if kind == "object" else list)
    read = _SCALAR_READERS.get(kind)
    result = read(text) if read is not None else None
    return _NO_VALUE if result is None else result


_SCALAR_READERS: dict[str, Callable[[str], Any]] = {"integer": _to_integer, "number": _to_number,
                                                   "boolean": _to_boolean}


def _enum_match(text: str, members: Sequence[Any]) -> Any:
    """Return the enum member whose written form is ``text``, or ``_NO_VALUE``.

    A tag dialect writes ``2`` for the member ``2`` and ``true`` for ``True``; matching on the
    written form returns the member with its declared JSON type. String members must match
    exactly (after trimming surrounding whitespace), other members by their JSON spelling or,
    for numbers, by numeric value.
    """
    stripped = text.strip()
    for candidate in (text, stripped):
        for member in members:
            if isinstance(member, str) and member == candidate:
                return member
    number = _to_number(stripped)
    written: str | None = None
    for member in members:
        if isinstance(member, str):
            continue
        if member is None:
            if stripped in _NULL_LITERALS:
                return None
        elif isinstance(member, bool):
            if _to_boolean(stripped) is member:
                return member
        elif isinstance(member, (int, float)):
            if number is not None and number == member:
                return member
        else:
            try:
                spelled = json.dumps(member, ensure_ascii=False, separators=(",", ":"))
            except (TypeError, ValueError, RecursionError):
                continue
            if written is None:
                written = _canonical_json(stripped) or ""
            if written == spelled:
                return member
    return _NO_VALUE


def _canonical_json(text: str) -> str | None:
    """Canonical JSON spelling of container text, for comparing against enum members."""
    try:
        value = _loads_json(text)
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return None


def _preview(text: str, limit: int = 40) -> str:
    """Short repr of a value for issue messages (a 1 MB value must not become a 1 MB message)."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + f"... ({len(text)} chars)"


# -- coerce_text -----------------------------------------------------------------------------------


def coerce_text(text: str, schema: Mapping[str, Any] | None,
                root: Mapping[str, Any] | None = None) -> tuple[Any, str | None]:
    """Type the raw text of a tag-dialect parameter value according to its JSON schema.

    ``root`` is the document ``$ref`` inside ``schema`` points into (the tool's parameters schema,
    which holds ``$defs``); without it ``schema`` itself is the document. Returns ``(value, None)``
    on success and ``(text, message)`` when the schema's types could not be met: the raw string is
    kept (no silent loss) and the message explains why. Never raises. The schema is read as
    ``_read_types`` says. Decisions, in order:

    1. No schema or no type information (unresolvable ``$ref``, unknown type): the raw string,
       unchanged and without an issue. Nothing is guessed.
    2. ``enum``/``const`` (in any alternative): a member whose written form equals the text is
       returned as that member (``enum: [1, 2, 3]`` and ``'2'`` -> ``2``).
    3. ``null``, ``NULL`` or ``Null`` -> ``None`` for any typed schema, string-typed included
       (vectors oll-q3c-number-edge-forms and lcpp-glm-nullable-null).
    4. Non-string alternatives, most structured first: object, array (JSON, then Python
       literal), integer, number, boolean. Surrounding whitespace is ignored for these.
    5. A string or unconstrained alternative takes the text verbatim, without an issue
       (``'1abc'`` under ``anyOf(integer, string)``).
    6. Otherwise the raw text and an issue message.
    """
    try:
        return _coerce(text, schema, root)
    except Exception as exc:  # the no-raise guarantee; not expected to trigger
        return text, f"could not coerce value {_preview(str(text))}: {type(exc).__name__}: {exc}"


def _coerce(text: str, schema: Mapping[str, Any] | None, root: Mapping[str, Any] | None) -> tuple[Any, str | None]:
    if not isinstance(text, str) or schema is None or not isinstance(schema, Mapping):
        return text, None
    info = _read_types(schema, schema if root is None else root, 0)
    if info.members:
        found = _enum_match(text, info.members)
        if found is not _NO_VALUE:
            return found, None
    if not info.types:
        return text, None
    stripped = text.strip()
    if stripped in _NULL_LITERALS:
        return None, None
    for kind in _COERCE_ORDER:
        if kind in info.types:
            value = _coerce_as(kind, stripped)
            if value is not _NO_VALUE:
                return value, None
    if "string" in info.types or info.open:
        return text, None
    wanted = " or ".join(sorted(info.types))
    return text, f"value {_preview(text)} is not a valid {wanted}; kept the raw string"


# -- Python literals and pythonic calls ------------------------------------------------------------


#: text on which Python's tokenizer would print a SyntaxWarning (see ``_parse_expression``)
_WARNED = re.compile(r"\\|[0-9][A-Za-z_]")


def _parse_expression(text: str) -> ast.expr:
    """Parse one Python expression, turning every parser failure into ValueError."""
    try:
        if _WARNED.search(text):
            # Python's tokenizer warns about unknown escapes such as '\d' (a SyntaxWarning on 3.12+,
            # printed by default) and about a number run into a name ('1a': invalid decimal
            # literal), and turns them into errors under -W error. In a literal the escape simply
            # stays a backslash, which is what the model meant, and the other is an error anyway,
            # so the warning is noise for our callers. Only such texts pay for the filter change.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(text.strip(), mode="eval")
        else:
            tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"not a Python literal expression: {exc}") from None
    except (RecursionError, MemoryError) as exc:
        raise ValueError(f"expression too deeply nested or too large: {type(exc).__name__}") from None
    return tree.body


#: JSON's spelling of the constants, which models write inside pythonic calls
#: (``toggle(enabled=true)``): llama.cpp, OpenVINO Model Server and SGLang read them as the values
_JSON_CONSTANTS: dict[str, Any] = {"true": True, "false": False, "null": None}


def _literal_value(node: ast.expr) -> Any:
    """Convert a literal AST node to a JSON-compatible value; ValueError for anything else.

    This walks the tree instead of calling ``ast.literal_eval`` so that the accepted language is
    exactly JSON's value space: no bytes, complex numbers, sets, non-string keys or NaN. The bare
    names ``true``, ``false`` and ``null`` are JSON's constants (no Python literal spells them).
    """
    if isinstance(node, ast.Name) and node.id in _JSON_CONSTANTS:
        return _JSON_CONSTANTS[node.id]
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"non-finite number {value!r} is not JSON")
            return value
        raise ValueError(f"unsupported literal of type {type(value).__name__}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = node.operand
        if (
            isinstance(operand, ast.Constant)
            and isinstance(operand.value, (int, float))
            and not isinstance(operand.value, bool)
        ):
            number = _literal_value(operand)
            return -number if isinstance(node.op, ast.USub) else number
        raise ValueError("a sign may only precede a number literal")
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal_value(element) for element in node.elts]
    if isinstance(node, ast.Dict):
        result: dict[str, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:
                raise ValueError("dict unpacking (**) is not a literal")
            key = _literal_value(key_node)
            if not isinstance(key, str):
                raise ValueError(f"dict key {key!r} is not a string")
            result[key] = _literal_value(value_node)
        return result
    raise ValueError(f"{type(node).__name__} is not a literal")


def parse_python_literal(text: str) -> Any:
    """Parse a Python literal safely (never ``eval``) into a JSON-compatible value.

    Accepts strings (either quote, escapes, implicit concatenation), ints, finite floats, unary
    signs on numbers, ``True``/``False``/``None`` (and JSON's ``true``/``false``/``null``), lists,
    tuples (as lists) and dicts with string keys, nested. Raises ``ValueError`` for anything else,
    including input too deep or too large for the Python parser.
    """
    node = _parse_expression(text)
    try:
        return _literal_value(node)
    except (RecursionError, MemoryError) as exc:
        raise ValueError(f"literal too deeply nested or too large: {type(exc).__name__}") from None


# A dotted name as it appears in source; used to keep the model's spelling verbatim (the AST
# holds NFKC-normalised identifiers).
_DOTTED_NAME_RE = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
_KEYWORD_NAME_RE = re.compile(r"\s*([^\W\d]\w*)\s*=")


#: a source line as Python's tokenizer counts them (``\r\n``, ``\r`` or ``\n`` ends one)
_SOURCE_LINE = re.compile(r"[^\r\n]*(?:\r\n|[\r\n])|[^\r\n]+\Z")


class _Segments:
    """``ast.get_source_segment`` for many nodes of one source.

    The standard function splits the whole source, character by character, on every call, so a
    list of N calls cost N times its length; here the lines are split once and each is encoded
    (AST column offsets count UTF-8 bytes) when first needed.
    """

    def __init__(self, source: str) -> None:
        self._lines = _SOURCE_LINE.findall(source)
        self._encoded: dict[int, bytes] = {}

    def _line(self, number: int) -> bytes:
        line = self._encoded.get(number)
        if line is None:
            line = self._encoded[number] = self._lines[number].encode()
        return line

    def of(self, node: ast.AST) -> str | None:
        end_lineno = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        if end_lineno is None or end_col is None:
            return None
        first, col = node.lineno - 1, node.col_offset  # type: ignore[attr-defined]
        last = end_lineno - 1
        if first == last:
            return self._line(first)[col:end_col].decode()
        return (self._line(first)[col:].decode() + "".join(self._lines[first + 1:last])
                + self._line(last)[:end_col].decode())


def _call_name(node: ast.expr, source: _Segments) -> str:
    """The called name of a pythonic call: ``f`` or a dotted ``functions.f``, as written."""
    parts: list[str] = []
    current = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name):
        raise ValueError("a tool call must call a plain or dotted name")
    parts.append(current.id)
    name = ".".join(reversed(parts))
    segment = source.of(node)
    if segment is not None:
        compact = re.sub(r"\s+", "", segment)
        if _DOTTED_NAME_RE.fullmatch(compact):
            return compact
    return name


def _keyword_name(keyword: ast.keyword, source: _Segments) -> str:
    """A keyword argument's name as written (see ``_call_name`` on normalisation)."""
    assert keyword.arg is not None
    segment = source.of(keyword)
    if segment is not None:
        match = _KEYWORD_NAME_RE.match(segment)
        if match is not None:
            return match.group(1)
    return keyword.arg


def parse_python_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Parse a pythonic tool-call list into ``(name, kwargs)`` pairs.

    Accepts ``[f(a=1), g.h(b='x')]``, a single ``f(a=1)``, an unbracketed ``f(a=1), g()`` and
    ``[]``. Names may be dotted and are kept as written. Only keyword arguments with literal values
    (``parse_python_literal`` rules) are allowed; positional arguments, ``**kwargs``, repeated
    keywords and any other shape raise ``ValueError``, because a marker-less dialect must not turn
    prose such as ``[1, 2]`` or ``print(x)`` into calls.
    """
    source = text.strip()
    body = _parse_expression(source)
    calls: list[ast.expr] = list(body.elts) if isinstance(body, (ast.List, ast.Tuple)) else [body]
    result: list[tuple[str, dict[str, Any]]] = []
    segments = _Segments(source)
    try:
        for call in calls:
            if not isinstance(call, ast.Call):
                raise ValueError(f"expected a call, found {type(call).__name__}")
            name = _call_name(call.func, segments)
            if call.args:
                raise ValueError(f"call to {name!r} has positional arguments; only keywords are allowed")
            kwargs: dict[str, Any] = {}
            for keyword in call.keywords:
                if keyword.arg is None:
                    raise ValueError(f"call to {name!r} uses ** unpacking")
                key = _keyword_name(keyword, segments)
                if key in kwargs:
                    raise ValueError(f"call to {name!r} repeats keyword argument {key!r}")
                kwargs[key] = _literal_value(keyword.value)
            result.append((name, kwargs))
    except (RecursionError, MemoryError) as exc:
        raise ValueError(f"call list too deeply nested or too large: {type(exc).__name__}") from None
    return result


# -- relaxed objects (Gemma 4 / FunctionGemma argument syntax) -------------------------------------

_WS_RE = re.compile(r"\s*")
_BARE_KEY_RE = re.compile(r"[^\s{}\[\],:]+")
# A JSON string body, unrolled-loop form: linear, no nested quantifier backtracking.
_JSON_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# Relaxed number: JSON's grammar, but leading zeros are tolerated ("007").
_RELAXED_NUMBER_RE = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?", re.ASCII)
_WORD_RE = re.compile(r"[A-Za-z_]+")
_WORDS: dict[str, Any] = {"true": True, "false": False, "null": None}
# Deeper nesting than this is refused: nobody's tool arguments are this deep, and consumers that
# recurse (json.dumps, equality) would overflow on the result.
_MAX_NESTING = 500


class _RelaxedReader:
    """One-shot reader over a relaxed-object text; all scanning is regex/str.find based."""

    __slots__ = ("bare_key", "delims", "kv", "length", "member", "string_starts", "text")

    def __init__(self, text: str, delims: list[tuple[str, str]], seps: tuple[str, str] = (":", ",")) -> None:
        self.text = text
        self.length = len(text)
        self.delims = delims
        self.kv, self.member = seps
        self.bare_key = _BARE_KEY_RE if seps == (":", ",") else bare_key_re(seps)
        # First characters that can open a string: a cheap filter before the startswith tests.
        self.string_starts = frozenset(opener[0] for opener, _ in delims) | {'"'}

    def fail(self, message: str, pos: int) -> ValueError:
        return ValueError(f"{message} at position {pos}")

    def skip_ws(self, pos: int) -> int:
        text = self.text
        if pos < self.length and text[pos].isspace():
            match = _WS_RE.match(text, pos)
            if match is not None:
                return match.end()
        return pos

    def string(self, pos: int) -> tuple[str, int] | None:
        """A custom-delimited or JSON string at ``pos``, or None when no string starts there."""
        text = self.text
        if pos >= self.length or text[pos] not in self.string_starts:
            return None
        for opener, closer in self.delims:
            if text.startswith(opener, pos):
                start = pos + len(opener)
                end = text.find(closer, start)
                if end < 0:
                    raise self.fail(f"unterminated {opener} string", pos)
                return text[start:end], end + len(closer)
        if text.startswith('"', pos):
            match = _JSON_STRING_RE.match(text, pos)
            if match is None:
                raise self.fail("unterminated JSON string", pos)
            try:
                value = json.loads(match.group(0), strict=False)
            except ValueError as exc:
                raise self.fail(f"invalid JSON string ({exc})", pos) from None
            return str(value), match.end()
        return None

    def key(self, pos: int) -> tuple[str, int]:
        found = self.string(pos)
        if found is not None:
            return found
        match = self.bare_key.match(self.text, pos)
        if match is None:
            raise self.fail("expected a key", pos)
        return match.group(0), match.end()

    def scalar(self, pos: int) -> tuple[Any, int]:
        found = self.string(pos)
        if found is not None:
            return found
        text = self.text
        match = _RELAXED_NUMBER_RE.match(text, pos)
        if match is not None:
            literal = match.group(0)
            try:
                if match.group(1) is None and match.group(2) is None:
                    return int(literal), match.end()
                number = float(literal)
            except ValueError:
                raise self.fail(f"number {_preview(literal)} out of range", pos) from None
            if not math.isfinite(number):
                raise self.fail(f"number {_preview(literal)} out of range", pos)
            return number, match.end()
        match = _WORD_RE.match(text, pos)
        if match is not None and match.group(0) in _WORDS:
            return _WORDS[match.group(0)], match.end()
        if pos >= len(text):
            raise self.fail("unexpected end of input", pos)
        raise self.fail(f"unexpected {text[pos]!r}", pos)

    def parse(self) -> Any:
        """Iterative parse (an explicit stack, so nesting depth never hits Python's recursion)."""
        text = self.text
        length = len(text)
        stack: list[dict[str, Any] | list[Any]] = []
        root: Any = None
        key = ""
        pos = self.skip_ws(0)
        expecting_key = False
        while True:
            # ---- read one value (or a key, then a value) -------------------------------------
            if expecting_key:
                key, pos = self.key(pos)
                pos = self.skip_ws(pos)
                if not text.startswith(self.kv, pos):
                    raise self.fail(f"expected {self.kv!r} after key", pos)
                pos = self.skip_ws(pos + len(self.kv))
            char = text[pos] if pos < length else ""
            value: Any
            opened = char == "{" or char == "["
            if opened:
                if len(stack) >= _MAX_NESTING:
                    raise self.fail("nesting too deep", pos)
                value = {} if char == "{" else []
                pos += 1
            else:
                value, pos = self.scalar(pos)
            if stack:
                parent = stack[-1]
                if isinstance(parent, dict):
                    parent[key] = value
                else:
                    parent.append(value)
            else:
                root = value
            if opened:
                stack.append(value)
                pos = self.skip_ws(pos)
                closer = "}" if char == "{" else "]"
                if not text.startswith(closer, pos):
                    expecting_key = char == "{"
                    continue
                stack.pop()
                pos += 1
            # ---- after a complete value: a separator, or closers ------------------------------
            while True:
                pos = self.skip_ws(pos)
                if not stack:
                    if pos != length:
                        raise self.fail("unexpected trailing data", pos)
                    return root
                top = stack[-1]
                closer = "}" if isinstance(top, dict) else "]"
                if text.startswith(closer, pos):
                    stack.pop()
                    pos += 1
                    continue
                if text.startswith(self.member, pos):
                    pos = self.skip_ws(pos + len(self.member))
                    if text.startswith(closer, pos):  # tolerated trailing comma
                        stack.pop()
                        pos += 1
                        continue
                    expecting_key = isinstance(top, dict)
                    break
                if pos >= length:
                    raise self.fail(f"unexpected end of input, expected {self.member!r} or {closer!r}", pos)
                raise self.fail(f"expected {self.member!r} or {closer!r}, found {text[pos]!r}", pos)


def bare_key_re(seps: tuple[str, str]) -> re.Pattern[str]:
    """A bare key of a relaxed object whose separators are ``seps``: no whitespace, bracket, comma
    or either separator's first character."""
    return re.compile(r"[^\s{}\[\],:" + re.escape("".join(dict.fromkeys(s[0] for s in seps))) + "]+")


def parse_relaxed_object(text: str, string_delims: Sequence[tuple[str, str]] = (),
                         seps: tuple[str, str] = (":", ",")) -> Any:
    """Parse Gemma 4 / FunctionGemma argument syntax into a JSON-compatible value.

    The syntax is JSON with three relaxations: keys may be bare (any run of characters other than
    whitespace and ``{}[],:``); strings may be wrapped in custom delimiter pairs (Gemma 4
    ``('<|"|>', '<|"|>')``, FunctionGemma ``('<escape>', '<escape>')``) whose body is taken
    verbatim, with no escape processing (vector oll-gemma4-backslashes-verbatim); and a trailing
    comma before a closer is tolerated, as are leading zeros in numbers. ``seps`` are the key/value
    and member separators (JSON's ``:`` and ``,`` unless a template writes others). Standard JSON
    double-quoted strings with JSON escapes are accepted too (vector
    oll-gemma4-json-and-gemma-quotes). Values other than strings, numbers, ``true``, ``false``,
    ``null``, objects and arrays (for example a bare word) are errors: the engine, not this
    parser, decides how to recover.

    String bodies are skipped with ``str.find`` or one compiled pattern, so the parse is linear in
    the input. Raises ``ValueError`` whose message names the character position of the problem.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    delims: list[tuple[str, str]] = []
    for pair in string_delims:
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(part, str) and part for part in pair)
        ):
            raise ValueError(f"string delimiter pair {pair!r} must be two non-empty strings")
        delims.append((pair[0], pair[1]))
    # Longest opener first, so that a delimiter that is a prefix of another cannot shadow it.
    delims.sort(key=lambda pair: -len(pair[0]))
    return _RelaxedReader(text, delims, seps).parse()


# -- validate_arguments ----------------------------------------------------------------------------


def validate_arguments(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None) -> list[str]:
    """Check a closed call's arguments against its tool's parameters schema; [] means valid.

    The verdict is fastjsonschema's (``engine/schema.py``), with the validator compiled once per
    distinct schema; each string is one ``schema.Problem`` (``location.city: required``), whose
    structured form ``check_arguments`` returns. A schema that cannot be compiled gives no
    problems here (the call is not blocked); ``schema_notes`` says why, for reporting once.
    """
    try:
        return [str(problem) for problem in schema_mod.check_arguments(arguments, schema)]
    except Exception as exc:  # the no-raise guarantee; not expected to trigger
        return [f"could not validate arguments: {type(exc).__name__}: {exc}"]


def check_arguments(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None) -> list[schema_mod.Problem]:
    """The problems ``validate_arguments`` describes, as data (path, keyword, expected, value)."""
    try:
        return schema_mod.check_arguments(arguments, schema)
    except Exception:  # the no-raise guarantee; not expected to trigger
        return []


def quick_check(schema: Mapping[str, Any] | None) -> Callable[[dict[str, Any]], object]:
    """A per-tool check of the common case: returns when arguments certainly match ``schema``,
    raises otherwise (then ``validate_arguments`` decides; ``schema.quick_check``). Making it
    never raises."""
    try:
        return schema_mod.quick_check(schema)
    except Exception:  # the no-raise guarantee; not expected to trigger
        return _undecided


def _undecided(arguments: dict[str, Any]) -> object:
    raise ValueError("not checked")


def schema_notes(schema: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Why ``schema`` is not (fully) checked: invalid, remote ``$ref``, unknown type names."""
    try:
        return schema_mod.schema_notes(schema)
    except Exception as exc:  # the no-raise guarantee; not expected to trigger
        return (f"could not compile the schema: {type(exc).__name__}",)
