"""OpenAI Chat Completions wire format: the adapter most servers put in front of the engine.

Two views of the same parse must agree, because clients mix them: a server streams
``chat.completion.chunk`` objects while a test, a log or a non-streaming endpoint uses the whole
message. :func:`message_from_result` builds the message from a :class:`~autoparser.result.Result`;
:class:`ChunkStream` turns the engine's events into chunks; :func:`accumulate` folds chunks back
into a message the way an OpenAI client does, so ``accumulate(chunk_stream(events))`` can be
compared with ``message_from_result(result)``.

Conventions chosen here (OpenAI's own behaviour where it has one):

- ``content`` is ``None`` when it is empty and the message has tool calls (what OpenAI returns for
  a pure tool-call turn), and a string — possibly ``""`` — otherwise, so a plain-text client never
  meets ``None`` where it expects text.
- Reasoning goes under ``reasoning_content`` (DeepSeek, vLLM, SGLang, llama.cpp) and only when
  non-empty; ``reasoning_key="reasoning"`` selects the newer vLLM/OpenRouter spelling.
- Streamed tool-call ``index`` values are OpenAI-visible positions, numbered 0, 1, 2... in the
  order calls are first streamed, whatever numbers the engine used. A call that is later
  withdrawn (``ToolCallEnd`` with status ``dropped``) has already reached the client and cannot be
  taken back, so it keeps its index; it only stops counting towards ``finish_reason="tool_calls"``.
  Pass ``hold_calls=True`` to stream each call only once it has ended: dropped calls then never
  reach the client, indices have no ghosts, and the stream matches :func:`message_from_result`
  exactly, at the cost of not streaming argument text as it is generated.

Nothing here does I/O: :func:`sse` and :func:`sse_done` return strings for the caller to write.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from autoparser.events import (
    ContentDelta,
    Event,
    ReasoningDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from autoparser.result import Result

__all__ = [
    "ChunkStream",
    "FinishReason",
    "accumulate",
    "chunk_stream",
    "completion_from_result",
    "finish_reason",
    "message_from_result",
    "sse",
    "sse_done",
]

FinishReason = Literal["stop", "tool_calls", "length"]

_DEFAULT_REASONING_KEY = "reasoning_content"


def _message(
    reasoning: str, content: str, tool_calls: list[dict[str, Any]], reasoning_key: str
) -> dict[str, Any]:
    """The one place that applies the message conventions, so both directions agree by construction."""
    msg: dict[str, Any] = {"role": "assistant", "content": None if (not content and tool_calls) else content}
    if reasoning:
        msg[reasoning_key] = reasoning
    if tool_calls:
        msg["tool_calls"] = tool_calls
    return msg


def message_from_result(result: Result, *, reasoning_key: str = _DEFAULT_REASONING_KEY) -> dict[str, Any]:
    """The assistant message OpenAI's Chat Completions API would return for ``result``.

    Arguments are serialised with :attr:`ToolCall.arguments_json` (``ensure_ascii=False``), which
    is what the wire carries; compare parsed JSON, not strings, against a stream whose argument
    fragments came from the model's own formatting.
    """
    calls = [
        {"id": tc.id, "type": "function", "function": {"name": tc.name, "arguments": tc.arguments_json}}
        for tc in result.tool_calls
    ]
    return _message(result.reasoning, result.content, calls, reasoning_key)


def finish_reason(result: Result) -> FinishReason:
    """``tool_calls`` beats ``length``: a client must run the calls it got even if output was cut."""
    if result.tool_calls:
        return "tool_calls"
    if result.finish == "length":
        return "length"
    return "stop"


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


@dataclass(slots=True)
class _Call:
    """What the stream knows about one engine call; ``wire`` is its OpenAI index once streamed."""

    start: ToolCallStart
    wire: int | None = None
    args: list[str] = field(default_factory=list)  # only kept while held (hold_calls=True)
    dropped: bool = False


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

    The first chunk is ``delta={"role": "assistant", "content": ""}`` (as OpenAI and vLLM send
    it); :meth:`start` emits it early for servers that want to flush headers before the model
    speaks, otherwise the first :meth:`push` or :meth:`finish` does. Adjacent deltas of one kind
    within a single :meth:`push` share a chunk, so a feed that yields many small events costs one
    SSE frame per kind rather than one per event; empty deltas produce nothing.
    """

    def __init__(
        self,
        *,
        model: str,
        id: str | None = None,
        created: int | None = None,
        hold_calls: bool = False,
        include_usage: bool = False,
        reasoning_key: str = _DEFAULT_REASONING_KEY,
    ) -> None:
        self.model = model
        self.id = id if id is not None else _new_id()
        self.created = created if created is not None else int(time.time())
        self.hold_calls = hold_calls
        self.include_usage = include_usage
        self.reasoning_key = reasoning_key
        self._started = False
        self._finished = False
        self._calls: dict[int, _Call] = {}
        self._next_wire = 0
        self._finish_reason: FinishReason | None = None

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
        return [self._chunk({"role": "assistant", "content": ""})]

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

        Calls still held (``hold_calls``) but never ended are flushed first rather than lost.
        ``usage`` adds OpenAI's trailing usage chunk (``choices: []``); it is required when the
        stream was created with ``include_usage=True``, because the client is waiting for it.
        """
        if self._finished:
            raise RuntimeError("ChunkStream.finish() called twice")
        if self.include_usage and usage is None:
            raise ValueError("include_usage=True: finish() needs usage")
        out = self.start()
        deltas: list[dict[str, Any]] = []
        for call in self._calls.values():
            if call.wire is None and not call.dropped:
                self._release(call, "".join(call.args), deltas)
        out.extend(self._chunk(d) for d in deltas)
        self._finished = True
        reason: FinishReason
        if any(c.wire is not None and not c.dropped for c in self._calls.values()):
            reason = "tool_calls"
        elif length:
            reason = "length"
        else:
            reason = "stop"
        self._finish_reason = reason
        out.append(self._chunk({}, reason))
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
            if not ev.text:
                return
            key = "content" if isinstance(ev, ContentDelta) else self.reasoning_key
            last = deltas[-1] if deltas else None
            if last is not None and len(last) == 1 and key in last:
                last[key] += ev.text
            else:
                deltas.append({key: ev.text})
        elif isinstance(ev, ToolCallStart):
            if ev.index in self._calls:
                raise ValueError(f"ToolCallStart for call {ev.index} seen twice")
            call = _Call(ev)
            self._calls[ev.index] = call
            if not self.hold_calls:
                self._release(call, "", deltas)
        elif isinstance(ev, ToolCallArgsDelta):
            call = self._known(ev.index)
            if not ev.text:
                return
            if call.wire is None:
                call.args.append(ev.text)
                return
            last = deltas[-1] if deltas else None
            prev = last.get("tool_calls") if last is not None and len(last) == 1 else None
            if prev is not None and prev[-1]["index"] == call.wire and "id" not in prev[-1]:
                prev[-1]["function"]["arguments"] += ev.text
            else:
                deltas.append({"tool_calls": [{"index": call.wire, "function": {"arguments": ev.text}}]})
        elif isinstance(ev, ToolCallEnd):
            call = self._known(ev.index)
            if ev.status == "dropped":
                call.dropped = True
            elif call.wire is None:
                # Held call: send the final arguments, so the stream equals message_from_result.
                self._release(call, json.dumps(ev.arguments, ensure_ascii=False), deltas)
        else:
            raise TypeError(f"not an autoparser event: {ev!r}")

    def _known(self, index: int) -> _Call:
        call = self._calls.get(index)
        if call is None:
            raise ValueError(f"event for call {index} before its ToolCallStart")
        return call

    def _release(self, call: _Call, arguments: str, deltas: list[dict[str, Any]]) -> None:
        """Give ``call`` the next OpenAI index and stream its opening (and, if held, its arguments)."""
        call.wire = self._next_wire
        self._next_wire += 1
        call.args = []
        deltas.append(
            {
                "tool_calls": [
                    {
                        "index": call.wire,
                        "id": call.start.id,
                        "type": "function",
                        "function": {"name": call.start.name, "arguments": ""},
                    }
                ]
            }
        )
        if arguments:
            deltas.append({"tool_calls": [{"index": call.wire, "function": {"arguments": arguments}}]})


def chunk_stream(
    events: Iterable[Event],
    *,
    model: str,
    id: str | None = None,
    created: int | None = None,
    length: bool = False,
    hold_calls: bool = False,
    usage: Mapping[str, Any] | None = None,
    reasoning_key: str = _DEFAULT_REASONING_KEY,
) -> Iterator[dict[str, Any]]:
    """Lazily convert a whole event sequence (role chunk first, finish chunk last).

    Each event is pushed on its own so chunks come out as soon as events do; use
    :class:`ChunkStream` directly to push a feed's events as one batch.
    """
    cs = ChunkStream(
        model=model,
        id=id,
        created=created,
        hold_calls=hold_calls,
        include_usage=usage is not None,
        reasoning_key=reasoning_key,
    )
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
    """Fold ``chat.completion.chunk`` objects into the assistant message, as an OpenAI client does.

    Only choice 0 is folded; chunks without it (the usage chunk) are skipped. String fields are
    concatenated, tool calls are gathered by ``index`` and returned in index order. Both
    ``reasoning_content`` and ``reasoning`` deltas are read; the message uses ``reasoning_key``.
    The result follows the same conventions as :func:`message_from_result`.
    """
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta: Mapping[str, Any] = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
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
    return _message("".join(reasoning), "".join(content), ordered, reasoning_key)
