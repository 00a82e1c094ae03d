"""The grammar tree and its back-ends.

A tree is literals, regexes, JSON-schema nodes, sequences, alternatives and bounded repetitions.
Back-ends: :func:`to_regex` (one regex, in the syntax xgrammar and Python's ``re`` share),
:func:`to_structural` (a structural-tag node, see :mod:`autoparser.live.structured`, for trees
with JSON-schema nodes), :func:`to_spec` (whichever of the two a tree needs), :func:`triggered`
(free text until the tree's leading marker, then the tree) and :func:`render` (the text of a tree
of literals: what an example call looks like). Tools reach every builder through
:func:`tool_schemas`, which reads them with :mod:`autoparser.wire`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autoparser.errors import AutoparserError
from autoparser.profile import Profile
from autoparser.wire import ToolsError, normalized, read_tools, writable

__all__ = [
    "Alt",
    "GrammarError",
    "Lit",
    "Node",
    "Re",
    "Rep",
    "Schema",
    "Seq",
    "alt",
    "escape",
    "fill",
    "has_schema",
    "regex_literal",
    "render",
    "seq",
    "to_regex",
    "to_spec",
    "to_structural",
    "tool_schemas",
    "triggered",
]

_CONTROLS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_MAX_EXPAND = 4  # unbounded repetition of a JSON-schema node is spelt out up to this many calls


class GrammarError(AutoparserError):
    """A grammar cannot be built for this profile (no tool format, or an unsupported construct)."""


# -- a tiny grammar IR: literal / regex / JSON-schema nodes, sequences and alternatives ----------


@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Re:
    pattern: str


@dataclass(frozen=True)
class Schema:
    schema: str  # JSON text (kept as text so nodes stay hashable)


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Rep:
    """``item (sep item)*`` with ``lo`` to ``hi`` items (``hi`` None: unbounded)."""

    item: Node
    sep: str
    lo: int
    hi: int | None


Node = Lit | Re | Schema | Seq | Alt | Rep


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
        parts = it.items if isinstance(it, Seq) else (it,)
        for p in parts:
            if isinstance(p, Lit) and not p.text:
                continue
            if isinstance(p, Lit) and flat and isinstance(flat[-1], Lit):
                flat[-1] = Lit(flat[-1].text + p.text)
            else:
                flat.append(p)
    if len(flat) == 1:
        return flat[0]
    return Seq(tuple(flat))


def fill(pattern: str, **slots: Node) -> Node:
    """``pattern`` as a sequence: each ``{slot}`` named in ``slots`` is that node, the rest literal."""
    parts = re.split("(" + "|".join(re.escape("{" + k + "}") for k in slots) + ")", pattern)
    return seq(*(slots[p[1:-1]] if i % 2 else Lit(p) for i, p in enumerate(parts)))


def alt(items: Sequence[Node]) -> Node:
    unique = tuple(dict.fromkeys(items))
    return unique[0] if len(unique) == 1 else Alt(unique)


def has_schema(node: Node) -> bool:
    if isinstance(node, Schema):
        return True
    if isinstance(node, Seq | Alt):
        return any(has_schema(i) for i in node.items)
    if isinstance(node, Rep):
        return has_schema(node.item)
    return False


def to_regex(node: Node) -> str:
    if isinstance(node, Lit):
        return regex_literal(node.text)
    if isinstance(node, Re):
        return node.pattern
    if isinstance(node, Seq):
        return "".join(_group(i) if _needs_group(i) else to_regex(i) for i in node.items)
    if isinstance(node, Alt):
        return "|".join(to_regex(i) for i in node.items)
    if isinstance(node, Rep):
        one = _group(node.item)
        more = _group(seq(Lit(node.sep), node.item))
        if node.hi == 1:
            return f"(?:{one})?" if node.lo == 0 else one
        lo = max(node.lo - 1, 0)
        if node.hi is None:
            times = "*" if lo == 0 else f"{{{lo},}}"
        else:
            times = f"{{{lo},{node.hi - 1}}}"
        return f"(?:{one}{more}{times})?" if node.lo == 0 else f"{one}{more}{times}"
    raise GrammarError(f"a JSON-schema node cannot be written as a regex: {node!r}")


def _needs_group(node: Node) -> bool:
    """An alternative, or a regex with a ``|`` that could bind across its neighbours."""
    return isinstance(node, Alt) or (isinstance(node, Re) and "|" in node.pattern)


def _group(node: Node) -> str:
    return f"(?:{to_regex(node)})"


def to_structural(node: Node) -> dict[str, Any]:
    """A structural-tag node (see :mod:`autoparser.live.structured`) for a tree with schema nodes."""
    if not has_schema(node):
        return {"type": "regex", "pattern": to_regex(node)}
    if isinstance(node, Schema):
        return {"type": "json_schema", "schema": node.schema}
    if isinstance(node, Seq):
        items: list[dict[str, Any]] = []
        pending: list[Node] = []
        for it in node.items:
            if has_schema(it):
                if pending:
                    items.append(to_structural(seq(*pending)))
                    pending = []
                items.append(to_structural(it))
            else:
                pending.append(it)
        if pending:
            items.append(to_structural(seq(*pending)))
        return items[0] if len(items) == 1 else {"type": "concat", "items": items}
    if isinstance(node, Alt):
        return {"type": "union", "items": [to_structural(i) for i in node.items]}
    if isinstance(node, Rep):
        hi = node.hi if node.hi is not None else max(node.lo, _MAX_EXPAND)
        options = []
        for n in range(node.lo, hi + 1):
            parts: list[Node] = []
            for k in range(n):
                parts += [Lit(node.sep), node.item] if k else [node.item]
            options.append(seq(*parts) if parts else Lit(""))
        if any(isinstance(o, Lit) and not o.text for o in options):
            raise GrammarError("an optional block with JSON-schema arguments cannot be expressed")
        return to_structural(alt(options))
    raise GrammarError(f"unknown node {node!r}")  # pragma: no cover


def to_spec(node: Node) -> dict[str, Any]:
    if has_schema(node):
        return {"kind": "structural_tags", "tag": to_structural(node)}
    return {"kind": "regex", "regex": to_regex(node)}




def triggered(tree: Node) -> dict[str, Any]:
    """``TriggeredTags`` with one tag that begins with the block's leading literal (the trigger)."""
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
        last = items.pop()
        assert isinstance(last, Lit)
        end = last.text
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
    heads = []
    for item in node.items:
        first = item.items[0] if isinstance(item, Seq) else item
        heads.append(first.text if isinstance(first, Lit) else "")
    prefix = heads[0]
    for h in heads[1:]:
        while not h.startswith(prefix):
            prefix = prefix[:-1]
    if not prefix:
        return node
    rests = []
    for item in node.items:
        parts = list(item.items) if isinstance(item, Seq) else [item]
        first = parts[0]
        assert isinstance(first, Lit)
        rests.append(seq(Lit(first.text[len(prefix):]), *parts[1:]))
    return seq(Lit(prefix), alt(rests))


def render(node: Node) -> str:
    """The text of an example tree (literals only, apart from an id suffix pattern)."""
    if isinstance(node, Lit):
        return node.text
    if isinstance(node, Seq):
        return "".join(render(i) for i in node.items)
    if isinstance(node, Re):  # e.g. Kimi's ":\\d+" id suffix: the smallest instance
        return re.sub(r"\\d(?:[+*]|\{[^}]*\})?|\[0-9\](?:[+*]|\{[^}]*\})?", "0", node.pattern).replace("\\", "")
    raise GrammarError(f"cannot render {node!r}")



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


