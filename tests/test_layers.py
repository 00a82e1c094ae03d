"""The library sits below its consumers: ``autoparser/derive/`` imports nothing from the command
line, the profile-spec loader, the cache, the exports or the servers that call it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "autoparser"
CONSUMERS = ("cli", "specs", "cache", "export", "batch", "batch_cli", "serve", "live", "openai", "demo")


def _imported(path: Path, root: Path = ROOT) -> set[str]:
    """Absolute names of the autoparser modules a file imports (relative imports resolved)."""
    package = ["autoparser", *path.relative_to(root).parent.parts]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join([*base, *(node.module.split(".") if node.module else [])])
            names.add(mod)
            names.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return {n for n in names if n.startswith("autoparser.")}


def test_derive_imports_no_consumer() -> None:
    bad = {f"{p.relative_to(ROOT)}: {n}" for p in (ROOT / "derive").rglob("*.py") for n in _imported(p)
           if n.split(".")[1] in CONSUMERS}
    assert not bad, sorted(bad)


def test_the_check_resolves_relative_imports(tmp_path: Path) -> None:
    deep = tmp_path / "derive" / "tools"
    deep.mkdir(parents=True)
    (deep / "m.py").write_text("from ...cli import command\nfrom .. import probes\nimport autoparser.specs\n")
    assert _imported(deep / "m.py", tmp_path) >= {"autoparser.cli", "autoparser.cli.command",
                                                  "autoparser.derive.probes", "autoparser.specs"}
