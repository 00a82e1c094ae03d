"""Every Python recipe in docs/integrations.md's "Recipes, one per host" runs as written, in a fresh
interpreter from the repository root (the GenAI recipe generates only when the live extra and the
model are installed)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_DOC = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
_SECTION = _DOC[_DOC.index("### Recipes, one per host"):]
_SECTION = _SECTION[:_SECTION.index("\n## ")]
RECIPES = re.findall(r"```python\n(.*?)```", _SECTION, flags=re.S)


def test_there_is_a_recipe_per_host() -> None:
    from autoparser.export.hosts import HOSTS

    text = "\n".join(RECIPES)
    assert all(f'"{h}"' in text for h in HOSTS)


@pytest.mark.parametrize("index", range(len(RECIPES)))
def test_recipe_runs(index: int, tmp_path: Path) -> None:
    code = RECIPES[index]
    if "transformers" in code and importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUTOPARSER_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, code + "\n" + proc.stderr[-3000:]
