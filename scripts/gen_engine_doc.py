#!/usr/bin/env python3
"""Regenerate the parts of docs/engine.md that are drawn from the code.

Two blocks are generated, each between ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``:
the issue-code table (``autoparser.engine.issues.issue_table``) and the machine's state diagram
(``autoparser.engine.states.state_diagram``, a mermaid ``stateDiagram-v2`` of the transition
table). ``tests/test_engine_doc.py`` fails when the doc and the code disagree.

Usage (from the project root)::

    PYTHONPATH=$PWD python3 scripts/gen_engine_doc.py           # rewrite docs/engine.md
    PYTHONPATH=$PWD python3 scripts/gen_engine_doc.py --check   # exit 1 when it is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from autoparser.engine.issues import issue_table
from autoparser.engine.states import state_diagram

DOC = Path(__file__).resolve().parents[1] / "docs" / "engine.md"


def _mermaid() -> str:
    return "```mermaid\n" + state_diagram() + "```\n"


BLOCKS: dict[str, Callable[[], str]] = {"issue-codes": issue_table, "state-diagram": _mermaid}


def render(doc: str) -> str:
    """``doc`` with every generated block replaced by what the code renders now."""
    for name, make in BLOCKS.items():
        pattern = re.compile(rf"(<!-- generated: {name} -->\n)(.*?)(<!-- end: {name} -->)", re.DOTALL)
        if pattern.search(doc) is None:
            raise SystemExit(f"docs/engine.md has no generated block {name!r}")
        m = pattern.search(doc)
        assert m is not None
        doc = doc[:m.start(2)] + make() + doc[m.end(2):]
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/engine.md is out of date")
    args = ap.parse_args(argv)
    doc = DOC.read_text(encoding="utf-8")
    new = render(doc)
    if args.check:
        if new != doc:
            print("docs/engine.md is out of date: run scripts/gen_engine_doc.py", file=sys.stderr)
            return 1
        return 0
    if new != doc:
        DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
