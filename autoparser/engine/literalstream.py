"""Incremental transcoding of pythonic calls and Gemma's relaxed objects into JSON arguments.

Rules of this file:

* Input is the raw text of one call (``name(key=value, ...)``) or of one relaxed arguments object
  (``{key:<escape>text<escape>,n:3}``), in any chunking; output is JSON text of the arguments
  object, appended to ``fragments`` only once no later text can change it, so that the text sent
  so far followed by ``closing()`` is valid JSON at every point and later text only appends.
* A top-level string value streams as it arrives: a Python string (either quote, triple quotes,
  ``r``/``u`` prefixes, escapes decoded once complete, implicit concatenation) or a relaxed
  string in the profile's custom delimiters (taken verbatim; a possible partial closing
  delimiter is held back). Every other value (numbers, words, nested lists and objects, relaxed
  JSON-quoted strings) is held until it is complete, then parsed by the same function the
  complete body's parse uses (``values.parse_python_literal`` / ``values.parse_relaxed_object``),
  so the streamed arguments equal the parsed ones.
* Nothing here decides whether the text is a call: the codec's parse of the complete body does.
  Text this module does not expect stops it (``dead``); what it sent stays valid JSON.

Theory of operation. A small state machine over a working string: what was held back (text that
needs more lookahead: a partial delimiter, ``''`` that may open ``'''``, an escape not yet
complete, a value not yet complete) plus the new text. ``feed`` returns where the call (or the
object) ended, so that a list of calls knows where the next one begins.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from ..wire import is_call_name
from . import values
from .markers import tail_prefix

__all__ = ["PythonicCallStream", "RelaxedArgStream"]

_WS = " \t\r\n"
_NAME_CHAR = re.compile(r"[\w.]")
_WORD = re.compile(r"\w+")
_OCTAL = frozenset("01234567")
_HEX_LEN = {"x": 2, "u": 4, "U": 8}
_BARE_KEY = re.compile(r"[^\s{}\[\],:]+")
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


@lru_cache(maxsize=512)
def _py_unescape(esc: str) -> str:
    """One complete escape sequence of a (non-raw) Python string, decoded as Python does."""
    value = values.parse_python_literal('"' + esc + '"')
    assert isinstance(value, str)
    return value


def _esc_end(esc: str, final: bool) -> int:
    """Length of the complete escape at the start of ``esc`` (``\\`` first), 0 if more text is needed."""
    if len(esc) < 2:
        return 0
    c = esc[1]
    if c in _OCTAL:
        k = 2
        while k < len(esc) and k < 4 and esc[k] in _OCTAL:
            k += 1
        return k if k == 4 or k < len(esc) or final else 0
    if c in _HEX_LEN:
        k = 2 + _HEX_LEN[c]
        return k if len(esc) >= k else 0
    if c == "N":
        k = esc.find("}", 2)
        return k + 1 if k >= 0 else 0
    return 2


_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _json_text(s: str) -> str:
    """``s`` as the inside of a JSON string, as ``json.dumps(s, ensure_ascii=False)`` writes it."""
    return s if _NEEDS_ESCAPE.search(s) is None else json.dumps(s, ensure_ascii=False)[1:-1]


class _MemberStream:
    """What both transcoders share: members written as JSON, and what closes them."""

    def __init__(self) -> None:
        self.fragments: list[str] = []
        self.name: str | None = None
        self.call_id: str | None = None
        self.dead = False
        self.started = False        # the arguments object has opened ('{' sent)
        self.complete = False       # ... and closed
        self._pending = ""          # ", " waiting for the next member
        self._more = False          # a handler stopped where it needs more text
        self._in_str = False        # a string value is open in what was sent
        self._held = ""
        self._state = ""
        self._key = ""
        self._msep = ","            # what separates members
        # a held value: nesting depth, an escape pending in its string, where its scan goes on
        self._vdepth = 0
        self._vesc = False
        self._vscan = 0

    def feed(self, text: str, start: int = 0) -> int:
        """Read ``text[start:]``; returns where the call (or object) ended, else ``len(text)``."""
        if self.dead or self.complete:
            return start
        old = len(self._held)
        w = self._held + text[start:] if old else text[start:]
        self._held = ""
        i = self._run_states(w)
        if self.dead:
            return len(text)
        if self.complete:
            return start + i - old
        self._held = w[i:]
        if self._state == "value_held":
            self._vscan -= i
        return len(text)

    def _run_states(self, w: str) -> int:  # pragma: no cover - each transcoder has its own
        raise NotImplementedError

    @property
    def finished(self) -> bool:
        return self.complete

    def take(self) -> str:
        if not self.fragments:
            return ""
        out = "".join(self.fragments)
        self.fragments = []
        return out

    def closing(self) -> str:
        if not self.started or self.complete:
            return ""
        return ('"' if self._in_str else "") + "}"

    def _open(self) -> None:
        self.started = True
        self.fragments.append("{")

    def _member(self, key: str) -> str:
        out = self._pending + json.dumps(key, ensure_ascii=False) + ": "
        self._pending = ""
        return out

    def _begin_string(self, key: str) -> None:
        self.fragments.append(self._member(key) + '"')
        self._in_str = True

    def _end_string(self) -> None:
        self.fragments.append('"')
        self._in_str = False

    def _value(self, key: str, value: object) -> None:
        self.fragments.append(self._member(key) + json.dumps(value, ensure_ascii=False))

    def _close(self) -> None:
        self._pending = ""
        self.fragments.append("}")
        self.complete = True

    def _parse_held(self, text: str) -> object:  # pragma: no cover - each transcoder has its own
        raise NotImplementedError

    def _end_held(self, w: str, start: int, k: int) -> int:
        """A held value ended at ``w[k]`` (a separator or the closing bracket): parse and send it."""
        try:
            value = self._parse_held(w[start:k])
        except ValueError:
            self.dead = True
            return len(w)
        self._value(self._key, value)
        if w.startswith(self._msep, k):
            self._pending = ", "
            self._state = "key"
            return k + len(self._msep)
        self._close()
        return k + 1


class PythonicCallStream(_MemberStream):
    """``name(key=value, ...)``: the name once ``(`` follows it, then keyword arguments as JSON."""

    def __init__(self, name_ok: Callable[[str], bool] = bool) -> None:
        super().__init__()
        self._name_ok = name_ok
        self._state = "name"
        self._tok = ""
        self._quote = ""
        self._triple = False
        self._raw = False
        self._cont = False          # a string continued by implicit concatenation
        self._run: re.Pattern[str] | None = None
        # a held value's open string while scanning it
        self._vq = ""
        self._vtriple = False

    def _run_states(self, w: str) -> int:
        i = 0
        n = len(w)
        while i < n and not self.dead and not self.complete:
            st = self._state
            c = w[i]
            if st == "str":
                i = self._string(w, i)
                if self._more:  # an escape or closing quotes not yet complete
                    self._more = False
                    return i
                continue
            if st == "value_held":
                k = self._scan_value(w, i)
                if k < 0:
                    return i  # the whole value stays held until it is complete
                i = k
                continue
            if st == "name":
                if _NAME_CHAR.match(c):
                    self._tok += c
                    i += 1
                    continue
                self._state = "name_end"
                continue
            if c in _WS and st in ("name_end", "key_or_end", "key", "eq", "value", "after_str"):
                i += 1
                continue
            if st == "name_end":
                if c != "(" or not is_call_name(self._tok) or not self._name_ok(self._tok):
                    self.dead = True
                    return n
                self.name = self._tok
                self._open()
                self._state = "key_or_end"
                i += 1
            elif st in ("key_or_end", "key"):
                if c == ")":
                    self._close()
                    return i + 1
                m = _WORD.match(w, i)
                if m is None or c.isdigit():
                    self.dead = True
                    return n
                if m.end() == n:
                    return i  # the key may go on
                self._key = m.group()
                self._state = "eq"
                i = m.end()
            elif st == "eq":
                if c != "=":
                    self.dead = True
                    return n
                self._state = "value"
                i += 1
            elif st in ("value", "quotes"):
                k = self._value_start(w, i) if st == "value" else self._quotes(w, i)
                if k < 0:
                    return i  # the next character says which
                i = k
            elif st == "after_str":
                if c in "'\"":
                    self._quote, self._raw, self._cont = c, False, True
                    self._state = "quotes"
                elif c == ",":
                    self._end_string()
                    self._pending = ", "
                    self._state = "key"
                    i += 1
                elif c == ")":
                    self._end_string()
                    self._close()
                    return i + 1
                else:
                    self.dead = True
                    return n
            else:  # pragma: no cover - every state is handled above
                self.dead = True
        return i

    def _value_start(self, w: str, i: int) -> int:
        """Classify the value at ``w[i]``: a string (streams), else a value held until complete."""
        c = w[i]
        if c in "'\"":
            self._quote, self._raw, self._cont = c, False, False
            self._state = "quotes"
            return i
        m = _WORD.match(w, i)
        if m is not None and not c.isdigit():
            if m.end() == len(w):
                return -1  # a prefix (r'...') or a word (True): the next character says which
            word = m.group()
            if w[m.end()] in "'\"" and word.lower() in ("r", "u"):
                self._quote, self._raw, self._cont = w[m.end()], word.lower() == "r", False
                self._state = "quotes"
                return m.end()
        if c == "=":
            self.dead = True
            return len(w)
        self._state = "value_held"
        self._vdepth, self._vq, self._vtriple, self._vesc, self._vscan = 0, "", False, False, i
        return i

    def _quotes(self, w: str, i: int) -> int:
        """At a string's opening quote: one quote, three (a triple-quoted string), or two (empty)."""
        q = self._quote
        if w.startswith(q * 3, i):
            self._triple, k = True, i + 3
        elif len(w) - i < 3 and w[i:] == q * (len(w) - i):
            return -1  # '' or ''' : the next character says which
        elif w.startswith(q * 2, i):
            if not self._cont:
                self._begin_string(self._key)
            self._state = "after_str"
            return i + 2
        else:
            self._triple, k = False, i + 1
        if not self._cont:
            self._begin_string(self._key)
        body = "\\\\" + re.escape(q) + ("" if self._triple else "\\n")
        self._run = _run_pattern(body)
        self._state = "str"
        return k

    def _string(self, w: str, i: int) -> int:
        """Inside a string: runs of plain text stream; escapes once complete; the closing quote(s)."""
        assert self._run is not None
        m = self._run.match(w, i)
        if m is not None and m.end() > i:
            self.fragments.append(_json_text(m.group()))
            i = m.end()
            if i == len(w):
                return i
        c = w[i]
        q = self._quote
        if c == "\\":
            if self._raw:
                if i + 1 >= len(w):
                    self._more = True
                    return i
                self.fragments.append(_json_text(w[i:i + 2]))
                return i + 2
            k = _esc_end(w[i:i + 12], False)
            if k == 0:
                if len(w) - i >= 12 and w[i + 1:i + 2] == "N":
                    k = _esc_end(w[i:], False)
                if k == 0:
                    self._more = True
                    return i
            try:
                self.fragments.append(_json_text(_py_unescape(w[i:i + k])))
            except ValueError:
                self.dead = True
                return len(w)
            return i + k
        if c == "\n":  # a line break inside a one-line string: not Python
            self.dead = True
            return len(w)
        # the quote character
        if not self._triple:
            self._state = "after_str"
            return i + 1
        if w.startswith(q * 3, i):
            self._state = "after_str"
            return i + 3
        if len(w) - i < 3 and w[i:] == q * (len(w) - i):
            self._more = True
            return i
        self.fragments.append(_json_text(q))
        return i + 1

    def _scan_value(self, w: str, start: int) -> int:
        """Scan a held value (brackets, Python strings) to its end: a ',' or ')' at depth 0.
        Returns the index after that character (the value is then sent), or -1 (hold it all)."""
        k = self._vscan
        n = len(w)
        while k < n:
            c = w[k]
            if self._vq:
                if self._vesc:
                    self._vesc = False
                elif c == "\\":
                    self._vesc = True
                elif c == self._vq:
                    if not self._vtriple:
                        self._vq = ""
                    elif w.startswith(c * 3, k):
                        self._vq = ""
                        k += 2
                    elif n - k < 3:
                        break
                k += 1
                continue
            if c in "'\"":
                if w.startswith(c * 3, k):
                    self._vq, self._vtriple = c, True
                    k += 3
                    continue
                if n - k < 3 and w[k:] == c * (n - k):
                    break
                if w.startswith(c * 2, k):
                    k += 2
                    continue
                self._vq, self._vtriple = c, False
            elif c in "([{":
                self._vdepth += 1
            elif c in ")]}":
                if self._vdepth == 0:
                    if c != ")":
                        self.dead = True
                        return n
                    return self._end_held(w, start, k)
                self._vdepth -= 1
            elif c == "," and self._vdepth == 0:
                return self._end_held(w, start, k)
            k += 1
        self._vscan = k  # not complete: the value stays held; only what is new is scanned next
        return -1

    _parse_held = staticmethod(values.parse_python_literal)


@lru_cache(maxsize=16)
def _run_pattern(stops: str) -> re.Pattern[str]:
    return re.compile("[^" + stops + "]+")


class RelaxedArgStream(_MemberStream):
    """Gemma's relaxed arguments object: bare or quoted keys, custom-delimited verbatim strings."""

    def __init__(self, string_delims: Sequence[tuple[str, str]] = (), seps: tuple[str, str] = (":", ",")) -> None:
        super().__init__()
        # longest opener first, as the complete parse tries them
        self._delims = sorted(((a, b) for a, b in string_delims if a and b), key=lambda p: -len(p[0]))
        self._kvsep, self._msep = seps
        self._seps = seps
        self._bare_key = _BARE_KEY if seps == (":", ",") else values.bare_key_re(seps)
        self._opens = tuple(a for a, _ in self._delims)
        self._state = "open"
        self._closer = ""
        self._vclose = ""           # a held value's open string: its closer, or '"' with escapes

    def _delim_at(self, w: str, i: int) -> tuple[str, str] | bool | None:
        """The delimiter pair opening at ``w[i]``; True if ``w[i:]`` may still become one."""
        for a, b in self._delims:
            if w.startswith(a, i):
                return a, b
        rest = w[i:]
        if any(len(rest) < len(a) and a.startswith(rest) for a in self._opens):
            return True
        return None

    def _run_states(self, w: str) -> int:
        i = 0
        n = len(w)
        while i < n and not self.dead and not self.complete:
            st = self._state
            c = w[i]
            if st == "str":
                k = w.find(self._closer, i)
                if k >= 0:
                    if k > i:
                        self.fragments.append(_json_text(w[i:k]))
                    self._end_string()
                    self._state = "after"
                    i = k + len(self._closer)
                    continue
                h = tail_prefix(w, self._closer, i)  # what may be the start of the closing delimiter
                if h > i:
                    self.fragments.append(_json_text(w[i:h]))
                return h
            if st == "value_held":
                k = self._scan_value(w, i)
                if k < 0:
                    return i
                i = k
                continue
            if c in _WS:
                i += 1
                continue
            if st == "open":
                if c != "{":
                    self.dead = True
                    return n
                self._open()
                self._state = "key_or_end"
                i += 1
            elif st in ("key_or_end", "key"):
                if c == "}":
                    self._close()
                    return i + 1
                k = self._read_key(w, i)
                if k < 0:
                    return i
                i = k
            elif st == "colon":
                got = self._sep_at(w, i, self._kvsep)
                if got is None:
                    return i
                if not got:
                    self.dead = True
                    return n
                self._state = "value"
                i += len(self._kvsep)
            elif st == "value":
                d = self._delim_at(w, i)
                if d is True:
                    return i
                if isinstance(d, tuple):
                    self._closer = d[1]
                    self._begin_string(self._key)
                    self._state = "str"
                    i += len(d[0])
                    continue
                self._state = "value_held"
                self._vdepth, self._vclose, self._vesc, self._vscan = 0, "", False, i
            elif st == "after":
                got = self._sep_at(w, i, self._msep)
                if got is None:
                    return i
                if got:
                    self._pending = ", "
                    self._state = "key"
                    i += len(self._msep)
                elif c == "}":
                    self._close()
                    return i + 1
                else:
                    self.dead = True
                    return n
            else:  # pragma: no cover
                self.dead = True
        return i

    def _read_key(self, w: str, i: int) -> int:
        """A key: delimited, JSON-quoted or bare. Returns the index after it, -1 for more text."""
        d = self._delim_at(w, i)
        if d is True:
            return -1
        if isinstance(d, tuple):
            k = w.find(d[1], i + len(d[0]))
            if k < 0:
                return -1
            key, end = w[i + len(d[0]):k], k + len(d[1])
        elif w[i] == '"':
            m = _JSON_STRING.match(w, i)
            if m is None:
                return -1
            try:
                key = str(json.loads(m.group(), strict=False))
            except ValueError:
                self.dead = True
                return len(w)
            end = m.end()
        else:
            m = self._bare_key.match(w, i)
            if m is None:
                self.dead = True
                return len(w)
            if m.end() == len(w):
                return -1
            key, end = m.group(), m.end()
        self._key = key
        self._state = "colon"
        return end

    def _scan_value(self, w: str, i: int) -> int:
        """Scan a held value to its end (',' or '}' at depth 0); -1: hold it all for more text."""
        k = self._vscan
        n = len(w)
        while k < n:
            if self._vclose:
                if self._vclose == '"':
                    if self._vesc:
                        self._vesc = False
                    elif w[k] == "\\":
                        self._vesc = True
                    elif w[k] == '"':
                        self._vclose = ""
                    k += 1
                    continue
                e = w.find(self._vclose, k)
                if e < 0:
                    k = max(k, n - len(self._vclose) + 1)
                    break
                k = e + len(self._vclose)
                self._vclose = ""
                continue
            c = w[k]
            d = self._delim_at(w, k)
            if d is True:
                break
            if isinstance(d, tuple):
                self._vclose = d[1]
                k += len(d[0])
                continue
            if c == '"':
                self._vclose = '"'
            elif c in "{[":
                self._vdepth += 1
            elif c in "}]":
                if self._vdepth == 0:
                    if c != "}":
                        self.dead = True
                        return n
                    return self._end_held(w, i, k)
                self._vdepth -= 1
            elif c == self._msep[0] and self._vdepth == 0:
                got = self._sep_at(w, k, self._msep)
                if got is None:
                    break
                if got:
                    return self._end_held(w, i, k)
            k += 1
        self._vscan = k
        return -1

    @staticmethod
    def _sep_at(w: str, i: int, sep: str) -> bool | None:
        """Whether separator ``sep`` starts at ``w[i]`` (None: the text ends inside it)."""
        if w.startswith(sep, i):
            return True
        return None if len(w) - i < len(sep) and sep.startswith(w[i:]) else False

    def _parse_held(self, text: str) -> object:
        return values.parse_relaxed_object(text.strip(_WS), self._delims, self._seps)
