"""OpenVINO GenAI fragment: equivalence decided by wire format, validation, real GenAI parsers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import autoparser
from autoparser.export import ExportError, emit, openvino_fragment, openvino_parsers, validate_openvino_profile


def _protocols(name: str) -> tuple[str | None, str | None]:
    f = openvino_fragment(autoparser.get_profile(name))
    return (f.get("tool_calls", {}).get("protocol"), f.get("reasoning", {}).get("protocol"))


def test_genai_parsers_only_where_the_wire_format_matches() -> None:
    assert _protocols("llama3-json") == ("openvino:llama3_json_tool_parser", None)
    assert _protocols("pythonic") == ("openvino:llama3_pythonic_tool_parser", "openvino:reasoning_parser")
    for d in ("hermes", "qwen3-coder", "mistral", "glm", "kimi-k2", "deepseek-v3.1", "minimax-m2"):
        assert _protocols(d)[0] == f"autoparser:{d}", d
    assert _protocols("think")[1] == "autoparser:think"  # start "auto" has no GenAI equivalent
    assert _protocols("gemma4")[1] == "autoparser:gemma4"  # two open markers
    assert _protocols("harmony") == ("autoparser:harmony", "autoparser:harmony")


def test_equivalence_follows_the_wire_not_the_name() -> None:
    llama = autoparser.get_profile("llama3-json")
    renamed = llama.replace(name="something-else")
    assert openvino_fragment(renamed)["tool_calls"]["protocol"] == "openvino:llama3_json_tool_parser"
    hermes_named_llama = autoparser.get_profile("hermes").replace(name="llama3-json")
    assert openvino_fragment(hermes_named_llama)["tool_calls"]["protocol"] == "autoparser:llama3-json"


def test_reasoning_options() -> None:
    r = openvino_fragment(autoparser.get_profile("deepseek-r1"))["reasoning"]
    assert r["protocol"] == "openvino:reasoning_parser"
    assert (r["open_tag"], r["close_tag"], r["expect_open_tag"], r["keep_original_content"]) == (
        "<think>", "</think>", False, False)
    m = openvino_fragment(autoparser.get_profile("mistral"))["reasoning"]
    assert (m["open_tag"], m["close_tag"], m["expect_open_tag"]) == ("[THINK]", "[/THINK]", True)


def test_own_protocol_embeds_a_valid_profile() -> None:
    f = openvino_fragment(autoparser.get_profile("hermes"))
    prof = autoparser.Profile.from_dict(f["tool_calls"]["profile"])
    assert prof.wire_format() == autoparser.get_profile("hermes").wire_format()


@pytest.mark.parametrize("bad,msg", [
    ({"tool_calls": {"protocol": "openvino:hermes_tool_parser"}}, "unknown protocol 'openvino:hermes_tool_parser'"),
    ({"tool_calls": {"protocol": "openvino:reasoning_parser"}}, "is a reasoning parser"),
    ({"reasoning": {"protocol": "openvino:reasoning_parser", "open": "<t>"}}, "unknown option 'open'"),
    ({"reasoning": {"protocol": "openvino:reasoning_parser", "expect_open_tag": "yes"}}, "expected bool"),
    ({"reasoning": {"protocol": "openvino:deepseek_r1_reasoning_parser", "open_tag": "<t>"}}, "unknown option"),
    ({"tools": {}}, "unknown key 'tools'"),
    ({"tool_calls": {"protocol": "autoparser:hermes"}}, "must embed the profile"),
    ({"tool_calls": {"protocol": "autoparser:x", "profile": {"tools": {}}}}, "profile"),
    ({"tool_calls": "openvino:llama3_json_tool_parser"}, "expected an object"),
])
def test_validation_rejects_clearly(bad: dict[str, Any], msg: str) -> None:
    with pytest.raises(ExportError, match=msg):
        validate_openvino_profile(bad)


def test_every_builtin_fragment_validates() -> None:
    for d in autoparser.dialects():
        f = openvino_fragment(autoparser.get_profile(d.name))
        validate_openvino_profile(copy.deepcopy(f))
        assert emit(autoparser.get_profile(d.name), "openvino").startswith("{")


def test_real_genai_parsers_agree_on_the_mapped_parts() -> None:
    ov = pytest.importorskip("openvino_genai")
    f = openvino_fragment(autoparser.get_profile("hermes"))
    (reasoning,) = openvino_parsers(f)
    assert isinstance(reasoning, ov.ReasoningParser)
    text = "<think>\nhmm\n</think>\nHello"
    msg = {"content": text}
    reasoning.parse(msg)
    ours = autoparser.parse(text, "hermes")
    assert msg["reasoning_content"].strip() == ours.reasoning.strip()
    assert msg["content"].strip() == ours.content.strip()
    (inc,) = openvino_parsers(f, incremental=True)
    assert isinstance(inc, ov.ReasoningIncrementalParser)
    (llama,) = openvino_parsers(openvino_fragment(autoparser.get_profile("llama3-json")))
    msg = {"content": '<|python_tag|>{"name": "f", "parameters": {"a": 1}}'}
    llama.parse(msg)
    assert msg["tool_calls"] == [{"name": "f", "parameters": {"a": 1}}]
