#!/usr/bin/env python3
"""Streaming throughput of autoparser through its public API (a benchmark, not a test).

Why this exists: the engine promises linear time in the input whatever the chunking, with
per-feed overhead small enough for token-by-token streaming. This script measures exactly that —
feed a workload in chunks of 4, 64 and 4096 characters to a fresh parser, close it, report MB/s —
and checks every parse so a broken parser cannot look fast.

Usage (from the project root)::

    python scripts/bench_stream.py                 # full run, 1 MB workloads
    python scripts/bench_stream.py --quick         # small sizes, few runs per cell: a smoke test
    python scripts/bench_stream.py --json out.json --workloads calls,bigarg

MB is 2**20 bytes of UTF-8 input. Each cell reports the best of N runs, N chosen so a cell takes
about 0.5-2 s (one run when a single run already takes longer). A run includes building the
parser, every ``feed`` and the ``close``; splitting the text into chunks happens before timing.

Exit status: 0 when every check passed, 1 when a parse was wrong, 2 when the engine is missing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TEMPLATES = ROOT.parent / "shared" / "templates"

CHUNK_SIZES = (4, 64, 4096)
MB = 1 << 20
KB = 1 << 10

# -- workloads --------------------------------------------------------------------------------------

_WORDS_TEXT = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but "
    "have an they you were her she there been one all we their has would when if so no will can more "
    "model output parser stream token chunk value field number string reason answer result call tool "
    "weather city window buffer marker state engine fast slow simple careful because however through "
    "between without within during before after again further then once here where why how each few"
)

# About 1% of words: non-ASCII, and the characters that make a streaming parser hesitate
# ('<' might open a marker, '[' and '{' might open JSON). None of them is a real marker.
_RARE = (
    "café",
    "naïve",
    "Zürich",
    "日本語",
    "→",
    "—",
    "≈",
    "x < y",
    "a<b",
    "<b>bold</b>",
    "`<div>`",
    "< 5",
    "list[0]",
    "[1, 2]",
    "[note]",
    "{key}",
    '{"a": 1}',
    "f(x) {",
    '"quoted"',
    "back\\slash",
    "tab\there",
    "1.5e3",
)


def prose(n_chars: int, rng: random.Random) -> str:
    """English-like text of exactly ``n_chars`` characters: sentences, paragraphs, rare tokens."""
    vocabulary = _WORDS_TEXT.split()
    parts: list[str] = []
    size = 0
    while size < n_chars:
        words = [
            rng.choice(_RARE) if rng.random() < 0.01 else rng.choice(vocabulary)
            for _ in range(rng.randint(6, 18))
        ]
        if rng.random() < 0.1:
            words.insert(rng.randrange(len(words)), str(rng.randint(0, 99999)))
        sentence = " ".join(words).capitalize() + rng.choice((". ", ". ", ". ", "? ", "! ", ", and "))
        if rng.random() < 0.12:
            sentence = sentence.rstrip() + "\n\n"
        parts.append(sentence)
        size += len(sentence)
    # No whitespace at either end, so a dialect's edge-trimming convention cannot make a check flaky.
    text = "".join(parts)[: n_chars - 1].rstrip()
    return text + "." * (n_chars - len(text))


def _norm(s: str) -> str:
    return " ".join(s.split())


Check = Callable[[Any], list[str]]


@dataclass(slots=True)
class Workload:
    """A text, the profile it is fed to, and what the parse must be."""

    key: str
    title: str
    profile: str
    text: str
    check: Check
    tools: list[dict[str, Any]] | None = None
    reasoning: str | None = None
    nbytes: int = field(init=False)

    def __post_init__(self) -> None:
        self.nbytes = len(self.text.encode())


def _expect(cond: bool, problem: str, problems: list[str]) -> None:
    if not cond:
        problems.append(problem)


def wl_content(n: int) -> Workload:
    text = prose(n, random.Random(f"content-{n}"))

    def check(res: Any) -> list[str]:
        out: list[str] = []
        _expect(res.content.strip() == text.strip(), f"content differs (got {len(res.content)} chars)", out)
        _expect(not res.reasoning, "unexpected reasoning", out)
        _expect(not res.tool_calls, f"unexpected tool calls: {len(res.tool_calls)}", out)
        return out

    return Workload("content", f"plain content, {_size(n)}", "hermes", text, check)


def wl_reasoning(n: int) -> Workload:
    rng = random.Random(f"reasoning-{n}")
    thought, answer = prose(n // 2, rng), prose(n - n // 2, rng)
    text = f"<think>\n{thought}\n</think>\n\n{answer}"

    def check(res: Any) -> list[str]:
        out: list[str] = []
        _expect(res.reasoning.strip() == thought, f"reasoning differs (got {len(res.reasoning)} chars)", out)
        _expect(res.content.strip() == answer, f"content differs (got {len(res.content)} chars)", out)
        _expect(not res.tool_calls, "unexpected tool calls", out)
        return out

    return Workload("reasoning", f"<think> reasoning + content, {_size(n)}", "think", text, check)


def wl_calls(count: int) -> Workload:
    rng = random.Random(f"calls-{count}")
    cities = ("Paris", "Zürich", "São Paulo", "New York", "東京", 'Say "Hi"', "C:\\temp", "a<b")
    parts: list[str] = []
    expected: list[tuple[str, dict[str, Any]]] = []
    between: list[str] = []
    for i in range(count):
        if i % 3 == 0:
            name, args = "get_weather", {"city": rng.choice(cities), "days": rng.randint(1, 14)}
        elif i % 3 == 1:
            name, args = "get_time", {"tz": rng.choice(cities), "utc": rng.random() < 0.5}
        else:
            name, args = "search", {"q": prose(rng.randint(10, 60), rng), "limit": None, "tags": ["a", "b"]}
        expected.append((name, args))
        payload = json.dumps({"name": name, "arguments": args}, ensure_ascii=rng.random() < 0.5)
        parts.append(f"<tool_call>\n{payload}\n</tool_call>\n")
        if rng.random() < 0.3:
            text = prose(rng.randint(5, 40), rng)
            between.append(text)
            parts.append(text + "\n")
    text = "".join(parts)

    def check(res: Any) -> list[str]:
        out: list[str] = []
        _expect(len(res.tool_calls) == count, f"{len(res.tool_calls)} calls, want {count}", out)
        got = [(c.name, c.arguments) for c in res.tool_calls]
        bad = [i for i, (g, e) in enumerate(zip(got, expected, strict=False)) if g != e]
        _expect(not bad, f"{len(bad)} calls differ, first #{bad[0] if bad else 0}", out)
        _expect(_norm(res.content) == _norm(" ".join(between)), "text between calls differs", out)
        _expect(not res.reasoning, "unexpected reasoning", out)
        return out

    return Workload("calls", f"{count:,} hermes calls, {_size(len(text))}", "hermes", text, check)


def wl_bigarg(n: int) -> Workload:
    value = prose(n, random.Random(f"bigarg-{n}"))
    payload = json.dumps(
        {"name": "write_file", "arguments": {"path": "notes.md", "content": value}}, ensure_ascii=False
    )
    text = f"<tool_call>\n{payload}\n</tool_call>"

    def check(res: Any) -> list[str]:
        out = _one_call(res, "write_file", value, lambda got: got)
        _expect(bool(res.tool_calls) and res.tool_calls[0].arguments.get("path") == "notes.md",
                "path argument differs", out)
        return out

    return Workload("bigarg", f"hermes call, {_size(n)} string argument", "hermes", text, check)


_WRITE_TOOL = [
    {
        "type": "function",
        "function": {
            "name": "write",
            "parameters": {
                "type": "object",
                "properties": {"content": {"type": "string"}},
                "required": ["content"],
            },
        },
    }
]


def wl_qwen_xml(n: int) -> Workload:
    value = prose(n, random.Random(f"qwen-{n}"))
    text = (
        "<tool_call>\n<function=write>\n<parameter=content>\n"
        f"{value}\n</parameter>\n</function>\n</tool_call>"
    )

    def check(res: Any) -> list[str]:
        # the dialect trims the newline framing the value; anything more is a bug
        return _one_call(res, "write", value, lambda got: got.strip("\n"))

    return Workload(
        "qwen3xml", f"qwen3-coder call, {_size(n)} parameter", "qwen3-coder", text, check, _WRITE_TOOL
    )


def _one_call(res: Any, name: str, value: str, norm: Callable[[str], str]) -> list[str]:
    """Problems with a result that must hold one call whose ``content`` argument is ``value``."""
    out: list[str] = []
    _expect(len(res.tool_calls) == 1, f"{len(res.tool_calls)} calls, want 1", out)
    if res.tool_calls:
        call = res.tool_calls[0]
        got = call.arguments.get("content")
        got_s = norm(got) if isinstance(got, str) else ""
        _expect(call.name == name, f"name {call.name!r}", out)
        _expect(len(got_s) == len(value), f"argument length {len(got_s)}, want {len(value)}", out)
        _expect(got_s == value, "argument text differs", out)
    _expect(not res.content.strip(), f"unexpected content ({len(res.content)} chars)", out)
    return out


def _size(n: int) -> str:
    if n >= MB and n % MB == 0:
        return f"{n // MB} MB"
    if n >= KB:
        return f"{n / KB:.0f} KB"
    return f"{n} B"


def build_workloads(quick: bool, only: set[str] | None) -> list[Workload]:
    big = 64 * KB if quick else MB
    makers: list[tuple[str, Callable[[], Workload]]] = [
        ("content", lambda: wl_content(big)),
        ("reasoning", lambda: wl_reasoning(big)),
        ("calls", lambda: wl_calls(125 if quick else 2000)),
        ("bigarg", lambda: wl_bigarg(big)),
        ("qwen3xml", lambda: wl_qwen_xml(big)),
    ]
    return [make() for key, make in makers if only is None or key in only]


# -- timing -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Timing:
    runs: list[float]
    feeds: int
    problems: list[str]

    @property
    def best(self) -> float | None:
        """None when no run completed (the parser raised)."""
        return min(self.runs) if self.runs else None


def split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def run_once(prof: Any, wl: Workload, chunks: Sequence[str]) -> tuple[float, Any]:
    """One timed run on a fresh parser; returns (seconds, parser) so the caller can check it."""
    gc.collect()
    t0 = time.perf_counter()
    p = prof.parser(tools=wl.tools, reasoning=wl.reasoning)
    feed = p.feed
    for chunk in chunks:
        feed(chunk)
    p.close()
    return time.perf_counter() - t0, p


def time_cell(prof: Any, wl: Workload, size: int, budget: tuple[float, float], max_runs: int) -> Timing:
    """Best of N runs: keep going until ``budget[0]`` seconds are spent, never past ``budget[1]``.

    An exception is a wrong parse, not a crash of the benchmark: it is reported in the cell. The
    warm-up feeds a 16 KB prefix, which a streaming parser must accept like any other input.
    """
    chunks = split(wl.text, size)
    problems: list[str] = []
    try:
        run_once(prof, wl, split(wl.text[: 16 * KB], size))
    except Exception as exc:
        problems.append(f"a 16 KB prefix raised {type(exc).__name__}: {exc}")
    runs: list[float] = []
    while True:
        try:
            dt, p = run_once(prof, wl, chunks)
        except Exception as exc:
            problems.append(f"raised {type(exc).__name__}: {exc}")
            return Timing(runs, len(chunks), problems)
        runs.append(dt)
        if len(runs) == 1:
            try:
                problems += wl.check(p.result())
            except Exception as exc:
                problems.append(f"result() raised {type(exc).__name__}: {exc}")
        total = sum(runs)
        if total >= budget[0] or len(runs) >= max_runs or total + min(runs) > budget[1]:
            return Timing(runs, len(chunks), problems)


# -- analyze ------------------------------------------------------------------------------------------


def time_analyze(ap: ModuleType, templates_dir: Path, quick: bool) -> dict[str, Any]:
    analyze = getattr(ap, "analyze", None)
    if analyze is None:
        return {"skipped": "autoparser.analyze does not exist yet"}
    files = sorted(templates_dir.rglob("*.jinja"))
    if not files:
        return {"skipped": f"no *.jinja under {templates_dir}"}
    if quick:
        files = files[:: max(1, len(files) // 12)][:12]
    times: list[float] = []
    failures: list[str] = []
    for path in files:
        source = path.read_text(encoding="utf-8")
        t0 = time.perf_counter()
        try:
            analyze(source)
        except Exception as exc:  # counted, not fatal: this measures time, conformance is elsewhere
            failures.append(f"{path.relative_to(templates_dir)}: {type(exc).__name__}")
        times.append(time.perf_counter() - t0)
    times_sorted = sorted(times)
    return {
        "templates": len(files),
        "failed": len(failures),
        "failures": failures,
        "p50_ms": statistics.median(times) * 1e3,
        "p95_ms": times_sorted[min(len(times) - 1, round(0.95 * (len(times) - 1)))] * 1e3,
        "max_ms": times_sorted[-1] * 1e3,
        "total_s": sum(times),
    }


# -- machine and reporting --------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    affinity = getattr(os, "sched_getaffinity", None)
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "usable_cores": len(affinity(0)) if affinity is not None else os.cpu_count(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "load_avg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def mbps(nbytes: int, seconds: float) -> float:
    return nbytes / MB / seconds


def fmt_rate(r: float) -> str:
    return f"{r:,.3g}" if r < 100 else f"{r:,.0f}"


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print(" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def import_autoparser() -> ModuleType | str:
    """The package, or why it cannot be benchmarked yet. Runs from a checkout without installing."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        import autoparser as ap
    except ImportError as exc:
        return f"cannot import autoparser: {exc}"
    if not callable(getattr(ap, "get_profile", None)):
        return "autoparser.get_profile does not exist yet (engine not landed)"
    return ap


def argument_latency(ap: ModuleType, quick: bool) -> list[dict[str, Any]]:
    """How soon a long string argument reaches the client: fed in 4-character chunks, the characters
    between the start of the arguments and the first ``ToolCallArgsDelta`` (and the first one that
    carries the value's own characters), and how many deltas the call took."""
    events = importlib_events(ap)
    hermes_value = prose(20 * KB if quick else 200 * KB, random.Random("latency-hermes"))
    qwen_value = prose(5 * KB if quick else 50 * KB, random.Random("latency-qwen"))
    hermes_head = '<tool_call>\n{"name": "write_file", "arguments": '
    hermes = (hermes_head + json.dumps({"content": hermes_value}, ensure_ascii=False) + "}\n</tool_call>")
    qwen_head = "<tool_call>\n<function=write>\n"
    qwen = qwen_head + f"<parameter=content>\n{qwen_value}\n</parameter>\n</function>\n</tool_call>"
    out: list[dict[str, Any]] = []
    for title, profile, text, start, value in (
        (f"hermes, {_size(len(hermes_value))} string", "hermes", hermes, len(hermes_head), hermes_value),
        (f"qwen3-coder, {_size(len(qwen_value))} string parameter", "qwen3-coder", qwen, len(qwen_head),
         qwen_value),
    ):
        p = ap.get_profile(profile).parser()
        first = first_value = None
        deltas: list[str] = []
        for k in range(0, len(text), 4):
            for e in p.feed(text[k:k + 4]):
                if isinstance(e, events.ToolCallArgsDelta):
                    fed = max(0, min(k + 4, len(text)) - start)
                    deltas.append(e.text)
                    first = fed if first is None else first
                    if first_value is None and e.text.strip('{}":, ').replace("content", ""):
                        first_value = fed
        for e in p.close():
            if isinstance(e, events.ToolCallArgsDelta):
                deltas.append(e.text)
        try:
            ok = json.loads("".join(deltas)) == {"content": value}
        except ValueError:
            ok = False
        out.append({"title": title, "profile": profile, "chars": len(text), "first_delta_chars": first,
                    "first_value_delta_chars": first_value, "deltas": len(deltas), "ok": ok})
    return out


def importlib_events(ap: ModuleType) -> ModuleType:
    import importlib

    return importlib.import_module(ap.__name__ + ".events")


def main(argv: Sequence[str] | None = None) -> int:
    ap_args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap_args.add_argument(
        "--quick", action="store_true", help="64 KB workloads, few runs per cell (smoke test)"
    )
    ap_args.add_argument("--json", metavar="PATH", type=Path, help="also write the figures as JSON")
    ap_args.add_argument(
        "--workloads", help="comma-separated subset: content,reasoning,calls,bigarg,qwen3xml"
    )
    ap_args.add_argument("--no-scale", action="store_true", help="skip the scaling series")
    ap_args.add_argument("--no-analyze", action="store_true", help="skip timing autoparser.analyze")
    ap_args.add_argument("--templates", type=Path, default=DEFAULT_TEMPLATES, help="templates root (*.jinja)")
    args = ap_args.parse_args(argv)

    ap = import_autoparser()
    if isinstance(ap, str):
        print(f"bench_stream: {ap}", file=sys.stderr)
        return 2

    mach = machine()
    mode = "quick" if args.quick else "full"
    print(f"autoparser streaming benchmark ({mode}) — {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"machine: {mach['platform']}; {mach['cpu']}; {mach['cores']} cores; {mach['python']}")
    print(f"autoparser {getattr(ap, '__version__', '?')} from {Path(ap.__file__ or '?').parent}")
    print()

    # Quick mode still repeats tiny cells a little, so a millisecond of noise is not a "result".
    budget = (0.05, 0.3) if args.quick else (0.5, 2.0)
    max_runs = 5 if args.quick else 50
    only = set(args.workloads.split(",")) if args.workloads else None
    figures: dict[str, Any] = {"machine": mach, "mode": mode, "mb": MB, "cells": [], "scaling": None}
    failed: list[str] = []

    rows: list[list[str]] = []
    for wl in build_workloads(args.quick, only):
        prof = ap.get_profile(wl.profile)
        row = [f"{wl.key}: {wl.title}", wl.profile]
        checks: list[str] = []
        for size in CHUNK_SIZES:
            t = time_cell(prof, wl, size, budget, max_runs)
            best = t.best
            rate = mbps(wl.nbytes, best) if best is not None else None
            us = best / t.feeds * 1e6 if best is not None else None
            row.append(
                f"{fmt_rate(rate)} MB/s · {us:.2f} µs" if rate is not None and us is not None else "error"
            )
            figures["cells"].append(
                {
                    "workload": wl.key,
                    "title": wl.title,
                    "profile": wl.profile,
                    "bytes": wl.nbytes,
                    "chunk": size,
                    "feeds": t.feeds,
                    "runs": len(t.runs),
                    "best_s": best,
                    "mb_per_s": rate,
                    "us_per_feed": us,
                    "problems": t.problems,
                }
            )
            checks += [f"[{size} chars] {p}" for p in t.problems]
        row.append("ok" if not checks else _clip("WRONG: " + "; ".join(checks), 70))
        failed += [f"{wl.key} {c}" for c in checks]
        rows.append(row)
        print(f"  measured {wl.key}", file=sys.stderr)
    if rows:
        print("Throughput: MB/s of UTF-8 input · time per feed call (best of N runs, fresh parser each)")
        print_table(["workload", "profile", *(f"{s} chars" for s in CHUNK_SIZES), "check"], rows)
        print()

    if not args.no_scale:
        sizes = (16 * KB, 32 * KB, 64 * KB) if args.quick else (64 * KB, 256 * KB, MB)
        prof = ap.get_profile("hermes")
        series: list[dict[str, Any]] = []
        srows: list[list[str]] = []
        for n in sizes:
            wl = wl_bigarg(n)
            t = time_cell(prof, wl, 4, budget, max_runs)
            best = t.best
            per_mb = best / (wl.nbytes / MB) if best is not None else None
            series.append({"bytes": wl.nbytes, "best_s": best, "s_per_mb": per_mb, "problems": t.problems})
            failed += [f"scaling {_size(n)} {p}" for p in t.problems]
            srows.append(
                [
                    _size(n),
                    f"{best:.3f} s" if best is not None else "error",
                    f"{per_mb:.3f} s/MB" if per_mb is not None else "error",
                    "ok" if not t.problems else _clip("WRONG: " + "; ".join(t.problems), 70),
                ]
            )
        first, last = series[0]["s_per_mb"], series[-1]["s_per_mb"]
        ratio = last / first if first and last else None
        figures["scaling"] = {
            "workload": "bigarg",
            "chunk": 4,
            "series": series,
            "ratio": ratio,
            "target": 1.5,
        }
        print("Scaling: hermes call with one large string argument, 4-char chunks")
        print_table(["size", "best", "time per MB", "check"], srows)
        if ratio is None:
            print("time per MB ratio: not available (a run failed)")
        else:
            verdict = "linear" if ratio <= 1.5 else "NOT linear (target <= 1.5x)"
            note = " (quick sizes: indicative only)" if args.quick else ""
            print(f"time per MB, {_size(sizes[-1])} vs {_size(sizes[0])}: {ratio:.2f}x — {verdict}{note}")
        print()

    lat = argument_latency(ap, args.quick)
    figures["latency"] = lat
    print("Argument streaming latency: 4-char chunks; characters of argument text fed between the")
    print("argument's start and its first delta (target < 64), and the number of argument deltas")
    print_table(
        ["call", "first delta", "first value delta", "deltas", "check"],
        [[r["title"], str(r["first_delta_chars"]), str(r["first_value_delta_chars"]), f"{r['deltas']:,}",
          "ok" if r["ok"] else "WRONG"] for r in lat],
    )
    failed += [f"latency {r['title']}" for r in lat if not r["ok"]]
    print()

    if not args.no_analyze:
        an = time_analyze(ap, args.templates, args.quick)
        figures["analyze"] = an
        if "skipped" in an:
            print(f"analyze: skipped — {an['skipped']}")
        else:
            print(
                f"analyze: {an['templates']} templates, p50 {an['p50_ms']:.1f} ms, "
                f"p95 {an['p95_ms']:.1f} ms, "
                f"max {an['max_ms']:.1f} ms, total {an['total_s']:.2f} s; {an['failed']} raised"
            )
        print()

    print(f"MB = 2^20 bytes. Load average (1 min) at the end: {machine()['load_avg_1m']}")
    if args.json:
        figures["failed"] = failed
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if failed:
        print(f"{len(failed)} check(s) failed:", file=sys.stderr)
        for f in failed:
            print(f"  {f}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
