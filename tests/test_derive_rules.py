"""Derivation rules are named data with structured evidence, every rule is exercised by an in-repo
fixture, and the confidence combines the evidence the way its docstring says."""

from __future__ import annotations

import dataclasses
import functools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import autoparser
from autoparser import Profile
from autoparser.derive import Analysis, analyze_detailed
from autoparser.derive.confidence import CORE_FIELDS, combine
from autoparser.derive.extract import Findings
from autoparser.derive.markup import opening_tail, pairs_with, tag_runs
from autoparser.derive.rules import RULE_MODULES, SNIPPET_CHARS, Evidence, Rule, registry
from autoparser.derive.selfcheck import CheckResult
from autoparser.derive.structure import REJECTED, validated
from autoparser.profile import CodecSpec, ToolSpec

ROOT = Path(__file__).resolve().parents[1]
DIR = ROOT / "fixtures" / "templates"
CASES: dict[str, Any] = json.loads((DIR / "cases.json").read_text(encoding="utf-8"))["templates"]
EFFECTS = {"set", "cap", "note"}


@functools.cache
def fixture(name: str) -> Analysis:
    special = tuple(CASES.get(name, {}).get("special_tokens", ()))
    # the known.* rules decide what a builtin dialect adds: only the default path (known=True) fires them
    return analyze_detailed((DIR / name).read_text(encoding="utf-8"), known=name.startswith("rule_known_"),
                            special_tokens=special)


@functools.cache
def fired_by_fixtures() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted(DIR.glob("*.jinja")):
        for rule in fixture(path.name).findings.fired():
            out.setdefault(rule, []).append(path.name)
    return out


# -- the registry ------------------------------------------------------------------------------

def test_registry_is_data_with_unique_named_rules() -> None:
    reg = registry()
    assert len(reg) >= 30
    per_module = Counter()
    for mod in RULE_MODULES:
        rules = __import__(f"autoparser.derive.{mod}", fromlist=["RULES"]).RULES
        assert all(isinstance(r, Rule) for r in rules), mod
        per_module[mod] = len(rules)
        for r in rules:
            assert reg[r.name] is r
    assert sum(per_module.values()) == len(reg), "a rule name is declared twice"
    for r in reg.values():
        assert r.name.count(".") >= 1 and " " not in r.name
        assert r.field and r.reason and "\n" not in r.reason
    rule = next(iter(reg.values()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        rule.name = "x.y"  # type: ignore[misc]


@pytest.mark.parametrize("name", ["", "noarea", "has space.x"])
def test_a_rule_needs_an_area_dot_name(name: str) -> None:
    with pytest.raises(ValueError):
        Rule(name, "field", "why")
    with pytest.raises(ValueError):
        Rule("area.what", "field", "")


def test_every_registered_rule_is_exercised_by_an_in_repo_fixture() -> None:
    fired = fired_by_fixtures()
    reg = registry()
    missing = sorted(n for n, r in reg.items() if not r.guard and n not in fired)
    assert not missing, f"rules no fixture in fixtures/templates exercises: {missing}"
    unknown = sorted(set(fired) - set(reg))
    assert not unknown, f"evidence names rules that are not registered: {unknown}"


def test_markup_of_tag_languages_named_by_words() -> None:
    """Markers made of a tag, a word and a tag (``<|open|>think<|sep|>``): glued ones are split
    where one ends and the next begins, open/close pairs by word, and a prompt's last open marker
    is found whole."""
    assert tag_runs("<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>") == [
        "<|close|>response<|sep|>", "<|close|>message<|sep|>", "<|end_of_msg|>"]
    assert tag_runs("</s><|end|> [/A][B] over") == ["</s>", "<|end|>", "[/A]", "[B]", "over"]
    assert tag_runs("Answer:<x>") == ["Answer:<x>"]
    assert pairs_with("<|open|>think<|sep|>", "<|close|>think<|sep|>")
    assert not pairs_with("<|open|>think<|sep|>", "<|close|>response<|sep|>")
    prompt = '<|open|>message role="assistant"<|sep|><|open|>think<|sep|>'
    assert opening_tail(prompt, "<|close|>think<|sep|>") == "<|open|>think<|sep|>"
    assert opening_tail(prompt + "\n", "</think>") == ""


def test_a_guard_rule_fires_when_a_derived_part_breaks_the_profile_rules() -> None:
    from autoparser.derive.tools.search import INVALID

    assert all(r.guard == (r in (REJECTED, INVALID)) for r in registry().values())
    f = Findings()
    bad = Profile(tools=ToolSpec(codec=CodecSpec(kind="json")))  # calls with no opening marker: loading refuses it
    with pytest.raises(autoparser.ProfileError):
        Profile.from_dict(bad.to_dict())
    good = validated(bad, f)
    assert good.tools is None
    assert [(e.rule, e.field, e.effect, e.confidence) for e in f.records] == [(REJECTED.name, "tools", "set", 0.2)]
    assert f.confidence["tools"] == 0.2


# -- structured evidence -----------------------------------------------------------------------

def test_fire_records_the_effect_on_the_fields_confidence() -> None:
    rule = Rule("test.rule", "reasoning", "a reason")
    f = Findings()
    a = f.fire(rule, text="set it", snippet="x" * 500, conf=0.9)
    b = f.fire(rule, text="lower it", cap=0.7)
    c = f.fire(rule, text="raise it?", cap=0.95)
    d = f.fire(rule, text="note", fieldname="tools.codec")
    assert (a.effect, a.confidence, b.effect, b.confidence, c.confidence) == ("set", 0.9, "cap", 0.7, 0.7)
    assert (d.effect, d.confidence, d.field) == ("note", None, "tools.codec")
    assert f.confidence == {"reasoning": 0.7}
    assert len(a.snippet) == SNIPPET_CHARS and a.snippet.startswith("xxx")
    assert f.evidence == [e.line() for e in (a, b, c, d)]
    assert f.fired() == {"test.rule"}
    overall = f.fire(Rule("test.overall", "confidence", "why"), text="profile-level", cap=0.4)
    assert overall.confidence == 0.4 and "confidence" not in f.confidence  # the profile's, not a field


def test_structured_keeps_plain_lines_and_drop_forgets_a_field() -> None:
    f = Findings()
    f.fire(Rule("test.a", "reasoning", "r"), text="one", conf=0.9)
    f.fire(Rule("test.b", "reasoning.start", "r"), text="two")
    f.evidence.append("tools.codec: a line no rule produced")
    f.evidence.append("free text without a field")
    recs = f.structured()
    assert [(r.field, r.rule) for r in recs] == [("reasoning", "test.a"), ("reasoning.start", "test.b"),
                                                  ("tools.codec", ""), ("", "")]
    f.drop("reasoning")
    assert f.fired() == set() and "reasoning" not in f.confidence
    assert [r.field for r in f.structured()] == ["tools.codec", ""]


@pytest.mark.parametrize("name", sorted(p.name for p in DIR.glob("*.jinja")))
def test_evidence_of_every_fixture_is_structured(name: str) -> None:
    an = fixture(name)
    reg = registry()
    assert an.profile.evidence, "every derived profile says why"
    assert len(set(an.profile.evidence)) == len(an.profile.evidence), "each evidence line appears once"
    for e in an.evidence:
        assert isinstance(e, Evidence) and e.effect in EFFECTS
        if e.rule:
            assert e.rule in reg
            assert e.field
        if e.effect == "note":
            assert e.confidence is None
        else:
            assert e.confidence is not None and 0.0 <= e.confidence <= 1.0
    # the profile's text evidence is the rendering of the records, in order
    lines = [e.line() for e in an.findings.records]
    assert [x for x in an.profile.evidence if x in set(lines)] == [x for x in lines if x in an.profile.evidence]
    # a field's confidence is the effect of the last rule that set or capped it
    last: dict[str, float] = {}
    for e in an.findings.records:
        if e.confidence is not None and e.field != "confidence":
            last[e.field] = e.confidence
    for fieldname, value in last.items():
        if fieldname in an.profile.field_confidence:
            assert an.profile.field_confidence[fieldname] == value, fieldname


# -- the CLI shows it --------------------------------------------------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "autoparser.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)


def test_cli_json_carries_structured_evidence_and_loads_back(tmp_path: Path) -> None:
    src = tmp_path / "t.jinja"
    src.write_text((DIR / "rule_render_string_arguments.jinja").read_text(encoding="utf-8"), encoding="utf-8")
    r = _cli(str(src), "--json", "--pure")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    der = doc["derivation"]
    assert der["evidence"] and all(set(e) == {"field", "rule", "text", "snippet", "effect", "confidence"}
                                   for e in der["evidence"])
    assert "render.string_arguments" in der["rules_fired"]
    assert set(der["rules_fired"]) <= set(registry())
    assert der["self_check"]["rendered"] == der["self_check"]["passed"] > 0
    assert doc["tools"]["call_open"] == ["<act>"]
    saved = tmp_path / "p.json"
    saved.write_text(r.stdout, encoding="utf-8")
    prof = autoparser.load(saved)
    assert prof.tools is not None and prof.tools.call_open == ("<act>",)


def test_cli_explain_lists_every_rule_that_fired(tmp_path: Path) -> None:
    src = tmp_path / "t.jinja"
    src.write_text((DIR / "rule_reasoning_labelled_open.jinja").read_text(encoding="utf-8"), encoding="utf-8")
    r = _cli(str(src), "--explain", "--pure", "--no-save")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    start = lines.index("  rules (field, rule, effect on its confidence, the render text it read)")
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("    "))
    rows = [ln.split() for ln in lines[start + 1:end]]
    an = fixture("rule_reasoning_labelled_open.jinja")
    assert [row[1] for row in rows] == [e.rule or "(no" for e in an.evidence]
    assert [row[0] for row in rows] == [e.field or "-" for e in an.evidence]


# -- confidence --------------------------------------------------------------------------------

def _findings(**conf: float) -> Findings:
    f = Findings()
    f.confidence.update(conf)
    return f


def _check(rendered: int, passed: int, **kinds: int) -> CheckResult:
    return CheckResult(rendered=rendered, passed=passed, kinds=Counter(kinds))


def test_confidence_is_bounded_by_the_weakest_core_field() -> None:
    assert "strip" in CORE_FIELDS and "tools.codec" in CORE_FIELDS
    full = _check(10, 10, content=3, reasoning=2, calls1=2, calls2=3)
    assert combine(_findings(reasoning=0.95, end_of_turn=0.95), full, has_calls=False) == 0.95
    assert combine(_findings(reasoning=0.55, end_of_turn=0.95), full, has_calls=False) == 0.55
    assert combine(_findings(reasoning=0.95, strip=0.3), full, has_calls=False) == 0.3


def test_round_trip_confirms_call_fields_and_failures_lower_the_confidence() -> None:
    full = _check(10, 10, content=3, calls1=3, calls2=4)
    f = _findings(end_of_turn=0.95, **{"tools.codec": 0.9, "tools.markers": 0.9})
    assert combine(f, full, has_calls=True) == 0.95
    assert f.confidence["tools.codec"] == 0.95 and "confidence.confirmed_by_round_trip" in f.fired()
    one_call_only = _check(10, 10, content=5, calls1=5)  # no render with two calls: not confirmed
    assert combine(_findings(**{"tools.codec": 0.9}), one_call_only, has_calls=True) == 0.9
    failing = CheckResult(rendered=10, passed=8, kinds=Counter(content=4, calls2=4),
                          failed_kinds=Counter(calls1=2), failures=["x"])
    assert combine(_findings(**{"tools.codec": 0.95}), failing, has_calls=True) <= 0.6
    almost = CheckResult(rendered=10, passed=9, kinds=Counter(content=4, calls2=5), failed_kinds=Counter(calls1=1))
    assert 0.6 < combine(_findings(**{"tools.codec": 0.95}), almost, has_calls=True) < 0.95


def test_what_the_round_trip_could_not_check_caps_the_confidence() -> None:
    assert combine(_findings(end_of_turn=0.95), _check(0, 0), has_calls=False) <= 0.5
    no_calls = _check(4, 4, content=4)
    assert combine(_findings(end_of_turn=0.95), no_calls, has_calls=True) <= 0.75
    assert combine(_findings(end_of_turn=0.95), no_calls, has_calls=False) == 0.95


def test_calibration_on_in_repo_fixtures() -> None:
    """A known-good invented format is sure of itself; ambiguous or unverifiable ones are not."""
    for good in ("bbcode_call.jinja", "rule_messages_headed.jinja"):
        assert fixture(good).profile.confidence >= 0.85, fixture(good).profile.evidence
    for unsure in ("rule_reasoning_prompt_tail_guess.jinja",  # a closing tag no render showed
                   "rule_confidence_calls_unchecked.jinja",  # no call parsed back
                   "rule_confidence_round_trip_failed.jinja",  # what it renders does not parse back
                   "rule_structure_sentinel_leak.jinja"):  # a marker holding probe data
        assert fixture(unsure).profile.confidence < 0.85, unsure
    assert fixture("rule_renders_out_of_time.jinja").profile.confidence <= 0.3
