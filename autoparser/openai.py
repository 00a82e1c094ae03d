"""OpenAI Chat Completions wire format: the adapter most servers put in front of the engine.

Two views of the same parse must agree, because clients mix them: a server streams
``chat.completion.chunk`` objects while a test, a log or a non-streaming endpoint uses the whole
message. :func:`message_from_result` builds the message from a :class:`~autoparser.result.Result`;
:class:`ChunkStream` turns the engine's events into chunks; :func:`accumulate` folds chunks back
into a message the way an OpenAI client does, so ``accumulate(chunk_stream(events))`` can be
compared with ``message_from_result(result)``. The other direction, :func:`history_message`, turns a
parsed result or a client's assistant message into the message the model's own template renders
back exactly as the model wrote it (the return trip; ``Profile.history``).

Conventions chosen here (OpenAI's own behaviour where it has one):

- ``content`` is ``None`` when it is empty or whitespace only and the message has tool calls (what
  OpenAI returns for a pure tool-call turn, such as the newline a model writes between
  ``</think>`` and a call), and a string — possibly ``""`` — otherwise, so a plain-text client
  never meets ``None`` where it expects text. The stream says the same to a client that folds it
  (openai-python's ``ChatCompletionStreamState``): the role chunk carries no content, content
  that is whitespace only is held until visible text follows it, and at the end it is sent
  (``""`` if there was none) only when the message has no tool calls.
- Reasoning goes under ``reasoning_content`` (DeepSeek, vLLM, SGLang, llama.cpp) and only when
  non-empty; ``reasoning_key="reasoning"`` selects the newer vLLM/OpenRouter spelling.
- Streamed tool-call ``index`` values are OpenAI-visible positions, numbered 0, 1, 2... in the
  order calls start, whatever numbers the engine used, so a client indexing an array never meets
  a gap. The engine never withdraws a call it announced, so every streamed call is a call of the
  result. With ``stream_arguments=True`` (the default) a call is announced once its name is
  certain and its arguments follow as ``function.arguments`` fragments while the model writes
  them; a call the output cut off ends with status ``truncated`` and makes ``finish_reason``
  ``length`` (OpenAI's contract: the last call may be incomplete). Otherwise any streamed call
  makes it ``tool_calls`` (which beats a token limit hit after complete calls).
- ``ToolCallEnd`` adds no chunk: OpenAI has no end-of-call delta, and the arguments it carries
  equal the concatenated fragments already sent. Unknown tools (``known=False``) are forwarded
  like any other call; rejecting them is the server's decision, not the wire format's.

Nothing here does I/O: :func:`sse` and :func:`sse_done` return strings for the caller to write.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal

from autoparser.events import (
    ContentDelta,
    Event,
    ReasoningDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from autoparser.history import history_message
from autoparser.result import Result

__all__ = [
    "ChunkStream",
    "FinishReason",
    "accumulate",
    "chunk_stream",
    "completion_from_result",
    "finish_reason",
    "history_message",
    "message_from_result",
    "sse",
    "sse_done",
    "tool_calls_from_result",
]

FinishReason = Literal["stop", "tool_calls", "length"]

_DEFAULT_REASONING_KEY = "reasoning_content"


def _blank(text: str) -> bool:
    """Content a message with tool calls drops (``content: None``): the one test, used by the
    message and by the stream."""
    return not text.strip()


def _message(
    reasoning: str, content: str | None, tool_calls: list[dict[str, Any]], reasoning_key: str
) -> dict[str, Any]:
    """An assistant message; ``content`` None becomes ``None`` only as the conventions say."""
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning:
        msg[reasoning_key] = reasoning
    if tool_calls:
        msg["tool_calls"] = tool_calls
    return msg


def message_from_result(result: Result, *, reasoning_key: str = _DEFAULT_REASONING_KEY) -> dict[str, Any]:
    """The assistant message OpenAI's Chat Completions API would return for ``result`` (``content``
    as the module's conventions say). Arguments are serialised with :attr:`ToolCall.arguments_json`
    (``ensure_ascii=False``), which is what the wire carries; compare parsed JSON, not strings,
    against a stream whose argument fragments came from the model's own formatting.
    """
    calls = tool_calls_from_result(result)
    content = None if calls and _blank(result.content) else result.content
    return _message(result.reasoning, content, calls, reasoning_key)


def tool_calls_from_result(result: Result) -> list[dict[str, Any]]:
    """The message's ``tool_calls`` list (OpenAI shape, arguments as JSON text): the one spelling
    of a call on the wire, shared by messages, completions and batch output."""
    return [{"id": tc.id, "type": "function", "function": {"name": tc.name, "arguments": tc.arguments_json}}
            for tc in result.tool_calls]


def finish_reason(result: Result) -> FinishReason:
    return _finish(any(tc.status == "truncated" for tc in result.tool_calls), bool(result.tool_calls),
                   result.finish == "length")


def _finish(truncated_call: bool, calls: bool, length: bool) -> FinishReason:
    """``length`` for a call cut off by the end of the output; else ``tool_calls`` beats ``length``:
    a client must run the complete calls it got even if the output was cut after them."""
    if truncated_call:
        return "length"
    return "tool_calls" if calls else "length" if length else "stop"


def completion_from_result(
    result: Result,
    *,
    model: str,
    id: str | None = None,
    created: int | None = None,
    usage: Mapping[str, Any] | None = None,
    reasoning_key: str = _DEFAULT_REASONING_KEY,
) -> dict[str, Any]:
    """A whole non-streaming ``chat.completion`` object, for servers that answer ``stream=false``."""
    out: dict[str, Any] = {
        "id": id if id is not None else _new_id(),
        "object": "chat.completion",
        "created": created if created is not None else int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message_from_result(result, reasoning_key=reasoning_key),
                "logprobs": None,
                "finish_reason": finish_reason(result),
            }
        ],
    }
    if usage is not None:
        out["usage"] = dict(usage)
    return out


def _new_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex


class ChunkStream:
    """Incremental event → ``chat.completion.chunk`` converter for one choice (``n=1``).

    Usage in a server::

        cs = ChunkStream(model="m")
        for text in generation:
            for chunk in cs.push(parser.feed(text)):
                write(sse(chunk))
        for chunk in [*cs.push(parser.close()), *cs.finish(length=hit_token_limit)]:
            write(sse(chunk))
        write(sse_done())

    The first chunk is ``delta={"role": "assistant", "content": None}``; :meth:`start` emits it
    early for servers that want to flush headers before the model speaks, otherwise the first
    :meth:`push` or :meth:`finish` does. Whitespace-only content is held as the module's
    conventions say, so a client folding the chunks gets :func:`message_from_result`'s. Adjacent
    deltas of one kind within a single :meth:`push` share a chunk, so a feed that yields many small
    events costs one SSE frame per kind rather than one per event; empty deltas produce nothing.
    """

    def __init__(
        self,
        *,
        model: str,
        id: str | None = None,
        created: int | None = None,
        include_usage: bool = False,
        reasoning_key: str = _DEFAULT_REASONING_KEY,
    ) -> None:
        self.model = model
        self.id = id if id is not None else _new_id()
        self.created = created if created is not None else int(time.time())
        self.include_usage = include_usage
        self.reasoning_key = reasoning_key
        self._started = False
        self._finished = False
        self._wire: dict[int, int] = {}  # engine call index -> OpenAI index
        self._finish_reason: FinishReason | None = None
        self._truncated_call = False
        self._blank: list[str] = []  # whitespace-only content not sent yet
        self._visible = False        # content with visible text has been sent

    # -- public -----------------------------------------------------------------------------------

    @property
    def finish_reason(self) -> FinishReason | None:
        """The reason sent in the last chunk; ``None`` until :meth:`finish`."""
        return self._finish_reason

    def start(self) -> list[dict[str, Any]]:
        """The role chunk, once; later calls return nothing."""
        if self._started:
            return []
        self._started = True
        return [self._chunk({"role": "assistant", "content": None})]

    def push(self, events: Iterable[Event]) -> list[dict[str, Any]]:
        """Chunks for ``events`` (what one ``feed()`` or ``close()`` returned)."""
        if self._finished:
            raise RuntimeError("ChunkStream.push() after finish()")
        out = self.start()
        deltas: list[dict[str, Any]] = []
        for ev in events:
            self._apply(ev, deltas)
        out.extend(self._chunk(d) for d in deltas)
        return out

    def finish(self, *, length: bool = False, usage: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The closing chunk(s). ``length=True``: generation stopped at the token limit.

        ``usage`` adds OpenAI's trailing usage chunk (``choices: []``); it is required when the
        stream was created with ``include_usage=True``, because the client is waiting for it.
        """
        if self._finished:
            raise RuntimeError("ChunkStream.finish() called twice")
        if self.include_usage and usage is None:
            raise ValueError("include_usage=True: finish() needs usage")
        out = self.start()
        self._finished = True
        if not self._visible and not self._wire:  # no call: the content as it is, even empty
            out.append(self._chunk({"content": "".join(self._blank)}))
        self._blank = []
        self._finish_reason = _finish(self._truncated_call, bool(self._wire), length)
        out.append(self._chunk({}, self._finish_reason))
        if usage is not None:
            final: dict[str, Any] = self._envelope([])
            final["usage"] = dict(usage)
            out.append(final)
        return out

    # -- internals --------------------------------------------------------------------------------

    def _envelope(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        if self.include_usage:
            chunk["usage"] = None
        return chunk

    def _chunk(self, delta: dict[str, Any], reason: FinishReason | None = None) -> dict[str, Any]:
        return self._envelope([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}])

    def _apply(self, ev: Event, deltas: list[dict[str, Any]]) -> None:
        """Append ``ev``'s delta to ``deltas``, merging with the previous one when they are alike."""
        if isinstance(ev, ContentDelta | ReasoningDelta):
            text = ev.text
            if not text:
                return
            if isinstance(ev, ContentDelta) and not self._visible:
                if _blank(text):  # it may still be the whitespace of a tool-call turn: held
                    self._blank.append(text)
                    return
                self._visible = True
                text = "".join(self._blank) + text
                self._blank = []
            key = "content" if isinstance(ev, ContentDelta) else self.reasoning_key
            last = deltas[-1] if deltas else None
            if last is not None and len(last) == 1 and key in last:
                last[key] += text
            else:
                deltas.append({key: text})
        elif isinstance(ev, ToolCallStart):
            if ev.index in self._wire:
                raise ValueError(f"ToolCallStart for call {ev.index} seen twice")
            wire = self._wire[ev.index] = len(self._wire)
            function = {"name": ev.name, "arguments": ""}
            deltas.append(
                {"tool_calls": [{"index": wire, "id": ev.id, "type": "function", "function": function}]}
            )
        elif isinstance(ev, ToolCallArgsDelta):
            wire = self._known(ev.index)
            if not ev.text:
                return
            last = deltas[-1] if deltas else None
            prev = last.get("tool_calls") if last is not None and len(last) == 1 else None
            if prev is not None and prev[-1]["index"] == wire and "id" not in prev[-1]:
                prev[-1]["function"]["arguments"] += ev.text
            else:
                deltas.append({"tool_calls": [{"index": wire, "function": {"arguments": ev.text}}]})
        elif isinstance(ev, ToolCallEnd):
            self._known(ev.index)
            if ev.status == "truncated":
                self._truncated_call = True
        else:
            raise TypeError(f"not an autoparser event: {ev!r}")

    def _known(self, index: int) -> int:
        wire = self._wire.get(index)
        if wire is None:
            raise ValueError(f"event for call {index} before its ToolCallStart")
        return wire


def chunk_stream(
    events: Iterable[Event],
    *,
    model: str,
    id: str | None = None,
    created: int | None = None,
    length: bool = False,
    usage: Mapping[str, Any] | None = None,
    reasoning_key: str = _DEFAULT_REASONING_KEY,
) -> Iterator[dict[str, Any]]:
    """Lazily convert a whole event sequence (role chunk first, finish chunk last).

    Each event is pushed on its own so chunks come out as soon as events do; use
    :class:`ChunkStream` directly to push a feed's events as one batch.
    """
    cs = ChunkStream(model=model, id=id, created=created, include_usage=usage is not None, reasoning_key=reasoning_key)
    yield from cs.start()
    for ev in events:
        yield from cs.push((ev,))
    yield from cs.finish(length=length, usage=usage)


def sse(chunk: Mapping[str, Any]) -> str:
    """One Server-Sent Events frame. JSON escapes every newline, so the payload is a single line."""
    return "data: " + json.dumps(chunk, ensure_ascii=False, separators=(",", ":")) + "\n\n"


def sse_done() -> str:
    """The terminator OpenAI sends after the last chunk."""
    return "data: [DONE]\n\n"


def accumulate(
    chunks: Iterable[Mapping[str, Any]], *, reasoning_key: str = _DEFAULT_REASONING_KEY
) -> dict[str, Any]:
    """Fold ``chat.completion.chunk`` objects into the assistant message, as an OpenAI client does
    (openai-python's ``ChatCompletionStreamState``; a test checks the two agree).

    Only choice 0 is folded; chunks without it (the usage chunk) are skipped. String fields are
    concatenated (``content`` stays ``None`` until a chunk carries a string), tool calls are
    gathered by ``index`` and returned in index order. Both ``reasoning_content`` and
    ``reasoning`` deltas are read; the message uses ``reasoning_key``. Nothing is normalised: a
    stream from :class:`ChunkStream` folds to :func:`message_from_result` by construction.
    """
    content: list[str] | None = None
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta: Mapping[str, Any] = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                content = (content or []) + [delta["content"]]
            for key in ("reasoning_content", "reasoning"):
                if delta.get(key):
                    reasoning.append(delta[key])
            for tc in delta.get("tool_calls") or ():
                slot = calls.setdefault(
                    tc["index"], {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                )
                if tc.get("id"):
                    slot["id"] = tc["id"]
                if tc.get("type"):
                    slot["type"] = tc["type"]
                fn: Mapping[str, Any] = tc.get("function") or {}
                if fn.get("name"):
                    slot["function"]["name"] += fn["name"]
                if fn.get("arguments"):
                    slot["function"]["arguments"] += fn["arguments"]
    ordered = [calls[i] for i in sorted(calls)]
    return _message("".join(reasoning), None if content is None else "".join(content), ordered, reasoning_key)
