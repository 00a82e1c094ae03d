"""Turn caller data into what a chat template sees, the way Hugging Face transformers does.

Byte-identical renders need identical inputs, not only an identical Jinja environment. transformers'
``apply_chat_template`` drops message keys whose value is ``None`` (many templates print a literal
"None" or crash on ``content=None`` but handle a missing key), rebuilds everything out of plain JSON
types (rich objects carry methods the sandbox does not know are dangerous), and copies a message's
reasoning under both ``reasoning_content`` and ``thinking`` (gpt-oss templates read the latter).
We do the same, in our own code, so a probe conversation renders here exactly as a transformers user
would see it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

__all__ = ["plain_data", "prepare_messages"]

# Names a message's reasoning may arrive under; the first is the one most templates read.
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def plain_data(value: Any) -> Any:
    """Rebuild ``value`` from plain JSON types; anything else becomes an inert ``"<TypeName>"``.

    Tuples stay tuples and mapping keys are converted too, as transformers does.
    """
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if isinstance(value, str):  # str subclasses (enums) may carry extra methods
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {plain_data(key): plain_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_data(item) for item in value]
    if isinstance(value, tuple):
        return tuple(plain_data(item) for item in value)
    if type(value).__module__ == "numpy" and callable(getattr(value, "item", None)):
        return plain_data(value.item())  # numpy scalars: np.bool_(False) must stay falsy
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: plain_data(getattr(value, field.name)) for field in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # pydantic models, e.g. OpenAI SDK messages
        return plain_data(dump())
    return f"<{type(value).__name__}>"


def prepare_messages(messages: Any, *, keep_none: bool = False, alias_reasoning: bool = True) -> list[dict[Any, Any]]:
    """Messages as the template sees them: ``None`` values dropped, plain data, reasoning aliased.

    ``keep_none`` passes ``None`` values through, as vLLM, llama.cpp and transformers 4 do: some
    templates (DeepSeek R1 distills) write tool calls only when ``content is none``.
    ``alias_reasoning=False`` leaves reasoning under the key it came with.
    """
    if isinstance(messages, (Mapping, str, bytes)):
        raise TypeError(f"messages must be a list of dicts, got {type(messages).__name__}")
    prepared: list[dict[Any, Any]] = []
    for message in plain_data(list(messages)):
        if not isinstance(message, dict):
            raise TypeError(f"each message must be a dict, got {message!r}")
        if not keep_none:
            message = {key: item for key, item in message.items() if item is not None}
        reasoning = next((message[key] for key in REASONING_FIELDS if message.get(key) is not None), None)
        if reasoning is not None and alias_reasoning:
            # ``thinking`` goes first unless present; ``reasoning_content`` keeps its place or goes last.
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        prepared.append(message)
    return prepared
