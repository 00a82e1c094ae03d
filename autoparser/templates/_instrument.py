"""Rewrite a parsed template so the work Jinja does without any sandbox hook goes through a guard.

The sandbox sees calls, attribute lookups and some operators, but not: iterating a ``for`` loop
(``{% for i in x %}{% for j in x %}{% endfor %}{% endfor %}`` never calls anything), ``~``
concatenation, output into macro and ``{% set %}`` buffers, or comparisons. Each of those nodes gets
wrapped in a filter from ``_guards.GUARD_FILTERS`` that passes its value through unchanged (or, for
``~``, computes exactly what Jinja would), so the output stays byte-identical.
"""

from __future__ import annotations

from typing import cast

from jinja2 import nodes
from jinja2.visitor import NodeTransformer

__all__ = ["CHECK", "CONCAT", "LOOP", "OUTPUT", "instrument"]

# Names of the filters the rewrite inserts (``_guards.GUARD_FILTERS`` implements them).
LOOP = "autoparser_guard_loop"
OUTPUT = "autoparser_guard_output"
CONCAT = "autoparser_guard_concat"
CHECK = "autoparser_guard_check"


def _wrap(node: nodes.Expr, name: str) -> nodes.Expr:
    return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)


class _Instrument(NodeTransformer):
    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = _wrap(cast(nodes.Expr, node.iter), LOOP)
        return node

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        self.generic_visit(node)
        node.nodes = [
            _wrap(nodes.Const(child.data, lineno=child.lineno), OUTPUT)
            if isinstance(child, nodes.TemplateData)
            else _wrap(child, OUTPUT)
            for child in node.nodes
        ]
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _wrap(nodes.List(node.nodes, lineno=node.lineno), CONCAT)

    def visit_Compare(self, node: nodes.Compare) -> nodes.Node:
        self.generic_visit(node)
        node.expr = _wrap(node.expr, CHECK)
        for operand in node.ops:
            operand.expr = _wrap(operand.expr, CHECK)
        return node


def instrument(tree: nodes.Template) -> nodes.Template:
    """Wrap loops, output, ``~`` and comparisons of ``tree`` (in place) and return it."""
    result = _Instrument().visit(tree)
    assert isinstance(result, nodes.Template)
    return result
