"""The pattern codec: one call spelled out as literal text, slots and repeated arguments.

Rules of this module:

* It reads the body of one call, as every codec does (``codecs.Body``): ``feed(text, pos,
  final)`` consumes only text whose reading is decided, so a chunk boundary never changes a
  decision, and what it has consumed it never reads again.
* It knows no format. The profile's :class:`~autoparser.profile.PatternSpec` is the format: the
  call's literal text and slots (``{name}``, ``{call_id}``, ``{index}``), the ``{args}`` where
  the arguments repeat, each written as ``arg`` (``{key}``, ``{value}``, ``{type}``) with
  ``arg_sep`` between two, and the encoding of the values.
* A slot ends where the literal after it begins (the first text that can follow it: the next
  literal, the separator, the next argument, the call's tail, or a stop marker of the machine).
  A raw value ends at the first such text *that the rest of the pattern then matches*: text up to
  a ``</`` that is not followed by the argument's closing tag is part of the value.
* Arguments stream as JSON: the call's name is announced once the call's head has matched, a
  string value streams as it arrives (raw and XML-escaped text), any other value once it ends.
  What is sent is always a prefix of ``json.dumps(arguments)`` of the complete call.

Theory of operation. The pattern compiles once (``_program``, cached) into item sequences: the
call's ``head`` (before ``{args}``), one argument up to its value (``arg_head``) and after it
(``arg_rest``), and the call's ``tail``. The body is in one of four phases: ``head``, ``group``
(before an argument or the tail), ``value`` (reading a value) and ``after`` (the value ended at a
candidate end). The short pieces (a head, an argument up to its value, what follows a value up to
the next value) are matched whole, atomically: while the text ends inside one of them, nothing is
consumed and the body asks for more. Only a value's own text is consumed as it arrives.
"""

from __future__ import annotations

import ast
import importlib
import json
import math
import re
import shlex
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..profile import CodecSpec, PatternSpec
from . import values
from .codecs import Body, ParsedCall, Status
from .issues import IssueCode
from .markers import WS, Kind, MarkerSet, Match, skip_ws
from .scanner import BalancedScanner
from .schema import json_type_of

__all__ = ["ENCODINGS", "PatternBody", "decode_value", "encode_value", "write_call"]

#: the longest name, key, id or type a slot reads before it gives up (the text is not this call)
_MAX_SLOT = 256
#: encodings whose values are text up to what follows them (typed by ``{type}`` or the schema)
_TEXT = frozenset({"raw", "xml", "percent"})
#: encodings whose values are literals that end by themselves
_LITERAL = frozenset({"json", "python", "toml"})
ENCODINGS = ("json", "python", "toml", "raw", "xml", "percent", "shell")


# -- the compiled pattern -----------------------------------------------------------------------

@dataclass(frozen=True)
class _Lit:
    """Literal text: whitespace in it matches any whitespace (``exact_ws``: its trailing
    whitespace, before a raw value, matches once and exactly, so a value keeps its own)."""

    text: str
    tokens: tuple[str, ...]  # non-whitespace pieces and " " for a whitespace position
    exact_ws: str = ""

    @property
    def core(self) -> str:
        """The first piece that is not whitespace: where a slot before this literal ends."""
        return next((t for t in self.tokens if t != " " and t != "~" and t[0] != _INDENT), "")


@dataclass(frozen=True)
class _Slot:
    name: str            # name, call_id, index, key, type, value
    ref: bool = False    # a second occurrence: matches the first one's text


_Item = _Lit | _Slot


def _lit(text: str, exact_ws: bool = False) -> _Lit:
    toks: list[str] = []
    for piece in re.split(r"(\s+)", text):
        if not piece:
            continue
        if piece.isspace():
            # indentation after a line break is significant (YAML-like blocks); other whitespace
            # matches any whitespace
            indent = piece[piece.rfind("\n") + 1:] if "\n" in piece else ""
            toks.append(_INDENT + indent if indent else " ")
            continue
        # adjacent tags may have whitespace between them
        parts = piece.split("><")
        for i, part in enumerate(parts):
            if i:
                toks.append("~")  # optional whitespace between '>' and '<'
            toks.append((">" if i else "") + part + ("<" if i < len(parts) - 1 else ""))
    tokens = tuple(t for t in toks if t)
    trail = text[len(text.rstrip(WS)):] if exact_ws else ""
    if trail and tokens and tokens[-1] == " ":
        tokens = tokens[:-1]
    return _Lit(text, tokens, trail)


def _items(pattern: str, seen: set[str], raw_value: bool) -> list[_Item]:
    out: list[_Item] = []
    parts = re.split(r"(\{[a-z_]+\})", pattern)
    for i, part in enumerate(parts):
        if i % 2:
            name = part[1:-1]
            out.append(_Slot(name, ref=name in seen))
            seen.add(name)
        elif part:
            before_value = raw_value and i + 1 < len(parts) and parts[i + 1] == "{value}"
            out.append(_lit(part, exact_ws=before_value))
    return out


@dataclass(frozen=True)
class _Program:
    head: tuple[_Item, ...]
    arg_head: tuple[_Item, ...]    # an argument up to its value
    arg_rest: tuple[_Item, ...]    # an argument after its value
    sep: _Lit | None
    tail: tuple[_Item, ...]
    has_args: bool
    lead_ws: str                   # whitespace the pattern puts before a value (trimmed once)
    trail_ws: str                  # ... and after it
    tail_text: bool                # the call's tail has more than whitespace
    rest_text: bool                # an argument has text after its value
    keyed: bool = True             # the arguments name their keys (else: positional, by the schema)


@lru_cache(maxsize=128)
def _program(pat: PatternSpec) -> _Program:
    raw = pat.value in _TEXT
    call = pat.call
    has_args = "{args}" in call
    head_text, _, tail_text = call.partition("{args}")
    call_seen: set[str] = set()
    head = tuple(_items(head_text, call_seen, False))
    tail = tuple(_items(tail_text, call_seen, False))
    seen: set[str] = set()
    a_head_text, _, a_rest_text = pat.arg.partition("{value}")
    arg_head = tuple(_items(a_head_text + "{value}", seen, raw))[:-1] if has_args else ()
    seen.add("value")
    arg_rest = tuple(_items(a_rest_text, seen, False)) if has_args else ()
    sep = _lit(pat.arg_sep) if pat.arg_sep else None
    lead = a_head_text[len(a_head_text.rstrip(WS)):] if raw else ""
    trail = a_rest_text[: len(a_rest_text) - len(a_rest_text.lstrip(WS))] if raw else ""
    return _Program(head, arg_head, arg_rest, sep, tail, has_args, lead, trail, bool(tail_text.strip(WS)),
                    any(not isinstance(it, _Lit) or it.text for it in arg_rest), "{key}" in pat.arg or not has_args)


def _first_lit(items: tuple[_Item, ...]) -> _Lit | bool | None:
    """The literal that starts ``items`` (None: a slot starts them; True: they are empty)."""
    for it in items:
        if isinstance(it, _Lit):
            if it.core or it.tokens:
                return it
            continue
        return None
    return True


# -- matching literals and short slots ---------------------------------------------------------

_MORE = -2
_NO = -1
_INDENT = "\x00"  # a whitespace token that ends with a line break and this indentation


def _match_lit(lit: _Lit, text: str, i: int, final: bool) -> int:
    """End of ``lit`` matched at ``text[i]``; ``_MORE`` when the text ends inside it, ``_NO``."""
    n = len(text)
    for tok in lit.tokens:
        if tok == " " or tok == "~" or tok[0] == _INDENT:
            k = i
            i = skip_ws(text, i)
            if i == n and not final:
                return _MORE
            if tok[0] == _INDENT and not text[k:i].endswith("\n" + tok[1:]):
                return _NO
            continue
        end = i + len(tok)
        if text.startswith(tok, i):
            i = end
            continue
        if end > n and tok.startswith(text[i:]) and not final:
            return _MORE
        return _NO
    if lit.exact_ws:
        ws = lit.exact_ws
        if text.startswith(ws, i):
            return i + len(ws)
        if not final and ws.startswith(text[i:]):
            return _MORE
        if text.startswith("\n", i) and "\n" in ws:
            return i + 1
    return i


def _slot_end(text: str, i: int, ender: _Lit | None, final: bool, no_ws: bool) -> int:
    """Where a short slot (name, key, id, type, index) starting at ``text[i]`` ends: at the first
    piece of ``ender`` (the literal after it), or at a line break (any whitespace for names, ids,
    types and numbers), which ends it only when ``ender`` is or starts with whitespace;
    ``_MORE`` / ``_NO``."""
    limit = min(len(text), i + _MAX_SLOT)
    core = ender.core if ender is not None else ""
    ws_ender = ender is None or not ender.tokens or ender.tokens[0] == " " or ender.tokens[0][0] == _INDENT
    k = text.find(core, i, limit + len(core)) if core else -1
    if no_ws or (not core and ender is not None and "\n" not in ender.text):
        ws = _WS_RE.search(text, i, limit)
        brk = ws.start() if ws is not None else -1
    else:
        brk = text.find("\n", i, limit)
    if brk >= 0 and (k < 0 or brk < k):
        return brk if ws_ender else _NO
    if no_ws and ender is not None and ender.tokens and ws_ender and k >= 0:
        # whitespace then the ender's first piece: a name holds no whitespace, so it ends at the
        # whitespace ('search-db.v2 -count' before ' -{key}'), not at the piece inside it
        if brk >= 0:
            return brk
        return _NO if final or len(text) - i >= _MAX_SLOT else _MORE
    if k >= 0:
        return k
    if final and ws_ender and not core:
        return len(text)
    if len(text) - i >= _MAX_SLOT or final:
        return _NO
    return _MORE


_WS_RE = re.compile(r"[ \t\r\n]")
_WORDISH = re.compile(r"[\w.+\-]*")


# -- values -----------------------------------------------------------------------------------

_SCALARS = {
    "json": re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null"),
    "python": re.compile(r"[-+]?\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?|[-+]?\.\d+|True|False|None"),
    "toml": re.compile(r"[-+]?\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?|[-+]?(?:inf|nan)|true|false"),
}
_STRINGS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "json": (('"', '"', True),),
    "python": (('"', '"', True), ("'", "'", True)),
    "toml": (('"', '"', True), ("'", "'", False)),
}
_BRACKETS = {"json": "{[", "python": "{[(", "toml": "{["}


def _plain(value: Any) -> Any:
    """A decoded literal as JSON data (tuples become lists); ValueError for anything else."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not a JSON number")
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "isoformat"):  # TOML dates and times
        return value.isoformat()
    raise ValueError(f"not JSON data: {type(value).__name__}")


def _literal(text: str, encoding: str) -> Any:
    """A literal value in ``encoding`` (ValueError if it is not one)."""
    if encoding == "json":
        return json.loads(text)
    if encoding == "python":
        try:
            return _plain(ast.literal_eval(text.strip()))
        except (SyntaxError, TypeError, MemoryError, RecursionError) as e:
            raise ValueError(str(e)) from None
    if encoding == "toml":
        try:
            tomllib = importlib.import_module("tomllib")  # Python 3.11+; on 3.10 no value reads as TOML
        except ImportError:
            raise ValueError("reading TOML values needs Python 3.11 (tomllib)") from None
        try:
            return _plain(tomllib.loads("v = " + text.strip())["v"])
        except ValueError:
            raise
        except Exception as e:  # tomllib.TOMLDecodeError is a ValueError; anything else, too
            raise ValueError(str(e)) from None
    raise ValueError(encoding)


_XML_REF = re.compile(r"&(#[0-9]+|#x[0-9a-fA-F]+|lt|gt|amp|quot|apos);")
_XML_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def _xml_unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        ref = m.group(1)
        if ref[0] != "#":
            return _XML_NAMED[ref]
        return chr(int(ref[2:], 16) if ref[1] == "x" else int(ref[1:]))

    return _XML_REF.sub(one, text)


def _unquote_text(text: str, encoding: str) -> str:
    """The text a raw-family value stands for."""
    if encoding == "xml":
        return _xml_unescape(text)
    if encoding == "percent":
        return urllib.parse.unquote(text, errors="strict")
    if encoding == "shell":
        if text.lstrip(WS)[:1] in ("{", "["):
            return text  # a JSON object or array where a word would start (read by its type)
        words = shlex.split(text)
        if len(words) != 1:
            raise ValueError(f"not one shell word: {text[:40]!r}")
        return words[0]
    return text


def _non_string(text: str) -> Any:
    """A non-string value written as text: JSON, else a Python literal (``True``, ``None``)."""
    try:
        return json.loads(text)
    except ValueError:
        return _plain(ast.literal_eval(text.strip()))


def decode_value(text: str, encoding: str, json_type: str | None) -> Any:
    """The value that ``text`` (one value, as the pattern delimited it) writes in ``encoding``.

    ``json_type`` is what a ``{type}`` slot or the schema says the value is (None: unknown): a
    string stays as written; anything else in a text encoding is read as a literal. Raises
    ValueError when the text is not a value in that encoding."""
    if encoding in _LITERAL:
        return _literal(text, encoding)
    plain = _unquote_text(text, encoding)
    if json_type is None or json_type == "string":
        return plain
    try:
        return _non_string(plain)
    except (ValueError, SyntaxError):
        if json_type in ("integer", "number", "boolean", "null"):
            raise ValueError(f"not a {json_type}: {plain[:40]!r}") from None
        return plain


def encode_value(value: Any, encoding: str) -> str:
    """``value`` written in ``encoding``, as a template would (the inverse of :func:`decode_value`;
    the derivation compares renders with it)."""
    if encoding == "json":
        return json.dumps(value, ensure_ascii=False)
    if encoding == "python":
        return repr(value)
    if encoding == "toml":
        return _toml(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if encoding == "xml":
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if encoding == "percent":
        return urllib.parse.quote(text, safe="")
    if encoding == "shell":
        return shlex.quote(text)
    return text


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


class _ValueReader:
    """Reads one value as it arrives; ``feed`` returns the index where it (possibly) ends."""

    def __init__(self, encoding: str, enders: MarkerSet, stops: MarkerSet) -> None:
        self.encoding = encoding
        self.enders = enders
        self.stops = stops
        self.parts: list[str] = []
        self.scanner: BalancedScanner | None = None
        self.started = False
        self.quote = ""  # inside a shell word: the open quote ("'" or '"'), or ""
        self.ended_at_stop = False

    def text(self) -> str:
        return "".join(self.parts)

    def feed(self, text: str, i: int, final: bool) -> tuple[str, int]:
        """("end", j): the value may end at ``j`` (its text so far is ``text()``); ("more", j):
        consumed up to ``j``; ("bad", j): not a value in this encoding."""
        enc = self.encoding
        if enc in _LITERAL:
            return self._literal(text, i, final)
        if enc == "shell":
            return self._shell(text, i, final)
        m, safe = self.enders.scan(text, i, final)
        if m is None:
            self.parts.append(text[i:safe])
            return ("end", safe) if final else ("more", safe)
        self.parts.append(text[i:m.start])
        self.ended_at_stop = m.kind is Kind.stop
        return "end", m.start

    def skip(self, text: str, i: int) -> int:
        """A candidate end that was not one: its first piece belongs to the value."""
        m = self.enders.search(text, i)
        assert m is not None and m.start == i
        self.parts.append(m.marker)
        return m.end

    def _literal(self, text: str, i: int, final: bool) -> tuple[str, int]:
        enc = self.encoding
        if self.scanner is None and not self.started:
            k = skip_ws(text, i)
            if k == len(text):
                self.parts.append(text[i:k])
                return ("bad", k) if final else ("more", k)
            c = text[k]
            self.parts.append(text[i:k])
            i = k
            self.started = True
            if c in _BRACKETS[enc] or any(c == s[0] for s in _STRINGS[enc]):
                self.scanner = BalancedScanner(_BRACKETS[enc], _STRINGS[enc], self.stops)
            else:
                m = _SCALARS[enc].match(text, i)
                if not final and _WORDISH.match(text, i).end() == len(text):  # type: ignore[union-attr]
                    self.started = False  # a scalar may still be growing ('tr', '1.', '-')
                    return "more", i
                if m is None:
                    return "bad", i
                if m.end() == len(text) and not final:
                    self.started = False
                    return "more", i
                self.parts.append(m.group())
                return "end", m.end()
        if self.scanner is None:  # pragma: no cover - a scalar ends in the feed it starts in
            return "bad", i
        st, j = self.scanner.feed(text, i, final)
        if st == "done":
            self.parts.append(self.scanner.text())
            self.scanner = None
            return "end", j
        if st == "more":
            if final:
                return "bad", j
            return "more", j
        return "bad", j

    def _shell(self, text: str, i: int, final: bool) -> tuple[str, int]:
        """A shell word: quoted parts and backslash escapes; it ends at unquoted whitespace or at
        the first piece of what follows it. A JSON object or array where the word starts is read
        whole, to its closing bracket (templates write non-string values with ``tojson``)."""
        if self.scanner is not None or (not self.started and i < len(text) and text[i] in "{["):
            if self.scanner is None:
                self.scanner = BalancedScanner(_BRACKETS["json"], _STRINGS["json"], self.stops)
            self.started = True
            st, j = self.scanner.feed(text, i, final)
            if st == "done":
                self.parts.append(self.scanner.text())
                self.scanner = None
                return "end", j
            return ("bad", j) if final or st != "more" else ("more", j)
        if i < len(text):
            self.started = True
        q = self.quote
        k = i
        n = len(text)
        end = False
        while k < n:
            c = text[k]
            if q == "'":
                q = "" if c == "'" else q
                k += 1
                continue
            if c == "\\":
                if k + 1 == n and not final:
                    break
                k += 2
                continue
            if q == '"':
                q = "" if c == '"' else q
                k += 1
                continue
            if c in "'\"":
                q = c
                k += 1
                continue
            if c in WS:
                end = True
                break
            if k == i and not any(self.parts):
                k += 1  # a word is at least one character: '-1.5' after ' -{key} ' is a value
                continue
            m = self.enders.match_at(text, k, final)
            if m is True:
                break
            if isinstance(m, Match):
                self.ended_at_stop = m.kind is Kind.stop
                end = True
                break
            k += 1
        k = min(k, n)
        self.parts.append(text[i:k])
        self.quote = q
        if end or (final and k == n and not q and any(self.parts)):
            return "end", k
        return ("bad", k) if final else ("more", k)


# -- the body ----------------------------------------------------------------------------------

class PatternBody(Body):
    """A call written as ``PatternSpec`` says; see the module docstring."""

    def __init__(self, spec: CodecSpec, stops: MarkerSet, schemas: Mapping[str, Mapping[str, Any]],
                 known_only: bool = False) -> None:
        assert spec.pattern is not None
        if spec.pattern.ends:
            stops = MarkerSet([*((m, Kind.stop) for m in stops.markers), *((m, Kind.stop) for m in spec.pattern.ends)])
        super().__init__(spec, stops, schemas, known_only)
        self.pat = spec.pattern
        self.prog = _program(spec.pattern)
        self.partial_values = False
        self.phase = "head"
        self.slots: dict[str, str] = {}      # the call's name, id
        self.arg: dict[str, str] = {}        # the argument being read: key, type
        self.args: dict[str, Any] = {}
        self.issues: list[tuple[IssueCode, str]] = []
        self.reader: _ValueReader | None = None
        self.types = dict(spec.pattern.types)
        self._enders = _value_enders(self.prog, stops.markers, spec.pattern.value)
        # streaming: the string value being sent
        self._str_sent = ""
        self._stream_str = False

    # -- feeding ------------------------------------------------------------------------------
    def feed(self, text: str, pos: int, final: bool) -> tuple[Status, int]:
        i = pos
        while True:
            st, i = getattr(self, "_" + self.phase)(text, i, final)  # _head, _group, _value, _after
            if st != "go":
                return st, i

    def _cut(self, what: str, pos: int) -> tuple[str, int]:
        """The stream ended inside the call."""
        if self.partial_values and self.reader is not None:
            return self._finish(pos, truncated=True)
        return self._reject(f"the output ended inside the call's {what}", pos, truncated=True)

    def _head(self, text: str, i: int, final: bool) -> tuple[str, int]:
        k = skip_ws(text, i)
        if k == len(text) and not final:
            return "more", i
        prog = self.prog
        got: dict[str, str] = {}
        j = _match_items(prog.head, text, k, final, got, _first_lit(prog.arg_head) if prog.has_args else None,
                         self.stops)
        if j == _MORE:
            return "more", i
        if j == _NO:
            if final and _prefix_of_items(prog.head, text, k):
                return self._reject("the output ended inside the call's header", i, truncated=True)
            return self._reject("not a call header", i)
        name = got.get("name", "")
        if (self.known_only and name not in self.schemas) or len(name) > _MAX_SLOT:
            return self._reject(f"not a tool name: {name[:40]!r}", i)
        if prog.has_args and not prog.keyed and name not in self.schemas:
            # positional values name no keys: only a listed tool's parameters say which is which
            return self._reject(f"positional arguments of a tool the request does not list: {name[:40]!r}", i)
        self.slots = got
        if self.streaming:
            self.call_name = name
            self.call_id = got.get("call_id") or None
            self._frags.append("{")
        if not prog.has_args:
            return self._finish(j)
        self.phase = "group"
        return "go", j

    def _group(self, text: str, i: int, final: bool) -> tuple[str, int]:
        """Before an argument, or the call's end (its tail; with none, a stop marker or text that
        is no argument)."""
        prog = self.prog
        if prog.tail_text:  # a tail with text of its own comes first (``</call>`` is no ``<key>``)
            t = _match_items(prog.tail, text, i, final, dict(self.slots), None, self.stops)
            if t == _MORE:
                return "more", i
            if t >= 0:
                return self._finish(t)
        k = skip_ws(text, i)
        if k == len(text) and not final:
            # nothing in hand says whether an argument or the marker that ends the call comes
            # next (an argument head with no text of its own matches anywhere)
            return "more", i
        stop = self.stops.match_at(text, k, final)
        if stop is True:
            return "more", i
        if stop is not None and not prog.tail_text:
            return self._finish(i)  # a stop marker ends the call
        got: dict[str, str] = {}
        j = _match_items(prog.arg_head, text, i, final, got, None, self.stops) if stop is None else _NO
        if j == _MORE:
            return "more", i
        if j >= 0:
            if not prog.keyed:
                # positional: the n-th value is the tool's n-th parameter
                props = (self.schemas.get(self.slots.get("name", "")) or {}).get("properties")
                keys = list(props) if isinstance(props, Mapping) else []
                if len(self.args) >= len(keys):
                    return self._reject(f"positional argument {len(self.args) + 1} has no parameter in the tool's "
                                        "schema", i)
                got["key"] = keys[len(self.args)]
            self._start_value(got)
            return "go", j
        if prog.tail:
            t = _match_items(prog.tail, text, i, final, dict(self.slots), None, self.stops)
            if t == _MORE:
                return "more", i
            if t >= 0:
                return self._finish(t)
            if final and (k == len(text) or _prefix_of_items(prog.arg_head, text, i)
                          or _prefix_of_items(prog.tail, text, i)):
                return self._cut("arguments", i)
            return self._reject("neither an argument nor the end of the call", i)
        if k == len(text) and not final:
            return "more", i
        return self._finish(i)  # the end, or text that is not this call's

    def _start_value(self, got: dict[str, str]) -> None:
        self.arg = got
        self.reader = _ValueReader(self.pat.value, self._enders, self.stops)
        self.phase = "value"
        key = got.get("key", "")
        self._stream_str = (self.streaming and self.pat.value in ("raw", "xml") and key not in self.args
                            and self._string_typed(key, got.get("type")) is not False)
        self._str_sent = ""
        self._str_open = False

    def _schema(self, key: str) -> Any:
        props = (self.schemas.get(self.slots.get("name", "")) or {}).get("properties")
        return props.get(key) if isinstance(props, Mapping) else None

    def _string_typed(self, key: str, spelling: str | None) -> bool | None:
        """Whether the value is a string (by its ``{type}`` or its schema); None: no schema says."""
        if spelling is not None and spelling.strip() in self.types:
            return self.types[spelling.strip()] == "string"
        sch = self._schema(key)
        if not isinstance(sch, Mapping):
            return None
        return sch.get("type") == "string" and "enum" not in sch and "const" not in sch

    def _value(self, text: str, i: int, final: bool) -> tuple[str, int]:
        reader = self.reader
        assert reader is not None
        st, j = reader.feed(text, i, final)
        if st == "bad":
            if final and j >= len(text):
                return self._cut("last value", j)
            # (no quote of the text: how much of it was in hand when this was decided depends on
            # the chunks; the message must not)
            self._stream_value()
            return self._reject(f"not a {self.pat.value} value", j)
        if st == "more":
            self._stream_value()
            return "more", j
        if final and j == len(text) and (self.prog.tail_text or self.prog.rest_text
                                         or (self.stops and self.pat.value in _TEXT)):
            # the stream ended where more of the call was due (its rest, or the marker that ends
            # it): a text value may have been cut anywhere
            return self._cut("last value", j)
        self.phase = "after"
        return "go", j

    def _after(self, text: str, i: int, final: bool) -> tuple[str, int]:
        """The value may end at ``text[i]``: what the pattern says follows it must follow."""
        prog = self.prog
        reader = self.reader
        assert reader is not None
        j = _match_items(prog.arg_rest, text, i, final, {**self.slots, **self.arg}, None, self.stops)
        if j == _MORE:
            self._stream_value()
            return "more", i
        ok = j >= 0
        if ok:
            nxt = self._next_ok(text, j, final)
            if nxt is None:
                self._stream_value()
                return "more", i
            ok = nxt
        if not ok:
            if self.pat.value in _TEXT and not reader.ended_at_stop and i < len(text):
                self.phase = "value"  # a candidate end inside the value: it is the value's text
                return "go", reader.skip(text, i)
            if final and (j >= len(text) or i >= len(text)):
                return self._cut("last value", i)
            self._stream_value()  # (what streamed of the value in pieces, sent from whole text too)
            return self._reject("the argument does not end as the pattern says", i)
        try:
            self._end_value()
        except (ValueError, SyntaxError) as e:
            return self._reject(f"argument {self.arg.get('key', '')!r}: {e}", i)
        self.phase = "group"
        if prog.sep is not None:
            s = _match_lit(prog.sep, text, j, final)
            if s >= 0 and _match_items(prog.arg_head, text, s, final, {}, None, self.stops) >= 0:
                return "go", s
        return "go", j

    def _next_ok(self, text: str, j: int, final: bool) -> bool | None:
        """After a value and the rest of its argument: the separator and another argument, the
        call's tail, another argument (no separator) or the end. None: the text ends too soon."""
        prog = self.prog
        s = _match_lit(prog.sep, text, j, final) if prog.sep is not None else j
        if s == _MORE:
            return None
        if s >= 0:
            a = _match_items(prog.arg_head, text, s, final, {}, None, self.stops)
            if a == _MORE:
                return None
            if a >= 0:
                return True
        if prog.tail:
            t = _match_items(prog.tail, text, j, final, dict(self.slots), None, self.stops)
            return None if t == _MORE else t >= 0
        k = skip_ws(text, j)
        if k == len(text):
            return True if final else None
        m = self.stops.match_at(text, k, final)
        if m is True:
            return None
        return m is not None

    def _end_value(self) -> None:
        reader = self.reader
        assert reader is not None
        key = self.arg.get("key", "").strip(WS)
        raw = reader.text()
        if self.pat.value not in _LITERAL:
            raw = _trim_once(raw, self.prog.lead_ws, self.prog.trail_ws)
        if self._str_open:
            text = _unquote_text(raw, self.pat.value)
            self._frags.append(json.dumps(text[len(self._str_sent):], ensure_ascii=False)[1:-1] + '"')
            self._str_open = False
            value: Any = text
        else:
            value = self._typed(raw, key, self.arg.get("type"))
            if key not in self.args and self.call_name is not None:
                self._frags.append(self._member(key) + json.dumps(value, ensure_ascii=False))
        self.args.setdefault(key, value)
        self.reader = None
        self.arg = {}

    def _typed(self, raw: str, key: str, spelling: str | None) -> Any:
        enc = self.pat.value
        if enc in _LITERAL:
            return _literal(raw, enc)
        if spelling is not None and spelling.strip() in self.types:
            return decode_value(raw, enc, self.types[spelling.strip()])
        plain = _unquote_text(raw, enc)
        sch = self._schema(key)
        if not isinstance(sch, Mapping):
            return plain
        value, issue = values.coerce_text(plain, sch, self.schemas.get(self.slots.get("name", "")))
        if issue:
            self.issues.append((IssueCode.coercion_fallback, issue))
        return value

    def _stream_value(self) -> None:
        """Send the part of a string value no later text can change (raw and XML text)."""
        if not self._stream_str or self.reader is None or self.call_name is None:
            return
        raw = self.reader.text()
        lead = self.prog.lead_ws
        if lead and lead.startswith(raw):
            return
        if lead and raw.startswith(lead):
            raw = raw[len(lead):]
        elif lead and raw[:1] == "\n":
            raw = raw[1:]
        safe = raw.rstrip(WS)  # trailing whitespace may still be trimmed
        if self.pat.value == "xml":
            amp = safe.rfind("&")
            if amp >= 0 and ";" not in safe[amp:]:
                safe = safe[:amp]
            safe = _xml_unescape(safe)
        if len(safe) <= len(self._str_sent):
            return
        if not self._str_open:
            if self._schema(self.arg.get("key", "").strip(WS)) is not None \
                    and safe.strip(WS).lower() in ("n", "nu", "nul", "null"):
                return  # may still be null, which a typed schema reads as None
            self._frags.append(self._member(self.arg.get("key", "").strip(WS)) + '"')
            self._str_open = True
        self._frags.append(json.dumps(safe[len(self._str_sent):], ensure_ascii=False)[1:-1])
        self._str_sent = safe

    def _finish(self, pos: int, truncated: bool = False) -> tuple[Status, int]:
        if truncated and self.reader is not None:
            key = self.arg.get("key", "").strip(WS)
            raw = _trim_once(self.reader.text(), self.prog.lead_ws, "")
            try:
                value = self._typed(raw, key, self.arg.get("type"))
            except (ValueError, SyntaxError):
                return self._reject("the output ended inside a value", pos, truncated=True)
            self.args.setdefault(key, value)
        name = self.slots.get("name", "")
        cid = self.slots.get("call_id") or None
        call = ParsedCall(name, dict(self.args), cid, "truncated" if truncated else "ok", list(self.issues))
        if truncated:
            call.issues.append((IssueCode.partial_value, "the last argument value was cut off; surfaced as is"))
        self.calls = [call]
        if self.call_name is not None and not self._args_done:
            self._frags = []  # the machine sends the rest of the parsed arguments
            self._args_done = True
        return "done", pos


def _trim_once(value: str, lead: str, trail: str) -> str:
    if lead and value.startswith(lead):
        value = value[len(lead):]
    elif lead and value[:1] == "\n":
        value = value[1:]
    if trail and value.endswith(trail):
        value = value[: -len(trail)]
    elif trail and value[-1:] == "\n":
        value = value[:-1]
    return value


def _prefix_of_items(items: tuple[_Item, ...], text: str, i: int) -> bool:
    """Whether ``text[i:]`` could still grow into ``items`` (the stream ended inside them)."""
    return _match_items(items, text, i, False, {}, None, MarkerSet(())) == _MORE


def _match_items(items: tuple[_Item, ...], text: str, i: int, final: bool, env: dict[str, str],
                 after: _Lit | bool | None, stops: MarkerSet) -> int:
    """Match a short run of literals and slots at ``text[i]`` (filling ``env`` with the slots'
    text); its end, ``_MORE`` or ``_NO``. ``after`` is the literal that follows the run (it ends
    a slot that ends the run). Whitespace around a name, key, id or type is not part of it."""
    n = len(items)
    slot_before = False
    for k, it in enumerate(items):
        if isinstance(it, _Lit):
            if slot_before and it.tokens and it.tokens[0][0] not in (" ", _INDENT):
                i = skip_ws(text, i)
            j = _match_lit(it, text, i, final)
            if j < 0:
                return j
            i = j
            slot_before = False
            continue
        if it.ref:
            want = env.get(it.name, "")
            if text.startswith(want, i):
                i += len(want)
                slot_before = False
                continue
            if not final and want.startswith(text[i:]):
                return _MORE
            return _NO
        nxt = items[k + 1] if k + 1 < n else after
        ender = nxt if isinstance(nxt, _Lit) else None
        i = skip_ws(text, i)
        e = _slot_end(text, i, ender, final, no_ws=it.name in ("name", "call_id", "index", "type"))
        if e < 0:
            return e
        got = text[i:e].strip(WS)
        if not got or (it.name == "index" and not got.isdigit()):
            return _NO
        env[it.name] = got
        i = e
        slot_before = True
    return i


def _value_enders(prog: _Program, stops: tuple[str, ...], encoding: str) -> MarkerSet:
    """What may follow a value: the first piece of the argument's rest, else of the separator,
    the call's tail or the next argument; and the machine's stop markers."""
    pairs: list[tuple[str, Kind]] = [(m, Kind.stop) for m in stops]

    def add(first: _Lit | bool | None) -> None:
        if not isinstance(first, _Lit):
            return
        if first.core:
            pairs.append((first.core, Kind.trailer))
        else:  # whitespace: a line break, or that whitespace
            pairs.append(("\n" if "\n" in first.text else first.text, Kind.trailer))

    first = _first_lit(prog.arg_rest)
    if first is True:  # nothing after the value inside the argument
        add(_first_lit((prog.sep,)) if prog.sep is not None else None)
        add(_first_lit(prog.tail))
        if prog.sep is None:
            add(_first_lit(prog.arg_head))
    else:
        add(first)
    if encoding == "shell":
        pairs.extend((c, Kind.trailer) for c in " \t\r\n")
    return MarkerSet(pairs)


def write_call(pat: PatternSpec, name: str, arguments: Mapping[str, Any], call_id: str = "",
               index: int = 1, types: Mapping[str, str] | None = None) -> str:
    """One call written as ``pat`` says: what a template that writes this format renders (the
    derivation compares it with renders; tests use it to generate text).

    ``types`` maps JSON types to the ``{type}`` spelling (the inverse of ``pat.types``)."""
    spell = dict(types or {t: s for s, t in reversed(pat.types)})

    def fill(text: str, env: Mapping[str, str]) -> str:
        return re.sub(r"\{([a-z_]+)\}", lambda m: env.get(m.group(1), m.group(0)), text)

    args = pat.arg_sep.join(
        fill(pat.arg, {"key": k, "value": encode_value(v, pat.value), "type": spell.get(json_type_of(v), "")})
        for k, v in arguments.items())
    return fill(pat.call, {"name": name, "call_id": call_id, "index": str(index), "args": args})
