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


#: vectors whose output is cut inside a call: with ``stream_arguments=True`` the call was already
#: announced, so it comes back as a call with status ``truncated`` (finish ``length``) instead of
#: the peers' text; each is listed with its stream-mode result in docs/conformance.md
STREAM_TRUNCATED = {
    "dyn-hermes-b5c-truncated-args", "dyn-hermes-b5e-multi-last-truncated",
    "dyn-kimi-b5c-truncated-args", "dyn-kimi-b5e-multi-last-truncated",
    "dyn-kimi-s4b-truncated-mid-args-stream", "dyn-glm-b5c-truncated-value",
    "dyn-glm-b5e-multi-last-truncated", "dyn-mm2-b5c-truncated-value", "dyn-mm2-b5e-multi-truncated",
    "dyn-dsv3-b5c-truncated", "dyn-dsv3-b5e-multi-truncated", "dyn-dsv31-b5c-truncated",
    "dyn-dsv32-b5e-multi-truncated", "dyn-harmony-b5c-truncated-json",
    # JSON arrays of calls stream element by element, Gemma's relaxed objects at their '{': a cut
    # one was already announced
    "dyn-mistral-b5c-truncated", "vllm-phi4-truncated", "dyn-gemma4-b5e-multi-last-truncated",
}


def parse_result(case: dict[str, Any], chunks: list[str], stream: bool = False) -> autoparser.Result:
    notes = case.get("notes") or ""
    reasoning = "prefilled" if "[prompt-opened-reasoning]" in notes or case["dialect"] == "deepseek-r1" else None
    p = autoparser.get_profile(case["dialect"]).parser(tools=case.get("tools"), reasoning=reasoning,
                                                       stream_arguments=stream)
    for ch in chunks:
        p.feed(ch)
    p.close()
    return p.result()


def run(case: dict[str, Any], chunks: list[str], stream: bool = False) -> dict[str, Any]:
    return summary(parse_result(case, chunks, stream))


def assert_truncated_call(case: dict[str, Any], res: autoparser.Result) -> None:
    """Stream mode on a vector cut inside a call: the peers' complete calls, then that call, truncated."""
    want = normalize(case["expected"])
    got = normalize(summary(res))
    assert res.finish == "length"
    assert res.tool_calls and res.tool_calls[-1].status == "truncated"
    assert got["tool_calls"][:-1] == want["tool_calls"]
    assert want["content"].startswith(got["content"]), "the call's text was content for the peers"
    last = res.tool_calls[-1]
    assert last.name in case["input"]
    for key, value in last.arguments.items():
        assert key in case["input"]
        assert not isinstance(value, str) or value in case["input"]


def _params() -> list[Any]:
    out = []
    for c in _cases():
        marks = [pytest.mark.xfail(strict=True, reason=DISAGREE[c["id"]])] if c["id"] in DISAGREE else []
        out.append(pytest.param(c, id=c["id"], marks=marks))
    return out


@pytest.mark.shared
@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("case", _params())
def test_peer_vector(case: dict[str, Any], stream: bool) -> None:
    text = case["input"]
    whole = run(case, [text], stream)
    if stream and case["id"] in STREAM_TRUNCATED:
        assert_truncated_call(case, parse_result(case, [text], stream))
    else:
        assert whole == normalize(case["expected"])
    assert run(case, list(text), stream) == whole, "one character at a time differs from whole"
    for k in range(1, len(text)):
        assert run(case, [text[:k], text[k:]], stream) == whole, f"split at {k} differs from whole"
    rng = random.Random(zlib.crc32(case["id"].encode()))
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 12)))) if len(text) > 1 else []
        bounds = [0, *cuts, len(text)]
        assert run(case, [text[a:b] for a, b in itertools.pairwise(bounds)], stream) == whole


@pytest.mark.shared
def test_stream_mode_differs_only_on_truncation_vectors() -> None:
    differ = {c["id"] for c in _cases() if c["id"] not in DISAGREE
              and run(c, [c["input"]], True) != run(c, [c["input"]], False)}
    assert differ == STREAM_TRUNCATED


@pytest.mark.shared
@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_overall_rate(stream: bool) -> None:
    cases = _cases()
    by: dict[str, list[int]] = {}
    for c in cases:
        d = by.setdefault(c["dialect"], [0, 0])
        d[1] += 1
        d[0] += (c["id"] in STREAM_TRUNCATED and stream) or run(c, [c["input"]], stream) == normalize(c["expected"])
    total = sum(v[0] for v in by.values())
    assert total / len(cases) >= 0.98, f"overall {total}/{len(cases)}"
    for dialect, (ok, n) in by.items():
        assert ok / n >= 0.9, f"{dialect}: {ok}/{n}"
