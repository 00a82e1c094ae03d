"""The two places where the server borrows another part of the library that is being rebuilt.

Each is one function so that switching to the new API is a one-line change here and nothing else
in the server moves: :func:`tool_grammar` (the grammar forcing ``tool_choice``) and
:func:`history_for_template` (the return trip). Tomorrow the latter is the inverse in
``autoparser.openai``, with the profile's own knowledge (arguments as object or string, the
reasoning field the template reads).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from autoparser.errors import AutoparserError
from autoparser.profile import Profile
from autoparser.serve.errors import bad_request
from autoparser.serve.request import ChoiceMode, ToolChoice

__all__ = ["history_for_template", "tool_grammar"]


def tool_grammar(
    profile: Profile,
    tools: Sequence[Mapping[str, Any]],
    choice: ToolChoice,
    *,
    parallel: bool,
    max_calls: int | None,
) -> dict[str, Any] | None:
    """The structured-output spec enforcing ``choice`` in ``profile``'s call format, or None: the
    semantics of :func:`autoparser.grammar.for_request`. A tool set no grammar can force a call
    for is a 400 naming ``tools``."""
    from autoparser.grammar import for_request

    if choice.mode is ChoiceMode.NONE or not tools:
        return None
    openai_choice: object = choice.mode.value
    if choice.mode is ChoiceMode.NAMED:
        openai_choice = {"type": "function", "function": {"name": choice.name}}
    try:
        return for_request(profile, list(tools), openai_choice, parallel_tool_calls=parallel, max_calls=max_calls)
    except AutoparserError as exc:
        raise bad_request(f"no grammar can force a call for these tools: {exc}", "tools") from exc


def history_for_template(
    messages: Sequence[Mapping[str, Any]], *, call_format: Profile | None, renders_calls: bool
) -> list[dict[str, Any]]:
    """``messages`` (checked by :mod:`autoparser.serve.request`) as the template wants them.

    ``developer`` becomes ``system`` (templates predate it). Assistant ``tool_calls`` keep their
    OpenAI shape with ``arguments`` decoded to an object when the template writes calls itself
    (``renders_calls``); otherwise they are written into the content in ``call_format``'s layout,
    so the model sees its earlier calls the way it is asked to write new ones. ``tool`` results
    pass through. Arguments that are not a JSON object are a 400 naming the message.
    """
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        m = dict(msg)
        if m["role"] == "developer":
            m["role"] = "system"
        calls = m.get("tool_calls")
        if calls:
            decoded = [(c["function"]["name"], _arguments(c, f"messages[{i}].tool_calls[{j}]"))
                       for j, c in enumerate(calls)]
            if renders_calls:
                m["tool_calls"] = [{**c, "function": {"name": name, "arguments": args}}
                                   for c, (name, args) in zip(calls, decoded, strict=True)]
            else:
                del m["tool_calls"]
                m["content"] = (m.get("content") or "") + _calls_as_text(call_format, decoded, i)
        out.append(m)
    return out


def _arguments(call: Mapping[str, Any], where: str) -> dict[str, Any]:
    text = call["function"]["arguments"]
    try:
        args = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise bad_request(f"{where}.function.arguments is not valid JSON: {exc}",
                          f"{where}.function.arguments") from exc
    if not isinstance(args, dict):
        raise bad_request(f"{where}.function.arguments must be a JSON object", f"{where}.function.arguments")
    return args


def _calls_as_text(call_format: Profile | None, calls: list[tuple[str, dict[str, Any]]], index: int) -> str:
    from autoparser.grammar import example_calls

    if call_format is None:
        raise bad_request(f"messages[{index}] has tool calls, but this model has no tool-call format",
                          f"messages[{index}].tool_calls")
    try:
        return example_calls(call_format, calls)
    except AutoparserError as exc:
        raise bad_request(f"messages[{index}]: its tool calls cannot be written in this model's format: {exc}",
                          f"messages[{index}].tool_calls") from exc
