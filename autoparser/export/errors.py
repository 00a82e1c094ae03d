"""The one error type of the exporters (kept here so ``autoparser/errors.py`` stays untouched)."""

from __future__ import annotations

from ..errors import AutoparserError

__all__ = ["ExportError"]


class ExportError(AutoparserError, ValueError):
    """A profile cannot be exported to the requested format, or an exported document is invalid.

    Raised instead of emitting something that would parse or constrain differently from the
    profile: a silently wrong integration is worse than a clear "no equivalent".
    """
