"""Property tests: our verdict on random argument dicts equals a reference JSON Schema verdict.

The reference is jsonschema's Draft 2020-12 validator (a test-only dependency), an independent
implementation of the dialect Pydantic writes: it checks both fastjsonschema and our draft-07
rewrite of 2020-12 spellings (``prefixItems``, ``$ref`` beside constraints). Arguments are drawn
from a vocabulary taken from the schema itself (its property names, enum members, bounds), so
that both verdicts and every keyword come up, not only "wrong type at the top".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoparser.engine.values import check_arguments, coerce_text, quick_check

jsonschema = pytest.importorskip("jsonschema", reason="the reference validator (jsonschema) is not installed")
referencing = pytest.importorskip("referencing")

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "schemas" / "pydantic.json"
TOOLS: dict[str, dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))["tools"]
NAMES = sorted(name for name in TOOLS if name != "forecast_draft07")


def reference(schema: dict[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, registry=referencing.Registry())  # an empty registry: nothing is fetched


def vocabulary(schema: Any) -> tuple[list[str], list[Any]]:
    """Property names, and values the schema mentions (enum members, consts, bounds +- 1)."""
    keys: set[str] = set()
    values: list[Any] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        for key, item in node.items():
            if key == "properties" and isinstance(item, dict):
                keys.update(item)
                stack.extend(item.values())
            elif key == "enum":
                values.extend(item)
            elif key == "const":
                values.append(item)
            elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                values.extend([item - 1, item, item + 1])
            elif key in ("minLength", "maxLength"):
                values.extend(["x" * item, "x" * (item + 1)])
            elif key not in ("default", "examples", "title", "description"):
                stack.append(item)
    return sorted(keys), values


def _noise(keys: list[str], mentioned: list[Any]) -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.sampled_from(mentioned) if mentioned else st.nothing(),
        st.none(), st.booleans(), st.integers(-3, 20), st.floats(-2, 20, allow_nan=False),
        st.sampled_from(["", "a@b.c", "Paris", "nope", "7", "x" * 90]),
    )
    key_names = st.sampled_from([*keys, "extra"])
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(key_names, inner, max_size=4)),
        max_leaves=8,
    )


def _fitting(node: Any, root: dict[str, Any], noise: st.SearchStrategy[Any], depth: int) -> st.SearchStrategy[Any]:
    """Values shaped by the schema (mostly valid), each node replaced by noise one time in 25."""
    if depth >= 6:
        return noise
    shaped = _shaped(node, root, noise, depth)
    return st.integers(0, 24).flatmap(lambda pick: noise if pick == 0 else shaped)


def _shaped(node: Any, root: dict[str, Any], noise: st.SearchStrategy[Any], depth: int) -> st.SearchStrategy[Any]:
    if not isinstance(node, dict):
        return noise
    if "$ref" in node:
        target = root
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return _fitting(target, root, noise, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in node:
            return st.one_of(*[_fitting(alt, root, noise, depth + 1) for alt in node[key]])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if "const" in node:
        return st.just(node["const"])
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        props = node.get("properties", {})
        required = set(node.get("required", ()))
        fields = {k: _fitting(v, root, noise, depth + 1) for k, v in props.items()}
        extra = node.get("additionalProperties")
        optional = {k: v for k, v in fields.items() if k not in required}
        if isinstance(extra, dict):
            optional["label"] = _fitting(extra, root, noise, depth + 1)
        return st.fixed_dictionaries({k: v for k, v in fields.items() if k in required}, optional=optional)
    if kind == "array":
        if "prefixItems" in node:
            return st.tuples(*[_fitting(item, root, noise, depth + 1) for item in node["prefixItems"]]).map(list)
        return st.lists(_fitting(node.get("items", {}), root, noise, depth + 1),
                        min_size=node.get("minItems", 0), max_size=node.get("maxItems", 4))
    if kind == "integer":
        return st.integers(node.get("minimum", -5), node.get("maximum", 50))
    if kind == "number":
        return st.floats(node.get("exclusiveMinimum", -5), node.get("exclusiveMaximum", 50),
                         exclude_min=True, exclude_max=True, allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        if "pattern" in node:
            return st.sampled_from(["a@b.c", "x@y.z", "q@r.s", "no at"])
        return st.text(min_size=node.get("minLength", 0), max_size=node.get("maxLength", 10))
    if kind == "null":
        return st.none()
    return noise


def arguments_for(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    noise = _noise(*vocabulary(schema))
    top = _shaped(schema, schema, noise, 0)
    loose = st.dictionaries(st.sampled_from([*vocabulary(schema)[0], "extra"]), noise, max_size=5)
    return st.integers(0, 5).flatmap(lambda pick: loose if pick == 0 else top)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_verdict_equals_reference(name: str, data: st.DataObject) -> None:
    schema = TOOLS[name]
    arguments = data.draw(arguments_for(schema))
    expected_valid = reference(schema).is_valid(arguments)
    problems = check_arguments(arguments, schema)
    assert (problems == []) == expected_valid, (arguments, [str(p) for p in problems])
    # the engine's per-call fast check (returns: valid; raises: ask check_arguments) agrees
    try:
        quick_check(schema)(arguments)
    except Exception:
        quick_valid = False
    else:
        quick_valid = True
    assert quick_valid == expected_valid, arguments
    if problems:
        # every problem sits at a path where the reference also sees an error (or below one)
        seen = {tuple(error.absolute_path) for error in reference(schema).iter_errors(arguments)}
        for problem in problems:
            assert any(problem.path[: len(path)] == path for path in seen) or not seen, (problem, seen)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_draft07_spelling_same_verdict(data: st.DataObject) -> None:
    arguments = data.draw(arguments_for(TOOLS["forecast"]))
    assert (check_arguments(arguments, TOOLS["forecast"]) == []) == (
        check_arguments(arguments, TOOLS["forecast_draft07"]) == []) == reference(TOOLS["forecast"]).is_valid(arguments)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_tagged_text_round_trips_when_valid(data: st.DataObject) -> None:
    """A valid argument written as tag-dialect text coerces back to itself (then validates)."""
    schema = TOOLS["forecast"]
    arguments = data.draw(arguments_for(schema))
    if not reference(schema).is_valid(arguments):
        return
    typed = {}
    for key, value in arguments.items():
        text = value if isinstance(value, str) else json.dumps(value)
        typed[key], issue = coerce_text(text, schema["properties"][key], schema)
        assert issue is None
    assert typed == arguments
    assert check_arguments(typed, schema) == []
