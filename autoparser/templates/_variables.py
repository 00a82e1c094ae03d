"""A template's own inputs: the variables it reads beyond the standard ones, and the constants it
compares them with.

Why: a template may switch how it prompts the model on variables no standard caller passes
(``enable_thinking``, ``reasoning_effort``, ``thinking_mode``, a budget). The analyzer can only
probe what it knows of, so it reads them off the parsed template: the names it loads, minus the
environment's globals, the standard inputs, loop targets, macro parameters and the names it sets
itself, unless it first asks whether a caller passed them (``{% if x is not defined %}{% set x =
... %}``, ``x | default(...)``). That is jinja2's ``meta.find_undeclared_variables`` without the
template's own variables that it only counts as undeclared because they are set in some branch;
one walk of the tree computes it, at a tenth of the cost of that function's code generation
(tests/test_derive_default.py checks the two agree on every fixture and corpus template). The
values are what the template compares a variable with (``==``, ``!=``, ``in [...]``, ``is
sameas``) or defaults it to (``| default(...)``).
"""

from __future__ import annotations

from collections.abc import Iterable

from jinja2 import nodes

__all__ = ["STANDARD_INPUTS", "template_inputs"]

#: what every caller passes (transformers' apply_chat_template): not a template's own setting
STANDARD_INPUTS = frozenset({"messages", "tools", "documents", "add_generation_prompt", "bos_token", "eos_token"})
# names Jinja binds by itself inside loops, macros and call blocks
_JINJA = frozenset({"loop", "self", "caller", "varargs", "kwargs", "super"})
_GUARD_PREFIX = "autoparser_guard_"  # filters the sandbox's instrumentation wraps comparisons in
_SCALAR = (str, int, float, bool, type(None))


def template_inputs(tree: nodes.Template, known: Iterable[str] = ()) -> dict[str, tuple[object, ...]]:
    """Each variable ``tree`` reads that a caller can pass (minus ``known`` names: globals), with the
    scalar constants it is compared with or defaulted to, in source order."""
    found: list[nodes.Node] = []
    stack: list[nodes.Node] = [tree]
    while stack:  # one walk (find_all per node type would walk the tree five times)
        node = stack.pop()
        if isinstance(node, nodes.Name | nodes.Macro | nodes.Compare | nodes.Filter | nodes.Test | nodes.Assign
                      | nodes.AssignBlock | nodes.For | nodes.With):
            found.append(node)
        stack.extend(node.iter_child_nodes())
    found.reverse()
    names = [n for n in found if isinstance(n, nodes.Name)]
    filters = [n for n in found if isinstance(n, nodes.Filter)]
    tests = [n for n in found if isinstance(n, nodes.Test)]
    # asking whether a caller passed a name: {% if x is not defined %}{% set x = false %}{% endif %},
    # {% set x = x | default(1) %}
    asked = {_name(t.node) for t in tests if t.name in ("defined", "undefined")}
    asked |= {_name(x.node) for x in filters if x.name in ("default", "d")}

    def targets(*exprs: nodes.Node) -> set[str]:
        return {n.name for x in exprs for n in (x, *x.find_all(nodes.Name)) if isinstance(n, nodes.Name)}

    first_set: dict[str, int] = {}
    for a in found:
        if isinstance(a, nodes.Assign | nodes.AssignBlock):
            for name in targets(a.target):
                first_set[name] = min(first_set.get(name, a.lineno), a.lineno)
    first_load: dict[str, int] = {}
    for n in names:
        if n.ctx == "load":
            first_load[n.name] = min(first_load.get(n.name, n.lineno), n.lineno)
    # set by the template: its own, unless it first asks whether a caller passed it
    own = {name for name, line in first_set.items() if name not in asked or first_load.get(name, line + 1) > line}
    # loop targets, macro and call-block parameters, with-block names: always the template's own
    scoped = targets(*(x.target for x in found if isinstance(x, nodes.For)),
                     *(t for x in found if isinstance(x, nodes.With) for t in x.targets))
    scoped |= {n.name for n in names if n.ctx == "param"}
    assigned = scoped | own
    assigned |= {m.name for m in found if isinstance(m, nodes.Macro)}
    skip = assigned | _JINJA | STANDARD_INPUTS | set(known)
    values: dict[str, list[object]] = {n.name: [] for n in names if n.ctx == "load" and n.name not in skip}

    def consts(expr: nodes.Node) -> list[object]:
        if isinstance(expr, nodes.Const) and isinstance(expr.value, _SCALAR):
            return [expr.value]
        if isinstance(expr, nodes.List | nodes.Tuple):
            return [x for item in expr.items for x in consts(item)]
        return []

    for cmp in (n for n in found if isinstance(n, nodes.Compare)):
        operands = [_unguarded(x) for x in (cmp.expr, *(op.expr for op in cmp.ops))]
        for name in {_name(x) for x in operands} & set(values):
            values[name] += [c for x in operands for c in consts(x)]
    for fx in (*filters, *tests):
        name = _name(fx.node)
        wanted = ("default", "d") if isinstance(fx, nodes.Filter) else ("sameas", "eq", "equalto")
        if name in values and fx.name in wanted:
            values[name] += [c for a in fx.args for c in consts(a)]
    return {name: tuple(_unique(v)) for name, v in values.items()}


def _name(expr: nodes.Node | None) -> str:
    """The variable an expression is (past the sandbox's guard filters), or ''."""
    bare = _unguarded(expr) if expr is not None else None
    return bare.name if isinstance(bare, nodes.Name) else ""


def _unguarded(expr: nodes.Node) -> nodes.Node:
    while isinstance(expr, nodes.Filter) and expr.name.startswith(_GUARD_PREFIX):
        expr = expr.node  # type: ignore[assignment]
    return expr


def _unique(values: list[object]) -> list[object]:
    """Distinct values, ``True`` and ``1`` kept apart (templates test them apart)."""
    out: list[object] = []
    for v in values:
        if not any(type(v) is type(w) and v == w for w in out):
            out.append(v)
    return out
