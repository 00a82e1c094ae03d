"""The grammar tree and its back-ends.

One tree per request holds every spelling the parser reads; where there are several, a
:class:`Choice` lists the canonical one first. Two kinds of back-end print it:

* forcing (one spelling, what a model is made to write): :func:`canonical` takes each ``Choice``'s
  first item and each :class:`Ws`'s canonical text; :func:`to_regex`, :func:`to_spec` (a regex, or
  an xgrammar structural tag where JSON-schema nodes need one), :func:`triggered` (free text until
  the leading marker) and :func:`render` (the text of a tree of literals) print that.
* accepting (every spelling): :func:`print_rules` writes GBNF (llama.cpp; also xgrammar's EBNF) or
  llguidance Lark (one-character terminals, so its lexer decides what the GBNF says), with named
  :class:`Rule` s (recursion) and :class:`Excluding` (text without given strings, as an
  automaton); :func:`accepting_regex` writes a Python regex (transformers response templates).
  Forcing-only leaves (:class:`Re`, :class:`Schema`) drop out of a ``Choice`` there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from autoparser.errors import AutoparserError

__all__ = [
    "EMPTY", "Alt", "Choice", "Cls", "Excluding", "GrammarError", "Group", "Lit", "Node", "Re", "Ref", "Rep",
    "Rule", "Schema", "Seq", "Ws", "accepting_regex", "alt", "canonical", "choice", "escape", "has_schema", "lits",
    "opt", "print_rules", "regex_literal", "render", "seq", "star", "to_regex", "to_spec", "triggered",
]

_CONTROLS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_MAX_EXPAND = 4  # unbounded repetition of a JSON-schema node is spelt out up to this many calls


class GrammarError(AutoparserError):
    """A grammar cannot be built for this profile (no tool format, or an unsupported construct)."""


@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Cls:
    body: str  #: one character of a class, in the syntax regex and GBNF share (``^<``, ``0-9``)


@dataclass(frozen=True)
class Ws:
    canon: str = ""  #: forced text; accepted: any whitespace (at least one character with ``plus``)
    plus: bool = False


@dataclass(frozen=True)
class Re:
    pattern: str  #: a regex (forcing back-ends only)


@dataclass(frozen=True)
class Schema:
    schema: str  #: JSON-schema text xgrammar compiles itself (forcing back-ends only)


@dataclass(frozen=True)
class Excluding:
    stops: tuple[str, ...]  #: any text containing none of these (accepting back-ends only)


@dataclass(frozen=True)
class Ref:
    name: str  #: the :class:`Rule` of that name (recursion)


@dataclass(frozen=True, eq=False)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True, eq=False)
class Alt:
    items: tuple[Node, ...]  #: alternatives every back-end keeps (tools, enum members, optional members)


@dataclass(frozen=True, eq=False)
class Choice:
    items: tuple[Node, ...]  #: spellings of one thing: forcing back-ends take the first


@dataclass(frozen=True, eq=False)
class Rep:
    item: Node  #: ``item (sep item)*``, ``lo`` to ``hi`` items (``hi`` None: unbounded)
    sep: Node
    lo: int
    hi: int | None


@dataclass(frozen=True, eq=False)
class Rule:
    name: str  #: a named rule in GBNF / Lark; a :class:`Ref` to it inside ``body`` recurses
    body: Node


@dataclass(frozen=True, eq=False)
class Group:
    name: str  #: ``(?P<name>...)`` in an accepting regex; transparent elsewhere
    body: Node


Node = Lit | Cls | Ws | Re | Schema | Excluding | Ref | Seq | Alt | Choice | Rep | Rule | Group
EMPTY = Lit("")


def escape(ch: str, special: str, controls: bool = True) -> str:
    """One character escaped: ``special`` ones after a backslash, line controls as ``\\n``...,
    other controls (with ``controls``) as ``\\xHH``."""
    if ch in special:
        return "\\" + ch
    if ch in _CONTROLS:
        return _CONTROLS[ch]
    return f"\\x{ord(ch):02X}" if controls and ord(ch) < 0x20 else ch


def regex_literal(text: str) -> str:
    """``text`` as a regex matching exactly it, in the syntax xgrammar and Python's ``re`` share."""
    return "".join(escape(ch, r".^$*+?()[]{}|\/-", controls=False) for ch in text)


def seq(*items: Node) -> Node:
    flat: list[Node] = []
    for p in (p for it in items for p in (it.items if isinstance(it, Seq) else (it,))):
        if isinstance(p, Lit) and flat and isinstance(flat[-1], Lit):
            flat[-1] = Lit(flat[-1].text + p.text)
        elif p != EMPTY:
            flat.append(p)
    return flat[0] if len(flat) == 1 else Seq(tuple(flat)) if flat else EMPTY


def alt(items: Sequence[Node]) -> Node:
    unique = tuple(dict.fromkeys(items))
    return unique[0] if len(unique) == 1 else Alt(unique)


def choice(*items: Node) -> Node:
    unique = tuple(dict.fromkeys(items))
    return unique[0] if len(unique) == 1 else Choice(unique)


def opt(node: Node) -> Node:
    return Rep(node, EMPTY, 0, 1)


def star(node: Node, lo: int = 0) -> Node:
    return Rep(node, EMPTY, lo, None)


def lits(texts: Sequence[str]) -> Node:
    """The first of ``texts`` when forced, any of them when accepted."""
    return choice(*(Lit(t) for t in texts)) if texts else EMPTY


# -- forcing back-ends -----------------------------------------------------------------------------


def canonical(node: Node, memo: dict[int, Node] | None = None) -> Node:
    """The tree with one spelling: each ``Choice`` its first item, each ``Ws`` its canonical text."""
    memo = {} if memo is None else memo
    if id(node) not in memo:
        out: Node = node
        if isinstance(node, Choice):
            out = canonical(node.items[0], memo)
        elif isinstance(node, Ws):
            out = Lit(node.canon)
        elif isinstance(node, Rule | Group):
            out = canonical(node.body, memo)
        elif isinstance(node, Seq):
            out = seq(*(canonical(i, memo) for i in node.items))
        elif isinstance(node, Alt):  # not deduplicated: an example's k-th call is its k-th item
            out = Alt(tuple(canonical(i, memo) for i in node.items))
        elif isinstance(node, Rep):
            out = Rep(canonical(node.item, memo), canonical(node.sep, memo), node.lo, node.hi)
        elif isinstance(node, Ref | Excluding):
            raise GrammarError(f"{node!r} has no canonical spelling")
        memo[id(node)] = out
    return memo[id(node)]


def has_schema(node: Node) -> bool:
    if isinstance(node, Seq | Alt | Choice):
        return any(has_schema(i) for i in node.items)
    return isinstance(node, Schema) or (isinstance(node, Rep) and has_schema(node.item))


def _times(lo: int, hi: int | None) -> str:
    fixed = {(0, None): "*", (1, None): "+", (0, 1): "?", (1, 1): ""}
    return fixed.get((lo, hi), f"{{{lo},{'' if hi is None else hi}}}")


def to_regex(node: Node) -> str:
    """A canonical tree as one regex (xgrammar and Python's ``re`` share the syntax)."""
    if isinstance(node, Lit):
        return regex_literal(node.text)
    if isinstance(node, Cls):
        return f"[{node.body}]"
    if isinstance(node, Re):
        return node.pattern
    if isinstance(node, Group):
        return f"(?P<{node.name}>{to_regex(node.body)})"
    if isinstance(node, Seq):
        return "".join(_group(i) if isinstance(i, Alt) or (isinstance(i, Re) and "|" in i.pattern) else to_regex(i)
                       for i in node.items)
    if isinstance(node, Alt):
        rest = [i for i in node.items if i != EMPTY]
        if len(rest) < len(node.items):  # xgrammar dislikes ``a|``
            return f"(?:{to_regex(alt(rest))})?"
        return "|".join(to_regex(i) for i in node.items)
    if isinstance(node, Rep):
        one = _group(node.item)
        if node.sep == EMPTY or node.hi == 1:
            return one + _times(node.lo, node.hi)
        more = _group(seq(node.sep, node.item)) + _times(max(node.lo - 1, 0), None if node.hi is None else node.hi - 1)
        return f"{one}{more}" if node.lo else f"(?:{one}{more})?"
    raise GrammarError(f"cannot be written as a regex: {node!r}")


def _group(node: Node) -> str:
    text = to_regex(node)
    return text if isinstance(node, Cls) or (isinstance(node, Lit) and len(node.text) == 1) else f"(?:{text})"


def accepting_regex(node: Node) -> str:
    """A tree without recursion as a Python regex accepting every spelling."""

    def widen(n: Node) -> Node:
        if isinstance(n, Ws):
            return Re(r"\s+" if n.plus else r"\s*")
        if isinstance(n, Seq | Alt | Choice):
            return (Seq if isinstance(n, Seq) else Alt)(tuple(widen(i) for i in n.items))
        if isinstance(n, Rep):
            return Rep(widen(n.item), widen(n.sep), n.lo, n.hi)
        if isinstance(n, Rule | Group):
            return Group(n.name, widen(n.body)) if isinstance(n, Group) else widen(n.body)
        return n

    return to_regex(widen(node))


def _structural(node: Node) -> dict[str, Any]:
    """A structural-tag node (see :mod:`autoparser.live.structured`) for a canonical tree."""
    if not has_schema(node):
        return {"type": "regex", "pattern": to_regex(node)}
    if isinstance(node, Schema):
        return {"type": "json_schema", "schema": node.schema}
    if isinstance(node, Seq):
        for i, part in enumerate(node.items):  # an optional part holding a schema: both ways spelt out
            if isinstance(part, Alt) and EMPTY in part.items and has_schema(part):
                return _structural(alt([seq(*node.items[:i], x, *node.items[i + 1:]) for x in part.items]))
        items: list[dict[str, Any]] = []
        pending: list[Node] = []
        for it in (*node.items, None):
            if it is not None and not has_schema(it):
                pending.append(it)
                continue
            items += [_structural(seq(*pending))] if pending else []
            items += [_structural(it)] if it is not None else []
            pending = []
        return items[0] if len(items) == 1 else {"type": "concat", "items": items}
    if isinstance(node, Alt) and EMPTY not in node.items:
        return {"type": "union", "items": [_structural(i) for i in node.items]}
    if isinstance(node, Alt) or (isinstance(node, Rep) and node.lo == 0):
        raise GrammarError("an optional block with JSON-schema arguments cannot be expressed")
    assert isinstance(node, Rep)
    hi = node.hi if node.hi is not None else max(node.lo, _MAX_EXPAND)
    return _structural(alt([seq(*[x for k in range(n) for x in ((node.sep, node.item) if k else (node.item,))])
                            for n in range(node.lo, hi + 1)]))


def to_spec(node: Node) -> dict[str, Any]:
    node = canonical(node)
    if has_schema(node):
        return {"kind": "structural_tags", "tag": _structural(node)}
    return {"kind": "regex", "regex": to_regex(node)}


def triggered(tree: Node) -> dict[str, Any]:
    """``TriggeredTags`` with one tag that begins with the block's leading literal (the trigger)."""
    tree = canonical(tree)
    if isinstance(tree, Rep) and tree.lo == tree.hi == 1:
        tree = tree.item
    if isinstance(tree, Alt):  # ``a X | a Y`` as ``a (X | Y)``
        parts = [list(i.items) if isinstance(i, Seq) else [i] for i in tree.items]
        heads = [p[0].text if isinstance(p[0], Lit) else "" for p in parts]
        prefix = heads[0]
        for h in heads[1:]:
            while not h.startswith(prefix):
                prefix = prefix[:-1]
        if prefix:
            rests = [seq(Lit(h[len(prefix):]), *p[1:]) for h, p in zip(heads, parts, strict=True)]
            tree = seq(Lit(prefix), alt(rests))
    items = list(tree.items) if isinstance(tree, Seq) else [tree]
    head = items.pop(0)
    if not isinstance(head, Lit) or not head.text.strip():
        raise GrammarError("auto mode needs a call format that starts with a fixed marker")
    last = items.pop() if items and isinstance(items[-1], Lit) else EMPTY
    if not items:
        raise GrammarError("auto mode: nothing variable between the markers")
    trigger = head.text.strip()
    if len(trigger) < 2:
        raise GrammarError(f"auto mode needs a distinctive first marker; {trigger!r} would capture prose")
    end = last.text if isinstance(last, Lit) else ""
    tag = {"type": "tag", "begin": head.text, "content": _structural(seq(*items)), "end": end}
    return {"type": "triggered_tags", "triggers": [trigger], "tags": [tag], "at_least_one": False,
            "stop_after_first": True}


def render(node: Node) -> str:
    """The text of a tree of literals (an example), canonical spellings taken. A repetition of
    alternatives writes them in order: the k-th item is the k-th alternative (the k-th call)."""

    def text(n: Node, k: int) -> str:
        if isinstance(n, Lit):
            return n.text
        if isinstance(n, Seq):
            return "".join(text(i, k) for i in n.items)
        if isinstance(n, Alt) and k < len(n.items):
            return text(n.items[k], 0)
        if isinstance(n, Rep):
            return text(n.sep, 0).join(text(n.item, i) for i in range(n.lo))
        if isinstance(n, Re):  # e.g. Kimi's ":\\d+" id suffix: the smallest instance
            return re.sub(r"\\d(?:[+*]|\{[^}]*\})?|\[0-9\](?:[+*]|\{[^}]*\})?", "0", n.pattern).replace("\\", "")
        raise GrammarError(f"cannot render {n!r}")

    return text(canonical(node), 0)


# -- accepting back-ends: GBNF (and xgrammar EBNF) and llguidance Lark -----------------------------


class _Printer:
    def __init__(self, syntax: Literal["gbnf", "lark"]) -> None:
        self.lark = syntax == "lark"
        self.rules: dict[str, str] = {"root": "?"}
        self.done: dict[int, str] = {}
        self.named: set[int] = set()
        self.forcing: dict[int, bool] = {}
        self.excl: dict[tuple[str, ...], str] = {}

    def name(self, name: str) -> str:
        base = re.sub(r"[^a-zA-Z0-9]+", "-", name).strip("-").lower() or "r"
        return ("start" if base == "root" else base.replace("-", "_")) if self.lark else base

    def fresh(self, name: str) -> str:
        n, i = self.name(name), 2
        while n in self.rules:
            n, i = self.name(f"{name}-{i}"), i + 1
        return n

    def define(self, name: str, body: str) -> str:
        self.rules[name] = body
        return name

    def lit(self, text: str) -> str:
        if not self.lark:
            return '"' + "".join(escape(ch, '"\\') for ch in text) + '"'
        chars = ["/" + _CONTROLS.get(c, re.escape(c).replace("/", "\\/")) + "/" for c in text]
        return '""' if not chars else chars[0] if len(chars) == 1 else "( " + " ".join(chars) + " )"

    def cls(self, body: str) -> str:
        return "/[" + body.replace("/", "\\/") + "]/" if self.lark else f"[{body}]"

    def forcing_only(self, node: Node) -> bool:
        key = id(node)
        if key not in self.forcing:
            self.forcing[key] = False  # a Ref loop is not forcing-only
            items = node.items if isinstance(node, Seq | Alt | Choice) else (
                (node.item, node.sep) if isinstance(node, Rep) else (node.body,) if isinstance(node, Rule) else ())
            found = [self.forcing_only(i) for i in items]
            both = all(found) if isinstance(node, Choice) else any(found)  # a Choice keeps its printable spellings
            self.forcing[key] = isinstance(node, Re | Schema) or both
        return self.forcing[key]

    def expr(self, node: Node) -> str:
        key = id(node)
        if key not in self.done:
            self.done[key] = self._expr(node)
        elif key not in self.named and isinstance(node, Seq | Alt | Choice | Rep):  # shared: a rule
            self.named.add(key)
            self.done[key] = self.define(self.fresh("r"), self.done[key])
        return self.done[key]

    def _expr(self, node: Node) -> str:
        if isinstance(node, Lit):
            return self.lit(node.text)
        if isinstance(node, Cls):
            return self.cls(node.body)
        if isinstance(node, Ws):
            return self.define(self.name("ws1" if node.plus else "ws"), self.cls(" \\t\\n\\r") + "*+"[node.plus])
        if isinstance(node, Ref):
            return self.name(node.name)
        if isinstance(node, Group):
            return self.expr(node.body)
        if isinstance(node, Rule):
            name = self.name(node.name)
            if name not in self.rules:
                self.rules[name] = "?"  # a placeholder while the body prints (recursion)
                self.define(name, self.expr(node.body))
            return name
        if isinstance(node, Excluding):
            return self.excluding(node.stops)
        if isinstance(node, Seq):
            return " ".join(self.group(i) for i in node.items)
        if isinstance(node, Alt | Choice):
            texts = list(dict.fromkeys(self.expr(i) for i in node.items if not self.forcing_only(i)))
            if not texts:
                raise GrammarError(f"nothing an accepting grammar can print in {node!r}")
            return " | ".join(texts)
        if isinstance(node, Rep):
            one = self.group(node.item)
            if node.sep == EMPTY and node.hi is None and node.lo <= 1:
                return one + "*+"[node.lo]
            more = one if node.sep == EMPTY else f"( {self.expr(node.sep)} {one} )"
            n = max(node.lo, 1)
            rest = [f"{more}*"] if node.hi is None else [f"{more}?"] * (node.hi - n)
            body = " ".join([one] + [more] * (n - 1) + rest)
            return f"( {body} )?" if node.lo == 0 else body
        raise GrammarError(f"an accepting grammar cannot print {node!r}")

    def group(self, node: Node) -> str:
        text = self.expr(node)
        return f"( {text} )" if " " in text and not isinstance(node, Lit | Cls) else text

    def excluding(self, stops: Sequence[str]) -> str:
        """Any text without any of ``stops``: an Aho-Corasick automaton written as rules."""
        stops = tuple(sorted({x for x in stops if x}))
        if stops in self.excl:
            return self.excl[stops]
        base = self.fresh("not-" + "-".join(stops))
        if not stops:
            return self.define(base, self.cls("^\\x00") + "*")
        goto: list[dict[str, int]] = [{}]
        final = [False]
        for stop in stops:
            cur = 0
            for ch in stop:
                if ch not in goto[cur]:
                    goto[cur][ch] = len(goto)
                    goto.append({})
                    final.append(False)
                cur = goto[cur][ch]
            final[cur] = True
        fail = [0] * len(goto)
        queue = list(goto[0].values())
        while queue:
            st = queue.pop(0)
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

        names = {i: self.name(f"{base}-s{i}") if i else base for i in range(len(goto)) if not final[i]}
        other = self.cls("^" + "".join(escape(c, "\\]-^[") for c in alphabet))
        for state, rn in names.items():
            steps = [f"{self.lit(ch)} {names[delta(state, ch)]}" for ch in alphabet if not final[delta(state, ch)]]
            self.define(rn, " | ".join(['""', f"{other} {base}", *steps]))
        self.excl[stops] = base
        return base


def print_rules(root: Node, syntax: Literal["gbnf", "lark"], header: Sequence[str] = ()) -> str:
    """``root`` as a grammar in ``syntax`` (GBNF / xgrammar EBNF, or llguidance Lark)."""
    p = _Printer(syntax)
    body = p.expr(root)
    rules = {p.name("root"): body, **{k: v for k, v in p.rules.items() if k != "root"}}
    if syntax == "gbnf":
        return "".join(f"# {h}\n" for h in header) + "".join(f"{k} ::= {v}\n" for k, v in rules.items())
    return "%llguidance {}\n\n" + "".join(f"{k}: {v}\n" for k, v in rules.items())
