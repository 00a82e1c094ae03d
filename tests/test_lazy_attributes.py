"""The README's attribute paths work in a fresh interpreter (the lazy ``__getattr__`` once recursed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Each snippet is a README usage path started from nothing but ``import autoparser``.
SNIPPETS = {
    "openai-message": (
        "import autoparser\n"
        "res = autoparser.parse('<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>', 'hermes')\n"
        "msg = autoparser.openai.message_from_result(res)\n"
        "assert msg['tool_calls'][0]['function']['name'] == 'f', msg\n"
    ),
    "openai-twice": (
        "import autoparser\n"
        "assert autoparser.openai is autoparser.openai\n"
        "import autoparser.openai as direct\n"
        "assert direct is autoparser.openai\n"
    ),
    "analyze": "import autoparser\nassert callable(autoparser.analyze)\n",
    "load": "import autoparser\nassert callable(autoparser.load)\n",
    "missing": (
        "import autoparser\n"
        "try:\n    autoparser.no_such_name\n"
        "except AttributeError:\n    pass\n"
        "else:\n    raise SystemExit('no AttributeError')\n"
    ),
}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_readme_attribute_path_in_fresh_interpreter(name: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", SNIPPETS[name]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
