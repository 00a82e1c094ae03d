"""docs/engine.md and the engine agree: the issue-code table and the state diagram are the ones the
code renders, the engine records issues with the ``IssueCode`` enum only (and records every
member), and the transition table has a row for every marker a mode can find."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from scripts_loader import load_script

from autoparser import get_profile
from autoparser.dialects import dialects
from autoparser.engine.issues import IssueCode, issue_table
from autoparser.engine.machine import _compiled
from autoparser.engine.markers import Kind, MarkerSet
from autoparser.engine.states import IN_REGION, TRANSITIONS, Mode, Spot, state_diagram

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "autoparser" / "engine"


def _codes_used() -> tuple[set[str], list[str]]:
    """The ``IssueCode`` members the engine source names (``IssueCode.NAME``), and every place that
    records an issue with a plain string instead (``Issue("code", ...)``, ``.issue("code", ...)``,
    ``issues.append(("code", ...))``): there should be none, codes are the enum."""
    used: set[str] = set()
    strings: list[str] = []
    for path in ENGINE.glob("*.py"):
        if path.name == "issues.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "IssueCode":
                used.add(node.attr)
            if not (isinstance(node, ast.Call) and node.args):
                continue
            first = node.args[0]
            name = node.func.id if isinstance(node.func, ast.Name) else \
                node.func.attr if isinstance(node.func, ast.Attribute) else ""
            if name == "append":
                if not (isinstance(first, ast.Tuple) and first.elts and "issues" in ast.unparse(node.func)):
                    continue
                first = first.elts[0]
            if name in ("Issue", "issue", "append") and isinstance(first, ast.Constant):
                strings.append(f"{path.name}:{node.lineno}")
    return used, strings


def test_every_code_the_engine_records_is_registered() -> None:
    used, strings = _codes_used()
    assert strings == [], "issues recorded with a plain string, not an IssueCode"
    assert used == {c.name for c in IssueCode}, "IssueCode members the engine never records"


def test_engine_doc_carries_the_generated_issue_table() -> None:
    doc = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    assert issue_table() in doc, "regenerate the table in docs/engine.md from autoparser.engine.issues.issue_table()"


def test_engine_doc_blocks_are_the_generated_ones() -> None:
    """docs/engine.md's generated blocks (issue table, state diagram) are what the code renders:
    rendering the doc again changes nothing."""
    gen = load_script("gen_engine_doc")
    doc = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    assert gen.render(doc) == doc, "run PYTHONPATH=$PWD python3 scripts/gen_engine_doc.py"
    assert "```mermaid\nstateDiagram-v2\n" in doc


def test_state_diagram_draws_every_transition() -> None:
    """Every entry of the transition table is an arrow of the diagram (a table entry the doc
    would not show fails here, not in review)."""
    diagram = state_diagram()
    for mode, row in TRANSITIONS.items():
        for kind, step in row.items():
            assert f"{mode.value} --> {step.then.value}: " in diagram
            line = next(ln for ln in diagram.splitlines() if f"{mode.value} --> {step.then.value}: " in ln)
            assert kind.value in line.split(": ", 1)[1].split(", ")
    for spot, srow in IN_REGION.items():
        for kind, sstep in srow.items():
            dst = "[*]" if sstep.then is Mode.content else f"region_{sstep.then.value}"
            line = next(ln for ln in diagram.splitlines() if f"region_{spot.value} --> {dst}: " in ln)
            assert kind.value in line.split(": ", 1)[1].split(", ")


def _kinds(ms: MarkerSet) -> set[Kind]:
    found = set()
    for marker in ms.markers:
        m = ms.search(marker)
        assert m is not None
        found.add(m.kind)
    return found


@pytest.mark.parametrize("name", sorted(d.name for d in dialects()))
def test_table_covers_every_marker_each_mode_can_find(name: str) -> None:
    """For every builtin dialect, each kind of marker a mode searches for has a row in the table
    (a missing one would be a KeyError at that marker in the middle of a stream)."""
    c = _compiled(get_profile(name))
    sets = {Mode.content: [c.content_on, c.content_off, c.start_on, c.start_off],
            Mode.undecided: [c.undecided], Mode.reasoning: [c.reasoning, c.reasoning_closed_only],
            Mode.defer: [c.defer]}
    if get_profile(name).tools is not None:
        sets[Mode.skip] = [c.skip_section, c.skip_call]
        for spot, ms in ((Spot.between, c.between), (Spot.after, c.after)):
            assert _kinds(ms) <= set(IN_REGION[spot]), (name, spot)
    if c.harmony is not None:
        sets[Mode.h_header] = [c.harmony.header]
        sets[Mode.h_body] = [c.harmony.body]
        sets[Mode.h_after] = [c.harmony.after]
    for mode, marker_sets in sets.items():
        for ms in marker_sets:
            assert _kinds(ms) <= set(TRANSITIONS[mode]), (name, mode, _kinds(ms) - set(TRANSITIONS[mode]))
