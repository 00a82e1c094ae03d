"""Tool schemas as frameworks write them (issue 13): Pydantic v2 output through every tool dialect.

The schemas are recorded in fixtures/schemas/pydantic.json by scripts/gen_tool_schemas.py (the
generator version is in the file). JSON dialects write typed values, so only validation applies;
tagged dialects write text, so coercion follows the schema through ``$ref``/``allOf``/``anyOf``
before validation. Problems are compared as data (instance path, keyword), never as prose.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from autoparser import get_profile
from autoparser.engine import schema as schema_mod
from autoparser.engine.values import check_arguments, coerce_text, schema_notes, validate_arguments
from autoparser.wire import inline_refs, normalized, read_tools

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "schemas" / "pydantic.json"
RECORDED = json.loads(FIXTURE.read_text(encoding="utf-8"))
TOOLS: dict[str, dict[str, Any]] = RECORDED["tools"]
FORECAST = TOOLS["forecast"]

GOOD = {"location": {"city": "Paris", "country": None}, "days": 7, "unit": "fahrenheit"}
BAD = {"location": {"country": "FR"}, "days": 40, "unit": "kelvin"}
BAD_FOUND = {(("location", "city"), "required"), (("days",), "maximum"), (("unit",), "enum")}
# What a tag dialect writes for GOOD: every value as text ("007": leading zeros happen).
GOOD_TEXT = {"location": '{"city": "Paris", "country": null}', "days": "007", "unit": "fahrenheit"}
BAD_TEXT = {"location": '{"country": "FR"}', "days": "40", "unit": "kelvin"}


def found(problems: list[schema_mod.Problem]) -> set[tuple[tuple[str | int, ...], str]]:
    return {(problem.path, problem.keyword) for problem in problems}


def openai_tools(name: str, parameters: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": name, "parameters": parameters}}]


def test_fixture_records_its_generator() -> None:
    assert RECORDED["generator"].startswith("pydantic 2.")
    assert FORECAST["properties"]["location"] == {"$ref": "#/$defs/Location"}  # what the issue is about
    assert "definitions" in TOOLS["forecast_draft07"] and "$defs" not in TOOLS["forecast_draft07"]


# ---------------------------------------------------------------------------------------------
# Writers: one call, in each dialect's own syntax
# ---------------------------------------------------------------------------------------------

def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _relaxed(value: Any, quote: Callable[[str], str]) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}:{_relaxed(item, quote)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_relaxed(item, quote) for item in value) + "]"
    if isinstance(value, str):
        return quote(value)
    return _j(value)


def _python(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {_python(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_python(item) for item in value) + "]"
    return repr(value)


_GEMMA_QUOTE = '<|"|>'

JSON_WRITERS: dict[str, Callable[[str, dict[str, Any]], str]] = {
    "hermes": lambda n, a: f'<tool_call>\n{_j({"name": n, "arguments": a})}\n</tool_call>',
    "ernie": lambda n, a: f'</think>\n\n<tool_call>\n{_j({"name": n, "arguments": a})}\n</tool_call>\n</s>',
    "granite": lambda n, a: f'<|tool_call|>{_j([{"name": n, "arguments": a}])}',
    "jamba": lambda n, a: f'<tool_calls>{_j([{"name": n, "arguments": a}])}</tool_calls>',
    "phi4": lambda n, a: f'functools{_j([{"name": n, "arguments": a}])}',
    "llama3-json": lambda n, a: f'<|python_tag|>{_j({"name": n, "arguments": a})}',
    "mistral": lambda n, a: f"[TOOL_CALLS]{n}[ARGS]{_j(a)}",
    "kimi-k2": lambda n, a: (f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{n}:0"
                             f"<|tool_call_argument_begin|>{_j(a)}<|tool_call_end|><|tool_calls_section_end|>"),
    "deepseek-v3.1": lambda n, a: (f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{_j(a)}"
                                   "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"),
    "deepseek-v3": lambda n, a: (f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n"
                                 f"{_j(a)}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"),
    "command-r": lambda n, a: (f'<|START_ACTION|>[{{"tool_call_id": "0", "tool_name": {_j(n)}, '
                               f'"parameters": {_j(a)}}}]<|END_ACTION|>'),
    "harmony": lambda n, a: (f"<|start|>assistant<|channel|>commentary to=functions.{n} <|constrain|>json"
                             f"<|message|>{_j(a)}<|call|>"),
    # typed by their own syntax (not JSON, but not text either): validation only, like JSON
    "gemma4": lambda n, a: f"<|tool_call>call:{n}{_relaxed(a, lambda s: _GEMMA_QUOTE + s + _GEMMA_QUOTE)}<tool_call|>",
    "functiongemma": lambda n, a: (f"<start_function_call>call:{n}"
                                   f"{_relaxed(a, lambda s: '<escape>' + s + '<escape>')}<end_function_call>"),
    "pythonic": lambda n, a: f"[{n}({', '.join(f'{k}={_python(v)}' for k, v in a.items())})]",
}

_DSML = "｜DSML｜"

TAGGED_WRITERS: dict[str, Callable[[str, dict[str, str], set[str]], str]] = {
    "qwen3-coder": lambda n, p, s: ("<tool_call>\n<function=" + n + ">\n"
                                    + "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in p.items())
                                    + "</function>\n</tool_call>"),
    "glm": lambda n, p, s: ("<tool_call>" + n
                            + "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in p.items())
                            + "</tool_call>"),
    "minimax-m2": lambda n, p, s: (f'<minimax:tool_call>\n<invoke name="{n}">\n'
                                   + "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in p.items())
                                   + "</invoke>\n</minimax:tool_call>"),
    "minimax-m3": lambda n, p, s: ("]<]minimax[>[<tool_call>\n]<]minimax[>[" + f'<invoke name="{n}">'
                                   + "".join(f"]<]minimax[>[<{k}>{v}]<]minimax[>[</{k}>" for k, v in p.items())
                                   + "]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>"),
    "deepseek-v3.2": lambda n, p, s: (f'<{_DSML}function_calls>\n<{_DSML}invoke name="{n}">\n'
                                      + "".join(f'<{_DSML}parameter name="{k}" string="{str(k in s).lower()}">'
                                                f"{v}</{_DSML}parameter>\n" for k, v in p.items())
                                      + f"</{_DSML}invoke>\n</{_DSML}function_calls>"),
    "deepseek-v4": lambda n, p, s: (f'<{_DSML}tool_calls>\n<{_DSML}invoke name="{n}">\n'
                                    + "".join(f'<{_DSML}parameter name="{k}" string="{str(k in s).lower()}">'
                                              f"{v}</{_DSML}parameter>\n" for k, v in p.items())
                                    + f"</{_DSML}invoke>\n</{_DSML}tool_calls>"),
}


def parse(dialect: str, text: str, tools: Any, *, per_char: bool = False) -> Any:
    parser = get_profile(dialect).parser(tools=tools)
    for chunk in (list(text) if per_char else [text]):
        parser.feed(chunk)
    parser.close()
    return parser.result()


def assert_good(result: Any, where: str) -> None:
    assert [(c.name, c.arguments, c.status) for c in result.tool_calls] == [("forecast", GOOD, "ok")], where
    assert not [i for i in result.issues if i.code in ("schema_mismatch", "schema_unusable", "coercion_fallback")]


def assert_bad(result: Any, schema: dict[str, Any], where: str) -> None:
    assert [(c.name, c.status) for c in result.tool_calls] == [("forecast", "invalid")], where
    problems = check_arguments(result.tool_calls[0].arguments, schema)
    assert found(problems) == BAD_FOUND, where
    mismatches = [i for i in result.issues if i.code == "schema_mismatch"]
    assert len(mismatches) == 1, where
    assert all(str(problem) in mismatches[0].message for problem in problems)  # one issue names all three


# ---------------------------------------------------------------------------------------------
# Done-when: the issue's Forecast calls
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("per_char", [False, True])
def test_forecast_qwen3_coder_good_and_bad(per_char: bool) -> None:
    tools = openai_tools("forecast", FORECAST)
    write = TAGGED_WRITERS["qwen3-coder"]
    assert_good(parse("qwen3-coder", write("forecast", GOOD_TEXT, set()), tools, per_char=per_char), "good")
    assert_bad(parse("qwen3-coder", write("forecast", BAD_TEXT, set()), tools, per_char=per_char), FORECAST, "bad")


@pytest.mark.parametrize("per_char", [False, True])
def test_forecast_hermes_good_and_bad(per_char: bool) -> None:
    tools = openai_tools("forecast", FORECAST)
    write = JSON_WRITERS["hermes"]
    assert_good(parse("hermes", write("forecast", GOOD), tools, per_char=per_char), "good")
    assert_bad(parse("hermes", write("forecast", BAD), tools, per_char=per_char), FORECAST, "bad")


def test_forecast_problem_data() -> None:
    by_keyword = {problem.keyword: problem for problem in check_arguments(BAD, FORECAST)}
    assert by_keyword["maximum"].expected == 14 and by_keyword["maximum"].value == 40
    assert by_keyword["enum"].expected == ["celsius", "fahrenheit"] and by_keyword["enum"].value == "kelvin"
    assert by_keyword["required"].path == ("location", "city")
    assert validate_arguments(BAD, FORECAST) == [str(p) for p in check_arguments(BAD, FORECAST)]


# ---------------------------------------------------------------------------------------------
# Every tool dialect, both schema spellings (2020-12 $defs, draft-07 definitions)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["forecast", "forecast_draft07"])
@pytest.mark.parametrize("dialect", sorted(JSON_WRITERS))
def test_json_dialects_validate(dialect: str, variant: str) -> None:
    schema = TOOLS[variant]
    tools = openai_tools("forecast", schema)
    write = JSON_WRITERS[dialect]
    assert_good(parse(dialect, write("forecast", GOOD), tools), f"{dialect} good")
    assert_bad(parse(dialect, write("forecast", BAD), tools), schema, f"{dialect} bad")


@pytest.mark.parametrize("variant", ["forecast", "forecast_draft07"])
@pytest.mark.parametrize("dialect", sorted(TAGGED_WRITERS))
def test_tagged_dialects_coerce_and_validate(dialect: str, variant: str) -> None:
    schema = TOOLS[variant]
    tools = openai_tools("forecast", schema)
    write = TAGGED_WRITERS[dialect]
    strings = {"unit"}  # what a typed-attribute dialect marks as string="true"
    for per_char in (False, True):
        assert_good(parse(dialect, write("forecast", GOOD_TEXT, strings), tools, per_char=per_char), dialect)
        assert_bad(parse(dialect, write("forecast", BAD_TEXT, strings), tools, per_char=per_char), schema, dialect)


# ---------------------------------------------------------------------------------------------
# Coercion reads the schema as validation does
# ---------------------------------------------------------------------------------------------

def test_coercion_through_ref_allof_anyof() -> None:
    props = FORECAST["properties"]
    assert coerce_text('{"city": "Paris"}', props["location"], FORECAST) == ({"city": "Paris"}, None)
    assert coerce_text("fahrenheit", props["unit"], FORECAST) == ("fahrenheit", None)
    assert coerce_text("007", props["days"], FORECAST) == (7, None)
    # without the document a $ref says nothing: the raw text, no guess
    assert coerce_text('{"city": "Paris"}', props["location"]) == ('{"city": "Paris"}', None)
    # Pydantic v1 / hand-written: allOf around the $ref, constraints beside it
    wrapped = {"allOf": [{"$ref": "#/$defs/Location"}], "description": "where"}
    assert coerce_text('{"city": "Oslo"}', wrapped, FORECAST) == ({"city": "Oslo"}, None)
    assert coerce_text("007", {"allOf": [{"type": "number"}, {"type": "integer"}]}) == (7, None)
    assert coerce_text("12", {"allOf": [{"type": "integer"}, {"minimum": 1}]}) == (12, None)
    # Optional[Location] / Optional[Unit]
    optional = {"anyOf": [{"$ref": "#/$defs/Location"}, {"type": "null"}]}
    assert coerce_text("null", optional, FORECAST) == (None, None)
    assert coerce_text('{"city": "Rome"}', optional, FORECAST) == ({"city": "Rome"}, None)
    priority = TOOLS["schedule_meeting"]
    assert coerce_text("3", priority["properties"]["priority"], priority) == (3, None)  # $ref'd int enum
    value, issue = coerce_text("not json", props["location"], FORECAST)
    assert value == "not json" and issue is not None  # the fallback: raw string plus an issue
    recursive = TOOLS["outline"]
    assert coerce_text('{"name": "a", "children": []}', recursive["properties"]["root"], recursive) == (
        {"name": "a", "children": []}, None)


def test_discriminated_union_and_strict_mode() -> None:
    adopt = TOOLS["adopt_pet"]
    assert check_arguments({"pet": {"pet_type": "cat", "meows": 2}, "owner": "me"}, adopt) == []
    assert found(check_arguments({"pet": {"pet_type": "cat", "barks": 2.5}, "owner": {"city": ""}}, adopt)) == {
        (("pet",), "oneOf"), (("owner",), "anyOf")}
    meeting = TOOLS["schedule_meeting"]
    good = {"title": "Sync", "attendees": [{"email": "a@b.c"}], "duration_min": 30, "slot": [9, 10]}
    assert check_arguments(good, meeting) == []
    bad = {"title": "Sync", "attendees": [{"email": "nope", "x": 1}], "duration_min": 0, "slot": [9, "ten"],
           "kind": "video", "labels": {"a": "b"}, "extra": True}
    assert found(check_arguments(bad, meeting)) == {
        (("attendees", 0, "email"), "pattern"), (("attendees", 0, "x"), "additionalProperties"),
        (("duration_min",), "exclusiveMinimum"), (("slot", 1), "type"), (("kind",), "enum"),
        (("labels", "a"), "type"), (("extra",), "additionalProperties")}
    assert found(check_arguments({**good, "attendees": []}, meeting)) == {(("attendees",), "minItems")}
    assert found(check_arguments({**good, "slot": [1, 2, 3]}, meeting)) == {(("slot",), "maxItems")}


def test_ref_with_sibling_constraints_applies_both() -> None:
    schema = {"$defs": {"S": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/S", "maxLength": 2}}}
    assert found(check_arguments({"a": "abc"}, schema)) == {(("a",), "maxLength")}
    assert found(check_arguments({"a": 1}, schema)) == {(("a",), "type")}
    # a schema that declares draft-07 keeps draft-07's rule: siblings of $ref are ignored
    old = {**schema, "$schema": "http://json-schema.org/draft-07/schema#"}
    assert check_arguments({"a": "abc"}, old) == []


# ---------------------------------------------------------------------------------------------
# A schema that cannot be used is reported once and never blocks a call
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dialect", ["hermes", "qwen3-coder"])
def test_unusable_schema_reported_once_call_not_blocked(dialect: str) -> None:
    remote = {"type": "object", "properties": {"days": {"$ref": "https://example.invalid/days.json"}}}
    tools = openai_tools("forecast", remote)
    if dialect == "hermes":
        one = JSON_WRITERS["hermes"]("forecast", {"days": 7})
    else:
        one = TAGGED_WRITERS["qwen3-coder"]("forecast", {"days": "7"}, set())
    result = parse(dialect, one + "\n" + one, tools)
    assert [c.status for c in result.tool_calls] == ["ok", "ok"]
    assert [i.code for i in result.issues].count("schema_unusable") == 1
    assert not [i for i in result.issues if i.code == "schema_mismatch"]


def test_remote_ref_is_never_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    import urllib.request

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a schema $ref was fetched")

    monkeypatch.setattr(urllib.request, "urlopen", boom)
    for ref in ("https://example.invalid/x.json", "other.json", "file:///etc/passwd", "#/$defs/Missing"):
        schema = {"type": "object", "properties": {"a": {"$ref": ref}}, "required": ["a"], "title": ref}
        assert check_arguments({"a": 1}, schema) == []
        assert len(schema_notes(schema)) == 1


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"minimum": "low"}}},
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "(["}}},
    {"type": "object", "properties": {"a": {}}, "required": "a"},
    {"type": "object", "properties": {"a": {"$ref": 5}}},
])
def test_invalid_schemas_are_noted(schema: dict[str, Any]) -> None:
    assert check_arguments({"a": 1}, schema) == []
    assert len(schema_notes(schema)) == 1


@pytest.mark.parametrize("extra", [
    {"$id": "https://example.invalid/schemas/forecast.json"},  # refs resolve in the document, not there
    {"$schema": "https://json-schema.org/draft/2020-12/schema"},
    {"$schema": "http://json-schema.org/draft-07/schema#"},
])
def test_declared_ids_and_drafts(extra: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import urllib.request

    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail("fetched"))
    schema = {**FORECAST, **extra}
    assert found(check_arguments(BAD, schema)) == BAD_FOUND
    assert check_arguments(GOOD, schema) == [] and schema_notes(schema) == ()


def test_compiled_once_per_schema() -> None:
    schema = json.loads(json.dumps(TOOLS["adopt_pet"]))
    first = schema_mod.compiled(schema)
    assert schema_mod.compiled(json.loads(json.dumps(schema))) is first  # an equal copy: the same validator
    assert schema_mod.compiled(schema) is first and first.validate is not None


def test_inline_refs_for_exporters() -> None:
    inlined = inline_refs(FORECAST)
    assert inlined["properties"]["location"]["properties"]["city"]["maxLength"] == 80
    assert inlined["properties"]["unit"] == {**FORECAST["$defs"]["Unit"], "default": "celsius"}
    assert "$defs" not in inlined
    recursive = inline_refs(TOOLS["outline"])
    # a recursive reference stays, and with it the $defs it needs: the copy is still a whole schema
    assert recursive["properties"]["root"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert recursive["$defs"] == TOOLS["outline"]["$defs"]


def test_normalized_tools_read_refs() -> None:
    schemas = {name: normalized(params) for name, params in read_tools(openai_tools("forecast", FORECAST)).items()}
    assert schemas["forecast"]["properties"]["location"]["required"] == ["city"]
    assert schemas["forecast"]["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]


def test_caches_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_mod, "_CACHE_SIZE", 4)
    schemas = [{"type": "object", "properties": {"n": {"type": "integer", "maximum": k}}} for k in range(10)]
    for k, schema in enumerate(schemas):
        assert found(check_arguments({"n": k + 1}, schema)) == {(("n",), "maximum")}
    assert len(schema_mod._by_text) <= 4 and len(schema_mod._by_identity) <= 4


def test_fixture_matches_its_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    pydantic = pytest.importorskip("pydantic")
    if RECORDED["generator"] != f"pydantic {pydantic.VERSION}":
        pytest.skip(f"fixture recorded with {RECORDED['generator']}, pydantic {pydantic.VERSION} installed")
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scripts" / "gen_tool_schemas.py"
    spec = importlib.util.spec_from_file_location("gen_tool_schemas", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "gen_tool_schemas", module)  # pydantic resolves annotations there
    spec.loader.exec_module(module)
    assert module.build() == RECORDED
