"""Resource limits for rendering untrusted chat templates, and the per-render budget that enforces them.

Rules of this module:

- It knows nothing about Jinja2. The sandbox (``_sandbox.py``) calls into a :class:`Budget` from its
  hooks; this module only counts and refuses.
- Every check happens *before* an allocation that could be large, or right after one that can only
  be a small constant factor larger than its inputs. So no single operation allocates more than a
  few times ``max_value_chars``, and memory never explodes, whatever the template does.
- Time is enforced cooperatively: every hook calls :meth:`Budget.tick`, which compares the clock
  against a deadline. No threads and no signals, so rendering stays usable from any thread and
  inside servers that own the signal handlers. Between two ticks only bounded work can happen,
  because every value involved is size-capped.

Sizes of containers are *expanded* sizes (a list holding the same big list twice counts it twice),
estimated once per object and memoised, because that is what ``repr``/``json.dumps`` would produce,
and a template can build a small structure whose expansion is astronomically large.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields
from datetime import datetime

from autoparser.templates._exceptions import TemplateLimitExceeded

__all__ = [
    "Budget",
    "RenderLimits",
    "active_budget",
    "current_budget",
    "format_spec_widths",
    "percent_format_estimate",
]

# Rough size of the repr of a value we do not look inside (a macro, a cycler, a loop object).
_OPAQUE_SIZE = 64


@dataclass(frozen=True)
class RenderLimits:
    """Limits applied to one render. The defaults are far above what any real chat template needs.

    ``time_seconds`` bounds the whole render; ``max_output_chars`` the returned text;
    ``max_emitted_chars`` all text produced by output statements, including text captured by macros,
    call blocks and ``{% set %}`` blocks (so a macro cannot build a huge string that is never printed);
    ``max_value_chars`` any single intermediate value (string length, or the expanded size of a
    list/dict); ``max_range`` the length of ``range()``; ``max_source_chars`` the template source;
    ``max_call_depth`` nested calls (macro recursion); ``max_int_bits`` integers built by ``*``/``**``.
    """

    time_seconds: float = 2.0
    max_output_chars: int = 1_000_000
    max_emitted_chars: int = 8_000_000
    max_value_chars: int = 1_000_000
    max_range: int = 100_000
    max_source_chars: int = 1_000_000
    max_call_depth: int = 100
    max_int_bits: int = 100_000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "time_seconds":
                if not isinstance(value, (int, float)) or not value > 0:
                    raise ValueError(f"RenderLimits.time_seconds must be a positive number, got {value!r}")
            elif not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"RenderLimits.{f.name} must be a positive int, got {value!r}")


class Budget:
    """What one render has used so far, checked against its :class:`RenderLimits`.

    ``children`` lets the sandbox describe containers this module does not know (Jinja's
    ``Namespace``): it returns the values inside, or ``None`` for an opaque object.
    """

    def __init__(
        self,
        limits: RenderLimits,
        *,
        children: Callable[[object], Iterable[object] | None] | None = None,
        timed: bool = True,
        now: datetime | None = None,
    ) -> None:
        self.limits = limits
        # what ``strftime_now`` reads: fixed by a caller that renders one template many times and
        # compares the renders (a template that prints the time to the second would otherwise
        # differ between two probes by the clock alone), else the time of the render
        self.now = now if now is not None else datetime.now()
        self._deadline = time.monotonic() + limits.time_seconds if timed else math.inf
        self._children = children
        self._sizes: dict[int, tuple[int, object]] = {}
        self.streamed = 0
        self.emitted = 0
        self.grown = 0
        self.depth = 0
        self.generation_spans: list[tuple[int, int]] = []

    # -- time -------------------------------------------------------------------------------------

    def tick(self) -> None:
        """Called from every sandbox hook; raises once the render has run out of time."""
        if time.monotonic() > self._deadline:
            raise TemplateLimitExceeded(
                "time", f"template rendering exceeded the time limit of {self.limits.time_seconds:g} s"
            )

    # -- output -----------------------------------------------------------------------------------

    def stream(self, chars: int) -> None:
        """Count text that reached the final output."""
        self.streamed += chars
        if self.streamed > self.limits.max_output_chars:
            raise TemplateLimitExceeded(
                "output", f"template output exceeded {self.limits.max_output_chars:,} characters"
            )

    def emit(self, chars: int) -> None:
        """Count text produced by any output statement, buffered or not."""
        self.emitted += chars
        if self.emitted > self.limits.max_emitted_chars:
            raise TemplateLimitExceeded(
                "emitted",
                f"template produced more than {self.limits.max_emitted_chars:,} characters of text "
                "(including text captured by macros and blocks)",
            )

    # -- sizes ------------------------------------------------------------------------------------

    def check_size(self, size: int, what: str = "a value") -> None:
        """Refuse a value (or the predicted result of an operation) larger than ``max_value_chars``."""
        if size > self.limits.max_value_chars:
            raise TemplateLimitExceeded(
                "value",
                f"{what} would be {size:,} characters, over the limit of {self.limits.max_value_chars:,}",
            )

    def check_int_bits(self, bits: int) -> None:
        """Refuse integer arithmetic whose result would exceed ``max_int_bits``."""
        if bits > self.limits.max_int_bits:
            raise TemplateLimitExceeded(
                "integer", f"integer result would have about {bits:,} bits, over {self.limits.max_int_bits:,}"
            )

    def size_of(self, value: object) -> int:
        """Estimated length of ``repr(value)``/``json.dumps(value)``; raises when over the value limit."""
        try:
            size = self._size(value)
        except RecursionError:
            raise TemplateLimitExceeded("depth", "a value in the template is nested too deeply") from None
        self.check_size(size)
        return size

    def remeasure(self, container: object) -> int:
        """The size of a container a (permissive) template may have changed in place.

        Sizes are cached per object on the assumption that the sandbox keeps containers immutable;
        a possible mutation drops that entry first.
        """
        self._sizes.pop(id(container), None)
        return self.size_of(container)

    def grew(self, chars: int) -> None:
        """Count growth through in-place mutation: bounded by ``max_emitted_chars`` per render, so many
        containers that each stay under the value limit cannot add up to gigabytes either."""
        self.grown += max(0, chars)
        if self.grown > self.limits.max_emitted_chars:
            raise TemplateLimitExceeded(
                "value", f"containers changed in place grew by more than {self.limits.max_emitted_chars:,} characters"
            )

    def _size(self, value: object) -> int:
        if isinstance(value, (str, bytes, bytearray)):
            return len(value)
        if value is None or isinstance(value, bool):
            return 5
        if isinstance(value, int):
            return value.bit_length() // 3 + 2
        if isinstance(value, float):
            return 24
        cached = self._sizes.get(id(value))
        if cached is not None and cached[1] is value:
            return cached[0]
        items = self._items(value)
        if items is None:
            return _OPAQUE_SIZE
        limit = self.limits.max_value_chars
        total = 2
        for item in items:
            total += self._size(item) + 2
            if total > limit:
                break
        if isinstance(value, (list, tuple, dict, set, frozenset)):
            # Immutable inside the sandbox (ImmutableSandboxedEnvironment), so the size cannot change;
            # the stored reference keeps the id from being reused during this render.
            self._sizes[id(value)] = (total, value)
        return total

    def _items(self, value: object) -> Iterable[object] | None:
        if isinstance(value, dict):
            return itertools.chain.from_iterable(value.items())  # keys and values
        if isinstance(value, (list, tuple, set, frozenset)):
            return value
        if self._children is not None:
            return self._children(value)
        return None

    def json_size(self, value: object, indent: int, separator: int) -> None:
        """Estimated size of indented JSON: every element costs ``separator`` plus its indentation.

        Walks the expanded structure (depth matters for indentation, so no memo), which is bounded
        because :meth:`size_of` has already capped the expanded size.
        """
        limit = self.limits.max_value_chars
        total = 0
        stack: list[tuple[object, int]] = [(value, 0)]
        steps = 0
        while stack:
            item, depth = stack.pop()
            steps += 1
            if steps % 4096 == 0:
                self.tick()
            children = self._items(item) if not isinstance(item, (str, bytes)) else None
            if children is None:
                total += self._size(item)
            else:
                kids = list(children)
                total += 2 + (len(kids) + 1) * (separator + 1 + indent * (depth + 1))
                stack.extend((kid, depth + 1) for kid in kids)
            if total > limit:
                break
        self.check_size(total, "the JSON text")


_CURRENT: ContextVar[Budget | None] = ContextVar("autoparser_template_budget", default=None)


def current_budget(limits: RenderLimits | None = None) -> Budget:
    """The budget of the render in progress; outside a render (Jinja's compile-time constant folding)
    a fresh untimed budget with default limits, so size checks still apply there."""
    budget = _CURRENT.get()
    if budget is None:
        return Budget(limits or RenderLimits(), timed=False)
    return budget


@contextmanager
def active_budget(budget: Budget) -> Iterator[Budget]:
    """Make ``budget`` the one the sandbox hooks see for the duration of the ``with`` block."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


# printf-style conversion: %[(name)][flags][width][.precision][length]type
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d*))?[hlL]?([diouxXeEfFgGcrsa%])")


def percent_format_estimate(budget: Budget, template: str, args: object) -> int:
    """Upper bound of ``len(template % args)``, to refuse ``'%999999999d' % 1`` before Python builds it."""
    values: list[object]
    if isinstance(args, tuple):
        values = list(args)
    elif isinstance(args, dict):
        values = list(args.values())
    else:
        values = [args]
    largest = max((budget.size_of(v) for v in values), default=0)
    star = max((abs(v) for v in values if type(v) is int), default=0)
    total = len(template)
    for match in _PERCENT_SPEC.finditer(template):
        if match.group(3) == "%":
            continue
        width, precision = match.group(1), match.group(2)
        total += largest
        for number in (width, precision):
            if number == "*":
                total += star
            elif number:
                total += _small_int(number)
        if total > budget.limits.max_value_chars:
            break
    return total


# [[fill]align][sign][z][#][0][width][grouping][.precision][type]
_FORMAT_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(\d*)[,_]?(?:\.(\d+))?", re.DOTALL)


def format_spec_widths(spec: str) -> int:
    """Width plus precision requested by a ``str.format`` spec (0 when it asks for none)."""
    match = _FORMAT_SPEC.match(spec)
    if match is None:
        return 0
    width, precision = match.group(1), match.group(2)
    return (_small_int(width) if width else 0) + (_small_int(precision) if precision else 0)


def _small_int(digits: str) -> int:
    """``int(digits)``, saturating instead of tripping Python's int-from-string digit limit."""
    return int(digits) if len(digits) <= 15 else 10**15
