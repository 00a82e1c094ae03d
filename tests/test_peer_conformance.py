"""Every peer vector of ../shared/conformance, fed whole, per character, at every split point and
in random chunkings: results must be identical and equal the expected parse.

Skipped (with the reason) when ../shared is absent; the default suite still proves the runtime
through fixtures/corpus.
"""

from __future__ import annotations

import itertools
import json
import random
import zlib
from pathlib import Path
from typing import Any

import pytest

import autoparser
from autoparser.compare import normalize, summary

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CASES_FILE = SHARED / "conformance" / "peer-cases.json"

pytestmark = pytest.mark.skipif(not CASES_FILE.exists(),
                                reason=f"{CASES_FILE} not found (../shared is not beside the repo)")

#: vectors we disagree with, each explained in docs/conformance.md
DISAGREE = {
    "dyn-kimi-b5b-missing-section-begin": "contradicts the bare-call Kimi vectors (docs/conformance.md)",
    "dyn-gemma4-b5b-missing-open": "contradicts issue-vllm54256 (bare call: after a channel)",
    "vllm-mistral-v11-name-without-args": "we keep the text as content (no silent loss)",
}


def _cases() -> list[dict[str, Any]]:
    if not CASES_FILE.exists():
        return []
    return list(json.loads(CASES_FILE.read_text(encoding="utf-8")))


def run(case: dict[str, Any], chunks: list[str]) -> dict[str, Any]:
    notes = case.get("notes") or ""
    reasoning = "prefilled" if "[prompt-opened-reasoning]" in notes or case["dialect"] == "deepseek-r1" else None
    p = autoparser.get_profile(case["dialect"]).parser(tools=case.get("tools"), reasoning=reasoning)
    for ch in chunks:
        p.feed(ch)
    p.close()
    return summary(p.result())


def _params() -> list[Any]:
    out = []
    for c in _cases():
        marks = [pytest.mark.xfail(strict=True, reason=DISAGREE[c["id"]])] if c["id"] in DISAGREE else []
        out.append(pytest.param(c, id=c["id"], marks=marks))
    return out


@pytest.mark.shared
@pytest.mark.parametrize("case", _params())
def test_peer_vector(case: dict[str, Any]) -> None:
    text = case["input"]
    whole = run(case, [text])
    assert whole == normalize(case["expected"])
    assert run(case, list(text)) == whole, "one character at a time differs from whole"
    for k in range(1, len(text)):
        assert run(case, [text[:k], text[k:]]) == whole, f"split at {k} differs from whole"
    rng = random.Random(zlib.crc32(case["id"].encode()))
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 12)))) if len(text) > 1 else []
        bounds = [0, *cuts, len(text)]
        assert run(case, [text[a:b] for a, b in itertools.pairwise(bounds)]) == whole


@pytest.mark.shared
def test_overall_rate() -> None:
    cases = _cases()
    by: dict[str, list[int]] = {}
    for c in cases:
        d = by.setdefault(c["dialect"], [0, 0])
        d[1] += 1
        d[0] += run(c, [c["input"]]) == normalize(c["expected"])
    total = sum(v[0] for v in by.values())
    assert total / len(cases) >= 0.98, f"overall {total}/{len(cases)}"
    for dialect, (ok, n) in by.items():
        assert ok / n >= 0.9, f"{dialect}: {ok}/{n}"
