"""One layout per codec: a profile plus tools as one grammar tree (see :mod:`.tree`).

The tree holds every spelling the parser reads; where there are several, a ``Choice`` lists the
canonical one first, and a ``Ws`` carries the canonical whitespace. The canonical layout (what
:func:`~autoparser.grammar.grammar_for` forces and :func:`~autoparser.grammar.example_calls`
writes) is the forcing print of the same tree:

* ``json``: ``{"<name key>": "NAME", "<args key>": ARGS}`` (``{"NAME": ARGS}`` with ``name_as_key``);
  a JSON array where the profile writes lists of calls. Accepted too: either key order, every key
  alias, a leading call id, any whitespace.
* ``name_json``: header with the name (an optional ``{call_id}`` part left out), arguments, trailer.
* ``tagged``: header, one ``param`` element per argument, trailer, each on its own line. A raw
  string value is any text without its closing element (canonically without its first character).
* ``pythonic``: ``[name(key=value, ...), ...]`` with Python literals (JSON spellings accepted).
* Markers: the first spelling of each; a plain XML-like marker (``<tool_call>``) takes a newline
  inside it when the body starts with markup or JSON, as Hermes/Qwen models write it.

Values follow the tool's JSON schema: properties in schema order (required ones always present, no
extra ones), enums, nested objects, arrays, ``anyOf``. Forcing back-ends also narrow by ``pattern``,
length and small integer bounds; anything they cannot express falls back to a JSON-schema node
xgrammar compiles itself. Accepting back-ends widen unsupported keywords to the type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from autoparser.grammar.tree import (
    EMPTY,
    Alt,
    Choice,
    Cls,
    Excluding,
    GrammarError,
    Group,
    Lit,
    Node,
    Re,
    Ref,
    Rep,
    Rule,
    Schema,
    Seq,
    Ws,
    alt,
    canonical,
    choice,
    escape,
    has_schema,
    lits,
    opt,
    regex_literal,
    seq,
)
from autoparser.profile import CodecSpec, MessagesSpec, Profile, ToolSpec
from autoparser.wire import CALL_NAME, ToolsError, json_types, name_class, normalized, read_tools, writable

__all__ = ["Layout", "tool_schemas"]

Flavor = Literal["json", "python", "relaxed"]
Count = tuple[int, int | None]
MANY: Count = (1, None)
_WS = " \t\r\n"
_XMLISH = re.compile(r"</?[A-Za-z_][\w:.\-]*>\Z")
_NAME_CHAR = Cls(name_class()[1:-1])
_ANY_NAME = choice(Re(name_class() + "{1,64}"), Rep(_NAME_CHAR, EMPTY, 1, None))
_IDENT = seq(Cls("A-Za-z_"), Rep(Cls("A-Za-z0-9_"), EMPTY, 0, None))
_DIGITS = Rep(Cls("0-9"), EMPTY, 1, None)
_INT = seq(opt(Lit("-")), alt([Lit("0"), seq(Cls("1-9"), Rep(Cls("0-9"), EMPTY, 0, None))]))
_NUMBER = seq(_INT, opt(seq(Lit("."), _DIGITS)),  # two exponent digits: always finite
              opt(seq(Cls("eE"), opt(Cls("\\-+")), Cls("0-9"), opt(Cls("0-9")))))
_HEX = Cls("0-9a-fA-F")
_JCHAR = alt([Cls('^"\\\\\\x00-\\x1F'), seq(Lit("\\"), alt([Cls('"\\\\/bfnrt'), seq(Lit("u"), _HEX, _HEX, _HEX, _HEX)]))])
_JSTRING = Rule("json-string", seq(Lit('"'), Rep(_JCHAR, EMPTY, 0, None), Lit('"')))
_PY_ESC = seq(Lit("\\"), Cls("\\\\'\"nrtabfv"))
_PY_STRING = Rule("py-string", choice(seq(Lit('"'), Rep(alt([Cls('^"\\\\\\n'), _PY_ESC]), EMPTY, 0, None), Lit('"')),
                                      seq(Lit("'"), Rep(alt([Cls("^'\\\\\\n"), _PY_ESC]), EMPTY, 0, None), Lit("'"))))


def tool_schemas(tools: object, profile: Profile | None = None) -> dict[str, Mapping[str, Any]]:
    """``{name: parameters schema}`` read by :func:`autoparser.wire.read_tools` (any tool shape),
    each schema normalized (``$ref`` and type aliases resolved as validation resolves them). With
    ``profile``, every name must be one its calls (or Harmony message headers) can carry."""
    try:
        found = read_tools(tools, strict=True)
    except ToolsError as exc:
        raise GrammarError(str(exc)) from None
    t = profile.tools if profile is not None else None
    kinds = [c.kind for c in (t.codec, t.alt_codec) if c is not None] if t is not None else [None]
    for name in found if profile is not None else ():
        for kind in kinds:
            if not writable(name, kind):
                where = f"a {kind} call" if kind else "a Harmony header (not a name by the wire rule)"
                raise GrammarError(f"tool name {name!r} cannot be written in {where}")
    return {name: normalized(params) if params else {"type": "object", "properties": {}}
            for name, params in found.items()}


def pattern(text: str) -> Node:
    """A literal whose whitespace runs match any whitespace (at least one inside a tag)."""
    parts = re.split(r"(\s+)", text)
    out: list[Node] = []
    for i, p in enumerate(parts):
        if p.isspace():
            inside = 0 < i < len(parts) - 1 and not (parts[i - 1].endswith(">") or parts[i + 1].startswith("<"))
            out.append(Ws(p, plus=inside))
        elif p:
            out.append(Lit(p))
    return seq(*out)


def _bounded(schema: Mapping[str, Any], lo_key: str, hi_key: str) -> tuple[int, int | None] | None:
    lo, hi = schema.get(lo_key), schema.get(hi_key)
    lo_n = lo if isinstance(lo, int) and not isinstance(lo, bool) and lo >= 0 else 0
    hi_n = hi if isinstance(hi, int) and not isinstance(hi, bool) and hi >= lo_n else None
    return (lo_n, hi_n) if lo_n or hi_n is not None else None


def _rx_times(b: tuple[int, int | None] | None) -> str:
    if b is None:
        return "*"
    return f"{{{b[0]},{b[1]}}}" if b[1] is not None else f"{{{b[0]},}}"


def _strip_anchors(p: str) -> str:
    p = p[1:] if p.startswith("^") else p
    return p[:-1] if p.endswith("$") and not p.endswith("\\$") else p


def _members(members: Sequence[tuple[Node, bool]], sep: Node) -> Node:
    """Members in order, optional ones skippable, with separators only between present ones."""
    n = len(members)
    tail: list[Node] = [EMPTY] * (n + 1)  # ", member_i ..." continuations
    first: list[Node] = [EMPTY] * (n + 1)  # the list starting at member i or later
    for i in range(n - 1, -1, -1):
        node, req = members[i]
        with_it = seq(sep, node, tail[i + 1])
        tail[i] = with_it if req else alt([with_it, tail[i + 1]])
        start = seq(node, tail[i + 1])
        first[i] = start if req else alt([start, first[i + 1]])
    return first[0]


@dataclass(frozen=True)
class Values:
    """Value nodes for one flavor (``delims``/``seps``: a relaxed object's string delimiters and
    separators)."""

    flavor: Flavor
    delims: tuple[tuple[str, str], ...] = ()
    seps: tuple[str, str] = (":", ",")


    def encode(self, value: Any) -> str:
        """``value`` as the canonical layout writes it."""
        if isinstance(value, bool):
            return ("True" if value else "False") if self.flavor == "python" else json.dumps(value)
        if value is None:
            return "None" if self.flavor == "python" else "null"
        if isinstance(value, str):
            if self.flavor == "relaxed" and self.delims:
                return self.delims[0][0] + value + self.delims[0][1]
            return json.dumps(value, ensure_ascii=False)
        if isinstance(value, list):
            return "[" + ", ".join(self.encode(v) for v in value) + "]"
        if isinstance(value, Mapping):
            kv, sep = self.seps if self.flavor == "relaxed" else (": ", ", ")
            key = (lambda k: k) if self.flavor == "relaxed" else (lambda k: json.dumps(k, ensure_ascii=False))
            return "{" + sep.join(f"{key(str(k))}{kv}{self.encode(v)}" for k, v in value.items()) + "}"
        return json.dumps(value)

    def literal(self, value: Any) -> Node:
        """One value: the canonical spelling first, then the others the parser reads."""
        alts = [self.encode(value), json.dumps(value, ensure_ascii=False)]
        if self.flavor == "python":
            alts.append(repr(value))
        if self.flavor == "relaxed" and isinstance(value, str):
            alts += [a + value + b for a, b in self.delims]
        return lits(list(dict.fromkeys(alts)))

    # -- scalars -------------------------------------------------------------------------------------
    def string(self, schema: Mapping[str, Any]) -> Node:
        pat = schema.get("pattern")
        b = _bounded(schema, "minLength", "maxLength")
        if self.flavor == "python":
            wide: Node = _PY_STRING
        elif self.flavor == "relaxed":
            wide = choice(*(seq(Lit(a), choice(Rep(Cls("^" + escape(z[0], "\\]-^[")), EMPTY, 0, None),
                                               Excluding((z,))), Lit(z)) for a, z in self.delims), _JSTRING)
            if self.delims:
                a, z = self.delims[0]
                body = _strip_anchors(pat) if isinstance(pat, str) else f"[^{regex_literal(z[0])}]{_rx_times(b)}"
                return choice(Re(regex_literal(a) + f"(?:{body})" + regex_literal(z)), wide) if (
                    isinstance(pat, str) or b) else wide
        else:
            wide = _JSTRING
        if isinstance(pat, str):
            return choice(Re(f'"(?:{_strip_anchors(pat)})"'), wide)
        if b is not None:
            ch = '(?:[^"\\\\\\x00-\\x1f]|\\\\["\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})'
            return choice(Re(f'"{ch}{_rx_times(b)}"'), wide)
        return wide

    def any(self, schema: Mapping[str, Any] | None = None) -> Node:
        """Any value (a JSON-schema node when forced in JSON: xgrammar types it better)."""
        if self.flavor == "json":
            return choice(Schema(json.dumps(schema or {}, sort_keys=True)), self.rules()[0])
        scalar = alt([self.string({}), _NUMBER, self.boolean(), self.null()])
        return choice(scalar, self.rules()[0])

    def any_object(self, schema: Mapping[str, Any] | None) -> Node:
        if self.flavor == "json":
            return choice(Schema(json.dumps(schema or {"type": "object"}, sort_keys=True)), self.rules()[1])
        relaxed = self.flavor == "relaxed"
        key = Re(r"[A-Za-z_][A-Za-z0-9_]{0,63}:" if relaxed else r'"[A-Za-z_][A-Za-z0-9_]{0,63}": ')
        scalar = alt([self.string({}), _NUMBER, self.boolean(), self.null()])
        return choice(seq(Lit("{"), Rep(seq(key, scalar), Lit("," if relaxed else ", "), 0, None), Lit("}")),
                      self.rules()[1])

    def arguments(self, schema: Mapping[str, Any] | None) -> Node:
        """A call's arguments object; forced as one JSON-schema node when a part of it needs one
        (the node then carries the whole schema, ``$defs`` included)."""
        args = self.object(schema)
        if self.flavor == "json" and schema is not None and has_schema(canonical(args)):
            return choice(Schema(json.dumps(schema, sort_keys=True)), args)
        return args

    def rules(self) -> tuple[Node, Node]:
        """Any value and any object, recursively (accepting back-ends)."""
        t = self.flavor
        kv, sep = self.seps
        key: Node = _JSTRING
        if self.flavor == "python":
            key = _PY_STRING
        elif self.flavor == "relaxed":
            bare = "".join(dict.fromkeys(",:" + kv[0] + sep[0]))
            key = alt([seq(Lit('"'), Rep(Cls('^"'), EMPTY, 0, None), Lit('"')),
                       Rep(Cls("^ \\t\\r\\n{}\\[\\]" + "".join(escape(c, "\\]-^[") for c in bare)), EMPTY, 1, None)])
        def obj(value: Node) -> Node:
            member = seq(key, Ws(), Lit(kv), Ws(), value, Ws())
            return seq(Lit("{"), Ws(), opt(seq(member, Rep(seq(Lit(sep), Ws(), member), EMPTY, 0, None))), Lit("}"))

        ref = Ref(t + "-value")
        arr = seq(Lit("["), Ws(), opt(seq(ref, Ws(), Rep(seq(Lit(sep), Ws(), ref, Ws()), EMPTY, 0, None))), Lit("]"))
        value = Rule(t + "-value", alt([Rule(t + "-object", obj(ref)), Rule(t + "-array", arr), self.string({}),
                                        _NUMBER, self.boolean(), self.null()]))
        return value, obj(value)

    def boolean(self) -> Node:
        if self.flavor == "python":
            return alt([lits(["True", "true"]), lits(["False", "false"])])
        return alt([Lit("true"), Lit("false")])

    def null(self) -> Node:
        return lits(["None", "null"]) if self.flavor == "python" else Lit("null")

    def integer(self, schema: Mapping[str, Any]) -> Node:
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi <= 9:
            return choice(Cls(f"{lo}-{hi}"), _INT)
        if isinstance(hi, int) or (isinstance(lo, int | float) and lo >= 0):
            digits = f"(?:0|[1-9][0-9]{{0,{len(str(abs(hi))) - 1}}})" if isinstance(hi, int) else "(?:0|[1-9][0-9]*)"
            sign = "" if isinstance(lo, int | float) and lo >= 0 else "-?"
            return choice(Re(sign + digits), _INT)
        return _INT

    # -- schema -> node ----------------------------------------------------------------------------------
    def value(self, schema: Any) -> Node:
        if not isinstance(schema, Mapping) or not schema:
            return self.any()
        if "const" in schema:
            return self.literal(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return alt([self.literal(v) for v in schema["enum"]])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                return alt([self.value(s) for s in schema[key]])
        types = sorted(json_types(schema))
        if not types:
            return self.any(schema)
        out = [self.typed(t, schema) for t in types]
        if schema.get("nullable") is True:
            out.append(self.null())
        return alt(out)

    def typed(self, t: str, schema: Mapping[str, Any]) -> Node:
        if t == "string":
            return self.string(schema)
        if t == "integer":
            return self.integer(schema)
        if t == "number":
            lo = schema.get("minimum")
            return choice(Re("(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]{1,2})?"), _NUMBER) if (
                isinstance(lo, int | float) and lo >= 0) else _NUMBER
        if t == "boolean":
            return self.boolean()
        if t == "null":
            return self.null()
        if t == "array":
            items = schema.get("items")
            b = _bounded(schema, "minItems", "maxItems") or (0, None)
            sep = seq(Ws(), Lit(self.seps[1] if self.flavor == "relaxed" else ","), Ws(" "))
            return seq(Lit("["), Ws(), Rep(self.value(items), sep, *b), Ws(), Lit("]"))
        if t == "object":
            return self.object(schema)
        return self.any(schema)

    def key(self, k: str) -> Node:
        q = json.dumps(k, ensure_ascii=False)
        if self.flavor == "relaxed":
            return lits([k, q])
        return lits([q, repr(k)]) if self.flavor == "python" else Lit(q)

    def object(self, schema: Mapping[str, Any] | None, values: Any = None) -> Node:
        """An object with the declared properties in order; required ones always present."""
        props = schema.get("properties") if schema is not None else None
        if not isinstance(props, Mapping) or not props:
            if schema is not None and (schema.get("additionalProperties") is False or isinstance(props, Mapping)):
                return choice(seq(Lit("{"), Ws(), Lit("}")), self.any_object(schema))
            return self.any_object(schema)
        relaxed = self.flavor == "relaxed"
        kv, sep = self.seps if relaxed else (":", ",")
        required = set(schema.get("required") or ()) if schema is not None else set()
        members = [(seq(self.key(str(k)), Ws(), Lit(kv), Ws("" if relaxed else " "),
                        values(k, sub) if values is not None else self.value(sub)), k in required)
                   for k, sub in props.items()]
        return seq(Lit("{"), Ws(), _members(members, seq(Ws(), Lit(sep), Ws("" if relaxed else " "))), Ws(), Lit("}"))


def _values(codec: CodecSpec) -> Values:
    if codec.kind == "pythonic":
        return Values("python")
    if codec.kind == "name_json" and codec.flavor == "relaxed":
        return Values("relaxed", codec.string_delims, codec.relaxed_seps)
    return Values("json")


def _first_char(node: Node) -> str | None:
    node = canonical(node)
    while True:
        if isinstance(node, Lit):
            return node.text[:1] or None
        if isinstance(node, Alt | Choice | Seq):
            node = node.items[0]
        elif isinstance(node, Rep):
            node = node.item
        else:
            return None


def _pad(marker: str, body: Node) -> str:
    """The newline a plain XML-like text marker takes when the body starts with markup or JSON."""
    if not marker or not _XMLISH.match(marker):
        return ""
    first = _first_char(body)
    return "\n" if first is not None and not (first.isalnum() or first == "_") else ""


def _many(item: Node, sep: Node, count: Count | None) -> Node:
    """Calls repeated: ``count`` of them where the canonical layout counts, else one (or more)."""
    if count is not None:
        return Rep(item, sep, *count)
    return choice(item, Rep(item, sep, 1, None))


class Layout:
    """The tree of one profile's calls for a tool set (``{name: schema}``; empty: any tool)."""

    def __init__(self, profile: Profile, tools: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        self.p = profile
        #: (name, schema) per alternative; (None, None): any tool. An example lists its calls in order.
        self.tools: list[tuple[str | None, Mapping[str, Any] | None]] = list(tools) or [(None, None)]
        self.after: dict[str, Node] = {}  # per trigger, what follows it (structural tags)
        self.single: Node | None = None  # a JSON call as one object (a bare ``{`` opens one)

    @property
    def t(self) -> ToolSpec:
        if self.p.tools is None:
            raise GrammarError(f"profile {self.p.name or '<derived>'!r} has no tool markers")
        return self.p.tools

    def name(self, name: str | None, python: bool = False) -> Node:
        if name is not None:
            return Lit(name)
        return choice(Re(CALL_NAME), seq(_IDENT, Rep(seq(Lit("."), _IDENT), EMPTY, 0, None))) if python else _ANY_NAME

    # -- one call per codec ------------------------------------------------------------------------
    def call(self, c: CodecSpec, name: str | None, schema: Mapping[str, Any] | None) -> Node:
        if c.kind == "pattern":
            raise GrammarError("the pattern codec has no grammar back-end yet (docs/profile.md)")
        v = _values(c)
        if c.kind == "json":
            args = v.arguments(schema)
            if c.name_as_key:
                key = Lit(json.dumps(name)) if name is not None else choice(Re('"' + name_class() + '{1,64}"'), _JSTRING)
                return seq(Lit("{"), Ws(), key, Ws(), Lit(":"), Ws(" "), args, Ws(), Lit("}"))
            nv = Lit(json.dumps(name, ensure_ascii=False)) if name is not None else seq(Lit('"'), _ANY_NAME, Lit('"'))
            name_kv = seq(lits([json.dumps(k) for k in c.name_keys]), Ws(), Lit(":"), Ws(" "), nv)
            args_kv = seq(lits([json.dumps(k) for k in c.args_keys]), Ws(), Lit(":"), Ws(" "), args)
            sep = seq(Ws(), Lit(","), Ws(" "))
            id_kv = choice(EMPTY, seq(lits([json.dumps(k) for k in c.id_keys]), Ws(), Lit(":"), Ws(),
                                      alt([_JSTRING, _INT]), sep)) if c.id_keys else EMPTY
            return seq(Lit("{"), Ws(), id_kv, choice(seq(name_kv, sep, args_kv), seq(args_kv, sep, name_kv)), Ws(),
                       Lit("}"))
        if c.kind == "name_json":
            trailer = c.trailer.strip(_WS)
            tail: list[Node] = []
            for i, part in enumerate(trailer.split("{name}") if trailer else ()):
                tail += [self.name(name), pattern(part)] if i else [pattern(part)]
            lead = Ws(c.trailer[: len(c.trailer) - len(c.trailer.lstrip(_WS))]) if trailer else EMPTY
            return seq(self.header(c, name), Ws(), v.arguments(schema), lead, *tail)
        props = schema.get("properties") if schema is not None else None
        required = set(schema.get("required") or ()) if schema is not None else set()
        if c.kind == "pythonic":
            if schema is None:
                kw = seq(_IDENT, Ws(), Lit("="), Ws(), v.any())
                kwargs = opt(seq(kw, Rep(seq(Ws(), Lit(","), Ws(" "), kw), EMPTY, 0, None)))
            else:
                kwargs = _members([(seq(Lit(str(k)), Ws(), Lit("="), Ws(), v.value(sub)), k in required)
                                   for k, sub in (props or {}).items()], seq(Ws(), Lit(","), Ws(" ")))
            return seq(self.name(name, python=True), Ws(), Lit("("), Ws(), kwargs, Ws(), Lit(")"))
        # tagged: header, one parameter per line, trailer
        params: Node = Rep(self.param(c, None, None), Ws("\n"), 0, None)
        if schema is not None:
            params = _members([(self.param(c, str(k), sub), k in required) for k, sub in (props or {}).items()],
                              Ws("\n"))
        trailer = c.trailer.strip(_WS)
        return seq(self.header(c, name), Ws("\n"), params, *((Ws("\n"), pattern(trailer)) if trailer else ()))

    def header(self, c: CodecSpec, name: str | None) -> Node:
        """The call header with the name (or an id carrying it) filled in."""
        h = c.header
        out: list[Node] = []
        pos = 0
        for m in re.finditer(r"\{(name|id|call_id)\}", h):
            out.append(pattern(h[pos:m.start()]))
            pos = m.end()
            if m.group(1) == "name":
                out += [Group("name", self.name(name)), Ws()]
            elif m.group(1) == "id":
                # bounded when forced: an unbounded index (Kimi's ":\\d+") lets a small model write digits forever
                bounded = re.sub(r"(?<!\\)[+*]", lambda x: "{1,3}" if x.group() == "+" else "{0,3}", c.id_name_suffix)
                pre = choice(Lit(c.id_name_prefix), EMPTY) if c.id_name_prefix else EMPTY
                suffix = choice(Re(bounded), self.suffix(c.id_name_suffix)) if bounded else EMPTY
                out += [Group("id", seq(pre, Group("name", self.name(name)), suffix)), Ws()]
            else:  # an optional native id (Mistral v13): left out when forced, with the marker before it
                out.append(choice(EMPTY, seq(out.pop(), Group("id", Rep(Cls("a-zA-Z0-9_\\-"), EMPTY, 1, None)))))
        return seq(*out, pattern(h[pos:]))

    @staticmethod
    def suffix(rx: str) -> Node:
        r"""The id suffix regex as nodes; only literal text, ``\d+`` and ``\d*`` are translated."""
        out: list[Node] = []
        for m in re.finditer(r"\\d[+*]|\\(.)|(.)", rx):
            if m.group().startswith("\\d"):
                out.append(Rep(Cls("0-9"), EMPTY, 1 if m.group()[2] == "+" else 0, None))
            elif m.group(1) and not m.group(1).isalnum():
                out.append(Lit(m.group(1)))
            elif m.group(2) and (m.group(2).isalnum() or m.group(2) in ":_-"):
                out.append(Lit(m.group(2)))
            else:
                raise GrammarError(f"cannot express the id suffix pattern {rx!r} as a grammar")
        return seq(*out)

    def param(self, c: CodecSpec, key: str | None, schema: Any) -> Node:
        """One tagged ``param`` element; a string value raw, any other typed as JSON."""
        pre, rest = c.param.split("{key}", 1)
        has_string = "{string}" in rest
        if has_string:
            mid1, rest2 = rest.split("{string}", 1)
            mid2, post = rest2.split("{value}", 1)
        else:
            (mid1, post), mid2 = rest.split("{value}", 1), ""
        banned = sorted(set(mid1.strip() or ">") | set("<>\"\n"))
        key_node = Lit(key) if key is not None else Rep(Cls("^" + "".join(escape(ch, "\\]-^[") for ch in banned)),
                                                         EMPTY, 1, None)
        post_parts = post.strip(_WS).split("{key}")
        post_node = seq(*[x for i, p in enumerate(post_parts) for x in ((key_node, pattern(p)) if i else (pattern(p),))])
        stop = post.strip(_WS).replace("{key}", key) if key is not None else post_parts[0]
        lead_text = mid2 if has_string else mid1
        lead = lead_text[len(lead_text.rstrip(_WS)):]
        trail = post[: len(post) - len(post.lstrip(_WS))]
        raw: Node = choice(seq(Lit(lead), Rep(Cls("^" + escape(stop[0], "\\]-^[")), EMPTY, 0, None), Lit(trail)),
                           Excluding((stop,)))
        if isinstance(schema, Mapping) and "string" in json_types(schema):
            pat = schema.get("pattern")
            b = _bounded(schema, "minLength", "maxLength")
            if isinstance(pat, str) or b is not None:
                body = _strip_anchors(pat) if isinstance(pat, str) else f"[^{regex_literal(stop[0])}]{_rx_times(b)}"
                raw = choice(seq(Lit(lead), Re(body), Lit(trail)), raw)
        words = _string_members(schema)
        if words:
            # a member, with only the whitespace the parser trims around a raw value
            member = alt([Lit(w) for w in words])
            raw = (seq(choice(Lit(lead), EMPTY), member, choice(Lit(trail), EMPTY)) if lead else
                   choice(seq(member, choice(Lit(trail), EMPTY)), seq(Lit("\n"), member, opt(Lit("\n")))))
        types = _types(schema)
        raw_ok = not types or "string" in types
        typed = Values("json").value(schema) if types and types != {"string"} else None
        head = (pattern(pre.strip(_WS) + key + mid1.strip(_WS)) if key is not None
                else seq(pattern(pre.strip(_WS)), key_node, pattern(mid1.strip(_WS))))
        typed_v = seq(Ws(lead), typed if typed is not None else Values("json").any(), Ws(trail))
        out: list[Node] = []
        if has_string:
            mid = pattern(mid2.strip(_WS))
            if raw_ok:
                out.append(seq(head, Lit(c.string_true), mid, raw, post_node))
            if typed is not None or not types:
                out.append(seq(head, Lit("false"), mid, typed_v, post_node))
            return choice(*out)
        if raw_ok:
            return seq(head, raw, post_node)
        return seq(head, typed_v, post_node)

    # -- the block: markers, separators, sections ---------------------------------------------------------
    def bodies(self, count: Count | None) -> Node:
        t = self.t
        main = self.body(t.codec, count)
        return choice(main, self.body(t.alt_codec, count)) if t.alt_codec is not None else main

    def body(self, c: CodecSpec, count: Count | None) -> Node:
        """One call (any listed tool) in ``c``; a list of them where the codec writes lists."""
        calls = [self.call(c, n, s) for n, s in self.tools]
        one = Alt(tuple(calls)) if len(calls) > 1 else calls[0]  # not deduplicated: an example's k-th call
        t = self.t
        if c.kind == "pythonic":
            return seq(Lit("["), Ws(), Rep(one, seq(Ws(), Lit(","), Ws(" ")), *(count or MANY)), Ws(), Lit("]"))
        if c.kind != "json" or c.array == "never":
            return one
        arr = seq(Lit("["), Ws(), Rep(one, seq(Ws(), Lit(","), Ws(" ")), *(count or MANY)), Ws(), Lit("]"))
        self.single = one
        if c.array == "require":
            self.single = None
            return arr
        return choice(arr, one) if count is not None else choice(one, arr)

    def block(self, count: Count) -> Node:
        """Calls with their markers, separators and sections; ``self.after`` per trigger."""
        t = self.t
        c = t.codec
        so, sc = t.section_open[:1], t.section_close[:1]
        lists = c.kind == "pythonic" or (c.kind == "json" and not t.call_open and not t.separators
                                         and (c.array == "require" or (c.array == "allow" and bool(so))))
        per_section = bool(so) and not sc and not lists and not t.call_open and not t.separators
        where = "list" if lists else "sections" if per_section else "items"
        body = self.bodies(count if where == "list" else None)
        sep = seq(Ws(), lits(t.separators), Ws()) if t.separators else Ws("" if so else "\n") if t.call_open else Ws(
            "\n" if c.kind == "tagged" else "")
        if t.call_open:
            pad = _pad(t.call_open[0], body)
            rest = seq(Ws(pad), body, Ws(pad), lits(t.call_close))
            item = seq(lits(t.call_open), rest)
            if t.bare_calls or not so:
                self.after.update(dict.fromkeys(t.call_open, rest))
        else:
            item = body
        blocks: list[Node] = []
        if so:
            items = _many(item, sep, count if where == "items" else None)
            pad = _pad(so[0], items)
            sec_rest = seq(Ws(pad), items, *((Ws(pad), lits(t.section_close)) if sc else ()))
            blocks.append(seq(lits(t.section_open), sec_rest))
            self.after.update(dict.fromkeys(t.section_open, sec_rest))
        if t.call_open and (t.bare_calls or not so):
            blocks.append(_many(item, sep, count if where == "items" else None) if not so else item)
        # the marker is the start of the body itself (``<function=``, ``{``, ``[``, ``call:``)
        one = self.single if "[" not in t.lookahead_open and self.single is not None else body
        if not blocks:
            return _many(one, sep if t.separators else Ws(), count if where == "items" else None)
        marked = _many(choice(*blocks), Ws(), count if where == "sections" else None)
        if not t.lookahead_open:
            return marked
        bare = Rep(one, sep if t.separators else Ws(), 1, None)
        # marked blocks may come before bare calls, not after (the parser reads a marker after a bare
        # call as a block the bare call left open)
        return choice(marked, seq(Rep(choice(*blocks), Ws(), 1, None), opt(seq(Ws(), bare))), bare)

    def triggers(self) -> tuple[str, ...]:
        t = self.t
        trig: list[str] = [*t.section_open]
        if t.bare_calls or not t.section_open:
            trig += t.call_open
        return tuple(dict.fromkeys([*trig, *t.lookahead_open]))

    # -- Harmony: calls routed by message headers -----------------------------------------------------
    def harmony(self, count: Count) -> Node:
        """One Harmony assistant turn, mirroring how the parser routes it.

        The parser leaves plain content at ``start`` or ``channel``, reads a header up to
        ``message`` and treats the body as a tool call whenever the header holds the recipient
        prefix. So the grammar writes every header itself: a plain channel's body is free text
        without markers, a recipient's body that tool's arguments. Canonically: the calls alone,
        ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}<|call|>``,
        ``<|start|>assistant`` between them. Accepted too: analysis and preamble messages first, a
        final answer instead of calls, the recipient in the role, other content types, and no end
        marker after the last message (engines strip stop tokens).
        """
        m = self.p.messages
        assert m is not None
        v = Values("json")
        role = Lit(m.start + m.role)
        end = lits(sorted(m.ends, key=lambda e: "call" not in e))
        ctype = choice(seq(Lit(" "), choice(Lit(m.constrain), EMPTY) if m.constrain else EMPTY, lits(m.content_types)),
                       EMPTY)
        chan = lits([m.call_channel, *m.reasoning_channels])
        in_channel, in_role = [], []
        for name, schema in self.tools:
            args = v.arguments(schema)
            in_channel.append(seq(Lit(m.recipient_prefix), self.name(name), ctype, Lit(m.message), args))
            in_role.append(seq(Lit(" " + m.recipient_prefix), self.name(name), Lit(m.channel), chan, ctype,
                               Lit(m.message), args))
        calls, role_calls = alt(in_channel), alt(in_role)
        text = Excluding((m.start, m.channel, *m.ends))
        note = seq(Lit(m.channel), lits([*m.reasoning_channels, m.call_channel]), Lit(m.message), text)
        final = seq(Lit(m.channel + m.final_channel + m.message), text)
        # one alternative per tool: a trigger then takes in the recipient prefix (a preamble is no call)
        call = alt([seq(Lit(m.channel), chan, Lit(" "), c) for c in in_channel])
        role_call = seq(role, role_calls)
        first_call = choice(seq(choice(EMPTY, role), call), role_call)
        next_call = choice(seq(role, call), role_call)
        more = seq(Rep(seq(end, next_call), EMPTY, 0, None), opt(end))
        forced = Rep(alt([seq(c, end) for c in call.items]) if isinstance(call, Alt) else seq(call, end), role, *count)
        tail_first = choice(forced, seq(first_call, more), seq(opt(role), final, opt(end)))
        tail_next = alt([seq(role, final, opt(end)), seq(next_call, more)])
        notes = seq(opt(role), note, Rep(seq(end, role, note), EMPTY, 0, None), end, tail_next)
        heads = lits(list(dict.fromkeys([*m.reasoning_channels, m.call_channel, m.final_channel])))
        self.after = {m.channel: alt([seq(heads, Lit(m.message)), seq(chan, Lit(" "), calls, opt(end))]),
                      m.start: seq(Lit(m.role), alt([seq(Lit(m.channel), alt([seq(heads, Lit(m.message)),
                                                                               seq(chan, Lit(" "), calls, opt(end))])),
                                                     seq(role_calls, opt(end))]))}
        return choice(tail_first, notes)

    def tree(self, count: Count) -> Node:
        if self.p.tools is None:
            m: MessagesSpec | None = self.p.messages
            if m is None or not (m.start and m.channel and m.message):
                raise GrammarError("Harmony messages need start, channel and message markers for a grammar")
            return self.harmony(count)
        return self.block(count)


def _string_members(schema: Any) -> list[str] | None:
    """The string members of an ``enum``/``const`` schema (None: the schema lists no members)."""
    if not isinstance(schema, Mapping):
        return None
    members = schema.get("enum") if isinstance(schema.get("enum"), list) else (
        [schema["const"]] if "const" in schema else None)
    return None if members is None else [m for m in members if isinstance(m, str)]


def _types(schema: Any) -> set[str]:
    """The JSON types a value of ``schema`` may have (a string-only ``enum``/``const`` is text)."""
    if not isinstance(schema, Mapping):
        return set()
    out = set(json_types(schema))
    if "enum" in schema or "const" in schema:
        if all(isinstance(v, str) for v in schema.get("enum") or [schema.get("const")]):
            out.add("string")
    for key in ("anyOf", "oneOf"):
        for a in schema.get(key) or ():
            out |= _types(a)
    return out
