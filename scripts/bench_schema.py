#!/usr/bin/env python3
"""Cost of tool-call validation: fastjsonschema vs jsonschema + referencing (a benchmark, not a test).

Why this exists: validation runs on every closed tool call, so the library was chosen on this
workload (docs/engine.md, "Schema validation"). The script measures, for the benchmark's
small-call schemas (scripts/bench_stream.py ``calls``) and for the Pydantic ``Forecast`` schema
(fixtures/schemas/pydantic.json):

- import cost of each library (in a fresh interpreter);
- compile cost (once per distinct schema: the engine caches);
- per-call validation cost on a valid and an invalid call, collecting every error;
- autoparser's own ``validate_arguments`` (cache lookup + fastjsonschema + problem mapping);
- the whole-text cost per small hermes call through the public API, with and without tools.

Usage (from the project root)::

    python scripts/bench_schema.py [--json PATH]

Each figure is the best of 5 repeats (shared machines are noisy; best-of is the stable statistic).
jsonschema is only needed for the comparison rows; they are skipped when it is not installed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import timeit
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SMALL = {
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"},
                                                     "days": {"type": "integer", "minimum": 1, "maximum": 14}},
                    "required": ["city"]},
    "search": {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": ["integer", "null"]},
                                                "tags": {"type": "array", "items": {"type": "string"}}},
               "required": ["q"]},
}
SMALL_GOOD = {"city": "Paris", "days": 3}
SMALL_BAD = {"city": 5, "days": 40}
FORECAST = json.loads((ROOT / "fixtures" / "schemas" / "pydantic.json").read_text(encoding="utf-8"))["tools"][
    "forecast"]
FORECAST_GOOD = {"location": {"city": "Paris", "country": None}, "days": 7, "unit": "fahrenheit"}
FORECAST_BAD = {"location": {"country": "FR"}, "days": 40, "unit": "kelvin"}


def best(func: Any, number: int) -> float:
    """Best-of-5 seconds per call."""
    return min(timeit.repeat(func, number=number, repeat=5)) / number


def import_ms(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return float(out) * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    import fastjsonschema

    from autoparser import get_profile
    from autoparser.engine import schema as schema_mod
    from autoparser.engine.values import validate_arguments

    rows: dict[str, float] = {"import fastjsonschema ms": import_ms("fastjsonschema")}
    cases = {"small": (SMALL["get_weather"], SMALL_GOOD, SMALL_BAD),
             "forecast": (FORECAST, FORECAST_GOOD, FORECAST_BAD)}
    for label, (schema, good, bad) in cases.items():
        view, _ = schema_mod.draft07_view(schema)

        def compile_fast(view: Any = view) -> Any:
            return fastjsonschema.compile(view, use_default=False, use_formats=False, fast_fail=False)

        validate = compile_fast()

        def run_fast(instance: Any, validate: Any = validate) -> None:
            with contextlib.suppress(fastjsonschema.JsonSchemaException):
                validate(instance)

        rows[f"{label}: fastjsonschema compile µs"] = best(compile_fast, 5) * 1e6
        rows[f"{label}: fastjsonschema valid call µs"] = best(lambda g=good, r=run_fast: r(g), 5000) * 1e6
        rows[f"{label}: fastjsonschema invalid call µs"] = best(lambda b=bad, r=run_fast: r(b), 5000) * 1e6
        validate_arguments(good, schema)  # compile into the cache
        rows[f"{label}: autoparser validate_arguments valid µs"] = best(
            lambda g=good, s=schema: validate_arguments(g, s), 5000) * 1e6
        rows[f"{label}: autoparser validate_arguments invalid µs"] = best(
            lambda b=bad, s=schema: validate_arguments(b, s), 2000) * 1e6
    try:
        import jsonschema
        import referencing
    except ImportError:
        print("jsonschema not installed: comparison rows skipped", file=sys.stderr)
    else:
        rows["import jsonschema ms"] = import_ms("jsonschema")
        for label, (schema, good, bad) in cases.items():
            cls = jsonschema.Draft202012Validator

            def compile_js(schema: Any = schema, cls: Any = cls) -> Any:
                cls.check_schema(schema)
                return cls(schema, registry=referencing.Registry())

            validator = compile_js()
            rows[f"{label}: jsonschema compile (check_schema + validator) µs"] = best(compile_js, 20) * 1e6
            rows[f"{label}: jsonschema valid call µs"] = best(
                lambda g=good, v=validator: list(v.iter_errors(g)), 500) * 1e6
            rows[f"{label}: jsonschema invalid call µs"] = best(
                lambda b=bad, v=validator: list(v.iter_errors(b)), 500) * 1e6
    # whole text per small call, public API (bench_stream's calls workload shape, 300 calls)
    calls = "".join(
        f'<tool_call>\n{json.dumps({"name": "get_weather", "arguments": {"city": "Paris", "days": i % 14 + 1}})}\n'
        "</tool_call>\n" for i in range(300))
    tools = [{"type": "function", "function": {"name": n, "parameters": s}} for n, s in SMALL.items()]
    profile = get_profile("hermes")

    def whole(tools: Any) -> None:
        p = profile.parser(tools=tools)
        p.feed(calls)
        p.close()
        assert len(p.result().tool_calls) == 300

    rows["whole text per small call, no tools µs"] = best(lambda: whole(None), 5) / 300 * 1e6
    rows["whole text per small call, with tools (validated) µs"] = best(lambda: whole(tools), 5) / 300 * 1e6
    width = max(map(len, rows))
    for key, value in rows.items():
        print(f"{key:<{width}}  {value:10.1f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
