"""One-call parsing of a whole output (or an iterable of chunks)."""

from __future__ import annotations

from collections.abc import Iterable

from .dialects import get_profile
from .policy import Policy
from .profile import Profile
from .result import Result

__all__ = ["parse"]


def parse(
    text_or_chunks: str | Iterable[str],
    profile: Profile | str,
    tools: object = None,
    reasoning: str | None = None,
    policy: Policy | str | None = None,
    stream_arguments: bool = False,
) -> Result:
    """Parse a complete model output with a profile or a dialect name.

    ``stream_arguments`` is the parser's (``Profile.parser``), but fail-closed by default here: a
    whole output gains nothing from calls announced early, and a call cut off by its end stays
    text (pass True to get it as a call with status ``truncated``, as a streaming client would).
    """
    prof = get_profile(profile) if isinstance(profile, str) else profile
    if not isinstance(prof, Profile):
        raise TypeError(f"profile must be a Profile or a dialect name, got {type(profile).__name__}")
    p = prof.parser(tools=tools, reasoning=reasoning, policy=policy, stream_arguments=stream_arguments)
    if isinstance(text_or_chunks, str):
        p.feed(text_or_chunks)
    else:
        for chunk in text_or_chunks:
            p.feed(chunk)
    p.close()
    return p.result()
