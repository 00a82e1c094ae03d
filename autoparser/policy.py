"""What the parser does in each situation where model output is not what the protocol says.

The defaults are the careful-user choices (no silent loss, recover what is complete, never turn a
truncated payload into a call with invalid arguments). Every choice can be overridden per
situation; ``"raise"`` makes that situation a ``ParseError`` with a position, and
``Policy.strict()`` raises on all of them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from .errors import OptionError

__all__ = ["Policy"]


@dataclass(frozen=True)
class Policy:
    #: arguments that are not valid for the codec: ``repair`` when the call is bounded by its end
    #: marker and only closing brackets are missing, otherwise the profile's recovery rule.
    malformed_arguments: Literal["repair", "recover", "raise"] = "repair"
    #: a call cut off by the end of the stream: ``recover`` it when its body is complete (only end
    #: markers missing); a partial body follows the profile's recovery rule.
    truncated_call: Literal["recover", "drop", "raise"] = "recover"
    #: a call to a tool that is not in the request's tools: forward it flagged ``known=False``.
    unknown_tool: Literal["forward", "drop", "raise"] = "forward"
    #: text after (or between) calls: ``content``; ``drop`` discards it (as several engines do).
    text_after_call: Literal["content", "drop", "raise"] = "content"
    #: a tool-call marker inside an open reasoning block: ``defer`` decides at the block's end (a
    #: block that closes keeps it as reasoning; one that never closes ends at the call), ``call``
    #: ends reasoning at the marker at once, ``reasoning`` never leaves the block.
    call_in_reasoning: Literal["defer", "call", "reasoning", "raise"] = "defer"
    #: the stream ends inside a reasoning block: keep it as reasoning (recorded as an issue).
    unclosed_reasoning: Literal["reasoning", "raise"] = "reasoning"
    #: arguments that do not validate against the tool's schema: keep the call, status ``invalid``.
    schema_mismatch: Literal["flag", "raise"] = "flag"
    #: token mode (``special_tokens=``): ordinary text spelling a marker that is a special token.
    #: ``content`` keeps it as text (content, reasoning or argument text, wherever it is) and
    #: records a ``lookalike_marker`` issue; ``accept`` reads it as the marker (output forced by a
    #: grammar that spells markers as ordinary tokens), still recording the issue.
    lookalike_marker: Literal["content", "accept", "raise"] = "content"

    @classmethod
    def strict(cls) -> Policy:
        everything: dict[str, Any] = {f.name: "raise" for f in dataclasses.fields(cls)}
        return cls(**everything)

    @classmethod
    def coerce(cls, policy: Policy | str | None) -> Policy:
        if policy is None or policy == "lenient":
            return cls()
        if policy == "strict":
            return cls.strict()
        if isinstance(policy, Policy):
            return policy
        raise OptionError(f"policy must be None, 'lenient', 'strict' or a Policy, got {policy!r}")
