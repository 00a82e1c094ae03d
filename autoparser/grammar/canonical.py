"""The canonical layout: one spelling per call, for OpenVINO GenAI structured output.

:func:`grammar_for` turns a :class:`~autoparser.profile.Profile` plus the request's tools into a
structured-output spec (the plain-data vocabulary of :mod:`autoparser.live.structured`; build it
with :func:`~autoparser.live.structured.build_structured_output`). The spec is derived from the
profile's markers and codec only, so it works for any ``json``, ``name_json``, ``tagged`` or
``pythonic`` profile, builtin or derived, and for header-routed (Harmony) messages.

How a call is laid out (the profile says what is *accepted*; a grammar must pick one spelling):

* ``json``: ``{"<name key>": "NAME", "<args key>": ARGS}`` (``{"NAME": ARGS}`` with ``name_as_key``);
  several calls in one section form a JSON array unless the profile has separators.
* ``name_json``: the header with the name (an optional ``{call_id}`` part is left out), the
  arguments object (JSON, or the relaxed Gemma form with the profile's string delimiters), trailer.
* ``tagged``: header, one ``param`` element per argument, trailer, each on its own line.
* ``pythonic``: ``[name(key=value, ...), ...]`` with Python literals.
* Call and section markers: the first spelling of each. A plain XML-like text tag
  (``<tool_call>``) is followed and preceded by a newline, as Hermes/Qwen models write it; special
  tokens (``<|python_tag|>``, ``[TOOL_CALLS]``) are not.

Argument values follow the tool's JSON schema. The common subset (strings with ``pattern``/
``enum``/length bounds, integers, numbers, booleans, null, arrays, nested objects, ``anyOf``) is
compiled to a regex with a compact layout (``{"city": "Paris", "days": 3}``); anything else falls
back to a JSON-schema node that xgrammar compiles itself (JSON codecs only; whitespace is then the
model's choice). Integer bounds above 9 are approximated by their digit count. Raw (tagged) string
values cannot contain the first character of the text that closes them (``<`` for ``</parameter>``).

Two modes: ``"required"`` (the whole output is the call(s): what ``tool_choice="required"``
means) and ``"auto"`` (free text until the first call marker, which then forces a complete,
well-formed call block and ends the output). ``example_calls`` renders given calls with exactly
the layout the grammar forces, so tests can check grammar, layout and parser against each other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from autoparser.grammar.tree import (
    Alt,
    GrammarError,
    Lit,
    Node,
    Re,
    Rep,
    Schema,
    Seq,
    alt,
    fill,
    regex_literal,
    render,
    seq,
    to_spec,
    tool_schemas,
    triggered,
)
from autoparser.profile import CodecSpec, Profile
from autoparser.wire import CALL_NAME, json_types, name_class

__all__ = ["Mode", "example_calls", "grammar_for", "reasoning_spec", "structured_output_for"]

Mode = Literal["required", "auto"]

_ANY_NAME = name_class() + "{1,64}"  # the wire name rule; bounded, as a model writes names
_JSON_CHAR = r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})'
_PY_CHAR = r'(?:[^"\\\x00-\x1f]|\\["\\nrt])'
_INT = r"(?:0|[1-9][0-9]*)"
_FRACTION = r"(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_XMLISH = re.compile(r"</?[A-Za-z_][\w:.\-]*>\Z")
_GENERIC_ARGS: Mapping[str, Any] = {"type": "object"}

Style = Literal["json", "python", "relaxed", "raw"]


# -- values: JSON schema -> node, and concrete value -> text, per style ---------------------------


def _encode(value: Any, style: Style, delims: tuple[str, str] = ('"', '"'),
            seps: tuple[str, str] = (":", ",")) -> str:
    """``value`` written the way the grammar lays it out for ``style`` (``seps``: a relaxed
    object's key/value and member separators, which are also its array's)."""
    if style == "raw":
        return value if isinstance(value, str) else _encode(value, "json")
    if isinstance(value, bool):
        return ("True" if value else "False") if style == "python" else ("true" if value else "false")
    if value is None:
        return "None" if style == "python" else "null"
    if isinstance(value, str):
        if style == "relaxed":
            return delims[0] + value + delims[1]
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, list):
        joiner = seps[1] if style == "relaxed" else ", "
        return "[" + joiner.join(_encode(v, style, delims, seps) for v in value) + "]"
    if isinstance(value, Mapping):
        if style == "relaxed":
            return "{" + seps[1].join(f"{k}{seps[0]}{_encode(v, style, delims, seps)}"
                                      for k, v in value.items()) + "}"
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_encode(v, style, delims)}" for k, v in value.items()) + "}"
    raise GrammarError(f"cannot encode a {type(value).__name__}")


def _strip_anchors(pattern: str) -> str:
    if pattern.startswith("^"):
        pattern = pattern[1:]
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1]
    return pattern


def _bounds(schema: Mapping[str, Any], lo_key: str, hi_key: str) -> str:
    lo = schema.get(lo_key)
    hi = schema.get(hi_key)
    lo_n = lo if isinstance(lo, int) and not isinstance(lo, bool) and lo >= 0 else 0
    if isinstance(hi, int) and not isinstance(hi, bool) and hi >= lo_n:
        return f"{{{lo_n},{hi}}}"
    return f"{{{lo_n},}}" if lo_n else "*"


class _Values:
    """Builds value nodes for one style (``raw_stop`` is the character a raw value must avoid)."""

    def __init__(self, style: Style, delims: tuple[str, str] = ('"', '"'), raw_stop: str = "<",
                 seps: tuple[str, str] = (":", ",")) -> None:
        self.style = style
        self.delims = delims
        self.seps = seps
        self.raw_stop = raw_stop

    def node(self, schema: Any) -> Node:
        got = self._node(schema if isinstance(schema, Mapping) else {})
        if got is not None:
            return got
        if self.style == "json":
            return Schema(json.dumps(schema if isinstance(schema, Mapping) else {}, sort_keys=True))
        return Re(self._scalar_any())

    def _scalar_any(self) -> str:
        s = self._string_regex({})
        num = "-?" + _INT + _FRACTION
        lits = "True|False|None" if self.style == "python" else "true|false|null"
        return f"{s}|{num}|{lits}"

    def _string_regex(self, schema: Mapping[str, Any]) -> str:
        pattern = schema.get("pattern")
        q = _bounds(schema, "minLength", "maxLength")
        if self.style == "raw":
            if isinstance(pattern, str):
                return _strip_anchors(pattern)
            stop = regex_literal(self.raw_stop) if self.raw_stop else ""
            return f"[^{stop}]{q}" if stop else f"(?:.|\\n){q}"
        if self.style == "relaxed":
            a, b = (regex_literal(d) for d in self.delims)
            body = _strip_anchors(pattern) if isinstance(pattern, str) else f"[^{regex_literal(self.delims[1][0])}]{q}"
            return a + f"(?:{body})" + b
        inner = _strip_anchors(pattern) if isinstance(pattern, str) else (
            (_JSON_CHAR if self.style == "json" else _PY_CHAR) + q)
        return f'"(?:{inner})"'

    def _node(self, schema: Mapping[str, Any]) -> Node | None:
        if "const" in schema:
            return Lit(_encode(schema["const"], self.style, self.delims, self.seps))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return alt([Lit(_encode(v, self.style, self.delims, self.seps)) for v in schema["enum"]])
        for key in ("anyOf", "oneOf"):
            alts = schema.get(key)
            if isinstance(alts, list) and alts:
                nodes = [self._node(a) if isinstance(a, Mapping) else None for a in alts]
                if any(n is None for n in nodes):
                    return None
                return alt([n for n in nodes if n is not None])
        types = sorted(json_types(schema))
        if not types:
            return None
        nodes = [self._typed(t, schema) for t in types]
        if any(n is None for n in nodes):
            return None
        return alt([n for n in nodes if n is not None])

    def _typed(self, t: str, schema: Mapping[str, Any]) -> Node | None:
        if t == "string":
            return Re(self._string_regex(schema))
        if t == "integer":
            lo, hi = schema.get("minimum"), schema.get("maximum")
            if isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi <= 9:
                return Re(f"[{lo}-{hi}]")
            digits = f"(?:0|[1-9][0-9]{{0,{len(str(abs(hi))) - 1}}})" if isinstance(hi, int) else _INT
            sign = "" if isinstance(lo, int | float) and lo >= 0 else "-?"
            return Re(sign + digits)
        if t == "number":
            lo = schema.get("minimum")
            sign = "" if isinstance(lo, int | float) and lo >= 0 else "-?"
            return Re(sign + _INT + _FRACTION)
        if t == "boolean":
            return Re("True|False" if self.style == "python" else "true|false")
        if t == "null":
            return Lit("None" if self.style == "python" else "null")
        if self.style == "raw":  # a structured value in a tagged parameter is written as JSON
            return _Values("json").node(schema)
        if t == "array":
            items = schema.get("items")
            item = self._node(items) if isinstance(items, Mapping) else None
            if item is None:
                return None
            lo = schema.get("minItems", 0)
            hi = schema.get("maxItems")
            lo = lo if isinstance(lo, int) and lo >= 0 else 0
            hi = hi if isinstance(hi, int) and hi >= max(lo, 1) else None
            return seq(Lit("["), Rep(item, self.seps[1] if self.style == "relaxed" else ", ", lo, hi), Lit("]"))
        if t == "object":
            return self.object_node(schema)
        return None

    def key(self, name: str) -> str:
        return f"{name}{self.seps[0]}" if self.style == "relaxed" else json.dumps(name) + ": "

    def object_node(self, schema: Mapping[str, Any], values: Callable[[str, Any], Node] | None = None) -> Node | None:
        """A compact object with the declared properties in order; required ones always present."""
        props = schema.get("properties")
        if not isinstance(props, Mapping):
            if schema.get("additionalProperties") is False:
                return Lit("{}")
            if self.style == "json":
                return None  # xgrammar's own JSON-schema support does this better
            key = (r"[A-Za-z_][A-Za-z0-9_]{0,63}" + regex_literal(self.seps[0]) if self.style == "relaxed"
                   else r'"[A-Za-z_][A-Za-z0-9_]{0,63}": ')
            member = seq(Re(key), Re(self._scalar_any()))
            return seq(Lit("{"), Rep(member, self.seps[1] if self.style == "relaxed" else ", ", 0, None), Lit("}"))
        required = [k for k in schema.get("required") or () if k in props]
        sep = self.seps[1] if self.style == "relaxed" else ", "
        members: list[tuple[Node, bool]] = []
        for k, sub in props.items():
            v = values(k, sub) if values is not None else self._node(sub if isinstance(sub, Mapping) else {})
            if v is None:
                return None
            members.append((seq(Lit(self.key(str(k))), v), k in required))
        return seq(Lit("{"), _members(members, sep), Lit("}"))


def _members(members: list[tuple[Node, bool]], sep: str) -> Node:
    """Members in order, optional ones skippable, with separators only between present ones."""
    # first(i): the list starting at member i or later; tail(i): ", member_i ..." continuations.
    n = len(members)
    tail: list[Node] = [Lit("")] * (n + 1)
    first: list[Node | None] = [None] * (n + 1)
    first[n] = Lit("")
    for i in range(n - 1, -1, -1):
        node, req = members[i]
        with_it = seq(Lit(sep), node, tail[i + 1])
        tail[i] = with_it if req else alt([with_it, tail[i + 1]])
        start = seq(node, tail[i + 1])
        later = first[i + 1]
        first[i] = start if req or later is None else alt([start, later])
    result = first[0]
    assert result is not None
    return _optional_empty(result)


def _optional_empty(node: Node) -> Node:
    """Regex alternatives with an empty branch become ``(?:...)?`` (xgrammar dislikes ``a|``)."""
    if isinstance(node, Alt) and any(isinstance(i, Lit) and not i.text for i in node.items):
        rest = [i for i in node.items if not (isinstance(i, Lit) and not i.text)]
        return Rep(alt(rest), "", 0, 1)
    if isinstance(node, Seq):
        return Seq(tuple(_optional_empty(i) for i in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(_optional_empty(i) for i in node.items))
    return node



# One layout serves the grammar (value nodes built from schemas) and examples (concrete values as
# literals), so the text an example shows is by construction text the grammar accepts.
Param = tuple[str, Node, bool]  # (key, value node, value is a string)
Calls = Node | list[Node]  # one alternative per tool (grammar), or the given calls in order (example)


def _pad(marker: str, body: Calls) -> str:
    """A newline inside a plain XML-like text marker when the body starts with markup or JSON.

    ``<tool_call>\\n{...}\\n</tool_call>`` and ``<tool_call>\\n<function=...`` are how Hermes and
    Qwen write calls; special-token markers (``<|python_tag|>``) and bodies that start with a word
    (GLM's ``<tool_call>NAME``, Gemma's ``call:NAME``) take none.
    """
    if not marker or not _XMLISH.match(marker):
        return ""
    first = _first_char(body[0] if isinstance(body, list) else body)
    return "\n" if first is not None and not (first.isalnum() or first == "_") else ""


def _first_char(node: Node) -> str | None:
    if isinstance(node, Lit):
        return node.text[:1] or None
    if isinstance(node, Seq | Alt):
        return _first_char(node.items[0])
    if isinstance(node, Rep):
        return _first_char(node.item)
    return None


def _values_for(codec: CodecSpec) -> _Values:
    if codec.kind == "pythonic":
        return _Values("python")
    if codec.kind == "name_json" and codec.flavor == "relaxed":
        delims = codec.string_delims[0] if codec.string_delims else ('"', '"')
        return _Values("relaxed", delims, seps=codec.relaxed_seps)
    return _Values("json")


def _name_json_header(codec: CodecSpec, name_node: Node) -> tuple[Node, Node]:
    """(text before the arguments, text after them) for a ``name_json`` call."""
    header = codec.header
    slot = "{id}" if "{id}" in header else "{name}"
    ids: dict[str, Node] = {}
    if "{call_id}" in header and header.index("{call_id}") < header.index(slot):
        ids["call_id"] = Re("call_[0-9]{1,3}")  # a native id before the name: the parser needs one
    elif "{call_id}" in header:  # optional native id (Mistral v13): left out, with the marker before it
        j = header.index(slot) + len(slot)
        header = header[:j] + header[header.index("{call_id}") + len("{call_id}"):]
    if slot == "{id}":
        # bounded: an unbounded index (Kimi's ":\\d+") lets a small model write digits forever
        bounded = re.sub(r"(?<!\\)[+*]", lambda m: "{1,3}" if m.group() == "+" else "{0,3}", codec.id_name_suffix)
        suffix = Re(bounded) if bounded else Lit("")
        name_node = seq(Lit(codec.id_name_prefix), name_node, suffix)
    # a trailer that repeats the name (``</call:{name}>``) writes it again
    return fill(header, **{slot[1:-1]: name_node}, **ids), fill(codec.trailer, name=name_node)


def _one_call(codec: CodecSpec, name: str, args: Node, params: Sequence[Param],
              any_params: Node | None = None) -> Node:
    """One call's text (without call or section markers) in ``codec``.

    ``args`` is the arguments object (json, name_json); ``params`` the parameters (pythonic,
    tagged), or ``any_params`` a node for any parameters at all (no tools given).
    """
    name_node = Lit(name) if name else Re(CALL_NAME if codec.kind == "pythonic" else _ANY_NAME)
    if codec.kind == "json":
        if codec.name_as_key:
            key_node = Lit(json.dumps(name)) if name else Re('"' + _ANY_NAME + '"')
            return seq(Lit("{"), key_node, Lit(": "), args, Lit("}"))
        return seq(Lit("{" + json.dumps(codec.name_keys[0]) + ': "'), name_node,
                    Lit('", ' + json.dumps(codec.args_keys[0]) + ": "), args, Lit("}"))
    if codec.kind == "name_json":
        before, after = _name_json_header(codec, name_node)
        return seq(before, args, after)
    if codec.kind == "pythonic":
        parts: list[Node] = [name_node, Lit("(")]
        for i, (key, value, _is_string) in enumerate(params):
            parts += [Lit((", " if i else "") + key + "="), value]
        if any_params is not None:
            parts.append(any_params)
        return seq(*parts, Lit(")"))
    # tagged: header, one parameter per line, trailer
    lines: list[Node] = [fill(codec.header, name=name_node)]
    lines += [_tagged_param(codec, *p) for p in params]
    if any_params is not None:
        lines.append(any_params)
    if codec.trailer:
        lines.append(Lit(codec.trailer))
    out: list[Node] = []
    for i, line in enumerate(lines):
        out += [Lit("\n"), line] if i else [line]
    return seq(*out)


def _tagged_param(codec: CodecSpec, key: str, value: Node, is_string: bool) -> Node:
    return fill(codec.param, key=Lit(key), string=Lit(codec.string_true if is_string else "false"), value=value)


def _any_params(codec: CodecSpec, values: _Values) -> Node:
    """Any number of parameters with any names (the grammar for a call when no tools are given)."""
    key = Re(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
    value = Re(values._scalar_any())
    if codec.kind == "pythonic":
        return Rep(seq(key, Lit("="), value), ", ", 0, None)
    if codec.param.count("{key}") > 1:
        raise GrammarError("this parameter format repeats the key; a grammar for it needs the tools")
    flag = Re(f"(?:{regex_literal(codec.string_true)}|false)")
    return Rep(fill(codec.param, key=key, string=flag, value=value), "\n", 0, None)


def _raw_stop(codec: CodecSpec) -> str:
    return codec.param.partition("{value}")[2].lstrip(" \t\r\n")[:1]


def _tool_calls(profile: Profile, schemas: Mapping[str, Mapping[str, Any]]) -> Node:
    """The alternatives for one call (one per tool; any name and arguments without tools)."""
    assert profile.tools is not None
    codec = profile.tools.codec
    vals = _values_for(codec)
    out: list[Node] = []
    for name, schema in list(schemas.items()) or [("", _GENERIC_ARGS)]:
        if codec.kind in ("tagged", "pythonic"):
            pv = _Values("raw", raw_stop=_raw_stop(codec)) if codec.kind == "tagged" else vals
            props = schema.get("properties")
            if not isinstance(props, Mapping):
                props = {}
            required = set(schema.get("required") or ())
            params: list[Param] = [
                (str(k), pv.node(sub), "string" in json_types(sub if isinstance(sub, Mapping) else {}))
                for k, sub in props.items()
            ]
            if not name:  # no tools: any tool name, any parameters
                out.append(_one_call(codec, name, Lit(""), [], _any_params(codec, pv)))
                continue
            out.append(_optional_params(codec, name, params, [k for k in props if k not in required]))
        else:
            obj = vals.object_node(schema)
            out.append(_one_call(codec, name, obj if obj is not None else vals.node(schema), []))
    return alt(out)


def _optional_params(codec: CodecSpec, name: str, params: list[Param], optional: list[str]) -> Node:
    """Tagged/pythonic calls: every subset of the optional parameters, in declared order."""
    if len(optional) > 4:
        raise GrammarError(f"tool {name!r}: more than 4 optional parameters in a {codec.kind} call")
    variants = []
    for mask in range(1 << len(optional)):
        skip = {k for i, k in enumerate(optional) if mask >> i & 1}
        variants.append(_one_call(codec, name, Lit(""), [p for p in params if p[0] not in skip]))
    return alt(variants)


def _example_calls(profile: Profile, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Node]:
    assert profile.tools is not None
    codec = profile.tools.codec
    vals = _values_for(codec)
    out = []
    for name, arguments in calls:
        if codec.kind == "pythonic":
            params: list[Param] = [(k, Lit(_encode(v, "python")), False) for k, v in arguments.items()]
        else:
            params = [(k, Lit(_encode(v, "raw")), isinstance(v, str)) for k, v in arguments.items()]
        out.append(_one_call(codec, name, Lit(_encode(dict(arguments), vals.style, vals.delims, vals.seps)), params))
    return out


def _many(calls: Calls, sep: str, count: tuple[int, int | None]) -> Node:
    """``count`` calls joined by ``sep``: a repetition (grammar) or the given list (example)."""
    if isinstance(calls, list):
        parts: list[Node] = []
        for i, c in enumerate(calls):
            parts += [Lit(sep), c] if i else [c]
        return seq(*parts)
    return Rep(calls, sep, *count)


def _block(profile: Profile, calls: Calls, count: tuple[int, int | None]) -> Node:
    """Calls with their markers, separators and section."""
    t = profile.tools
    assert t is not None
    codec = t.codec
    so = t.section_open[0] if t.section_open else ""
    sc = t.section_close[0] if t.section_close else ""
    o = t.call_open[0] if t.call_open else ""
    c = t.call_close[0] if t.call_close else ""
    if codec.kind == "pythonic":  # one list holds every call; markers (LFM2) go around the list
        listed = _many(calls, ", ", count)
        if codec.array != "never":  # ``never``: the calls without list brackets
            listed = seq(Lit("["), listed, Lit("]"))
        return seq(Lit(so + o), listed, Lit(c + sc))
    if o:
        po = _pad(o, calls)
        wrap: Calls = (
            [seq(Lit(o + po), x, Lit(po + c)) for x in calls] if isinstance(calls, list)
            else seq(Lit(o + po), calls, Lit(po + c))
        )
        body = _many(wrap, t.separators[0] if t.separators else ("" if so else "\n"), count)
    elif t.separators:
        body = _many(calls, t.separators[0], count)
    elif codec.kind == "json" and (codec.array == "require" or (codec.array == "allow" and (
            so or ("[" in t.lookahead_open and "{" not in t.lookahead_open)))):  # a bare '[' opens a list
        body = seq(Lit("["), _many(calls, ", ", count), Lit("]"))
    elif so and not sc:
        # no closing marker: every call gets its own opening marker (Mistral v11)
        each = [seq(Lit(so), x) for x in calls] if isinstance(calls, list) else seq(Lit(so), calls)
        return _many(each, "", count)
    else:
        body = _many(calls, "\n" if codec.kind == "tagged" else "", count)
    if not so:
        return body
    ps = _pad(so, body)
    return seq(Lit(so + ps), body, Lit(ps + sc))


def _harmony(profile: Profile, calls: Sequence[tuple[str, Node]], count: tuple[int, int | None],
             example: bool = False) -> Node:
    m = profile.messages
    assert m is not None
    end = next((e for e in m.ends if "call" in e), m.ends[0] if m.ends else "")
    options: list[Node] = [
        seq(Lit(f"{m.channel}{m.call_channel} {m.recipient_prefix}"), Lit(n) if n else Re(_ANY_NAME),
             Lit(f" {m.constrain}{m.content_types[0] if m.content_types else ''}{m.message}"), args, Lit(end))
        for n, args in calls
    ]
    return _many(options if example else alt(options), "", count)


def _count(min_calls: int, max_calls: int | None) -> tuple[int, int | None]:
    if min_calls < 1 or (max_calls is not None and max_calls < min_calls):
        raise GrammarError(f"need 1 <= min_calls <= max_calls, got {min_calls}, {max_calls}")
    return min_calls, max_calls


def _check(profile: Profile) -> None:
    if profile.tools is None and profile.messages is None:
        raise GrammarError(f"profile {profile.name or '(derived)'} has no tool-call format to force")
    if profile.tools is not None and profile.tools.codec.kind == "pattern":
        raise GrammarError("the pattern codec has no grammar back-end yet (docs/profile.md)")


def _tree(profile: Profile, tools: object, count: tuple[int, int | None]) -> Node:
    _check(profile)
    schemas = tool_schemas(tools, profile)
    if profile.tools is None:  # header-routed messages (Harmony)
        vals = _Values("json")
        calls = [(n, vals.object_node(s) or vals.node(s)) for n, s in
                 (list(schemas.items()) or [("", _GENERIC_ARGS)])]
        return _harmony(profile, calls, count)
    return _block(profile, _tool_calls(profile, schemas), count)


def grammar_for(
    profile: Profile,
    tools: object,
    *,
    mode: Mode = "required",
    min_calls: int = 1,
    max_calls: int | None = 1,
) -> dict[str, Any]:
    """A structured-output spec forcing ``profile``'s tool-call format for ``tools``.

    ``tools`` are OpenAI-style tool definitions (or ``{name: parameters schema}``); with none, any
    tool name and any arguments are allowed. ``mode="required"``: the output is ``min_calls`` to ``max_calls``
    calls (``max_calls=None``: no limit) and nothing else. ``mode="auto"``: free text, and once the
    model writes the format's first marker, a complete call block that ends the output (the first
    marker must be distinctive: a bare ``{`` or ``[`` opening would capture any brace in prose).

    Returns a JSON-able dict for :func:`~autoparser.live.structured.build_structured_output`:
    ``{"kind": "regex", ...}`` when everything compiles to one regex, otherwise
    ``{"kind": "structural_tags", ...}``. Raises :class:`GrammarError` for a profile without a
    tool format.
    """
    tree = _tree(profile, tools, _count(min_calls, max_calls))
    if mode == "required":
        return to_spec(tree)
    if mode != "auto":
        raise GrammarError(f"unknown mode {mode!r} (required or auto)")
    return {"kind": "structural_tags", "tag": triggered(tree)}



def structured_output_for(profile: Profile, tools: object, **kw: Any) -> Any:
    """:func:`grammar_for` built into an ``openvino_genai.StructuredOutputConfig`` (imports OpenVINO)."""
    from autoparser.live.structured import build_structured_output

    return build_structured_output(grammar_for(profile, tools, **kw))


def example_calls(profile: Profile, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """``calls`` written exactly as :func:`grammar_for` lays them out (for tests and docs)."""
    _check(profile)
    if not calls:
        raise GrammarError("no calls to write")
    count = (len(calls), len(calls))
    if profile.tools is None:
        args = [(n, Lit(_encode(dict(a), "json"))) for n, a in calls]
        return render(_harmony(profile, args, count, example=True))
    return render(_block(profile, _example_calls(profile, calls), count))



def reasoning_spec(
    profile: Profile, text_pattern: str, then_pattern: str, *, prefilled: bool = False
) -> dict[str, Any]:
    """A regex spec for a reasoning block in ``profile``'s markers followed by ``then_pattern``.

    With ``prefilled`` the open marker is left out (the prompt wrote it). ``text_pattern`` should
    not be able to produce the close marker.
    """
    r = profile.reasoning
    if r is None or not r.close:
        raise GrammarError(f"profile {profile.name or '(derived)'} has no reasoning markers")
    opening = "" if prefilled or not r.open else regex_literal(r.open[0])
    return {"kind": "regex", "regex": f"{opening}{text_pattern}{regex_literal(r.close[0])}{then_pattern}"}
