"""autoparser.resolve: a host's own parsers for a model, decided by comparing profiles, or none and why."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest

import autoparser
from autoparser.export import ExportError, emit
from autoparser.export.hosts import HOSTS, host
from autoparser.export.resolve import describe_tools, reasoning_read, resolve, resolve_profile, tools_read
from autoparser.profile import ReasoningSpec

SHARED = Path(__file__).resolve().parents[2] / "shared" / "templates"
needs_shared = pytest.mark.skipif(not (SHARED / "EXPECTED.tsv").is_file(),
                                  reason="../shared/templates is not available")

QWEN_LIKE = ("{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
             "{%- for tc in m.tool_calls or [] %}<tool_call>\n"
             "{\"name\": \"{{ tc.function.name }}\", \"arguments\": {{ tc.function.arguments | tojson }}}\n"
             "</tool_call>{%- endfor %}<|im_end|>\n{%- endfor %}"
             "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")
# the same turns, but calls written in a format no host ships
INVENTED = QWEN_LIKE.replace("<tool_call>\n", "«fn»").replace("\n</tool_call>", "«end»")


def test_every_host_table_loads_with_its_version_and_source() -> None:
    for name in HOSTS:
        h = host(name)
        assert h.version and h.read_from and h.tools and h.reasoning, name
        for t in h.tools:  # a parser is modelled, or says what it reads and why it is not
            assert t.tools is not None or t.harmony or t.from_profile or t.why, (name, t.name)
    vllm = {t.name for t in host("vllm").tools}
    assert {"kimi_k3", "seed_oss", "longcat", "apertus", "step3", "hermes", "qwen3_coder"} <= vllm
    assert len(vllm) == 62 and len(host("vllm").reasoning) == 44  # the 0.34.0 registries, whole
    assert len(host("sglang").tools) == 44 and len(host("sglang").reasoning) == 36
    with pytest.raises(ExportError, match="unknown host 'tgi'"):
        host("tgi")


def test_tools_read_compares_markers_codec_and_whitespace() -> None:
    hermes = autoparser.get_profile("hermes").tools
    assert hermes is not None
    assert tools_read(hermes, hermes) is None
    other = dataclasses.replace(hermes, call_open=("<function_call>",))
    assert "call open '<function_call>'" in (tools_read(hermes, other) or "")
    arrays = dataclasses.replace(hermes, codec=dataclasses.replace(hermes.codec, array="require"))
    assert "arrays" in (tools_read(hermes, arrays) or "")
    keys = dataclasses.replace(hermes, codec=dataclasses.replace(hermes.codec, name_keys=("tool_name",)))
    assert "name" in (tools_read(hermes, keys) or "")
    ds = autoparser.get_profile("deepseek-v3").tools
    assert ds is not None
    squeezed = dataclasses.replace(ds, codec=dataclasses.replace(ds.codec, header=ds.codec.header.replace("\n", "")))
    assert tools_read(ds, squeezed) is None  # the engine reads any whitespace...
    assert "header" in (tools_read(ds, squeezed, exact_whitespace=True) or "")  # ...a strict host does not
    assert describe_tools(hermes) == '<tool_call>{"name": NAME, "arguments": ARGS}</tool_call>'


def test_reasoning_read_follows_the_start_rule() -> None:
    def parser(h: str, name: str) -> object:
        return next(p for p in host(h).reasoning if p.name == name)

    think = ReasoningSpec(open=("<think>",), close=("</think>",))
    assert reasoning_read(parser("vllm", "deepseek_r1"), dataclasses.replace(think, start="prefilled")) is None
    assert "starts inside" in (reasoning_read(parser("vllm", "deepseek_r1"), think) or "")
    assert reasoning_read(parser("vllm", "qwen3"), dataclasses.replace(think, switchable=True)) is None
    assert "enable_thinking" in (reasoning_read(parser("vllm", "qwen3"), think) or "")
    assert reasoning_read(parser("vllm", "mistral"), think) is not None  # other markers
    genai = parser("genai", "ReasoningParser")  # markers are options
    assert reasoning_read(genai, ReasoningSpec(open=("[THINK]",), close=("[/THINK]",))) is None


def test_a_template_resolves_with_flags_return_trip_and_a_log_line(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "chat_template.jinja"
    path.write_text(QWEN_LIKE, encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="autoparser.resolve"):
        res = autoparser.resolve(path, "vllm")
    assert res.tools is not None and res.tools.parser == "hermes" and res.reasoning is None
    assert res.flags == ("--enable-auto-tool-choice", "--tool-call-parser", "hermes") and res.complete
    assert "own call turns (2) parse back exactly" in res.tools.reason
    assert res.return_trip["arguments"] == "object" and res.return_trip["message"].startswith("autoparser.openai")
    assert res.log in caplog.text and "tool-call parser 'hermes'" in res.log
    assert 0 < res.confidence <= 1 and res.evidence
    assert json.loads(json.dumps(res.to_dict()))["tools"]["parser"] == "hermes"


def test_a_format_no_host_reads_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text(INVENTED, encoding="utf-8")
    for name in HOSTS:
        res = resolve(path, name)
        assert res.tools is not None and res.tools.parser is None, name
        assert "calls" in res.tools.reason and "use autoparser's parser" in res.tools.reason
        assert "«fn»" in res.tools.reason and not res.complete


def test_a_profile_resolves_without_a_template() -> None:
    res = resolve_profile(autoparser.get_profile("qwen3-coder"), "sglang")
    assert res.tools is not None and res.tools.parser == "qwen3_coder"
    assert res.reasoning is not None and res.reasoning.parser is not None
    harmony = resolve_profile(autoparser.get_profile("harmony"), "vllm")
    assert (harmony.tools and harmony.tools.parser, harmony.reasoning and harmony.reasoning.parser) == \
        ("openai", "openai_gptoss")
    jamba = resolve_profile(autoparser.get_profile("jamba"), "ollama")
    assert jamba.tools is not None and jamba.tools.parser is None and jamba.settings == {}


def test_emit_vllm_and_sglang_come_from_the_host_tables() -> None:
    assert emit(autoparser.get_profile("hermes"), "vllm") == \
        "vllm serve MODEL --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3\n"
    text = emit(autoparser.get_profile("jamba"), "sglang")
    assert text.startswith("python -m sglang.launch_server --model-path MODEL\n# no SGLang tool parser reads")


def test_cli_resolve(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from autoparser.cli import main

    good, bad = tmp_path / "good.jinja", tmp_path / "bad.jinja"
    good.write_text(QWEN_LIKE, encoding="utf-8")
    bad.write_text(INVENTED, encoding="utf-8")
    assert main(["resolve", "--for", "sglang", str(good)]) == 0
    assert "--tool-call-parser hermes" in capsys.readouterr().out
    assert main(["resolve", "--for", "vllm", str(bad), "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["tools"]["parser"] is None
    assert main(["resolve", "--for", "vllm", str(tmp_path / "missing.jinja")]) not in (0, 3)  # an error


@needs_shared
def test_corpus_sample_names_no_wrong_parser() -> None:
    """A slice of scripts/resolve_corpus.py (the whole corpus runs there): 0 wrong on these families."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from scripts_loader import load_script

    mod = load_script("resolve_corpus")
    import csv

    rows = {r["file"]: r for r in csv.DictReader((SHARED / "EXPECTED.tsv").open(encoding="utf-8"), delimiter="\t")}
    for name in ("qwen/Qwen3-0.6B.jinja", "kimi/Kimi-K2-Thinking.jinja", "deepseek/DeepSeek-R1.jinja",
                 "seed/Seed-OSS-36B-Instruct.jinja", "gpt-oss/gpt-oss-120b.jinja", "falcon/Falcon3-3B-Instruct.jinja"):
        text = (SHARED / name).read_text(encoding="utf-8")
        prof = mod.with_switches(mod.as_rendered(autoparser.analyze(text), autoparser.analyze(text, known=False)),
                                 text, None, None)
        samples = mod.sample_turns(text, None, None, prof)
        switch = mod.enable_thinking_switches(text, None, None)
        for h in HOSTS:
            cells = mod.classify(resolve_profile(prof, h, samples=samples), rows[name], prof, switch)
            assert all(c["status"] != "wrong" for c in cells.values()), (name, h, cells)
