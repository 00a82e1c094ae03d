"""The return trip: a parsed answer as the assistant message its own template renders back.

An agent loop parses the model's output, keeps the answer as a message, and renders it into the
next prompt. The message must have the shape the template reads (``Profile.history``, derived from
renders): arguments as a mapping or a JSON string, reasoning under the key the template looks for,
``None`` or ``""`` as the content of a call turn, ids kept or left out. Then
``render(history + [message])`` reproduces what the model wrote, and the model's next turn sees its
own words. ``tests/test_history.py`` checks exactly that on every corpus template that writes calls.

This module is re-exported by :mod:`autoparser.openai` (``history_message``); it does no I/O and
imports no template engine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .profile import HistorySpec, Profile
from .result import Result

__all__ = ["history_message"]

_DEFAULT = HistorySpec(arguments="object", reasoning_field="reasoning_content")
_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking", "thought", "tool_plan")


def history_message(source: Result | Mapping[str, Any], profile: Profile) -> dict[str, Any]:
    """The assistant message to put in the history for ``source``, shaped for ``profile``'s template.

    ``source`` is a :class:`~autoparser.result.Result` (what the parser returned) or an OpenAI
    assistant message (what a client sent back: ``tool_calls`` with JSON-string arguments,
    reasoning under ``reasoning_content``, ``reasoning`` or ``thinking``). A profile without
    ``history`` (builtin dialects, profile files written by hand) gets mapping arguments and
    ``reasoning_content``, the shape most templates read. Raises ``ValueError`` for a message whose
    arguments are not a JSON object.
    """
    spec = profile.history or _DEFAULT
    if isinstance(source, Result):
        reasoning, content = source.reasoning, source.content
        calls = [(tc.id, tc.name, dict(tc.arguments)) for tc in source.tool_calls]
    else:
        reasoning, content, calls = _read_message(source)
    msg: dict[str, Any] = {"role": "assistant"}
    if calls and not content.strip():
        msg["content"] = None if spec.empty_content == "none" else ""
    else:
        msg["content"] = content
    if reasoning.strip() and spec.reasoning_field is not None:
        # the line breaks around a block belong to the template's framing, which writes them again
        msg[spec.reasoning_field] = reasoning.strip()
    if calls:
        msg["tool_calls"] = [_call(call_id, name, args, spec) for call_id, name, args in calls]
    return msg


def _call(call_id: str, name: str, args: dict[str, Any], spec: HistorySpec) -> dict[str, Any]:
    arguments: Any = json.dumps(args, ensure_ascii=False) if spec.arguments == "string" else args
    out: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    # a template that writes the caller's id where the model writes the name (Kimi K2) gets the id
    # only when it carries the name, i.e. when it is the model's own (``functions.NAME:0``)
    keep = call_id and (spec.call_ids or name in call_id)
    return {"id": call_id, **out} if keep else out


def _read_message(msg: Mapping[str, Any]) -> tuple[str, str, list[tuple[str, str, dict[str, Any]]]]:
    content = msg.get("content")
    if isinstance(content, Sequence) and not isinstance(content, str):
        # content parts: the text ones, in order
        content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    reasoning = next((msg[k] for k in _REASONING_KEYS if isinstance(msg.get(k), str)), "")
    calls = []
    for i, tc in enumerate(msg.get("tool_calls") or ()):
        fn = tc.get("function") or {}
        args = fn.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError as e:
                raise ValueError(f"tool_calls[{i}].function.arguments is not valid JSON: {e}") from None
        if not isinstance(args, Mapping):
            raise ValueError(f"tool_calls[{i}].function.arguments must be a JSON object, "
                             f"got {type(args).__name__}")
        calls.append((str(tc.get("id") or ""), str(fn.get("name", "")), dict(args)))
    return reasoning, content if isinstance(content, str) else "", calls
