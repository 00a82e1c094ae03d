"""Errors the server answers with, in OpenAI's error shape.

Every failure a client can cause (or meet) ends as an :class:`ApiError`: an HTTP status plus
``{"error": {"message", "type", "param", "code"}}``, the body OpenAI sends and its clients parse
(``openai.BadRequestError.body``). A traceback never reaches the wire; an unexpected exception
becomes a 500 with the exception's class name only, and the traceback goes to the server log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoparser.errors import AutoparserError

__all__ = ["ApiError", "bad_request"]


class ApiError(AutoparserError):
    """A request that gets an error response instead of a completion.

    ``type`` and ``code`` follow OpenAI's values where it has one (``invalid_request_error``,
    ``model_not_found``, ``context_length_exceeded``, ``rate_limit_exceeded``); ``param`` names the
    request field at fault (dotted, with list indices: ``messages[2].tool_calls[0].function``).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        """``{"error": {...}}`` with all four keys present, as OpenAI sends them (null when unknown)."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad_request(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    """A 400 ``invalid_request_error`` (the common case, so it gets a short spelling)."""
    return ApiError(400, message, param=param, code=code)
