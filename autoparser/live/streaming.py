"""Plugging autoparser's streaming parser into ``LLMPipeline.generate``.

Two forms over the same plumbing:

* :func:`stream` returns an iterator of events for a plain ``for`` loop. Generation runs in a
  worker thread (GenAI releases the GIL while generating) and hands text chunks over a queue; the
  parser runs in the consuming thread, so it never needs locking. Leaving the loop early stops
  generation at the next token.
* :func:`generate` runs in the calling thread and calls ``on_event`` for each event as chunks
  arrive (GenAI's own callback style); :class:`ParsingStreamer` is the piece that does it and can
  be passed to ``LLMPipeline.generate`` directly via its ``ov_streamer``.

Token mode (the default, ``tokens=True``): the parser is fed from GenAI's token ids, each piece
flagged with whether it is one special token (``autoparser.tokens`` decodes the ids, holding bytes
until they form whole characters), so a marker that is a special token of this vocabulary counts
only when the model emitted that token; the same characters written as ordinary tokens are text
with a ``lookalike_marker`` issue. ``tokens=False`` streams GenAI's ``TextStreamer`` text instead
(as does a GenAI without ``StreamerBase`` or a tokenizer without ``get_vocab``).

Both stream with ``skip_special_tokens=False``: the parser must see markers that are special
tokens (``<|im_end|>``, and in other models ``<tool_call>`` or ``<think>``), and the profile strips
end-of-turn markers so they never reach users as content. Neither form loses events on failure:
when generation raises, the events parsed so far are delivered, then the parser is closed (which
flushes held-back text and finishes open calls), then the error is raised.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from typing import TYPE_CHECKING, Any, Protocol

from autoparser.events import Event
from autoparser.live._base import LiveError, require_openvino
from autoparser.live.pipeline import LivePipeline
from autoparser.live.structured import build_structured_output
from autoparser.result import Result

if TYPE_CHECKING:
    from autoparser.policy import Policy
    from autoparser.profile import Profile
    from autoparser.tokens import TokenDecoder

__all__ = ["DEFAULT_MAX_NEW_TOKENS", "LiveRun", "LiveStream", "ParsingStreamer", "generate", "piece_streamer", "stream"]

DEFAULT_MAX_NEW_TOKENS = 256
_DETOKENIZATION = {"skip_special_tokens": False}

Prompt = str | Sequence[Mapping[str, Any]]
OnEvent = Callable[[Event], object]
OnPiece = Callable[[str, bool], Any]


class StreamParser(Protocol):
    """The part of autoparser's Parser this module uses."""

    def feed(self, text: str, special: bool = False) -> list[Event]: ...

    def close(self) -> list[Event]: ...

    def result(self) -> Result: ...


@dataclass
class LiveRun:
    """Everything one live generation produced, for callers that want more than the events."""

    prompt: str
    chunks: list[str]
    events: list[Event]
    result: Result
    decoded_text: str | None  # DecodedResults.texts[0] (special tokens always removed by GenAI)
    finish_reason: str | None
    num_generated_tokens: int | None
    seconds: float
    #: what the parser was fed: ``(text, special)`` per piece (``special`` is always False in text mode)
    pieces: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The raw streamed text, special tokens included."""
        return "".join(self.chunks)

    @property
    def tokens_per_second(self) -> float | None:
        return self.num_generated_tokens / self.seconds if self.num_generated_tokens and self.seconds > 0 else None


@dataclass
class _Prepared:
    """A run's inputs resolved against the pipeline: prompt text, config, and a fresh parser."""

    prompt: str
    config: Any
    parser: StreamParser
    restore: Callable[[], None] = field(default=lambda: None)
    decoder: TokenDecoder | None = None  # token mode: ids to (text, special) pieces


def _prepare(live: LivePipeline, messages_or_prompt: Prompt, *, tools: Sequence[Mapping[str, Any]] | None,
             generation_config: Any, reasoning: str | None, profile: Profile | str | None, prefill: str,
             policy: Policy | str | None, tokens: bool = True) -> _Prepared:
    ov = require_openvino()
    prompt = messages_or_prompt if isinstance(messages_or_prompt, str) else live.render(messages_or_prompt, tools=tools)
    prompt += prefill
    prof = live.profile_for(profile)
    if reasoning is None and prefill and _opens_reasoning(prof, prefill):
        reasoning = "prefilled"  # the prompt itself opened the block: the output starts inside it
    # token mode needs GenAI's StreamerBase and a tokenizer that lists its vocabulary
    can = hasattr(ov, "StreamerBase") and hasattr(live.tokenizer, "get_vocab")
    table = live.token_table() if tokens and can else None
    parser: StreamParser = prof.parser(tools=tools, reasoning=reasoning, policy=policy,
                                       special_tokens=table.strings if table is not None else None)
    config, restore = _config(ov, generation_config)
    return _Prepared(prompt=prompt, config=config, parser=parser, restore=restore,
                     decoder=table.decoder() if table is not None else None)


@cache
def _token_streamer_class(ov: Any) -> type:
    """A ``StreamerBase`` subclass that decodes ids itself (made on first use: GenAI is optional)."""

    class TokenStreamer(ov.StreamerBase):  # type: ignore[misc]
        def __init__(self, decoder: TokenDecoder, on_piece: OnPiece) -> None:
            super().__init__()
            self._decoder = decoder
            self._on_piece = on_piece

        def write(self, token: Any) -> Any:
            status = ov.StreamingStatus.RUNNING
            for text, special in self._decoder.feed([token] if isinstance(token, int) else list(token)):
                answer = self._on_piece(text, special)
                if answer in (ov.StreamingStatus.STOP, ov.StreamingStatus.CANCEL):
                    status = answer
            return status

        def end(self) -> None:
            for text, special in self._decoder.flush():
                self._on_piece(text, special)

    return TokenStreamer


def piece_streamer(ov: Any, tokenizer: Any, decoder: TokenDecoder | None, on_piece: OnPiece) -> Any:
    """GenAI's streamer for ``on_piece(text, special)``: ids decoded here (token mode, with a
    ``decoder``), or its ``TextStreamer``. ``on_piece`` returns a ``StreamingStatus`` (STOP or
    CANCEL end generation)."""
    if decoder is not None:
        return _token_streamer_class(ov)(decoder, on_piece)
    return ov.TextStreamer(tokenizer, lambda text: on_piece(text, False), _DETOKENIZATION)


def _opens_reasoning(profile: Profile, prefill: str) -> bool:
    tail, spec = prefill.rstrip(), profile.reasoning
    return spec is not None and any(tail.endswith(marker.rstrip()) for marker in spec.open)


def _config(ov: Any, generation_config: Any) -> tuple[Any, Callable[[], None]]:
    """A GenerationConfig that never re-applies the chat template, and how to undo our change.

    GenAI applies the template again to ``str`` prompts by default (``apply_chat_template`` is
    True), which wraps an already rendered prompt a second time. Accepts None (defaults), a
    mapping of GenerationConfig fields (``structured_output`` may hold a spec dict, see
    :mod:`autoparser.live.structured`) or a GenerationConfig, whose flag is restored afterwards
    because GenAI configs cannot be copied.
    """
    if generation_config is None:
        return ov.GenerationConfig(max_new_tokens=DEFAULT_MAX_NEW_TOKENS, apply_chat_template=False), lambda: None
    if isinstance(generation_config, Mapping):
        fields = dict(generation_config)
        spec = fields.pop("structured_output", None)
        fields.setdefault("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)
        fields["apply_chat_template"] = False
        _check_fields(ov, fields)
        cfg = ov.GenerationConfig(**fields)
        if spec is not None:
            cfg.structured_output_config = build_structured_output(spec)
        return cfg, lambda: None
    previous = generation_config.apply_chat_template
    generation_config.apply_chat_template = False
    return generation_config, lambda: setattr(generation_config, "apply_chat_template", previous)


def _check_fields(ov: Any, fields: Mapping[str, Any]) -> None:
    """Reject misspelt options: GenAI 2026.4.1 accepts unknown GenerationConfig keywords silently."""
    probe = ov.GenerationConfig()
    known = {n for n in dir(probe) if not n.startswith("_") and not callable(getattr(probe, n))}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise LiveError(f"unknown generation option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")


def _finish(results: Any) -> tuple[str | None, str | None, int | None]:
    """Decoded text, finish reason and token count from DecodedResults (tolerant of missing parts)."""
    if results is None:
        return None, None, None
    texts = getattr(results, "texts", None)
    decoded = str(texts[0]) if texts else None
    reasons = getattr(results, "finish_reasons", None)
    reason = str(reasons[0]).rsplit(".", 1)[-1].lower() if reasons else None
    try:
        n = int(results.perf_metrics.get_num_generated_tokens())
    except (AttributeError, RuntimeError):
        n = None
    return decoded, reason, n


class _Record:
    """One run's record, the same for both forms: the pieces fed to the parser, its events, the LiveRun."""

    def __init__(self, parser: StreamParser, prompt: str = "") -> None:
        self.parser = parser
        self.prompt = prompt
        self.chunks: list[str] = []
        self.pieces: list[tuple[str, bool]] = []
        self.events: list[Event] = []
        self._closed = False

    def _feed(self, text: str, special: bool) -> list[Event]:
        self.chunks.append(text)
        self.pieces.append((text, special))
        return self.parser.feed(text, special)

    def _close_parser(self) -> list[Event]:
        if self._closed:
            return []
        self._closed = True
        return self.parser.close()

    def _run(self, results: Any, seconds: float) -> LiveRun:
        decoded, reason, n = _finish(results)
        return LiveRun(self.prompt, self.chunks, self.events, self.parser.result(), decoded, reason, n, seconds,
                       self.pieces)

    def result(self) -> Result:
        """The parsed message (complete once the stream has ended)."""
        return self.parser.result()


def _generate(live: LivePipeline, prep: _Prepared, streamer: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """Generate under the pipeline's lock, then undo our config change: (DecodedResults, None), or
    (None, the error) for the caller to raise once the parser is closed."""
    try:
        with live.lock:
            return live.pipeline.generate([prep.prompt], prep.config, streamer()), None
    except BaseException as exc:
        return None, exc
    finally:
        prep.restore()


# -- callback form ----------------------------------------------------------------------------


class ParsingStreamer(_Record):
    """Feeds each streamed chunk to a parser and hands the events to ``on_event``.

    Pass ``ov_streamer`` to ``LLMPipeline.generate``. Exceptions raised by the parser or by
    ``on_event`` inside GenAI's callback are caught, stop generation, and are kept in ``error``;
    :func:`generate` re-raises them after generation, so they keep their type and traceback.
    """

    def __init__(self, tokenizer: Any, parser: StreamParser, on_event: OnEvent | None = None,
                 decoder: TokenDecoder | None = None) -> None:
        super().__init__(parser)
        ov = require_openvino()
        self._ov = ov
        self.on_event = on_event
        self.error: BaseException | None = None
        self._error_in_callback = False
        self._stop = threading.Event()
        self.ov_streamer = piece_streamer(ov, tokenizer, decoder, self._on_piece)

    def stop(self) -> None:
        """Ask generation to end at the next token (the text so far is kept)."""
        self._stop.set()

    def _emit(self, events: list[Event]) -> None:
        self.events.extend(events)
        if self.on_event is not None:
            for event in events:
                self.on_event(event)

    def _on_piece(self, text: str, special: bool) -> Any:
        if self.error is not None:
            return self._ov.StreamingStatus.STOP
        try:
            self._emit(self._feed(text, special))
        except BaseException as exc:  # handed back to the caller after generation
            self.error = exc
            self._error_in_callback = True
            return self._ov.StreamingStatus.STOP
        return self._ov.StreamingStatus.STOP if self._stop.is_set() else self._ov.StreamingStatus.RUNNING

    def close(self) -> list[Event]:
        """End of stream: flush the parser. Idempotent."""
        events = self._close_parser()
        if self._error_in_callback:  # on_event may be what failed: do not call it again
            self.events.extend(events)
        else:
            self._emit(events)
        return events


def generate(live: LivePipeline, messages_or_prompt: Prompt, *, on_event: OnEvent | None = None,
             tools: Sequence[Mapping[str, Any]] | None = None, generation_config: Any = None,
             reasoning: str | None = None, profile: Profile | str | None = None, prefill: str = "",
             policy: Policy | str | None = None, tokens: bool = True) -> LiveRun:
    """Generate in the calling thread, calling ``on_event`` for every event as text streams in.

    A ``str`` is a fully rendered prompt; a list of messages is rendered with the model's template
    (with ``tools``). ``prefill`` is appended to the prompt (the model continues from it; a prefill
    ending in a reasoning open marker makes the parser start inside the block). ``profile``
    overrides the pipeline's profile, e.g. for a wire format forced by structured output.
    ``tokens`` feeds the parser from the token ids (token mode, see the module docstring).
    """
    prep = _prepare(live, messages_or_prompt, tools=tools, generation_config=generation_config, reasoning=reasoning,
                    profile=profile, prefill=prefill, policy=policy, tokens=tokens)
    streamer = ParsingStreamer(live.tokenizer, prep.parser, on_event, prep.decoder)
    streamer.prompt = prep.prompt
    start = time.perf_counter()
    results, failure = _generate(live, prep, lambda: streamer.ov_streamer)  # the parser is closed first
    seconds = time.perf_counter() - start
    failure = streamer.error or failure
    streamer.close()
    if failure is not None:
        raise failure
    return streamer._run(results, seconds)


# -- iterator form ----------------------------------------------------------------------------

_CHUNK, _ERROR, _DONE = "chunk", "error", "done"


class _Worker:
    """The generation thread's side of a :class:`LiveStream`.

    It deliberately holds no reference to the stream object, so a stream abandoned mid-loop (a
    ``break``) is collected at once and its ``__del__`` can stop generation.
    """

    def __init__(self, ov: Any, live: LivePipeline, prep: _Prepared) -> None:
        self.ov = ov
        self.live = live
        self.prep = prep
        self.queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name="autoparser-live", daemon=True)

    def on_piece(self, text: str, special: bool) -> Any:
        self.queue.put((_CHUNK, (text, special)))
        return self.ov.StreamingStatus.STOP if self.stop.is_set() else self.ov.StreamingStatus.RUNNING

    def run(self) -> None:
        make = partial(piece_streamer, self.ov, self.live.tokenizer, self.prep.decoder, self.on_piece)
        results, error = _generate(self.live, self.prep, make)
        if error is not None:  # handed to the consumer thread
            self.queue.put((_ERROR, error))
        self.queue.put((_DONE, results))


class LiveStream(_Record, Iterator[Event]):
    """An iterator of parser events over a generation running in a worker thread.

    Generation starts on the first ``next()``. After the loop, :meth:`result` is the parsed
    message and :attr:`run` the full record (chunks, decoded text, speed). Leaving the loop early
    stops generation at the next token: explicitly with :meth:`close` or ``with``, implicitly when
    the abandoned stream is garbage-collected.
    """

    def __init__(self, live: LivePipeline, prep: _Prepared) -> None:
        super().__init__(prep.parser, prep.prompt)
        self._worker = _Worker(require_openvino(), live, prep)
        self._started = False
        self._pending: list[Event] = []
        self._error: BaseException | None = None
        self._finished = False
        self._start = 0.0
        self.run: LiveRun | None = None

    def __iter__(self) -> LiveStream:
        return self

    def __next__(self) -> Event:
        if not self._started:
            self._started = True
            self._start = time.perf_counter()
            self._worker.thread.start()
        while not self._pending:
            if self._finished:
                if self._error is not None:
                    error, self._error = self._error, None
                    raise error
                raise StopIteration
            self._step()
        event = self._pending.pop(0)
        self.events.append(event)
        return event

    def _step(self) -> None:
        """Take one item from the worker and turn it into pending events."""
        kind, payload = self._worker.queue.get()
        try:
            if kind == _CHUNK:
                self._pending.extend(self._feed(*payload))
            elif kind == _ERROR:
                self._error = payload  # keep reading: _DONE follows, then close() flushes the parser
            else:
                self._finished = True
                self._pending.extend(self._close_parser())
                self.run = self._run(payload, time.perf_counter() - self._start)
        except BaseException:
            self.close()  # the parser failed (e.g. strict policy): stop generating, then propagate
            raise

    def close(self) -> None:
        """Stop generation (at the next token) and wait for the worker; unread events are dropped."""
        self._worker.stop.set()
        if self._started:
            self._worker.thread.join()
        self._finished = True
        self._pending.clear()

    def __del__(self) -> None:
        # Only signal: joining a thread from a finaliser could block the collecting thread.
        self._worker.stop.set()

    def __enter__(self) -> LiveStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stream(live: LivePipeline, messages_or_prompt: Prompt, *, tools: Sequence[Mapping[str, Any]] | None = None,
           generation_config: Any = None, reasoning: str | None = None, profile: Profile | str | None = None,
           prefill: str = "", policy: Policy | str | None = None, tokens: bool = True) -> LiveStream:
    """Stream parsed events from a live generation; use in a plain ``for`` loop.

    Arguments as for :func:`generate`. On an exception inside generation the events parsed so far
    are yielded, then the parser is closed and its final events yielded, then the error is raised.
    """
    prep = _prepare(live, messages_or_prompt, tools=tools, generation_config=generation_config, reasoning=reasoning,
                    profile=profile, prefill=prefill, policy=policy, tokens=tokens)
    return LiveStream(live, prep)
