#!/usr/bin/env python3
"""The server's cost: time to first token and tokens/s through ``autoparse serve`` vs GenAI directly.

    python3 scripts/bench_serve.py [--runs 5] [--tokens 128] [--port 8931]

One run measures both sides on the same machine, interleaved, with the same prompt text, token
budget and grammar. **direct** is ``LLMPipeline.generate`` in this process with a ``StreamerBase``
that only notes when the first token id arrives (no decoding, no parser, no HTTP). **server** is
``autoparse serve`` started as a subprocess and read over HTTP with streaming (SSE parsed by
``httpx``; the parser, the OpenAI chunks and the worker thread all in the path). Greedy decoding
with ``ignore_eos`` fixes the token count of the plain workload; the tool-call workload is a call
forced by the grammar, as ``tool_choice=required`` sends it. Prints medians, the server/direct
ratio, and the machine load. A benchmark, not a test: figures go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
                                            "parameters": {"type": "object", "properties": {
                                                "city": {"type": "string", "pattern": "[A-Z][a-z]{2,12}"}},
                                                "required": ["city"], "additionalProperties": False}}}


def workloads(name: str, tokens: int) -> dict[str, dict[str, Any]]:
    ask = [{"role": "user", "content": "Tell me about Paris."}]
    return {
        "plain": {"model": name, "messages": ask, "temperature": 0, "max_tokens": tokens, "ignore_eos": True},
        "tool call": {"model": name, "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
                      "temperature": 0, "max_tokens": 64, "tools": [WEATHER], "tool_choice": "required",
                      "parallel_tool_calls": False},
    }


def direct(model: Any, body: dict[str, Any]) -> tuple[float, float, int]:
    """(seconds to first text, seconds in all, tokens) from GenAI alone, on the server's own plan."""
    import openvino_genai as ov

    from autoparser.live.structured import build_structured_output
    from autoparser.serve.config import ServeConfig
    from autoparser.serve.plan import make_plan
    from autoparser.serve.request import parse_chat_request

    plan = make_plan(model, parse_chat_request(body, [model.name]), ServeConfig())
    config = ov.GenerationConfig(**plan.options)
    if plan.grammar is not None:
        config.structured_output_config = build_structured_output(plan.grammar)
    first: list[float] = []

    class FirstToken(ov.StreamerBase):  # type: ignore[misc]
        """The earliest a GenAI caller can see a token: its id, undecoded."""

        def write(self, token: Any) -> Any:
            if not first:
                first.append(time.perf_counter() - start)
            return ov.StreamingStatus.RUNNING

        def end(self) -> None:
            pass

    streamer = FirstToken()
    start = time.perf_counter()
    res = model.live.pipeline.generate([plan.prompt], config, streamer)
    total = time.perf_counter() - start
    return first[0], total, int(res.perf_metrics.get_num_generated_tokens())


def served(http: Any, body: dict[str, Any]) -> tuple[float, float, int]:
    """(seconds to the first content or call delta, seconds in all, completion tokens) over HTTP."""
    first: list[float] = []
    tokens = 0
    start = time.perf_counter()
    payload = {**body, "stream": True, "stream_options": {"include_usage": True}}
    with http.stream("POST", "/v1/chat/completions", json=payload) as resp:
        resp.raise_for_status()
        for line in resp.iter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            delta = chunk["choices"][0]["delta"] if chunk["choices"] else {}
            if not first and (delta.get("content") or delta.get("tool_calls")):
                first.append(time.perf_counter() - start)
    return first[0], time.perf_counter() - start, tokens


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=128, help="tokens per plain generation")
    ap.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    args = ap.parse_args()
    import httpx

    from autoparser.serve.model import load_served_model

    port = args.port
    if not port:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "autoparser.cli", "serve", "--port", str(port),
                             "--log-level", "warning"], env=env, stderr=subprocess.DEVNULL)
    try:
        model = load_served_model()
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120)
        deadline = time.monotonic() + 120
        while True:
            try:
                http.get("/health").raise_for_status()
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    print("the server did not start", file=sys.stderr)
                    return 1
                time.sleep(0.2)
        rows = []
        for label, body in workloads(model.name, args.tokens).items():
            direct(model, body)  # warm-up: first-call and grammar-compilation costs stay out
            served(http, body)
            sides: dict[str, list[tuple[float, float, int]]] = {"direct": [], "server": []}
            for _ in range(args.runs):
                sides["direct"].append(direct(model, body))
                sides["server"].append(served(http, body))
            med = {side: (statistics.median(r[0] for r in runs) * 1000, statistics.median(r[1] for r in runs) * 1000,
                          statistics.median(r[2] / r[1] for r in runs), runs[0][2])
                   for side, runs in sides.items()}
            rows.append((label, med))
    finally:
        proc.terminate()
        proc.wait(30)
    load = os.getloadavg()
    print(f"autoparse serve vs OpenVINO GenAI directly: SmolLM2-135M on CPU, {args.runs} runs each, medians; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs\n")
    print("| workload | tokens | first token ms: direct / server (ratio) | whole ms: direct / server (ratio) "
          "| tok/s: direct / server (ratio) |")
    print("|---|---:|---:|---:|---:|")
    for label, med in rows:
        (first_d, all_d, rate_d, n_d), (first_s, all_s, rate_s, _) = med["direct"], med["server"]
        print(f"| {label} | {n_d} | {first_d:.0f} / {first_s:.0f} ({first_s / first_d:.2f}) | "
              f"{all_d:.0f} / {all_s:.0f} ({all_s / all_d:.2f}) | "
              f"{rate_d:.0f} / {rate_s:.0f} ({rate_s / rate_d:.2f}) |")
    print("\n(first token: GenAI's first token id directly; through the server the first content delta, or for a "
          "tool call the first call delta, sent once the call's name is certain)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
