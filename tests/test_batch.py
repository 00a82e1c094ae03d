"""autoparser.batch, the profile cache and ``autoparse batch --engine local`` (no Ray needed).

Expected values come from the rows' own construction (the benchmark's generator records what it
broke and how many calls it wrote), never from the code under test.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from sample_templates import HERMES_LIKE
from scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[1]


bench = load_script("bench_batch")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own profile cache (never the user's)."""
    cache = tmp_path / "profile-cache"
    monkeypatch.setenv("AUTOPARSER_CACHE_DIR", str(cache))
    return cache


CALL = '<think>hm</think>Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def _columns() -> dict[str, list[Any]]:
    return {"completion": [CALL, None, 42, "plain", "<tool_call>\n<function=search>\n<parameter=query>\nx\n"
                           "</parameter>\n</function>\n</tool_call>", "text"],
            "model": ["hermes", "hermes", "hermes", "no-such-dialect", "qwen3-coder", "./missing/model"],
            "tools": [json.dumps(bench.TOOLS), None, None, None, json.dumps(bench.TOOLS), None]}


def test_rows_parse_and_bad_rows_get_their_error() -> None:
    from autoparser.batch import parse_batch

    out = parse_batch(_columns(), profile_column="model", tools_column="tools")
    assert out["error_kind"] == [None, "text", "text", "profile", None, "profile"]
    assert all(out["error"][k] for k in (1, 2, 3, 5))
    first = json.loads(out["tool_calls"][0])
    assert [c["function"]["name"] for c in first] == ["get_weather"]
    assert json.loads(first[0]["function"]["arguments"]) == {"city": "Paris"}
    assert (out["reasoning"][0], out["content"][0].strip(), out["finish"][0]) == ("hm", "Sure.", "tool_calls")
    assert json.loads(out["call_status"][4]) == ["ok"]
    assert json.loads(json.loads(out["tool_calls"][4])[0]["function"]["arguments"]) == {"query": "x"}
    assert out["completion"] == _columns()["completion"]  # input columns are kept


def test_every_batch_shape_gives_the_same_columns() -> None:
    import pandas as pd
    import pyarrow as pa

    from autoparser.batch import OUTPUT_COLUMNS, Parse

    cols = _columns()
    cols["completion"][2] = "not an int here"  # Arrow needs one type per column
    parse = Parse(profile_column="model", tools_column="tools")
    as_dict = parse(cols)
    as_arrow = parse(pa.table(cols)).to_pydict()
    as_pandas = parse(pd.DataFrame(cols))
    as_rows = parse([dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)])
    for name in OUTPUT_COLUMNS:
        assert as_arrow[name] == as_dict[name], name
        assert [None if v is None or v != v else v for v in as_pandas[name].tolist()] == as_dict[name], name
        assert [r[name] for r in as_rows] == as_dict[name], name


def test_tools_that_are_not_a_list_fail_only_their_row() -> None:
    from autoparser.batch import parse_batch

    out = parse_batch({"completion": [CALL] * 4, "tools": [{"type": "function"}, "{}", "not json", None]},
                      profile="hermes", tools_column="tools")
    assert out["error_kind"] == ["tools", "tools", "tools", None]


def test_template_rows_derive_once_and_a_bad_template_is_a_row_error(tmp_path: Path) -> None:
    from autoparser.batch import Parse
    from autoparser.cache import ProfileCache

    good, broken = tmp_path / "t.jinja", tmp_path / "broken.jinja"
    good.write_text(HERMES_LIKE, encoding="utf-8")
    broken.write_text(bench.BROKEN_TEMPLATE, encoding="utf-8")
    cache = ProfileCache(tmp_path / "c")
    rows = {"completion": [CALL] * 30, "model": [str(good)] * 29 + [str(broken)]}
    out = Parse(profile_column="model", cache=cache)(rows)
    assert out["error_kind"] == [None] * 29 + ["template"]
    assert all(len(json.loads(t)) == 1 for t in out["tool_calls"][:29])
    assert (cache.misses, cache.hits) == (2, 0)  # one lookup per distinct template, not per row
    again = Parse(profile_column="model", cache=cache)(rows)
    assert (cache.misses, cache.hits) == (3, 1) and again == out  # a failed analysis is not stored


def test_bad_calls_raise_before_any_row() -> None:
    from autoparser.batch import Parse, parse_batch

    with pytest.raises(ValueError):
        Parse()  # no profile at all
    with pytest.raises(ValueError):
        parse_batch({"text": ["x"]}, profile="hermes")  # no "completion" column
    with pytest.raises(ValueError):
        parse_batch({"completion": ["x"], "content": ["y"]}, profile="hermes")  # would overwrite "content"
    out = parse_batch({"completion": ["x"], "content": ["y"]}, profile="hermes", prefix="parsed_")
    assert out["content"] == ["y"] and out["parsed_content"] == ["x"]


def test_import_autoparser_imports_neither_pyarrow_nor_ray() -> None:
    code = ("import sys, autoparser, autoparser.batch, autoparser.cache\n"
            "print([m for m in ('pyarrow', 'ray', 'pandas') if m in sys.modules])")
    r = subprocess.run([sys.executable, "-c", code], text=True, capture_output=True, cwd=ROOT, timeout=60)
    assert r.stdout.strip() == "[]", r.stdout + r.stderr


# -- the profile cache -----------------------------------------------------------------------

def _source(tmp_path: Path, text: str = HERMES_LIKE) -> Any:
    from autoparser.templates.sources import load_source

    path = tmp_path / "model.jinja"
    path.write_text(text, encoding="utf-8")
    return load_source(path)


def test_second_analysis_is_a_cache_hit(tmp_path: Path) -> None:
    from autoparser.cache import ProfileCache, analyze_source

    cache = ProfileCache(tmp_path / "c")
    src = _source(tmp_path)
    first = analyze_source(src, cache=cache)
    second = analyze_source(src, cache=cache)
    assert not getattr(first, "cached", False) and second.cached
    assert second.profile == first.profile
    assert (second.check.passed, second.check.rendered) == (first.check.passed, first.check.rendered)
    entries = list((tmp_path / "c").rglob("*.json"))
    assert len(entries) == 1 and entries[0].name.startswith(hashlib.sha256(HERMES_LIKE.encode()).hexdigest())


def test_cache_key_covers_bos_eos_and_a_new_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import autoparser.cache as cache_mod
    from autoparser.cache import ProfileCache

    key = ProfileCache.key(HERMES_LIKE, "<s>", "</s>")
    assert key != ProfileCache.key(HERMES_LIKE, "<s>", "<|im_end|>")
    assert key != ProfileCache.key(HERMES_LIKE, None, "</s>")
    assert key != ProfileCache.key(HERMES_LIKE, "<s>", "</s>", known=False)
    cache = ProfileCache(tmp_path / "c")
    src = _source(tmp_path)
    cache_mod.analyze_source(src, cache=cache)
    assert cache_mod.analyze_source(src, cache=cache).cached
    monkeypatch.setattr(cache_mod, "build_id", lambda: "9.9.9-another-build")
    assert not getattr(cache_mod.analyze_source(src, cache=cache), "cached", False)


def test_a_corrupt_entry_is_a_miss_and_is_rewritten(tmp_path: Path) -> None:
    from autoparser.cache import ProfileCache, analyze_source

    cache = ProfileCache(tmp_path / "c")
    src = _source(tmp_path)
    analyze_source(src, cache=cache)
    (entry,) = (tmp_path / "c").rglob("*.json")
    entry.write_text('{"build": "trunc', encoding="utf-8")
    assert not getattr(analyze_source(src, cache=cache), "cached", False)
    assert analyze_source(src, cache=cache).cached


_WRITER = textwrap.dedent("""
    import sys
    from autoparser.cache import ProfileCache, analyze_source
    from autoparser.templates.sources import load_source
    cache = ProfileCache(sys.argv[1])
    src = load_source(sys.argv[2])
    an = analyze_source(src, cache=cache, refresh=True)
    key = ProfileCache.key(src.template_for(tools=True), src.bos_token, src.eos_token,
                           special_tokens=src.special_tokens)
    print("ready", flush=True)
    for _ in range(int(sys.argv[3])):
        assert cache.put(key, an)
""")


def test_two_concurrent_writers_leave_a_valid_cache(tmp_path: Path) -> None:
    from autoparser.cache import ProfileCache, analyze_source

    src = _source(tmp_path)
    cdir = tmp_path / "c"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(cdir), src.path, "300"], env=env,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    reader = ProfileCache(cdir)
    key = ProfileCache.key(src.template_for(tools=True), src.bos_token, src.eos_token)
    reads = 0
    while any(p.poll() is None for p in procs):  # while both rewrite the entry, every read is whole
        assert reader.get(key) is not None
        reads += 1
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    assert reads > 0 and reader.misses == 0
    assert analyze_source(src, cache=reader).cached
    assert [p.name for p in cdir.rglob("*") if p.is_file()] == [f"{key}.json"]  # no temporary left


def test_autoparse_scan_goes_through_the_cache(tmp_path: Path, _private_cache: Path) -> None:
    (tmp_path / "t.jinja").write_text(HERMES_LIKE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def scan() -> dict[str, Any]:
        r = subprocess.run([sys.executable, "-m", "autoparser.cli", "scan", "--json", str(tmp_path / "t.jinja")],
                           text=True, capture_output=True, cwd=ROOT, timeout=120, env=env)
        assert r.returncode == 0, r.stderr
        row: dict[str, Any] = json.loads(r.stdout)
        return row

    first, second = scan(), scan()
    assert (first["cached"], second["cached"]) == (False, True)
    assert first["dialect"] == second["dialect"] == "hermes"
    assert len(list(_private_cache.rglob("*.json"))) == 1


# -- the command line, local engine ------------------------------------------------------------

def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "autoparser.cli", "batch", *args], text=True,
                          capture_output=True, cwd=cwd, timeout=300, env=env)


def _expected_errors(rows: list[Any]) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for r in rows:
        kind = r["bad"] if isinstance(r, dict) else "row"
        if kind:
            kinds[kind] = kinds.get(kind, 0) + 1
    return dict(sorted(kinds.items()))


def test_cli_local_jsonl_every_row_checked(tmp_path: Path) -> None:
    rows = bench.make_rows(600, tmp_path / "templates", bad_every=23, tools_column=True)
    inp, _tools = bench.write_input(rows, tmp_path)
    r = _cli(str(inp), "-o", "out.jsonl", "--profile-column", "dialect", "--tools-column", "tools",
             "--batch-size", "64", "--json-summary", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""  # no progress bar when stderr is not a terminal
    assert bench.check_output(rows, tmp_path / "out.jsonl") == []
    summary = json.loads(r.stdout)
    assert summary["rows"] == len(rows)
    assert summary["errors"] == _expected_errors(rows)
    assert set(_expected_errors(rows)) == {"profile", "row", "template", "text", "tools"}
    assert sum(summary["calls"].values()) == sum(x["calls"] for x in rows if isinstance(x, dict))
    out_rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    for want, got in zip(rows, out_rows, strict=True):  # every input field kept, with its type
        if isinstance(want, dict):
            assert {k: got[k] for k in want} == want


def test_cli_parquet_in_and_out_and_jsonl_to_parquet(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [r for r in bench.make_rows(300, tmp_path / "templates", bad_every=29) if isinstance(r, dict)]
    rows = [r for r in rows if isinstance(r["completion"], str | None)]  # Parquet: one type per column
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet", row_group_size=50)
    (tmp_path / "tools.json").write_text(json.dumps(bench.TOOLS), encoding="utf-8")
    r = _cli("in.parquet", "-o", "out.parquet", "--profile-column", "dialect", "--tools", "tools.json",
             "--batch-size", "40", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [o["id"] for o in out] == [x["id"] for x in rows]
    assert [o["error_kind"] for o in out] == [x["bad"] for x in rows]
    assert [len(json.loads(o["tool_calls"])) for o in out if not o["error"]] == [x["calls"] for x in rows
                                                                               if not x["bad"]]
    bench.write_input(rows, tmp_path)
    r = _cli("in.jsonl", "-o", "from-jsonl.parquet", "--profile-column", "dialect", "--tools", "tools.json",
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    again = pq.read_table(tmp_path / "from-jsonl.parquet")
    assert again.column("tool_calls").to_pylist() == [o["tool_calls"] for o in out]
    assert again.column("id").to_pylist() == [str(x["id"]) for x in rows]  # JSONL fields become text


def test_cli_bad_arguments_exit_2(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text('{"completion": "x"}\n', encoding="utf-8")
    assert _cli("in.jsonl", "-o", "out.csv", "--profile", "hermes", cwd=tmp_path).returncode == 2
    assert _cli("missing.jsonl", "-o", "out.jsonl", "--profile", "hermes", cwd=tmp_path).returncode == 2
    r = _cli("in.jsonl", "-o", "out.jsonl", "--profile", "hermes", "--text-column", "text", cwd=tmp_path)
    assert r.returncode == 2 and "'text'" in r.stderr and "in.jsonl" in r.stderr  # no line has the column
    assert not (tmp_path / "out.jsonl").exists()  # stopped before the first row
    (tmp_path / "in.jsonl").write_text('{"completion": "x"}\n{"text": "y"}\n', encoding="utf-8")
    r = _cli("in.jsonl", "-o", "out.jsonl", "--profile", "hermes", "--text-column", "text", cwd=tmp_path)
    assert r.returncode == 0  # a row without the text field is a row error, not a failed run
    kinds = [json.loads(line)["error_kind"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert kinds == ["text", None]


def test_doc_batch_example_runs_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """The pandas example of docs/batch.md (the Ray one starts a cluster; the README's examples run
    in tests/test_readme.py)."""
    text = (ROOT / "docs/batch.md").read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", text, flags=re.S)[0]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code], text=True, capture_output=True, cwd=tmp_path,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert time.perf_counter() - t0 < 60
