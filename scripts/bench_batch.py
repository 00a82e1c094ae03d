"""Benchmark ``autoparse batch``: rows/s and MB/s, local vs Ray, and the profile-cache hit cost.

    PYTHONPATH=$PWD python3 scripts/bench_batch.py                 # 100k rows, both engines
    PYTHONPATH=$PWD python3 scripts/bench_batch.py --rows 20000 --make-input DIR   # just write the input

The input is a JSONL file of mixed completions (hermes, qwen3-coder, mistral, ``<think>``
reasoning; contents, calls, several calls, truncated calls, repaired JSON) plus about 1% bad rows
(null or non-string text, an unknown dialect, a template that cannot be analysed, a line that is
not a JSON object), each row naming its dialect in a ``dialect`` column, one ``tools.json`` for
all. A row's ``bad`` field says what the generator broke and ``calls`` how many calls it wrote,
so the outputs are checked, not only timed: both engines must agree line for line, every bad row
must carry an error of its kind and every good row the calls written into it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"]}}},
]

# a ChatML template with <think> reasoning and <tool_call> JSON calls (written for this benchmark)
TEMPLATE = """{%- for m in messages -%}
<|im_start|>{{ m.role }}
{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif -%}
{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>
{{ {"name": c.function.name, "arguments": c.function.arguments} | tojson }}
</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif -%}"""

BROKEN_TEMPLATE = "{% for m in messages %}{{ m.content }"  # unterminated: Jinja cannot compile it

_SENTENCE = ("the model answers with a short note about weather and search results in several cities "
             "including Zürich, São Paulo and 東京 while it also explains why the forecast changes")
_WORDS = _SENTENCE.split()


def _prose(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))


def _call_args(rng: random.Random) -> tuple[str, dict[str, Any]]:
    if rng.random() < 0.5:
        return "get_weather", {"city": rng.choice(["Paris", "Zürich", "東京", "Lagos"]), "days": rng.randint(1, 9)}
    return "search", {"query": _prose(rng, 2, 12), "limit": rng.randint(1, 50)}


def _hermes(rng: random.Random, calls: int) -> str:
    head = _prose(rng, 0, 80)
    body = "".join(f"\n<tool_call>\n{json.dumps({'name': n, 'arguments': a}, ensure_ascii=False)}\n</tool_call>"
                   for n, a in (_call_args(rng) for _ in range(calls)))
    return head + body


def _qwen3_coder(rng: random.Random, calls: int) -> str:
    out = _prose(rng, 0, 80)
    for _ in range(calls):
        name, args = _call_args(rng)
        params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in args.items())
        out += f"\n<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"
    return out


def _mistral(rng: random.Random, calls: int) -> str:
    if not calls:
        return _prose(rng, 5, 150)
    parts = [_call_args(rng) for _ in range(calls)]
    return "[TOOL_CALLS]" + "".join(f"{n}[ARGS]{json.dumps(a, ensure_ascii=False)}" for n, a in parts)


def _think(rng: random.Random, calls: int) -> str:
    return f"<think>{_prose(rng, 10, 200)}</think>{_prose(rng, 5, 120)}"


_DIALECTS = {"hermes": _hermes, "qwen3-coder": _qwen3_coder, "mistral": _mistral, "think": _think}


def make_rows(n: int, template_dir: str | os.PathLike[str], *, seed: int = 0, bad_every: int = 97,
              tools_column: bool = False) -> list[Any]:
    """``n`` rows (dicts, or for a few bad rows a JSON value that is not an object).

    Writes the template files some rows name into ``template_dir``. With ``tools_column`` each
    row carries its tools (a few of them not a list) instead of sharing one tools file.
    """
    rng = random.Random(seed)
    tdir = Path(template_dir)
    tdir.mkdir(parents=True, exist_ok=True)
    (tdir / "chatml-think.jinja").write_text(TEMPLATE, encoding="utf-8")
    (tdir / "broken.jinja").write_text(BROKEN_TEMPLATE, encoding="utf-8")
    bad_kinds = ["text-null", "text-int", "profile", "template", "row-json", "row-array"]
    if tools_column:
        bad_kinds.append("tools")
    rows: list[Any] = []
    for i in range(n):
        if i % bad_every == bad_every - 1:
            kind = bad_kinds[(i // bad_every) % len(bad_kinds)]
            row: dict[str, Any] = {"id": i, "dialect": "hermes", "completion": "hello", "bad": kind.split("-")[0],
                                   "calls": 0}
            if kind == "text-null":
                row["completion"] = None
            elif kind == "text-int":
                row["completion"] = 42
            elif kind == "profile":
                row["dialect"] = "no-such-dialect"
            elif kind == "template":
                row["dialect"] = str(tdir / "broken.jinja")
            elif kind == "tools":
                row["tools"] = {"type": "function"}
            elif kind == "row-json":
                rows.append("{not json")
                continue
            elif kind == "row-array":
                rows.append([1, 2, 3])
                continue
            rows.append(row)
            continue
        dialect = rng.choice(list(_DIALECTS))
        calls = 0 if dialect == "think" else rng.choice([0, 1, 1, 2])
        text = _DIALECTS[dialect](rng, calls)
        spec = dialect
        if dialect == "hermes" and rng.random() < 0.1:  # derived from a template, through the cache
            spec = str(tdir / "chatml-think.jinja")
        row = {"id": i, "dialect": spec, "completion": text, "bad": None, "calls": calls}
        if tools_column:
            row["tools"] = TOOLS
        rows.append(row)
    return rows


def write_input(rows: list[Any], directory: str | os.PathLike[str]) -> tuple[Path, Path]:
    d = Path(directory)
    path, tools = d / "in.jsonl", d / "tools.json"
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    return path, tools


def check_output(rows: list[Any], out_path: Path) -> list[str]:
    """What is wrong with an output file, given the rows the generator made (empty: nothing)."""
    problems = []
    lines = out_path.read_text(encoding="utf-8").splitlines()
    if len(lines) != len(rows):
        return [f"{len(lines)} output lines for {len(rows)} rows"]
    for k, (row, line) in enumerate(zip(rows, lines, strict=True)):
        got = json.loads(line)
        want_kind = "row" if not isinstance(row, dict) else row["bad"]
        if got.get("error_kind") != want_kind:
            problems.append(f"line {k}: error_kind {got.get('error_kind')!r}, expected {want_kind!r}")
        elif want_kind is not None and not got.get("error"):
            problems.append(f"line {k}: error_kind {want_kind!r} without a message")
        elif want_kind is None and len(json.loads(got["tool_calls"])) != row["calls"]:
            problems.append(f"line {k}: {len(json.loads(got['tool_calls']))} calls, expected {row['calls']}")
    return problems[:20]


def _cache_costs(tdir: Path, repeat: int = 200) -> dict[str, float]:
    from autoparser.cache import ProfileCache, analyze_source
    from autoparser.templates.sources import load_source

    with tempfile.TemporaryDirectory() as cdir:
        cache = ProfileCache(cdir)
        src = load_source(tdir / "chatml-think.jinja")
        analyze_source(src, cache=cache)  # imports Jinja and the renderer: not what a miss costs
        t0 = time.perf_counter()
        analyze_source(src, cache=cache, refresh=True)
        miss = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(repeat):
            assert getattr(analyze_source(src, cache=cache), "cached", False)
        hit = (time.perf_counter() - t0) / repeat
    return {"analysis_ms": round(miss * 1000, 2), "cache_hit_ms": round(hit * 1000, 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--engines", default="local,ray")
    ap.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    ap.add_argument("--batch-size", type=int, default=1000)
    ap.add_argument("--make-input", metavar="DIR", help="only write DIR/in.jsonl and DIR/tools.json")
    ap.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    a = ap.parse_args(argv)
    if a.make_input:
        rows = make_rows(a.rows, Path(a.make_input) / "templates")
        print(*write_input(rows, a.make_input))
        return 0
    from autoparser.batch_cli import BatchJob, run_batch

    figures: dict[str, Any] = {"rows": a.rows}
    failed: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("AUTOPARSER_CACHE_DIR", str(Path(tmp) / "cache"))
        rows = make_rows(a.rows, Path(tmp) / "templates")
        inp, tools = write_input(rows, tmp)
        figures["mb"] = round(inp.stat().st_size / 1e6, 2)
        figures["load_average"] = os.getloadavg()[0]
        figures["cache"] = _cache_costs(Path(tmp) / "templates")
        outputs = {}
        for engine in a.engines.split(","):
            out = Path(tmp) / f"out-{engine}.jsonl"
            opts = {"profile_column": "dialect", "tools": str(tools)}
            job = BatchJob(str(inp), str(out), opts, a.batch_size)
            if engine == "ray":
                import ray

                t0 = time.perf_counter()
                ray.init(num_cpus=a.num_cpus, include_dashboard=False, log_to_driver=False,
                         logging_level="warning")
                figures["ray_start_s"] = round(time.perf_counter() - t0, 2)
            cpu0 = time.process_time()
            stats = run_batch(job, engine=engine)
            figures[engine] = stats.to_dict()
            if engine == "local":  # this process did all the work: rows per CPU-second, whatever the load
                figures[engine]["rows_per_cpu_second"] = round(stats.rows / (time.process_time() - cpu0), 1)
            failed += [f"{engine}: {p}" for p in check_output(rows, out)]
            outputs[engine] = out.read_bytes()
            print(f"{engine:6} {stats.to_dict()}", flush=True)
        if len(outputs) == 2 and len(set(outputs.values())) != 1:
            failed.append("the engines' outputs differ")
        if "ray" in outputs:
            import ray

            ray.shutdown()
    figures["failed"] = failed
    print(json.dumps(figures, indent=2))
    if a.json:
        Path(a.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
