"""Refinements of :class:`~autoparser.errors.TemplateError` that callers may want to tell apart.

Both are still ``TemplateError``, so ``except TemplateError`` keeps catching everything. They exist
because the analyzer reacts differently to "the template refused this conversation on purpose"
(a fact about the model's protocol) than to "the template was too expensive or hostile to run"
(a fact about the template file).
"""

from __future__ import annotations

from autoparser.errors import TemplateError

__all__ = ["TemplateBlocked", "TemplateLimitExceeded", "TemplateRaised"]


class TemplateRaised(TemplateError):
    """The template called ``raise_exception(message)``; ``str(err)`` is the template's own message."""

    def __init__(self, message: str, lineno: int | None = None) -> None:
        self.template_message = message
        self.lineno = lineno
        super().__init__(message)


class TemplateBlocked(TemplateError):
    """The sandbox refused access to Python internals (``__class__``, an underscore name).

    A separate type because such a template is hostile or broken: unlike a ``raise_exception`` or
    the immutable sandbox refusing ``list.append`` (which other engines allow), the refusal says
    nothing about the model's protocol.
    """

    def __init__(self, message: str, lineno: int | None = None) -> None:
        self.lineno = lineno
        super().__init__(message)


class TemplateLimitExceeded(TemplateError):
    """Rendering stopped because a resource limit was hit.

    ``limit`` names the limit (``"time"``, ``"output"``, ``"emitted"``, ``"value"``, ``"range"``,
    ``"depth"``, ``"source"``, ``"integer"``) so callers can report it without parsing the message.
    """

    def __init__(self, limit: str, message: str, lineno: int | None = None) -> None:
        self.limit = limit
        self.lineno = lineno
        super().__init__(message)
