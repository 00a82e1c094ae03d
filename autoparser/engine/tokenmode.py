"""Token mode: a marker that is a special token counts only when the model emitted that token.

Rules of this file:

* It is a thin layer in front of the machine and changes nothing inside it. With
  ``special_tokens=None`` it is never entered, so text mode runs exactly as before.
* The machine matches strings; to make it tell a special ``<tool_call>`` from the same characters
  written as ordinary text, each special token that is (part of) a marker gets a *sentinel*: one
  Unicode noncharacter (U+FDD0...), reserved by the standard for internal use and never assigned.
  The machine runs on a *view* of the profile in which those tokens are spelled by their sentinels,
  and is fed the sentinel for a special chunk and ordinary text unchanged. Ordinary text can then
  never match such a marker, wherever it is: content, reasoning and argument text all keep it.
* Everything the machine emits is mapped back (sentinel to token text, JSON-escaped inside argument
  JSON), and every position (issues, ``ParseError``) is mapped back to the original stream.
* Look-alikes are found here, over the ordinary text only (a special chunk breaks a run), with a
  tail of at most the longest token so that any split of the ordinary text finds the same ones:
  every occurrence ends in exactly one chunk and is reported there, once.

Which special tokens get a sentinel: those equal to one of the profile's markers, and those that
look like markup (three characters or more, no whitespace) and occur inside one (``<|im_start|>``
in ``<|im_start|>assistant``). Whitespace-like added tokens (some vocabularies have ``"\\n\\n"``)
must keep matching in text, or every marker containing a newline would stop matching.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import re
import sys
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import OptionError, ParseError
from ..events import ContentDelta, Event, ReasoningDelta, ToolCallArgsDelta
from ..policy import Policy
from ..profile import Profile
from ..result import Issue, Result
from .issues import GOVERNED_BY, IssueCode
from .machine import Parser

__all__ = ["TokenParser", "token_parser"]

#: noncharacters, in the order sentinels are handed out (66 in all)
_SENTINELS = [chr(c) for c in range(0xFDD0, 0xFDF0)] + [
    chr((plane << 16) | low) for plane in range(1, 17) for low in (0xFFFE, 0xFFFF)]

#: the marker fields of each part of a profile (the strings the machine compares with the output)
_MARKER_FIELDS: Mapping[str, tuple[str, ...]] = {
    "Profile": ("strip", "content_open", "content_close"),
    "ReasoningSpec": ("open", "close"),
    "ToolSpec": ("section_open", "section_close", "call_open", "call_close", "lookahead_open",
                 "lookahead_known_only", "lookahead_at_start", "separators"),
    "CodecSpec": ("header", "trailer", "param", "string_delims", "id_name_prefix", "id_name_suffix"),
    "MessagesSpec": ("start", "channel", "message", "ends", "constrain"),
}
_NESTED = ("reasoning", "tools", "messages", "codec", "alt_codec")


@dataclass(frozen=True)
class _View:
    """A profile as the machine sees it in token mode, and the way back."""

    profile: Profile
    sentinel: Mapping[str, str]          # token text -> sentinel
    back: dict[int, str]                 # str.translate table: sentinel -> token text
    back_json: dict[int, str]            # the same, JSON-string-escaped
    tokens: tuple[str, ...]              # the tokens with a sentinel, longest first
    longest: int
    sentinel_re: re.Pattern[str]
    lookalike_re: re.Pattern[str]        # any of ``tokens`` starting here (overlaps found too)


def _used(profile: Profile, special: frozenset[str]) -> tuple[str, ...]:
    from ..tokens import profile_markers

    markers = profile_markers(profile)
    whole = set(markers)
    used = {t for t in special if t in whole
            or (len(t) >= 3 and not any(c.isspace() for c in t) and any(t in m for m in markers))}
    return tuple(sorted(used, key=lambda t: (-len(t), t)))


def _respell(obj: Any, table: Mapping[str, str], pattern: re.Pattern[str]) -> Any:
    def one(s: str) -> str:
        return pattern.sub(lambda m: table[m.group()], s)

    def value(v: Any) -> Any:
        if isinstance(v, str):
            return one(v)
        if isinstance(v, tuple):
            return tuple(value(x) for x in v)
        return v

    changes: dict[str, Any] = {f: value(getattr(obj, f)) for f in _MARKER_FIELDS.get(type(obj).__name__, ())}
    for f in _NESTED:
        sub = getattr(obj, f, None)
        if sub is not None and dataclasses.is_dataclass(sub):
            changes[f] = _respell(sub, table, pattern)
    return dataclasses.replace(obj, **changes)


def _view(profile: Profile, special: frozenset[str]) -> _View | None:
    cache: dict[frozenset[str], _View | None] = profile.__dict__.setdefault("_token_views", {})
    if special in cache:
        return cache[special]
    used = _used(profile, special)
    view: _View | None = None
    if used:
        if len(used) > len(_SENTINELS):
            raise OptionError(f"token mode supports {len(_SENTINELS)} special markers per profile, "
                              f"this one has {len(used)}")
        sentinel = dict(zip(used, _SENTINELS, strict=False))
        pattern = re.compile("|".join(re.escape(t) for t in used))
        respelled = _respell(profile, sentinel, pattern)
        assert isinstance(respelled, Profile)
        view = _View(respelled, sentinel, {ord(s): t for t, s in sentinel.items()},
                     {ord(s): json.dumps(t, ensure_ascii=False)[1:-1] for t, s in sentinel.items()},
                     used, len(used[0]), re.compile("[" + "".join(sentinel.values()) + "]"),
                     re.compile("(?=(" + pattern.pattern + "))"))
    cache[special] = view
    return view


def token_parser(profile: Profile, special_tokens: Iterable[str], *, tools: object = None,
                 reasoning: str | None = None, policy: Policy | str | None = None,
                 stream_arguments: bool = True) -> Parser | None:
    """A token-mode parser, or None when no marker of ``profile`` is a special token (then token
    mode and text mode are the same parse, and the caller builds the plain one)."""
    if isinstance(special_tokens, str):
        raise OptionError("special_tokens must be a collection of token strings, not one string")
    view = _view(profile, frozenset(special_tokens))
    if view is None:
        return None
    return TokenParser(profile, view, tools=tools, reasoning=reasoning, policy=policy,
                       stream_arguments=stream_arguments)


class TokenParser(Parser):
    """The machine on the token-mode view of a profile; ``source_profile`` is the profile given."""

    def __init__(self, profile: Profile, view: _View, *, tools: object = None,
                 reasoning: str | None = None, policy: Policy | str | None = None,
                 stream_arguments: bool = True) -> None:
        pol = Policy.coerce(policy)
        self._accept = pol.lookalike_marker == "accept"
        super().__init__(profile if self._accept else view.profile, tools=tools, reasoning=reasoning,
                         policy=pol, stream_arguments=stream_arguments)
        self.source_profile = profile
        self._view = view
        self._tail = ""             # the end of the current ordinary run (look-alikes across chunks)
        self._keep = 1 - view.longest if view.longest > 1 else sys.maxsize  # w[keep:] is the tail
        self._orig = 0              # characters fed so far, as given
        self._fed = 0               # characters fed to the machine
        self._at_sentinel: list[int] = []   # machine positions of the sentinels fed
        self._extra: list[int] = []         # original minus machine length once past each one
        self._lookalikes: list[Issue] = []
        # where undecided look-alikes begin: one before it is reported, or none stands there; one
        # at it may still grow into a longer token (``]<]minimax[>[<`` into ``]<]minimax[>[</``)
        self._looked = 0

    # -- input ------------------------------------------------------------------------------------
    def feed(self, text: str, special: bool = False) -> list[Event]:
        if special or type(text) is not str:
            return self._feed_special(text) if isinstance(text, str) else super().feed(text)
        v = self._view
        # ordinary text: look-alikes of the special tokens, noncharacters
        tail = self._tail
        w = tail + text if tail else text
        self._tail = w[self._keep:]
        if v.lookalike_re.search(w) is not None:
            self._find_lookalikes(w, len(tail))
        if not self._accept and v.sentinel_re.search(text):
            # a noncharacter in the output: it would read as a marker, so it is replaced
            for m in v.sentinel_re.finditer(text):
                self._record(IssueCode.noncharacter, "a Unicode noncharacter in the output was replaced by "
                             "U+FFFD", self._orig + m.start())
            text = v.sentinel_re.sub("\ufffd", text)  # (one character for one)
        return self._forward(text, len(text))

    def _feed_special(self, text: str) -> list[Event]:
        self._settle_lookalikes()
        self._tail = ""  # a look-alike cannot span a special token
        mark = None if self._accept else self._view.sentinel.get(text)
        if mark is None:
            return self._forward(text, len(text))
        self._at_sentinel.append(self._fed)
        self._extra.append((self._extra[-1] if self._extra else 0) + len(text) - 1)
        return self._forward(mark, len(text))

    def _find_lookalikes(self, w: str, tail: int, final: bool = False) -> None:
        """Record the look-alikes in ``w`` (the last ``tail`` characters of earlier text, then the
        new chunk): the longest token at each position not decided before (``_looked``). One that
        reaches the end of ``w`` and is the start of a longer token waits (unless ``final``): the
        text that follows decides which token stands there, the same on every chunking."""
        start = self._orig - tail
        action = "read as the marker" if self._accept else "kept as text"
        v = self._view
        for m in v.lookalike_re.finditer(w):
            pos = start + m.start()
            if pos < self._looked:
                continue
            token = m.group(1)
            rest = w[m.start():]
            if not final and len(rest) < v.longest and any(
                    len(t) > len(token) and t.startswith(rest) for t in v.tokens):
                self._looked = pos
                return
            self._looked = pos + 1
            msg = f"{token!r} written as ordinary text, not as the special token; {action}"
            self._record(IssueCode.lookalike_marker, msg, pos)

    def _settle_lookalikes(self) -> None:
        """Text ends here (a special token, or the end of output): what waited is decided."""
        if self._tail and self._view.lookalike_re.search(self._tail) is not None:
            self._find_lookalikes(self._tail, len(self._tail), final=True)

    def _record(self, code: IssueCode, message: str, pos: int) -> None:
        """An issue of token mode (in the output as given); raised when its policy field says so."""
        self._lookalikes.append(Issue(code, message, pos))
        if getattr(self.policy, GOVERNED_BY[code]) == "raise":
            raise ParseError(code.value, message, pos)

    def _forward(self, text: str, original: int) -> list[Event]:
        self._orig += original
        self._fed += len(text)
        try:
            events = super().feed(text)
        except ParseError as exc:
            raise self._moved(exc) from None
        return self._mapped(events)

    def close(self) -> list[Event]:
        self._settle_lookalikes()  # (its positions are the output's own: not moved)
        try:
            return self._mapped(super().close())
        except ParseError as exc:
            raise self._moved(exc) from None

    # -- output -----------------------------------------------------------------------------------
    def _position(self, pos: int) -> int:
        n = bisect_left(self._at_sentinel, pos)
        return pos + (self._extra[n - 1] if n else 0)

    def _moved(self, exc: ParseError) -> ParseError:
        text = str(exc)
        return ParseError(exc.code, text[:text.rfind(" (at character")] if " (at character" in text else text,
                          self._position(exc.position))

    def _text(self, s: str) -> str:
        return s.translate(self._view.back) if self._view.sentinel_re.search(s) else s

    def _value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self._text(v)
        if isinstance(v, dict):
            return {self._text(k): self._value(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self._value(x) for x in v]
        return v

    def _mapped(self, events: list[Event]) -> list[Event]:
        if self._accept or not self._at_sentinel:  # the machine can only emit sentinels it was fed
            return events
        out: list[Event] = []
        for e in events:
            if isinstance(e, ContentDelta | ReasoningDelta):
                out.append(type(e)(self._text(e.text)) if self._view.sentinel_re.search(e.text) else e)
                continue
            changes: dict[str, Any] = {}
            for f in dataclasses.fields(e):  # type: ignore[arg-type]
                x = getattr(e, f.name)
                if isinstance(e, ToolCallArgsDelta) and f.name == "text":
                    if self._view.sentinel_re.search(x):
                        changes[f.name] = x.translate(self._view.back_json)
                elif isinstance(x, str | dict | list):
                    y = self._value(x)
                    if y != x:
                        changes[f.name] = y
            out.append(dataclasses.replace(e, **changes) if changes else e)  # type: ignore[type-var]
        return out

    def result(self) -> Result:
        r = super().result()
        issues = [Issue(i.code, i.message, self._position(i.position)) for i in r.issues]
        merged = list(heapq.merge(issues, self._lookalikes, key=lambda i: i.position))
        if self._accept:
            return dataclasses.replace(r, issues=merged)
        calls = [dataclasses.replace(c, name=self._text(c.name), arguments=self._value(c.arguments))
                 for c in r.tool_calls]
        return Result(self._text(r.reasoning), self._text(r.content), calls, merged, r.finish)

