"""The grammar tree and its back-ends.

One tree per request holds every spelling the parser reads; where several spellings exist, a
:class:`Choice` lists the canonical one first. Two kinds of back-end print it:

* forcing (one spelling, what a model is made to write): :func:`canonical` resolves every
  ``Choice`` to its first item and every :class:`Ws` to its canonical text; :func:`to_regex`,
  :func:`to_structural` / :func:`to_spec` (xgrammar / OpenVINO GenAI), :func:`triggered` (free
  text until the leading marker) and :func:`render` (the text of a tree of literals) print that.
* accepting (every spelling): :func:`print_rules` writes GBNF (llama.cpp; also xgrammar's EBNF)
  or llguidance Lark, with named :class:`Rule` s (recursive JSON values) and :class:`Excluding`
  (text without given strings, as an automaton). Forcing-only leaves (:class:`Re`, :class:`Schema`)
  are left out of a ``Choice`` there; the wider spelling beside them takes their place.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from autoparser.errors import AutoparserError

__all__ = [
    "Alt", "Choice", "Cls", "Excluding", "GrammarError", "Group", "Lit", "Node", "Re", "Ref", "Rep", "Rule",
    "Schema", "Seq", "Ws", "accepting_regex", "alt", "canonical", "choice", "opt", "print_rules", "regex_literal", "render",
    "seq", "to_regex", "to_spec", "to_structural", "triggered",
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
    """One character of a class, ``body`` in the class syntax regex and GBNF share (``^<``, ``0-9``)."""

    body: str


@dataclass(frozen=True)
class Ws:
    """Whitespace: ``canon`` when forced, any run (at least one character with ``plus``) when accepted."""

    canon: str = ""
    plus: bool = False


@dataclass(frozen=True)
class Re:
    """A regex (forcing back-ends only)."""

    pattern: str


@dataclass(frozen=True)
class Schema:
    """A JSON-schema node xgrammar compiles itself (forcing back-ends only); JSON text, hashable."""

    schema: str


@dataclass(frozen=True)
class Excluding:
    """Any text that contains none of ``stops`` (accepting back-ends only)."""

    stops: tuple[str, ...]
    nonempty: bool = False


@dataclass(frozen=True)
class Ref:
    """A reference to the :class:`Rule` named ``name`` (recursion)."""

    name: str


@dataclass(frozen=True, eq=False)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True, eq=False)
class Alt:
    """Alternatives every back-end keeps (tool names, enum members, optional members)."""

    items: tuple[Node, ...]


@dataclass(frozen=True, eq=False)
class Choice:
    """Spellings of one thing: forcing back-ends take the first, accepting ones all."""

    items: tuple[Node, ...]


@dataclass(frozen=True, eq=False)
class Rep:
    """``item (sep item)*`` with ``lo`` to ``hi`` items (``hi`` None: unbounded)."""

    item: Node
    sep: Node
    lo: int
    hi: int | None


@dataclass(frozen=True, eq=False)
class Rule:
    """A named node; a :class:`Ref` inside ``body`` to ``name`` recurses."""

    name: str
    body: Node


@dataclass(frozen=True, eq=False)
class Group:
    """A named capture (``(?P<name>...)`` in an accepting regex; transparent elsewhere)."""

    name: str
    body: Node


Node = Lit | Cls | Ws | Re | Schema | Excluding | Ref | Seq | Alt | Choice | Rep | Rule | Group
EMPTY = Lit("")


def escape(ch: str, special: str, controls: bool = True) -> str:
    """One character in a grammar's escaped form: ``special`` ones after a backslash, the line
    controls as ``\\n``/``\\r``/``\\t``, other controls (with ``controls``) as ``\\xHH``."""
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
    for it in items:
        for p in it.items if isinstance(it, Seq) else (it,):
            if isinstance(p, Lit) and flat and isinstance(flat[-1], Lit):
                flat[-1] = Lit(flat[-1].text + p.text)
            elif not (isinstance(p, Lit) and not p.text):
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


def lits(texts: Sequence[str]) -> Node:
    """The first of ``texts`` when forced, any of them when accepted."""
    return choice(*(Lit(t) for t in texts)) if texts else EMPTY


# -- forcing back-ends -----------------------------------------------------------------------------


def canonical(node: Node, memo: dict[int, Node] | None = None) -> Node:
    """The tree with one spelling: each ``Choice`` its first item, each ``Ws`` its canonical text."""
    memo = {} if memo is None else memo
    if id(node) in memo:
        return memo[id(node)]
    out: Node
    if isinstance(node, Choice):
        out = canonical(node.items[0], memo)
    elif isinstance(node, Ws):
        out = Lit(node.canon)
    elif isinstance(node, Rule | Group):
        out = canonical(node.body, memo)
    elif isinstance(node, Seq):
        out = seq(*(canonical(i, memo) for i in node.items))
    elif isinstance(node, Alt):
        out = Alt(tuple(canonical(i, memo) for i in node.items))
    elif isinstance(node, Rep):
        item = canonical(node.item, memo)
        out = item if node.lo == node.hi == 1 else Rep(item, canonical(node.sep, memo), node.lo, node.hi)
    elif isinstance(node, Ref | Excluding):
        raise GrammarError(f"{node!r} has no canonical spelling")
    else:
        out = node
    memo[id(node)] = out
    return out


def accepting_regex(node: Node) -> str:
    """A tree without recursion as a Python regex accepting every spelling (``Ws``: ``\\s*``)."""

    def widen(n: Node) -> Node:
        if isinstance(n, Ws):
            return Re(r"\s+" if n.plus else r"\s*")
        if isinstance(n, Rule):
            return widen(n.body)
        if isinstance(n, Seq | Alt | Choice):
            return (Seq if isinstance(n, Seq) else Alt)(tuple(widen(i) for i in n.items))
        if isinstance(n, Rep):
            return Rep(widen(n.item), widen(n.sep), n.lo, n.hi)
        return Group(n.name, widen(n.body)) if isinstance(n, Group) else n

    return to_regex(widen(node))


def has_schema(node: Node) -> bool:
    if isinstance(node, Schema):
        return True
    if isinstance(node, Seq | Alt | Choice):
        return any(has_schema(i) for i in node.items)
    return isinstance(node, Rep) and has_schema(node.item)


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
        return "".join(_group(i) if _needs_group(i) else to_regex(i) for i in node.items)
    if isinstance(node, Alt):
        rest = [i for i in node.items if i != EMPTY]
        if len(rest) < len(node.items):  # xgrammar dislikes ``a|``
            return f"(?:{to_regex(alt(rest))})?"
        return "|".join(to_regex(i) for i in node.items)
    if isinstance(node, Rep):
        one = _group(node.item)
        if node.sep == EMPTY and node.hi != 1:
            return one + ({0: "*", 1: "+"}.get(node.lo, f"{{{node.lo},}}") if node.hi is None else f"{{{node.lo},{node.hi}}}")
        if node.hi == 1:
            return f"(?:{one})?" if node.lo == 0 else one
        more = _group(seq(node.sep, node.item))
        lo = max(node.lo - 1, 0)
        times = ("*" if lo == 0 else f"{{{lo},}}") if node.hi is None else f"{{{lo},{node.hi - 1}}}"
        return f"(?:{one}{more}{times})?" if node.lo == 0 else f"{one}{more}{times}"
    raise GrammarError(f"cannot be written as a regex: {node!r}")


def _needs_group(node: Node) -> bool:
    return isinstance(node, Alt) or (isinstance(node, Re) and "|" in node.pattern)


def _group(node: Node) -> str:
    text = to_regex(node)
    return text if isinstance(node, Cls) or (isinstance(node, Lit) and len(node.text) == 1) else f"(?:{text})"


def to_structural(node: Node) -> dict[str, Any]:
    """A structural-tag node (see :mod:`autoparser.live.structured`) for a canonical tree."""
    if not has_schema(node):
        return {"type": "regex", "pattern": to_regex(node)}
    if isinstance(node, Schema):
        return {"type": "json_schema", "schema": node.schema}
    if isinstance(node, Seq):
        for i, part in enumerate(node.items):  # an optional part holding a schema: both ways spelt out
            if isinstance(part, Alt) and EMPTY in part.items and has_schema(part):
                return to_structural(alt([seq(*node.items[:i], x, *node.items[i + 1:]) for x in part.items]))
        items: list[dict[str, Any]] = []
        pending: list[Node] = []
        for it in (*node.items, None):
            if it is None or has_schema(it):
                if pending:
                    items.append(to_structural(seq(*pending)))
                    pending = []
                if it is not None:
                    items.append(to_structural(it))
            else:
                pending.append(it)
        return items[0] if len(items) == 1 else {"type": "concat", "items": items}
    if isinstance(node, Alt):
        if EMPTY in node.items:
            raise GrammarError("an optional block with JSON-schema arguments cannot be expressed")
        return {"type": "union", "items": [to_structural(i) for i in node.items]}
    assert isinstance(node, Rep)
    options = []
    for n in range(node.lo, (node.hi if node.hi is not None else max(node.lo, _MAX_EXPAND)) + 1):
        if n == 0:
            raise GrammarError("an optional block with JSON-schema arguments cannot be expressed")
        options.append(seq(*[x for k in range(n) for x in ((node.sep, node.item) if k else (node.item,))]))
    return to_structural(alt(options))


def to_spec(node: Node) -> dict[str, Any]:
    node = canonical(node)
    if has_schema(node):
        return {"kind": "structural_tags", "tag": to_structural(node)}
    return {"kind": "regex", "regex": to_regex(node)}


def triggered(tree: Node) -> dict[str, Any]:
    """``TriggeredTags`` with one tag that begins with the block's leading literal (the trigger)."""
    tree = canonical(tree)
    if isinstance(tree, Rep) and tree.lo == tree.hi == 1:
        tree = tree.item
    if isinstance(tree, Alt):
        tree = _common_head(tree)
    items = list(tree.items) if isinstance(tree, Seq) else [tree]
    head = items.pop(0)
    if not isinstance(head, Lit) or not head.text.strip():
        raise GrammarError("auto mode needs a call format that starts with a fixed marker")
    end = ""
    if items and isinstance(items[-1], Lit):
        end = items.pop().text  # type: ignore[union-attr]
    if not items:
        raise GrammarError("auto mode: nothing variable between the markers")
    trigger = head.text.strip()
    if len(trigger) < 2:
        raise GrammarError(f"auto mode needs a distinctive first marker; {trigger!r} would capture prose")
    tag = {"type": "tag", "begin": head.text, "content": to_structural(seq(*items)), "end": end}
    return {"type": "triggered_tags", "triggers": [trigger], "tags": [tag], "at_least_one": False,
            "stop_after_first": True}


def _common_head(node: Alt) -> Node:
    """``a X | a Y`` as ``a (X | Y)``: the literal every alternative starts with, factored out."""
    parts = [list(i.items) if isinstance(i, Seq) else [i] for i in node.items]
    heads = [p[0].text if isinstance(p[0], Lit) else "" for p in parts]
    prefix = heads[0]
    for h in heads[1:]:
        while not h.startswith(prefix):
            prefix = prefix[:-1]
    if not prefix:
        return node
    return seq(Lit(prefix), alt([seq(Lit(h[len(prefix):]), *p[1:]) for h, p in zip(heads, parts, strict=True)]))


def render(node: Node) -> str:
    """The text of a tree of literals (an example), canonical spellings taken. A repetition of
    alternatives writes them in order: the k-th item is the k-th alternative (the k-th call)."""
    return _render(canonical(node), 0)


def _render(node: Node, k: int) -> str:
    if isinstance(node, Lit):
        return node.text
    if isinstance(node, Seq):
        return "".join(_render(i, k) for i in node.items)
    if isinstance(node, Alt) and k < len(node.items):
        return _render(node.items[k], 0)
    if isinstance(node, Rep):
        return _render(node.sep, 0).join(_render(node.item, i) for i in range(node.lo))
    if isinstance(node, Re):  # e.g. Kimi's ":\\d+" id suffix: the smallest instance
        return re.sub(r"\\d(?:[+*]|\{[^}]*\})?|\[0-9\](?:[+*]|\{[^}]*\})?", "0", node.pattern).replace("\\", "")
    raise GrammarError(f"cannot render {node!r}")


# -- accepting back-ends: GBNF (and xgrammar EBNF) and llguidance Lark -----------------------------

Syntax = Literal["gbnf", "lark"]


def _forcing_only(node: Node, memo: dict[int, bool]) -> bool:
    if id(node) not in memo:
        memo[id(node)] = False  # a Ref loop is not forcing-only
        if isinstance(node, Re | Schema):
            memo[id(node)] = True
        elif isinstance(node, Seq | Alt):
            memo[id(node)] = any(_forcing_only(i, memo) for i in node.items)
        elif isinstance(node, Choice):
            memo[id(node)] = all(_forcing_only(i, memo) for i in node.items)
        elif isinstance(node, Rep):
            memo[id(node)] = _forcing_only(node.item, memo) or _forcing_only(node.sep, memo)
        elif isinstance(node, Rule):
            memo[id(node)] = _forcing_only(node.body, memo)
    return memo[id(node)]


class _Printer:
    def __init__(self, syntax: Syntax) -> None:
        self.syntax = syntax
        self.rules: dict[str, str] = {}
        self.done: dict[int, str] = {}
        self.named: set[int] = set()
        self.forcing: dict[int, bool] = {}

    def name(self, name: str) -> str:
        base = re.sub(r"[^a-zA-Z0-9]+", "-", name).strip("-").lower() or "r"
        if self.syntax == "lark":
            return "start" if base == "root" else base.replace("-", "_")
        return base

    def fresh(self, name: str) -> str:
        n, i = self.name(name), 2
        while n in self.rules:
            n, i = self.name(f"{name}-{i}"), i + 1
        return n

    def define(self, name: str, body: str) -> str:
        self.rules[name] = body
        return name

    def lit(self, text: str) -> str:
        if not text:
            return '""'
        if self.syntax == "gbnf":
            return '"' + "".join(escape(ch, '"\\') for ch in text) + '"'
        chars = ["/" + _CONTROLS.get(c, re.escape(c).replace("/", "\\/")) + "/" for c in text]
        return chars[0] if len(chars) == 1 else "( " + " ".join(chars) + " )"

    def cls(self, body: str) -> str:
        return f"[{body}]" if self.syntax == "gbnf" else "/[" + body.replace("/", "\\/") + "]/"

    def expr(self, node: Node) -> str:
        key = id(node)
        if key in self.done:
            if key not in self.named and not isinstance(node, Lit | Cls | Ws | Ref | Excluding | Rule):
                # shared: the second use makes it a rule
                self.named.add(key)
                self.done[key] = self.define(self.fresh("r"), self.done[key])
            return self.done[key]
        out = self._expr(node)
        self.done[key] = out
        return out

    def _expr(self, node: Node) -> str:
        if isinstance(node, Lit):
            return self.lit(node.text)
        if isinstance(node, Cls):
            return self.cls(node.body)
        if isinstance(node, Ws):
            return self.define(self.name("ws1" if node.plus else "ws"), self.cls(" \\t\\n\\r") + ("+" if node.plus else "*"))
        if isinstance(node, Ref):
            return self.name(node.name)
        if isinstance(node, Group):
            return self.expr(node.body)
        if isinstance(node, Rule):
            name = self.name(node.name)
            if name not in self.rules:
                self.rules[name] = "?"  # placeholder while the body prints (recursion)
                self.define(name, self.expr(node.body))
            return name
        if isinstance(node, Excluding):
            return self.excluding(node.stops, node.nonempty)
        if isinstance(node, Seq):
            return " ".join(self.group(i) for i in node.items)
        if isinstance(node, Alt | Choice):
            items = [i for i in node.items if not _forcing_only(i, self.forcing)]
            if not items:
                raise GrammarError(f"nothing an accepting grammar can print in {node!r}")
            texts = list(dict.fromkeys(self.expr(i) for i in items))
            return texts[0] if len(texts) == 1 else " | ".join(texts)
        if isinstance(node, Rep):
            one = self.group(node.item)
            if node.sep == EMPTY and node.hi is None and node.lo <= 1:
                return one + ("*" if node.lo == 0 else "+")
            more = one if node.sep == EMPTY else f"( {self.expr(node.sep)} {one} )"
            n = max(node.lo, 1)
            body = " ".join([one] + [more] * (n - 1) + ([f"{more}*"] if node.hi is None else [f"{more}?"] * (node.hi - n)))
            return f"( {body} )?" if node.lo == 0 else body
        raise GrammarError(f"an accepting grammar cannot print {node!r}")

    def group(self, node: Node) -> str:
        text = self.expr(node)
        return f"( {text} )" if " " in text and not isinstance(node, Lit | Cls) else text

    def excluding(self, stops: Sequence[str], nonempty: bool) -> str:
        """Any text without any of ``stops``: an Aho-Corasick automaton written as rules."""
        stops = sorted({x for x in stops if x})
        base = self.name("not-" + "-".join(stops) + ("-1" if nonempty else ""))
        if base in self.rules:
            return base
        if not stops:
            return self.define(base, self.cls("^\\x00") + ("+" if nonempty else "*"))
        goto: list[dict[str, int]] = [{}]
        final = [False]
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

        head = base + ("-s" if nonempty else "")
        names = {i: self.name(f"{head}-s{i}") if i else self.name(head) for i in range(len(goto)) if not final[i]}
        other = self.cls("^" + "".join(escape(c, "\\]-^[") for c in alphabet))

        def steps(state: int) -> list[str]:
            return [f"{other} {names[0]}"] + [f"{self.lit(ch)} {names[delta(state, ch)]}" for ch in alphabet
                                             if not final[delta(state, ch)]]

        for state, rn in names.items():
            self.define(rn, " | ".join(['""', *steps(state)]))
        return self.define(base, " | ".join(steps(0))) if nonempty else names[0]


def print_rules(root: Node, syntax: Syntax, header: Sequence[str] = (),
                extra: Callable[[_Printer], None] | None = None) -> str:
    """``root`` as a grammar in ``syntax`` (GBNF / xgrammar EBNF, or llguidance Lark)."""
    p = _Printer(syntax)
    p.rules["root"] = "?"
    body = p.expr(root)
    root_name = p.name("root")
    del p.rules["root"]
    rules = {root_name: body, **p.rules}
    if syntax == "gbnf":
        return "".join(f"# {h}\n" for h in header) + "".join(f"{k} ::= {v}\n" for k, v in rules.items())
    return "%llguidance {}\n\n" + "".join(f"{k}: {v}\n" for k, v in rules.items())
