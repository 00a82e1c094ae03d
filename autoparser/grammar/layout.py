"""One layout per codec: a profile plus tools as one grammar tree (nodes and back-ends: :mod:`.tree`).

The tree holds every spelling the parser reads; where there are several, a ``Choice`` lists the
canonical one first and a ``Ws`` carries the canonical whitespace. The canonical layout (what
``grammar_for`` forces and ``example_calls`` writes) is the forcing print of the same tree:

* ``json``: ``{"<name key>": "NAME", "<args key>": ARGS}`` (``{"NAME": ARGS}`` with ``name_as_key``),
  a JSON array where the profile writes lists. Accepted too: either key order, every key alias, a
  leading call id, any whitespace.
* ``name_json``: header with the name (an optional ``{call_id}`` after it left out), arguments,
  trailer (the csv flavor: the JSON in a CSV field, quotes doubled). ``tagged``: header, one ``param``
  element per argument, trailer, each on its own line; a raw string is any text without its closing
  element (canonically without its first character), a ``{key}: {value}\n`` one the rest of its line
  without the call's end.
  ``pythonic``: ``[name(key=value, ...), ...]`` with Python literals (JSON spellings accepted).
* Markers: the first spelling of each; a plain XML-like marker (``<tool_call>``) takes a newline
  inside it when the body starts with markup or JSON, as Hermes/Qwen models write it.

Values follow the tool's JSON schema: properties in schema order (required ones always present, no
others), enums, nested objects, arrays, ``anyOf``. Forcing back-ends also narrow by ``pattern``,
length and integer bounds, and fall back to a JSON-schema node (xgrammar's own) for what a regex
cannot say; accepting back-ends widen those keywords to the type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
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
    star,
)
from autoparser.profile import CodecSpec, Profile, ToolSpec
from autoparser.wire import CALL_NAME, ToolsError, json_types, name_class, normalized, read_tools, writable

__all__ = ["Layout", "pattern", "tool_schemas"]

Count = tuple[int, int | None]
_WS = " \t\r\n"
_XMLISH = re.compile(r"</?[A-Za-z_][\w:.\-]*>\Z")
_ANY_NAME = choice(Re(name_class() + "{1,64}"), star(Cls(name_class()[1:-1]), 1))
_IDENT = seq(Cls("A-Za-z_"), star(Cls("A-Za-z0-9_")))
_INT = seq(opt(Lit("-")), alt([Lit("0"), seq(Cls("1-9"), star(Cls("0-9")))]))
_NUMBER = seq(_INT, opt(seq(Lit("."), star(Cls("0-9"), 1))),  # two exponent digits: always finite
              opt(seq(Cls("eE"), opt(Cls("\\-+")), Cls("0-9"), opt(Cls("0-9")))))
_HEX = Cls("0-9a-fA-F")
_JSTRING = Rule("json-string", seq(Lit('"'), star(alt([Cls('^"\\\\\\x00-\\x1F'), seq(Lit("\\"), alt([
    Cls('"\\\\/bfnrt'), seq(Lit("u"), _HEX, _HEX, _HEX, _HEX)]))])), Lit('"')))
_PY_ESC = seq(Lit("\\"), Cls("\\\\'\"nrtabfv"))
_PY_STRING = Rule("py-string", choice(*(seq(Lit(q), star(alt([Cls(f"^{q}\\\\\\n"), _PY_ESC])), Lit(q)) for q in "\"'")))
_ID = star(Cls("a-zA-Z0-9_\\-"), 1)
_JSON_CHAR = r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})'
_PY_CHAR = r'(?:[^"\\\x00-\x1f]|\\["\\nrt])'


def tool_schemas(tools: object, profile: Profile | None = None) -> dict[str, Mapping[str, Any]]:
    """``{name: parameters schema}`` read by :func:`autoparser.wire.read_tools` (any tool shape),
    normalized (``$ref`` and type aliases resolved as validation resolves them). With ``profile``,
    every name must be one its calls (or Harmony message headers) can carry."""
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
    return seq(*(Ws(p, plus=0 < i < len(parts) - 1 and not (parts[i - 1].endswith(">") or parts[i + 1].startswith("<")))
                 if p.isspace() else Lit(p) for i, p in enumerate(parts)))


#: spaces and tabs: whitespace that keeps a line (canonically none)
_INLINE = choice(EMPTY, star(Cls(" \\t"), 1))


def _mapped(node: Node, tag: str, leaf: Callable[[Node], Node | None], memo: dict[int, Node | None] | None = None
            ) -> Node | None:
    """``node`` with each leaf as ``leaf`` rewrites it (None: a spelling left out of its ``Choice``),
    its rules renamed with ``tag``."""
    memo = {} if memo is None else memo
    if id(node) not in memo:
        out: Node | None
        if isinstance(node, Ref):
            out = Ref(node.name + tag)
        elif isinstance(node, Rule | Group):
            body = _mapped(node.body, tag, leaf, memo)
            out = (None if body is None else
                   Rule(node.name + tag, body) if isinstance(node, Rule) else Group(node.name, body))
        elif isinstance(node, Seq | Alt | Choice | Rep):
            parts = (node.item, node.sep) if isinstance(node, Rep) else node.items
            kids = [_mapped(i, tag, leaf, memo) for i in parts]
            kept = tuple(k for k in kids if k is not None)
            if isinstance(node, Choice):
                out = choice(*kept) if kept else None
            elif len(kept) < len(kids):
                out = None
            else:
                out = Rep(kept[0], kept[1], node.lo, node.hi) if isinstance(node, Rep) else type(node)(kept)
        else:
            out = leaf(node)
        memo[id(node)] = out
    return memo[id(node)]


def _one_line(node: Node) -> Node:
    """``node`` with its whitespace kept on one line (a value that a line break ends)."""
    def leaf(n: Node) -> Node:
        return choice(Lit(n.canon.replace("\n", " ")), star(Cls(" \\t"), int(n.plus))) if isinstance(n, Ws) else n
    out = _mapped(node, "-line", leaf)
    assert out is not None
    return out


def _csv_field(node: Node) -> Node:
    """JSON ``node`` written in a CSV field: each quote doubled, no ``\\"`` escape (the parser reads
    the field's ``""`` as a quote); the forcing-only spellings (regex, JSON schema) left out."""
    def leaf(n: Node) -> Node | None:
        if isinstance(n, Lit):
            return Lit(n.text.replace('"', '""'))
        if isinstance(n, Cls) and not n.body.startswith("^"):
            return Cls(n.body.replace('"', ""))
        return None if isinstance(n, Re | Schema) else n
    out = _mapped(node, "-csv", leaf)
    if out is None:
        raise GrammarError("these arguments cannot be written in a CSV field")
    return out


def _rx_alt(alts: Sequence[str]) -> str:
    body = "|".join(dict.fromkeys(a for a in alts if a))
    return f"(?:{body}){'?' if '' in alts else ''}" if body else ""


def _avoiding(stops: Sequence[str]) -> str:
    """A regex (no lookahead: xgrammar has none) for one line of text holding none of ``stops``:
    the automaton of their prefixes, its states eliminated one by one."""
    words = sorted({w for w in stops if w and "\n" not in w})
    if not words:
        return "[^\\n]*"
    states = sorted({w[:i] for w in words for i in range(len(w))}, key=len)  # "" first
    alphabet = sorted({ch for w in words for ch in w})
    edges: dict[tuple[int, int], list[str]] = {}
    other = "[^" + "".join(escape(ch, "\\]-^[") for ch in ["\n", *alphabet]) + "]"
    end = len(states)
    for i, p in enumerate(states):
        edges.setdefault((i, 0), []).append(other)
        edges.setdefault((i, end), []).append("")
        for ch in alphabet:
            t = p + ch
            if not any(w in t for w in words):
                while t not in states:
                    t = t[1:]
                edges.setdefault((i, states.index(t)), []).append(regex_literal(ch))
    for k in reversed(range(1, end)):
        loop = _rx_alt(edges.pop((k, k), []))
        ins = [(i, _rx_alt(a)) for (i, j), a in list(edges.items()) if j == k]
        outs = [(j, _rx_alt(a)) for (i, j), a in list(edges.items()) if i == k]
        edges = {e: a for e, a in edges.items() if k not in e}
        for i, a in ins:
            for j, b in outs:
                edges.setdefault((i, j), []).append(a + (f"{loop}*" if loop else "") + b)
    return f"{_rx_alt(edges.get((0, 0), []))}*{_rx_alt(edges[(0, end)])}"


def _eol(c: CodecSpec) -> bool:
    """No markup before a tagged key: the name in the header is the rest of its line (the parser's rule)."""
    return c.kind == "tagged" and not c.param.split("{key}", 1)[0].strip(_WS)


def _line_values(c: CodecSpec) -> bool:
    """``{key}: {value}\\n``: a tagged value is the rest of its line (the parser's rule)."""
    post = c.param.split("{value}", 1)[-1]
    return c.kind == "tagged" and not post.strip(_WS) and "\n" in post


def _quantifier(schema: Mapping[str, Any], lo_key: str, hi_key: str) -> tuple[int, int | None, str] | None:
    """A schema's bounds (``minLength``...) as (lo, hi, regex quantifier), or None without any."""
    lo, hi = schema.get(lo_key), schema.get(hi_key)
    lo_n = lo if isinstance(lo, int) and not isinstance(lo, bool) and lo >= 0 else 0
    hi_n = hi if isinstance(hi, int) and not isinstance(hi, bool) and hi >= lo_n else None
    return (lo_n, hi_n, f"{{{lo_n},{'' if hi_n is None else hi_n}}}") if lo_n or hi_n is not None else None


def _unanchored(p: str) -> str:
    p = p[1:] if p.startswith("^") else p
    return p[:-1] if p.endswith("$") and not p.endswith("\\$") else p


def _members(members: Sequence[tuple[Node, bool]], sep: Node) -> Node:
    """Members in order, optional ones skippable, with separators only between present ones."""
    tail: Node = EMPTY  # ", member_i ..." continuations
    first: Node = EMPTY  # the list starting at member i or later
    for node, req in reversed(members):
        with_it, start = seq(sep, node, tail), seq(node, tail)
        tail, first = (with_it, start) if req else (alt([with_it, tail]), alt([start, first]))
    return first


@dataclass(frozen=True)
class Values:
    """Value nodes for one flavor (``delims``/``seps``: a relaxed object's string delimiters and
    its key/value and member separators, which its arrays share)."""

    flavor: Literal["json", "python", "relaxed"]
    delims: tuple[tuple[str, str], ...] = ()
    seps: tuple[str, str] = (":", ",")

    def encode(self, value: Any) -> str:
        """``value`` as the canonical layout writes it."""
        relaxed = self.flavor == "relaxed"
        if self.flavor == "python" and (value is None or isinstance(value, bool)):
            return repr(value)
        if isinstance(value, str) and relaxed and self.delims:
            return self.delims[0][0] + value + self.delims[0][1]
        if isinstance(value, list):
            return "[" + (self.seps[1] if relaxed else ", ").join(self.encode(v) for v in value) + "]"
        if isinstance(value, Mapping):
            kv, sep = self.seps if relaxed else (": ", ", ")
            return "{" + sep.join(f"{k if relaxed else json.dumps(str(k), ensure_ascii=False)}{kv}{self.encode(v)}"
                                  for k, v in value.items()) + "}"
        return json.dumps(value, ensure_ascii=False)

    def literal(self, value: Any) -> Node:
        """One value: the canonical spelling first, then the others the parser reads."""
        alts = [self.encode(value), json.dumps(value, ensure_ascii=False)]
        alts += [repr(value)] if self.flavor == "python" else []
        alts += [a + value + b for a, b in self.delims] if self.flavor == "relaxed" and isinstance(value, str) else []
        return lits(list(dict.fromkeys(alts)))

    def string(self, schema: Mapping[str, Any]) -> Node:
        pat, q = schema.get("pattern"), _quantifier(schema, "minLength", "maxLength")
        if self.flavor == "relaxed" and self.delims:
            wide = choice(*(seq(Lit(o), choice(star(Cls("^" + escape(c[0], "\\]-^["))), Excluding((c,))), Lit(c))
                            for o, c in self.delims), _JSTRING)
            (a, z), char = self.delims[0], f"[^{regex_literal(self.delims[0][1][0])}]"
        else:
            wide, a, z = (_PY_STRING if self.flavor == "python" else _JSTRING), '"', '"'
            char = _PY_CHAR if self.flavor == "python" else _JSON_CHAR
        if not isinstance(pat, str) and q is None:
            return wide
        body = _unanchored(pat) if isinstance(pat, str) else char + (q[2] if q else "*")
        return choice(Re(regex_literal(a) + f"(?:{body})" + regex_literal(z)), wide)

    def any(self, schema: Mapping[str, Any] | None = None, obj: bool = False) -> Node:
        """Any value, or object (forced in JSON: a JSON-schema node, xgrammar types it better)."""
        relaxed = self.flavor == "relaxed"
        kv, sep = self.seps
        key: Node = _PY_STRING if self.flavor == "python" else _JSTRING
        if relaxed:
            bare = "".join(escape(c, "\\]-^[") for c in dict.fromkeys(",:" + kv[0] + sep[0]))
            key = alt([seq(Lit('"'), star(Cls('^"')), Lit('"')), star(Cls("^ \\t\\r\\n{}\\[\\]" + bare), 1)])

        def members(value: Node) -> Node:
            member = seq(key, Ws(), Lit(kv), Ws(), value, Ws())
            return seq(Lit("{"), Ws(), opt(seq(member, star(seq(Lit(sep), Ws(), member)))), Lit("}"))

        ref, t = Ref(self.flavor + "-value"), self.flavor
        arr = seq(Lit("["), Ws(), opt(seq(ref, Ws(), star(seq(Lit(sep), Ws(), ref, Ws())))), Lit("]"))
        scalar = alt([self.string({}), _NUMBER, self.boolean(), self.null()])
        value = Rule(t + "-value", alt([Rule(t + "-object", members(ref)), Rule(t + "-array", arr), scalar]))
        if self.flavor == "json":
            return choice(Schema(json.dumps(schema or ({"type": "object"} if obj else {}), sort_keys=True)),
                          members(value) if obj else value)
        if not obj:
            return choice(scalar, value)
        word = "[A-Za-z_][A-Za-z0-9_]{0,63}"
        rx_key = Re(word + regex_literal(kv) if relaxed else f'"{word}": ')
        return choice(seq(Lit("{"), Rep(seq(rx_key, scalar), Lit(sep if relaxed else ", "), 0, None), Lit("}")),
                      members(value))

    def arguments(self, schema: Mapping[str, Any] | None) -> Node:
        """A call's arguments; forced as one JSON-schema node (the whole schema, ``$defs`` included)
        when a part of it needs one."""
        args = self.object(schema)
        if self.flavor == "json" and schema is not None and has_schema(canonical(args)):
            return choice(Schema(json.dumps(schema, sort_keys=True)), args)
        return args

    def boolean(self) -> Node:
        py = self.flavor == "python"
        return alt([lits(["True", "true"] if py else ["true"]), lits(["False", "false"] if py else ["false"])])

    def null(self) -> Node:
        return lits(["None", "null"]) if self.flavor == "python" else Lit("null")

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
        return alt([self.typed(t, schema) for t in types] + ([self.null()] if schema.get("nullable") is True else []))

    def typed(self, t: str, schema: Mapping[str, Any]) -> Node:
        lo, hi = schema.get("minimum"), schema.get("maximum")
        unsigned = isinstance(lo, int | float) and lo >= 0
        if t == "string":
            return self.string(schema)
        if t == "integer" and isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi <= 9:
            return choice(Cls(f"{lo}-{hi}"), _INT)
        if t == "integer" and (isinstance(hi, int) or unsigned):  # a sign and a digit count
            digits = f"(?:0|[1-9][0-9]{{0,{len(str(abs(hi))) - 1}}})" if isinstance(hi, int) else "(?:0|[1-9][0-9]*)"
            return choice(Re(("" if unsigned else "-?") + digits), _INT)
        if t == "number" and unsigned:
            return choice(Re("(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]{1,2})?"), _NUMBER)
        if t in ("integer", "number", "boolean", "null"):
            return {"integer": _INT, "number": _NUMBER, "boolean": self.boolean(), "null": self.null()}[t]
        if t == "array":
            relaxed = self.flavor == "relaxed"
            sep = seq(Ws(), Lit(self.seps[1] if relaxed else ","), Ws("" if relaxed else " "))
            q = _quantifier(schema, "minItems", "maxItems") or (0, None)
            return seq(Lit("["), Ws(), Rep(self.value(schema.get("items")), sep, q[0], q[1]), Ws(), Lit("]"))
        return self.object(schema) if t == "object" else self.any(schema)

    def object(self, schema: Mapping[str, Any] | None) -> Node:
        """An object with the declared properties in order; required ones always present."""
        props = schema.get("properties") if schema is not None else None
        if schema is None or not isinstance(props, Mapping) or not props:
            if schema is not None and (schema.get("additionalProperties") is False or isinstance(props, Mapping)):
                return choice(seq(Lit("{"), Ws(), Lit("}")), self.any(schema, obj=True))
            return self.any(schema, obj=True)
        relaxed = self.flavor == "relaxed"
        kv, sep = self.seps if relaxed else (":", ",")
        required = set(schema.get("required") or ())

        def key(k: str) -> Node:
            q = json.dumps(k, ensure_ascii=False)
            return lits([k, q] if relaxed else [q, repr(k)]) if self.flavor != "json" else Lit(q)

        members = [(seq(key(str(k)), Ws(), Lit(kv), Ws("" if relaxed else " "), self.value(sub)), k in required)
                   for k, sub in props.items()]
        return seq(Lit("{"), Ws(), _members(members, seq(Ws(), Lit(sep), Ws("" if relaxed else " "))), Ws(), Lit("}"))


def _values(codec: CodecSpec) -> Values:
    if codec.kind == "pythonic":
        return Values("python")
    if codec.kind == "name_json" and codec.flavor == "relaxed":
        return Values("relaxed", codec.string_delims, codec.relaxed_seps)
    return Values("json")


def _pad(marker: str, body: Node) -> str:
    """The newline a plain XML-like text marker takes when the body starts with markup or JSON."""
    node = canonical(body)
    while isinstance(node, Alt | Choice | Seq | Rep):
        node = node.item if isinstance(node, Rep) else node.items[0]
    first = node.text[:1] if isinstance(node, Lit) else ""
    return "\n" if _XMLISH.match(marker) and first and not (first.isalnum() or first == "_") else ""


def _many(item: Node, sep: Node, count: Count | None) -> Node:
    """Calls repeated: ``count`` of them where the canonical layout counts, else one (or more)."""
    return Rep(item, sep, *count) if count is not None else choice(item, Rep(item, sep, 1, None))


def _string_members(schema: Any) -> list[str]:
    """The string members of an ``enum``/``const`` schema."""
    if not isinstance(schema, Mapping):
        return []
    members = schema["enum"] if isinstance(schema.get("enum"), list) else [schema["const"]] if "const" in schema else []
    return [m for m in members if isinstance(m, str)]


def _types(schema: Any) -> set[str]:
    """The JSON types a value of ``schema`` may have (a string-only ``enum``/``const`` is text)."""
    if not isinstance(schema, Mapping):
        return set()
    out = set(json_types(schema))
    if ("enum" in schema or "const" in schema) and all(isinstance(v, str) for v in schema.get("enum")
                                                        or [schema.get("const")]):
        out.add("string")
    for key in ("anyOf", "oneOf"):
        for a in schema.get(key) or ():
            out |= _types(a)
    return out


class Layout:
    """The tree of one profile's calls for a tool set: (name, schema) per alternative, in order (an
    example's calls); none: any tool."""

    def __init__(self, profile: Profile, tools: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        self.p = profile
        self.tools: list[tuple[str | None, Mapping[str, Any] | None]] = list(tools) or [(None, None)]
        self.after: dict[str, Node] = {}  # per trigger, what follows it (structural tags)
        self.single: Node | None = None  # a JSON call as one object (a bare ``{`` opens one)
        self.listed: Node | None = None  # JSON calls as a list (a bare ``[`` opens one)

    @property
    def t(self) -> ToolSpec:
        if self.p.tools is None:
            raise GrammarError(f"profile {self.p.name or '<derived>'!r} has no tool markers")
        return self.p.tools

    def name(self, name: str | None, python: bool = False) -> Node:
        if name is not None:
            return Lit(name)
        return choice(Re(CALL_NAME), seq(_IDENT, star(seq(Lit("."), _IDENT)))) if python else _ANY_NAME

    def call(self, c: CodecSpec, name: str | None, schema: Mapping[str, Any] | None) -> Node:
        """One call (without call or section markers) in ``c``."""
        v = _values(c)
        sep = seq(Ws(), Lit(","), Ws(" "))
        if c.kind == "json":
            args = v.arguments(schema)
            if c.name_as_key:
                key = Lit(json.dumps(name)) if name is not None else choice(Re(f'"{name_class()}{{1,64}}"'), _JSTRING)
                return seq(Lit("{"), Ws(), key, Ws(), Lit(":"), Ws(" "), args, Ws(), Lit("}"))
            nv = Lit(json.dumps(name, ensure_ascii=False)) if name is not None else seq(Lit('"'), _ANY_NAME, Lit('"'))
            name_kv = seq(lits([json.dumps(k) for k in c.name_keys]), Ws(), Lit(":"), Ws(" "), nv)
            args_kv = seq(lits([json.dumps(k) for k in c.args_keys]), Ws(), Lit(":"), Ws(" "), args)
            id_kv = choice(EMPTY, seq(lits([json.dumps(k) for k in c.id_keys]), Ws(), Lit(":"), Ws(),
                                      alt([_JSTRING, _INT]), sep)) if c.id_keys else EMPTY
            pair = choice(seq(name_kv, sep, args_kv), seq(args_kv, sep, name_kv))
            return seq(Lit("{"), Ws(), id_kv, pair, Ws(), Lit("}"))
        if c.kind == "name_json":
            trailer = c.trailer.strip(_WS)
            parts = trailer.split("{name}") if trailer else []  # a trailer may write the name again
            tail = [x for i, p in enumerate(parts) for x in ([self.name(name)] if i else []) + [pattern(p)]]
            lead = Ws(c.trailer[: len(c.trailer) - len(c.trailer.lstrip(_WS))]) if trailer else EMPTY
            args = v.arguments(schema)
            if c.flavor == "csv":  # a CSV field: its closing quote (which the parser does not need)
                args = seq(_csv_field(args), Ws(), choice(Lit('"'), EMPTY))
            return seq(self.header(c, name), Ws(), args, lead, *tail)
        props = (schema.get("properties") or {}) if schema is not None else {}
        required = set(schema.get("required") or ()) if schema is not None else set()
        if c.kind == "pythonic":
            if schema is None:
                kw = seq(_IDENT, Ws(), Lit("="), Ws(), v.any())
                kwargs = opt(seq(kw, star(seq(sep, kw))))
            else:
                kwargs = _members([(seq(Lit(str(k)), Ws(), Lit("="), Ws(), v.value(sub)), k in required)
                                   for k, sub in props.items()], sep)
            gap = star(Cls(" \\t")) if c.array == "never" else Ws()  # without brackets a line break ends a call
            return seq(self.name(name, python=True), gap, Lit("("), Ws(), kwargs, Ws(), Lit(")"))
        if c.kind != "tagged":
            raise GrammarError(f"the {c.kind} codec has no grammar back-end yet (docs/profile.md)")
        # a value that is the rest of its line ends at a line break; a name that is, too
        sep = seq(Lit("\n"), Ws()) if _line_values(c) else Ws("\n")
        params = (Rep(self.param(c, None, None), sep, 0, None) if schema is None else
                  _members([(self.param(c, str(k), sub), k in required) for k, sub in props.items()], sep))
        trailer = c.trailer.strip(_WS)
        return seq(self.header(c, name), seq(_INLINE, Lit("\n"), Ws()) if _eol(c) else Ws("\n"), params,
                   *((Ws("\n"), pattern(trailer)) if trailer else ()))

    def header(self, c: CodecSpec, name: str | None) -> Node:
        """The call header with the name (or an id carrying it) filled in."""
        h = c.header
        # a bare call is found by its lookahead marker, matched literally: such header text is spelt exactly
        pos = max((len(m) for m in self.t.lookahead_open if "{" not in m and h.startswith(m)), default=0)
        out: list[Node] = [Lit(h[:pos])]
        for m in re.compile(r"\{(name|id|call_id)\}").finditer(h, pos):
            out.append(pattern(h[pos:m.start()]))
            pos = m.end()
            if m.group(1) == "name":
                out += [Group("name", self.name(name)), _INLINE if _eol(c) else Ws()]
            elif m.group(1) == "id":
                # bounded when forced: an unbounded index (Kimi's ":\\d+") lets a small model write digits forever
                bounded = re.sub(r"(?<!\\)[+*]", lambda x: "{1,3}" if x.group() == "+" else "{0,3}", c.id_name_suffix)
                pre = choice(Lit(c.id_name_prefix), EMPTY) if c.id_name_prefix else EMPTY
                suffix = choice(Re(bounded), self.suffix(c.id_name_suffix)) if bounded else EMPTY
                out += [Group("id", seq(pre, Group("name", self.name(name)), suffix)), Ws()]
            elif not re.search(r"\{(name|id)\}", h[:m.start()]):  # a native id before the name: the parser needs it
                out.append(Group("id", choice(Re("call_[0-9]{1,3}"), _ID)))
            else:  # an optional native id (Mistral v13): left out when forced, with the marker before it
                out.append(choice(EMPTY, seq(out.pop(), Group("id", _ID))))
        return seq(*out, pattern(h[pos:]))

    @staticmethod
    def suffix(rx: str) -> Node:
        r"""The id suffix regex as nodes: ``\d+``, ``\d*`` and characters that stand for themselves."""
        out: list[Node] = []
        for m in re.finditer(r"\\d[+*]|\\(.)|(.)", rx):
            if m.group().startswith("\\d"):
                out.append(star(Cls("0-9"), int(m.group()[2] == "+")))
            elif (m.group(1) and not m.group(1).isalnum()) or (m.group(2) and m.group(2) not in "\\^$*+?()[]{}|"):
                out.append(Lit(m.group(1) or m.group(2)))
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
        banned = "".join(escape(ch, "\\]-^[") for ch in sorted(set(mid1.strip() or ">") | set("<>\"\n")))
        key_node = Lit(key) if key is not None else star(Cls("^" + banned), 1)
        post_parts = post.strip(_WS).split("{key}")
        post_node = seq(*[x for i, p in enumerate(post_parts) for x in ([key_node] if i else []) + [pattern(p)]])
        stop = post.strip(_WS).replace("{key}", key) if key is not None else post_parts[0]
        lead_text = mid2 if has_string else mid1
        lead, trail = lead_text[len(lead_text.rstrip(_WS)):], post[: len(post) - len(post.lstrip(_WS))]
        line = _line_values(c)  # the value ends at a line break (the separator writes it) or the call's end
        ends = (*self.t.call_close, *self.t.section_close, c.trailer.strip(_WS))
        stops = ("\n", *filter(None, ends)) if line else (stop,)
        trail = "" if line else trail
        raw: Node = (choice(seq(Lit(lead), Re(_avoiding(stops))), seq(Lit(lead), Excluding(stops))) if line else
                     choice(seq(Lit(lead), star(Cls("^" + escape(stop[0], "\\]-^["))), Lit(trail)), Excluding(stops)))
        if isinstance(schema, Mapping) and "string" in json_types(schema):
            pat, q = schema.get("pattern"), _quantifier(schema, "minLength", "maxLength")
            if isinstance(pat, str) or q is not None:
                char = f"[^{regex_literal(stops[0][0])}]"
                body = _unanchored(pat) if isinstance(pat, str) else char + (q[2] if q else "*")
                raw = choice(seq(Lit(lead), Re(body), Lit(trail)), raw)
        words = _string_members(schema)
        if words:  # a member, with only the whitespace the parser trims around a raw value
            member = alt([Lit(w) for w in words])
            raw = (seq(choice(Lit(lead), EMPTY), member, choice(Lit(trail), EMPTY)) if lead else
                   choice(seq(member, choice(Lit(trail), EMPTY)), seq(Lit("\n"), member, opt(Lit("\n")))))
        types = _types(schema)
        typed = Values("json").value(schema) if types and types != {"string"} else Values("json").any()
        # whitespace between the key and what follows it is the pattern's (``--{key} '{value}'``)
        gap = Ws() if mid1.strip(_WS) and mid1[:1] in _WS else EMPTY
        head = (pattern((pre.lstrip(_WS) + key + mid1).rstrip(_WS)) if key is not None
                else seq(pattern(pre.strip(_WS)), key_node, gap, pattern(mid1.strip(_WS))))
        typed_v = (seq(choice(Lit(lead), _INLINE), _one_line(typed), _INLINE) if line else
                   seq(Ws(lead), typed, Ws(trail)))
        raw_ok = not types or "string" in types
        if not has_string:
            return seq(head, raw if raw_ok else typed_v, post_node)
        mid = pattern(mid2.strip(_WS))
        out = [seq(head, Lit(c.string_true), mid, raw, post_node)] if raw_ok else []
        out += [seq(head, Lit("false"), mid, typed_v, post_node)] if types != {"string"} else []
        return choice(*out)

    # -- the block: markers, separators, sections ---------------------------------------------------------
    def body(self, c: CodecSpec, count: Count | None) -> Node:
        """One call (any listed tool) in ``c``; a list of them where the codec writes lists."""
        calls = [self.call(c, n, s) for n, s in self.tools]
        one = Alt(tuple(calls)) if len(calls) > 1 else calls[0]  # not deduplicated: an example's k-th call
        sep = seq(Ws(), Lit(","), Ws(" "))
        if c.kind == "pythonic" and c.array == "never":  # no brackets; a line break outside them ends a call
            return Rep(one, seq(star(Cls(" \\t")), Lit(","), Ws(" ")), *(count or (1, None)))
        if c.kind == "pythonic" or (c.kind == "json" and c.array != "never"):
            arr = seq(Lit("["), Ws(), Rep(one, sep, *(count or (1, None))), Ws(), Lit("]"))
            if c.kind == "pythonic" or c.array == "require":
                self.listed = arr
                return arr
            self.single, self.listed = one, arr
            return choice(arr, one) if count is not None else choice(one, arr)
        return one

    def block(self, count: Count) -> Node:
        """Calls with their markers, separators and sections; ``self.after`` per trigger."""
        t, c = self.t, self.t.codec
        so, sc = t.section_open[:1], t.section_close[:1]
        bare_list = "[" in t.lookahead_open and "{" not in t.lookahead_open  # a bare '[' opens a list
        lists = c.kind == "pythonic" or (c.kind == "json" and not t.call_open and not t.separators
                                         and (c.array == "require" or (c.array == "allow" and (bool(so) or bare_list))))
        where = "list" if lists else "sections" if so and not sc and not t.call_open and not t.separators else "items"
        body = self.body(c, count if where == "list" else None)
        if t.alt_codec is not None:
            body = choice(body, self.body(t.alt_codec, count if where == "list" else None))
        sep = seq(Ws(), lits(t.separators), Ws()) if t.separators else Ws(
            ("" if so else "\n") if t.call_open else "\n" if c.kind == "tagged" else "")
        item = body
        if t.call_open:
            pad = _pad(t.call_open[0], body)
            bare_name = _eol(c) and not c.header.split("{name}", 1)[0].strip(_WS)  # the name's line starts here
            rest = seq(_INLINE if bare_name else Ws(pad), body, Ws(pad), lits(t.call_close))
            item = seq(lits(t.call_open), rest)
            if t.bare_calls or not so:
                self.after.update(dict.fromkeys(t.call_open, rest))
        items = _many(item, sep, count if where == "items" else None)
        blocks: list[Node] = []
        if so:
            pad = _pad(so[0], items)
            sec_rest = seq(Ws(pad), items, *((Ws(pad), lits(t.section_close)) if sc else ()))
            blocks.append(seq(lits(t.section_open), sec_rest))
            self.after.update(dict.fromkeys(t.section_open, sec_rest))
        if t.call_open and (t.bare_calls or not so):
            blocks.append(item if so else items)
        # the marker is the start of the body itself (``<function=``, ``{``, ``[``, ``call:``)
        one = (self.single if "[" not in t.lookahead_open and self.single is not None
               else self.listed if bare_list and self.listed is not None else body)
        if not blocks:
            return _many(one, sep if t.separators else Ws(), count if where == "items" else None)
        marked = _many(choice(*blocks), Ws(), count if where == "sections" else None)
        if not t.lookahead_open:
            return marked
        # marked blocks may come before bare calls, not after (the parser reads a marker after a bare
        # call as a block the bare call left open)
        bare = Rep(one, sep if t.separators else Ws(), 1, None)
        return choice(marked, seq(Rep(choice(*blocks), Ws(), 1, None), opt(seq(Ws(), bare))), bare)

    def triggers(self) -> tuple[str, ...]:
        t = self.t
        calls = t.call_open if t.bare_calls or not t.section_open else ()
        return tuple(dict.fromkeys([*t.section_open, *calls, *t.lookahead_open]))

    def harmony(self, count: Count) -> Node:
        """One Harmony assistant turn, routed as the parser routes it: the grammar writes every
        header, so a plain channel's body is free text without markers and a recipient's body is
        that tool's arguments. Canonically the calls alone
        (``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}<|call|>``,
        ``<|start|>assistant`` between them); accepted too: analysis and preamble messages first, a
        final answer instead of calls, the recipient in the role, other content types, and no end
        marker after the last message (engines strip stop tokens)."""
        m = self.p.messages
        if m is None or not (m.start and m.channel and m.message):
            raise GrammarError("Harmony messages need start, channel and message markers for a grammar")
        role, end = Lit(m.start + m.role), lits(sorted(m.ends, key=lambda e: "call" not in e))
        ctype = choice(seq(Lit(" "), choice(Lit(m.constrain), EMPTY) if m.constrain else EMPTY, lits(m.content_types)),
                       EMPTY)
        chan = lits([m.call_channel, *m.reasoning_channels])
        in_channel, in_role = [], []
        for name, schema in self.tools:
            args = Values("json").arguments(schema)
            in_channel.append(seq(Lit(m.recipient_prefix), self.name(name), ctype, Lit(m.message), args))
            in_role.append(seq(Lit(" " + m.recipient_prefix), self.name(name), Lit(m.channel), chan, ctype,
                               Lit(m.message), args))
        text = Excluding((m.start, m.channel, *m.ends))
        note = seq(Lit(m.channel), lits([*m.reasoning_channels, m.call_channel]), Lit(m.message), text)
        final = seq(Lit(m.channel + m.final_channel + m.message), text)
        # one alternative per tool: a trigger then takes in the recipient prefix (a preamble is no call)
        calls = [seq(Lit(m.channel), chan, Lit(" "), c) for c in in_channel]
        call, role_call = alt(calls), seq(role, alt(in_role))
        next_call = choice(seq(role, call), role_call)
        more = seq(star(seq(end, next_call)), opt(end))
        forced = Rep(alt([seq(c, end) for c in calls]), role, *count)
        tail_first = choice(forced, seq(choice(seq(choice(EMPTY, role), call), role_call), more),
                            seq(opt(role), final, opt(end)))
        tail_next = alt([seq(role, final, opt(end)), seq(next_call, more)])
        heads = seq(lits(list(dict.fromkeys([*m.reasoning_channels, m.call_channel, m.final_channel]))), Lit(m.message))
        after_channel = alt([heads, seq(chan, Lit(" "), alt(in_channel), opt(end))])
        self.after = {m.channel: after_channel, m.start: seq(Lit(m.role), alt([seq(Lit(m.channel), after_channel),
                                                                              seq(alt(in_role), opt(end))]))}
        return choice(tail_first, seq(opt(role), note, star(seq(end, role, note)), end, tail_next))

    def tree(self, count: Count) -> Node:
        return self.harmony(count) if self.p.tools is None else self.block(count)
