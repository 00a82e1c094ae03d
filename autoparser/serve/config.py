"""Server settings: what ``autoparse serve`` options set, in one frozen value."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ServeConfig"]


@dataclass(frozen=True)
class ServeConfig:
    """Settings of one server.

    ``max_queue`` requests may wait behind the one generating; one more gets HTTP 429 with a
    ``Retry-After`` estimated from recent generation times. ``max_tokens`` is the completion
    budget when a request names none (always capped by the context left after the prompt).
    ``max_parallel_calls`` bounds ``tool_choice="required"`` with parallel calls allowed (None:
    no bound, the model decides when to stop). ``reasoning_field`` is the message key reasoning
    goes under (``reasoning_content`` as DeepSeek, vLLM and llama.cpp send it, or ``reasoning``).
    """

    host: str = "127.0.0.1"
    port: int = 8000
    max_queue: int = 32
    max_body_bytes: int = 4 << 20
    max_tokens: int = 512
    max_parallel_calls: int | None = None
    reasoning_field: str = "reasoning_content"
    shutdown_timeout: float = 30.0
