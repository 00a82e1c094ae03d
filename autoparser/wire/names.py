"""The tool-name rule: which text can stand where a wire format writes a tool's name.

One rule for the parser, every grammar back-end, the exported response template and the server:
a name is 1 to ``MAX_NAME`` characters with no whitespace, no control character and none of
``NOT_IN_NAME`` (the characters that open or close the structures a name sits between: tags,
brackets, quotes, argument lists). Everything else is allowed, so ``ns:get_time``,
``weather.current`` and ``get-time`` are names everywhere. A name the request lists is always
accepted by the parser; the rule decides for a name it does not list (or when there are none),
and it is what a grammar lets a model write when no tools are given.

One format narrows it: a Python call list (the ``pythonic`` codec) writes the name as a callee,
so there a name is a dotted identifier (:func:`is_call_name`; ``weather.current`` yes,
``ns:get_time`` and ``get-time`` no). :func:`writable` says which rule a codec uses; a grammar
refuses a tool its format cannot write rather than force text the parser would not read.
"""

from __future__ import annotations

import re

__all__ = ["CALL_NAME", "MAX_NAME", "NOT_IN_NAME", "is_call_name", "is_name", "name_class", "writable"]

MAX_NAME = 256
NOT_IN_NAME = "<>[]{}()\"'`,;\\"

def is_name(text: str) -> bool:
    """Whether ``text`` can be a tool name on the wire."""
    return _NAME.match(text) is not None


def is_call_name(text: str) -> bool:
    """Whether ``text`` can be the callee of a Python call (``a``, ``ns.get_time``)."""
    return _CALL_NAME.fullmatch(text) is not None and len(text) <= MAX_NAME


def writable(name: str, codec_kind: str | None) -> bool:
    """Whether a call in ``codec_kind``'s format can carry the tool name ``name``."""
    return is_call_name(name) if codec_kind == "pythonic" else is_name(name)


def name_class() -> str:
    r"""The characters of a name as a negated character class, the same in Python ``re``, GBNF,
    Lark and xgrammar regex: ``[^ \t\r\n...]`` (repeat it ``+`` or ``{1,N}``)."""
    out = [" ", r"\t", r"\r", r"\n", r"\x0b", r"\x0c", r"\x00-\x1f", r"\x7f"]
    for ch in NOT_IN_NAME:
        out.append("\\" + ch if ch in "\\[]^-" else ch)
    return "[^" + "".join(out) + "]"


_NAME = re.compile(f"{name_class()}{{1,{MAX_NAME}}}\\Z")
_CALL_NAME = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
#: a callee name for a grammar (ASCII: what a grammar lets a model write when no tools are given)
CALL_NAME = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
