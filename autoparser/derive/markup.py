"""Small string primitives the extractor uses to turn render diffs into markers.

They encode how markup is shaped, not which markup exists: a marker does not contain whitespace
at its ends, a cut never splits a ``<...>`` or ``[...]`` tag, a tag's closing form is its opening
form with a slash (or END for START). No known marker strings appear here.
"""

from __future__ import annotations

import os
import re

__all__ = [
    "common_prefix",
    "common_suffix",
    "first_token",
    "last_token",
    "pairs_with",
    "split_open_header",
    "tag_runs",
    "tokens",
]

_WS = " \t\r\n"


def _tag_safe_prefix(s: str, n: int) -> int:
    head = s[:n]
    for opener, closer in (("<", ">"), ("[", "]")):
        k = head.rfind(opener)
        if k >= 0 and head.find(closer, k) < 0:
            n = min(n, k)
    return n


def common_prefix(a: str, b: str) -> str:
    """Longest common prefix that does not end inside a tag."""
    n = len(os.path.commonprefix([a, b]))
    if n < len(a) and n < len(b):
        n = _tag_safe_prefix(a, n)
    return a[:n]


def common_suffix(a: str, b: str) -> str:
    """Longest common suffix that does not start inside a tag."""
    n = len(os.path.commonprefix([a[::-1], b[::-1]]))
    if n < len(a) and n < len(b):
        tail = a[len(a) - n:]
        for opener, closer in ((">", "<"), ("]", "[")):
            k = tail.find(opener)
            if k >= 0 and tail.rfind(closer, 0, k) < 0:
                n = min(n, len(tail) - k - 1)
    return a[len(a) - n:] if n else ""


def tokens(s: str) -> list[str]:
    return [t for t in re.split(r"\s+", s) if t]


def last_token(s: str) -> str:
    t = tokens(s)
    return t[-1] if t else ""


def first_token(s: str) -> str:
    t = tokens(s)
    return t[0] if t else ""


_WORDISH = re.compile(r"[\w.:\-]*\Z")


def split_open_header(s: str) -> tuple[str, str]:
    """Split the text before a tool name into (marker, header prefix).

    The header prefix is what belongs to the call's own header: an unclosed tag the name sits in
    (``<function=``, ``<invoke name="``), or a trailing run of word characters glued to the name
    (``functions.``, ``call:``). The rest, whitespace-trimmed, is the marker.
    """
    k = s.rfind("<")
    if k >= 0 and s.find(">", k) < 0:
        while k > 0 and s[k - 1] == "<":  # a doubled bracket ('<<act NAME>>') belongs to the tag
            k -= 1
        return s[:k].strip(_WS), s[k:]
    m = _WORDISH.search(s)
    assert m is not None
    if m.start() < len(s) and m.start() > 0 and s[m.start() - 1] not in _WS + "\"'":
        return s[:m.start()].strip(_WS), s[m.start():]
    if m.start() == 0:
        return "", s
    return s.strip(_WS), ""


def pairs_with(open_: str, close: str) -> bool:
    """Whether ``close`` is the closing form of ``open_`` (``<x>``/``</x>``, ``[X]``/``[/X]``,
    ``<|x>``/``<x|>``, START/END)."""
    if not open_ or not close:
        return False
    if close.replace("/", "", 1) == open_:
        return True
    if open_.startswith("<|") and open_.endswith(">") and close == f"<{open_[2:-1]}|>":
        return True  # mirrored bars: <|turn> ... <turn|>
    for a, b in (("END", "START"), ("end", "start"), ("end", "begin"), ("END", "BEGIN"),
                 ("_end", "_start"), ("suffix", "prefix"), ("close", "open")):
        if close.replace(a, b, 1) == open_:
            return True
    return False


def marker_tokens(s: str) -> list[str]:
    """Whitespace-separated tokens, with runs of glued tags split into single tags."""
    out: list[str] = []
    for tok in s.split():
        tags = re.findall(r"<[^<>\s]+>|\[[^\[\]\s]+\]", tok)
        out.extend(tags if tags and "".join(tags) == tok else [tok])
    return out


def tag_runs(s: str) -> list[str]:
    """:func:`marker_tokens`, with a token where words sit between glued tags split where one
    tag ends and the next begins (``<|close|>response<|sep|><|close|>message<|sep|>`` is two
    markers, each a tag, a word and a tag: a tag language whose elements are named by words)."""
    out: list[str] = []
    for tok in marker_tokens(s):
        out.extend(re.split(r"(?<=>)(?=<)|(?<=\])(?=\[)", tok))
    return out


def opening_tail(s: str, close: str) -> str:
    """The shortest end of ``s`` (starting at a tag) that ``close`` closes, or "": the open marker
    a prompt writes last, whole (``<|open|>think<|sep|>``, not only its last tag)."""
    s = s.rstrip(_WS)
    for k in range(len(s) - 1, max(-1, len(s) - 80), -1):
        if s[k] in "<[" and pairs_with(s[k:], close):
            return s[k:]
    return ""


def last_tag(s: str) -> str:
    """The last ``<...>`` or ``[...]`` tag in a text (markers are often glued together)."""
    tags = re.findall(r"<[^<>\s]+>|\[[^\[\]\s]+\]", s)
    return tags[-1] if tags else ""
