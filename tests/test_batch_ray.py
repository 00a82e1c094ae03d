"""autoparser.batch on a real local Ray cluster (2 CPUs): ``map_batches(Parse)``, and
``autoparse batch --engine ray`` / ``autoparse scan --engine ray`` agreeing with the local engine.

Skipped when the ``[ray]`` extra is not installed. One cluster for the whole module (starting Ray
costs seconds); each test runs one small dataset.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sample_templates import HERMES_LIKE
from scripts_loader import load_script

ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")
pa = pytest.importorskip("pyarrow", reason="the [batch] extra is not installed")

ROOT = Path(__file__).resolve().parents[1]


bench = load_script("bench_batch")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import os

    cache = tmp_path_factory.mktemp("profile-cache")
    old = os.environ.get("AUTOPARSER_CACHE_DIR")
    os.environ["AUTOPARSER_CACHE_DIR"] = str(cache)  # the workers inherit it from the driver
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="warning",
             runtime_env={"env_vars": {"AUTOPARSER_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}})
    from ray.data import DataContext

    DataContext.get_current().enable_progress_bars = False
    DataContext.get_current().execution_options.preserve_order = True
    try:
        yield ray
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("AUTOPARSER_CACHE_DIR", None)
        else:
            os.environ["AUTOPARSER_CACHE_DIR"] = old


def test_map_batches_with_the_parse_class(cluster: Any, tmp_path: Path) -> None:
    from autoparser.batch import Parse

    rows = [r for r in bench.make_rows(200, tmp_path / "t", bad_every=13) if isinstance(r, dict)]
    rows = [{**r, "completion": r["completion"] if not isinstance(r["completion"], int) else None} for r in rows]
    table = pa.Table.from_pylist(rows)
    half = table.num_rows // 2
    ds = cluster.data.from_arrow([table.slice(0, half), table.slice(half)])  # two blocks, two actors
    out = ds.map_batches(Parse, fn_constructor_kwargs={"profile_column": "dialect", "tools": bench.TOOLS},
                         batch_format="pyarrow")
    got = pa.concat_tables(out.iter_batches(batch_format="pyarrow", batch_size=None)).to_pylist()
    assert got == Parse(profile_column="dialect", tools=bench.TOOLS)(table).to_pylist()
    assert [g["error_kind"] for g in got] == [r["bad"] if r["completion"] is not None else "text" for r in rows]


def test_cli_engines_agree_row_for_row(cluster: Any, tmp_path: Path) -> None:
    from autoparser.batch_cli import main_batch

    rows = bench.make_rows(500, tmp_path / "templates", bad_every=19)
    inp, tools = bench.write_input(rows, tmp_path)
    outs = {}
    for engine in ("local", "ray"):
        out = tmp_path / f"out-{engine}.jsonl"
        summary = io.StringIO()
        code = main_batch([str(inp), "-o", str(out), "--profile-column", "dialect", "--text-column", "completion",
                           "--tools", str(tools), "--engine", engine, "--batch-size", "50", "--json-summary"],
                          summary)
        assert code == 0
        assert json.loads(summary.getvalue())["rows"] == len(rows)
        assert bench.check_output(rows, out) == []
        outs[engine] = out.read_text(encoding="utf-8").splitlines()
    assert outs["ray"] == outs["local"]
    assert cluster.is_initialized()  # the command leaves a cluster it did not start running


def test_scan_on_ray_uses_the_cache(cluster: Any, tmp_path: Path) -> None:
    from autoparser.cli.analyze import main_scan

    for k in range(3):  # three copies of one template, one other template, one broken
        (tmp_path / f"same{k}.jinja").write_text(HERMES_LIKE, encoding="utf-8")
    (tmp_path / "other.jinja").write_text(bench.TEMPLATE, encoding="utf-8")
    (tmp_path / "broken.jinja").write_text(bench.BROKEN_TEMPLATE, encoding="utf-8")
    paths = sorted(str(p) for p in tmp_path.glob("*.jinja"))
    local, remote = io.StringIO(), io.StringIO()
    assert main_scan([*paths, "--json"], local) == 0
    assert main_scan([*paths, "--json", "--engine", "ray"], remote) == 0
    lrows = [json.loads(line) for line in local.getvalue().splitlines()]
    rrows = [json.loads(line) for line in remote.getvalue().splitlines()]
    assert [r["path"] for r in rrows] == paths
    assert all(r["cached"] for r in rrows if "error" not in r)  # the local scan filled the shared cache
    strip = ("cached", "ms")
    assert [{k: v for k, v in r.items() if k not in strip} for r in rrows] == \
           [{k: v for k, v in r.items() if k not in strip} for r in lrows]
    assert ["error" in r for r in rrows] == [p.endswith("broken.jinja") for p in paths]
