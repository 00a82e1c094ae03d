"""Exporters: a profile as another runtime's configuration, a response template or a grammar.

Why: a profile is only useful where the model runs. These functions turn it into what each
runtime already reads (OpenVINO GenAI parser classes, vLLM / SGLang parser flags, a transformers
``response_template``, llama.cpp / xgrammar grammars), and say plainly when a runtime has no
equivalent instead of handing out a near miss. Optional dependencies are never imported here.

``emit(profile, fmt, tools=None)`` returns the text ``autoparse PATH --emit FORMAT`` prints.
"""

from __future__ import annotations

import json

from ..grammar import GrammarError, GrammarExport, GrammarFormat, grammar_for
from ..grammar import build_grammar as _build_grammar
from ..profile import Profile
from .errors import ExportError
from .openvino import openvino_fragment, openvino_parsers, validate_openvino_profile
from .resolve import Binding, Resolution, resolve_profile
from .response_template import ResponseTemplateExport, response_template

__all__ = [
    "FORMATS",
    "Binding",
    "ExportError",
    "GrammarExport",
    "Resolution",
    "ResponseTemplateExport",
    "build_grammar",
    "emit",
    "openvino_fragment",
    "openvino_parsers",
    "render_resolution",
    "resolve_profile",
    "response_template",
    "validate_openvino_profile",
]

FORMATS: tuple[str, ...] = ("openvino", "vllm", "sglang", "response-template", "ebnf", "gbnf", "lark",
                            "structural-tag", "openvino-grammar", "json")


def render_resolution(res: Resolution) -> str:
    """What ``--emit vllm|sglang`` prints: the launch command, then one comment per refused part."""
    lines = [str(res.settings.get("command", ""))]
    for b in (res.tools, res.reasoning):
        if b is not None and b.parser is None:
            lines.append(f"# {b.reason}")
    return "\n".join(lines) + "\n"


def build_grammar(profile: Profile, tools: object = None, fmt: GrammarFormat = "gbnf") -> GrammarExport:
    """:func:`autoparser.grammar.build_grammar`, refusing with :class:`ExportError` like every exporter."""
    try:
        return _build_grammar(profile, tools, fmt)
    except GrammarError as e:
        raise ExportError(str(e)) from None


def emit(profile: Profile, fmt: str, tools: object = None) -> str:
    """The text to print for ``fmt``; raises ExportError for an unknown format or no equivalent."""
    if not isinstance(profile, Profile):
        raise ExportError(f"emit() needs a Profile, got {type(profile).__name__}")
    if fmt == "json":
        return profile.to_json() + "\n"
    if fmt == "openvino":
        return json.dumps(openvino_fragment(profile), ensure_ascii=False, indent=2) + "\n"
    if fmt in ("vllm", "sglang"):
        return render_resolution(resolve_profile(profile, fmt))
    if fmt == "response-template":
        return json.dumps(response_template(profile).tokenizer_config(), ensure_ascii=False, indent=2) + "\n"
    if fmt in ("ebnf", "gbnf", "lark", "structural-tag"):
        text = build_grammar(profile, tools, fmt).text  # type: ignore[arg-type]
        return text if text.endswith("\n") else text + "\n"
    if fmt == "openvino-grammar":
        # a structured-output spec that forces the call format (autoparser.grammar; no OpenVINO import)
        try:
            spec = grammar_for(profile, tools)
        except GrammarError as e:
            raise ExportError(str(e)) from None
        return json.dumps(spec, ensure_ascii=False, indent=2) + "\n"
    raise ExportError(f"unknown export format {fmt!r}; valid formats: {', '.join(FORMATS)}")
