"""Every error autoparser raises derives from AutoparserError, so callers can catch one type.

Errors that concern a position in model output carry it, because "malformed at 1,204" is
actionable and "malformed" is not.
"""

from __future__ import annotations

__all__ = [
    "AutoparserError",
    "OptionError",
    "ParseError",
    "ProfileError",
    "SourceError",
    "TemplateError",
    "UnknownDialectError",
    "UsageError",
]


class AutoparserError(Exception):
    """Base class of every error raised by autoparser."""


class OptionError(AutoparserError, ValueError):
    """An argument to an autoparser call is not one of the accepted values."""


class UsageError(AutoparserError, ValueError):
    """A call asks for something that cannot be done as given: an option value, a column the input
    does not have, a combination of arguments. The message names the argument."""


class ProfileError(AutoparserError, ValueError):
    """A profile (dict or file) is malformed; the message names the offending field, and the file
    when the profile was read from one (``path``)."""

    def __init__(self, field: str, message: str, path: str | None = None) -> None:
        self.field = field
        self.problem = message
        self.path = path
        where = f"{path}: " if path else ""
        super().__init__(f"{where}profile field {field!r}: {message}")


class UnknownDialectError(AutoparserError, KeyError):
    """A dialect name is not in the registry; the message lists the known names."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(f"unknown dialect {name!r}; known dialects: {', '.join(known)}")

    def __str__(self) -> str:  # KeyError quotes its argument; we want the plain sentence
        return str(self.args[0])


class ParseError(AutoparserError, ValueError):
    """Strict mode met something the lenient mode would have repaired.

    ``position`` is the character offset in the whole output fed so far, ``code`` the issue code
    the lenient mode would have recorded.
    """

    def __init__(self, code: str, message: str, position: int) -> None:
        self.code = code
        self.position = position
        super().__init__(f"{message} (at character {position}, {code})")


class TemplateError(AutoparserError):
    """A chat template could not be loaded or rendered safely (sandbox, time or size limits)."""


class SourceError(AutoparserError):
    """An input file or directory (a template source, a tools file, a profile spec) is missing,
    unreadable or malformed.

    Deliberately not an ``OSError``: a truncated JSON file or a GGUF without a chat template is a
    problem of the model files, and callers should catch it as one type together with the I/O cases.
    ``path`` is the offending file; the message names it and says what is wrong with it.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")
