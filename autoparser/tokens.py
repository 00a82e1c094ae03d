"""Which strings are single special tokens of a vocabulary, and token ids back to ``(text, special)``.

Why: a text-level parser cannot tell a ``<tool_call>`` the model emitted as one vocabulary entry
from the same characters written as ordinary text (a quoted document, an echoed tool result). The
tokenizer can: added and control tokens are matched atomically, so the ids say which is which.
This module reads that table from what users already have and turns a stream of ids into the
pieces ``Parser.feed(text, special)`` takes in token mode.

What counts as special: every entry a tokenizer matches atomically, whatever its ``special`` flag
says for decoding. Qwen's ``<tool_call>`` is an added token with ``special: false`` (so
``skip_special_tokens`` keeps it) but the model still emits it as one id, and the same characters
in prose tokenize differently. Sources:

* Hugging Face ``tokenizer.json`` (``added_tokens``) and ``tokenizer_config.json``
  (``added_tokens_decoder``), or a directory holding them; a transformers tokenizer object.
* GGUF (``tokenizer.ggml.token_type`` CONTROL or USER_DEFINED), read with the ``gguf`` package.
* An OpenVINO tokenizer (an IR directory or an ``openvino_genai.Tokenizer``): its vocabulary comes
  as bytes from ``get_vocab()``; the tokens its detokenizer skips are the special ones, and HF
  files next to the IR add the non-special added tokens (the IR does not name them).

Decoding keeps bytes until they form whole UTF-8 characters, so a character split over byte-level
tokens (an emoji in two ids) is never emitted as replacement characters halfway; a special token
flushes what is pending (an incomplete sequence there is invalid and becomes U+FFFD).

Every optional dependency is imported inside the function that needs it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import SourceError

if TYPE_CHECKING:
    from .profile import Profile

__all__ = [
    "TokenDecoder",
    "TokenTable",
    "from_gguf",
    "from_hf",
    "from_openvino",
    "from_transformers",
    "load",
    "profile_markers",
    "special_markers",
    "with_special_markers",
]

# llama.cpp token types (gguf.TokenType)
_GGUF_CONTROL = 3
_GGUF_USER_DEFINED = 4


@dataclass(frozen=True)
class TokenTable:
    """One vocabulary: ``vocab`` maps ids to the bytes they decode to; ``special`` maps the ids of
    atomically matched tokens to their text; ``control`` is the subset a detokenizer skips."""

    special: Mapping[int, str]
    vocab: Mapping[int, bytes] = field(default_factory=dict, repr=False)
    control: frozenset[int] = frozenset()
    source: str = ""

    @property
    def strings(self) -> frozenset[str]:
        """The special-token strings: what ``Profile.parser(special_tokens=...)`` takes."""
        return frozenset(self.special.values())

    def decoder(self) -> TokenDecoder:
        return TokenDecoder(self)


class TokenDecoder:
    """Turns token ids into ``(text, special)`` pieces, incrementally (one per response)."""

    __slots__ = ("_table", "_utf8")

    def __init__(self, table: TokenTable) -> None:
        if not table.vocab:
            raise ValueError(f"token table from {table.source or 'an unknown source'} has no vocabulary")
        self._table = table
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, ids: int | Iterable[int]) -> list[tuple[str, bool]]:
        out: list[tuple[str, bool]] = []
        text: list[str] = []
        for tid in (ids,) if isinstance(ids, int) else ids:
            special = self._table.special.get(tid)
            if special is not None:
                text.append(self._utf8.decode(b"", final=True))
                if text and any(text):
                    out.append(("".join(text), False))
                text = []
                out.append((special, True))
                continue
            text.append(self._utf8.decode(self._table.vocab.get(tid, b""), final=False))
        if any(text):
            out.append(("".join(text), False))
        return out

    def flush(self) -> list[tuple[str, bool]]:
        """The end of the stream: bytes of an unfinished character become U+FFFD."""
        rest = self._utf8.decode(b"", final=True)
        return [(rest, False)] if rest else []


# -- vocabularies ---------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _byte_level_map() -> dict[str, int]:
    """GPT-2's byte-level alphabet (printable stand-ins for the 256 bytes), character to byte."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(keep)
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(keep, chars, strict=True)}


def _byte_level(piece: str) -> bytes:
    table = _byte_level_map()
    try:
        return bytes(table[c] for c in piece)
    except KeyError:  # not a byte-level string (an added token written as plain text)
        return piece.encode("utf-8")


def _sentencepiece(piece: str) -> bytes:
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        try:
            return bytes([int(piece[3:5], 16)])
        except ValueError:
            pass
    return piece.replace("\u2581", " ").encode("utf-8")


def _uses_byte_level(tokenizer_json: Mapping[str, Any]) -> bool:
    def kinds(node: Any) -> Iterable[str]:
        if isinstance(node, Mapping):
            if isinstance(node.get("type"), str):
                yield node["type"]
            for key in ("decoders", "pretokenizers"):
                for sub in node.get(key) or ():
                    yield from kinds(sub)
    return "ByteLevel" in set(kinds(tokenizer_json.get("decoder"))) | set(kinds(tokenizer_json.get("pre_tokenizer")))


def _hf_added(config: Mapping[str, Any], tokenizer_json: Mapping[str, Any]) -> tuple[dict[int, str], set[int]]:
    special: dict[int, str] = {}
    control: set[int] = set()
    for entry in tokenizer_json.get("added_tokens") or ():
        if isinstance(entry, Mapping) and isinstance(entry.get("id"), int) and isinstance(entry.get("content"), str):
            special[entry["id"]] = entry["content"]
            if entry.get("special"):
                control.add(entry["id"])
    decoder = config.get("added_tokens_decoder")
    if isinstance(decoder, Mapping):
        for key, entry in decoder.items():
            content = entry.get("content") if isinstance(entry, Mapping) else entry
            if isinstance(content, str) and str(key).isdigit():
                special[int(key)] = content
                if isinstance(entry, Mapping) and entry.get("special"):
                    control.add(int(key))
    return special, control


def from_hf(path: str | Path) -> TokenTable:
    """From a Hugging Face model directory, a ``tokenizer.json`` or a ``tokenizer_config.json``."""
    p = Path(path)
    directory = p if p.is_dir() else p.parent
    tj_path = p if p.is_file() and p.name != "tokenizer_config.json" else directory / "tokenizer.json"
    cfg_path = p if p.is_file() and p.name == "tokenizer_config.json" else directory / "tokenizer_config.json"
    if not tj_path.is_file() and not cfg_path.is_file():
        raise SourceError(str(p), "no tokenizer.json or tokenizer_config.json here")
    from .templates._hf import read_object

    tokenizer_json = read_object(tj_path) if tj_path.is_file() else {}
    config = read_object(cfg_path) if cfg_path.is_file() else {}
    special, control = _hf_added(config, tokenizer_json)
    vocab: dict[int, bytes] = {}
    model = tokenizer_json.get("model")
    raw = model.get("vocab") if isinstance(model, Mapping) else None
    to_bytes = _byte_level if _uses_byte_level(tokenizer_json) else _sentencepiece
    if isinstance(raw, Mapping):  # BPE / WordPiece: piece -> id
        vocab = {int(i): to_bytes(str(s)) for s, i in raw.items()}
    elif isinstance(raw, list):  # Unigram: [piece, score] in id order
        vocab = {i: to_bytes(str(e[0])) for i, e in enumerate(raw) if isinstance(e, list) and e}
    for tid, text in special.items():
        vocab[tid] = text.encode("utf-8")
    return TokenTable(special, vocab, frozenset(control), str(p))


def from_transformers(tokenizer: Any) -> TokenTable:
    """From a transformers tokenizer: its added tokens, and each id's bytes via ``convert_ids_to_tokens``."""
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    special = {int(i): str(getattr(t, "content", t)) for i, t in decoder.items()}
    control = frozenset(int(i) for i, t in decoder.items() if getattr(t, "special", False))
    size = len(tokenizer)
    pieces = tokenizer.convert_ids_to_tokens(list(range(size)))
    byte_level = all(c in _byte_level_map() for c in "".join(p for p in pieces[:2000] if p)[:20000])
    to_bytes = _byte_level if byte_level else _sentencepiece
    vocab = {i: to_bytes(p) for i, p in enumerate(pieces) if p is not None}
    for tid, text in special.items():
        vocab[tid] = text.encode("utf-8")
    return TokenTable(special, vocab, control, str(getattr(tokenizer, "name_or_path", "") or "transformers"))


def from_gguf(path: str | Path) -> TokenTable:
    """From a GGUF file: CONTROL and USER_DEFINED entries of ``tokenizer.ggml.token_type``."""
    try:
        import gguf  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise SourceError(str(path), "reading GGUF needs the gguf package: pip install gguf") from None
    try:
        reader = gguf.GGUFReader(str(path))
    except (OSError, ValueError) as exc:
        raise SourceError(str(path), f"not a readable GGUF file: {exc}") from None
    fields = reader.fields
    tokens, types = fields.get("tokenizer.ggml.tokens"), fields.get("tokenizer.ggml.token_type")
    if tokens is None:
        raise SourceError(str(path), "GGUF file has no tokenizer.ggml.tokens")
    model_field = fields.get("tokenizer.ggml.model")
    model = bytes(model_field.parts[model_field.data[0]]).decode("utf-8") if model_field is not None else ""
    to_bytes = _byte_level if model == "gpt2" else _sentencepiece
    pieces = [bytes(tokens.parts[i]).decode("utf-8", errors="replace") for i in tokens.data]
    kinds = [int(types.parts[i][0]) for i in types.data] if types is not None else []
    special = {i: pieces[i] for i, k in enumerate(kinds) if k in (_GGUF_CONTROL, _GGUF_USER_DEFINED)}
    control = frozenset(i for i, k in enumerate(kinds) if k == _GGUF_CONTROL)
    vocab = {i: (pieces[i].encode("utf-8") if i in special else to_bytes(p)) for i, p in enumerate(pieces)}
    return TokenTable(special, vocab, control, str(path))


def from_openvino(path_or_tokenizer: str | Path | Any) -> TokenTable:
    """From an OpenVINO tokenizer IR directory (or a GGUF GenAI reads) or an ``openvino_genai.Tokenizer``."""
    source = str(path_or_tokenizer) if isinstance(path_or_tokenizer, str | Path) else "openvino_genai.Tokenizer"
    if isinstance(path_or_tokenizer, str | Path):
        try:
            import openvino_genai  # type: ignore[import-untyped, import-not-found, unused-ignore]
        except ImportError:
            raise SourceError(source, "reading an OpenVINO tokenizer needs openvino-genai") from None
        tokenizer = openvino_genai.Tokenizer(str(path_or_tokenizer))
    else:
        tokenizer = path_or_tokenizer
    vocab = {int(i): bytes(s) if isinstance(s, bytes) else str(s).encode("utf-8")
             for s, i in tokenizer.get_vocab().items()}
    ids = sorted(vocab)
    kept = tokenizer.decode([[i] for i in ids], skip_special_tokens=False)
    skipped = tokenizer.decode([[i] for i in ids], skip_special_tokens=True)
    control = {i for i, a, b in zip(ids, kept, skipped, strict=True) if a and not b}
    special = {i: vocab[i].decode("utf-8", errors="replace") for i in control}
    if isinstance(path_or_tokenizer, str | Path):
        directory = Path(path_or_tokenizer)
        directory = directory if directory.is_dir() else directory.parent
        if (directory / "tokenizer.json").is_file() or (directory / "tokenizer_config.json").is_file():
            for tid, text in from_hf(directory).special.items():
                if vocab.get(tid) == text.encode("utf-8"):
                    special[tid] = text
    return TokenTable(special, vocab, frozenset(control), source)


def load(path: str | Path) -> TokenTable:
    """A token table from a path: a ``.gguf``, an OpenVINO IR directory, or Hugging Face files."""
    p = Path(path)
    if p.suffix.lower() == ".gguf":
        return from_gguf(p)
    if p.is_dir() and (p / "openvino_tokenizer.xml").is_file() and not (p / "tokenizer.json").is_file():
        return from_openvino(p)
    return from_hf(p)


# -- profiles ---------------------------------------------------------------------------------------

_PATTERN_GAPS = re.compile(r"\{[a-z_]+\}|\s+")


def profile_markers(profile: Profile) -> tuple[str, ...]:
    """Every marker string the parser matches for ``profile`` (section, call, reasoning, strip,
    message markers and codec delimiters), in a stable order."""
    out: list[str] = [*profile.strip, *profile.content_open, *profile.content_close]
    r, t, m = profile.reasoning, profile.tools, profile.messages
    if r is not None:
        out += [*r.open, *r.close]
    if t is not None:
        out += [*t.section_open, *t.section_close, *t.call_open, *t.call_close, *t.separators,
                *t.lookahead_open]
        for c in (t.codec, t.alt_codec):
            if c is not None:
                for pattern in (c.header, c.trailer, c.param):  # literal parts, between slots and spaces
                    out += _PATTERN_GAPS.split(pattern)
                out += [d for pair in c.string_delims for d in pair]
    if m is not None:
        out += [m.start, m.channel, m.message, *m.ends, m.constrain]
    return tuple(dict.fromkeys(s for s in out if s))


def special_markers(profile: Profile, special_tokens: Iterable[str]) -> tuple[str, ...]:
    """The profile's markers that are single special tokens of a vocabulary (whole-string equal)."""
    special = set(special_tokens)
    return tuple(m for m in profile_markers(profile) if m in special)


def with_special_markers(profile: Profile, special_tokens: Iterable[str], source: str = "") -> Profile:
    """``profile`` recording which of its markers are single special tokens of the source's
    vocabulary (the ``special_markers`` field), with one evidence line saying where that came from."""
    import dataclasses

    found = special_markers(profile, special_tokens)
    if not found:
        return profile
    where = f" of {source}" if source else ""
    line = (f"token mode: markers {', '.join(found)} are single special tokens{where}; "
            "parse with special_tokens= to match them only as tokens")
    return dataclasses.replace(profile, special_markers=found, evidence=(*profile.evidence, line))
