"""Reading Hugging Face tokenizer files: templates, special tokens and the model's name.

Follows the precedence transformers uses when it loads a tokenizer from a directory, so that the
template we analyse is the one transformers would render: ``chat_template.jinja`` plus
``additional_chat_templates/*.jinja`` win over the ``chat_template`` entry of
``tokenizer_config.json``; the legacy processor file ``chat_template.json`` comes last.

Every failure is a :class:`~autoparser.errors.SourceError` naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from autoparser.errors import SourceError

__all__ = [
    "TEMPLATE_FILES",
    "dir_model_id",
    "dir_templates",
    "dir_tokens",
    "model_id_from_config",
    "read_json",
    "read_object",
    "read_text",
    "templates_from_value",
    "token_text",
    "tokens_from_config",
]

# What a directory is searched for, in order, and what an error message lists.
TEMPLATE_FILES = (
    "chat_template.jinja",
    "additional_chat_templates/*.jinja",
    "tokenizer_config.json (chat_template)",
    "chat_template.json",
)

# Keys of tokenizer_config.json / special_tokens_map.json that hold one special token each.
_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "cls_token", "sep_token", "mask_token")


def read_text(path: Path) -> str:
    """A UTF-8 text file; a missing, unreadable or undecodable file is a :class:`SourceError`."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise SourceError(str(path), "is a directory, expected a file") from None
    except OSError as exc:
        raise SourceError(str(path), f"cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(str(path), f"not UTF-8 text (invalid byte at offset {exc.start})") from None


def read_json(path: Path) -> Any:
    """A JSON file; syntax errors are reported with line and column."""
    text = read_text(path)
    if not text.strip():
        raise SourceError(str(path), "file is empty, expected JSON")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(str(path), f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise SourceError(str(path), "JSON nested too deeply") from None


def read_object(path: Path) -> dict[str, Any]:
    value = read_json(path)
    if not isinstance(value, dict):
        raise SourceError(str(path), f"expected a JSON object, got {type(value).__name__}")
    return value


def templates_from_value(value: Any, path: Path) -> dict[str, str]:
    """A ``chat_template`` entry: a string, or a list of ``{"name", "template"}`` objects."""
    if value is None:
        return {}
    if isinstance(value, str):
        return {"default": value} if value.strip() else {}
    if isinstance(value, list):
        templates: dict[str, str] = {}
        for index, item in enumerate(value):
            if not (
                isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("template"), str)
            ):
                raise SourceError(
                    str(path), f"chat_template[{index}] must be an object with string 'name' and 'template'"
                )
            templates[item["name"]] = item["template"]
        return templates
    raise SourceError(
        str(path), f"chat_template must be a string or a list of named templates, got {type(value).__name__}"
    )


def _jinja_file_templates(directory: Path) -> dict[str, str]:
    templates: dict[str, str] = {}
    main = directory / "chat_template.jinja"
    if main.is_file():
        templates["default"] = read_text(main)
    extra = directory / "additional_chat_templates"
    if extra.is_dir():
        for file in sorted(extra.glob("*.jinja")):
            templates[file.name.removesuffix(".jinja")] = read_text(file)
    return {name: text for name, text in templates.items() if text.strip()}


def dir_templates(directory: Path) -> tuple[dict[str, str], Path | None]:
    """The named templates of a model directory and the file they came from (``None``: not found)."""
    templates = _jinja_file_templates(directory)
    if templates:
        return templates, directory / "chat_template.jinja"
    for name in ("tokenizer_config.json", "chat_template.json"):
        file = directory / name
        if file.is_file():
            templates = templates_from_value(read_object(file).get("chat_template"), file)
            if templates:
                return templates, file
    return {}, None


def token_text(value: Any) -> str | None:
    """A token as tokenizer files store it: a string, or an AddedToken dict ``{"content": ...}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _token_list(value: Any) -> list[str]:
    """``additional_special_tokens`` / ``extra_special_tokens``: a list, or (transformers 5) a dict."""
    items: Iterable[Any] = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [text for text in map(token_text, items) if text is not None]


def tokens_from_config(config: dict[str, Any]) -> tuple[str | None, str | None, list[str]]:
    """bos, eos and every added or special token string named in a tokenizer_config-like object."""
    specials: list[str] = []
    decoder = config.get("added_tokens_decoder")
    if isinstance(decoder, dict):

        def order(key: str) -> tuple[int, str]:
            return (int(key), "") if key.isdigit() else (1 << 62, key)

        specials.extend(t for t in (token_text(decoder[key]) for key in sorted(decoder, key=order)) if t)
    for key in ("additional_special_tokens", "extra_special_tokens"):
        specials.extend(_token_list(config.get(key)))
    for key in _TOKEN_KEYS:
        text = token_text(config.get(key))
        if text:
            specials.append(text)
    return token_text(config.get("bos_token")), token_text(config.get("eos_token")), specials


def _added_tokens(tokenizer_json: Path) -> list[str]:
    """``added_tokens`` of tokenizer.json in id order; they include non-special markers (``<tool_call>``)."""
    data = read_object(tokenizer_json)
    added = data.get("added_tokens")
    if not isinstance(added, list):
        return []
    entries = [item for item in added if isinstance(item, dict) and isinstance(item.get("content"), str)]
    entries.sort(key=lambda item: item["id"] if isinstance(item.get("id"), int) else 1 << 62)
    return [str(item["content"]) for item in entries]


def dir_tokens(directory: Path) -> tuple[str | None, str | None, tuple[str, ...]]:
    """bos, eos and special tokens of a model directory.

    bos/eos come from tokenizer_config.json, else special_tokens_map.json; special tokens are the
    union of both files' tokens and tokenizer.json's ``added_tokens``, without duplicates.
    """
    bos = eos = None
    specials: list[str] = []
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        file = directory / name
        if file.is_file():
            file_bos, file_eos, file_specials = tokens_from_config(read_object(file))
            bos = bos or file_bos
            eos = eos or file_eos
            specials.extend(file_specials)
    tokenizer_json = directory / "tokenizer.json"
    if tokenizer_json.is_file():
        specials.extend(_added_tokens(tokenizer_json))
    return bos, eos, tuple(dict.fromkeys(specials))


def model_id_from_config(config: dict[str, Any]) -> str | None:
    """``_name_or_path``, else the first of ``architectures``, else ``model_type`` of a config.json."""
    name = config.get("_name_or_path")
    if isinstance(name, str) and name:
        return name
    architectures = config.get("architectures")
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        return architectures[0]
    model_type = config.get("model_type")
    return model_type if isinstance(model_type, str) and model_type else None


def dir_model_id(directory: Path, tokenizer_config: dict[str, Any] | None = None) -> str | None:
    """The model's name from config.json, else tokenizer_config.json's ``name_or_path``."""
    config_file = directory / "config.json"
    if config_file.is_file():
        found = model_id_from_config(read_object(config_file))
        if found:
            return found
    if tokenizer_config is None:
        file = directory / "tokenizer_config.json"
        tokenizer_config = read_object(file) if file.is_file() else {}
    name = tokenizer_config.get("name_or_path")
    return name if isinstance(name, str) and name else None
