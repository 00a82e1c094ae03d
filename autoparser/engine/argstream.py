"""Incremental JSON transcoding of a call's arguments: fragments that are never taken back.

Rules of this file:

* Input is the raw JSON text of one call (or of its arguments object), in any chunking; output is
  normalised JSON text of the arguments object, appended to ``fragments`` as soon as it is certain.
* Certain means: no later text can change it. A string value streams as it arrives (an escape is
  held until it is complete); a key, a number, ``true``/``false``/``null`` and the comma before a
  member are held until the value after them has begun or ended. So at every point the text sent
  so far, followed by ``closing()``, is valid JSON, and later text only appends.
* Nothing here decides whether the text is a call: the codec does that. This module only reports
  the call's name once it is complete (``name``) and stops (``dead``) at text that is not JSON.

Theory of operation. One stack of frames (object or array, with the parse state of each) and a
token buffer. ``capture_depth`` is the stack depth of the arguments object; only text at or below
it is transcoded. For a whole call object (``{"name": ..., "arguments": {...}}``) the tracker
watches the members of the call object, takes the name from a name key, and starts capturing
when an arguments key's value opens with ``{``. Strings are consumed a run at a time with one
compiled regex, so a 200 kB string costs one search per chunk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from enum import Enum

__all__ = ["JsonArgStream"]

_RUN = re.compile(r'[^"\\\x00-\x1f]+')
#: in a streamed value, escapes written exactly as json.dumps writes them pass through unchanged
_EMIT_RUN = re.compile(r'[^"\\\x00-\x1f]*(?:\\["\\bfnrt][^"\\\x00-\x1f]*)*')
_WS = " \t\r\n"
_SCALAR_END = frozenset(",}] \t\r\n")
_HEX = frozenset("0123456789abcdefABCDEF")
_HIGH = re.compile(r"\\u[dD][89abAB]")


class _St(Enum):
    """Where a frame is: what token it expects next."""

    KEY_OR_END = "key_or_end"      # just after '{'
    KEY = "key"                    # after ','
    COLON = "colon"
    VALUE = "value"                # after ':' (object) or ',' (array)
    VALUE_OR_END = "value_or_end"  # just after '['
    COMMA_OR_END = "comma_or_end"


class _Frame:
    __slots__ = ("first", "is_obj", "key", "state")

    def __init__(self, is_obj: bool) -> None:
        self.is_obj = is_obj
        self.state = _St.KEY_OR_END if is_obj else _St.VALUE_OR_END
        self.key: str | None = None
        self.first = True


class JsonArgStream:
    """Transcodes the arguments object out of a call's JSON text as the text arrives.

    ``whole_call=True``: the text is a call object; ``name_keys``/``args_keys`` say where the name
    and the arguments are, ``function_key`` an optional wrapper object holding them, and
    ``name_as_key`` the ``{"NAME": {arguments}}`` form. ``whole_call=False``: the text is the
    arguments object itself.
    """

    def __init__(self, *, whole_call: bool, name_keys: tuple[str, ...] = (), args_keys: tuple[str, ...] = (),
                 id_keys: tuple[str, ...] = (), function_key: str = "", name_as_key: bool = False,
                 name_ok: Callable[[str], bool] | None = None) -> None:
        self.fragments: list[str] = []
        self.name: str | None = None
        self.call_id: str | None = None
        self.dead = False
        self.started = False       # the arguments object has opened
        self.complete = False      # ... and closed
        self._whole = whole_call
        self._name_keys = name_keys
        self._args_keys = args_keys
        self._id_keys = id_keys
        self._function_key = function_key
        self._name_as_key = name_as_key
        self._name_ok = name_ok or bool
        self._call_depth = 1       # stack depth of the call object's members
        self._capture = -1 if whole_call else 1   # depth of the arguments object; -1: not yet
        self._stack: list[_Frame] = []
        self._pending = ""         # ", " and '"key": ' waiting for their value
        self._in_str = False
        self._str_kind = ""        # "emit" (streamed value), "key", "name", "skip"
        self._str_buf: list[str] = []
        self._esc = ""             # an escape sequence not yet complete
        self._hi = ""              # a high-surrogate escape waiting for its low half
        self._scalar = ""
        self._top_done = False

    @property
    def finished(self) -> bool:
        """The top-level object (the call, or the arguments object) has closed."""
        return self._top_done

    # -- output helpers ---------------------------------------------------------------------------
    def _capturing(self) -> bool:
        return not self.complete and 0 < self._capture <= len(self._stack)

    def closing(self) -> str:
        """The text that closes what was sent: open string, then open brackets."""
        if not self.started or self.complete:
            return ""
        out = '"' if self._in_str and self._str_kind == "emit" else ""
        if out and self._hi:
            out = json.dumps(json.loads('"' + self._hi + '"'))[1:-1] + out
        for f in reversed(self._stack[self._capture - 1:]):
            out += "}" if f.is_obj else "]"
        return out

    def _emit(self, text: str) -> None:
        if self._pending:
            text = self._pending + text
            self._pending = ""
        self.fragments.append(text)

    # -- the tokenizer ------------------------------------------------------------------------------
    def feed(self, text: str, start: int = 0) -> int:
        """Consume ``text[start:]``; returns where the top-level object ended (``len(text)`` while
        it has not), so that a caller reading a list of calls knows where the next one begins."""
        if self.dead or self._top_done:
            return start
        i = start
        n = len(text)
        while i < n:
            if self._in_str:
                i = self._string(text, i)
                if self.dead:
                    return i
                continue
            if self._scalar:
                c = text[i]
                if c in _SCALAR_END:
                    if not self._end_scalar():
                        return i
                    continue
                self._scalar += c
                i += 1
                continue
            c = text[i]
            if c in _WS:
                i += 1
                continue
            if not self._token(c):
                self.dead = True
                return i
            i += 1
            if self._top_done:
                return i
        return n

    def _string(self, text: str, i: int) -> int:
        n = len(text)
        if self._esc:
            while i < n and not self._esc_complete():
                self._esc += text[i]
                i += 1
            if not self._esc_complete():
                return i
            esc = self._hi + self._esc
            self._esc = ""
            self._hi = ""
            if _HIGH.match(esc) and len(esc) == 6:
                self._hi = esc  # half of a surrogate pair: decoded with its other half
                return i
            self._decoded(esc)
            return i
        if self._hi:
            if text[i] == "\\":  # maybe its low half: read as an escape, never as a passing run
                self._esc = "\\"
                return i + 1
            hi = self._hi
            self._hi = ""
            self._decoded(hi)
        m = (_EMIT_RUN if self._str_kind == "emit" else _RUN).match(text, i)
        if m is not None and m.end() > i:
            run = m.group()
            self._str_text(run)
            return m.end()
        c = text[i]
        if c == '"':
            self._end_string()
            return i + 1
        if c == "\\":
            self._esc = "\\"
            return i + 1
        # a raw control character: JSON requires an escape; written as one
        self._str_text(json.dumps(c)[1:-1] if self._str_kind == "emit" else c)
        return i + 1

    def _decoded(self, esc: str) -> None:
        try:
            ch = json.loads('"' + esc + '"')
        except ValueError:
            self.dead = True
            return
        self._str_text(json.dumps(ch, ensure_ascii=False)[1:-1] if self._str_kind == "emit" else ch)

    def _esc_complete(self) -> bool:
        e = self._esc
        if len(e) < 2:
            return False
        if e[1] != "u":
            return True
        return len(e) >= 6 or not all(x in _HEX for x in e[2:])

    def _str_text(self, s: str) -> None:
        if self._str_kind == "emit":
            self.fragments.append(s)
        elif self._str_kind != "skip":
            self._str_buf.append(s)

    def _end_string(self) -> None:
        self._in_str = False
        kind = self._str_kind
        if kind == "emit":
            self.fragments.append('"')
            self._after_value()
            return
        s = "".join(self._str_buf)
        self._str_buf = []
        f = self._stack[-1]
        if kind == "key":
            f.key = s
            f.state = _St.COLON
            if self._capturing():
                self._pending += ("" if f.first else ", ") + json.dumps(s, ensure_ascii=False) + ": "
            return
        if kind == "name" and self.name is None and self._name_ok(s):
            self.name = s
        elif kind == "id" and self.call_id is None and s and not self.started:
            # an id written after the arguments began is not the call's id: the call was
            # announced when they began (the whole-text parse applies the same rule)
            self.call_id = s
        self._after_value()

    def _value_start(self) -> tuple[bool, str]:
        """Is the value about to start inside the capture, and what call member is it?"""
        depth = len(self._stack)
        if self._capturing():
            return True, ""
        if not self._whole or depth != self._call_depth or not self._stack[-1].is_obj:
            return False, ""
        key = self._stack[-1].key or ""
        if self._name_as_key:
            return False, "args"
        if key in self._name_keys:
            return False, "name"
        if key in self._args_keys:
            return False, "args"
        if key in self._id_keys:
            return False, "id"
        if self._function_key and key == self._function_key:
            return False, "function"
        return False, ""

    def _token(self, c: str) -> bool:
        if not self._stack:
            if c != "{":
                return False
            self._stack.append(_Frame(True))
            if self._capture == 1:
                self.started = True
                self._emit("{")
            return True
        f = self._stack[-1]
        st = f.state
        if st in (_St.KEY_OR_END, _St.KEY):
            if c == '"':
                self._in_str = True
                self._str_kind = "key"
                return True
            if c == "}" and st == _St.KEY_OR_END:
                return self._close()
            return False
        if st == _St.COLON:
            if c != ":":
                return False
            f.state = _St.VALUE
            if self._name_as_key and self._whole and len(self._stack) == self._call_depth \
                    and self.name is None and f.key is not None and self._name_ok(f.key):
                self.name = f.key
            return True
        if st == _St.COMMA_OR_END:
            if c == ",":
                f.state = _St.KEY if f.is_obj else _St.VALUE
                f.first = False
                if not f.is_obj and self._capturing():
                    self._pending += ", "
                return True
            if c == ("}" if f.is_obj else "]"):
                return self._close()
            return False
        # a value
        if c == "]" and st == _St.VALUE_OR_END:
            return self._close()
        inside, member = self._value_start()
        if c in "{[":
            self._stack.append(_Frame(c == "{"))
            if inside:
                self._emit(c)
            elif member == "args" and c == "{" and self._capture < 0:
                self._capture = len(self._stack)
                self.started = True
                self._emit("{")
            elif member == "function" and c == "{":
                self._call_depth = len(self._stack)
            return True
        if c == '"':
            self._in_str = True
            if inside:
                self._str_kind = "emit"
                self._emit('"')
            else:
                self._str_kind = member if member in ("name", "id") else "skip"
            return True
        if c in "-0123456789tfn":
            self._scalar = c
            return True
        return False

    def _end_scalar(self) -> bool:
        tok = self._scalar
        self._scalar = ""
        try:
            value = json.loads(tok)
        except ValueError:
            self.dead = True
            return False
        if self._capturing():
            self._emit(json.dumps(value))  # as the whole-text path writes it (1.50 -> 1.5)
        self._after_value()
        return True

    def _after_value(self) -> None:
        if self._stack:
            f = self._stack[-1]
            f.state = _St.COMMA_OR_END
            f.first = False

    def _close(self) -> bool:
        depth = len(self._stack)
        f = self._stack.pop()
        if self._capture > 0 and depth >= self._capture:
            self._pending = ""
            self._emit("}" if f.is_obj else "]")
            if depth == self._capture:
                self.complete = True
        if depth == self._call_depth and self._call_depth > 1:
            self._call_depth = 1
        if not self._stack:
            self._top_done = True
        else:
            self._after_value()
        return True

    def take(self) -> str:
        """The fragments produced since the last call, joined."""
        if not self.fragments:
            return ""
        out = "".join(self.fragments)
        self.fragments = []
        return out
