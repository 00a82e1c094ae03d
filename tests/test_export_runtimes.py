"""vLLM / SGLang parser names, from runtime_names, with a clear "no equivalent"."""

from __future__ import annotations

import dataclasses

import pytest

import autoparser
from autoparser.export import FORMATS, ExportError, emit, runtime_parsers


def test_builtin_names() -> None:
    v = runtime_parsers(autoparser.get_profile("hermes"), "vllm")
    assert (v.tool, v.reasoning, v.equivalent) == ("hermes", "qwen3", True)
    assert v.flags() == ["--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--reasoning-parser", "qwen3"]
    s = runtime_parsers(autoparser.get_profile("hermes"), "sglang")
    assert s.command("Qwen/Qwen3-8B") == ("python -m sglang.launch_server --model-path Qwen/Qwen3-8B "
                                          "--tool-call-parser qwen25 --reasoning-parser qwen3")


def test_no_equivalent_is_reported() -> None:
    r = runtime_parsers(autoparser.get_profile("jamba"), "sglang")
    assert (r.tool, r.reasoning, r.missing) == (None, None, ("tool calls",))
    assert "no equivalent parser" in r.render()
    phi = runtime_parsers(autoparser.get_profile("phi4"), "vllm")
    assert phi.tool == "phi4_mini_json" and phi.missing == ("reasoning",)
    assert "# no vllm equivalent for reasoning" in phi.render()


def test_derived_profile_uses_its_matched_name() -> None:
    derived = dataclasses.replace(autoparser.get_profile("qwen3-coder"), runtime_names={})
    assert runtime_parsers(derived, "vllm").tool == "qwen3_coder"
    unnamed = dataclasses.replace(derived, name=None)
    r = runtime_parsers(unnamed, "vllm")
    assert r.tool is None and not r.equivalent


def test_every_dialect_emits() -> None:
    for d in autoparser.dialects():
        p = autoparser.get_profile(d.name)
        for rt in ("vllm", "sglang"):
            assert emit(p, rt).strip()


def test_emit_formats_and_errors() -> None:
    p = autoparser.get_profile("hermes")
    assert autoparser.Profile.from_json(emit(p, "json")) == p
    with pytest.raises(ExportError, match="valid formats: " + ", ".join(FORMATS)):
        emit(p, "yaml")
    with pytest.raises(ExportError, match="unknown runtime"):
        runtime_parsers(p, "tgi")
