"""transformers response_template export, run by transformers' own parser on the peer vectors.

Agreement with autoparser is recorded per dialect in docs/integrations.md; this test keeps the
rates from silently dropping (each dialect must reach at least its recorded count).
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

import autoparser
from autoparser.export import ExportError, emit, response_template

chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")

PEERS = Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "peer-cases.json"
#: agreeing vectors per dialect at the time of writing (docs/integrations.md lists the rest)
RECORDED = {
    "command-r": 1, "deepseek-r1": 2, "deepseek-v3": 2, "deepseek-v3.1": 5, "deepseek-v3.2": 4,
    "deepseek-v4": 1, "ernie": 1, "functiongemma": 9, "gemma4": 18, "glm": 22, "granite": 6,
    "hermes": 16, "jamba": 1, "kimi-k2": 16, "llama3-json": 2, "minimax-m2": 9, "minimax-m3": 1,
    "mistral": 10, "phi4": 4, "pythonic": 7, "qwen3-coder": 16, "think": 10,
}


def _norm(s: Any) -> str:
    return re.sub(r"\s+", " ", s or "").strip()


def _prefilled(case: dict[str, Any]) -> bool:
    return "[prompt-opened-reasoning]" in (case.get("notes") or "") or case["dialect"] == "deepseek-r1"


def ours(case: dict[str, Any]) -> dict[str, Any]:
    r = autoparser.parse(case["input"], case["dialect"], tools=case.get("tools"),
                         reasoning="prefilled" if _prefilled(case) else None)
    return {"reasoning": _norm(r.reasoning), "content": _norm(r.content),
            "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in r.tool_calls]}


def theirs(case: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    prof = autoparser.get_profile(case["dialect"])
    prefix = prof.reasoning.open[0] if _prefilled(case) and prof.reasoning and prof.reasoning.open else ""
    try:
        m = chat_parsing.parse_response(case["input"], template, prefix=prefix, tools=case.get("tools"))
    except Exception as e:  # transformers raises on malformed regions; that is a disagreement
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"}
    calls = []
    for tc in m.get("tool_calls") or []:
        for c in tc if isinstance(tc, list) else [tc]:
            fn = c.get("function", c)
            args = fn.get("arguments")
            if isinstance(args, str):
                with contextlib.suppress(ValueError):
                    args = json.loads(args)
            calls.append({"name": fn.get("name"), "arguments": args})
    return {"reasoning": _norm(m.get("thinking")), "content": _norm(m.get("content")), "tool_calls": calls}


def agreement() -> dict[str, tuple[int, int, list[tuple[str, dict[str, Any], dict[str, Any]]]]]:
    """Per dialect: (agreeing, total, disagreements)."""
    cases = json.loads(PEERS.read_text(encoding="utf-8"))
    out: dict[str, tuple[int, int, list[tuple[str, dict[str, Any], dict[str, Any]]]]] = {}
    for c in cases:
        d = c["dialect"]
        try:
            tmpl = response_template(autoparser.get_profile(d)).template
        except ExportError:
            continue
        a, b = ours(c), theirs(c, tmpl)
        ok, n, dis = out.get(d, (0, 0, []))
        out[d] = (ok + (a == b), n + 1, dis if a == b else [*dis, (c["id"], a, b)])
    return out


def test_every_template_loads_in_transformers() -> None:
    from transformers.utils.chat_parsing.response_templates import load_response_template

    for d in autoparser.dialects():
        p = autoparser.get_profile(d.name)
        if p.messages is not None:
            with pytest.raises(ExportError, match="Harmony"):
                response_template(p)
            continue
        load_response_template(response_template(p).template)
        assert json.loads(emit(p, "response-template"))["response_template"]["fields"]


def test_hermes_round_trip_with_prefix() -> None:
    tmpl = response_template(autoparser.get_profile("hermes")).template
    m = chat_parsing.parse_response('<think>hmm</think>Hi<tool_call>\n{"name": "f", "arguments": {"a": 1}}'
                                    '\n</tool_call><|im_end|>', tmpl, prefix="<|im_start|>assistant\n")
    assert m["thinking"] == "hmm" and m["content"] == "Hi"
    assert m["tool_calls"] == [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]
    # a prompt that opened the block: the anchor keeps the open marker
    m = chat_parsing.parse_response("hmm</think>Hi", tmpl, prefix="<|im_start|>assistant\n<think>\n")
    assert m["thinking"] == "hmm" and m["content"] == "Hi"


def test_losses_are_listed() -> None:
    exp = response_template(autoparser.get_profile("mistral"))
    assert any("alternative call spelling" in x for x in exp.losses)


@pytest.mark.shared
@pytest.mark.skipif(not PEERS.is_file(), reason="../shared is absent")
def test_agreement_with_transformers_does_not_drop() -> None:
    got = agreement()
    low = {d: (got[d][0], want) for d, want in RECORDED.items() if got[d][0] < want}
    assert not low, f"agreement dropped below the recorded count: {low}"
