"""Shared plumbing of the live path: its error type and the one place openvino_genai is imported.

The core package must work without OpenVINO, so nothing here imports it at module level; every
caller goes through :func:`require_openvino`, which turns a missing install into an error that
names the extra to install instead of a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from autoparser.errors import AutoparserError, SourceError

__all__ = ["INSTALL_HINT", "LiveError", "ModelPathError", "require_openvino"]

INSTALL_HINT = "pip install 'autoparser[live]'"


class LiveError(AutoparserError):
    """The live path cannot run: OpenVINO GenAI is missing, or a model cannot be found or loaded."""


class ModelPathError(LiveError, SourceError):
    """A path that is not a model OpenVINO GenAI can load: a bad input file (``path`` names it),
    found before OpenVINO is asked."""


def require_openvino() -> ModuleType:
    """Import ``openvino_genai`` on first use, or explain which extra provides it.

    Why lazily: importing OpenVINO costs about half a second and 300 MB of wheels that only the
    live path needs.
    """
    try:
        return importlib.import_module("openvino_genai")
    except ImportError as exc:  # ModuleNotFoundError, or a broken native library
        raise LiveError(
            f"the live path needs OpenVINO GenAI, which is not importable ({exc}); "
            f"install it with: {INSTALL_HINT}"
        ) from exc
