"""Grammar text (GBNF, EBNF, structural tag) accepting every spelling of a profile's tool calls.

Why: a parser can only repair what a model wrote; a grammar stops the model from writing a call the
parser would reject. The grammar is built from the same profile fields the parser reads (markers,
codec, header and parameter patterns) and reads tools, schema types and names through
:mod:`autoparser.wire` as the parser does. That alone did not keep them together (they had drifted
on type aliases, names and enums), so ``tests/test_grammar_property.py`` checks them both ways:
random strings this grammar allows must parse to valid calls with no issue.

Three renderings of one rule set:

* ``gbnf``  (llama.cpp) the tool-call part only, starting at a trigger marker, for a *lazy* grammar:
  llama.cpp leaves the model free until a trigger word appears and constrains from there on.
  The triggers are listed in a comment at the top and returned by :func:`build_grammar`.
* ``ebnf``  (xgrammar / vLLM ``grammar`` / OpenVINO GenAI ``StructuredOutputConfig(grammar=...)``)
  the whole response: prose that contains no trigger, then optionally the tool calls. For
  engines without lazy grammars.
* ``structural-tag`` (xgrammar ``triggered_tags``, used by vLLM, SGLang and OpenVINO GenAI): one
  tag per trigger whose content is the EBNF of the rest of the call(s).

Harmony (gpt-oss) has no tool markers: a call is a message whose header names a recipient. The
grammar is built from the profile's ``messages`` markers and triggers where the parser leaves
plain content (the start and channel markers); from there it spells every header, so the model
can still reason and answer, but any message it addresses to a tool carries arguments typed by
that tool's schema (see :class:`_Harmony`). A profile with no tool-call format at all (``think``)
gets a GrammarError, never a grammar that would constrain nothing.

Choices where the parser accepts more than one spelling: the grammar accepts the spellings the
parser accepts (whitespace runs wherever a profile pattern has whitespace, JSON keys ``name`` and
``arguments`` in either order, every name/argument key alias), but object properties follow the
schema's order (required and optional ones, no extra keys), as llama.cpp and xgrammar do, so a
call is typed field by field. Unsupported schema keywords (``pattern``, ``minLength``, ``$ref``...)
widen to "any value of that type" rather than narrowing wrongly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from autoparser.grammar.tree import GrammarError, escape, tool_schemas
from autoparser.profile import CodecSpec, MessagesSpec, Profile, ToolSpec
from autoparser.wire import json_types, name_class

__all__ = ["GrammarExport", "build_grammar", "grammar_dialects"]

Flavor = Literal["json", "relaxed", "python"]
GrammarFormat = Literal["gbnf", "ebnf", "structural-tag"]

_WS_CHARS = " \t\r\n"
#: what a tool name may be when the request lists no tools (the wire name rule)
_ANY_NAME = name_class() + "+"


@dataclass(frozen=True)
class GrammarExport:
    """A rendered grammar plus what an engine needs to apply it."""

    format: GrammarFormat
    text: str
    #: words that start the constrained part anywhere in the output (llama.cpp ``word`` triggers)
    triggers: tuple[str, ...]
    #: prefixes that start it only at the very beginning of the output (Llama 3's bare ``{``)
    start_triggers: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


# -- rule set ------------------------------------------------------------------------------------

def _lit(s: str) -> str:
    """A GBNF string literal (UTF-8 passes through; quotes, backslashes and controls are escaped)."""
    return '"' + "".join(escape(ch, '"\\') for ch in s) + '"'


def _cls_char(ch: str) -> str:
    return escape(ch, "\\]-^[")


class _Rules:
    """An ordered set of named GBNF rules; equal bodies share one name."""

    def __init__(self) -> None:
        self.rules: dict[str, str] = {}
        self._by_body: dict[str, str] = {}

    def add(self, name: str, body: str) -> str:
        if body not in self._by_body:
            n = self._by_body[body] = self.fresh(name, shared=True)
            self.rules[n] = body
        return self._by_body[body]

    def define(self, name: str, body: str) -> str:
        """A rule with a fixed name (``root``, or one from :meth:`fresh`); never shared."""
        self.rules[name] = body
        return name

    def fresh(self, name: str, shared: bool = False) -> str:
        """An unused, valid rule name based on ``name`` (not shared: nor a prefix of ``NAME-s...``)."""
        base = re.sub(r"[^a-zA-Z0-9]+", "-", name).strip("-").lower() or "r"
        n, i = base, 2
        while n in self.rules or (not shared and any(k.startswith(n + "-s") for k in self.rules)):
            n, i = f"{base}-{i}", i + 1
        return n

    def render(self, header: Sequence[str] = ()) -> str:
        lines = [f"# {h}" for h in header]
        order = ["root", *[k for k in self.rules if k != "root"]]
        lines += [f"{k} ::= {self.rules[k]}" for k in order if k in self.rules]
        return "\n".join(lines) + "\n"


def _alt(items: Sequence[str]) -> str:
    items = list(dict.fromkeys(i for i in items if i))
    if not items:
        return '""'
    return items[0] if len(items) == 1 else "( " + " | ".join(items) + " )"


class _Builder:
    """Turns a profile plus tool schemas into GBNF rules."""

    def __init__(self, profile: Profile, tools: Mapping[str, Mapping[str, Any]]) -> None:
        self.p = profile
        self.tools = tools
        self.r = _Rules()
        self.ws = self.r.add("ws", "[ \\t\\n\\r]*")
        #: per body hint, the single-object form of a JSON call (a bare ``{`` cannot open a list)
        self.single: dict[str, str] = {}
        #: per body hint, the list form of a JSON call (a bare ``[`` opens a list, never one object)
        self.listed: dict[str, str] = {}
        self._excl: dict[tuple[tuple[str, ...], bool], str] = {}

    @property
    def t(self) -> ToolSpec:
        """The tool-marker format (Harmony profiles have none: their calls are routed by headers)."""
        if self.p.tools is None:
            raise GrammarError(f"profile {self.p.name or '<derived>'!r} has no tool markers")
        return self.p.tools

    # -- text that does not contain given strings ------------------------------------------------
    def excluding(self, stops: Sequence[str], name: str, nonempty: bool = False) -> str:
        """Any text not containing any of ``stops`` (an Aho-Corasick automaton written as rules)."""
        stops = sorted({x for x in stops if x})
        memo_key = (tuple(stops), nonempty)
        if memo_key in self._excl:
            return self._excl[memo_key]
        name = self.r.fresh(name)
        if not stops:
            return self.r.add(name, "[^\\x00]*" if not nonempty else "[^\\x00]+")
        # trie
        goto: list[dict[str, int]] = [{}]
        final: list[bool] = [False]
        for stop in stops:
            cur = 0
            for ch in stop:
                if ch not in goto[cur]:
                    goto.append({})
                    final.append(False)
                    goto[cur][ch] = len(goto) - 1
                cur = goto[cur][ch]
            final[cur] = True
        fail = [0] * len(goto)
        order: list[int] = []
        queue = list(goto[0].values())
        while queue:
            st = queue.pop(0)
            order.append(st)
            for ch, nxt in goto[st].items():
                f = fail[st]
                while f and ch not in goto[f]:
                    f = fail[f]
                fail[nxt] = goto[f][ch] if ch in goto[f] and goto[f][ch] != nxt else 0
                final[nxt] = final[nxt] or final[fail[nxt]]
                queue.append(nxt)
        alphabet = sorted({ch for stop in stops for ch in stop})

        def delta(state: int, ch: str) -> int:
            while state and ch not in goto[state]:
                state = fail[state]
            return goto[state].get(ch, 0)

        names = {i: f"{name}-s{i}" if i else name for i in range(len(goto)) if not final[i]}
        other = "[^" + "".join(_cls_char(c) for c in alphabet) + "]"
        for state, rn in names.items():
            alts = ['""']
            alts.append(f"{other} {names[0]}")
            for ch in alphabet:
                d = delta(state, ch)
                if not final[d]:
                    alts.append(f"{_lit(ch)} {names[d]}")
            self.r.define(rn, " | ".join(alts))
        if nonempty:
            first = [f"{other} {names[0]}"]
            for ch in alphabet:
                d = delta(0, ch)
                if not final[d]:
                    first.append(f"{_lit(ch)} {names[d]}")
            self._excl[memo_key] = self.r.add(name + "-1", " | ".join(first))
        else:
            self._excl[memo_key] = names[0]
        return self._excl[memo_key]

    # -- values ------------------------------------------------------------------------------------
    def base(self, flavor: Flavor) -> dict[str, str]:
        """Shared scalar rules for one value flavor."""
        r = self.r
        ws = self.ws
        hex4 = "[0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F]"
        jchar = r.add("json-char", f'[^"\\\\\\x00-\\x1F] | "\\\\" ( ["\\\\/bfnrt] | "u" {hex4} )')
        jstring = r.add("json-string", f'"\\"" {jchar}* "\\""')
        integer = r.add("json-integer", '"-"? ( "0" | [1-9] [0-9]* )')
        # two exponent digits: a number the grammar allows is always finite (1e999 is inf, not JSON)
        number = r.add("json-number", f'{integer} ( "." [0-9]+ )? ( [eE] [-+]? [0-9] [0-9]? )?')
        if flavor == "python":
            # escapes with a fixed meaning only (``\\N``, ``\\x``, ``\\u`` need more text to be valid)
            esc = '"\\\\" [\\\\\'"nrtabfv]'
            sq = r.add("py-sq-char", f'[^\'\\\\\\n] | {esc}')
            dq = r.add("py-dq-char", f'[^"\\\\\\n] | {esc}')
            string = r.add("py-string", f'"\'" {sq}* "\'" | "\\"" {dq}* "\\""')
            boolean = r.add("py-boolean", '"True" | "False" | "true" | "false"')
            null = r.add("py-null", '"None" | "null"')
        elif flavor == "relaxed":
            alts = [jstring]
            for a, b in self.codec_string_delims:
                body = self.excluding([b], f"delim-{len(alts)}")
                alts.append(f"{_lit(a)} {body} {_lit(b)}")
            string = r.add("relaxed-string", " | ".join(alts))
            boolean = r.add("json-boolean", '"true" | "false"')
            null = r.add("json-null", '"null"')
        else:
            string = jstring
            boolean = r.add("json-boolean", '"true" | "false"')
            null = r.add("json-null", '"null"')
        pre = {"json": "json", "relaxed": "relaxed", "python": "py"}[flavor]
        value = f"{pre}-value"
        obj = f"{pre}-object"
        arr = f"{pre}-array"
        key = self.key_expr(flavor, None)
        if value not in r.rules:
            r.define(value, f"{obj} | {arr} | {string} | {number} | {boolean} | {null}")
            kv, sep = self.seps(flavor)
            r.define(obj, f'"{{" {ws} ( {key} {ws} {kv} {ws} {value} {ws} ( {sep} {ws} {key} {ws} {kv} {ws} '
                          f'{value} {ws} )* )? "}}"')
            r.define(arr, f'"[" {ws} ( {value} {ws} ( {sep} {ws} {value} {ws} )* )? "]"')
        return {"string": string, "integer": integer, "number": number, "boolean": boolean, "null": null,
                "value": value, "jstring": jstring}

    codec_string_delims: tuple[tuple[str, str], ...] = ()
    codec_relaxed_seps: tuple[str, str] = (":", ",")

    def seps(self, flavor: Flavor) -> tuple[str, str]:
        """The key/value and member separators of an object (a relaxed object's may be others)."""
        kv, sep = self.codec_relaxed_seps if flavor == "relaxed" else (":", ",")
        return _lit(kv), _lit(sep)

    def key_expr(self, flavor: Flavor, key: str | None) -> str:
        """An object key: a literal one, or any key when ``key`` is None."""
        if flavor == "python":
            if key is None:
                return self.r.rules.get("py-string", "") and "py-string"
            return f"( {_lit(repr(key))} | {_lit(json.dumps(key))} )"
        if flavor == "relaxed":
            if key is None:
                bare = "".join(dict.fromkeys(",:" + "".join(x[0] for x in self.codec_relaxed_seps)))
                return self.r.add("relaxed-key", '"\\"" [^"]* "\\"" | [^ \\t\\r\\n{}\\[\\]'
                                  + bare.replace("\\", "\\\\").replace("]", "\\]") + '"]+')
            return f"( {_lit(key)} | {_lit(json.dumps(key))} )"
        if key is None:
            return "json-string"
        return _lit(json.dumps(key, ensure_ascii=False))

    def literal(self, value: Any, flavor: Flavor) -> str:
        """One JSON value written as this flavor writes it."""
        if isinstance(value, str):
            alts = [_lit(json.dumps(value, ensure_ascii=False))]
            if flavor == "python":
                alts.append(_lit(repr(value)))
            if flavor == "relaxed":
                alts += [_lit(a + value + b) for a, b in self.codec_string_delims]
            return _alt(alts)
        if flavor == "python":
            if value is None:
                return '( "None" | "null" )'
            if isinstance(value, bool):
                return _alt([_lit(repr(value)), _lit(json.dumps(value))])
        return _lit(json.dumps(value, ensure_ascii=False))

    def value(self, schema: Any, flavor: Flavor, hint: str) -> str:
        """A grammar expression for one value that satisfies ``schema``."""
        b = self.base(flavor)
        if not isinstance(schema, Mapping) or not schema:
            return b["value"]
        if "const" in schema:
            return self.literal(schema["const"], flavor)
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return _alt([self.literal(v, flavor) for v in schema["enum"]])
        for k in ("anyOf", "oneOf"):
            if isinstance(schema.get(k), list) and schema[k]:
                return _alt([self.value(s, flavor, f"{hint}-{i}") for i, s in enumerate(schema[k])])
        types = schema.get("type")
        if isinstance(types, list):
            rest = {k: v for k, v in schema.items() if k != "type"}
            return _alt([self.value({**rest, "type": t}, flavor, f"{hint}-{t}") for t in types])
        alts: list[str] = []
        if types is None and isinstance(schema.get("properties"), Mapping):
            types = "object"
        if types == "string":
            alts.append(b["string"])
        elif types == "integer":
            alts.append(b["integer"])
        elif types == "number":
            alts.append(b["number"])
        elif types == "boolean":
            alts.append(b["boolean"])
        elif types == "null":
            alts.append(b["null"])
        elif types == "array":
            item = self.value(schema.get("items"), flavor, hint + "-item")
            sep = self.seps(flavor)[1]
            alts.append(self.r.add(hint + "-array",
                                   f'"[" {self.ws} ( {item} {self.ws} ( {sep} {self.ws} {item} {self.ws} )* )? "]"'))
        elif types == "object":
            alts.append(self.obj(schema, flavor, hint))
        else:
            return b["value"]
        if schema.get("nullable") is True:
            alts.append(b["null"])
        return _alt(alts)

    def props(self, schema: Mapping[str, Any], item: Any, sep: str, hint: str) -> str:
        """Properties in schema order, required ones mandatory, separated by ``sep``.

        ``item(key, subschema)`` returns the expression for one property. Built right to left: for
        each position, a rule for "nothing written yet" and one for "something written before".
        """
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        required = set(schema.get("required") or ()) & set(props)
        keys = list(props)
        nxt_first, nxt_after = '""', '""'
        for i in range(len(keys) - 1, -1, -1):
            k = keys[i]
            kv = item(k, props[k])
            tail = "" if nxt_after == '""' else f" {nxt_after}"
            with_first = f"{kv}{tail}"
            with_after = f"{sep} {kv}{tail}"
            if k in required:
                first, after = with_first, with_after
            else:
                first, after = f"{with_first} | {nxt_first}", f"{with_after} | {nxt_after}"
            nxt_first = self.r.add(f"{hint}-p{i}", first)
            nxt_after = self.r.add(f"{hint}-p{i}-more", after)
        return nxt_first

    def obj(self, schema: Mapping[str, Any], flavor: Flavor, hint: str) -> str:
        ws = self.ws
        props = schema.get("properties")
        if not isinstance(props, Mapping) or not props:
            if schema.get("additionalProperties") is False:
                return self.r.add(hint + "-empty", f'"{{" {ws} "}}"')
            return self.base(flavor)["value"].replace("-value", "-object")

        kv, sep = self.seps(flavor)

        def item(k: str, sub: Any) -> str:
            return f'{self.key_expr(flavor, k)} {ws} {kv} {ws} {self.value(sub, flavor, hint + "-" + k)}'

        inner = self.props(schema, item, f'{ws} {sep} {ws}', hint)
        return self.r.add(hint + "-obj", f'"{{" {ws} {inner} {ws} "}}"')

    def args_object(self, name: str | None, flavor: Flavor) -> str:
        """The arguments object of one tool (any object when the tool is unknown)."""
        schema = self.tools.get(name) if name is not None else None
        if schema is None:
            return self.base(flavor)["value"].replace("-value", "-object")
        sch = dict(schema) if schema else {"type": "object"}
        sch.setdefault("type", "object")
        return self.obj(sch, flavor, f"args-{name}")

    # -- pattern pieces ------------------------------------------------------------------------------
    def pattern(self, text: str) -> str:
        """A literal where every whitespace run matches any whitespace (profile pattern rule)."""
        parts = re.split(r"(\s+)", text)
        out = []
        for i, p in enumerate(parts):
            if not p:
                continue
            if p.isspace() and 0 < i < len(parts) - 1 and not (parts[i - 1].endswith(">")
                                                                or parts[i + 1].startswith("<")):
                # whitespace inside a tag (``<parameter name=``): the parser needs at least one
                out.append(self.r.add("ws1", "[ \\t\\n\\r]+"))
            else:
                out.append(self.ws if p.isspace() else _lit(p))
        return " ".join(out) if out else '""'

    def names(self) -> list[str | None]:
        return list(self.tools) if self.tools else [None]

    def name_expr(self, name: str | None) -> str:
        return _lit(name) if name is not None else self.r.add("any-name", _ANY_NAME)

    def header(self, c: CodecSpec, name: str | None) -> str:
        """The call header with the name (or an id carrying it) filled in."""
        h = c.header
        out: list[str] = []
        # a bare call is found by its lookahead marker, matched literally: the header's text that
        # is such a marker is spelt exactly, not with the pattern's flexible whitespace
        pos = max((len(m) for m in self.t.lookahead_open if "{" not in m and h.startswith(m)), default=0)
        if pos:
            out.append(_lit(h[:pos]))
        for m in re.compile(r"\{(name|id|call_id)\}").finditer(h, pos):
            out.append(self.pattern(h[pos:m.start()]))
            slot = m.group(1)
            if slot == "name":
                out.append(self.name_expr(name) + " " + self.ws)
            elif slot == "id":
                pre = f"{_lit(c.id_name_prefix)}? " if c.id_name_prefix else ""
                out.append(pre + self.name_expr(name) + " " + self.suffix(c.id_name_suffix) + " " + self.ws)
            elif not re.search(r"\{(name|id)\}", h[:m.start()]):
                # a native id before the name ('<tool_use id="{call_id}" name="{name}">'): the
                # parser needs one there
                out.append(self.r.add("call-id", "[a-zA-Z0-9_-]+"))
            else:  # Mistral's optional native id: NAME[CALL_ID]ID[ARGS] or NAME[ARGS]
                rest = h[m.end():]
                # the literal just before {call_id} belongs to the optional part
                lit_before = out.pop() if out else '""'
                out.append(f"( {lit_before} {self.r.add('call-id', '[a-zA-Z0-9_-]+')} )?")
                pos = m.end()
                out.append(self.pattern(rest))
                pos = len(h)
                break
            pos = m.end()
        if pos < len(h):
            out.append(self.pattern(h[pos:]))
        return " ".join(x for x in out if x and x != '""') or '""'

    def suffix(self, rx: str) -> str:
        r"""The id suffix regex in GBNF; only literal text, ``\d+`` and ``\d*`` are translated."""
        out: list[str] = []
        i = 0
        while i < len(rx):
            if rx.startswith("\\d+", i):
                out.append("[0-9]+")
                i += 3
            elif rx.startswith("\\d*", i):
                out.append("[0-9]*")
                i += 3
            elif rx[i] == "\\" and i + 1 < len(rx) and not rx[i + 1].isalnum():
                out.append(_lit(rx[i + 1]))
                i += 2
            elif rx[i] not in "\\^$*+?()[]{}|":  # any other character stands for itself ('/', '#'; '.' a dot)
                out.append(_lit(rx[i]))
                i += 1
            else:
                raise GrammarError(f"cannot express the id suffix pattern {rx!r} as a grammar")
        return " ".join(out) if out else ""

    # -- one call body per codec ---------------------------------------------------------------------
    def body(self, c: CodecSpec, hint: str) -> str:
        if c.kind == "pattern":
            raise GrammarError("the pattern codec has no grammar back-end yet (docs/profile.md)")
        if c.kind == "json":
            return self.json_body(c, hint)
        if c.kind == "name_json":
            return self.name_json_body(c, hint)
        if c.kind == "tagged":
            return self.tagged_body(c, hint)
        return self.pythonic_body(c, hint)

    def json_body(self, c: CodecSpec, hint: str) -> str:
        ws = self.ws
        calls = []
        name_keys = c.name_keys or ("name",)
        for name in self.names():
            args = self.args_object(name, "json")
            if c.name_as_key:
                key = _lit(json.dumps(name)) if name is not None else "json-string"
                calls.append(self.r.add(f"{hint}-{name or 'any'}", f'"{{" {ws} {key} {ws} ":" {ws} {args} {ws} "}}"'))
                continue
            nk = _alt([_lit(json.dumps(k)) for k in name_keys])
            nv = _lit(json.dumps(name, ensure_ascii=False)) if name is not None else "json-string"
            ak = _alt([_lit(json.dumps(k)) for k in c.args_keys])
            name_kv = f'{nk} {ws} ":" {ws} {nv}'
            args_kv = f'{ak} {ws} ":" {ws} {args}'
            # a native call id (Command R's tool_call_id) may lead the object
            id_kv = ""
            if c.id_keys:
                idk = _alt([_lit(json.dumps(k)) for k in c.id_keys])
                id_kv = f'( {idk} {ws} ":" {ws} ( json-string | json-integer ) {ws} "," {ws} )? '
                self.base("json")
            calls.append(self.r.add(
                f"{hint}-{name or 'any'}",
                f'"{{" {ws} {id_kv}( {name_kv} {ws} "," {ws} {args_kv} | {args_kv} {ws} "," {ws} {name_kv} ) '
                f'{ws} "}}"'))
        one = self.r.add(f"{hint}-call", " | ".join(calls))
        arr = f'"[" {ws} {one} {ws} ( "," {ws} {one} {ws} )* "]"'
        if c.array != "require":
            self.single[hint] = one
        if c.array != "never":
            self.listed[hint] = self.r.add(f"{hint}-list", arr)
        if c.array == "never":
            return one
        if c.array == "require":
            return self.listed[hint]
        return self.r.add(f"{hint}-one-or-list", f"{one} | {arr}")

    def name_json_body(self, c: CodecSpec, hint: str) -> str:
        ws = self.ws
        flavor: Flavor = "relaxed" if c.flavor == "relaxed" else "json"
        if flavor == "relaxed":
            self.codec_string_delims = c.string_delims
            self.codec_relaxed_seps = c.relaxed_seps
        calls = []
        for name in self.names():
            # a trailer that repeats the name ('</{name}>') writes the same name again
            trailer = (f" {ws} " + f" {self.name_expr(name)} ".join(
                self.pattern(t) if t else '""' for t in c.trailer.strip(_WS_CHARS).split("{name}"))
                if c.trailer.strip(_WS_CHARS) else "")
            calls.append(self.r.add(f"{hint}-{name or 'any'}",
                                    f"{self.header(c, name)} {ws} {self.args_object(name, flavor)}{trailer}"))
        return self.r.add(f"{hint}-call", " | ".join(calls))

    def tagged_body(self, c: CodecSpec, hint: str) -> str:
        ws = self.ws
        param = c.param
        calls = []
        trailer = c.trailer.strip(_WS_CHARS)
        for name in self.names():
            schema = self.tools.get(name) if name is not None else None
            if schema is not None and isinstance(schema.get("properties"), Mapping) and schema["properties"]:
                params = self.props(schema, lambda k, sub: self.tagged_param(param, k, sub, hint),
                                    ws, f"{hint}-{name}")
            elif schema is not None:
                params = '""'
            else:
                one = self.tagged_param(param, None, None, hint)
                params = self.r.add(f"{hint}-any-params", f"( {one} {ws} )*")
            tail = f" {ws} {self.pattern(trailer)}" if trailer else ""
            calls.append(self.r.add(f"{hint}-{name or 'any'}", f"{self.header(c, name)} {ws} {params}{tail}"))
        return self.r.add(f"{hint}-call", " | ".join(calls))

    def tagged_param(self, param: str, key: str | None, schema: Any, hint: str) -> str:
        """One ``param`` element; the value typed by the schema (raw text for strings)."""
        ws = self.ws
        pre, rest = param.split("{key}", 1)
        has_string = "{string}" in rest
        if has_string:
            mid1, rest2 = rest.split("{string}", 1)
            mid2, post = rest2.split("{value}", 1)
        else:
            mid1, post = rest.split("{value}", 1)
            mid2 = ""
        banned = sorted(set(mid1.strip() or ">") | set("<>\"\n"))
        key_expr = _lit(key) if key is not None else self.r.add(
            "param-key", "[^" + "".join(_cls_char(ch) for ch in banned) + "]+")
        post_key_parts = post.split("{key}")
        post_expr = f" {key_expr} ".join(self.pattern(p.strip(_WS_CHARS)) if p.strip(_WS_CHARS) else '""'
                                         for p in post_key_parts)
        # the value ends at the closing element; with the key known, its full spelling
        stop = (post.strip(_WS_CHARS).replace("{key}", key) if key is not None
                else post.strip(_WS_CHARS).split("{key}")[0])
        raw = self.excluding([stop], f"raw-until-{stop}")
        words = _string_members(schema)
        if words is not None:
            # one of the members, with only the whitespace the parser trims around a raw value:
            # the pattern's own, or a value on lines of its own when the pattern has none
            lead = (mid2 if has_string else mid1)
            lead, trail = lead[len(lead.rstrip(_WS_CHARS)):], post[:len(post) - len(post.lstrip(_WS_CHARS))]
            member = _alt([_lit(w) for w in words])
            after = f" ( {_lit(trail)} )?" if trail else ""
            raw = (f"( {_lit(lead)} )? {member}{after}" if lead
                   else f'( {member}{after} | "\\n" {member} ( "\\n" )? )')
        types = _types(schema)
        raw_ok = not types or "string" in types
        typed = self.value(schema, "json", f"{hint}-{key}") if types and types != {"string"} else None
        if key is not None:
            # one literal for marker + key (separate single-key tokens confuse lexer-based engines);
            # whitespace between the key and what follows it is the pattern's (``--{key} '{value}'``)
            head = self.pattern((pre.lstrip(_WS_CHARS) + key + mid1).rstrip(_WS_CHARS))
        else:
            gap = f" {self.ws}" if mid1.strip(_WS_CHARS) and mid1[:1] in _WS_CHARS else ""
            head = f"{self.pattern(pre.strip(_WS_CHARS))} {key_expr}{gap} {self.pattern(mid1.strip(_WS_CHARS))}"
        alts = []
        if has_string:
            mid = self.pattern(mid2.strip(_WS_CHARS))
            if raw_ok:
                alts.append(f'{head} {_lit(self.t.codec.string_true)} {mid} {raw} {post_expr}')
            if typed is not None or not types:
                val = typed if typed is not None else self.base("json")["value"]
                alts.append(f'{head} {_lit("false")} {mid} {ws} {val} {ws} {post_expr}')
            return _alt([f"( {a} )" for a in alts])
        if raw_ok:
            alts.append(f"{head} {raw} {post_expr}")
        if typed is not None and not raw_ok:
            alts.append(f"{head} {ws} {typed} {ws} {post_expr}")
        return _alt([f"( {a} )" for a in alts])

    def pythonic_body(self, c: CodecSpec, hint: str) -> str:
        ws = self.ws
        b = self.base("python")
        calls = []
        ident = "[A-Za-z_] [A-Za-z0-9_]*"
        # ``array: never``: calls without list brackets, where a line break outside brackets ends a
        # call (MiniCPM's fenced lines), so none before a call's "(" or the "," after it
        lines = c.array == "never"
        gap = self.r.add("sp", "[ \\t]*") if lines else ws
        for name in self.names():
            schema = self.tools.get(name) if name is not None else None
            if schema is not None and isinstance(schema.get("properties"), Mapping) and schema["properties"]:
                def kwarg(k: str, sub: Any, tool: str | None = name) -> str:
                    return f'{_lit(k)} {ws} "=" {ws} {self.value(sub, "python", f"{hint}-{tool}-{k}")}'

                kwargs = self.props(schema, kwarg, f'{ws} "," {ws}', f"{hint}-{name}")
            elif schema is not None:
                kwargs = '""'
            else:
                kw = f'{self.r.add("py-ident", ident)} {ws} "=" {ws} {b["value"]}'
                kwargs = f'( {kw} ( {ws} "," {ws} {kw} )* )?'
            callee = _lit(name) if name is not None else self.r.add("py-callee", f'{ident} ( "." {ident} )*')
            calls.append(self.r.add(f"{hint}-{name or 'any'}", f'{callee} {gap} "(" {ws} {kwargs} {ws} ")"'))
        one = self.r.add(f"{hint}-call", " | ".join(calls))
        if lines:
            return self.r.add(f"{hint}-lines", f'{one} ( {gap} "," {ws} {one} )*')
        return self.r.add(f"{hint}-list", f'"[" {ws} {one} ( {ws} "," {ws} {one} )* {ws} "]"')

    # -- the tool-call part ---------------------------------------------------------------------------
    def bodies(self) -> str:
        t = self.t
        main = self.body(t.codec, "call")
        if t.alt_codec is not None:
            alt = self.body(t.alt_codec, "alt")
            return self.r.add("call-body", f"{main} | {alt}")
        return main

    def triggers(self) -> tuple[str, ...]:
        t = self.t
        trig: list[str] = [*t.section_open]
        if t.bare_calls or not t.section_open:
            trig += t.call_open
        trig += t.lookahead_open
        return tuple(dict.fromkeys(trig))

    def blocks(self) -> tuple[str, dict[str, str]]:
        """The tool-call part (one or more blocks) and, per trigger, what follows that trigger."""
        t = self.t
        ws = self.ws
        body = self.bodies()
        sep = _alt([_lit(s) for s in t.separators])
        items_sep = f"{ws} {sep} {ws}" if t.separators else ws
        call_close = _alt([_lit(m) for m in t.call_close]) if t.call_close else ""
        after: dict[str, str] = {}
        blocks: list[str] = []
        if t.call_open:
            inner = f"{ws} {body} {ws} {call_close}".rstrip()
            item_rest = self.r.add("call-rest", inner)
            item = self.r.add("call-item", f"{_alt([_lit(m) for m in t.call_open])} {item_rest}")
            for m in t.call_open:
                if t.bare_calls or not t.section_open:
                    after[m] = item_rest
        else:
            item = body
        if t.section_open:
            items = self.r.add("section-items", f"{item} ( {items_sep} {item} )*")
            close = f" {ws} {_alt([_lit(m) for m in t.section_close])}" if t.section_close else ""
            sec_rest = self.r.add("section-rest", f"{ws} {items}{close}")
            blocks.append(self.r.add("section", f"{_alt([_lit(m) for m in t.section_open])} {sec_rest}"))
            for m in t.section_open:
                after[m] = sec_rest
        if t.call_open and (t.bare_calls or not t.section_open):
            blocks.append(item)
        marked = _alt(blocks)
        if not t.lookahead_open:
            return self.r.add("tool-calls", f"{marked} ( {ws} {marked} )*"), after
        # the marker is the start of the body itself (``<function=``, ``{``, ``[``, ``call:``); a
        # bare ``{`` opens one object, not a list
        if "[" not in t.lookahead_open and self.single:
            body = _alt(list(self.single.values()))
        elif "{" not in t.lookahead_open and self.listed:
            body = _alt(list(self.listed.values()))
        bare = self.r.add("bare-items", f"{body} ( {items_sep} {body} )*")
        if not blocks:
            return self.r.add("tool-calls", bare), after
        # marked blocks may come before bare calls, not after: the parser takes a marker after a
        # bare call for a block the bare call left open
        return self.r.add("tool-calls", f"{marked} ( {ws} {marked} )* ( {ws} {bare} )? | {bare}"), after


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
        vals = schema.get("enum") or [schema.get("const")]
        if all(isinstance(v, str) for v in vals):
            out.add("string")
    for key in ("anyOf", "oneOf"):
        for alt in schema.get(key) or ():
            out |= _types(alt)
    return out


# -- Harmony: calls routed by message headers -------------------------------------------------------

class _Harmony:
    """GBNF rules for one Harmony assistant turn, mirroring how the parser routes it.

    The parser leaves plain content at ``start`` or ``channel``, reads a header up to ``message``
    and treats the body as a tool call whenever that header holds ``recipient_prefix``. So the
    grammar takes over at those two markers (its triggers) and writes every header itself: a
    header either names a plain channel, and its body is free text without markers, or names a
    recipient, and its body is that tool's arguments typed by the schema. No text this grammar
    accepts can reach the parser as an unconstrained call.

    Layout (canonical first, then the spellings the parser also reads and gpt-oss really writes):
    ``[<|start|>assistant]`` (engines that echo the role), any number of analysis or recipient-less
    commentary messages each closed by an end marker and followed by ``<|start|>assistant``, then
    either a ``final`` message or one or more calls
    ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}<|call|>`` (content
    type also ``json``, ``code`` or none; channel also a reasoning one; the recipient may instead sit
    in the role, ``<|start|>assistant to=functions.NAME<|channel|>commentary...``). The end marker
    after the last message is optional: engines treat ``<|call|>`` and ``<|return|>`` as stop tokens
    and strip them (llama.cpp never lets a grammar match a stop token as text).
    """

    def __init__(self, b: _Builder, m: MessagesSpec) -> None:
        self.b, self.m, self.r = b, m, b.r
        r = self.r
        self.role = r.add("h-role", _lit(m.start + m.role))
        self.end = r.add("h-end", _alt([_lit(e) for e in m.ends]))
        con = f"{_lit(m.constrain)}? " if m.constrain else ""
        ctype = r.add("h-content-type", f'( " " {con}{_alt([_lit(t) for t in m.content_types])} )?')
        chan = r.add("h-call-channel", _alt([_lit(c) for c in (m.call_channel, *m.reasoning_channels)]))
        self.note_channels = [*m.reasoning_channels, m.call_channel]
        in_channel: list[str] = []
        in_role: list[str] = []
        for name in b.names():
            args = b.args_object(name, "json")
            for lead, rules, rest in (("", in_channel, ""), (" ", in_role, f"{_lit(m.channel)} {chan} ")):
                who = (_lit(lead + m.recipient_prefix + name) if name is not None
                       else f"{_lit(lead + m.recipient_prefix)} {b.name_expr(None)}")
                rules.append(r.add(f"h-{'role-' if lead else ''}call-{name or 'any'}",
                                   f"{who} {rest}{ctype} {_lit(m.message)} {args}"))
        #: after ``channel`` ``CHANNEL ``: the recipient, the header's rest and the arguments
        self.calls = r.add("h-calls-by-name", _alt(in_channel))
        #: after ``start`` + role: the recipient, then ``channel`` and the header's rest, the arguments
        self.role_calls = r.add("h-role-calls-by-name", _alt(in_role))
        self.call_channel = chan

    def turn(self) -> str:
        """Everything from the first ``start`` / ``channel`` marker to the end of the output."""
        r, m = self.r, self.m
        role, end = self.role, self.end
        # a body ends where the parser ends it: at an end marker or at the next header
        text = self.b.excluding([m.start, m.channel, *m.ends], "h-text")
        msg = _lit(m.message)
        note = r.add("h-note", f"{_lit(m.channel)} {_alt([_lit(c) for c in self.note_channels])} {msg} {text}")
        final = r.add("h-final", f"{_lit(m.channel + m.final_channel + m.message)} {text}")
        call = r.add("h-call", f'{_lit(m.channel)} {self.call_channel} " " {self.calls}')
        role_call = r.add("h-role-call", f"{role} {self.role_calls}")
        first_call = r.add("h-first-call", f"{role}? {call} | {role_call}")
        next_call = r.add("h-next-call", f"{role} {call} | {role_call}")
        more = r.add("h-more-calls", f"( {end} {next_call} )* {end}?")
        tail_first = r.add("h-tail-first", f"{role}? {final} {end}? | {first_call} {more}")
        tail_next = r.add("h-tail-next", f"{role} {final} {end}? | {next_call} {more}")
        return r.add("harmony-turn",
                     f"{role}? {note} ( {end} {role} {note} )* {end} {tail_next} | {tail_first}")

    def after(self) -> dict[str, str]:
        """Per trigger, one header (and a call's arguments) for a structural tag; bodies stay free."""
        r, m = self.r, self.m
        heads = _alt([_lit(c) for c in dict.fromkeys([*self.note_channels, m.final_channel])])
        channel_rest = r.add("h-after-channel",
                             f'{heads} {_lit(m.message)} | {self.call_channel} " " {self.calls} {self.end}?')
        start_rest = r.add("h-after-start", f"{_lit(m.role)} ( {_lit(m.channel)} {channel_rest} | "
                                            f"{self.role_calls} {self.end}? )")
        return {m.channel: channel_rest, m.start: start_rest}


def grammar_dialects() -> dict[str, str]:
    """Which builtin dialects get a grammar, and why the others do not (for docs and tests)."""
    from autoparser.dialects import dialects, get_profile

    out: dict[str, str] = {}
    for d in dialects():
        p = get_profile(d.name)
        out[d.name] = "covered" if p.tools is not None or p.messages is not None else "no tool calls"
    return out


def build_grammar(profile: Profile, tools: object = None, fmt: GrammarFormat = "gbnf") -> GrammarExport:
    """A grammar for the tool-call wire format of ``profile``, constrained by ``tools``' schemas.

    Without tools, any tool name and any JSON arguments are allowed (the shape is still enforced).
    A profile without any tool-call format (``think``) raises :class:`GrammarError` rather than
    returning a grammar that constrains nothing: a caller asking for a tool grammar has a wrong
    assumption about the model, and an empty grammar (or a lazy one with no trigger, which
    llama.cpp refuses) would hide it.
    """
    if fmt not in ("gbnf", "ebnf", "structural-tag"):
        raise GrammarError(f"unknown grammar format {fmt!r} (valid: ebnf, gbnf, structural-tag)")
    if profile.tools is None and profile.messages is None:
        only = "reasoning and content" if profile.reasoning is not None else "content"
        raise GrammarError(f"profile {profile.name or '<derived>'!r} has no tool-call format to constrain "
                          f"(its output is {only} only): run without a grammar, or use a profile whose "
                          "model writes tool calls")
    if profile.tools is not None and profile.messages is not None:
        # a marker grammar would leave header-routed calls unconstrained, and vice versa
        raise GrammarError(f"profile {profile.name or '<derived>'!r} has both tool markers and Harmony "
                          "header-routed messages; a grammar for the two together is not supported")
    schemas = tool_schemas(tools, profile)
    b = _Builder(profile, schemas)
    notes = ["object properties follow the schema's order; no extra properties",
             "unsupported schema keywords (pattern, length and range limits, recursive $ref) widen to the type"]
    m = profile.messages
    if m is not None:  # Harmony: calls routed by message headers
        if not (m.start and m.channel and m.message):
            raise GrammarError("Harmony messages need start, channel and message markers for a grammar")
        h = _Harmony(b, m)
        part, after = (h.turn(), {}) if fmt != "structural-tag" else ("", h.after())
        all_triggers: tuple[str, ...] = (m.channel, m.start)
        start_triggers: tuple[str, ...] = ()
        prose_stops, what = [m.start, m.channel], "prose without a Harmony marker, then optionally a Harmony turn"
        notes.append("Harmony: from the first header marker on, every header is spelt by the grammar; analysis, "
                     "commentary and final bodies are free text without markers; a turn ends with a final "
                     "message or with calls; the end marker after the last message is optional (a stop token)")
        if fmt == "structural-tag":
            notes.append("structural tag: each tag holds one header (and a call's arguments); "
                         "message bodies are the free text between tags")
    else:
        part, after = b.blocks()
        all_triggers = b.triggers()
        start_triggers = tuple(x for x in all_triggers if x in b.t.lookahead_at_start)
        # single-character triggers such as ``{`` and ``[`` only start calls at the beginning
        prose_stops = [x for x in all_triggers if len(x) > 1]
        what = "prose without a trigger, then optionally the tool calls"
        if b.t.lookahead_at_start:
            notes.append(f"bare calls starting with {', '.join(map(repr, b.t.lookahead_at_start))} are only "
                         "recognised at the start of the output")
    triggers = tuple(x for x in all_triggers if x not in start_triggers)
    header = [f"autoparser grammar for dialect {profile.name or '<derived>'} ({fmt})",
              "tools: " + (", ".join(schemas) if schemas else "any (no tools given)")]
    if fmt == "gbnf":
        b.r.define("root", part)
        header.append("lazy triggers (llama.cpp grammar_triggers, type word): "
                      + json.dumps(list(triggers), ensure_ascii=False))
        if start_triggers:
            header.append("also when the output starts with: " + json.dumps(list(start_triggers)))
        return GrammarExport("gbnf", b.r.render(header), triggers, start_triggers, tuple(notes))
    if fmt == "ebnf":
        prose = b.excluding(prose_stops, "prose")
        b.r.define("root", f"{prose} {part}?" if not start_triggers else f"{part} | {prose} {part}?")
        header.append("whole response: " + what)
        return GrammarExport("ebnf", b.r.render(header), triggers, start_triggers, tuple(notes))
    # structural tag: one tag per trigger; its content is the EBNF of what follows the trigger
    tags: list[dict[str, Any]] = []
    skipped: list[str] = []
    for trig in all_triggers:
        rest = after.get(trig)
        if rest is None:
            skipped.append(trig)
            continue
        b.r.define("root", rest)
        tags.append({"type": "tag", "begin": trig,
                     "content": {"type": "grammar", "grammar": b.r.render()}, "end": ""})
    if not tags:
        raise GrammarError(f"dialect {profile.name or '<derived>'!r}: its calls start with "
                          f"{', '.join(map(repr, triggers))}, which a structural tag cannot trigger on "
                          "(the marker belongs to the call itself); use ebnf or gbnf")
    if skipped:
        notes.append("not triggered (part of the call body, no literal trigger): "
                     + ", ".join(map(repr, skipped)))
    doc: dict[str, Any] = {"type": "structural_tag",
           "format": {"type": "triggered_tags", "triggers": [t["begin"] for t in tags], "tags": tags,
                      "at_least_one": False, "stop_after_first": False}}
    return GrammarExport("structural-tag", json.dumps(doc, ensure_ascii=False, indent=2),
                         tuple(str(t["begin"]) for t in tags), (), tuple(notes))
