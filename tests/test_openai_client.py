"""Streamed equals whole as the client sees it: for every corpus case (``fixtures/corpus`` and, when
present, ``../shared/conformance``), the ``chat.completion.chunk`` stream of ``autoparser.openai``
folded by openai-python's own ``ChatCompletionStreamState`` gives the message
``message_from_result`` builds from the same parse (content ``None`` versus whitespace included),
every chunk validates as openai-python's ``ChatCompletionChunk``, and ``accumulate`` folds the
stream as that client does. Parsed whole, per character and at random splits, arguments streamed
and fail-closed."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from corpus import load_cases

import autoparser
from autoparser.openai import ChunkStream, accumulate, message_from_result

openai_streaming = pytest.importorskip("openai.lib.streaming.chat", reason="needs the openai package (test extra)")
openai_chat = pytest.importorskip("openai.types.chat", reason="needs the openai package (test extra)")

SHARED_CASES = Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "peer-cases.json"


def _shared() -> list[dict[str, Any]]:
    if not SHARED_CASES.exists():
        return []
    cases = json.loads(SHARED_CASES.read_text(encoding="utf-8"))
    for case in cases:
        notes = case.get("notes") or ""
        if "[prompt-opened-reasoning]" in notes or case["dialect"] == "deepseek-r1":
            case["reasoning"] = "prefilled"
    return list(cases)


CASES = [pytest.param(c, id=f"corpus:{c['id']}") for c in load_cases()] + \
    [pytest.param(c, id=f"shared:{c['id']}", marks=pytest.mark.shared) for c in _shared()]


def chunkings(text: str, seed: str) -> list[list[str]]:
    rng = random.Random(seed)
    out = [[text], list(text)]
    if len(text) > 1:
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 8))))
        out.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)])
    return out


def client_message(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The message openai-python's streaming helper folds from the chunks, in message_from_result's
    shape (arguments decoded: their text is the model's formatting, their value the contract)."""
    state = openai_streaming.ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(openai_chat.ChatCompletionChunk.model_validate(chunk))
    message = state.current_completion_snapshot.choices[0].message  # (the final parse refuses length)
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    reasoning = (message.model_extra or {}).get("reasoning_content")
    if reasoning:
        out["reasoning_content"] = reasoning
    if message.tool_calls:
        out["tool_calls"] = [{"id": tc.id, "type": tc.type, "function": {
            "name": tc.function.name, "arguments": json.loads(tc.function.arguments)}} for tc in message.tool_calls]
    return out


def decoded(message: dict[str, Any]) -> dict[str, Any]:
    out = dict(message)
    if "tool_calls" in out:
        out["tool_calls"] = [{**tc, "function": {**tc["function"], "arguments": json.loads(fn["arguments"])}}
                             for tc in out["tool_calls"] for fn in [tc["function"]]]
    return out


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "fail-closed"])
def test_the_client_folds_the_stream_to_the_message(case: dict[str, Any], stream: bool) -> None:
    profile = autoparser.get_profile(case["dialect"])
    for pieces in chunkings(case["input"], case["id"]):
        parser = profile.parser(tools=case.get("tools"), reasoning=case.get("reasoning"), stream_arguments=stream)
        cs = ChunkStream(model="m", id="chatcmpl-1", created=1)
        chunks = cs.start()
        for piece in pieces:
            chunks += cs.push(parser.feed(piece))
        chunks += cs.push(parser.close())
        chunks += cs.finish()
        want = decoded(message_from_result(parser.result()))
        assert client_message(chunks) == want, pieces
        assert decoded(accumulate(chunks)) == want, pieces
