"""docs/engine.md and the engine agree: the issue-code table is the one the code renders, and every
issue code the engine source records is a registered one (and every registered one is used)."""

from __future__ import annotations

import ast
from pathlib import Path

from autoparser.engine.issues import IssueCode, issue_table

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "autoparser" / "engine"


def _codes_used() -> set[str]:
    """String constants passed as the code of ``self._issue(...)``, of ``Issue("code", ...)``, of
    ``issues.append((code, ...))`` and of ``code = "a" if ... else "b"`` in the engine (the ways the
    engine records one)."""
    used: set[str] = set()
    for path in ENGINE.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Issue" \
                    and node.args and isinstance(node.args[0], ast.Constant):
                used.add(str(node.args[0].value))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
                first = node.args[0]
                if node.func.attr == "_issue":
                    exprs = [first]
                elif node.func.attr == "append" and isinstance(first, ast.Tuple) and len(first.elts) == 2 \
                        and "issues" in ast.unparse(node.func.value):
                    exprs = [first.elts[0]]
                else:
                    continue
                for e in exprs:
                    for sub in ast.walk(e):
                        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                            used.add(sub.value)
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "code" for t in node.targets):
                for sub in ast.walk(node.value):
                    if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                        used.add(sub.value)
    return used


def test_every_code_the_engine_records_is_registered() -> None:
    used = _codes_used()
    registered = {c.value for c in IssueCode}
    assert used - registered == set(), "issue codes used but not in IssueCode"
    assert registered - used == set(), "IssueCode members the engine never records"


def test_engine_doc_carries_the_generated_issue_table() -> None:
    doc = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    assert issue_table() in doc, "regenerate the table in docs/engine.md from autoparser.engine.issues.issue_table()"
