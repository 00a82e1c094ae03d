"""The Jinja2 environment: configured like transformers', with every hook reporting to the budget.

This module (and ``_guards``/``_instrument``) import jinja2 at the top; ``render.py`` imports it
only when a template is compiled, so ``import autoparser`` never needs jinja2.

Configuration (what makes renders byte-identical to transformers): ``ImmutableSandboxedEnvironment``
with ``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension and a ``{% generation %}``
tag, no autoescape; globals ``raise_exception``, ``strftime_now``, a ``dict`` that exposes only
construction, a ``namespace`` that refuses underscore-prefixed names; a ``tojson`` filter that is
``json.dumps`` with ``ensure_ascii=False`` in transformers' argument order (no key sorting and no
HTML escaping, unlike Jinja's own).

Hooks (what makes hostile templates fail fast): ``call`` (time, call depth, argument sizes, size
prediction for expanding builtin methods), ``call_binop`` for ``+ * % **``, ``getattr``/``getitem``
(time; an underscore or interpreter-internal attribute raises ``SecurityError`` at once instead of
rendering as empty text), ``wrap_str_format`` (``str.format`` with limits), every filter and test
wrapped, ``range``/``lipsum`` bounded; and the parsed tree is instrumented (``_instrument``) before
compilation. Details of each guard are in ``_guards``.
"""

from __future__ import annotations

import functools
import json
import sys
import types
from collections.abc import Callable, Generator, ItemsView, Iterable, KeysView, ValuesView
from datetime import datetime
from typing import Any, cast

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.exceptions import SecurityError, TemplateSyntaxError, UndefinedError
from jinja2.parser import Parser
from jinja2.runtime import Context, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment, is_internal_attribute
from jinja2.utils import Namespace, generate_lorem_ipsum
from markupsafe import Markup

from autoparser.errors import TemplateError
from autoparser.templates._exceptions import TemplateBlocked, TemplateLimitExceeded, TemplateRaised
from autoparser.templates._guards import (
    GUARD_FILTERS,
    LimitedEscapeFormatter,
    LimitedFormatter,
    check_binop,
    check_method_call,
    check_result,
    guard_filter,
)
from autoparser.templates._instrument import instrument
from autoparser.templates._limits import Budget, RenderLimits, current_budget

__all__ = ["CompiledTemplate", "compile_template", "translate_error"]

# Jinja names the frames of templates compiled from a string like this in rewritten tracebacks.
_TEMPLATE_FILENAME = "<template>"


# --- globals --------------------------------------------------------------------------------------


def _raise_exception(message: Any) -> None:
    """``raise_exception(msg)``: the template rejects its input; the message is the template's."""
    raise TemplateRaised(str(message))


def _strftime_now(format: str) -> str:
    """``strftime_now(fmt)``: the local time, as transformers provides it (the render's clock:
    see :class:`~autoparser.templates._limits.Budget`)."""
    return current_budget().now.strftime(format)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """transformers' ``tojson``: ``json.dumps`` keeping non-ASCII, keys in insertion order, no HTML
    escaping, and the same positional order (so ``tojson(4)`` sets ``ensure_ascii``, as there)."""
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


@functools.wraps(_tojson)  # the same signature: the size estimator binds arguments by name
def _tojson_materialized(value: Any, *args: Any, **kwargs: Any) -> str:
    """``tojson`` that writes an iterator (``tools|map(...)``) as the list it yields, as llama.cpp's
    template engine does (its ``map`` returns a list)."""
    return _tojson(_materialize(value), *args, **kwargs)


def _materialize(value: Any) -> Any:
    if isinstance(value, (types.GeneratorType, map, filter, zip, reversed)):
        return [_materialize(v) for v in value]
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_materialize(v) for v in value)
    return value


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


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    """Jinja's ``lipsum`` with the requested size checked first (it would happily build gigabytes)."""
    current_budget().check_size(abs(int(n)) * abs(int(max)) * 16, "lipsum() text")
    return generate_lorem_ipsum(n=n, html=html, min=min, max=max)


class _DictFactory:
    """``dict`` inside templates: builds dicts without handing the ``dict`` type to the template."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


class InternalAccess(SecurityError):
    """A template reached for Python internals (an underscore or interpreter-internal name).

    Kept apart from the refusals of the immutable sandbox (``list.append``): those are a difference
    of semantics other engines do not have, this is a template no engine should run.
    """


def _check_namespace_name(name: object) -> None:
    if isinstance(name, str) and name.startswith("_"):
        raise InternalAccess(f"a namespace cannot hold the underscore-prefixed attribute {name!r}")


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
    if isinstance(value, ItemsView):
        return [part for pair in value for part in pair]
    if isinstance(value, (KeysView, ValuesView)):
        return list(value)
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


# --- the environment ------------------------------------------------------------------------------


class _GuardedEnvironment(ImmutableSandboxedEnvironment):
    """transformers' sandbox configuration, with every hook reporting to the render's budget."""

    intercepted_binops = frozenset({"+", "*", "%", "**"})

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        budget = current_budget()
        budget.tick()
        for value in (*args, *kwargs.values()):
            budget.size_of(value)
        args = check_method_call(budget, obj, args)
        budget.depth += 1
        try:
            if budget.depth > budget.limits.max_call_depth:
                limit = budget.limits.max_call_depth
                raise TemplateLimitExceeded("depth", f"template calls nest deeper than {limit} (runaway recursion?)")
            result = super().call(context, obj, *args, **kwargs)
        finally:
            budget.depth -= 1
        check_result(budget, result)
        return result

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = current_budget()
        budget.tick()
        check_binop(budget, operator, left, right)
        return super().call_binop(context, operator, left, right)

    def getattr(self, obj: Any, attribute: str) -> Any:
        current_budget().tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        current_budget().tick()
        return super().getitem(obj, argument)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        """Python internals raise at once: a probe for ``__class__`` must not render as empty text.

        Blocked mutating methods (``list.append``) keep Jinja's behaviour, an undefined that raises
        when used, because real templates name them in branches that never run.
        """
        if attribute.startswith("_") or is_internal_attribute(obj, attribute):
            kind = type(obj).__name__
            raise InternalAccess(f"access to attribute {attribute!r} of {kind!r} object is unsafe")
        return super().unsafe_undefined(obj, attribute)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """``str.format``/``format_map`` through :class:`LimitedFormatter` (Jinja's, plus limits)."""
        if not isinstance(value, (types.MethodType, types.BuiltinMethodType)):
            return None
        if value.__name__ not in ("format", "format_map") or not isinstance(value.__self__, str):
            return None
        owner: str = value.__self__
        formatter: LimitedFormatter
        if isinstance(owner, Markup):
            formatter = LimitedEscapeFormatter(self, escape=owner.escape)
        else:
            formatter = LimitedFormatter(self)
        is_format_map = value.__name__ == "format_map"
        str_type = type(owner)

        def wrapper(*args: Any, **kwargs: Any) -> str:
            if is_format_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one positional argument")
                kwargs, args = args[0], ()
            return str_type(formatter.vformat(owner, args, kwargs))

        return wrapper


class _PermissiveEnvironment(_GuardedEnvironment):
    """The same guards, but lists and dicts may be mutated (``ns_list.append(x)``).

    transformers' immutable sandbox refuses that; Jinja's plain sandbox, llama.cpp and the engines
    that serve Kimi K2 allow it, and some real templates need it to write tool calls at all. The
    mutated data is the template's own or a per-render copy of ours, and the time and size budget
    still bounds every call.
    """

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        return SandboxedEnvironment.is_safe_attribute(self, obj, attr, value)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        owner = getattr(obj, "__self__", None)
        if not isinstance(owner, (list, dict, set)):
            return super().call(context, obj, *args, **kwargs)
        # a method of a container may change it in place: predict the largest result first
        # (``l.extend(l)`` doubles), then re-measure what it really became
        budget = current_budget()
        before = budget.remeasure(owner)
        added = sum(budget.size_of(v) for v in (*args, *kwargs.values()))
        budget.check_size(before + added, f"the {type(owner).__name__} after {getattr(obj, '__name__', 'a call')}()")
        result = super().call(context, obj, *args, **kwargs)
        budget.grew(budget.remeasure(owner) - before)
        return result


def _build_environment(permissive: bool = False) -> _GuardedEnvironment:
    env = (_PermissiveEnvironment if permissive else _GuardedEnvironment)(
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
    filters: dict[str, Callable[..., Any]] = {**env.filters,
                                              "tojson": _tojson_materialized if permissive else _tojson}
    env.filters = {name: guard_filter(name, func) for name, func in filters.items()}
    env.filters.update(GUARD_FILTERS)
    tests = cast("dict[str, Callable[..., Any]]", env.tests)
    env.tests = {name: guard_filter(name, func) for name, func in tests.items()}
    return env


# --- compiling and errors -------------------------------------------------------------------------


class CompiledTemplate:
    """A template parsed, instrumented and compiled once; rendering it is cheap and repeatable."""

    def __init__(self, template: jinja2.Template, tree: nodes.Template) -> None:
        self._template = template
        self._tree = tree
        self._inputs: dict[str, tuple[object, ...]] | None = None
        # every name the template could read an input by: variables, attributes, string keys
        self.names = frozenset(
            [n.name for n in tree.find_all(nodes.Name)]
            + [n.attr for n in tree.find_all(nodes.Getattr)]
            + [n.value for n in tree.find_all(nodes.Const) if isinstance(n.value, str)])

    def inputs(self) -> dict[str, tuple[object, ...]]:
        """The template's own variables and the constants it compares them with (``_variables``)."""
        if self._inputs is None:
            from autoparser.templates._variables import template_inputs

            self._inputs = template_inputs(self._tree, self._template.environment.globals)
        return self._inputs

    def new_budget(self, limits: RenderLimits, now: datetime | None = None) -> Budget:
        """A fresh budget for one render (it must know how to look inside Jinja namespaces)."""
        return Budget(limits, children=_children, now=now)

    def generate(self, context: dict[str, Any]) -> Generator[str, None, None]:
        """The rendered text in chunks; run it inside ``active_budget``."""
        yield from self._template.generate(context)


def compile_template(source: str, permissive: bool = False) -> CompiledTemplate:
    """Parse, instrument and compile; every failure becomes a :class:`TemplateError` with a line number.

    ``permissive`` compiles for :class:`_PermissiveEnvironment` (see there), not transformers' sandbox.
    """
    env = _build_environment(permissive)
    try:
        tree = instrument(env.parse(source))
        tree.set_environment(env)
        return CompiledTemplate(env.from_string(tree), tree)
    except Exception as exc:  # any compile failure is a problem of the template
        raise translate_error(exc) from exc


def _template_lineno(exc: BaseException) -> int | None:
    """The line of the innermost template frame in the traceback (Jinja rewrites those frames)."""
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
    """Map anything a compile or render raised to a :class:`TemplateError` that says what and where.

    ``raise_exception`` and limit errors come back as themselves with the line filled in; the caller
    chains any other original exception as ``__cause__``.
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
        return TemplateLimitExceeded("depth", f"template nesting or recursion too deep{where}", lineno)
    if isinstance(exc, MemoryError):
        return TemplateLimitExceeded("value", f"template ran out of memory{where}", lineno)
    if isinstance(exc, TemplateSyntaxError):
        return TemplateError(f"template syntax error{where}: {exc.message}")
    if isinstance(exc, InternalAccess):
        return TemplateBlocked(f"template blocked by the sandbox{where}: {exc}", lineno)
    if isinstance(exc, SecurityError):
        return TemplateError(f"template blocked by the sandbox{where}: {exc}")
    if isinstance(exc, UndefinedError):
        return TemplateError(f"template used an undefined value{where}: {exc}")
    return TemplateError(f"template failed{where}: {type(exc).__name__}: {exc}")
