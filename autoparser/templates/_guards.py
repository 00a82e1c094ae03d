"""Guards that make a template pay, in time and size, for everything it does.

Every function here reports to the render's :class:`~autoparser.templates._limits.Budget`
(``current_budget()``) and either returns exactly what Jinja would have returned or raises
:class:`~autoparser.templates._exceptions.TemplateLimitExceeded` *before* the expensive step.

- :func:`guard_filter` wraps each filter and test: a clock tick, argument sizes, a prediction of the
  result size (or of the work, for the two filters whose running time is quadratic) where a filter
  can grow its input, and a ticking wrapper around lazy results.
- ``guard_*`` filters are inserted by ``_instrument.py`` around loops, output, ``~`` and comparisons.
- :func:`check_method_call` and :func:`check_binop` predict the few builtin methods and operators
  that can build a much larger value than their inputs.
- :class:`LimitedFormatter` is ``str.format`` with field widths and total size checked.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import jinja2
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedFormatter
from markupsafe import EscapeFormatter

from autoparser.templates._exceptions import TemplateLimitExceeded
from autoparser.templates._instrument import CHECK, CONCAT, LOOP, OUTPUT
from autoparser.templates._limits import Budget, current_budget, format_spec_widths, percent_format_estimate

__all__ = [
    "GUARD_FILTERS",
    "LimitedEscapeFormatter",
    "LimitedFormatter",
    "check_binop",
    "check_method_call",
    "check_result",
    "guard_filter",
]

# Work (characters or list elements moved) allowed for one call of a filter whose running time grows
# with the square of its input; about 0.1-0.3 s on a 2-core CI machine.
_QUADRATIC_WORK = 10**8


# --- size predictions for filters -----------------------------------------------------------------

_Estimator = Callable[[Budget, dict[str, Any]], None]


def text_size(budget: Budget, value: Any) -> int:
    """Length of ``str(value)``, estimated (and capped) for non-strings."""
    return len(value) if isinstance(value, str) else budget.size_of(value)


def _est_join(budget: Budget, a: dict[str, Any]) -> None:
    items = list(a["value"])  # materialised once, then passed on, so an iterator is not consumed twice
    a["value"] = items
    budget.check_size(budget.size_of(items) + len(str(a.get("d", ""))) * len(items), "the joined string")


def _est_center(budget: Budget, a: dict[str, Any]) -> None:
    width = a.get("width", 80)
    if isinstance(width, int):
        budget.check_size(text_size(budget, a["value"]) + max(width, 0), "the centered string")


def _est_indent(budget: Budget, a: dict[str, Any]) -> None:
    width = a.get("width", 4)
    step = width if isinstance(width, int) else len(str(width))
    text = a["s"]
    lines = text.count("\n") + 1 if isinstance(text, str) else budget.size_of(text)
    budget.check_size(text_size(budget, text) + lines * max(step, 0), "the indented string")


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


def _est_groups(count_key: str, what: str) -> _Estimator:
    """``batch`` and ``slice``: as many groups as asked for, each possibly padded with ``fill_with``."""
    def estimate(budget: Budget, a: dict[str, Any]) -> None:
        count = a.get(count_key)
        if isinstance(count, int):
            budget.check_size(count * (1 + budget.size_of(a.get("fill_with"))), what)
    return estimate


def _est_sum(budget: Budget, a: dict[str, Any]) -> None:
    items = list(a["iterable"])
    a["iterable"] = items
    budget.check_size(budget.size_of(items) + budget.size_of(a.get("start", 0)), "the sum")
    # Summing sequences copies the running total once per item: quadratic.
    elements = sum(len(item) for item in items if isinstance(item, (list, tuple, str)))
    _check_work(len(items) * elements // 2, "sum()")


def _est_striptags(budget: Budget, a: dict[str, Any]) -> None:
    text = str(a["value"])  # already size-checked, so building the string is bounded
    # markupsafe removes one tag at a time, copying the rest of the string each time: quadratic.
    _check_work((text.count("<") + 1) * len(text), "striptags")


def _est_tojson(budget: Budget, a: dict[str, Any]) -> None:
    indent, separators = a.get("indent"), a.get("separators")
    step = indent if isinstance(indent, int) else len(indent) if isinstance(indent, str) else 0
    sep = 2
    if isinstance(separators, (tuple, list)):
        sep = sum(len(s) for s in separators if isinstance(s, str))
    if step or sep > 2:
        budget.json_size(a["value"], max(step, 0), sep)


def _est_pprint(budget: Budget, a: dict[str, Any]) -> None:
    budget.json_size(a["value"], 1, 2)


def _check_work(work: int, what: str) -> None:
    if work > _QUADRATIC_WORK:
        message = f"{what} on a value this large would take too long ({work:,} steps)"
        raise TemplateLimitExceeded("time", message)


_ESTIMATORS: dict[str, _Estimator] = {
    "join": _est_join,
    "center": _est_center,
    "indent": _est_indent,
    "wordwrap": _est_wordwrap,
    "replace": _est_replace,
    "format": _est_format,
    "batch": _est_groups("linecount", "a batch"),
    "slice": _est_groups("slices", "the slices"),
    "sum": _est_sum,
    "striptags": _est_striptags,
    "tojson": _est_tojson,
    "pprint": _est_pprint,
}

# First parameter names Jinja uses for the context/environment a filter asks for.
_PASS_PARAMETERS = frozenset({"context", "eval_ctx", "environment", "env"})


def _filter_signature(func: Callable[..., Any]) -> inspect.Signature:
    """The signature of a filter's own arguments (value first), without any pass-argument.

    Async-capable filters carry ``pass_eval_context`` on a wrapper whose reported signature is the
    plain function's, which may or may not list the pass-argument itself.
    """
    signature = inspect.signature(func)
    params = list(signature.parameters.values())
    if hasattr(func, "jinja_pass_arg") and params and params[0].name in _PASS_PARAMETERS:
        signature = signature.replace(parameters=params[1:])
    return signature


def check_result(budget: Budget, result: Any) -> None:
    """Refuse a result longer than the value limit (its allocation was bounded by the predictions)."""
    if isinstance(result, (str, bytes, bytearray, list, tuple, dict)):
        budget.check_size(len(result))


def guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a filter or test: time, argument sizes, a prediction where one is needed, and a ticking
    wrapper around lazy results (``map``, ``select``, ``batch``... are generators that a later
    ``list`` would otherwise drain without passing any hook)."""
    skip = 1 if hasattr(func, "jinja_pass_arg") else 0
    estimator = _ESTIMATORS.get(name)
    signature = _filter_signature(func) if estimator is not None else None

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        budget = current_budget()
        budget.tick()
        for value in (*args[skip:], *kwargs.values()):
            budget.size_of(value)
        if estimator is not None and signature is not None:
            try:
                bound = signature.bind(*args[skip:], **kwargs)
            except TypeError:
                pass  # wrong arguments: let the filter raise its own error
            else:
                bound.apply_defaults()
                estimator(budget, bound.arguments)
                args, kwargs = (*args[:skip], *bound.args), bound.kwargs
        result = func(*args, **kwargs)
        if isinstance(result, Iterator) and not isinstance(result, (str, bytes)):
            return ticking(budget, result)
        check_result(budget, result)
        return result

    return guarded


def ticking(budget: Budget, iterable: Iterable[Any]) -> Iterator[Any]:
    """Pass items through, checking the clock and refusing more than ``max_value_chars`` items."""
    limit = budget.limits.max_value_chars
    for count, item in enumerate(iterable, 1):
        budget.tick()
        if count > limit:
            message = f"a sequence in the template yields more than {limit:,} items"
            raise TemplateLimitExceeded("value", message)
        yield item


# --- filters the instrumentation inserts ----------------------------------------------------------
# ``pass_context`` keeps Jinja from evaluating them at compile time (constant folding), where they
# would run once, unbudgeted, instead of at every render.


@jinja2.pass_context
def _guard_loop(context: Context, iterable: Any) -> Iterator[Any]:
    """Every ``for`` iterable: one clock check per iteration, even for an empty loop body."""
    return ticking(current_budget(), iterable)


@jinja2.pass_context
def _guard_output(context: Context, value: Any) -> Any:
    """Every output expression and literal: counts all text produced, captured or not."""
    budget = current_budget()
    budget.tick()
    budget.emit(text_size(budget, value))
    return value


@jinja2.pass_context
def _guard_concat(context: Context, values: list[Any]) -> str:
    """``a ~ b``: exactly Jinja's ``str_join`` (no autoescape), after predicting the result size."""
    budget = current_budget()
    budget.tick()
    budget.check_size(sum(text_size(budget, value) for value in values), "a concatenated string")
    return "".join(map(str, values))


@jinja2.pass_context
def _guard_check(context: Context, value: Any) -> Any:
    """Comparison operands: a deep comparison of a huge shared structure would never end."""
    budget = current_budget()
    budget.tick()
    if not isinstance(value, str):
        budget.size_of(value)
    return value


# Names are reachable from templates, which is harmless: each passes its input through, or
# concatenates exactly like ``~``.
GUARD_FILTERS: dict[str, Callable[..., Any]] = {
    LOOP: _guard_loop,
    OUTPUT: _guard_output,
    CONCAT: _guard_concat,
    CHECK: _guard_check,
}


# --- builtin methods and operators ----------------------------------------------------------------

_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})


def check_method_call(budget: Budget, func: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Predict the size of the few builtin methods that can build a much larger value than their inputs.

    Returns the arguments to call with (an iterable passed to ``join`` is materialised once).
    """
    owner = getattr(func, "__self__", None)
    name = getattr(func, "__name__", "")
    if isinstance(owner, (str, bytes, bytearray)):
        size = len(owner)
        if name in _WIDTH_METHODS and args and isinstance(args[0], int):
            budget.check_size(max(size, args[0]), f"the result of {name}()")
        elif name == "expandtabs":
            tab = args[0] if args and isinstance(args[0], int) else 8
            tabs = owner.count("\t") if isinstance(owner, str) else owner.count(b"\t")
            budget.check_size(size + tabs * max(tab, 0), "the result of expandtabs()")
        elif name == "join" and args:
            items = list(args[0])
            args = (items, *args[1:])
            budget.check_size(budget.size_of(items) + size * len(items), "the joined string")
        elif name == "replace" and len(args) >= 2:
            old, new = args[0], args[1]
            if isinstance(old, (str, bytes)) and isinstance(new, (str, bytes)):
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


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_binop(budget: Budget, operator: str, left: Any, right: Any) -> None:
    """Predict ``+``, ``*``, ``%`` and ``**`` results before Python builds them."""
    if operator == "*":
        if _is_int(left) and _is_int(right):
            budget.check_int_bits(left.bit_length() + right.bit_length())
            return
        sequence, count = (left, right) if isinstance(right, int) else (right, left)
        if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(count, int) and count > 0:
            budget.check_size(budget.size_of(sequence) * count, "a repeated sequence")
    elif operator == "**":
        if _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
            budget.check_int_bits(left.bit_length() * right)
    elif operator == "+":
        if isinstance(left, (str, bytes, list, tuple)) and isinstance(right, (str, bytes, list, tuple)):
            budget.check_size(budget.size_of(left) + budget.size_of(right), "a concatenation")
    elif operator == "%" and isinstance(left, str):
        budget.check_size(percent_format_estimate(budget, left, right), "the formatted string")


# --- str.format -----------------------------------------------------------------------------------


class LimitedFormatter(SandboxedFormatter):
    """Jinja's sandboxed ``str.format`` plus limits on field widths and on the total result."""

    produced = 0

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        self.produced = 0
        return super().vformat(format_string, args, kwargs)

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        current_budget().size_of(value)  # ``!r`` builds the repr before format_field sees it
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        budget = current_budget()
        budget.tick()
        budget.check_size(budget.size_of(value) + format_spec_widths(format_spec), "a formatted field")
        text = super().format_field(value, format_spec)
        self.produced += len(text)
        budget.check_size(self.produced, "the formatted string")
        return text


class LimitedEscapeFormatter(LimitedFormatter, EscapeFormatter):
    """The same for ``Markup.format`` (values are escaped, as in Jinja)."""
