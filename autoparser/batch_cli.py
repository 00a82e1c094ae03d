"""``autoparse batch IN -o OUT``: parse a JSONL or Parquet file of completions, locally or on Ray.

Both engines run the same per-batch functions (:class:`autoparser.batch.Parse` on Arrow batches,
:func:`parse_lines` on JSON lines), so they agree row for row by construction; what differs is
who runs them:

- ``local``: this process streams the input (a JSON line or a Parquet row group at a time, in
  batches of ``--batch-size`` rows), so memory stays bounded by one batch, and writes as it goes.
- ``ray``: Ray Data reads the input, splits it into blocks of ``--batch-size`` rows and maps them
  on a pool of actors (one :class:`~autoparser.batch.Parse` per actor, so profiles are resolved
  once per actor); this process receives the blocks in input order and writes them.

JSON lines are kept as JSON: each output line is the input object with the output fields added,
so every input field survives with its own type. A line that is not a JSON object becomes an
output object with only the output fields, its ``error_kind`` being ``row``. Blank lines are
skipped by both engines. Parquet output from JSONL input needs one schema: a first pass collects
the field names, and input fields are stored as text (JSON text for non-strings).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .batch import OUTPUT_COLUMNS, Parse, ProfileResolver, RowError
from .cli import announce_cache, command, load_profile
from .errors import SourceError, UsageError

__all__ = ["ParseLines", "Stats", "check_columns", "main_batch", "parse_lines", "run_batch", "scan_paths_ray"]

_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".parquet": "parquet", ".pq": "parquet"}


def _format_of(path: str) -> str:
    fmt = _FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise UsageError(f"{path}: cannot tell the format from the extension (use .jsonl or .parquet)")
    return fmt


# -- the per-batch work both engines share -------------------------------------------------------

def parse_lines(parser: Parse, lines: list[str]) -> dict[str, list[Any]]:
    """JSON lines to output JSON lines, with each row's ``error_kind`` and ``call_status`` beside
    them (for the summary, without decoding the output again)."""
    rows: list[dict[str, Any]] = []
    bad: dict[int, str] = {}
    for line in lines:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            obj, why = None, f"the line is not valid JSON ({e})"
        else:
            why = f"the line is a JSON {type(obj).__name__}, not an object"
        if isinstance(obj, dict):
            rows.append(obj)
        else:
            bad[len(rows)] = why
            rows.append({})
    outs = parser.parse_rows(rows)
    error_key, kind_key, status_key = (parser.prefix + k for k in ("error", "error_kind", "call_status"))
    for k, why in bad.items():
        outs[k][error_key], outs[k][kind_key] = why, "row"
    return {"line": [json.dumps(o, ensure_ascii=False, default=str) for o in outs],
            "error_kind": [o[kind_key] for o in outs], "call_status": [o[status_key] for o in outs]}


class ParseLines:
    """:func:`parse_lines` as a Ray Data callable class on ``read_text`` blocks (column ``text``)."""

    def __init__(self, **options: Any) -> None:
        self.parser = Parse(**options)

    def __call__(self, table: Any) -> Any:
        import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]

        out = parse_lines(self.parser, table.column("text").to_pylist())
        return pa.table({k: pa.array(v, type=pa.string()) for k, v in out.items()})


# -- summary -------------------------------------------------------------------------------------

@dataclass
class Stats:
    rows: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    bytes_in: int = 0
    seconds: float = 0.0
    startup_seconds: float = 0.0  # starting (or joining) the Ray cluster, included in ``seconds``

    def add(self, error_kinds: list[Any], call_status: list[Any]) -> None:
        self.rows += len(error_kinds)
        self.errors.update(k for k in error_kinds if k is not None)
        for s in call_status:
            if s:
                self.calls.update(json.loads(s))

    def to_dict(self) -> dict[str, Any]:
        rate = self.rows / self.seconds if self.seconds else 0.0
        return {"rows": self.rows, "errors": dict(sorted(self.errors.items())),
                "calls": dict(sorted(self.calls.items())), "seconds": round(self.seconds, 3),
                "rows_per_second": round(rate, 1),
                "mb_per_second": round(self.bytes_in / 1e6 / self.seconds, 2) if self.seconds else 0.0,
                "startup_seconds": round(self.startup_seconds, 3)}

    def write(self, out: TextIO) -> None:
        d = self.to_dict()
        ray_start = f", of which {self.startup_seconds:.1f} s starting Ray" if self.startup_seconds else ""
        errs = ", ".join(f"{k} {v}" for k, v in d["errors"].items()) or "none"
        calls = ", ".join(f"{k} {v}" for k, v in d["calls"].items()) or "none"
        out.write(f"rows     {d['rows']}\nerrors   {sum(self.errors.values())} ({errs})\n"
                  f"calls    {sum(self.calls.values())} ({calls})\n"
                  f"speed    {d['rows_per_second']:.0f} rows/s, {d['mb_per_second']:.1f} MB/s "
                  f"({d['seconds']:.1f} s{ray_start})\n")


# -- reading and writing -------------------------------------------------------------------------

def _jsonl_chunks(path: str, size: int, progress: _Progress) -> Iterator[list[str]]:
    with open(path, "rb") as f:
        chunk: list[str] = []
        for raw in f:
            progress.advance(len(raw))
            chunk.append(raw.decode("utf-8", errors="replace"))
            if len(chunk) >= size:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


def _jsonl_fields(path: str) -> list[str]:
    """Every field name of a JSONL file, in order of first appearance (for a Parquet schema)."""
    names: dict[str, None] = {}
    with open(path, "rb") as f:
        for raw in f:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict):
                names.update(dict.fromkeys(obj))
    return list(names)


def _as_text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


class _Writer:
    """One output file; accepts line chunks (``parse_lines`` output) or Arrow tables."""

    def __init__(self, path: str, fields: list[str] | None) -> None:
        self.path = path
        self.format = _format_of(path)
        self.fields = fields
        self._pq: Any = None
        self._text: Any = open(path, "w", encoding="utf-8") if self.format == "jsonl" else None  # noqa: SIM115

    def write(self, chunk: Any) -> None:
        lines = chunk["line"] if isinstance(chunk, dict) else None
        if self.format == "jsonl":
            if lines is None:
                lines = [json.dumps(r, ensure_ascii=False, default=str) for r in chunk.to_pylist()]
            self._text.write("".join(line + "\n" for line in lines))
            return
        import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]
        import pyarrow.parquet as pq  # type: ignore[import-untyped, import-not-found, unused-ignore]

        if lines is not None:  # JSON rows into the fixed all-text schema
            rows = [json.loads(line) for line in lines]
            assert self.fields is not None
            chunk = pa.table({c: pa.array([_as_text(r.get(c)) for r in rows], type=pa.string())
                              for c in self.fields})
        if self._pq is None:
            self._pq = pq.ParquetWriter(self.path, chunk.schema)
        elif chunk.schema != self._pq.schema:  # e.g. a column that was all null in the first batch
            chunk = chunk.cast(self._pq.schema)
        self._pq.write_table(chunk)

    def close(self) -> None:
        if self._text is not None:
            self._text.close()
        if self._pq is not None:
            self._pq.close()
        elif self.format == "parquet" and self.fields is not None:  # no rows at all: still a valid file
            import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]
            import pyarrow.parquet as pq  # type: ignore[import-untyped, import-not-found, unused-ignore]

            pq.write_table(pa.table({c: pa.array([], type=pa.string()) for c in self.fields}), self.path)


class _Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.stream = total, stream
        self.on = stream.isatty() and total > 0
        self.done = 0
        self.rows = 0
        self._last = 0.0
        self._t0 = time.perf_counter()

    def advance(self, amount: int) -> None:
        self.done += amount

    def rows_done(self, rows: int) -> None:
        self.rows += rows
        if self.on and time.perf_counter() - self._last > 0.2:
            self._draw()

    def _draw(self) -> None:
        now = self._last = time.perf_counter()
        frac = min(self.done / self.total, 1.0)
        rate = self.rows / max(now - self._t0, 1e-9)
        self.stream.write(f"\r[{'#' * int(frac * 30):30}] {frac * 100:5.1f}%  {self.rows} rows  {rate:.0f} rows/s")
        self.stream.flush()

    def end(self) -> None:
        if self.on:
            self._draw()
            self.stream.write("\n")


# -- the engines ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class BatchJob:
    input: str
    output: str
    options: dict[str, Any]
    batch_size: int = 1000


def _out_fields(job: BatchJob) -> list[str] | None:
    """The all-text schema for JSONL in, Parquet out (``None`` for the other pairs)."""
    if _format_of(job.input) == "jsonl" and _format_of(job.output) == "parquet":
        prefix = job.options.get("prefix", "")
        outs = [prefix + c for c in OUTPUT_COLUMNS]
        return [c for c in _jsonl_fields(job.input) if c not in outs] + outs
    return None


def _write_all(job: BatchJob, chunks: Iterator[Any], stats: Stats, progress: _Progress) -> None:
    """Write the chunks (``parse_lines`` output or Arrow tables) as they come, counting them."""
    prefix = job.options.get("prefix", "")
    writer = _Writer(job.output, _out_fields(job))
    try:
        for chunk in chunks:
            writer.write(chunk)
            if isinstance(chunk, dict):
                kinds, status = chunk["error_kind"], chunk["call_status"]
            else:
                kinds, status = (chunk.column(prefix + k).to_pylist() for k in ("error_kind", "call_status"))
            stats.add(kinds, status)
            progress.rows_done(len(kinds))
    finally:
        writer.close()
    progress.end()


def _run_local(job: BatchJob, stats: Stats, stderr: TextIO) -> None:
    parser = Parse(**job.options)
    if _format_of(job.input) == "jsonl":
        progress = _Progress(Path(job.input).stat().st_size, stderr)
        chunks: Iterator[Any] = (parse_lines(parser, c) for c in _jsonl_chunks(job.input, job.batch_size, progress))
    else:
        import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]
        import pyarrow.parquet as pq  # type: ignore[import-untyped, import-not-found, unused-ignore]

        pf = pq.ParquetFile(job.input)
        progress = _Progress(pf.metadata.num_rows, stderr)

        def tables() -> Iterator[Any]:
            for rb in pf.iter_batches(batch_size=job.batch_size):
                progress.advance(rb.num_rows)
                yield parser(pa.Table.from_batches([rb]))

        chunks = tables()
    _write_all(job, chunks, stats, progress)


_STARTED: list[bool] = []  # whether this process started Ray (then it stops it at the end)


def _ray_init(address: str | None, num_cpus: int | None) -> Any:
    import ray  # type: ignore[import-untyped, import-not-found, unused-ignore]

    if not ray.is_initialized():
        _STARTED.append(True)
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "configure_logging": True, "logging_level": "warning"}
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=num_cpus, **kwargs)
    return ray


def _ray_workers(ray: Any) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _run_ray(job: BatchJob, stats: Stats, stderr: TextIO, address: str | None, num_cpus: int | None) -> None:
    t0 = time.perf_counter()
    ray = _ray_init(address, num_cpus)
    stats.startup_seconds = time.perf_counter() - t0
    from ray.data import DataContext  # type: ignore[import-untyped, import-not-found, unused-ignore]

    ctx = DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = stderr.isatty()
    if not stderr.isatty():  # the summary says what the per-operator log lines would
        import logging

        logging.getLogger("ray.data").setLevel(logging.WARNING)
    workers = _ray_workers(ray)
    # blocks are what actors share out: a few per worker, whatever the input's size
    size = Path(job.input).stat().st_size
    ctx.target_max_block_size = int(min(128 << 20, max(256 << 10, size // (4 * workers))))
    options = dict(job.options)
    if isinstance(options.get("tools"), str):  # a file named on this machine: send what it holds
        from .toolsfile import read_tools_file

        options["tools"] = read_tools_file(options["tools"])
    if isinstance(options.get("profile"), str):
        with contextlib.suppress(RowError):  # a bad one: every worker reports it for every row
            options["profile"] = ProfileResolver(known=options.get("known", True)).resolve(options["profile"])
    lines = _format_of(job.input) == "jsonl"
    fn: type[Parse | ParseLines] = ParseLines if lines else Parse
    source = str(Path(job.input).resolve())
    ds = ray.data.read_text(source) if lines else ray.data.read_parquet(source)
    # a pool that may shrink to one actor: a fixed pool holding every CPU would starve the read
    # tasks that feed it (a deadlock on a small cluster)
    ds = ds.map_batches(fn, fn_constructor_kwargs=options, batch_format="pyarrow", batch_size=job.batch_size,
                        compute=ray.data.ActorPoolStrategy(min_size=1, max_size=workers))
    tables = ds.iter_batches(batch_format="pyarrow", batch_size=None)
    if lines:
        tables = ({k: t.column(k).to_pylist() for k in ("line", "error_kind", "call_status")} for t in tables)
    _write_all(job, tables, stats, _Progress(0, stderr))  # Ray Data draws its own bars


def run_batch(job: BatchJob, *, engine: str = "local", address: str | None = None,
              num_cpus: int | None = None, stderr: TextIO | None = None) -> Stats:
    """Parse ``job.input`` into ``job.output``; returns the summary figures."""
    stderr = stderr or sys.stderr
    stats = Stats(bytes_in=Path(job.input).stat().st_size)
    t0 = time.perf_counter()
    if engine == "ray":
        try:
            _run_ray(job, stats, stderr, address, num_cpus)
        finally:
            _ray_stop()
    else:
        _run_local(job, stats, stderr)
    stats.seconds = time.perf_counter() - t0
    return stats


@command("autoparse batch")
def main_batch(argv: list[str], out: TextIO | None = None) -> int:
    from .specs import SPEC_HELP
    from .toolsfile import read_tools_file

    out = out or sys.stdout
    ap = argparse.ArgumentParser(prog="autoparse batch", description="Parse a JSONL or Parquet file of raw "
                                 "completions: reasoning, content and tool calls per row, as added columns.")
    ap.add_argument("input", help="a .jsonl or .parquet file")
    ap.add_argument("-o", "--output", required=True, help="a .jsonl or .parquet file (format by extension)")
    ap.add_argument("--text-column", default="completion", help="the column of raw model output (default: completion)")
    who = ap.add_mutually_exclusive_group(required=True)
    who.add_argument("--profile", metavar="SPEC", help=f"one profile for every row: {SPEC_HELP}")
    who.add_argument("--profile-column", help="a column naming each row's profile (same forms)")
    tools = ap.add_mutually_exclusive_group()
    tools.add_argument("--tools", metavar="FILE", help='JSON file with the tools of every row: a list, or a '
                       'request body with a "tools" list')
    tools.add_argument("--tools-column", help="a column with each row's tools (a list, or its JSON text)")
    ap.add_argument("--engine", choices=["local", "ray"], default="local")
    ap.add_argument("--address", help="Ray cluster address (default: start a local cluster)")
    ap.add_argument("--num-cpus", type=int, help="CPUs of the local Ray cluster (default: all)")
    ap.add_argument("--batch-size", type=int, default=1000, help="rows per batch (default: 1000)")
    ap.add_argument("--prefix", default="", help="put this before the output column names")
    ap.add_argument("--pure", action="store_true", help="derive profiles from templates without builtin rules")
    ap.add_argument("--json-summary", action="store_true", help="print the summary as one JSON object")
    a = ap.parse_args(argv)
    for path in (a.input, a.output):
        _format_of(path)
    if not Path(a.input).is_file():
        raise SourceError(a.input, "is a directory, expected a file" if Path(a.input).is_dir()
                          else "no such file")
    tool_list = read_tools_file(a.tools) if a.tools else None
    if a.engine == "ray":
        import ray  # noqa: F401  (missing: exit 2 with the extra to install, before any work)
    columns = [c for c in (a.text_column, a.profile_column, a.tools_column) if c]
    check_columns(a.input, columns)
    profile = None
    if a.profile:  # one profile for every row: a bad one is a bad command, not a million bad rows
        profile = load_profile(a.profile, known=not a.pure, prog="autoparse batch")
    else:
        announce_cache("autoparse batch")
    options = {"text_column": a.text_column, "profile": profile, "profile_column": a.profile_column,
               "tools": tool_list, "tools_column": a.tools_column, "known": not a.pure, "prefix": a.prefix}
    job = BatchJob(a.input, a.output, options, max(1, a.batch_size))
    stats = run_batch(job, engine=a.engine, address=a.address, num_cpus=a.num_cpus)
    if a.json_summary:
        out.write(json.dumps(stats.to_dict()) + "\n")
    else:
        stats.write(out)
    return 0


def check_columns(path: str, columns: list[str]) -> None:
    """Raise :class:`~autoparser.errors.UsageError` when the input has none of a named column.

    A Parquet file has a schema. In JSON lines, a column exists when at least one line has it (a
    line without it is a row error, as a null would be); lines are decoded only when they contain
    the column's name as a JSON string, so the usual case (the first line has every column) costs
    one line, and a missing column one cheap pass over the file.
    """
    if not columns:
        return
    if _format_of(path) == "parquet":
        import pyarrow.parquet as pq  # type: ignore[import-untyped, import-not-found, unused-ignore]

        try:
            names = set(pq.read_schema(path).names)
        except Exception as exc:  # pyarrow raises its own error types for a file that is not Parquet
            raise SourceError(path, f"not a readable Parquet file ({exc})") from None
        missing = [c for c in columns if c not in names]
        if missing:
            raise UsageError(f"{path} has no column {missing[0]!r} (its columns: {', '.join(sorted(names))})")
        return
    wanted = {c: {json.dumps(c, ensure_ascii=escaped).encode("utf-8") for escaped in (True, False)} for c in columns}
    fields: list[str] | None = None  # of the first object line, for the message
    with open(path, "rb") as f:
        for raw in f:
            hits = [c for c, keys in wanted.items() if any(key in raw for key in keys)]
            if not hits and fields is not None:
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(obj, dict):
                continue
            if fields is None:
                fields = list(obj)
            for c in hits:
                if c in obj:
                    del wanted[c]
            if not wanted:
                return
    if fields is None:  # no row at all (an empty file, or only bad lines): nothing to miss
        return
    absent = next(iter(wanted))
    raise UsageError(f"{path}: no line has the field {absent!r} (the first line has: {', '.join(fields)})")


def _ray_stop() -> None:
    if _STARTED:
        import ray  # type: ignore[import-untyped, import-not-found, unused-ignore]

        _STARTED.clear()
        ray.shutdown()


# -- scan on Ray ---------------------------------------------------------------------------------

def scan_paths_ray(paths: list[str], row_of: Any, *, address: str | None = None,
                   num_cpus: int | None = None) -> list[dict[str, Any]]:
    """``row_of(path)`` for every path on Ray actors, in order; each goes through the profile cache."""
    ray = _ray_init(address, num_cpus)
    from ray.data import DataContext  # type: ignore[import-untyped, import-not-found, unused-ignore]

    DataContext.get_current().execution_options.preserve_order = True
    DataContext.get_current().enable_progress_bars = False
    ds = ray.data.from_items([{"path": p} for p in paths],
                             override_num_blocks=min(len(paths), 4 * _ray_workers(ray)))

    def one(row: dict[str, Any]) -> dict[str, Any]:
        return {"row": json.dumps(row_of(row["path"]))}

    try:
        return [json.loads(r["row"]) for r in ds.map(one).iter_rows()]
    finally:
        _ray_stop()
