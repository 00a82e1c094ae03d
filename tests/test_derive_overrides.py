"""Template overrides: data, each with a reason and a test vector, used only with known=True."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

import autoparser
from autoparser.derive import fingerprint, overrides

TEMPLATES = Path(__file__).resolve().parents[1].parent / "shared" / "templates"


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


@pytest.mark.parametrize("o", overrides(), ids=lambda o: o["template"])
def test_override_is_complete_and_its_vector_parses(o: dict[str, Any]) -> None:
    assert re.fullmatch(r"[0-9a-f]{64}", o["sha256"])
    assert len(o["reason"]) > 40, "an override says why derivation cannot get there"
    v = o["vector"]
    res = autoparser.parse(v["input"], o["dialect"], tools=v.get("tools"))
    e = v["expected"]
    assert _norm(res.reasoning) == _norm(e["reasoning"]) and _norm(res.content) == _norm(e["content"])
    assert [{"name": c.name, "arguments": c.arguments} for c in res.tool_calls] == e["tool_calls"]


@pytest.mark.shared
@pytest.mark.skipif(not TEMPLATES.exists(), reason=f"{TEMPLATES} not found (../shared is not beside the repo)")
def test_overrides_apply_only_with_known_true() -> None:
    by_sha = {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in TEMPLATES.rglob("*.jinja")}
    for o in overrides():
        path = by_sha[o["sha256"]]
        text = path.read_text(encoding="utf-8")
        assert fingerprint(text) == o["sha256"]
        known = autoparser.analyze(text, known=True)
        assert known.name == o["dialect"] and any("override" in e for e in known.evidence)
        pure = autoparser.analyze(text, known=False)
        assert not any("override" in e for e in pure.evidence)
