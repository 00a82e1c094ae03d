"""Grammar exporters read ``$ref`` as validation does (issue 13): a Pydantic schema's ``$defs``
constrain the grammar instead of widening to "any value". Checked with a real grammar engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import autoparser
from autoparser.export import build_grammar

pytest.importorskip("llguidance")
from test_export_grammar import accepts

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "schemas" / "pydantic.json"
TOOLS = json.loads(FIXTURE.read_text(encoding="utf-8"))["tools"]


@pytest.mark.parametrize("variant", ["forecast", "forecast_draft07"])
def test_hermes_grammar_follows_refs(variant: str) -> None:
    tools = [{"type": "function", "function": {"name": "forecast", "parameters": TOOLS[variant]}}]
    g = build_grammar(autoparser.get_profile("hermes"), tools, "gbnf")
    ok = ('<tool_call>{"name": "forecast", "arguments": {"location": {"city": "Paris", "country": null}, '
          '"days": 7, "unit": "fahrenheit"}}</tool_call>')
    assert accepts(g, ok)
    assert not accepts(g, ok.replace('"fahrenheit"', '"kelvin"'))  # the $ref'd enum
    assert not accepts(g, ok.replace('"city": "Paris", ', ""))  # the $ref'd model's required city
    assert not accepts(g, ok.replace('{"city": "Paris", "country": null}', '"Paris"'))


def test_qwen3_coder_grammar_types_ref_parameters() -> None:
    tools = [{"type": "function", "function": {"name": "forecast", "parameters": TOOLS["forecast"]}}]
    g = build_grammar(autoparser.get_profile("qwen3-coder"), tools, "gbnf")
    call = ("<tool_call>\n<function=forecast>\n<parameter=location>\n{location}\n</parameter>\n"
            "<parameter=days>\n7\n</parameter>\n<parameter=unit>\n{unit}\n</parameter>\n</function>\n</tool_call>")
    assert accepts(g, call.format(location='{"city": "Paris", "country": null}', unit="fahrenheit"))
    assert not accepts(g, call.format(location='{"country": null}', unit="fahrenheit"))
    assert not accepts(g, call.format(location="Paris", unit="fahrenheit"))  # an object, not text
    # a $ref'd string enum is raw text, but only its members (not any text): the parser validates it
    assert not accepts(g, call.format(location='{"city": "Paris", "country": null}', unit="kelvin"))


def test_recursive_ref_widens_not_crashes() -> None:
    tools = [{"type": "function", "function": {"name": "outline", "parameters": TOOLS["outline"]}}]
    g = build_grammar(autoparser.get_profile("hermes"), tools, "gbnf")
    deep = {"root": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}}
    assert accepts(g, f'<tool_call>{{"name": "outline", "arguments": {json.dumps(deep)}}}</tool_call>')
