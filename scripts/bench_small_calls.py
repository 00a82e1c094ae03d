#!/usr/bin/env python3
"""Whole-text cost per small call: issue 10's workload b fed to one parser in one piece.

    python3 scripts/bench_small_calls.py [--shared ../shared] [--runs 15]

Workload b of ``../shared/bench/peers_bench.py`` (2,000 small hermes calls, its tools), fed with
``feed(text); close()``; prints the best CPU time per call over the runs, with and without the
tools and in both argument modes. A benchmark, not a test: figures go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    bench = Path(args.shared) / "bench"
    if not (bench / "peers_bench.py").exists():
        print(f"{bench / 'peers_bench.py'} not found (pass --shared)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(bench))
    import peers_bench  # the workload generator and its tools, as the peer benchmark uses them

    import autoparser

    text, expected = peers_bench.make_workload("b", 2000)
    calls = len(expected["tool_calls"])
    profile = autoparser.get_profile("hermes")
    for tools in (peers_bench.TOOLS, None):
        for stream in (True, False):
            best = float("inf")
            for _ in range(args.runs):
                parser = profile.parser(tools=tools, stream_arguments=stream)
                start = time.process_time()
                parser.feed(text)
                parser.close()
                best = min(best, time.process_time() - start)
            assert len(parser.result().tool_calls) == calls  # a broken parser cannot look fast
            print(f"tools={'yes' if tools else 'no':3} stream_arguments={stream!s:5}  "
                  f"{best / calls * 1e6:5.1f} us per call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
