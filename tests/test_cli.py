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
    r = run("parse", "--profile", "nosuch", stdin="x")
    assert r.returncode == 2
    assert "nosuch: not a builtin dialect name" in r.stderr and "hermes" in r.stderr
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
    from autoparser.derive.cli import main_analyze

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
