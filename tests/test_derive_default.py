"""The default path (``known=True``) never contradicts the renders (issue 21, items 6 and 7).

A matched builtin dialect adds its parts only where the template's own renders agree; where they
show something else the derived value stands and ``Profile.builtin`` says what was declined; what
no render shows is marked builtin-only, and the CLI and the exports say so. Templates that render
no conversation raise. The corpus-wide measure (every template's own renders) is in
tests/test_derive_corpus.py.
"""

from __future__ import annotations

import functools
import io
import json
from pathlib import Path

import pytest

import autoparser
from autoparser.cli.analyze import main_analyze, main_scan
from autoparser.derive import Analysis, analyze_detailed
from autoparser.errors import TemplateError
from autoparser.export import emit
from autoparser.profile import BuiltinUse, Profile, PromptSetting

DIR = Path(__file__).resolve().parents[1] / "fixtures" / "templates"
PREFILLED = "rule_known_prompt_kept.jinja"    # Hermes calls; the prompt opens <think> (the builtin: explicit)
ADDED = "rule_known_reasoning_added.jinja"    # Hermes calls; no render shows reasoning
DECLINED = "rule_known_declined.jinja"        # calls as a nested JSON array; reasoning in <reflect>


@functools.cache
def default(name: str) -> Analysis:
    return analyze_detailed((DIR / name).read_text(encoding="utf-8"), known=True)


def _summary(res: autoparser.Result) -> tuple[str, str, list[tuple[str, dict[str, object]]]]:
    return res.reasoning.strip(), res.content.strip(), [(c.name, c.arguments) for c in res.tool_calls]


# -- item 7: no conversation, no profile -----------------------------------------------------------

@pytest.mark.parametrize("source", ["", "hello", "{{ messages[0].content }}",
                                    "{% for m in messages %}{{ m.role }}: {% endfor %}"])
def test_a_template_that_renders_no_conversation_raises(source: str) -> None:
    said = "is empty" if not source else "renders no conversation"
    with pytest.raises(TemplateError, match=said):
        autoparser.analyze(source)
    with pytest.raises(TemplateError, match=said):
        autoparser.analyze(source, known=False)


# -- item 6: what the builtin adds, and where it is declined -------------------------------------

def test_a_prompt_that_opens_reasoning_keeps_it_open_on_the_default_path() -> None:
    an = default(PREFILLED)
    prof = an.profile
    assert prof.name == "hermes" and prof.reasoning is not None
    assert prof.reasoning.start == "prefilled" == an.derived.reasoning.start  # type: ignore[union-attr]
    assert autoparser.get_profile("hermes").reasoning.start == "explicit"  # type: ignore[union-attr]
    assert _summary(autoparser.parse("R_TEXT\n</think>\n\nC_TEXT<|im_end|>", prof)) == ("R_TEXT", "C_TEXT", [])
    b = prof.builtin
    assert b is not None and b.dialect == "hermes"
    assert {"tools", "reasoning"} <= set(b.taken) and not b.added
    assert set(b.declined) == {"reasoning.start", "reasoning.switchable"}
    assert prof.tools == autoparser.get_profile("hermes").tools  # recovery rules came with the format
    rules = {e.rule for e in an.evidence}
    assert {"known.taken", "known.prompt_kept", "known.names"} <= rules


def test_reasoning_no_render_shows_is_builtin_only() -> None:
    an = default(ADDED)
    prof = an.profile
    assert an.derived.reasoning is None
    assert prof.builtin is not None and prof.builtin.added == ("reasoning",)
    assert prof.builtin_only("reasoning") and not prof.builtin_only("tools")
    assert prof.reasoning is not None and prof.reasoning.start == "explicit"
    # the renders never contradict it: plain text stays content, calls parse as derived
    for raw in ("Hello there.<|im_end|>",
                '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>'):
        assert _summary(autoparser.parse(raw, prof)) == _summary(autoparser.parse(raw, an.derived))
    # no host reasoning parser for it
    vllm = autoparser.resolve(prof, "vllm")
    assert vllm.reasoning is None and "--reasoning-parser" not in vllm.flags
    assert vllm.tools is not None and vllm.tools.parser == "hermes"
    assert "reasoning" not in json.loads(emit(prof, "openvino"))


def test_a_builtin_that_misreads_the_renders_is_declined() -> None:
    an = default(DECLINED)
    prof = an.profile
    assert prof.name == "hermes"
    assert prof.tools == an.derived.tools and prof.reasoning == an.derived.reasoning
    assert prof.builtin is not None and {"tools", "reasoning"} <= set(prof.builtin.declined)
    assert "tools" not in prof.builtin.taken and "reasoning" not in prof.builtin.added
    raw = ('<reflect>Need it.</reflect>\n<tool_call>\n[{"type": "function", "function": {"name": "get_weather", '
           '"arguments": {"city": "Oslo"}}}]\n</tool_call><|im_end|>')
    assert _summary(autoparser.parse(raw, prof)) == ("Need it.", "", [("get_weather", {"city": "Oslo"})])
    res = autoparser.resolve(prof, "vllm")  # hermes' server parser would misread the calls
    assert res.tools is not None and res.tools.parser != "hermes"
    assert {e.rule for e in an.evidence} >= {"known.declined", "known.markers_differ"}


def test_pure_derivation_records_no_builtin() -> None:
    for name in (PREFILLED, ADDED, DECLINED):
        pure = autoparser.analyze((DIR / name).read_text(encoding="utf-8"), known=False)
        assert pure.builtin is None and pure == default(name).derived


def test_the_builtin_record_round_trips_and_is_not_wire_format() -> None:
    prof = default(PREFILLED).profile
    assert Profile.from_dict(prof.to_dict()) == prof
    assert "builtin" not in prof.wire_format() and "prompt_settings" not in prof.wire_format()
    with pytest.raises(autoparser.ProfileError, match=r"builtin\.added"):
        Profile.from_dict({**prof.to_dict(), "builtin": {"dialect": "hermes", "added": [""]}})


# -- the CLI marks builtin-only parts -------------------------------------------------------------

def test_cli_marks_builtin_only_and_declined_parts(tmp_path: Path) -> None:
    for name in (ADDED, DECLINED):
        (tmp_path / name).write_text((DIR / name).read_text(encoding="utf-8"), encoding="utf-8")
    out = io.StringIO()
    assert main_analyze([str(tmp_path / ADDED), "--no-save"], out) == 0
    lines = out.getvalue().splitlines()
    reasoning = next(ln for ln in lines if ln.startswith("  reasoning "))
    assert "builtin-only" in reasoning
    builtin = next(ln for ln in lines if ln.startswith("  builtin "))
    assert "added reasoning" in builtin
    out = io.StringIO()
    assert main_analyze([str(tmp_path / DECLINED), "--no-save"], out) == 0
    assert "not taken" in next(ln for ln in out.getvalue().splitlines() if ln.startswith("  builtin "))
    out = io.StringIO()
    assert main_analyze([str(tmp_path / ADDED), "--emit", "vllm"], out) == 0
    assert "--reasoning-parser" not in out.getvalue() and "--tool-call-parser hermes" in out.getvalue()
    out = io.StringIO()
    assert main_scan([str(tmp_path / ADDED), str(tmp_path / DECLINED), "--json"], out) == 0
    rows = {Path(r["path"]).name: r for r in map(json.loads, out.getvalue().splitlines())}
    assert rows[ADDED]["builtin_only"] == ["reasoning"] and rows[ADDED]["builtin_declined"] == []
    assert set(rows[DECLINED]["builtin_declined"]) >= {"tools", "reasoning"}
    out = io.StringIO()
    assert main_scan([str(tmp_path / ADDED)], out) == 0
    assert "(</think>)" in out.getvalue()


def test_prompt_settings_validate() -> None:
    prof = Profile(reasoning=autoparser.get_profile("hermes").reasoning,
                   prompt_settings=(PromptSetting("enable_thinking", False, "off"),))
    assert Profile.from_dict(prof.to_dict()) == prof
    with pytest.raises(autoparser.ProfileError, match="prompt_settings"):
        Profile.from_dict({**prof.to_dict(), "reasoning": None})
    with pytest.raises(autoparser.ProfileError, match="prompt_settings"):
        Profile.from_dict({**prof.to_dict(), "prompt_settings": [
            {"variable": "not a name", "value": 1, "reasoning": "explicit"}]})
    assert BuiltinUse("hermes").declined == {}


# -- item 4: the template's own variables ----------------------------------------------------------

SETTINGS = "rule_variables_prompt_setting.jinja"  # 'depth' and 'ponder_budget' decide the prompt's <ponder>


def test_the_templates_own_variables_and_the_values_it_compares_them_with() -> None:
    from autoparser.templates import TemplateRenderer

    r = TemplateRenderer((DIR / SETTINGS).read_text(encoding="utf-8"))
    assert r.inputs() == {"depth": ("deep", "none"), "ponder_budget": (0,)}
    plain = TemplateRenderer("{% for m in messages %}{% set x = m.content %}{{ x }}{% endfor %}")
    assert plain.inputs() == {}


def _meta_inputs(source: str) -> tuple[set[str], set[str]]:
    """jinja2.meta's undeclared variables, and the names the template assigns or defines somewhere."""
    import jinja2
    import jinja2.meta
    from jinja2 import nodes

    from autoparser.templates._variables import STANDARD_INPUTS

    env = jinja2.Environment(extensions=["jinja2.ext.loopcontrols"])
    env.add_extension(__import__("autoparser.templates._sandbox", fromlist=["x"])._GenerationExtension)
    tree = env.parse(source)
    glob = {"raise_exception", "strftime_now", "dict", "namespace", "range", "lipsum", "cycler", "joiner"}
    undeclared = jinja2.meta.find_undeclared_variables(tree) - STANDARD_INPUTS - glob
    assigned = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    return undeclared, assigned | {m.name for m in tree.find_all(nodes.Macro)}


def test_template_inputs_agree_with_jinja2_meta() -> None:
    """The one-walk reading is jinja2.meta's undeclared variables without names the template sets
    itself (it keeps those it asks about first: ``x is not defined``, ``x | default``)."""
    from autoparser.templates import TemplateRenderer

    shared = DIR.parents[2] / "shared" / "templates"
    paths = sorted(DIR.glob("*.jinja")) + (sorted(shared.rglob("*.jinja")) if shared.exists() else [])
    for path in paths:
        source = path.read_text(encoding="utf-8")
        try:
            mine = set(TemplateRenderer(source).inputs())
        except TemplateError:
            continue
        undeclared, assigned = _meta_inputs(source)
        assert mine <= undeclared, (path.name, mine - undeclared)
        assert undeclared - mine <= assigned, (path.name, undeclared - mine - assigned)


def test_prompt_settings_say_which_values_open_reasoning() -> None:
    prof = autoparser.analyze((DIR / SETTINGS).read_text(encoding="utf-8"), known=False)
    got = {(s.variable, s.value): s.reasoning for s in prof.prompt_settings}
    assert got[("depth", "deep")] == "prefilled" and got[("depth", "none")] == "off"
    assert got[("ponder_budget", 1)] == "prefilled" and got[("ponder_budget", 0)] == "off"
    assert prof.reasoning is not None and prof.reasoning.start == "explicit"
    assert prof.reasoning_for(depth="deep") == "prefilled" and prof.reasoning_for(depth="unknown") is None
    assert prof.reasoning_for() is None
    raw = "Count them.</ponder>Three.<|stop|>"
    opened = autoparser.parse(raw, prof, reasoning=prof.reasoning_for(depth="deep"))
    assert (opened.reasoning, opened.content) == ("Count them.", "Three.")
    off = autoparser.parse("Three.<|stop|>", prof, reasoning=prof.reasoning_for(depth="none"))
    assert (off.reasoning, off.content) == ("", "Three.")
    out = io.StringIO()
    assert main_analyze([str(DIR / SETTINGS), "--no-save", "--pure"], out) == 0
    line = next(ln for ln in out.getvalue().splitlines() if ln.startswith("  settings "))
    assert '"deep" -> prefilled' in line and '"none" -> off' in line
