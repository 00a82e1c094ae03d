"""Reading the chat template and special tokens out of a GGUF file with the ``gguf`` package.

Values are read from ``GGUFReader`` fields through their documented layout (``parts`` indexed by
``data``) rather than newer convenience methods, so older ``gguf`` releases work too. Only the
tokens we need are decoded: the vocabulary can hold hundreds of thousands of entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from autoparser.errors import SourceError

__all__ = ["GGUFContents", "read_gguf", "read_metadata"]

# llama.cpp token types (gguf.TokenType): CONTROL and USER_DEFINED are the special/added tokens.
_CONTROL = 3
_USER_DEFINED = 4
# GGUF value types (gguf.GGUFValueType)
_STRING = 8
_ARRAY = 9


@dataclass(frozen=True)
class GGUFContents:
    """What a GGUF file says about its chat template (plain data, no reader kept open)."""

    templates: dict[str, str]
    bos_token: str | None
    eos_token: str | None
    special_tokens: tuple[str, ...]
    model_id: str | None


def _string(field: Any, index: int = 0) -> str:
    return bytes(field.parts[field.data[index]]).decode("utf-8", errors="replace")


def _integer(field: Any, index: int = 0) -> int:
    return int(field.parts[field.data[index]][0])


def read_gguf(path: Path) -> GGUFContents:
    """Templates (``tokenizer.chat_template`` and ``tokenizer.chat_template.<name>``), bos/eos
    strings (ids mapped through ``tokenizer.ggml.tokens``), CONTROL/USER_DEFINED tokens and
    ``general.name``."""
    contents = _read(*_file_key(path))[1]
    if not contents.templates:
        raise SourceError(str(path), "GGUF file has no chat template (no tokenizer.chat_template key)")
    return contents


def read_metadata(path: Path) -> dict[str, object]:
    """Every scalar key of the header (strings, numbers, booleans; arrays such as the vocabulary
    are left out), for callers that check a file before handing it to a runtime."""
    return dict(_read(*_file_key(path))[0])


def _file_key(path: Path) -> tuple[str, int, int]:
    try:
        stat = Path(path).stat()
    except OSError as exc:
        raise SourceError(str(path), f"cannot read: {exc.strerror or exc}") from None
    return str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns


@lru_cache(maxsize=8)
def _read(path: str, size: int, mtime_ns: int) -> tuple[dict[str, object], GGUFContents]:
    """One pass of the ``gguf`` package's reader, kept per file version: reading a vocabulary of
    50,000 tokens costs seconds, and a live run reads the same file for its header check and its
    chat template."""
    try:
        import gguf
    except ImportError:
        raise SourceError(path, "reading GGUF files needs the 'gguf' package (pip install gguf)") from None

    class Strict(gguf.GGUFReader):
        """The package's reader slices its memory map, and a slice past the end of a file cut short
        is silently shorter: here it is an error, so a truncated header never reaches a runtime
        (OpenVINO GenAI crashes on some)."""

        def _get(self, offset: int, dtype: Any, count: int = 1, *args: Any, **kwargs: Any) -> Any:
            arr = super()._get(offset, dtype, count, *args, **kwargs)
            if len(arr) < int(count):
                raise ValueError(f"the file ends at byte {len(self.data)}, inside the data it declares")
            return arr

    try:
        reader = Strict(path, "r")
    except Exception as exc:  # the reader raises ValueError, struct/numpy errors, ... on corrupt files
        raise SourceError(path, f"not a readable GGUF file ({type(exc).__name__}: {exc})") from None
    try:
        return _scalars(reader.fields), _contents(reader.fields)
    except SourceError:
        raise
    except Exception as exc:
        raise SourceError(path, f"malformed GGUF metadata ({type(exc).__name__}: {exc})") from None


def _scalars(fields: Any) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, field in fields.items():
        if key.startswith("GGUF.") or len(field.data) != 1 or not field.types or int(field.types[0]) == _ARRAY:
            continue
        value = field.parts[field.data[0]]
        out[key] = _string(field) if int(field.types[0]) == _STRING else value.tolist()[0]
    return out


def _contents(fields: Any) -> GGUFContents:
    def text(key: str) -> str | None:
        field = fields.get(key)
        return _string(field) if field is not None and len(field.data) == 1 else None

    templates: dict[str, str] = {}
    default = text("tokenizer.chat_template")
    if default:
        templates["default"] = default
    prefix = "tokenizer.chat_template."
    for key in fields:
        if key.startswith(prefix):
            named = text(key)
            if named:
                templates[key.removeprefix(prefix)] = named
    tokens = fields.get("tokenizer.ggml.tokens")
    count = len(tokens.data) if tokens is not None else 0

    def token(key: str) -> str | None:
        field = fields.get(key)
        if field is None or tokens is None:
            return None
        index = _integer(field)
        return _string(tokens, index) if 0 <= index < count else None

    specials: list[str] = []
    types = fields.get("tokenizer.ggml.token_type")
    if types is not None and tokens is not None:
        for index in range(min(count, len(types.data))):
            if _integer(types, index) in (_CONTROL, _USER_DEFINED):
                specials.append(_string(tokens, index))

    model_id = text("general.name") or text("general.basename") or text("general.architecture")
    return GGUFContents(templates, token("tokenizer.ggml.bos_token_id"), token("tokenizer.ggml.eos_token_id"),
                        tuple(dict.fromkeys(specials)), model_id)
