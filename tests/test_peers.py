"""The peers' own test vectors (fixtures/peers/), harvested from vLLM, SGLang, llama.cpp, OpenVINO
Model Server and mlx-lm: every vector through the public API whole, one character at a time, at
sampled split points and in random chunkings, with ``stream_arguments=False`` and in the default
streaming mode.

A vector passes when our result matches what the peer's test asserts (only the fields it asserts:
see fixtures/peers/README.md), or, for a documented disagreement (``disagreement`` in the data,
reasons in docs/conformance.md), when it still equals *our* recorded result. Every result must be
the same for every chunking; a vector where the engine breaks that (``known_failure``, with the
diagnosis) is a strict xfail, so a fix shows. Vectors of formats no builtin covers run through the
profile derived from that model's template in ../shared/templates and skip, with the reason, when
../shared is absent. Split points and chunkings are sampled (seeded by the vector id).
"""

from __future__ import annotations

from typing import Any

import pytest
from scripts_loader import load_script

import autoparser
from autoparser.compare import normalize, summary

pv = load_script("peer_vectors")


def _params() -> list[Any]:
    out = []
    for c in pv.vectors():
        marks = [pytest.mark.xfail(strict=True, reason=c["known_failure"])] if c.get("known_failure") else []
        out.append(pytest.param(c, id=c["id"], marks=marks))
    return out


@pytest.mark.parametrize("case", _params())
def test_peer_vector(case: dict[str, Any]) -> None:
    if pv.profile_of(case) is None:
        pytest.skip(f"{pv.TEMPLATES / case['template']} not found (../shared is not beside the repo)")
    whole = summary(pv.parse(case, [case["input"]]))
    disagreement = case.get("disagreement")
    if disagreement:
        assert whole == normalize(disagreement["ours"]), "our documented result changed"
        assert pv.mismatches(case["expected"], whole), "now agrees with the peer: drop the disagreement"
    else:
        assert not pv.mismatches(case["expected"], whole), pv.mismatches(case["expected"], whole)
    streamed = pv.parse(case, [case["input"]], stream=True)
    assert pv.stream_consistent(whole, streamed), f"stream mode: {summary(streamed)}"
    stream_whole = summary(streamed)
    for chunks in pv.chunkings(case):
        assert summary(pv.parse(case, chunks)) == whole, f"chunks {chunks!r} differ from whole"
        assert summary(pv.parse(case, chunks, stream=True)) == stream_whole, f"chunks {chunks!r} (stream)"


def test_peer_setting_gives_the_peers_result() -> None:
    """Where a disagreement names the setting that gives the peer's behaviour, it does."""
    checked = 0
    for case in pv.vectors():
        setting = (case.get("disagreement") or {}).get("peer_setting")
        if setting and pv.profile_of(case) is not None:
            got = summary(pv.parse(case, [case["input"]], setting=setting))
            assert not pv.mismatches(case["expected"], got), (case["id"], setting)
            checked += 1
    assert checked or not any((c.get("disagreement") or {}).get("peer_setting") for c in pv.vectors())


def test_vector_files_are_well_formed() -> None:
    """Ids unique; every vector names a builtin dialect or a ../shared template, and a provenance;
    nothing from Ollama (kept out as a held-out check); reasons are the documented ones."""
    cases = pv.vectors()
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids))
    builtin = {d.name for d in autoparser.dialects()}
    for c in cases:
        assert bool(c.get("dialect")) != bool(c.get("template")), c["id"]
        assert not c.get("dialect") or c["dialect"] in builtin, c["id"]
        assert {"repo", "path", "commit", "test"} <= set(c["provenance"]), c["id"]
        assert c["provenance"]["repo"] != "ollama/ollama", c["id"]
        assert c["expected"], c["id"]
        assert not c.get("disagreement") or c["disagreement"]["reason"] in pv.REASONS, c["id"]
    assert len(cases) >= 900
