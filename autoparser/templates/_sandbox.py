"""The Jinja2 side of rendering: an environment configured like transformers', plus our guards.

This is the only module that imports jinja2, and it is imported lazily by ``render.py``, so
``import autoparser`` never needs jinja2.

Configuration (what makes renders byte-identical to transformers): ``ImmutableSandboxedEnvironment``
with ``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension and a ``{% generation %}``
tag, no autoescape; globals ``raise_exception``, ``strftime_now``, a ``dict`` that exposes only
construction, a ``namespace`` that refuses underscore-prefixed names; a ``tojson`` filter that is
``json.dumps`` with ``ensure_ascii=False`` and transformers' argument order (it does not sort keys and
does not HTML-escape, unlike Jinja's own).

Guards (what makes hostile templates fail fast), all reporting to the per-render
:class:`~autoparser.templates._limits.Budget`:

- hooks the sandbox already offers: ``call`` (every call, including macros: time, call depth, size
  of arguments, and size prediction for the few ``str``/``bytes``/``int`` methods that can expand),
  ``getattr``/``getitem`` (time; any underscore or interpreter-internal attribute raises
  ``SecurityError`` at once instead of yielding a silent undefined), ``call_binop`` for ``+ * % **``
  (predicted result size / integer bits), ``wrap_str_format`` (``str.format`` with width and total
  size checks);
- every filter and test wrapped (time, argument sizes, size prediction for expanding filters such as
  ``join``, ``center``, ``indent``, ``replace``, ``format``, ``batch``, ``tojson(indent=...)``);
- the parsed template rewritten before compilation so that the things Jinja does *without* any hook
  go through one: each ``for`` iterable (a tick per iteration), each ``~`` concatenation (size
  predicted), each output expression and literal (time, and all text produced, even inside macros
  and ``{% set %}`` blocks, is counted), each comparison operand (size of containers);
- ``range`` refuses more than ``max_range`` items and ``lipsum`` refuses huge requests.

The rewrite changes how the template is compiled, not what it outputs: every inserted filter returns
its input (or exactly what Jinja would have computed), so output stays byte-identical.
"""

from __future__ import annotations

import functools
import inspect
import json
import sys
import types
from collections.abc import Callable, Iterable, Iterator, KeysView, ValuesView
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.exceptions import SecurityError, TemplateSyntaxError, UndefinedError
from jinja2.parser import Parser
from jinja2.visitor import NodeTransformer
from jinja2.runtime import Context, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedFormatter, is_internal_attribute
from jinja2.utils import Namespace, generate_lorem_ipsum
from markupsafe import EscapeFormatter, Markup

from autoparser.errors import TemplateError
from autoparser.templates._exceptions import TemplateLimitExceeded, TemplateRaised
from autoparser.templates._limits import (
    Budget,
    RenderLimits,
    current_budget,
    format_spec_widths,
    percent_format_estimate,
)

__all__ = ["CompiledTemplate", "compile_template", "translate_error"]

# Names of the filters the rewrite inserts. Reachable from templates, but harmless: each one only
# passes its input through (or concatenates, exactly like ``~``).
_LOOP = "autoparser_guard_loop"
_OUTPUT = "autoparser_guard_output"
_CONCAT = "autoparser_guard_concat"
_CHECK = "autoparser_guard_check"

_TEMPLATE_FILENAME = "<template>"


# --- globals --------------------------------------------------------------------------------------


def _raise_exception(message: Any) -> None:
    """``raise_exception(msg)``: the template rejects its input; the message is the template's."""
    raise TemplateRaised(str(message))


def _strftime_now(format: str) -> str:  # noqa: A002 - the name templates use
    """``strftime_now(fmt)``: the current local time, as transformers provides it."""
    return datetime.now().strftime(format)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """transformers' ``tojson``: plain ``json.dumps`` keeping non-ASCII, keys in insertion order,
    no HTML escaping; same positional order (so ``tojson(4)`` sets ``ensure_ascii``, as there)."""
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _range(*args: int) -> range:
    """``range`` that refuses more than ``max_range`` items before anything iterates over it."""
    rng = range(*args)
    limit = current_budget().limits.max_range
    try:
        size = len(rng)
    except OverflowError:
        size = sys.maxsize
    if size > limit:
        raise TemplateLimitExceeded("range", f"range() of {size:,} items is over the limit of {limit:,}")
    return rng


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002
    """Jinja's ``lipsum`` with the requested size checked first (it would happily build gigabytes)."""
    budget = current_budget()
    budget.check_size(abs(int(n)) * abs(int(max)) * 16, "lipsum() text")
    return generate_lorem_ipsum(n=n, html=html, min=min, max=max)


class _DictFactory:
    """``dict`` inside templates: builds dicts, without handing the ``dict`` type itself to the template."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


def _check_namespace_name(name: object) -> None:
    if isinstance(name, str) and name.startswith("_"):
        raise SecurityError(f"a namespace cannot hold the underscore-prefixed attribute {name!r}")


class _TemplateNamespace(Namespace):
    """``namespace()`` that refuses underscore-prefixed attributes, which could shadow its internals."""

    def __init__(self, /, *args: Any, **kwargs: Any) -> None:
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _check_namespace_name(name)
        Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _check_namespace_name(name)
        Namespace.__setitem__(self, name, value)


def _children(value: object) -> Iterable[object] | None:
    """What the budget's size estimate should look inside, beyond plain containers."""
    if isinstance(value, Namespace):
        attrs: dict[str, object] = object.__getattribute__(value, "_Namespace__attrs")
        return [*attrs.keys(), *attrs.values()]
    if isinstance(value, (KeysView, ValuesView)):
        return list(value)
    if isinstance(value, types.MappingProxyType):
        return [*value.keys(), *value.values()]
    if type(value).__name__ == "dict_items":
        return [part for pair in value for part in pair]  # type: ignore[attr-defined]
    return None


# --- the {% generation %} tag ---------------------------------------------------------------------


class _GenerationExtension(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: renders its body and records where it landed.

    transformers uses the tag to build assistant-token masks; we record character spans of the
    final text (meaningful when the tag is not inside a macro or a captured block, as there).
    """

    tags = {"generation"}  # noqa: RUF012 - Jinja's Extension API declares it this way

    def parse(self, parser: Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render_generation"), [], [], body).set_lineno(lineno)

    def _render_generation(self, caller: Callable[[], str]) -> str:
        text = caller()
        budget = current_budget()
        budget.generation_spans.append((budget.streamed, budget.streamed + len(text)))
        return text


# --- str.format with limits -----------------------------------------------------------------------


def _checked_field(value: Any, spec: str) -> None:
    budget = current_budget()
    budget.tick()
    budget.check_size(budget.size_of(value) + format_spec_widths(spec), "a formatted field")


class _LimitedFormatter(SandboxedFormatter):
    """Jinja's sandboxed ``str.format`` plus limits on field widths and on the total result."""

    produced = 0

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        self.produced = 0
        return super().vformat(format_string, args, kwargs)

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        current_budget().size_of(value)  # ``!r`` would build the repr before format_field sees it
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        _checked_field(value, format_spec)
        text = super().format_field(value, format_spec)
        self.produced += len(text)
        current_budget().check_size(self.produced, "the formatted string")
        return text


class _LimitedEscapeFormatter(_LimitedFormatter, EscapeFormatter):
    """The same for ``Markup.format`` (values are escaped, as in Jinja)."""


# --- filters and tests ----------------------------------------------------------------------------

_Estimator = Callable[[Budget, dict[str, Any]], None]


def _text_size(budget: Budget, value: Any) -> int:
    return len(value) if isinstance(value, str) else budget.size_of(value)


def _est_join(budget: Budget, a: dict[str, Any]) -> None:
    items = list(a["value"])  # materialised once, then passed on, so iterators are not consumed twice
    a["value"] = items
    budget.check_size(budget.size_of(items) + len(str(a.get("d", ""))) * len(items), "the joined string")


def _est_center(budget: Budget, a: dict[str, Any]) -> None:
    width = a.get("width", 80)
    if isinstance(width, int):
        budget.check_size(_text_size(budget, a["value"]) + max(width, 0), "the centered string")


def _est_indent(budget: Budget, a: dict[str, Any]) -> None:
    width = a.get("width", 4)
    step = width if isinstance(width, int) else len(str(width))
    text = a["s"]
    lines = text.count("\n") + 1 if isinstance(text, str) else budget.size_of(text)
    budget.check_size(_text_size(budget, text) + lines * max(step, 0), "the indented string")


def _est_wordwrap(budget: Budget, a: dict[str, Any]) -> None:
    text, width = a["s"], a.get("width", 79)
    if not isinstance(text, str) or not isinstance(width, int):
        return
    wrap = a.get("wrapstring") or "\n"
    lines = min(len(text) + 1, len(text) // max(width, 1) + text.count(" ") + text.count("\n") + 1)
    budget.check_size(len(text) + lines * len(str(wrap)), "the wrapped string")


def _est_replace(budget: Budget, a: dict[str, Any]) -> None:
    text, old, new = a["s"], str(a["old"]), str(a["new"])
    count = a.get("count")
    if not isinstance(text, str):
        budget.check_size(budget.size_of(text) * (1 + len(new)), "the replaced string")
        return
    hits = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    budget.check_size(len(text) + hits * max(0, len(new) - len(old)), "the replaced string")


def _est_format(budget: Budget, a: dict[str, Any]) -> None:
    values = a.get("kwargs") or a.get("args") or ()
    budget.check_size(percent_format_estimate(budget, str(a["value"]), values), "the formatted string")


def _est_batch(budget: Budget, a: dict[str, Any]) -> None:
    count = a.get("linecount")
    if isinstance(count, int):
        budget.check_size(count * (1 + budget.size_of(a.get("fill_with"))), "a batch")


def _est_slice(budget: Budget, a: dict[str, Any]) -> None:
    count = a.get("slices")
    if isinstance(count, int):
        budget.check_size(count * (1 + budget.size_of(a.get("fill_with"))), "the slices")


def _est_sum(budget: Budget, a: dict[str, Any]) -> None:
    items = list(a["iterable"])
    a["iterable"] = items
    budget.check_size(budget.size_of(items) + budget.size_of(a.get("start", 0)), "the sum")


def _est_tojson(budget: Budget, a: dict[str, Any]) -> None:
    indent, separators = a.get("indent"), a.get("separators")
    step = indent if isinstance(indent, int) else len(indent) if isinstance(indent, str) else 0
    sep = sum(len(s) for s in separators if isinstance(s, str)) if isinstance(separators, (tuple, list)) else 2
    if step or sep > 2:
        budget.json_size(a["value"], max(step, 0), sep)


def _est_pprint(budget: Budget, a: dict[str, Any]) -> None:
    budget.json_size(a["value"], 1, 2)


_ESTIMATORS: dict[str, _Estimator] = {
    "join": _est_join,
    "center": _est_center,
    "indent": _est_indent,
    "wordwrap": _est_wordwrap,
    "replace": _est_replace,
    "format": _est_format,
    "batch": _est_batch,
    "slice": _est_slice,
    "sum": _est_sum,
    "tojson": _est_tojson,
    "pprint": _est_pprint,
}


def _check_result(budget: Budget, result: Any) -> None:
    if isinstance(result, (str, bytes, bytearray, list, tuple, dict)):
        budget.check_size(len(result))


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a filter (or test): time, argument sizes, and a size prediction where one is needed."""
    skip = 1 if hasattr(func, "jinja_pass_arg") else 0
    estimator = _ESTIMATORS.get(name)
    signature = inspect.signature(func) if estimator is not None else None

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        budget = current_budget()
        budget.tick()
        for value in args[skip:]:
            budget.size_of(value)
        for value in kwargs.values():
            budget.size_of(value)
        if estimator is not None and signature is not None:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                pass  # wrong arguments: let the filter raise its own error
            else:
                bound.apply_defaults()
                estimator(budget, bound.arguments)
                args, kwargs = bound.args, bound.kwargs
        result = func(*args, **kwargs)
        _check_result(budget, result)
        return result

    return guarded


@jinja2.pass_context
def _guard_loop(context: Context, iterable: Any) -> Iterator[Any]:
    """Wraps every ``for`` iterable: one time check per iteration, even for an empty loop body."""
    return _ticking(current_budget(), iterable)


def _ticking(budget: Budget, iterable: Iterable[Any]) -> Iterator[Any]:
    for item in iterable:
        budget.tick()
        yield item


@jinja2.pass_context
def _guard_output(context: Context, value: Any) -> Any:
    """Wraps every output expression and literal: counts all text produced, buffered or not."""
    budget = current_budget()
    budget.tick()
    budget.emit(_text_size(budget, value))
    return value


@jinja2.pass_context
def _guard_concat(context: Context, values: list[Any]) -> str:
    """``a ~ b``: exactly Jinja's ``str_join`` (no autoescape), after predicting the result size."""
    budget = current_budget()
    budget.tick()
    budget.check_size(sum(_text_size(budget, value) for value in values), "a concatenated string")
    return "".join(map(str, values))


@jinja2.pass_context
def _guard_check(context: Context, value: Any) -> Any:
    """Wraps comparison operands: a deep comparison of a huge shared structure would never end."""
    budget = current_budget()
    budget.tick()
    if not isinstance(value, str):
        budget.size_of(value)
    return value


# --- the environment ------------------------------------------------------------------------------

_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})


def _check_method_call(budget: Budget, func: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Predict the size of the few builtin methods that can build a much larger value than their inputs."""
    owner = getattr(func, "__self__", None)
    name = getattr(func, "__name__", "")
    if isinstance(owner, (str, bytes, bytearray)):
        size = len(owner)
        if name in _WIDTH_METHODS and args and isinstance(args[0], int):
            budget.check_size(max(size, args[0]), f"the result of {name}()")
        elif name == "expandtabs":
            tab = args[0] if args and isinstance(args[0], int) else 8
            budget.check_size(size + owner.count("\t" if isinstance(owner, str) else b"\t") * max(tab, 0))  # type: ignore[arg-type]
        elif name == "join" and args:
            items = list(args[0])
            args = (items, *args[1:])
            budget.check_size(budget.size_of(items) + size * len(items), "the joined string")
        elif name == "replace" and len(args) >= 2:
            old, new = args[0], args[1]
            if isinstance(old, type(owner)) and isinstance(new, type(owner)):
                hits = owner.count(old) if old else size + 1  # type: ignore[arg-type]
                if len(args) > 2 and isinstance(args[2], int) and args[2] >= 0:
                    hits = min(hits, args[2])
                budget.check_size(size + hits * max(0, len(new) - len(old)), "the replaced string")
        elif name == "translate" and args and isinstance(args[0], dict):
            longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
            budget.check_size(size * max(longest, 1), "the translated string")
    elif type(owner) is int and name == "to_bytes" and args and isinstance(args[0], int):
        budget.check_size(args[0], "the bytes")
    return args


class _GuardedEnvironment(ImmutableSandboxedEnvironment):
    """transformers' sandbox configuration, with every hook reporting to the render's budget."""

    intercepted_binops = frozenset({"+", "*", "%", "**"})

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        budget = current_budget()
        budget.tick()
        for value in args:
            budget.size_of(value)
        for value in kwargs.values():
            budget.size_of(value)
        args = _check_method_call(budget, obj, args)
        budget.depth += 1
        try:
            if budget.depth > budget.limits.max_call_depth:
                raise TemplateLimitExceeded(
                    "depth", f"template calls nest deeper than {budget.limits.max_call_depth} (runaway recursion?)"
                )
            result = super().call(context, obj, *args, **kwargs)
        finally:
            budget.depth -= 1
        _check_result(budget, result)
        return result

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = current_budget()
        budget.tick()
        if operator == "*":
            _check_multiply(budget, left, right)
        elif operator == "**":
            if _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
                budget.check_int_bits(left.bit_length() * right)
        elif operator == "+":
            if isinstance(left, (str, bytes, list, tuple)) and isinstance(right, (str, bytes, list, tuple)):
                budget.check_size(budget.size_of(left) + budget.size_of(right), "a concatenation")
        elif operator == "%" and isinstance(left, str):
            budget.check_size(percent_format_estimate(budget, left, right), "the formatted string")
        return super().call_binop(context, operator, left, right)

    def getattr(self, obj: Any, attribute: str) -> Any:
        current_budget().tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        current_budget().tick()
        return super().getitem(obj, argument)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        """Python internals raise at once: a probe for ``__class__`` must not render as empty text."""
        if attribute.startswith("_") or is_internal_attribute(obj, attribute):
            raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe")
        return super().unsafe_undefined(obj, attribute)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        if not isinstance(value, (types.MethodType, types.BuiltinMethodType)) or value.__name__ not in (
            "format",
            "format_map",
        ):
            return None
        owner = value.__self__
        if not isinstance(owner, str):
            return None
        formatter: _LimitedFormatter
        if isinstance(owner, Markup):
            formatter = _LimitedEscapeFormatter(self, escape=owner.escape)
        else:
            formatter = _LimitedFormatter(self)
        is_format_map = value.__name__ == "format_map"
        str_type = type(owner)

        def wrapper(*args: Any, **kwargs: Any) -> str:
            if is_format_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one positional argument")
                kwargs, args = args[0], ()
            return str_type(formatter.vformat(owner, args, kwargs))

        return wrapper


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_multiply(budget: Budget, left: Any, right: Any) -> None:
    if _is_int(left) and _is_int(right):
        budget.check_int_bits(left.bit_length() + right.bit_length())
        return
    sequence, count = (left, right) if _is_int(right) or isinstance(right, bool) else (right, left)
    if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(count, int) and count > 0:
        budget.check_size(budget.size_of(sequence) * count, "a repeated sequence")


def _build_environment() -> _GuardedEnvironment:
    env = _GuardedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationExtension, jinja2.ext.loopcontrols],
    )
    env.globals.update(
        {
            "raise_exception": _raise_exception,
            "strftime_now": _strftime_now,
            "dict": _DictFactory(),
            "namespace": _TemplateNamespace,
            "range": _range,
            "lipsum": _lipsum,
        }
    )
    filters = dict(env.filters)
    filters["tojson"] = _tojson
    env.filters = {name: _guard_filter(name, func) for name, func in filters.items()}
    env.filters.update({_LOOP: _guard_loop, _OUTPUT: _guard_output, _CONCAT: _guard_concat, _CHECK: _guard_check})
    env.tests = {name: _guard_filter(name, func) for name, func in env.tests.items()}
    return env


# --- the rewrite ----------------------------------------------------------------------------------


def _wrap(node: nodes.Expr, name: str) -> nodes.Expr:
    return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)


class _Instrument(NodeTransformer):
    """Routes loops, output, ``~`` and comparisons through the guard filters (see module docstring)."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = _wrap(node.iter, _LOOP)
        return node

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        self.generic_visit(node)
        node.nodes = [
            _wrap(nodes.Const(child.data, lineno=child.lineno) if isinstance(child, nodes.TemplateData) else child, _OUTPUT)
            for child in node.nodes
        ]
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _wrap(nodes.List(node.nodes, lineno=node.lineno), _CONCAT)

    def visit_Compare(self, node: nodes.Compare) -> nodes.Node:
        self.generic_visit(node)
        node.expr = _wrap(node.expr, _CHECK)
        for operand in node.ops:
            operand.expr = _wrap(operand.expr, _CHECK)
        return node


# --- compiled templates ---------------------------------------------------------------------------


class CompiledTemplate:
    """A template parsed, instrumented and compiled once; rendering it is cheap and repeatable."""

    def __init__(self, template: jinja2.Template) -> None:
        self._template = template

    def new_budget(self, limits: RenderLimits) -> Budget:
        return Budget(limits, children=_children)

    def generate(self, context: dict[str, Any]) -> Iterator[str]:
        return self._template.generate(context)


def compile_template(source: str) -> CompiledTemplate:
    """Parse, instrument and compile; every failure becomes a :class:`TemplateError` with a line number."""
    env = _build_environment()
    try:
        tree = env.parse(source)
        tree = _Instrument().visit(tree)
        tree.set_environment(env)
        return CompiledTemplate(env.from_string(tree))
    except Exception as exc:  # compile errors of any kind are template problems
        raise translate_error(exc) from exc


def _template_lineno(exc: BaseException) -> int | None:
    """The template line of the innermost template frame in the traceback (Jinja rewrites them)."""
    if isinstance(exc, TemplateSyntaxError):
        return exc.lineno
    lineno = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _TEMPLATE_FILENAME:
            lineno = tb.tb_lineno
        tb = tb.tb_next
    return lineno


def translate_error(exc: BaseException) -> TemplateError:
    """Map anything a render or compile raised to a :class:`TemplateError` that says what and where.

    The original exception is kept as ``__cause__`` by the caller; ``raise_exception`` and limit
    errors come back as themselves, with the template line filled in.
    """
    lineno = _template_lineno(exc)
    where = f" at line {lineno}" if lineno is not None else ""
    if isinstance(exc, (TemplateRaised, TemplateLimitExceeded)):
        if exc.lineno is None:
            exc.lineno = lineno
        return exc
    if isinstance(exc, TemplateError):
        return exc
    if isinstance(exc, RecursionError):
        return TemplateLimitExceeded("depth", f"template recursion too deep{where}", lineno)
    if isinstance(exc, MemoryError):
        return TemplateLimitExceeded("value", f"template ran out of memory{where}", lineno)
    if isinstance(exc, TemplateSyntaxError):
        return TemplateError(f"template syntax error{where}: {exc.message}")
    if isinstance(exc, SecurityError):
        return TemplateError(f"template blocked by the sandbox{where}: {exc}")
    if isinstance(exc, UndefinedError):
        return TemplateError(f"template used an undefined value{where}: {exc}")
    return TemplateError(f"template failed{where}: {type(exc).__name__}: {exc}")
