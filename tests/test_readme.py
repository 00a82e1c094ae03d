"""Every Python example in the README runs as written, in a fresh interpreter, from the repo root."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_has_python_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_readme_example_runs_in_a_fresh_interpreter(index: int, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUTOPARSER_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", EXAMPLES[index]], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, EXAMPLES[index] + "\n" + proc.stderr[-3000:]
