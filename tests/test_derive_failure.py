"""Honest failure: a template that renders no conversation is not a profile.

Every probe blocked by the sandbox, over a time or size limit, or raising: ``analyze`` raises
TemplateError chained to the first cause (so its type and line are structured, not prose),
``autoparse PATH`` exits non-zero with the cause on stderr and saves nothing, and ``autoparse scan``
reports an error row and goes on. A template that renders some conversations and not others stays
a profile, with lower confidence where the failures were blocks or limits, and evidence that
names each cause as the renderer reported it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import autoparser
from autoparser.derive import analyze_detailed
from autoparser.derive.failures import HOSTILE_CONFIDENCE
from autoparser.errors import AutoparserError, TemplateError
from autoparser.templates import TemplateBlocked, TemplateLimitExceeded, TemplateRaised, TemplateRenderer

ROOT = Path(__file__).resolve().parents[1]
UNRENDERABLE = ROOT / "fixtures" / "templates" / "unrenderable"
GOOD = ROOT / "fixtures" / "templates" / "guillemet_name_json.jinja"

# file -> the first cause: its type, its limit (for limits) and the template line it failed on
EXPECTED: dict[str, tuple[type[TemplateError], str | None, int]] = {
    "sandbox_escape.jinja": (TemplateBlocked, None, 1),
    "raises_on_assistant.jinja": (TemplateRaised, None, 4),
    "slow_on_assistant.jinja": (TemplateLimitExceeded, "time", 4),
    "huge_output.jinja": (TemplateLimitExceeded, "value", 3),
}
INLINE = {  # tiny ones, each failing a different way on every probe
    "raises": ("{{ raise_exception('this template accepts no conversation at all') }}", TemplateRaised),
    "recurses": ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", TemplateLimitExceeded),
    "repeats-a-string": ("{{ 'x' * 10000000000 }}", TemplateLimitExceeded),
    "blocked-attribute": ("{% for m in messages %}{{ m.__class__ }}{% endfor %}", TemplateBlocked),
}


def _read(name: str) -> str:
    return (UNRENDERABLE / name).read_text(encoding="utf-8")


def test_every_unrenderable_fixture_is_listed() -> None:
    assert {p.name for p in UNRENDERABLE.glob("*.jinja")} == set(EXPECTED)


def _first_cause(src: str) -> TemplateError:
    """What the renderer itself says when asked for the simplest assistant turn."""
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    with pytest.raises(TemplateError) as info:
        TemplateRenderer(src).render(msgs, add_generation_prompt=False)
    return info.value


@pytest.mark.parametrize("name", list(EXPECTED))
def test_unrenderable_template_raises_with_the_first_cause(name: str) -> None:
    kind, limit, line = EXPECTED[name]
    src = _read(name)
    t0 = time.perf_counter()
    with pytest.raises(TemplateError) as info:
        autoparser.analyze(src, known=False)
    assert time.perf_counter() - t0 < 10.0
    cause = info.value.__cause__
    assert isinstance(cause, kind), repr(cause)
    assert getattr(cause, "limit", None) == limit
    assert getattr(cause, "lineno", None) == line
    # the message names the cause exactly as the renderer reports it for a plain assistant turn
    assert str(cause) in str(info.value)
    if limit != "time":  # (a time limit is the same cause, but its message may name the budget)
        assert str(_first_cause(src)) == str(cause)


@pytest.mark.parametrize("kind", list(INLINE))
def test_inline_hostile_templates_raise(kind: str) -> None:
    src, cause_type = INLINE[kind]
    with pytest.raises(TemplateError) as info:
        analyze_detailed(src, known=False)
    assert isinstance(info.value.__cause__, cause_type), repr(info.value.__cause__)
    assert not isinstance(info.value, (TemplateRaised, TemplateLimitExceeded, TemplateBlocked))


def test_detect_falls_back_to_the_model_id_only_when_given_one() -> None:
    src = _read("sandbox_escape.jinja")
    with pytest.raises(TemplateError):
        autoparser.detect(src)
    prof = autoparser.detect(src, model_id="Qwen/Qwen2.5-7B-Instruct")
    assert prof.name == "hermes"


# -- the command line -------------------------------------------------------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "autoparser.cli", *args], text=True, capture_output=True,
                          cwd=ROOT, timeout=120)


def test_autoparse_exits_non_zero_with_the_cause_and_saves_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "model.jinja"
    shutil.copy(UNRENDERABLE / "sandbox_escape.jinja", bad)
    expected_cause = str(_first_cause(bad.read_text(encoding="utf-8")))
    r = _cli(str(bad))
    assert r.returncode != 0
    assert expected_cause in r.stderr
    assert r.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.jinja"]
    target = tmp_path / "explicit.json"
    r = _cli(str(bad), "--save", str(target))
    assert r.returncode != 0 and not target.exists()
    r = _cli(str(bad), "--json")
    assert r.returncode != 0 and r.stdout == ""


def test_scan_reports_an_error_row_and_goes_on(tmp_path: Path) -> None:
    bad = tmp_path / "a_bad.jinja"
    good = tmp_path / "b_good.jinja"
    shutil.copy(UNRENDERABLE / "raises_on_assistant.jinja", bad)
    shutil.copy(GOOD, good)
    r = _cli("scan", "--json", "--pure", str(bad), str(good))
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["path"] for row in rows] == [str(bad), str(good)]
    assert "assistant turns are not supported" in rows[0]["error"]  # the template's own message
    assert "error" not in rows[1] and rows[1]["tools"] is not None
    r = _cli("scan", "--pure", str(tmp_path))
    assert r.returncode == 0
    from autoparser.cli.analyze import fit_path

    assert any(line.startswith(fit_path(str(bad), 60)) and " ERROR " in line for line in r.stdout.splitlines())


def test_in_process_cli_returns_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from autoparser.cli.analyze import main_analyze

    bad = tmp_path / "t.jinja"
    shutil.copy(UNRENDERABLE / "raises_on_assistant.jinja", bad)
    assert main_analyze([str(bad)]) == 1
    assert "assistant turns are not supported" in capsys.readouterr().err
    assert not (tmp_path / "t.jinja.autoparser.json").exists()


# -- partly renderable: a profile that says what failed -------------------------------------------------

BASE = ("{%- for m in messages -%}{%- if m.role == 'user' -%}[U]{{ m.content }}[/T]\n"
        "{% elif m.role == 'assistant' -%}[A]{% if m.content %}{{ m.content }}{% endif %}"
        "{%- for tc in m.tool_calls or [] -%}[[c:NAME]]{{ tc.function.arguments | tojson }}[[/c]]"
        "{%- endfor %}[/T]\n{% elif m.role == 'tool' -%}[R]{{ m.content }}[/T]\n{% endif -%}{%- endfor -%}"
        "{%- if add_generation_prompt %}[A]{% endif -%}")
CALL_TURN: list[dict[str, object]] = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]}]
PARTIAL = {  # a template that renders plain turns but fails on calls, and how
    "blocked-on-calls": (BASE.replace("NAME", "{{ tc.__class__ }}"), TemplateBlocked),
    "raises-on-calls": (BASE.replace("[[c:NAME]]", "{{ raise_exception('calls are not supported') }}"),
                        TemplateRaised),
}


def test_the_base_template_derives_calls() -> None:
    prof = autoparser.analyze(BASE.replace("NAME", "{{ tc.function.name }}"), known=False)
    assert prof.tools is not None
    assert autoparser.parse('[[c:f]]{"a": 1}[[/c]]', prof).tool_calls[0].arguments == {"a": 1}


@pytest.mark.parametrize("kind", list(PARTIAL))
def test_partly_renderable_template_is_a_profile_that_names_the_failure(kind: str) -> None:
    src, cause_type = PARTIAL[kind]
    with pytest.raises(cause_type) as info:
        TemplateRenderer(src).render(CALL_TURN, add_generation_prompt=False)
    cause = str(info.value)
    prof = autoparser.analyze(src, known=False)
    assert prof.tools is None
    assert prof.confidence < 0.9
    assert any(cause in e for e in prof.evidence), prof.evidence
    assert autoparser.parse("plain answer[/T]\n", prof).content.strip() == "plain answer"
    if cause_type is TemplateBlocked:  # a block leaves the probes blind: confidence capped
        assert prof.field_confidence["renders"] <= HOSTILE_CONFIDENCE
        assert prof.confidence <= HOSTILE_CONFIDENCE
    else:  # a refusal is how a template says it has no calls: no cap for that
        assert "renders" not in prof.field_confidence


def test_a_slow_call_turn_leaves_a_low_confidence_profile() -> None:
    slow = BASE.replace("[[c:NAME]]", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
                                      "{% endfor %}[[c:{{ tc.function.name }}]]")
    t0 = time.perf_counter()
    an = analyze_detailed(slow, known=False)
    assert time.perf_counter() - t0 < 10.0
    assert an.profile.tools is None
    assert an.profile.confidence <= 0.3
    assert an.profile.field_confidence["renders"] <= 0.3


def test_template_error_is_an_autoparser_error() -> None:
    assert issubclass(TemplateError, AutoparserError)
    assert issubclass(TemplateBlocked, TemplateError)
