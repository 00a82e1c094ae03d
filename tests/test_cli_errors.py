"""Every ``autoparse`` sub-command, given bad input of each kind, fails with a clear error.

Each case states the exit status it must get (2: the command line or an input file is wrong;
1: the command started and failed) and the text its message must contain: the file or the
argument at fault. No case may print a traceback or reach the "internal error" fallback. Cases
run in-process through ``autoparser.cli.main`` (what the ``autoparse`` script calls); a few run
as a real subprocess too, to see what a user's terminal sees.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from sample_templates import HERMES_LIKE

from autoparser import cli

ROOT = Path(__file__).resolve().parents[1]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPARSER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One file (or directory) per kind of bad input, and a few good ones to pair them with."""
    d = tmp_path_factory.mktemp("inputs")
    (d / "template.jinja").write_text(HERMES_LIKE, encoding="utf-8")
    (d / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    (d / "in.jsonl").write_text(json.dumps({"completion": CALL, "model": "hermes"}) + "\n", encoding="utf-8")
    (d / "empty.json").write_bytes(b"")
    (d / "empty.jinja").write_bytes(b"")
    (d / "empty.jsonl").write_bytes(b"")
    (d / "binary.json").write_bytes(b"\xff\xfe\x00\x81 not UTF-8")
    (d / "binary.jinja").write_bytes(b"\xff\xfe\x00\x81 not UTF-8")
    (d / "invalid.json").write_text("{not json", encoding="utf-8")
    (d / "object.json").write_text(json.dumps({"a": 1}), encoding="utf-8")  # neither tools nor a profile
    (d / "list.json").write_text(json.dumps([1, 2]), encoding="utf-8")  # a list of the wrong things
    (d / "number.json").write_text("42", encoding="utf-8")
    (d / "nameless_tool.json").write_text(json.dumps([{"type": "function", "function": {}}]), encoding="utf-8")
    (d / "dir.json").mkdir()  # a directory where a file is expected: unreadable as a file
    (d / "emptydir").mkdir()
    (d / "notes.txt").write_text("not a model", encoding="utf-8")
    (d / "junk.gguf").write_bytes(b"GGUF" + bytes(range(256)) * 4)
    (d / "fake.parquet").write_text("not parquet", encoding="utf-8")
    cfg = d / "cfgdir"
    cfg.mkdir()
    (cfg / "tokenizer_config.json").write_text(json.dumps(["wrong", "shape"]), encoding="utf-8")
    return {p.name: str(p) for p in d.iterdir()} | {"missing": str(d / "missing.json"), "dir": str(d)}


@dataclass(frozen=True)
class Case:
    """``argv`` with ``{name}`` placeholders for :func:`files`; ``names`` must be in stderr."""

    argv: tuple[str, ...]
    code: int
    names: str
    stdin: str = ""


def _tools_cases(prefix: tuple[str, ...], option: str = "--tools") -> list[Case]:
    bad = ("missing", "dir.json", "binary.json", "empty.json", "invalid.json", "object.json", "list.json",
           "number.json", "nameless_tool.json")
    return [Case((*prefix, option, "{" + name + "}"), 2, "{" + name + "}") for name in bad]


CASES: dict[str, list[Case]] = {
    "analyze": [
        Case(("{missing}",), 2, "{missing}"),
        Case(("{binary.jinja}",), 2, "{binary.jinja}"),
        Case(("{empty.jinja}",), 2, "{empty.jinja}"),
        Case(("{emptydir}",), 2, "{emptydir}"),
        Case(("{cfgdir}",), 2, "tokenizer_config.json"),
        Case(("{template.jinja}", "--emit", "nosuch"), 2, "--emit"),
        Case(("{template.jinja}", "-o", "{dir}/no/such/dir/p.json"), 1, "{dir}/no/such/dir/p.json"),
        Case(("{template.jinja}", "--bogus"), 2, "--bogus"),
        *_tools_cases(("{template.jinja}", "--emit", "gbnf")),
    ],
    "parse": [
        Case(("parse",), 2, "--profile"),
        Case(("parse", "--profile", "no-such-dialect"), 2, "no-such-dialect"),
        Case(("parse", "--profile", "{missing}"), 2, "{missing}"),
        Case(("parse", "--profile", "{dir.json}"), 2, "{dir.json}"),
        Case(("parse", "--profile", "{binary.json}"), 2, "{binary.json}"),
        Case(("parse", "--profile", "{empty.json}"), 2, "{empty.json}"),
        Case(("parse", "--profile", "{invalid.json}"), 2, "{invalid.json}"),
        Case(("parse", "--profile", "{list.json}"), 2, "{list.json}"),
        Case(("parse", "--profile", "{number.json}"), 2, "{number.json}"),
        Case(("parse", "--profile", "{object.json}"), 2, "{object.json}"),
        Case(("parse", "--profile", "{emptydir}"), 2, "{emptydir}"),
        Case(("parse", "--profile", "{empty.jinja}"), 2, "{empty.jinja}"),
        Case(("parse", "--profile", "hermes", "--reasoning", "sometimes"), 2, "--reasoning"),
        Case(("parse", "--profile", "hermes", "--strict"), 1, "truncated_call", stdin='<tool_call>{"name": "f"'),
        *_tools_cases(("parse", "--profile", "hermes")),
    ],
    "dialects": [
        Case(("dialects", "--bogus"), 2, "--bogus"),
        Case(("dialects", "extra"), 2, "extra"),
    ],
    "scan": [
        Case(("scan",), 2, "paths"),
        Case(("scan", "{missing}"), 2, "{missing}"),
        Case(("scan", "{emptydir}"), 2, "{emptydir}"),
        Case(("scan", "{template.jinja}", "--engine", "nosuch"), 2, "--engine"),
    ],
    "batch": [
        Case(("batch", "{in.jsonl}"), 2, "--output"),
        Case(("batch", "{in.jsonl}", "-o", "{dir}/out.jsonl"), 2, "--profile"),
        Case(("batch", "{missing}l", "-o", "{dir}/out.jsonl", "--profile", "hermes"), 2, "{missing}l"),
        Case(("batch", "{dir.json}", "-o", "{dir}/out.jsonl", "--profile", "hermes"), 2, "{dir.json}"),
        Case(("batch", "{notes.txt}", "-o", "{dir}/out.jsonl", "--profile", "hermes"), 2, "{notes.txt}"),
        Case(("batch", "{in.jsonl}", "-o", "{dir}/out.csv", "--profile", "hermes"), 2, "{dir}/out.csv"),
        Case(("batch", "{fake.parquet}", "-o", "{dir}/out.jsonl", "--profile", "hermes"), 2, "{fake.parquet}"),
        Case(("batch", "{in.jsonl}", "-o", "{dir}/out.jsonl", "--profile", "nosuch"), 2, "nosuch"),
        Case(("batch", "{in.jsonl}", "-o", "{dir}/out.jsonl", "--profile", "{invalid.json}"), 2, "{invalid.json}"),
        Case(("batch", "{in.jsonl}", "-o", "{dir}/out.jsonl", "--profile", "hermes", "--text-column", "nosuch"),
             2, "nosuch"),
        Case(("batch", "{in.jsonl}", "-o", "{dir}/out.jsonl", "--profile-column", "nosuch"), 2, "nosuch"),
        Case(("batch", "{in.jsonl}", "-o", "{dir}/out.jsonl", "--profile", "hermes", "--tools-column", "nosuch"),
             2, "nosuch"),
        Case(("batch", "{in.jsonl}", "-o", "{dir}/out.jsonl", "--profile", "hermes", "--num-cpus", "many"),
             2, "--num-cpus"),
        Case(("batch", "{in.jsonl}", "-o", "{dir}/no/such/dir/out.jsonl", "--profile", "hermes"),
             1, "{dir}/no/such/dir/out.jsonl"),
        *_tools_cases(("batch", "{in.jsonl}", "-o", "{dir}/out.jsonl", "--profile", "hermes")),
    ],
    "verify": [
        Case(("verify", "{missing}"), 2, "{missing}"),
        Case(("verify", "--dialect", "no-such-dialect"), 2, "no-such-dialect"),
        Case(("verify", "--bogus"), 2, "--bogus"),
    ],
    "resolve": [
        Case(("resolve", "{template.jinja}"), 2, "--for"),
        Case(("resolve", "--for", "tgi", "{template.jinja}"), 2, "--for"),
        Case(("resolve", "--for", "vllm", "{missing}"), 2, "{missing}"),
        Case(("resolve", "--for", "vllm", "{binary.jinja}"), 2, "{binary.jinja}"),
        Case(("resolve", "--for", "vllm", "{empty.jinja}"), 2, "{empty.jinja}"),
        Case(("resolve", "--for", "vllm", "{invalid.json}"), 2, "{invalid.json}"),
    ],
    "demo": [
        Case(("demo", "--bogus"), 2, "--bogus"),
        Case(("demo", "extra"), 2, "extra"),
    ],
    "serve": [
        Case(("serve", "--bogus"), 2, "--bogus"),
        Case(("serve", "--port", "eighty"), 2, "--port"),
        Case(("serve", "--reasoning-field", "thoughts"), 2, "--reasoning-field"),
    ],
}

_HAVE_OPENVINO = __import__("importlib.util").util.find_spec("openvino_genai") is not None
if _HAVE_OPENVINO:  # a path that exists but is not a model: found before OpenVINO loads anything
    CASES["verify"] += [Case(("verify", "{notes.txt}"), 2, "{notes.txt}"),
                        Case(("verify", "{junk.gguf}"), 2, "{junk.gguf}"),
                        Case(("verify", "{emptydir}"), 2, "{emptydir}")]
_HAVE_SERVE = all(__import__("importlib.util").util.find_spec(m) is not None for m in ("starlette", "uvicorn"))
if _HAVE_SERVE:  # the serve extra is there, so the model path and the profile are what is wrong
    CASES["serve"] += [Case(("serve", "{missing}"), 2, "{missing}"),
                       Case(("serve", "--profile", "no-such-dialect"), 2, "no-such-dialect")]
if _HAVE_SERVE and _HAVE_OPENVINO:
    CASES["serve"] += [Case(("serve", "{notes.txt}"), 2, "{notes.txt}"),
                       Case(("serve", "{junk.gguf}"), 2, "{junk.gguf}"),
                       Case(("serve", "{emptydir}"), 2, "{emptydir}")]


def _fill(text: str, files: dict[str, str]) -> str:
    for name, path in files.items():
        text = text.replace("{" + name + "}", path)
    return text


def run_cli(argv: list[str], stdin: str, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_every_command_has_bad_input_cases() -> None:
    """A new sub-command (a row of cli.COMMANDS) comes with its cases here."""
    assert {c.name for c in cli.COMMANDS} | {"analyze"} <= set(CASES)


@pytest.mark.parametrize(("command", "index"), [(c, i) for c, cases in CASES.items() for i in range(len(cases))],
                         ids=lambda v: str(v))
def test_bad_input_is_a_clear_error(command: str, index: int, files: dict[str, str],
                                    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES[command][index]
    argv = [_fill(a, files) for a in case.argv]
    code, _out, err = run_cli(argv, case.stdin, monkeypatch, capsys)
    assert "Traceback" not in err and "internal error" not in err, err
    assert code == case.code, (argv, err)
    assert _fill(case.names, files) in err, (argv, err)


@pytest.mark.parametrize("name", [c.name for c in cli.COMMANDS])
def test_every_command_prints_help_and_rejects_unknown_options(
        name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli([name, "--help"], "", monkeypatch, capsys)
    assert code == 0 and out.startswith(f"usage: autoparse {name}"), out + err
    code, out, err = run_cli([name, "--no-such-option"], "", monkeypatch, capsys)
    # argparse names the unknown option, or first a required one the command line lacks
    assert code == 2 and ("--no-such-option" in err or "required" in err) and "Traceback" not in err, err


def test_empty_input_is_not_an_error(files: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Empty model output is an empty message; an empty dataset is zero rows."""
    code, out, err = run_cli(["parse", "--profile", "hermes"], "", monkeypatch, capsys)
    assert code == 0 and json.loads(out) == {"role": "assistant", "content": ""}, err
    code, out, err = run_cli(["batch", files["empty.jsonl"], "-o", str(tmp_path / "o.jsonl"), "--profile", "hermes",
                              "--json-summary"], "", monkeypatch, capsys)
    assert code == 0 and json.loads(out)["rows"] == 0, err


def test_scan_reports_an_unreadable_file_as_its_row(files: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A scan goes on past a bad file (a row error), and the row names it."""
    code, out, err = run_cli(["scan", "--json", files["binary.jinja"], files["template.jinja"]], "",
                             monkeypatch, capsys)
    assert code == 0 and "Traceback" not in err
    rows = [json.loads(line) for line in out.splitlines()]
    assert files["binary.jinja"] in rows[0]["error"] and rows[1]["dialect"] == "hermes"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_files_are_named(files: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    locked = tmp_path / "locked.json"
    locked.write_text(json.dumps(TOOLS), encoding="utf-8")
    locked.chmod(0)
    for argv in (["parse", "--profile", "hermes", "--tools", str(locked)], ["parse", "--profile", str(locked)],
                 [files["template.jinja"], "--emit", "gbnf", "--tools", str(locked)]):
        code, _out, err = run_cli(argv, "", monkeypatch, capsys)
        assert code == 2 and str(locked) in err and "Traceback" not in err, err


def test_debug_shows_the_traceback(files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(Exception, match="invalid JSON"):
        cli.main(["--debug", "parse", "--profile", "hermes", "--tools", files["invalid.json"]])


def test_an_unexpected_exception_is_reported_as_a_bug(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    def broken() -> list[object]:
        raise RuntimeError("boom")

    monkeypatch.setattr(sys.modules["autoparser.dialects"], "dialects", broken)
    code, _out, err = run_cli(["dialects"], "", monkeypatch, capsys)
    assert code == 1 and "internal error: RuntimeError: boom" in err and "--debug" in err
    assert "Traceback" not in err


def test_in_a_real_process(files: dict[str, str]) -> None:
    """What a terminal shows: ``python -m autoparser`` as the ``autoparse`` script runs it."""
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "autoparser", *args], text=True, capture_output=True,
                              cwd=ROOT, timeout=120, input="")

    r = run("parse", "--profile", "hermes", "--tools", files["object.json"])
    assert r.returncode == 2 and r.stderr.startswith("autoparse parse: error: " + files["object.json"])
    assert "Traceback" not in r.stderr
    r = run("--debug", "parse", "--profile", "hermes", "--tools", files["object.json"])
    assert r.returncode == 1 and "Traceback" in r.stderr  # Python's own exit for an uncaught exception
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("autoparser ")
    r = run()
    assert r.returncode == 2 and "usage: autoparse" in r.stderr


def test_version_lists_the_optional_engines(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    import autoparser

    code, out, _err = run_cli(["--version"], "", monkeypatch, capsys)
    assert code == 0 and out.startswith(f"autoparser {autoparser.__version__} ")
    for dist in ("jinja2", "openvino-genai", "transformers", "llguidance", "ray", "gguf"):
        line = next(line for line in out.splitlines() if line.split()[:1] == [dist])
        try:
            assert line.split()[1] == metadata.version(dist)
        except metadata.PackageNotFoundError:
            assert line.endswith("not installed")
    assert "profile cache: " in out


def test_the_package_ships_its_type_marker() -> None:
    """PEP 561: type checkers read the package's hints only with ``py.typed`` beside it, and the
    build must include it (package data)."""
    tomllib = pytest.importorskip("tomllib")

    assert (ROOT / "autoparser" / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["autoparser"]


def test_a_missing_optional_dependency_names_the_extra(files: dict[str, str], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "openvino_genai" else real(name, *a))
    code, _out, err = run_cli(["verify"], "", monkeypatch, capsys)
    assert code == 2 and "'openvino_genai'" in err and "pip install 'autoparser[live]'" in err
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if it were not installed
    code, _out, err = run_cli(["batch", files["in.jsonl"], "-o", str(tmp_path / "o.jsonl"), "--profile", "hermes",
                               "--engine", "ray"], "", monkeypatch, capsys)
    assert code == 2 and "pip install 'autoparser[ray]'" in err and "Traceback" not in err
    assert not (tmp_path / "o.jsonl").exists()


def test_a_module_of_ours_that_does_not_import_is_a_bug_not_a_missing_extra(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, cli.Command("ghost", "autoparser.no_such_module:main",
                                                                      "ghost", "a broken row")))
    code, _out, err = run_cli(["ghost"], "", monkeypatch, capsys)
    assert code == 1 and "internal error" in err and "pip install" not in err


def test_output_that_is_not_utf8_is_parsed_not_a_crash() -> None:
    """Raw model output on stdin with bytes that are not UTF-8 (a cut multi-byte character, a
    binary file): U+FFFD in their place, in both modes, whatever the locale."""
    env = {**os.environ, "LC_ALL": "C", "PYTHONPATH": str(ROOT)}
    for extra in ([], ["--stream"]):
        r = subprocess.run([sys.executable, "-m", "autoparser", "parse", "--profile", "hermes", *extra],
                           input=b"ok \xff\xe2\x82 bad", capture_output=True, cwd=ROOT, timeout=120, env=env)
        assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
        assert "ok \ufffd" in r.stdout.decode("utf-8") and "bad" in r.stdout.decode("utf-8")
