"""``autoparser.grammar.for_request``: OpenAI's ``tool_choice`` and ``parallel_tool_calls`` in one place."""

from __future__ import annotations

import re
from typing import Any

import pytest

import autoparser
from autoparser.errors import AutoparserError
from autoparser.grammar import example_calls, for_request

TOOLS = [{"type": "function", "function": {"name": "ns:get_time", "parameters": {
             "type": "object", "properties": {"zone": {"type": "str"}}, "required": ["zone"]}}},
         {"name": "weather.now", "input_schema": {  # Anthropic shape
             "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
UTC = ("ns:get_time", {"zone": "UTC"})
PARIS = ("weather.now", {"city": "Paris"})


def _allows(spec: dict[str, Any] | None, prof: autoparser.Profile, *calls: tuple[str, dict[str, Any]]) -> bool:
    assert spec is not None and spec["kind"] == "regex"
    text = example_calls(prof, list(calls))
    if re.fullmatch(spec["regex"], text) is None:
        return False
    parsed = autoparser.parse(text, prof, tools=TOOLS).tool_calls
    assert [(c.name, c.arguments, c.status) for c in parsed] == [(n, a, "ok") for n, a in calls]
    return True


@pytest.mark.parametrize("dialect", ["hermes", "qwen3-coder", "kimi-k2", "gemma4"])
def test_required_named_and_parallel(dialect: str) -> None:
    prof = autoparser.get_profile(dialect)
    required = for_request(prof, TOOLS, "required", max_calls=2)
    assert _allows(required, prof, UTC) and _allows(required, prof, UTC, PARIS)
    assert not _allows(required, prof, UTC, PARIS, UTC)
    single = for_request(prof, TOOLS, "required", parallel_tool_calls=False)
    assert _allows(single, prof, PARIS) and not _allows(single, prof, PARIS, UTC)
    named = for_request(prof, TOOLS, {"type": "function", "function": {"name": "weather.now"}}, max_calls=3)
    assert _allows(named, prof, PARIS) and not _allows(named, prof, UTC) and not _allows(named, prof, PARIS, PARIS)


def test_auto_none_and_refusals() -> None:
    prof = autoparser.get_profile("hermes")
    auto = for_request(prof, TOOLS, "auto", parallel_tool_calls=False)
    assert auto is not None and auto["kind"] == "structural_tags" and auto["tag"]["stop_after_first"]
    assert for_request(prof, TOOLS)["tag"]["stop_after_first"] is False  # type: ignore[index]
    assert for_request(prof, TOOLS, "none") is None and for_request(prof, None, "auto") is None
    for bad in ("required", {"function": {"name": "ns:get_time"}}):
        with pytest.raises(AutoparserError, match="needs tools"):
            for_request(prof, [], bad)
    with pytest.raises(AutoparserError, match="not among the tools"):
        for_request(prof, TOOLS, {"name": "get_weather"})
    with pytest.raises(AutoparserError, match="tool_choice must be"):
        for_request(prof, TOOLS, "sometimes")
    with pytest.raises(AutoparserError, match="cannot be written"):  # a Python callee cannot be ns:get_time
        for_request(autoparser.get_profile("pythonic"), TOOLS, "required")
