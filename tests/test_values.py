"""Tests of autoparser.engine.values: schemas, coercion, literal parsers and validation.

Conformance expectations are copied (as data) from ../shared/conformance/peer-cases.json; each
case names its vector id so a change of the vector file can be traced here.
"""

from __future__ import annotations

import json
import keyword
import math
import re
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoparser.engine.values import (
    check_arguments,
    coerce_text,
    parse_python_calls,
    parse_python_literal,
    parse_relaxed_object,
    schema_notes,
    validate_arguments,
)
from autoparser.wire import read_tools as tool_schemas

GEMMA = ('<|"|>', '<|"|>')
FG = ("<escape>", "<escape>")


def _same(left: Any, right: Any) -> bool:
    """Deep equality that also distinguishes True from 1 and keeps JSON types honest."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left):
        return math.isnan(right)
    return bool(left == right)


# ---------------------------------------------------------------------------------------------
# tool_schemas
# ---------------------------------------------------------------------------------------------


def test_tool_schemas_openai_format() -> None:
    params = {"type": "object", "properties": {"location": {"type": "string"}}}
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": params}}]
    assert tool_schemas(tools) == {"get_weather": params}


def test_tool_schemas_bare_items_and_variants() -> None:
    p1 = {"type": "object", "properties": {"a": {"type": "integer"}}}
    p2 = {"type": "object", "properties": {"b": {"type": "string"}}}
    tools = [
        {"name": "one", "parameters": p1},
        {"type": "function", "name": "two", "parameters": p2},  # Responses-API flat shape
        {"name": "three", "input_schema": p1},  # Anthropic shape
        {"name": "four"},  # no parameters at all: known name, no type information
    ]
    assert tool_schemas(tools) == {"one": p1, "two": p2, "three": p1, "four": {}}


def test_tool_schemas_none_and_empty() -> None:
    assert tool_schemas(None) == {}
    assert tool_schemas([]) == {}
    assert tool_schemas(()) == {}


def test_tool_schemas_skips_malformed_items() -> None:
    good = {"type": "object", "properties": {}}
    tools: list[Any] = [
        "get_weather",
        42,
        None,
        {},
        {"type": "function", "function": "junk"},
        {"type": "function", "function": {"parameters": good}},  # no name
        {"type": "function", "function": {"name": "", "parameters": good}},
        {"type": "function", "function": {"name": 7, "parameters": good}},
        {"type": "web_search"},  # a non-function tool
        {"type": "function", "function": {"name": "odd", "parameters": "not a schema"}},
        {"type": "function", "function": {"name": "ok", "parameters": good}},
    ]
    assert tool_schemas(tools) == {"odd": {}, "ok": good}


def test_tool_schemas_last_definition_wins_and_copies() -> None:
    first = {"type": "object", "properties": {"a": {"type": "string"}}}
    second = {"type": "object", "properties": {"b": {"type": "string"}}}
    result = tool_schemas([{"name": "f", "parameters": first}, {"name": "f", "parameters": second}])
    assert result == {"f": second}
    result["f"]["extra"] = 1
    assert "extra" not in second  # a copy, so the engine cannot mutate the caller's tools


@pytest.mark.parametrize("bad", [{"name": "f"}, "tools", 3, {"tools": []}])
def test_tool_schemas_rejects_non_list(bad: object) -> None:
    with pytest.raises(TypeError, match="list"):
        tool_schemas(bad)


# ---------------------------------------------------------------------------------------------
# coerce_text: the conformance vectors
# ---------------------------------------------------------------------------------------------

S_STR = {"type": "string"}
S_INT = {"type": "integer"}
S_NUM = {"type": "number"}
S_BOOL = {"type": "boolean"}
S_OBJ = {"type": "object"}
S_ARR = {"type": "array"}
S_NULLABLE_STR = {"type": ["string", "null"]}
S_OBJ_OR_STR = {"anyOf": [{"type": "object"}, {"type": "string"}]}
S_INT_OR_STR = {"anyOf": [{"type": "integer"}, {"type": "string"}]}

VECTOR_COERCIONS: list[tuple[str, dict[str, Any], str, Any]] = [
    # (vector id, parameter schema, raw value text, expected value)
    ("dyn-q3c-b7a-typed-params", S_STR, "Paris", "Paris"),
    ("dyn-q3c-b7a-typed-params", S_INT, "2", 2),
    ("dyn-q3c-b7a-typed-params", S_BOOL, "true", True),
    ("dyn-glm-b7a-typed", S_INT, "2", 2),
    ("dyn-glm-b7a-typed", S_BOOL, "true", True),
    ("dyn-mm2-b7a-typed", S_INT, "2", 2),
    ("dyn-mm2-b7a-typed", S_BOOL, "true", True),
    ("dyn-q3c-b7b-unicode", S_STR, "Tōkyō central", "Tōkyō central"),
    ("oll-q3c-typed-params", S_NUM, "3.14", 3.14),
    ("oll-q3c-typed-params", S_INT, "42", 42),
    ("oll-q3c-typed-params", S_BOOL, "true", True),
    ("oll-q3c-typed-params", S_ARR, '["a", "b", "c"]', ["a", "b", "c"]),
    ("oll-q3c-value-newline-trim", S_STR, "\n\nsome-string\n\n", "\n\nsome-string\n\n"),
    ("oll-q3c-number-edge-forms", S_INT, "007", 7),
    ("oll-q3c-number-edge-forms", S_NUM, "1.23e5", 123000),
    ("oll-q3c-number-edge-forms", S_NUM, "-273.15", -273.15),
    ("oll-q3c-number-edge-forms", S_INT, "2147483648", 2147483648),
    ("oll-q3c-number-edge-forms", S_STR, "12345", "12345"),
    ("oll-q3c-number-edge-forms", S_STR, "NULL", None),
    ("oll-q3c-number-edge-forms", S_BOOL, "True", True),
    ("oll-q3c-invalid-typed-fallback", S_STR,
     '{"this": "is", "just": "a string"}', '{"this": "is", "just": "a string"}'),
    ("mlx-qwen3c-python-literal-dict", S_OBJ,
     "{'category': 'books', 'in_stock': True}", {"category": "books", "in_stock": True}),
    ("mlx-qwen3c-python-literal-dict", S_ARR, "['fiction', 'new']", ["fiction", "new"]),
    ("mlx-qwen3c-iso-date-string", S_STR, "2025-06-15T10:30:00Z", "2025-06-15T10:30:00Z"),
    ("lcpp-glm-typed-multi-unicode", S_INT, "42", 42),
    ("lcpp-glm-typed-multi-unicode", S_STR, "上海", "上海"),
    ("lcpp-glm-typed-multi-unicode", S_NUM, "2.5", 2.5),
    ("lcpp-glm-typed-multi-unicode", S_BOOL, "true", True),
    ("lcpp-glm-typed-multi-unicode", S_OBJ,
     '{"source": "spark", "options": {"strict": true}}', {"source": "spark", "options": {"strict": True}}),
    ("lcpp-glm-typed-multi-unicode", S_ARR, '["alpha", "测试"]', ["alpha", "测试"]),
    ("lcpp-glm-typed-multi-unicode", S_ARR,
     '[{"id": 1, "label": "first"}, {"id": 2, "label": "第二"}]',
     [{"id": 1, "label": "first"}, {"id": 2, "label": "第二"}]),
    ("lcpp-glm-markers-in-value", S_STR,
     "contains </think> and <tool_call> strings", "contains </think> and <tool_call> strings"),
    ("lcpp-glm-markers-in-value", S_INT, "1", 1),
    ("lcpp-glm-args-any-order", S_INT, "7", 7),
    ("lcpp-glm-nullable-null", S_NULLABLE_STR, "null", None),
    ("lcpp-glm-nullable-number-like-string", S_NULLABLE_STR, "123 Main St", "123 Main St"),
    ("lcpp-glm-union-json-and-raw", S_OBJ_OR_STR, "plain text", "plain text"),
    ("lcpp-glm-union-json-and-raw", S_INT_OR_STR, "1abc", "1abc"),
    ("lcpp-glm-union-json-object", S_OBJ_OR_STR, '{"a": 1}', {"a": 1}),
    ("lcpp-glm-union-json-object", S_INT_OR_STR, "7", 7),
    ("lcpp-mm2-int-param", S_INT, "1", 1),
    ("lcpp-mm3-nested-object", S_NUM, "1.5", 1.5),
    ("lcpp-mm3-nested-object", S_NUM, "-2.5", -2.5),
    ("lcpp-mm3-string-union-keeps-markup", {"anyOf": [{"type": "string"}, {"type": "null"}]},
     "]<]minimax[>[<text>hi]<]minimax[>[</text>", "]<]minimax[>[<text>hi]<]minimax[>[</text>"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("vector", "schema", "text", "expected"),
    VECTOR_COERCIONS,
    ids=[f"{row[0]}:{row[2][:20]}" for row in VECTOR_COERCIONS],
)
def test_coerce_conformance_vectors(vector: str, schema: dict[str, Any], text: str, expected: Any) -> None:
    value, issue = coerce_text(text, schema)
    assert issue is None, vector
    assert _same(value, expected), vector


PEER_CASES = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "peer-cases.json"


def _leaves(value: Any) -> list[Any]:
    """Every argument value of a vector, nested objects included (MiniMax-M3 nests elements)."""
    out = [value]
    if isinstance(value, dict):
        for item in value.values():
            out.extend(_leaves(item))
    return out


@pytest.mark.shared
def test_coerce_table_matches_peer_cases() -> None:
    """The table above is copied from the vectors; fail loudly if the vectors drift away from it."""
    if not PEER_CASES.exists():
        pytest.skip("../shared/conformance is not available")
    vectors = {case["id"]: case for case in json.loads(PEER_CASES.read_text(encoding="utf-8"))}
    for vector, _schema, _text, expected in VECTOR_COERCIONS:
        assert vector in vectors, vector
        values = [
            leaf
            for call in vectors[vector]["expected"]["tool_calls"]
            for argument in call["arguments"].values()
            for leaf in _leaves(argument)
        ]
        assert any(_same(expected, v) or (type(expected) is int and v == expected) for v in values), vector


# oll-q3c-invalid-typed-fallback: uncoercible values keep the raw string, with an issue message.
@pytest.mark.parametrize(
    ("schema", "text", "word"),
    [
        (S_INT, "not-a-number", "integer"),
        (S_NUM, "3.14.159", "number"),
        (S_ARR, "[1, 2, unclosed", "array"),
    ],
)
def test_coerce_invalid_typed_fallback(schema: dict[str, Any], text: str, word: str) -> None:
    value, issue = coerce_text(text, schema)
    assert value == text
    assert issue is not None and word in issue and text in issue


def test_coerce_no_tools_keeps_strings() -> None:
    # oll-q3c-spaces-in-names: no tools supplied, every value stays a string (even 'null', '2').
    for text in ["San Francisco", "2", "true", "null", '{"a": 1}']:
        assert coerce_text(text, None) == (text, None)


# ---------------------------------------------------------------------------------------------
# coerce_text: rules beyond the vectors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"description": "untyped"},
        {"$ref": "#/$defs/Thing"},
        {"const": "x"},
        {"type": "mystery"},
    ],
)
def test_coerce_without_type_info_returns_raw(schema: dict[str, Any]) -> None:
    for text in ["42", "null", "true", "[1]", " spaced "]:
        assert coerce_text(text, schema) == (text, None)


@pytest.mark.parametrize("text", ["null", "NULL", "Null", "  null\n"])
@pytest.mark.parametrize(
    "schema", [S_STR, S_INT, S_NUM, S_BOOL, S_OBJ, S_ARR, S_NULLABLE_STR, {"type": "null"}]
)
def test_coerce_null_literals(text: str, schema: dict[str, Any]) -> None:
    assert coerce_text(text, schema) == (None, None)


@pytest.mark.parametrize("text", ["nULL", "None", "none", "nil", "NaN"])
def test_coerce_other_null_spellings_are_strings(text: str) -> None:
    assert coerce_text(text, S_STR) == (text, None)


def test_coerce_string_is_verbatim() -> None:
    for text in ["", "  padded  ", "\nline\n", "12345", "true", "[1, 2]", '{"a": 1}', "3.0"]:
        assert coerce_text(text, S_STR) == (text, None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("-3", -3),
        ("+4", 4),
        ("007", 7),
        (" 42 \n", 42),
        ("2147483648", 2147483648),
        ("99999999999999999999999", 99999999999999999999999),
        ("1.23e5", 123000),
        ("5.0", 5),
        ("1e30", 10**30),
        ("-2E2", -200),
    ],
)
def test_coerce_integer(text: str, expected: int) -> None:
    value, issue = coerce_text(text, S_INT)
    assert issue is None
    assert type(value) is int and value == expected


@pytest.mark.parametrize(
    "text",
    [
        "1.5",
        "1e-1",
        "abc",
        "",
        "1_000",
        "0x10",
        "١٢",
        "inf",
        "NaN",
        "1e99999",
        "true",
        "2026-01-15",
        "1" * 5000,
    ],
)
def test_coerce_integer_fallback(text: str) -> None:
    value, issue = coerce_text(text, S_INT)
    assert value == text
    assert issue is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3.14", 3.14),
        ("-273.15", -273.15),
        ("42", 42),
        ("1.23e5", 123000),
        ("2.0", 2),
        (".5", 0.5),
        ("1e-3", 0.001),
        ("1e300", 1e300),
        (" 2.5\n", 2.5),
    ],
)
def test_coerce_number(text: str, expected: float) -> None:
    value, issue = coerce_text(text, S_NUM)
    assert issue is None
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("text", ["3.14.159", "1e999", "inf", "-Infinity", "nan", "1,5", "12abc", "", "--1"])
def test_coerce_number_fallback(text: str) -> None:
    value, issue = coerce_text(text, S_NUM)
    assert value == text and issue is not None


@pytest.mark.parametrize(
    ("text", "expected"), [("true", True), ("True", True), ("TRUE", True), ("false", False), ("False", False)]
)
def test_coerce_boolean(text: str, expected: bool) -> None:
    assert coerce_text(text, S_BOOL) == (expected, None)


@pytest.mark.parametrize("text", ["yes", "1", "0", "t", "", "truthy"])
def test_coerce_boolean_fallback(text: str) -> None:
    value, issue = coerce_text(text, S_BOOL)
    assert value == text and issue is not None


def test_coerce_object_and_array() -> None:
    assert coerce_text('{"a": [1, {"b": null}]}', S_OBJ) == ({"a": [1, {"b": None}]}, None)
    assert coerce_text("{'a': (1, 2), 'b': None, 'c': -1.5}", S_OBJ) == (
        {"a": [1, 2], "b": None, "c": -1.5},
        None,
    )
    assert coerce_text("(1, 'two')", S_ARR) == ([1, "two"], None)
    assert coerce_text("\n[1, 2]\n", S_ARR) == ([1, 2], None)
    # raw newlines inside JSON strings are tolerated (models emit them)
    assert coerce_text('{"code": "a\nb"}', S_OBJ) == ({"code": "a\nb"}, None)


@pytest.mark.parametrize(
    ("schema", "text"),
    [
        (S_OBJ, "[1, 2]"),  # valid JSON, wrong container
        (S_ARR, '{"a": 1}'),
        (S_OBJ, "{1: 'a'}"),  # non-string key
        (S_OBJ, "{'a': float('nan')}"),  # a call, not a literal
        (S_OBJ, '{"a": NaN}'),  # not JSON-compatible
        (S_ARR, "[1, 2, unclosed"),
        (S_ARR, "[" * 5000 + "]" * 5000),  # too deep for either parser
        (S_OBJ, "__import__('os').system('true')"),
    ],
)
def test_coerce_container_fallback(schema: dict[str, Any], text: str) -> None:
    value, issue = coerce_text(text, schema)
    assert value == text and issue is not None


def test_coerce_unions() -> None:
    nullable_int = {"type": "integer", "nullable": True}
    assert coerce_text("null", nullable_int) == (None, None)
    assert coerce_text("5", nullable_int) == (5, None)
    optional_int = {"anyOf": [{"type": "integer"}, {"type": "null"}]}  # pydantic's Optional[int]
    assert coerce_text("5", optional_int) == (5, None)
    value, issue = coerce_text("five", optional_int)
    assert value == "five" and issue is not None and "integer" in issue and "null" in issue
    # most structured alternative first; string takes what is left, without an issue
    multi = {"type": ["boolean", "integer", "string"]}
    assert coerce_text("true", multi) == (True, None)
    assert coerce_text("007", multi) == (7, None)
    assert coerce_text("maybe", multi) == ("maybe", None)
    num_or_arr = {"oneOf": [{"type": "number"}, {"type": "array", "items": {"type": "number"}}]}
    assert coerce_text("[1.5, 2]", num_or_arr) == ([1.5, 2], None)
    assert coerce_text("2.5", num_or_arr) == (2.5, None)
    # an untyped ($ref) alternative accepts anything, so the raw string is no problem
    with_ref = {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/X"}]}
    assert coerce_text("7", with_ref) == (7, None)
    assert coerce_text("seven", with_ref) == ("seven", None)
    # 'type' wins over anyOf constraints that carry no type
    typed_with_anyof = {"type": "integer", "anyOf": [{"minimum": 0}, {"maximum": -10}]}
    value, issue = coerce_text("x", typed_with_anyof)
    assert value == "x" and issue is not None


def test_coerce_enum() -> None:
    assert coerce_text("2", {"enum": [1, 2, 3]}) == (2, None)
    assert coerce_text("2", {"type": "integer", "enum": [1, 2, 3]}) == (2, None)
    assert coerce_text("2.0", {"enum": [1, 2, 3]}) == (2, None)
    assert coerce_text("1.5", {"enum": [1.5, "x"]}) == (1.5, None)
    assert coerce_text("celsius", {"enum": ["celsius", "fahrenheit"]}) == ("celsius", None)
    assert coerce_text(" celsius\n", {"type": "string", "enum": ["celsius"]}) == ("celsius", None)
    assert coerce_text("null", {"enum": ["null", "other"]}) == ("null", None)  # member wins over null
    assert coerce_text("null", {"enum": [None, "a"]}) == (None, None)
    assert coerce_text("true", {"enum": [True, "a"]}) == (True, None)
    assert coerce_text("1", {"enum": [True, "a"]}) == ("1", None)  # 1 is not True
    assert coerce_text('{"a":1}', {"enum": [{"a": 1}]}) == ({"a": 1}, None)
    # no member matches and no type: raw string, no guessing
    assert coerce_text("4", {"enum": [1, 2, 3]}) == ("4", None)
    # no member matches but a type: ordinary coercion
    assert coerce_text("4", {"type": "integer", "enum": [1, 2, 3]}) == (4, None)


def test_coerce_type_aliases_and_inference() -> None:
    assert coerce_text("3", {"type": "int"}) == (3, None)
    assert coerce_text("3.5", {"type": "float"}) == (3.5, None)
    assert coerce_text("True", {"type": "bool"}) == (True, None)
    assert coerce_text("3", {"type": "String"}) == ("3", None)
    assert coerce_text('{"x": 1}', {"type": "dict"}) == ({"x": 1}, None)
    # properties/items describe the container even without "type"
    assert coerce_text('{"x": 1}', {"properties": {"x": {"type": "integer"}}}) == ({"x": 1}, None)
    assert coerce_text("[1]", {"items": {"type": "integer"}}) == ([1], None)


@pytest.mark.parametrize("schema", [None, "string", 5, [], {"type": 5}, {"anyOf": "x"}, {"anyOf": [1, None]}])
def test_coerce_odd_schemas_do_not_raise(schema: Any) -> None:
    value, issue = coerce_text("12", schema)
    assert value in ("12", 12)
    assert issue is None or isinstance(issue, str)


def test_coerce_self_referencing_schema() -> None:
    schema: dict[str, Any] = {}
    schema["anyOf"] = [schema, {"type": "integer"}]
    assert coerce_text("12", schema) == (12, None)
    assert coerce_text("x", schema) == ("x", None)


def test_coerce_issue_message_is_bounded() -> None:
    text = "x" * 1_000_000
    value, issue = coerce_text(text, S_INT)
    assert value is text
    assert issue is not None and len(issue) < 200


# A small, partly-garbage schema space for property tests.
_TYPE_NAMES = st.sampled_from(
    ["string", "integer", "number", "boolean", "object", "array", "null", "int", "weird", 5]
)
_JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
_SCHEMAS: st.SearchStrategy[Any] = st.recursive(
    st.fixed_dictionaries(
        {},
        optional={
            "type": _TYPE_NAMES | st.lists(_TYPE_NAMES, max_size=3),
            "nullable": st.booleans(),
            "enum": st.lists(_JSON_SCALARS, max_size=3),
            "const": _JSON_SCALARS,
            "$ref": st.just("#/x"),
        },
    ),
    lambda inner: st.one_of(
        st.builds(lambda alts: {"anyOf": alts}, st.lists(inner, max_size=3)),
        st.builds(lambda alts: {"oneOf": alts}, st.lists(inner, max_size=3)),
        st.builds(lambda alts: {"allOf": alts}, st.lists(inner, max_size=3)),
        st.builds(
            lambda props, req, extra: {
                "type": "object",
                "properties": props,
                "required": req,
                "additionalProperties": extra,
            },
            st.dictionaries(st.text(max_size=3), inner, max_size=3),
            st.lists(st.text(max_size=3), max_size=2),
            st.booleans() | inner,
        ),
        st.builds(lambda items: {"type": "array", "items": items}, inner),
    ),
    max_leaves=8,
) | st.sampled_from([None, 3, "string", [], True])

_NUMBERISH_TEXT = st.from_regex(r"\A[ +\-]?[0-9]{0,4}(\.[0-9]{0,3})?([eE][+\-]?[0-9]{1,3})?\s?\Z")
_JSONISH_TEXT = st.sampled_from(["{", "}", "[", "]", "'", '"', ":", ",", "True", "null", "1", "\\"])


@settings(max_examples=400)
@given(
    text=st.text() | _NUMBERISH_TEXT | st.lists(_JSONISH_TEXT, max_size=12).map("".join),
    schema=_SCHEMAS,
)
def test_coerce_never_raises(text: str, schema: Any) -> None:
    value, issue = coerce_text(text, schema)
    if issue is not None:
        assert value == text
        assert isinstance(issue, str)
    json.dumps(value, allow_nan=False)  # always JSON-compatible


# ---------------------------------------------------------------------------------------------
# parse_python_literal
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("'single'", "single"),
        ('"double"', "double"),
        (r"'it\'s \"q\" \n \u00e9'", 'it\'s "q" \n é'),
        ("'a' 'b'", "ab"),
        ("42", 42),
        ("-42", -42),
        ("+3", 3),
        ("-2.5e-3", -0.0025),
        ("0.1", 0.1),
        ("True", True),
        ("False", False),
        ("None", None),
        ("[1, 'a', None]", [1, "a", None]),
        ("(1, 2)", [1, 2]),
        ("()", []),
        ("(1,)", [1]),
        ("{'a': {'b': [True, (None,)]}}", {"a": {"b": [True, [None]]}}),
        ("{}", {}),
        ("  [1]  \n", [1]),
        ("{'k': 1, 'k': 2}", {"k": 2}),
        ("'Tōkyō 🌟'", "Tōkyō 🌟"),
    ],
)
def test_parse_python_literal(text: str, expected: Any) -> None:
    assert _same(parse_python_literal(text), expected)


def test_parse_python_literal_unknown_escapes_stay_and_do_not_warn() -> None:
    # Models write regexes and Windows paths in pythonic calls; Python keeps unknown escapes as a
    # backslash. The tokenizer's warning (an error under -W error) must not reach the caller.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parse_python_literal(r"'\d+ C:\dir'") == "\\d+ C:\\dir"
        assert parse_python_calls(r"[search(pattern='\w+\.py')]") == [("search", {"pattern": "\\w+\\.py"})]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "name",
        "f()",
        "1 + 2",
        "-True",
        "--1",
        "-'a'",
        "not True",
        "{1: 'a'}",
        "{None: 1}",
        "{(1, 2): 3}",
        "{**x}",
        "{1, 2}",
        "b'bytes'",
        "1j",
        "1e999",
        "-1e999",
        "...",
        "f'{x}'",
        "[x for x in y]",
        "lambda: 0",
        "a.b",
        "[1, 2",
        "1; 2",
        "x = 1",
        "'\x00'",
        "\x00",
        "1" * 5000,
        "[" * 300 + "]" * 300,
        "(" * 100_000,
    ],
)
def test_parse_python_literal_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_python_literal(text)


# ---------------------------------------------------------------------------------------------
# parse_python_calls
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vector", "text", "expected"),
    [
        (
            "dyn-pyth-b10-two-calls",
            '[get_weather(location="NYC"), get_weather(location="LA")]',
            [("get_weather", {"location": "NYC"}), ("get_weather", {"location": "LA"})],
        ),
        (
            "dyn-pyth-b7a-python-literals",
            '[book_flight(destination="Paris", passengers=2, first_class=True)]',
            [("book_flight", {"destination": "Paris", "passengers": 2, "first_class": True})],
        ),
        (
            "dyn-pyth-b7b-escapes",
            '[get_weather(location="Tōkyō \\"central\\"")]',
            [("get_weather", {"location": 'Tōkyō "central"'})],
        ),
        (
            "dyn-pyth-b7d-nested",
            '[process_data(items=[1, 2, 3], config={"nested": True})]',
            [("process_data", {"items": [1, 2, 3], "config": {"nested": True}})],
        ),
        (
            "ovg-pythonic-single-quotes",
            "[get_weather(location='New York, NY', unit='celsius')]",
            [("get_weather", {"location": "New York, NY", "unit": "celsius"})],
        ),
        (
            "lcpp-lfm2-think-content-call",
            '[get_time(city="Paris")]',
            [("get_time", {"city": "Paris"})],
        ),
        (
            "lcpp-lfm2-fake-call-in-closed-think",
            "[special_function(arg1=1)]",
            [("special_function", {"arg1": 1})],
        ),
    ],
)
def test_parse_python_calls_vectors(
    vector: str, text: str, expected: list[tuple[str, dict[str, Any]]]
) -> None:
    assert parse_python_calls(text) == expected, vector


def test_parse_python_calls_shapes() -> None:
    assert parse_python_calls("[]") == []
    assert parse_python_calls("  [ ]\n") == []
    assert parse_python_calls("f(a=1)") == [("f", {"a": 1})]
    assert parse_python_calls("f()") == [("f", {})]
    assert parse_python_calls("[f()]") == [("f", {})]
    assert parse_python_calls("f(a=1), g(b=2)") == [("f", {"a": 1}), ("g", {"b": 2})]
    assert parse_python_calls("[functions.get_weather(location='NYC')]") == [
        ("functions.get_weather", {"location": "NYC"})
    ]
    assert parse_python_calls("[a.b.c(x=-1)]") == [("a.b.c", {"x": -1})]
    assert parse_python_calls("[f(\n  a=1,\n  b=[1, 2],\n)]") == [("f", {"a": 1, "b": [1, 2]})]
    assert parse_python_calls("[f(a=(1, 2), b=None)]") == [("f", {"a": [1, 2], "b": None})]


def test_parse_python_calls_keeps_names_as_written() -> None:
    # The AST normalises identifiers (NFKC); the call name and keys must stay as the model wrote them.
    assert parse_python_calls("[ｆｏｏ(ｋｅｙ=1)]") == [("ｆｏｏ", {"ｋｅｙ": 1})]
    assert parse_python_calls("[获取天气(城市='北京')]") == [("获取天气", {"城市": "北京"})]
    assert parse_python_calls("[functions . f(a=1)]") == [("functions.f", {"a": 1})]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "[1, 2]",
        "[get_weather('NYC')]",  # positional
        "[f(1, a=2)]",
        "[f(**kw)]",
        "[f(*args)]",
        "[f(a=1, a=2)]",  # repeated keyword
        "[f(a=x)]",  # a name, not a literal
        "[f(a=g())]",  # nested call
        "[f(a=1 + 2)]",
        "[f()(a=1)]",
        "[x[0](a=1)]",
        "[f(a=1)",  # unclosed
        '[get_weather(location="N',  # dyn-pyth-b5c-truncated
        "f(a=1); g()",
        "[f(a=1)] and more",
        "print",
        "{'f': 1}",
        "[manim-video(mode='plan')]",  # hyphens are not Python names
    ],
)
def test_parse_python_calls_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_python_calls(text)


_IDENT = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,10}\Z").filter(lambda s: not keyword.iskeyword(s))
_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200)
@given(
    calls=st.lists(
        st.tuples(
            st.lists(_IDENT, min_size=1, max_size=3).map(".".join),
            st.dictionaries(_IDENT, _JSON_VALUES, max_size=4),
        ),
        max_size=4,
    ),
    bracketed=st.booleans(),
)
def test_parse_python_calls_round_trip(calls: list[tuple[str, dict[str, Any]]], bracketed: bool) -> None:
    rendered = [f"{name}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})" for name, kwargs in calls]
    text = "[" + ", ".join(rendered) + "]" if bracketed or len(rendered) != 1 else rendered[0]
    parsed = parse_python_calls(text)
    assert len(parsed) == len(calls)
    for (name, kwargs), (got_name, got_kwargs) in zip(calls, parsed, strict=True):
        assert got_name == name
        assert _same(got_kwargs, kwargs)


# ---------------------------------------------------------------------------------------------
# parse_relaxed_object
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vector", "body", "delims", "expected"),
    [
        ("dyn-gemma4-b10-two-calls", '{location:<|"|>NYC<|"|>}', [GEMMA], {"location": "NYC"}),
        (
            "dyn-gemma4-b7a-scalars",
            '{destination:<|"|>Paris<|"|>,passengers:2,first_class:true}',
            [GEMMA],
            {"destination": "Paris", "passengers": 2, "first_class": True},
        ),
        ("dyn-gemma4-b7c-quoted-number", '{celsius:<|"|>20<|"|>}', [GEMMA], {"celsius": "20"}),
        (
            "dyn-gemma4-b7d-nested",
            "{items:[1,2,3],config:{nested:true}}",
            [GEMMA],
            {"items": [1, 2, 3], "config": {"nested": True}},
        ),
        (
            "oll-gemma4-null-args",
            "{value:null,nested:{value:null}}",
            [GEMMA],
            {"value": None, "nested": {"value": None}},
        ),
        (
            "oll-gemma4-unescaped-quotes",
            '{query:<|"|>say "hello", then "goodbye"<|"|>}',
            [GEMMA],
            {"query": 'say "hello", then "goodbye"'},
        ),
        (
            "oll-gemma4-backslashes-verbatim",
            '{path:<|"|>C:\\users\\bob\\file.txt<|"|>}',
            [GEMMA],
            {"path": "C:\\users\\bob\\file.txt"},
        ),
        (
            "oll-gemma4-json-and-gemma-quotes",
            '{query:"raw \\"quoted\\"",note:<|"|>gemma "quoted"<|"|>}',
            [GEMMA],
            {"query": 'raw "quoted"', "note": 'gemma "quoted"'},
        ),
        (
            "mlx-gemma4-hyphen-name",
            '{mode:<|"|>plan<|"|>,prompt:<|"|>explain KV caching<|"|>}',
            [GEMMA],
            {"mode": "plan", "prompt": "explain KV caching"},
        ),
        (
            "mlx-gemma4-braces-in-string",
            '{action:<|"|>create<|"|>,content:<|"|>use a dict like {key: value} in your code<|"|>}',
            [GEMMA],
            {"action": "create", "content": "use a dict like {key: value} in your code"},
        ),
        (
            "mlx-gemma4-two-calls-one-block",
            '{pattern:<|"|>README*.md<|"|>}',
            [GEMMA],
            {"pattern": "README*.md"},
        ),
        (
            "issue-vllm54256-gemma4-bare-call-after-channel",
            '{command:<|"|>cat /work/src/entry.c<|"|>}',
            [GEMMA],
            {"command": "cat /work/src/entry.c"},
        ),
        ("oll-fg-simple", "{city:<escape>Paris<escape>}", [FG], {"city": "Paris"}),
        (
            "oll-fg-typed",
            "{query:<escape>test<escape>,limit:10,offset:0}",
            [FG],
            {"query": "test", "limit": 10, "offset": 0},
        ),
        (
            "oll-fg-nested",
            "{config:{settings:{enabled:true,name:<escape>test<escape>}}}",
            [FG],
            {"config": {"settings": {"enabled": True, "name": "test"}}},
        ),
        (
            "oll-fg-array-of-escaped",
            "{items:[<escape>a<escape>,<escape>b<escape>,<escape>c<escape>]}",
            [FG],
            {"items": ["a", "b", "c"]},
        ),
        ("oll-fg-two-calls-text-between", "{}", [FG], {}),
        ("oll-fg-unicode", "{name:<escape>日本語<escape>}", [FG], {"name": "日本語"}),
    ],
)
def test_parse_relaxed_object_vectors(
    vector: str, body: str, delims: list[tuple[str, str]], expected: dict[str, Any]
) -> None:
    assert _same(parse_relaxed_object(body, delims), expected), vector


def test_parse_relaxed_object_brief_example() -> None:
    text = '{location:<|"|>NYC<|"|>,passengers:2,first_class:true,cfg:{nested:true},items:[1,2,3]}'
    assert parse_relaxed_object(text, [GEMMA]) == {
        "location": "NYC",
        "passengers": 2,
        "first_class": True,
        "cfg": {"nested": True},
        "items": [1, 2, 3],
    }


def test_parse_relaxed_object_keys() -> None:
    assert parse_relaxed_object("{a-b.c:1,ключ:2,$x:3,k'q:4}") == {"a-b.c": 1, "ключ": 2, "$x": 3, "k'q": 4}
    assert parse_relaxed_object('{"quoted key":1,<|"|>odd: key<|"|>:2}', [GEMMA]) == {
        "quoted key": 1,
        "odd: key": 2,
    }
    assert parse_relaxed_object("{true:1,null:2,12:3}") == {"true": 1, "null": 2, "12": 3}
    assert parse_relaxed_object("{a:1,a:2}") == {"a": 2}


def test_parse_relaxed_object_whitespace_and_scalars() -> None:
    text = ' \n{ a : 1 ,\tb:[ -2.5e3 , 0 , 007 ] , c : { } , d : [ ] , e:"x\\ny" , f:false }\n '
    assert parse_relaxed_object(text) == {
        "a": 1,
        "b": [-2500.0, 0, 7],
        "c": {},
        "d": [],
        "e": "x\ny",
        "f": False,
    }
    assert parse_relaxed_object("{a:1,}") == {"a": 1}  # trailing comma tolerated
    assert parse_relaxed_object("[1,2,]") == [1, 2]
    assert parse_relaxed_object("42") == 42  # any value at the root
    assert parse_relaxed_object('<|"|><|"|>', [GEMMA]) == ""


def test_parse_relaxed_object_delimited_strings_are_verbatim() -> None:
    raw = 'line1\nC:\\new\\table "q" \\u0041 , } ] { [ : <escape>'
    assert parse_relaxed_object('{v:<|"|>' + raw + '<|"|>}', [GEMMA]) == {"v": raw}
    # several delimiter pairs at once, asymmetric pairs, and a pair whose opener prefixes another
    delims = [("<", ">"), ("<<", ">>"), ("«", "»")]
    assert parse_relaxed_object("{a:<x>,b:<<y>>,c:«z»}", delims) == {"a": "x", "b": "y", "c": "z"}


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("", 0),
        ("{", 1),
        ("{a:1", 4),
        ("{a 1}", 3),
        ("{a:}", 3),
        ("{a:foo}", 3),  # bare words are not values
        ("{a:True}", 3),
        ("{a:1}x", 5),
        ("{:1}", 1),
        ("[1,,2]", 3),
        ("{a:1 b:2}", 5),
        ("{a:[1,2}", 7),
        ('{a:"x}', 3),
        ('{a:<|"|>unterminated}', 3),
        ('{a:"bad \\x escape"}', 3),
        ("{a:1e999}", 3),
        ("{a:NaN}", 3),
        ("{a:-}", 3),
        ("{a:.5}", 3),
        ("}", 0),
    ],
)
def test_parse_relaxed_object_errors_name_position(text: str, position: int) -> None:
    with pytest.raises(ValueError, match=rf"position {position}\b"):
        parse_relaxed_object(text, [GEMMA])


def test_parse_relaxed_object_rejects_bad_delimiters() -> None:
    with pytest.raises(ValueError):
        parse_relaxed_object("{}", [("", "x")])
    with pytest.raises(ValueError):
        parse_relaxed_object("{}", [("a",)])  # type: ignore[list-item]


def test_parse_relaxed_object_nesting_limit() -> None:
    assert parse_relaxed_object("[" * 400 + "]" * 400) is not None
    with pytest.raises(ValueError, match="nesting"):
        parse_relaxed_object("[" * 100_000 + "]" * 100_000)


def test_parse_relaxed_object_is_fast_on_large_strings() -> None:
    big = "x" * 1_000_000
    for text in ['{v:<|"|>' + big + '<|"|>}', '{v:"' + big + '"}', '{v:"' + "a\\n" * 350_000 + '"}']:
        start = time.perf_counter()
        result = parse_relaxed_object(text, [GEMMA])
        assert time.perf_counter() - start < 0.5
        assert len(result["v"]) >= 700_000
    many = "{" + ",".join(f'k{i}:<|"|>v{i}<|"|>' for i in range(50_000)) + "}"
    start = time.perf_counter()
    assert len(parse_relaxed_object(many, [GEMMA])) == 50_000
    assert time.perf_counter() - start < 1.0


_BARE_KEY = re.compile(r"[^\s{}\[\],:]+")
_D = GEMMA[0]


def _gemma(value: Any, space: str = "") -> str:
    """A tiny Gemma 4 serializer: bare keys where possible, <|"|> strings, JSON otherwise."""
    if isinstance(value, dict):
        parts = [f"{_gemma_key(k)}{space}:{space}{_gemma(v, space)}" for k, v in value.items()]
        return "{" + space + f"{space},{space}".join(parts) + space + "}"
    if isinstance(value, list):
        return "[" + space + f"{space},{space}".join(_gemma(v, space) for v in value) + space + "]"
    if isinstance(value, str):
        return _D + value + _D if _D not in value else json.dumps(value, ensure_ascii=False)
    return json.dumps(value)


def _gemma_key(key: str) -> str:
    if _BARE_KEY.fullmatch(key) and not key.startswith((_D, '"')):
        return key
    return _gemma(key)


@settings(max_examples=300)
@given(
    value=st.dictionaries(st.text(max_size=8), _JSON_VALUES, max_size=5),
    space=st.sampled_from(["", " ", "\n\t"]),
)
def test_parse_relaxed_object_round_trip(value: dict[str, Any], space: str) -> None:
    assert _same(parse_relaxed_object(_gemma(value, space), [GEMMA]), value)


@given(
    text=st.text(max_size=40) | st.lists(st.sampled_from([*'{}[],:"ab1 -.e', _D]), max_size=20).map("".join)
)
def test_parse_relaxed_object_only_raises_value_error(text: str) -> None:
    try:
        result = parse_relaxed_object(text, [GEMMA])
    except ValueError as exc:
        assert "position" in str(exc)
    else:
        json.dumps(result, allow_nan=False)


# ---------------------------------------------------------------------------------------------
# validate_arguments
# ---------------------------------------------------------------------------------------------

BOOK = {
    "type": "object",
    "properties": {
        "destination": {"type": "string"},
        "passengers": {"type": "integer"},
        "first_class": {"type": "boolean"},
        "price": {"type": "number"},
        "notes": {"type": ["string", "null"]},
        "seat": {"enum": ["aisle", "window"]},
        "extras": {"type": "array", "items": {"type": "string"}},
        "contact": {
            "type": "object",
            "properties": {"email": {"type": "string"}},
            "required": ["email"],
            "additionalProperties": False,
        },
    },
    "required": ["destination", "passengers"],
    "additionalProperties": False,
}


def test_validate_valid_arguments() -> None:
    args = {
        "destination": "Paris",
        "passengers": 2,
        "first_class": True,
        "price": 10,
        "notes": None,
        "seat": "aisle",
        "extras": ["meal"],
        "contact": {"email": "a@b.c"},
    }
    assert validate_arguments(args, BOOK) == []
    assert validate_arguments({"destination": "Paris", "passengers": 2.0}, BOOK) == []  # 2.0 is an integer


def _found(problems: list[Any]) -> set[tuple[tuple[str | int, ...], str]]:
    return {(problem.path, problem.keyword) for problem in problems}


def test_validate_problems() -> None:
    args = {
        "passengers": True,  # bool is not an integer
        "price": "10",
        "notes": 5,
        "seat": "middle",
        "extras": ["ok", 3],
        "contact": {"phone": "1"},
        "surprise": 1,
    }
    problems = check_arguments(args, BOOK)
    assert _found(problems) == {
        (("destination",), "required"),
        (("passengers",), "type"),
        (("price",), "type"),
        (("notes",), "type"),
        (("seat",), "enum"),
        (("extras", 1), "type"),
        (("contact", "email"), "required"),
        (("contact", "phone"), "additionalProperties"),
        (("surprise",), "additionalProperties"),
    }
    assert len(problems) == 9
    by_path = {problem.path: problem for problem in problems}
    assert by_path[("seat",)].value == "middle" and by_path[("seat",)].expected == ["aisle", "window"]
    assert by_path[("extras", 1)].value == 3
    # the strings validate_arguments returns are these problems, in order
    assert validate_arguments(args, BOOK) == [str(problem) for problem in problems]


def test_validate_unions_and_misc() -> None:
    schema = {
        "type": "object",
        "properties": {
            "limit": {
                "oneOf": [{"type": "integer"}, {"type": "object", "properties": {"max": {"type": "integer"}}}]
            },
            "label": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "n": {"type": "integer", "nullable": True},
            "k": {"const": "fixed"},
            "free": {},
            "both": {"allOf": [{"type": "number"}, {"enum": [1, 2]}]},
        },
        "additionalProperties": {"type": "integer"},
    }
    assert check_arguments({"limit": 3, "label": None, "n": None, "k": "fixed", "free": [1]}, schema) == []
    assert check_arguments({"limit": {"max": 3}, "both": 2, "other": 5}, schema) == []
    problems = check_arguments({"limit": "3", "label": 1, "k": "x", "both": 3, "other": "x"}, schema)
    assert _found(problems) == {
        (("limit",), "oneOf"),
        (("label",), "anyOf"),
        (("k",), "const"),
        (("both",), "enum"),
        (("other",), "type"),
    }
    # True is not 1 for enum purposes, 1.0 is
    assert _found(check_arguments({"x": True}, {"properties": {"x": {"enum": [1]}}})) == {(("x",), "enum")}
    assert check_arguments({"x": 1.0}, {"properties": {"x": {"enum": [1]}}}) == []


def test_unusable_schema_is_noted_not_enforced() -> None:
    dangling = {"type": "object", "properties": {"ref": {"$ref": "#/$defs/X"}}}
    remote = {"type": "object", "properties": {"ref": {"$ref": "https://example.com/thing.json"}}}
    broken = {"type": "object", "properties": {"p": {"type": "string", "pattern": "("}}}
    for schema in (dangling, remote, broken):
        assert check_arguments({"ref": 1, "p": "x"}, schema) == []
        assert len(schema_notes(schema)) == 1
    assert schema_notes({"type": "object", "properties": {"a": {"type": "mystery"}}}) != ()
    assert check_arguments({"a": 1}, {"type": "object", "properties": {"a": {"type": "mystery"}}}) == []
    assert schema_notes(BOOK) == ()


def test_validate_degenerate_inputs() -> None:
    assert validate_arguments({"a": 1}, None) == []
    assert validate_arguments({"a": 1}, {}) == []
    assert validate_arguments({}, {"type": "object"}) == []
    assert validate_arguments({"a": 1}, "junk") == []  # type: ignore[arg-type]
    assert _found(check_arguments([1], {"type": "object"})) == {((), "type")}  # type: ignore[arg-type]
    cyclic: dict[str, Any] = {"type": "object"}
    cyclic["properties"] = {"self": cyclic}
    nested: dict[str, Any] = {}
    nested["self"] = nested
    assert isinstance(validate_arguments(nested, cyclic), list)


@settings(max_examples=300)
@given(arguments=st.dictionaries(st.text(max_size=3), _JSON_VALUES, max_size=4), schema=_SCHEMAS)
def test_validate_never_raises(arguments: dict[str, Any], schema: Any) -> None:
    problems = validate_arguments(arguments, schema)
    assert isinstance(problems, list) and all(isinstance(p, str) for p in problems)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.tuples(st.sampled_from(["f", "ns.g", "café", "Ünï.x"]),
                                st.sampled_from(["a", "ß", "k"]),
                                st.sampled_from(["1", "'é'", "[1,\n 2]", '"x\\ny"', "{'k': 'v'}"]),
                                st.sampled_from(["", " ", "\n", "\r\n", "\r", "\n  "])),
                      min_size=1, max_size=6))
def test_source_segments_equal_the_standard_function(parts: list[tuple[str, str, str, str]]) -> None:
    """The one-split segment reader of pythonic calls says what ast.get_source_segment says."""
    import ast

    from autoparser.engine.values import _Segments

    source = "[" + ",".join(f"{gap}{name}({gap}{key}={gap}{value})" for name, key, value, gap in parts) + "]"
    tree = ast.parse(source, mode="eval")
    segments = _Segments(source)
    nodes = [n for n in ast.walk(tree) if hasattr(n, "end_col_offset")]
    assert nodes
    for node in nodes:
        assert segments.of(node) == ast.get_source_segment(source, node)


def test_relaxed_object_with_a_template_s_own_separators() -> None:
    """``{k=«v»; n=3}``: the key/value and member separators are the profile's; a separator inside
    a delimited string is text; the streamed JSON equals the complete parse for every chunking."""
    from autoparser.engine.literalstream import RelaxedArgStream
    from autoparser.engine.values import parse_relaxed_object

    delims, seps = (("«", "»"),), ("=", ";")
    text = "{city=«Paris; k=v»; days=-3; opts={depth=1; mode=«x»}; tags=[«a»; 8.5]; ok=true}"
    want = {"city": "Paris; k=v", "days": -3, "opts": {"depth": 1, "mode": "x"}, "tags": ["a", 8.5], "ok": True}
    assert parse_relaxed_object(text, delims, seps) == want
    with pytest.raises(ValueError):
        parse_relaxed_object("{city:«Paris»}", delims, seps)  # JSON's ':' is not this object's separator
    for step in (1, 2, 5, len(text)):
        s = RelaxedArgStream(delims, ("->", "|"))
        multi = text.replace("=", "->").replace(";", "|").replace("«Paris| k->v»", "«Paris; k=v»")
        for i in range(0, len(multi), step):
            s.feed(multi[i:i + step])
        assert s.complete and not s.dead
        assert json.loads("".join(s.fragments)) == want
