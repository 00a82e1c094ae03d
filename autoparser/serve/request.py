"""Reading a ``POST /v1/chat/completions`` body into a checked, immutable :class:`ChatRequest`.

Why a module of its own: every field a client can get wrong is checked here, before anything
touches the model, and every rejection is a 400 that names the field (``param``) the way OpenAI
does. What is read here is the request's *meaning* (which tools, which choice, how many tokens);
how a conversation is rendered and which grammar forces a call is decided later.

Rules (OpenAI's where it has one):

* Unknown fields are rejected ("Unrecognized request argument supplied"), except a few that carry
  no meaning for generation (``user``, ``metadata``, ``store``, ...), which are ignored. Fields we
  know but do not implement (``logprobs``, ``n`` > 1, ``response_format`` other than text, audio,
  ...) are rejected by name rather than silently ignored.
* ``tool_choice`` defaults to ``auto`` with tools and ``none`` without; ``required`` or a named
  function without tools, or naming an undeclared tool, is an error.
* ``max_completion_tokens`` wins over the older ``max_tokens``; both must be positive integers.
* Message ``content`` may be a string or a list of text parts (joined); any other part (images,
  audio, files) is rejected: the served model takes text.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autoparser.serve.errors import ApiError, bad_request
from autoparser.wire import MAX_NAME, NOT_IN_NAME, is_name, json_type

__all__ = ["ChatRequest", "ChoiceMode", "ToolChoice", "parse_chat_request"]

ROLES = ("system", "developer", "user", "assistant", "tool")
_IGNORED = frozenset({"user", "metadata", "store", "service_tier", "safety_identifier", "prompt_cache_key",
                      "prompt_cache_retention", "reasoning_effort", "verbosity", "moderation"})
_UNSUPPORTED = {
    "logprobs": "log probabilities are not returned",
    "top_logprobs": "log probabilities are not returned",
    "logit_bias": "logit_bias is not supported",
    "audio": "audio output is not supported",
    "modalities": "only text output is supported",
    "prediction": "predicted outputs are not supported",
    "web_search_options": "web search is not supported",
    "functions": "the deprecated 'functions' field is not supported; use 'tools'",
    "function_call": "the deprecated 'function_call' field is not supported; use 'tool_choice'",
}
_KNOWN = frozenset({"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "max_tokens",
                    "max_completion_tokens", "stream", "stream_options", "temperature", "top_p", "seed",
                    "stop", "n", "presence_penalty", "frequency_penalty", "response_format", "ignore_eos"}) \
    | _IGNORED | set(_UNSUPPORTED)


class ChoiceMode(enum.Enum):
    """``tool_choice``: what the output may or must be."""

    NONE = "none"  # text only: no grammar, and the parser reads no calls
    AUTO = "auto"  # text, or calls in the profile's format (a call, once started, is forced whole)
    REQUIRED = "required"  # one or more calls and nothing else
    NAMED = "named"  # exactly one call of the named function


@dataclass(frozen=True)
class ToolChoice:
    mode: ChoiceMode
    name: str | None = None  # the function for NAMED


@dataclass(frozen=True)
class ChatRequest:
    """A checked chat-completion request. ``messages`` and ``tools`` are plain JSON data, with
    message content normalised to a string (or None for an assistant turn with tool calls)."""

    model: str
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_choice: ToolChoice = ToolChoice(ChoiceMode.NONE)
    parallel_tool_calls: bool = True
    max_tokens: int | None = None
    stream: bool = False
    include_usage: bool = False
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    ignore_eos: bool = False  # vLLM's extension: generate up to the token limit


def _type_name(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


def _want(value: object, kind: type | tuple[type, ...], param: str, what: str) -> Any:
    """``value`` when it has the JSON type ``kind`` (a bool is not a number here), else a 400."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise bad_request(f"'{param}' must be {what}, got {_type_name(value)}", param)
    return value


def _number(body: Mapping[str, Any], key: str, lo: float, hi: float) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    number = float(_want(value, (int, float), key, "a number"))
    if not (math.isfinite(number) and lo <= number <= hi):
        raise bad_request(f"'{key}' must be between {lo:g} and {hi:g}, got {value!r}", key)
    return number


def _int(body: Mapping[str, Any], key: str, lo: int) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    number = int(_want(value, int, key, "an integer"))
    if number < lo:
        raise bad_request(f"'{key}' must be at least {lo}, got {number}", key)
    return number


def _bool(body: Mapping[str, Any], key: str, default: bool) -> bool:
    value = body.get(key)
    return default if value is None else bool(_want(value, bool, key, "a boolean"))


def _text(content: object, param: str) -> str:
    """A message's content as one string: a string, or a list of text parts joined."""
    if isinstance(content, str):
        return content
    parts = _want(content, list, param, "a string or an array of content parts")
    texts = []
    for i, part in enumerate(parts):
        where = f"{param}[{i}]"
        part = _want(part, dict, where, "a content part object")
        kind = part.get("type")
        if kind != "text":
            raise bad_request(f"content part type {kind!r} is not supported: the served model takes text only",
                              f"{where}.type")
        texts.append(_want(part.get("text"), str, f"{where}.text", "a string"))
    return "".join(texts)


def _tool_calls(calls: object, param: str) -> list[dict[str, Any]]:
    out = []
    for i, call in enumerate(_want(calls, list, param, "an array")):
        where = f"{param}[{i}]"
        call = _want(call, dict, where, "a tool call object")
        if call.get("type", "function") != "function":
            raise bad_request(f"tool call type {call.get('type')!r} is not supported (only 'function')",
                              f"{where}.type")
        fn = _want(call.get("function"), dict, f"{where}.function", "an object")
        name = _want(fn.get("name"), str, f"{where}.function.name", "a string")
        arguments = _want(fn.get("arguments", "{}"), str, f"{where}.function.arguments", "a JSON string")
        call_id = _want(call.get("id", ""), str, f"{where}.id", "a string")
        out.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
    return out


def _message(item: object, param: str) -> dict[str, Any]:
    msg: dict[str, Any] = _want(item, dict, param, "a message object")
    role = msg.get("role")
    if role not in ROLES:
        raise bad_request(f"'{param}.role' must be one of {', '.join(ROLES)}, got {role!r}", f"{param}.role")
    out: dict[str, Any] = {"role": role}
    content = msg.get("content")
    calls = msg.get("tool_calls")
    if role == "assistant" and calls:
        out["tool_calls"] = _tool_calls(calls, f"{param}.tool_calls")
    if content is None:
        if role != "assistant" or "tool_calls" not in out:
            raise bad_request(f"'{param}.content' is required for a {role} message", f"{param}.content")
        out["content"] = None
    else:
        out["content"] = _text(content, f"{param}.content")
    if role == "tool":
        out["tool_call_id"] = _want(msg.get("tool_call_id"), str, f"{param}.tool_call_id", "a string")
    if msg.get("name") is not None:
        out["name"] = _want(msg["name"], str, f"{param}.name", "a string")
    for key in ("reasoning_content", "reasoning"):  # a reasoning model's earlier thoughts, if sent back
        if isinstance(msg.get(key), str) and role == "assistant":
            out["reasoning_content"] = msg[key]
    return out


def _tools(value: object) -> tuple[dict[str, Any], ...]:
    tools = _want(value, list, "tools", "an array of tools")
    if not tools:
        raise bad_request("'tools' must not be empty (leave it out for no tools)", "tools")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        tool = _want(tool, dict, where, "a tool object")
        if tool.get("type") != "function":
            raise bad_request(f"tool type {tool.get('type')!r} is not supported (only 'function')", f"{where}.type")
        fn = _want(tool.get("function"), dict, f"{where}.function", "an object")
        name = _want(fn.get("name"), str, f"{where}.function.name", "a string")
        if not is_name(name):
            raise bad_request(f"tool name {name!r} cannot be written on the wire (1-{MAX_NAME} characters, no "
                              f"whitespace and none of {NOT_IN_NAME})", f"{where}.function.name")
        if name in seen:
            raise bad_request(f"tool name {name!r} is declared twice", f"{where}.function.name")
        seen.add(name)
        params = fn.get("parameters", {"type": "object", "properties": {}})
        _want(params, dict, f"{where}.function.parameters", "a JSON Schema object")
        if json_type(params.get("type", "object")) != "object":
            raise bad_request(f"the parameters of tool {name!r} must be an object schema, got type "
                              f"{params.get('type')!r}", f"{where}.function.parameters")
        spec: dict[str, Any] = {"name": name, "parameters": params}
        if fn.get("description") is not None:
            spec["description"] = _want(fn["description"], str, f"{where}.function.description", "a string")
        if fn.get("strict") is not None:
            spec["strict"] = _want(fn["strict"], bool, f"{where}.function.strict", "a boolean")
        out.append({"type": "function", "function": spec})
    return tuple(out)


def _tool_choice(value: object, tools: Sequence[Mapping[str, Any]]) -> ToolChoice:
    if value is None:
        return ToolChoice(ChoiceMode.AUTO if tools else ChoiceMode.NONE)
    if isinstance(value, str):
        try:
            mode = ChoiceMode(value)
        except ValueError:
            mode = ChoiceMode.NAMED  # not a mode name: rejected below
        if mode is ChoiceMode.NAMED:
            raise bad_request(f"'tool_choice' must be 'none', 'auto', 'required' or a named function, got {value!r}",
                              "tool_choice")
        if mode is ChoiceMode.REQUIRED and not tools:
            raise bad_request("tool_choice 'required' needs 'tools'", "tool_choice")
        return ToolChoice(mode)
    choice = _want(value, dict, "tool_choice", "a string or an object")
    if choice.get("type") != "function":
        raise bad_request(f"'tool_choice.type' must be 'function', got {choice.get('type')!r}", "tool_choice.type")
    fn = _want(choice.get("function"), dict, "tool_choice.function", "an object")
    name = _want(fn.get("name"), str, "tool_choice.function.name", "a string")
    if name not in {t["function"]["name"] for t in tools}:
        raise bad_request(f"tool_choice names function {name!r}, which is not in 'tools'", "tool_choice.function.name")
    return ToolChoice(ChoiceMode.NAMED, name)


def _stop(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    stops = _want(value, list, "stop", "a string or an array of strings")
    if len(stops) > 4:
        raise bad_request(f"'stop' may hold at most 4 sequences, got {len(stops)}", "stop")
    return tuple(_want(s, str, f"stop[{i}]", "a string") for i, s in enumerate(stops) if s != "")


def parse_chat_request(body: object, served: Sequence[str]) -> ChatRequest:
    """Check ``body`` (already decoded JSON) and return the request, or raise :class:`ApiError`.

    ``served`` are the model names this server answers to (404 ``model_not_found`` otherwise).
    """
    if not isinstance(body, dict):
        raise bad_request(f"the request body must be a JSON object, got {_type_name(body)}")
    unknown = sorted(set(body) - _KNOWN)
    if unknown:
        raise bad_request(f"Unrecognized request argument supplied: {', '.join(unknown)}", unknown[0])
    for key, why in _UNSUPPORTED.items():
        if body.get(key) not in (None, False, [], {}):
            raise bad_request(f"'{key}' is not supported by this server: {why}", key)
    if "model" not in body:
        raise bad_request("'model' is required", "model")
    model = _want(body["model"], str, "model", "a string")
    if model not in served:
        raise ApiError(404, f"The model '{model}' does not exist; this server serves: {', '.join(served)}",
                       param="model", code="model_not_found")
    if "messages" not in body:
        raise bad_request("'messages' is required", "messages")
    raw_messages = _want(body["messages"], list, "messages", "an array of messages")
    if not raw_messages:
        raise bad_request("'messages' must contain at least one message", "messages")
    messages = tuple(_message(m, f"messages[{i}]") for i, m in enumerate(raw_messages))
    tools = _tools(body["tools"]) if body.get("tools") is not None else ()
    n = _int(body, "n", 1)
    if n not in (None, 1):
        raise bad_request(f"'n' must be 1 (one choice per request), got {n}", "n")
    fmt = body.get("response_format")
    if fmt is not None and _want(fmt, dict, "response_format", "an object").get("type") != "text":
        raise bad_request(f"response_format {fmt.get('type')!r} is not supported (only 'text')", "response_format")
    stream = _bool(body, "stream", False)
    options = body.get("stream_options")
    if options is not None and not stream:
        raise bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options")
    include_usage = options is not None and _bool(_want(options, dict, "stream_options", "an object"),
                                                  "include_usage", False)
    max_tokens = _int(body, "max_completion_tokens", 1)
    if max_tokens is None:
        max_tokens = _int(body, "max_tokens", 1)
    return ChatRequest(
        model=model,
        messages=messages,
        tools=tools,
        tool_choice=_tool_choice(body.get("tool_choice"), tools),
        parallel_tool_calls=_bool(body, "parallel_tool_calls", True),
        max_tokens=max_tokens,
        stream=stream,
        include_usage=include_usage,
        temperature=_number(body, "temperature", 0.0, 2.0),
        top_p=_number(body, "top_p", 0.0, 1.0),
        seed=_int(body, "seed", 0),
        stop=_stop(body.get("stop")),
        presence_penalty=_number(body, "presence_penalty", -2.0, 2.0),
        frequency_penalty=_number(body, "frequency_penalty", -2.0, 2.0),
        ignore_eos=_bool(body, "ignore_eos", False),
    )
