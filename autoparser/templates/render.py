"""Render chat templates in a sandbox, byte-identical to Hugging Face transformers, within limits.

Why byte-identical: the analyzer derives a model's output protocol from renders, and the prompts the
model really sees come from transformers (or runtimes that copy it). Why limits: chat templates ship
with model repositories and are untrusted code; a template that loops forever, builds a gigabyte
string or walks into Python internals must end in a :class:`~autoparser.errors.TemplateError` within
seconds, not hang or crash the caller.

jinja2 is imported only when a template is compiled (``_sandbox``), so importing this module is cheap.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from autoparser.templates._exceptions import TemplateBlocked, TemplateLimitExceeded, TemplateRaised
from autoparser.templates._inputs import plain_data, prepare_messages
from autoparser.templates._limits import RenderLimits, active_budget

if TYPE_CHECKING:
    from autoparser.templates._sandbox import CompiledTemplate

__all__ = [
    "RenderLimits",
    "Rendering",
    "TemplateBlocked",
    "TemplateLimitExceeded",
    "TemplateRaised",
    "TemplateRenderer",
    "render",
]


@dataclass(frozen=True)
class Rendering:
    """A rendered prompt plus where ``{% generation %}`` blocks landed in it (``[start, end)`` offsets)."""

    text: str
    generation_spans: tuple[tuple[int, int], ...] = ()


class TemplateRenderer:
    """One chat template, compiled once and rendered any number of times.

    Rendering takes what transformers' ``apply_chat_template`` passes to a template: ``messages``
    (``None``-valued keys dropped, reasoning copied to ``reasoning_content`` and ``thinking``),
    ``tools``, ``documents`` (``None`` unless given), ``add_generation_prompt``, ``bos_token``,
    ``eos_token`` and any extra keyword (``enable_thinking=...``).

    ``permissive=True`` renders as the engines that are laxer than transformers 5 do: ``None``-valued
    message keys are kept, the template may mutate lists and dicts, and ``tojson`` writes iterators
    as lists. The analyzer falls back to it when a template cannot write tool calls otherwise;
    renders that must match transformers never use it.

    ``now`` fixes the time ``strftime_now`` reads, for callers that compare renders of one template
    (the analyzer's probes): without it each render reads the clock, as transformers does.

    Raises :class:`~autoparser.errors.TemplateError` when the template does not compile (with the line),
    when it fails or refuses (``raise_exception`` gives :class:`TemplateRaised`), and when it exceeds
    a limit (:class:`TemplateLimitExceeded`).
    """

    def __init__(self, source: str, *, limits: RenderLimits | None = None, permissive: bool = False,
                 now: datetime | None = None) -> None:
        if not isinstance(source, str):
            raise TypeError(f"a chat template must be a str, got {type(source).__name__}")
        self.limits = limits if limits is not None else RenderLimits()
        if len(source) > self.limits.max_source_chars:
            limit = self.limits.max_source_chars
            message = f"template source is {len(source):,} characters, over the limit of {limit:,}"
            raise TemplateLimitExceeded("source", message)
        from autoparser.templates._sandbox import compile_template

        self.source = source
        self.permissive = permissive
        self.now = now  # what ``strftime_now`` reads in every render; ``None``: the time of each render
        self._compiled: CompiledTemplate = compile_template(source, permissive)

    def reads(self, name: str) -> bool:
        """Whether the template can read an input called ``name`` (as a variable, an attribute or
        a string key): a template that never names ``tool_calls`` cannot write a call."""
        return name in self._compiled.names

    def inputs(self) -> dict[str, tuple[object, ...]]:
        """The variables this template reads beyond the standard inputs (``enable_thinking``,
        ``reasoning_effort``, ...), each with the constant values it compares them with."""
        return self._compiled.inputs()

    def render(self, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> str:
        """The prompt text; keyword arguments as for :meth:`render_detailed`."""
        return self.render_detailed(messages, **kwargs).text

    def render_detailed(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        bos_token: str | None = "",
        eos_token: str | None = "",
        alias_reasoning: bool = True,
        **extra: Any,
    ) -> Rendering:
        """The prompt text and the ``{% generation %}`` spans. ``None`` tokens render as empty strings.

        ``alias_reasoning=False`` passes each message's reasoning only under the key it came with
        (engines other than transformers do not copy it): the return-trip probes use it to find the
        key a template reads."""
        from autoparser.templates._sandbox import translate_error

        context: dict[str, Any] = {
            "messages": prepare_messages(messages, keep_none=self.permissive, alias_reasoning=alias_reasoning),
            "tools": plain_data(list(tools)) if tools is not None else None,
            "documents": None,
            "add_generation_prompt": bool(add_generation_prompt),
            "bos_token": bos_token or "",
            "eos_token": eos_token or "",
        }
        context.update(plain_data(extra))
        budget = self._compiled.new_budget(self.limits, self.now)
        chunks: list[str] = []
        with active_budget(budget):
            stream = self._compiled.generate(context)
            try:
                for chunk in stream:
                    budget.stream(len(chunk))
                    chunks.append(chunk)
                text = "".join(chunks)
            except Exception as exc:
                error = translate_error(exc)
                if error is exc:
                    raise
                raise error from exc
            finally:
                stream.close()
        return Rendering(text, tuple(budget.generation_spans))


@functools.lru_cache(maxsize=64)
def _renderer(template: str, limits: RenderLimits | None) -> TemplateRenderer:
    return TemplateRenderer(template, limits=limits)


def render(
    template: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    limits: RenderLimits | None = None,
    **kwargs: Any,
) -> str:
    """Render ``template`` once; keyword arguments as for :meth:`TemplateRenderer.render`.

    Recently used templates stay compiled, so calling this in a loop does not recompile.
    """
    return _renderer(template, limits).render(messages, **kwargs)
