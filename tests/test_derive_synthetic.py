"""Derivation on invented chat templates (fixtures/templates): formats no real model uses, so
nothing in the analyzer can have been tuned to their marker strings.

For every template: ``analyze(known=False)`` derives the facts recorded in cases.json, the
self-check round-trips, confidence is high, the profile JSON round-trips, and every raw output
parses to its expected result whole and in random chunks. Then hostile templates: they must end
in a TemplateError, quickly.
"""

from __future__ import annotations

import functools
import json
import random
import re
import time
from pathlib import Path
from typing import Any

import pytest

import autoparser
from autoparser import Profile
from autoparser.derive import Analysis, analyze_detailed
from autoparser.errors import TemplateError

DIR = Path(__file__).resolve().parents[1] / "fixtures" / "templates"
DATA: dict[str, Any] = json.loads((DIR / "cases.json").read_text(encoding="utf-8"))
TOOLS: list[dict[str, Any]] = DATA["tools"]
TEMPLATES: dict[str, dict[str, Any]] = DATA["templates"]
MIN_CONFIDENCE = 0.8


@functools.cache
def analysis(name: str) -> Analysis:
    return analyze_detailed((DIR / name).read_text(encoding="utf-8"), known=False)


def _xfail(name: str, check: str) -> list[Any]:
    t = TEMPLATES[name]
    if check in t.get("xfail_checks", ()):
        return [pytest.mark.xfail(strict=True, reason=t["xfail"])]
    return []


def _params(check: str) -> list[Any]:
    return [pytest.param(n, id=n.removesuffix(".jinja"), marks=_xfail(n, check)) for n in TEMPLATES]


def _case_params() -> list[Any]:
    out = []
    for n, t in TEMPLATES.items():
        for c in t["cases"]:
            marks = [pytest.mark.xfail(strict=True, reason=c.get("reason") or t["xfail"])] if c.get("xfail") else []
            out.append(pytest.param(n, c, id=f"{n.removesuffix('.jinja')}-{c['id']}", marks=marks))
    return out


def test_fixture_set_is_complete() -> None:
    on_disk = {p.name for p in DIR.glob("*.jinja")}
    assert on_disk == set(TEMPLATES), f"templates without cases: {on_disk - set(TEMPLATES)}; " \
                                      f"cases without templates: {set(TEMPLATES) - on_disk}"
    assert len(on_disk) >= 12
    for p in DIR.glob("*.jinja"):
        first = p.read_text(encoding="utf-8").splitlines()[0]
        assert re.fullmatch(r"\{#-? tests: .+ -?#\}", first), f"{p.name}: first line must say what it tests"


def _render(name: str, messages: list[dict[str, Any]], agp: bool, permissive: bool = False, **kw: Any) -> str:
    from autoparser.templates.render import TemplateRenderer

    return TemplateRenderer((DIR / name).read_text(encoding="utf-8"), permissive=permissive).render(
        messages, tools=TOOLS, add_generation_prompt=agp, **kw)


def test_fixtures_do_what_they_say() -> None:
    """The shapes the analyzer must cope with are really in the fixtures."""
    user = {"role": "user", "content": "U1"}
    thought = {"role": "assistant", "content": "A1", "reasoning_content": "R1"}
    # reasoning only after the last user message
    assert "R1" in _render("last_turn_reasoning.jinja", [user, thought], False)
    assert "R1" not in _render("last_turn_reasoning.jinja", [user, thought, user], False)
    # reasoning never kept in history; the prompt opens the block
    assert "R1" not in _render("dropped_history_reasoning.jinja", [user, thought], False)
    assert _render("dropped_history_reasoning.jinja", [user], True).rstrip().endswith("<|muse|>")
    # no generation prompt difference
    name = "no_gen_prompt_diff.jinja"
    assert _render(name, [user], True) == _render(name, [user], False)
    # tool calls are dropped by the tool-less templates
    call = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "X"}}}]}
    for name in ("no_tools_plain.jinja", "no_tools_reasoning_wrapper.jinja"):
        assert "get_weather" not in _render(name, [user, call], False)
    # calls that only the permissive semantics render: content None dropped by transformers 5,
    # list.append refused by its immutable sandbox
    none_call = {**call, "content": None}
    assert "<<act" not in _render("none_content_group.jinja", [user, none_call], False)
    assert "<<act get_weather>>" in _render("none_content_group.jinja", [user, none_call], False, permissive=True)
    with pytest.raises(TemplateError, match="unsafe"):
        _render("mutable_call_ids.jinja", [user, call], False)
    # variables no caller passes: every render fails until the analyzer binds them
    with pytest.raises(TemplateError, match="undefined"):
        _render("caller_variables.jinja", [user], True)
    assert "### system:  ()" in _render("caller_variables.jinja", [user], True, agent_name="", today="")
    # reasoning only on turns after the last plain assistant message: a tool-call turn shows it
    muse = {**call, "reasoning_content": "R1"}
    assert "R1" not in _render("mutable_call_ids.jinja", [user, thought], False, permissive=True)
    assert "‹muse›R1‹/muse›" in _render("mutable_call_ids.jinja", [user, muse], False, permissive=True)


# -- the new fixtures render, and show the shapes they are listed for -----------------------------

SHAPES: dict[str, list[str]] = DATA["shapes"]
# flat tool lists ({"name", "parameters"} at the top level) for the template that wants them
FLAT_TOOLS = [t["function"] for t in TOOLS]
# what the listed templates need to render a call turn at all (see test_fixtures_do_what_they_say)
RENDER_KW: dict[str, dict[str, Any]] = {"mutable_call_ids.jinja": {"permissive": True},
                                        "caller_variables.jinja": {"agent_name": "", "today": ""}}
EXAMPLE_CALL = {"id": "ask.get_weather.0", "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}}
CONVERSATION = [
    {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "Checking.", "tool_calls": [
        EXAMPLE_CALL, {"id": "ask.send_email.1", "type": "function", "function": {
            "name": "send_email", "arguments": {"to": "a@b.c", "body": "hi", "urgent": False}}}]},
    {"role": "tool", "tool_call_id": "ask.get_weather.0", "content": "sunny"},
    {"role": "assistant", "content": "It is sunny."}, {"role": "user", "content": "Thanks"},
]
# the list of call-format shapes (issue 9): each must be shown by at least one fixture
REQUIRED_SHAPES = (
    "header prefix is the only opener", "name then separator marker, tagged values coerced by the schema",
    "id before the name", "attribute parameters with a type attribute", "fenced payload inside call markers",
    "bare JSON array, a call only at the start", "header-routed message with an XML body", "name-as-key JSON list",
    "caller's call id where the name would be", "JSON arguments written as a string",
    "pythonic keyword calls in a wrapper", "flat tool list", "reasoning variations",
    "a close that repeats the tool's name", "shell-quoted strings, other values as JSON",
    "arguments printed as a Python dict", "custom string delimiters and separators",
    "values without their keys (positional)",
)


def _tools_for(name: str) -> list[dict[str, Any]]:
    return FLAT_TOOLS if name in SHAPES["flat tool list"] else TOOLS


def _render_kw(name: str) -> dict[str, Any]:
    return {"permissive": False, **RENDER_KW.get(name, {})}


@pytest.mark.parametrize("name", [pytest.param(n, id=n.removesuffix(".jinja"))
                                  for n, t in TEMPLATES.items() if "refuses" not in t])
def test_fixture_renders_a_whole_conversation(name: str) -> None:
    from autoparser.templates.render import TemplateRenderer

    kw = _render_kw(name)
    r = TemplateRenderer((DIR / name).read_text(encoding="utf-8"), permissive=kw.pop("permissive"))
    text = r.render(CONVERSATION, tools=_tools_for(name), add_generation_prompt=True, **kw)
    for part in ("Weather in Paris?", "sunny", "It is sunny.", "Thanks"):  # some drop the system turn
        assert part in text, part


@pytest.mark.parametrize("name", [pytest.param(n, id=n.removesuffix(".jinja"))
                                  for n, t in TEMPLATES.items() if "refuses" in t])
def test_rule_fixture_refuses_the_whole_conversation(name: str) -> None:
    """A rule fixture that refuses some turns on purpose ('refuses') cannot render the whole one."""
    from autoparser.templates.render import TemplateRenderer

    r = TemplateRenderer((DIR / name).read_text(encoding="utf-8"), permissive=False)
    with pytest.raises(TemplateError):
        r.render(CONVERSATION, tools=_tools_for(name), add_generation_prompt=True)


def _call_example(name: str) -> str:
    from autoparser.templates.render import TemplateRenderer

    kw = _render_kw(name)
    r = TemplateRenderer((DIR / name).read_text(encoding="utf-8"), permissive=kw.pop("permissive"))
    msgs = [{"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [EXAMPLE_CALL]}]
    return r.render(msgs, tools=_tools_for(name), add_generation_prompt=False, **kw)


@pytest.mark.parametrize("name", [pytest.param(n, id=n.removesuffix(".jinja"))
                                  for n, t in TEMPLATES.items() if "call_example" in t])
def test_call_example_is_what_the_template_writes(name: str) -> None:
    """The raw outputs of a case are written in the template's own spelling of a call."""
    assert TEMPLATES[name]["call_example"] in _call_example(name)


def _shape_holds(shape: str, name: str) -> bool:
    """A structural property of the call each shape's fixtures write (where one is crisp)."""
    ex = TEMPLATES[name].get("call_example")
    if shape == "flat tool list":  # the OpenAI form fails; the flat form lists the tools
        from autoparser.templates.render import TemplateRenderer

        r = TemplateRenderer((DIR / name).read_text(encoding="utf-8"))
        with pytest.raises(TemplateError):
            r.render(CONVERSATION, tools=TOOLS, add_generation_prompt=True)
        return "send_email" in r.render(CONVERSATION[:2], tools=FLAT_TOOLS, add_generation_prompt=True)
    if ex is None:  # an older fixture: its own first line says what it tests
        return True
    checks = {
        "name then separator marker, tagged values coerced by the schema":
            # a marker right after the name, and no JSON: the values are raw text
            lambda: re.search(r"get_weather[^\s\w{\[(]+", ex) is not None and "{" not in ex and "Paris" in ex,
        "id before the name": lambda: -1 < ex.find("ask.get_weather.0") < ex.find("get_weather", ex.find(".0")),
        "attribute parameters with a type attribute": lambda: 'type="integer"' in ex and 'type="string"' in ex,
        "fenced payload inside call markers": lambda: "```" in ex and not ex.startswith("```"),
        "bare JSON array, a call only at the start": lambda: ex.startswith('[{"'),
        "header-routed message with an XML body": lambda: re.search(r'<(\w+) name="city">Paris</\1>', ex) is not None,
        "name-as-key JSON list": lambda: '[{"get_weather": {' in ex,
        "caller's call id where the name would be":
            lambda: "ask.get_weather.0" in ex and ex.count("get_weather") == ex.count("ask.get_weather.0"),
        "JSON arguments written as a string": lambda: '"arguments": "{\\"city\\": \\"Paris\\"' in ex,
        "pythonic keyword calls in a wrapper": lambda: 'get_weather(city="Paris", days=3)' in ex,
        "header prefix is the only opener": lambda: ex.split("get_weather")[0].strip() != "",
        "a close that repeats the tool's name": lambda: re.search(r"</[^<>]*get_weather>", ex) is not None,
        "arguments printed as a Python dict": lambda: "{'city': 'Paris', 'days': 3}" in ex,  # (any codec)
        "JSON arguments XML-escaped in an attribute": lambda: '="{&quot;city&quot;: &quot;Paris&quot;' in ex,
        "JSON arguments with their quotes doubled in a CSV field": lambda: '"{""city"": ""Paris""' in ex,
        "values without their keys (positional)": lambda: '"Paris"' in ex and "city" not in ex,
        "each call its own message after the content's":
            lambda: ex.startswith((" -> get_weather}}{", " @fn.get_weather<|b|>{")),
        "custom string delimiters and separators": lambda: "Paris" in ex and not re.search(r"[\"']Paris", ex)
                                                            and re.search(r"city\W+Paris", ex) is not None,
        "shell-quoted strings, other values as JSON": lambda: "'Paris'" in ex and re.search(r"\s3\b", ex) is not None,
    }
    return checks.get(shape, lambda: True)()


def test_every_shape_has_a_fixture() -> None:
    assert set(REQUIRED_SHAPES) <= set(SHAPES), set(REQUIRED_SHAPES) - set(SHAPES)
    for shape, names in SHAPES.items():
        assert names, shape
        for n in names:
            assert n in TEMPLATES, (shape, n)
            assert _shape_holds(shape, n), (shape, n, TEMPLATES[n].get("call_example"))
    invented = [n for n, t in TEMPLATES.items() if "call_example" in t]
    assert len(TEMPLATES) >= 31 and len(invented) >= 12


# -- derived facts -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", _params("facts"))
def test_derived_facts(name: str) -> None:
    facts = TEMPLATES[name]["facts"]
    prof = analysis(name).profile
    why = "\n".join(prof.evidence)
    assert (prof.tools is not None) == facts["tools"], why
    assert (prof.messages is not None) == facts.get("messages", False), why
    want = facts["reasoning"]
    if want is None:
        assert prof.reasoning is None, why
        return
    r = prof.reasoning
    assert r is not None, why
    assert want["open"] in r.open or not (want["open"] or r.open), why  # "": the prompt opens it, no marker
    assert r.close[0] == want["close"], why
    assert (r.start == "prefilled") == want["prompt_opened"], why
    assert r.switchable == want["switchable"], why


@pytest.mark.parametrize("name", _params("selfcheck"))
def test_self_check_passes(name: str) -> None:
    a = analysis(name)
    assert a.check.rendered > 0
    assert a.check.passed == a.check.rendered, a.check.failures[:2]


@pytest.mark.parametrize("name", _params("confidence"))
def test_confidence(name: str) -> None:
    prof = analysis(name).profile
    assert prof.confidence >= MIN_CONFIDENCE, "\n".join(prof.evidence)


@pytest.mark.parametrize("name", _params("roundtrip"))
def test_profile_json_round_trips(name: str) -> None:
    prof = analysis(name).profile
    assert Profile.from_dict(prof.to_dict()) == prof
    assert Profile.from_json(prof.to_json()) == prof
    # known=False: no builtin dialect may be consulted; only the known.* fixtures write a builtin's format
    assert prof.builtin is None and (prof.name is None or name.startswith("rule_known_"))


# -- parsing raw outputs with the derived profile ------------------------------------------------

def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def _summary(res: autoparser.Result) -> dict[str, Any]:
    return {"reasoning": _norm(res.reasoning), "content": _norm(res.content),
            "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in res.tool_calls]}


def _chunks(text: str, rng: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 7)
        out.append(text[i:i + n])
        i += n
    return out


@pytest.mark.parametrize(("name", "case"), _case_params())
def test_raw_output_parses(name: str, case: dict[str, Any]) -> None:
    prof = analysis(name).profile
    e = case["expected"]
    want = {"reasoning": _norm(e["reasoning"]), "content": _norm(e["content"]), "tool_calls": e["tool_calls"]}
    text = case["input"]
    assert _summary(autoparser.parse(text, prof, tools=TOOLS)) == want
    rng = random.Random(f"{name}/{case['id']}")
    for _ in range(3):
        assert _summary(autoparser.parse(_chunks(text, rng), prof, tools=TOOLS)) == want
    assert _summary(autoparser.parse(list(text), prof, tools=TOOLS)) == want


def _streamed_params() -> list[Any]:
    def marks(c: dict[str, Any]) -> list[Any]:
        return [pytest.mark.xfail(strict=True, reason=c["streamed_xfail"])] if "streamed_xfail" in c else []

    return [pytest.param(n, c, id=f"{n.removesuffix('.jinja')}-{c['id']}", marks=marks(c))
            for n, t in TEMPLATES.items() for c in t["cases"] if "streamed" in c]


@pytest.mark.parametrize(("name", "case"), _streamed_params())
def test_cut_call_streams_as_truncated(name: str, case: dict[str, Any]) -> None:
    """A call cut off by the end of the stream: announced once its head is complete, it ends
    ``truncated`` with the arguments that were certain (a text value as far as it came), never
    executed as complete; whole, per character and in random chunks alike."""
    prof = analysis(name).profile
    want = case["streamed"]
    text = case["input"]
    for chunks in ([text], list(text), _chunks(text, random.Random(name))):
        res = autoparser.parse(chunks, prof, tools=TOOLS, stream_arguments=True)
        assert [{"name": c.name, "arguments": c.arguments, "status": c.status} for c in res.tool_calls] == want
        assert all(c.status != "ok" for c in res.tool_calls)


# -- hostile templates ------------------------------------------------------------------------------

HOSTILE = {
    "raises": "{{ raise_exception('this template accepts no conversation at all') }}",
    "syntax-error": "{% for m in messages %}{{ m.content }",
    "loops-forever": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "loops-on-assistant": ("{% for m in messages %}{% if m.role == 'assistant' %}{% for i in range(100000) %}"
                           "{% for j in range(100000) %}{% endfor %}{% endfor %}{% endif %}{{ m.content }}"
                           "{% endfor %}"),
    "doubles-a-string": ("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
                         "{% endfor %}{{ ns.s }}"),
    "repeats-a-string": "{{ 'x' * 10000000000 }}",
    "recurses": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
}


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_hostile_template_fails_cleanly(kind: str) -> None:
    """None of them renders any conversation, so none is a profile (tests/test_derive_failure.py
    checks the causes)."""
    t0 = time.perf_counter()
    with pytest.raises(TemplateError):
        autoparser.analyze(HOSTILE[kind], known=False)
    assert time.perf_counter() - t0 < 8.0


def test_slow_template_stays_within_the_analysis_budget() -> None:
    """Each render stays under its own limit, but dozens of them would take minutes: the analysis
    has a budget for all renders together, stops probing there and says so."""
    slow = ("{% for i in range(20000) %}{% for j in range(8) %}{% endfor %}{% endfor %}"
            "{% for m in messages %}{{ m.role }}: {{ m.content }}"
            "{% for tc in m.tool_calls or [] %}<call>{{ tc.function.name }}</call>{% endfor %}\n{% endfor %}")
    from autoparser.templates import TemplateLimitExceeded

    t0 = time.perf_counter()
    try:
        an = analyze_detailed(slow, known=False, time_budget=1.0)
    except TemplateError as e:  # a loaded machine may not render one turn within the budget
        assert isinstance(e.__cause__, TemplateLimitExceeded) and e.__cause__.limit == "time", e
        assert time.perf_counter() - t0 < 4.0
        return
    assert time.perf_counter() - t0 < 4.0
    assert an.profile.confidence <= 0.3
    assert any("time budget" in e for e in an.profile.evidence), an.profile.evidence
