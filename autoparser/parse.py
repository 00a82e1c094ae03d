"""One-call parsing of a whole output (or an iterable of chunks)."""

from __future__ import annotations

from collections.abc import Iterable

from .dialects import get_profile
from .errors import UsageError
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
    if isinstance(text_or_chunks, bytes | bytearray | memoryview):
        raise TypeError(f"text_or_chunks must be a str or an iterable of str chunks, got "
                        f"{type(text_or_chunks).__name__}; decode it first (e.g. data.decode('utf-8'))")
    if not isinstance(text_or_chunks, str | Iterable):
        raise TypeError(f"text_or_chunks must be a str or an iterable of str chunks, got "
                        f"{type(text_or_chunks).__name__}")
    prof = _profile(profile)
    p = prof.parser(tools=tools, reasoning=reasoning, policy=policy, stream_arguments=stream_arguments)
    if isinstance(text_or_chunks, str):
        p.feed(text_or_chunks)
    else:
        for index, chunk in enumerate(text_or_chunks):
            if not isinstance(chunk, str):
                raise TypeError(f"text_or_chunks[{index}] must be a str, got {type(chunk).__name__}")
            p.feed(chunk)
    p.close()
    return p.result()


def _profile(profile: object) -> Profile:
    if isinstance(profile, Profile):
        return profile
    if not isinstance(profile, str):
        raise TypeError(f"profile must be a Profile or a dialect name, got {type(profile).__name__}")
    from .specs import looks_like_path

    if looks_like_path(profile):  # a file or model dir: deriving it on every call would be slow
        raise UsageError(f"profile {profile!r} looks like a path, not a dialect name; load it once with "
                        f"autoparser.load({profile!r}) and pass the Profile")
    return get_profile(profile)
