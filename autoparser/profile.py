"""The Profile: a declarative description of one model's output protocol.

Rules of this module:

* Every field is something a chat-template diff can reveal (a marker string, a codec choice, a
  codec parameter) or a recovery choice recorded as data. There is no code in a profile.
* A derived profile and a builtin one are the same kind of object, so "derived equals builtin"
  is a plain equality test on ``wire_format()``.
* ``from_dict`` validates everything and names the offending field in its error; ``to_dict``
  followed by ``from_dict`` is the identity.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints

from .errors import ProfileError

if TYPE_CHECKING:
    from .engine.machine import Parser
    from .policy import Policy

__all__ = [
    "PROFILE_VERSION",
    "BuiltinUse",
    "CodecSpec",
    "HistorySpec",
    "MessagesSpec",
    "PatternSpec",
    "Profile",
    "PromptSetting",
    "ReasoningSpec",
    "ToolSpec",
    "json_schema",
]

PROFILE_VERSION = 1

ReasoningStart = Literal["explicit", "prefilled", "auto"]
CodecKind = Literal["json", "name_json", "tagged", "pythonic", "pattern"]
ValueEncoding = Literal["json", "python", "raw", "xml", "percent", "shell", "toml"]
#: the JSON types a ``{type}`` slot's spelling may name
JsonType = Literal["string", "integer", "number", "boolean", "object", "array", "null"]
Recovery = Literal["content", "drop", "content_without_marker", "content_if_no_calls"]


@dataclass(frozen=True)
class ReasoningSpec:
    """Reasoning block markers.

    ``start`` is what the generation prompt does by default: ``explicit`` (the model must open the
    block itself), ``prefilled`` (the prompt ends inside an open block), ``auto`` (unknown: a close
    marker before any open marker means the prompt had opened it; text is held until a marker or
    the end of the stream decides). ``switchable`` says a template variable (enable_thinking)
    changes it. ``join`` separates consecutive reasoning blocks.
    """

    open: tuple[str, ...] = ()
    close: tuple[str, ...] = ()
    start: ReasoningStart = "explicit"
    switchable: bool = False
    join: str = ""


@dataclass(frozen=True)
class PatternSpec:
    """One call as literal text and slots: the inverse of the template's loop over arguments.

    ``call`` is the call's text with slots ``{name}``, ``{call_id}``, ``{index}`` (the call's
    number, not kept) and at most one ``{args}``, where the arguments are written one after the
    other, each as ``arg`` (slots ``{key}``, ``{value}``, optionally ``{type}``), with ``arg_sep``
    between two. An ``arg`` without ``{key}`` is positional: the n-th value is the tool's n-th
    parameter (in its schema's order; a call to a tool the request does not list is not read).
    Every slot ends where the literal text after it begins; a value ends as its
    ``value`` encoding says: ``json`` / ``python`` / ``toml`` values end where the literal ends
    (strings quoted and escaped), ``shell`` values where the shell word ends (``shlex``), and
    ``raw`` / ``xml`` / ``percent`` values are text up to the literal after them (unescaped by
    XML rules or percent-decoding). Text values are typed by ``{type}`` (``types`` maps its
    spellings to JSON types) or else by the tool's schema; a string stays as written, anything
    else is read as a JSON (or Python) literal. Whitespace in a literal matches any whitespace. A
    slot written twice (``<{key}>{value}</{key}>``) matches the same text the second time.
    """

    call: str
    arg: str = ""
    arg_sep: str = ""
    value: ValueEncoding = "json"
    types: tuple[tuple[str, JsonType], ...] = ()
    #: markers that end a call wherever they stand outside a value (the turn's end, when the
    #: template writes it right after the last value)
    ends: tuple[str, ...] = ()


@dataclass(frozen=True)
class CodecSpec:
    """How one call's name, id and arguments are written between its markers.

    kinds:
      ``json``       a JSON object per call (``name_keys`` / ``args_keys`` / ``id_keys``, an optional
                     nested ``function_key`` object, ``array`` wrapping, ``name_as_key``); with
                     ``flavor="python"`` JSON or a Python literal (a template that prints a mapping).
      ``name_json``  ``header`` (a pattern with ``{name}`` or ``{id}``) then a JSON (or relaxed,
                     Gemma-style, its separators ``relaxed_seps``; ``python``: JSON or a Python
                     dict literal; ``xml``: JSON written XML-escaped, as in an attribute; ``csv``:
                     JSON with its quotes doubled, as in a CSV field) object, then the
                     optional ``trailer`` (which may repeat the ``{name}``).
      ``tagged``     ``header`` with ``{name}``; parameters written with ``param``, a pattern with
                     ``{key}``, ``{value}`` and optionally ``{string}`` (DSML's string="true"); the
                     call ends at ``trailer``. Values are typed by the tool schema.
      ``pythonic``   ``[name(key=value, ...), ...]`` with Python literals; with ``array="never"`` the
                     calls are lines without list brackets (``f(a=1)\ng(b=2)``) up to the end marker.
      ``pattern``    anything else: ``pattern`` (a :class:`PatternSpec`) spells the call out as
                     literal text, slots and the repeated arguments (``engine/pattern.py``).

    In patterns, whitespace matches any run of whitespace (including none). A ``name_json`` header
    may hold the caller's ``{call_id}`` before the name (``{call_id}<|n|>{name}<|a|>``) or after it;
    ``{index}`` in a header or parameter pattern matches the call's number and is not kept; a
    ``{string}`` slot is a type attribute that decides coercion (``string_true`` means "a string").
    """

    kind: CodecKind
    name_keys: tuple[str, ...] = ("name",)
    args_keys: tuple[str, ...] = ("arguments", "parameters")
    id_keys: tuple[str, ...] = ("id",)
    function_key: str | None = "function"
    array: Literal["never", "allow", "require"] = "allow"
    name_as_key: bool = False
    header: str = ""
    trailer: str = ""
    id_name_prefix: str = ""
    id_name_suffix: str = ""
    flavor: Literal["json", "relaxed", "python", "xml", "csv"] = "json"
    string_delims: tuple[tuple[str, str], ...] = ()
    #: a relaxed object's key/value separator and member separator (``{city=«Paris»; days=3}``)
    relaxed_seps: tuple[str, str] = (":", ",")
    param: str = ""
    string_true: str = "true"
    pattern: PatternSpec | None = None


@dataclass(frozen=True)
class ToolSpec:
    """Where tool calls sit in the output.

    ``section_*`` wrap a group of calls, ``call_*`` wrap one call. ``bare_calls`` accepts a
    ``call_open`` outside any section. ``lookahead_open`` markers start a call but belong to its
    header (``<function=``, ``call:``), so they are not consumed; those listed in
    ``lookahead_known_only`` only count when the name is one of the request's tools, and
    ``lookahead_at_start`` ones only at the start of the output or right after a call (Llama 3
    writes a bare JSON call as the whole message, Llama 4 several back to back; a ``{`` later in
    prose is prose).
    ``on_invalid`` / ``on_truncated`` say what happens to the raw text of a call that cannot be
    used (a body that is not a call, or one cut off by the end of the stream): ``content`` keeps it
    as content, ``content_without_marker`` without its opening marker, ``drop`` discards it, and
    ``content_if_no_calls`` keeps it only when the response has no complete call (a fragment
    after real calls is noise; alone, it is the only output). ``alt_codec`` is a second wire
    form of the same dialect (Mistral writes ``name[ARGS]{...}`` and ``[{...}]``), chosen when
    a body starts with ``{``/``[`` and the main codec does not take that. ``partial_values``
    surfaces a call whose last parameter value was cut off (as every peer does for Qwen3-Coder).
    """

    codec: CodecSpec
    section_open: tuple[str, ...] = ()
    section_close: tuple[str, ...] = ()
    call_open: tuple[str, ...] = ()
    call_close: tuple[str, ...] = ()
    bare_calls: bool = False
    lookahead_open: tuple[str, ...] = ()
    lookahead_known_only: tuple[str, ...] = ()
    lookahead_at_start: tuple[str, ...] = ()
    separators: tuple[str, ...] = ()
    on_invalid: Recovery = "content"
    on_truncated: Recovery = "content"
    partial_values: bool = False
    alt_codec: CodecSpec | None = None


@dataclass(frozen=True)
class MessagesSpec:
    """Header-routed messages (OpenAI Harmony): ``<|channel|>HEADER<|message|>BODY<|end|>``.

    The header names the channel and an optional recipient; a recipient with
    ``recipient_prefix`` makes the body a tool call's JSON arguments, a reasoning channel makes it
    reasoning, anything else is content. Bodies of one kind are joined with ``join``.
    """

    start: str = "<|start|>"
    channel: str = "<|channel|>"
    message: str = "<|message|>"
    ends: tuple[str, ...] = ("<|end|>", "<|call|>", "<|return|>")
    constrain: str = "<|constrain|>"
    recipient_prefix: str = "to=functions."
    reasoning_channels: tuple[str, ...] = ("analysis",)
    join: str = "\n"
    #: what a writer (a grammar) must spell out that the parser never needs: the role after
    #: ``start``, the channel calls and the answer go to, and the content types a call may name
    role: str = "assistant"
    #: the generation prompt ends inside a message header (after ``start`` and the role), so the
    #: output begins with the rest of that header (`` to=functions.f<|channel|>...``)
    header_open: bool = False
    call_channel: str = "commentary"
    final_channel: str = "final"
    content_types: tuple[str, ...] = ("json", "code")


@dataclass(frozen=True)
class PromptSetting:
    """One value of a template variable and how the generation prompt then begins the output.

    ``reasoning`` is the ``parser(reasoning=...)`` mode that matches a prompt rendered with
    ``variable=value``: ``prefilled`` (the prompt ends inside an open reasoning block), ``off``
    (the prompt writes an empty or closed block: no reasoning follows) or ``explicit`` (the prompt
    opens nothing; a block starts only if the model writes its open marker).
    """

    variable: str
    value: bool | int | float | str | None
    reasoning: Literal["prefilled", "explicit", "off"]


@dataclass(frozen=True)
class BuiltinUse:
    """What the matched builtin dialect gave a derived profile (``analyze(..., known=True)``).

    The renders decide. A builtin field is ``taken`` where it agrees with them (the builtin then
    contributes what no template shows: recovery rules, other spellings), ``added``
    where the renders show nothing of it (builtin-only: parsed if the model writes it, though
    nothing in the template says it does), and ``declined`` where the renders show something else
    (the derived value stands; the reason says what the renders show).
    """

    dialect: str
    taken: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    declined: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HistorySpec:
    """How the template wants an assistant message back in the history (the return trip).

    A loader that feeds a parsed answer back into the next prompt must give it the shape the
    template reads, or the next render differs from what the model wrote. Every field is read
    from renders (``autoparser.derive.history``). ``arguments``: ``object`` when the template
    writes a call faithfully only from a mapping, ``string`` only from a JSON string, ``either``
    when both render the same text, ``None`` when the template writes no calls.
    ``reasoning_field``: the message key the template renders reasoning from
    (``reasoning_content``, ``thinking``, ``reasoning``, ``thought``, ``tool_plan``), or ``None``
    when it renders none of them. ``reasoning_in_history``: which past turns keep it (``all``,
    ``last_turn``: only turns after the last user message, ``never``). ``empty_content``: what a
    call turn without text must carry (``""`` or ``None``: some templates render calls only for
    ``None``). ``call_ids``: false when the template writes a caller's id where the model writes
    the function name, so calls go back without ids unless the id carries the name (the model's
    own ``functions.NAME:0``).
    """

    arguments: Literal["object", "string", "either"] | None = None
    reasoning_field: str | None = None
    reasoning_in_history: Literal["all", "last_turn", "never"] = "never"
    empty_content: Literal["empty", "none"] = "empty"
    call_ids: bool = True


@dataclass(frozen=True)
class Profile:
    """A model's output protocol, plus how sure we are of it and why."""

    name: str | None = None
    version: int = PROFILE_VERSION
    description: str = ""
    families: tuple[str, ...] = ()
    reasoning: ReasoningSpec | None = None
    content_open: tuple[str, ...] = ()
    content_close: tuple[str, ...] = ()
    strip: tuple[str, ...] = ()
    tools: ToolSpec | None = None
    messages: MessagesSpec | None = None
    confidence: float = 1.0
    field_confidence: Mapping[str, float] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()
    #: markers that are single special tokens of the source's vocabulary (``autoparser.tokens``):
    #: a fact about the tokenizer, not the wire format, so ``wire_format()`` leaves it out
    special_markers: tuple[str, ...] = ()
    #: template variables that change how the generation prompt begins the output (derived
    #: profiles with reasoning); :meth:`reasoning_for` reads them. Not part of ``wire_format()``.
    prompt_settings: tuple[PromptSetting, ...] = ()
    #: with ``known=True``, what the matched builtin dialect contributed (provenance, not wire format)
    builtin: BuiltinUse | None = None
    #: how an assistant message goes back into the template (derived from renders; ``None`` when
    #: the profile did not come from a template): not part of ``wire_format()``
    history: HistorySpec | None = None

    # -- behaviour --------------------------------------------------------------------------
    def parser(
        self,
        tools: object = None,
        reasoning: str | None = None,
        policy: Policy | str | None = None,
        stream_arguments: bool = True,
        special_tokens: Iterable[str] | None = None,
    ) -> Parser:
        """A fresh streaming parser for one model response.

        ``stream_arguments=True`` announces a call once its name is certain and streams its
        arguments; ``False`` announces a call only when it is complete and valid (fail-closed).

        ``special_tokens`` (the special-token strings of the model's vocabulary) turns on token
        mode: feed each chunk with ``special=True`` when it is the text of one special token, and a
        marker that is a special token then matches only as one (``autoparser.engine.tokenmode``).
        """
        if special_tokens is not None:
            from .engine.tokenmode import token_parser

            found = token_parser(self, special_tokens, tools=tools, reasoning=reasoning, policy=policy,
                                 stream_arguments=stream_arguments)
            if found is not None:
                return found
        from .engine.machine import Parser

        return Parser(self, tools=tools, reasoning=reasoning, policy=policy,
                      stream_arguments=stream_arguments)

    def reasoning_for(self, **variables: object) -> str | None:
        """The ``parser(reasoning=...)`` mode for a prompt rendered with these template variables
        (``enable_thinking=False``, ``reasoning_effort="high"``), from :attr:`prompt_settings`.

        ``None`` (the profile's default) when no listed setting matches. Settings were probed one
        variable at a time: with several, the first one listed for a variable given decides.
        """
        for s in self.prompt_settings:
            if s.variable in variables and _same_value(variables[s.variable], s.value):
                return s.reasoning
        return None

    def builtin_only(self, part: str) -> bool:
        """Whether ``part`` (``"reasoning"``, ``"tools"``, ...) was added by the matched builtin
        dialect and no render of the template shows it (see :class:`BuiltinUse`)."""
        return self.builtin is not None and part in self.builtin.added

    def wire_format(self) -> dict[str, Any]:
        """The fields that decide how text is parsed (no names, evidence or confidence)."""
        d = self.to_dict()
        for k in ("name", "version", "description", "families", "confidence", "field_confidence", "evidence",
                  "special_markers", "history", "prompt_settings", "builtin"):
            d.pop(k, None)
        return d

    def replace(self, **changes: Any) -> Profile:
        return dataclasses.replace(self, **changes)

    # -- serialisation ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return _to_jsonable(self)  # type: ignore[no-any-return]

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Profile:
        if not isinstance(data, Mapping):
            raise ProfileError("<root>", f"expected a JSON object, got {type(data).__name__}")
        version = data.get("version", PROFILE_VERSION)
        if version != PROFILE_VERSION:
            raise ProfileError("version", f"unsupported profile version {version!r} "
                                          f"(this autoparser reads version {PROFILE_VERSION})")
        # other runtimes' parser names are no longer a profile field: autoparser.resolve reads the
        # hosts' own tables (autoparser/export/hosts); files written before keep loading
        data = {k: v for k, v in data.items() if k != "runtime_names"}
        prof = _from_jsonable(cls, data, "")
        assert isinstance(prof, Profile)
        _check_semantics(prof)
        return prof

    @classmethod
    def from_json(cls, text: str) -> Profile:
        if not isinstance(text, str | bytes | bytearray):
            raise TypeError(f"Profile.from_json() takes the JSON text (str), got {type(text).__name__}")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ProfileError("<root>", f"not valid JSON: {e}") from None
        return cls.from_dict(data)


def _same_value(given: object, probed: object) -> bool:
    """A caller's value equals a probed one (``True`` is not ``1`` here: templates test them apart)."""
    return (type(given) is type(probed) and given == probed) or (
        isinstance(given, int | float) and isinstance(probed, int | float)
        and not isinstance(given, bool) and not isinstance(probed, bool) and given == probed)


# -- generic (de)serialisation of the frozen dataclasses above --------------------------------

_DATACLASSES: dict[str, type] = {}


def _to_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple | list):
        return [_to_jsonable(x) for x in obj]
    if isinstance(obj, Mapping):
        return {str(k): _to_jsonable(v) for k, v in obj.items()}
    return obj


def _from_jsonable(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, Mapping):
        raise ProfileError(path or "<root>", f"expected an object, got {type(data).__name__}")
    hints = get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ProfileError(_join(path, unknown[0]), f"unknown field (known: {', '.join(sorted(names))})")
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ProfileError(_join(path, f.name), "required field is missing")
            continue
        kwargs[f.name] = _convert(hints[f.name], data[f.name], _join(path, f.name))
    return cls(**kwargs)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


#: the JSON scalars a field may hold: what a value may be, and how a message names it
_SCALARS: dict[Any, tuple[tuple[type, ...], str]] = {
    bool: ((bool,), "true or false"), int: ((int,), "an integer"), float: ((int, float), "a number"),
    str: ((str,), "a string")}


def _convert(tp: Any, value: Any, path: str) -> Any:
    origin = get_origin(tp)
    args = get_args(tp)
    if dataclasses.is_dataclass(tp):
        return _from_jsonable(tp, value, path)  # type: ignore[arg-type]
    if origin is Literal:
        if value not in args:
            raise ProfileError(path, f"must be one of {', '.join(map(repr, args))}, got {value!r}")
        return value
    if _is_union(tp):
        if value is None and type(None) in args:
            return None
        last: ProfileError | None = None
        for alt in args:
            if alt is type(None):
                continue
            try:
                return _convert(alt, value, path)
            except ProfileError as e:
                last = e
        raise last or ProfileError(path, f"unexpected value {value!r}")
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ProfileError(path, f"expected a list, got {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise ProfileError(path, f"expected a list of {len(args)} items")
        return tuple(_convert(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True)))
    if origin in (Mapping, dict) or tp is dict:
        if not isinstance(value, Mapping):
            raise ProfileError(path, f"expected an object, got {type(value).__name__}")
        vt = args[1] if len(args) == 2 else Any
        return {str(k): _convert(vt, v, f"{path}.{k}") for k, v in value.items()}
    if tp is Any:
        return value
    if tp in _SCALARS:
        kinds, what = _SCALARS[tp]
        ok = isinstance(value, kinds) and (tp is bool or not isinstance(value, bool))
        if not ok:
            raise ProfileError(path, f"expected {what}, got {type(value).__name__ if tp is str else repr(value)}")
        return float(value) if tp is float else value
    raise ProfileError(path, f"cannot read a value of type {tp!r}")  # pragma: no cover


def _is_union(tp: Any) -> bool:
    origin = get_origin(tp)
    return origin is Union or origin is types.UnionType


def _check_semantics(p: Profile) -> None:
    """Cross-field rules a type check cannot express."""
    if not 0.0 <= p.confidence <= 1.0:
        raise ProfileError("confidence", f"must be within [0, 1], got {p.confidence}")
    for k, v in p.field_confidence.items():
        if not 0.0 <= v <= 1.0:
            raise ProfileError(f"field_confidence.{k}", f"must be within [0, 1], got {v}")
    for i, setting in enumerate(p.prompt_settings):
        if not setting.variable.isidentifier():
            raise ProfileError(f"prompt_settings[{i}].variable", f"must be a template variable name, "
                                                                 f"got {setting.variable!r}")
        if setting.reasoning != "explicit" and p.reasoning is None:
            raise ProfileError(f"prompt_settings[{i}].reasoning",
                               f"{setting.reasoning!r} needs reasoning markers (the profile has none)")
    if p.builtin is not None:
        for name in ("taken", "added"):
            _no_empty(f"builtin.{name}", getattr(p.builtin, name))
    _no_empty("strip", p.strip)
    _no_empty("content_open", p.content_open)
    _no_empty("content_close", p.content_close)
    if p.reasoning is not None:
        _no_empty("reasoning.open", p.reasoning.open)
        _no_empty("reasoning.close", p.reasoning.close)
        if not p.reasoning.close:
            raise ProfileError("reasoning.close", "a reasoning block needs at least one close marker")
    t = p.tools
    if t is not None:
        for name in ("section_open", "section_close", "call_open", "call_close", "lookahead_open",
                     "separators"):
            _no_empty(f"tools.{name}", getattr(t, name))
        if not (t.section_open or t.call_open or t.lookahead_open):
            raise ProfileError("tools", "tool calls need an opening marker "
                                        "(section_open, call_open or lookahead_open)")
        for name in ("lookahead_known_only", "lookahead_at_start"):
            for m in getattr(t, name):
                if m not in t.lookahead_open:
                    raise ProfileError(f"tools.{name}", f"{m!r} is not in lookahead_open")
        c = t.codec
        if "{index}{" in c.header or "}{index}" in c.header:
            raise ProfileError("tools.codec.header", "{index} must be separated from other slots by literal text")
        if c.kind in ("name_json", "tagged") and "{name}" not in c.header and "{id}" not in c.header:
            raise ProfileError("tools.codec.header", "must contain {name} or {id} for this codec kind")
        if c.kind == "tagged":
            if "{key}" not in c.param or "{value}" not in c.param:
                raise ProfileError("tools.codec.param", "must contain {key} and {value}")
            if c.param.index("{key}") > c.param.index("{value}"):
                raise ProfileError("tools.codec.param", "{key} must come before {value}")
        if c.kind == "json" and not c.name_keys and not c.name_as_key:
            raise ProfileError("tools.codec.name_keys", "needs at least one key (or name_as_key)")
        if c.kind == "pattern":
            _check_pattern(c.pattern)
        elif c.pattern is not None:
            raise ProfileError("tools.codec.pattern", "only a 'pattern' codec has a pattern")
        allowed = {"name_json": ("json", "relaxed", "python", "xml", "csv"),
                   "json": ("json", "python")}.get(c.kind, ("json",))
        if c.flavor not in allowed:
            raise ProfileError("tools.codec.flavor", f"{c.flavor!r} is a flavor of the name_json codec"
                               + (" (and 'python' of the json codec)" if c.flavor == "relaxed" else ""))
        for i, (a, b) in enumerate(c.string_delims):
            if not a or not b:
                raise ProfileError(f"tools.codec.string_delims[{i}]", "delimiters must not be empty")
        if len(c.relaxed_seps) != 2 or not all(c.relaxed_seps) or c.relaxed_seps[0] == c.relaxed_seps[1] or any(
                ch.isspace() or ch in "{}[]\"" for sep in c.relaxed_seps for ch in sep):
            raise ProfileError("tools.codec.relaxed_seps", "two different separators, without whitespace, "
                                                           "brackets or quotes")


_CALL_SLOTS = ("{name}", "{call_id}", "{index}", "{args}")
_ARG_SLOTS = ("{key}", "{value}", "{type}", "{index}")


def _check_pattern(pat: PatternSpec | None) -> None:
    """A pattern the engine can run: known slots, each slot followed by literal text or the end."""
    path = "tools.codec.pattern"
    if pat is None:
        raise ProfileError(path, "a 'pattern' codec needs a pattern")
    for name, text, allowed in (("call", pat.call, _CALL_SLOTS), ("arg", pat.arg, _ARG_SLOTS)):
        slots = re.findall(r"\{[a-z_]+\}", text)
        for slot in slots:
            if slot not in allowed:
                raise ProfileError(f"{path}.{name}", f"unknown slot {slot} (known: {', '.join(allowed)})")
            if text.count(slot) > 1 and slot in ("{value}", "{args}"):
                raise ProfileError(f"{path}.{name}", f"slot {slot} appears more than once")
        for a, b in re.findall(r"\{([a-z_]+)\}\{([a-z_]+)\}", text):
            if b != "args" or pat.arg.startswith("{"):
                raise ProfileError(f"{path}.{name}", f"slots {{{a}}} and {{{b}}} must be separated by literal "
                                                     "text (the arguments may follow a slot if they start with some)")
    if "{name}" not in pat.call:
        raise ProfileError(f"{path}.call", "must contain {name}")
    if "{args}" in pat.call:
        if "{value}" not in pat.arg:
            raise ProfileError(f"{path}.arg", "must contain {value}")
        if "{key}" not in pat.arg and (not pat.arg_sep.strip() or pat.value not in ("json", "python", "toml")):
            raise ProfileError(f"{path}.arg", "positional arguments (no {key}) need a separator and values "
                                              "that end by themselves (json, python, toml)")
        if "{key}" in pat.arg and pat.arg.index("{key}") > pat.arg.index("{value}"):
            raise ProfileError(f"{path}.arg", "{key} must come before {value}")
    elif pat.arg or pat.arg_sep:
        raise ProfileError(f"{path}.arg", "arguments need an {args} slot in the call")
    _no_empty(f"{path}.ends", pat.ends)
    if pat.types and "{type}" not in pat.arg:
        raise ProfileError(f"{path}.types", "spellings of types need a {type} slot in arg")


def _no_empty(path: str, markers: Sequence[str]) -> None:
    for i, m in enumerate(markers):
        if not m:
            raise ProfileError(f"{path}[{i}]", "markers must not be empty strings")


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a profile file, generated from the dataclasses (docs/profile.schema.json)."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "autoparser profile", **_schema_of(Profile)}


def _schema_of(tp: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(tp):
        hints = get_type_hints(tp)
        props = {f.name: _schema_of(hints[f.name]) for f in dataclasses.fields(tp)}
        required = [f.name for f in dataclasses.fields(tp)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        doc = (tp.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        out: dict[str, Any] = {"type": "object", "description": doc, "properties": props,
                               "additionalProperties": False}
        if required:
            out["required"] = required
        return out
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if _is_union(tp):
        alts = [_schema_of(a) for a in args if a is not type(None)]
        if type(None) in args:
            alts.append({"type": "null"})
        return alts[0] if len(alts) == 1 else {"anyOf": alts}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema_of(args[0])}
        return {"type": "array", "prefixItems": [_schema_of(a) for a in args],
                "minItems": len(args), "maxItems": len(args)}
    if origin in (Mapping, dict):
        return {"type": "object", "additionalProperties": _schema_of(args[1]) if len(args) == 2 else {}}
    simple = {str: "string", bool: "boolean", int: "integer", float: "number"}
    if tp in simple:
        return {"type": simple[tp]}
    return {}
