"""autoparser's parser inside OpenVINO GenAI's own parser API (two lines for a GenAI user).

GenAI 2026.4.1 runs Python subclasses of ``openvino_genai.Parser`` after generation
(``GenerationConfig.parsers``: the whole text, results in ``DecodedResults.parsed``) and of
``openvino_genai.IncrementalParser`` while streaming (``TextParserStreamer(tokenizer, parsers)``)::

    cfg.parsers = [autoparser.live.GenAIParser(profile, tools=tools)]
    streamer = MyTextParserStreamer(tok, [autoparser.live.GenAIIncrementalParser(profile, tools=tools, tokenizer=tok)])

Conventions (GenAI's, where it has one):

* ``content`` carries the content: the whole-text parser replaces the message's ``content``;
  the incremental parser *returns* the content delta (GenAI puts it under ``content``).
* ``reasoning_content`` carries reasoning (as GenAI's own reasoning parsers do).
* tool calls: the whole-text parser sets ``tool_calls`` to OpenAI-shaped calls (arguments as a JSON
  string). GenAI aborts the process on a non-string value in a streamed delta, so the incremental
  parser writes each *complete* call as one JSON line under ``tool_calls`` (the accumulated message
  holds JSON Lines); :meth:`GenAIIncrementalParser.result` gives the parsed :class:`Result`.
* Token mode: given the GenAI ``tokenizer``, the incremental parser reads ``delta_tokens`` to find
  which parts of ``delta_text`` are special tokens, so a marker that is a special token counts only
  as that token (``autoparser.tokens``), and the end-of-sequence token flushes the parser (GenAI
  has no end-of-stream call for parsers). Without a tokenizer, or when a run ends at
  ``max_new_tokens``, call :meth:`GenAIIncrementalParser.finish` after generation to flush what was
  held back as a possible marker (it returns that last delta).
* ``reset()`` (GenAI calls it between generations) starts a fresh parse. Each instance is guarded
  by a lock, so generation on a worker thread (``asyncio.to_thread``) and a reader of
  :meth:`~GenAIIncrementalParser.result` on the event loop never see a half-applied chunk. Keep a
  reference to every parser for as long as GenAI may call it (GenAI does not own it).

The classes are made on first use (``openvino_genai`` is optional): ``autoparser.live.GenAIParser``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from functools import cache
from typing import Any

from ..events import ContentDelta, Event, ReasoningDelta, ToolCallEnd, ToolCallStart
from ..openai import message_from_result
from ..parse import parse as parse_text
from ..profile import Profile
from ..result import Result
from ._base import require_openvino

__all__ = ["genai_parser_classes"]


def _settings(profile: Profile | str, tools: object, reasoning: str | None,
              policy: Any) -> tuple[Profile, object, str | None, Any]:
    from ..dialects import get_profile

    return get_profile(profile) if isinstance(profile, str) else profile, tools, reasoning, policy


@cache
def genai_parser_classes() -> tuple[type, type]:
    """(GenAIParser, GenAIIncrementalParser), subclassing the installed GenAI's base classes."""
    ov = require_openvino()

    class GenAIParser(ov.Parser):  # type: ignore[misc, name-defined]
        """The whole text, parsed after generation (``GenerationConfig.parsers``)."""

        def __init__(self, profile: Profile | str, tools: object = None, reasoning: str | None = None,
                     policy: Any = None) -> None:
            super().__init__()
            self.profile, self.tools, self.reasoning, self.policy = _settings(profile, tools, reasoning, policy)
            self.last: Result | None = None

        def parse(self, message: dict[str, Any]) -> None:
            res = parse_text(str(message.get("content", "")), self.profile, tools=self.tools,
                             reasoning=self.reasoning, policy=self.policy)
            self.last = res
            message["content"] = res.content  # as parsed (the incremental parser streams the same text)
            if res.reasoning:
                message["reasoning_content"] = res.reasoning
            if res.tool_calls:
                message["tool_calls"] = message_from_result(res)["tool_calls"]

    class GenAIIncrementalParser(ov.IncrementalParser):  # type: ignore[misc, name-defined]
        """Streamed deltas, parsed as they arrive (``TextParserStreamer``)."""

        def __init__(self, profile: Profile | str, tools: object = None, reasoning: str | None = None,
                     policy: Any = None, tokenizer: Any = None) -> None:
            super().__init__()
            self.profile, self.tools, self.reasoning, self.policy = _settings(profile, tools, reasoning, policy)
            self._lock = threading.Lock()
            self._table = None
            self._eos: frozenset[int] = frozenset()
            if tokenizer is not None:
                from ..tokens import from_openvino

                self._table = from_openvino(tokenizer)
                self._eos = frozenset(i for i in (tokenizer.get_eos_token_id(),) if i >= 0)
            self._new()

        def _new(self) -> None:
            special = self._table.strings if self._table is not None else None
            self._parser = self.profile.parser(tools=self.tools, reasoning=self.reasoning, policy=self.policy,
                                               special_tokens=special)
            self._closed = False
            self.events: list[Event] = []

        def parse(self, delta_message: dict[str, Any], delta_text: str,
                  delta_tokens: list[int] | None = None) -> str:
            with self._lock:
                if self._closed:
                    return ""
                events: list[Event] = []
                for text, special in self._pieces(delta_text, delta_tokens):
                    events += self._parser.feed(text, special)
                if delta_tokens and delta_tokens[-1] in self._eos:
                    events += self._close()
                return self._apply(events, delta_message)

        def _pieces(self, delta_text: str, delta_tokens: list[int] | None) -> list[tuple[str, bool]]:
            """``delta_text`` cut where ``delta_tokens`` has special tokens.

            GenAI's ``delta_tokens`` may repeat tokens of text it delivered before (it holds text
            back and then lists the held run), and its ``delta_text`` leaves out the tokens a
            detokenizer skips. So the text is the truth: the ids' visible text must end with it,
            and only that end is taken, split at special tokens; a skipped control token (the
            end of sequence) carries no text. When they disagree the chunk is ordinary text.
            """
            table = self._table
            if table is None or not delta_tokens:
                return [(delta_text, False)] if delta_text else []
            runs: list[tuple[str, bool]] = []
            raw = b""
            for tid in delta_tokens:
                if tid in table.control or tid in table.special:
                    if raw:
                        runs.append((raw.decode("utf-8", errors="replace"), False))
                        raw = b""
                    if tid not in table.control:
                        runs.append((table.special[tid], True))
                else:
                    raw += table.vocab.get(tid, b"")
            if raw:
                runs.append((raw.decode("utf-8", errors="replace"), False))
            whole = "".join(t for t, _ in runs)
            if not whole.endswith(delta_text):
                return [(delta_text, False)] if delta_text else []
            skip = len(whole) - len(delta_text)
            out: list[tuple[str, bool]] = []
            for text, special in runs:
                if skip >= len(text):
                    skip -= len(text)
                    continue
                if skip:  # the new text starts inside this piece: that part cannot be a whole token
                    text, special, skip = text[skip:], False, 0
                out.append((text, special))
            return out

        def _close(self) -> list[Event]:
            self._closed = True
            return self._parser.close()

        def _apply(self, events: Iterable[Event], delta_message: dict[str, Any]) -> str:
            content, reasoning, calls = [], [], []
            for e in events:
                self.events.append(e)
                if isinstance(e, ContentDelta):
                    content.append(e.text)
                elif isinstance(e, ReasoningDelta):
                    reasoning.append(e.text)
                elif isinstance(e, ToolCallEnd):
                    start = next(s for s in self.events if isinstance(s, ToolCallStart) and s.index == e.index)
                    calls.append(json.dumps({"id": start.id, "type": "function", "function": {
                        "name": start.name, "arguments": json.dumps(e.arguments, ensure_ascii=False)}},
                        ensure_ascii=False) + "\n")
            if reasoning:
                delta_message["reasoning_content"] = "".join(reasoning)
            if calls:
                delta_message["tool_calls"] = "".join(calls)
            return "".join(content)

        def finish(self) -> dict[str, str]:
            """End of stream without an end-of-sequence token: flush; returns the last delta (strings)."""
            with self._lock:
                if self._closed:
                    return {}
                delta: dict[str, str] = {}
                content = self._apply(self._close(), delta)
                if content:
                    delta["content"] = content
                return delta

        def result(self) -> Result:
            """The parse so far (complete once the stream ended or :meth:`finish` ran)."""
            with self._lock:
                return self._parser.result()

        def reset(self) -> None:
            with self._lock:
                self._new()

    GenAIParser.__module__ = GenAIIncrementalParser.__module__ = __name__
    return GenAIParser, GenAIIncrementalParser
