"""Parsing a dataset of completions: one batch in, the same batch with the parse added.

Why: evals, distillation sets and RL rollouts hold millions of raw completions from many models.
:func:`parse_batch` takes a batch in any of the shapes Ray Data's ``map_batches`` hands over (a
``pyarrow.Table``, a ``pandas.DataFrame``, a dict of columns) or a list of row dicts, and returns
the same shape with every input column and these added (names prefixed by ``prefix``):

=============  =====================================================================================
``reasoning``  the reasoning text (``null`` when the row has an error)
``content``    the content text
``tool_calls`` JSON text: the calls in OpenAI Chat Completions shape (``[]`` when none)
``call_status`` JSON text: each call's status (``ok``, ``repaired``, ``truncated``, ``invalid``)
``finish``     ``stop``, ``tool_calls`` or ``length``
``issues``     JSON text: what lenient parsing repaired (``code``, ``message``, ``position``)
``error``      ``null``, or why this row could not be parsed
``error_kind`` ``null``, or one of :data:`ERROR_KINDS`
=============  =====================================================================================

Rules:

- A bad row never stops the batch: a null or non-string text, an unknown dialect, a template that
  cannot be analysed, a tools value that is not a list all give that row an ``error`` (and
  ``error_kind``) and leave the other rows alone. Only a bad *call* raises (a missing column, an
  output column that already exists, no profile at all), before any row is parsed.
- Each distinct profile is resolved once per :class:`Parse` instance (so once per Ray worker),
  and templates go through the on-disk profile cache (:mod:`autoparser.cache`).
- Output is a pure function of the row: rows can be processed in any grouping, by any number of
  workers, and give the same columns.

This module imports neither pyarrow nor pandas: it works with the batch's own methods.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import AutoparserError, UsageError
from .profile import Profile

__all__ = ["ERROR_KINDS", "OUTPUT_COLUMNS", "Parse", "ProfileResolver", "RowError", "parse_batch"]

OUTPUT_COLUMNS = ("reasoning", "content", "tool_calls", "call_status", "finish", "issues", "error", "error_kind")

# why a row has no parse: its text, its profile spec, its template, its tools, or the parser itself
ERROR_KINDS = ("text", "profile", "template", "tools", "row", "internal")



class RowError(Exception):
    """Why one row cannot be parsed; ``kind`` is one of :data:`ERROR_KINDS`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class ProfileResolver:
    """Profile specs (a dialect name, a profile ``.json``, a model dir / ``.gguf`` / ``.jinja``)
    to profiles, each resolved once; failures are remembered too, so a million rows naming a
    missing model cost one lookup."""

    def __init__(self, *, known: bool = True, cache: Any = None) -> None:
        self.known = known
        self._cache = cache
        self._memo: dict[str, Profile | RowError] = {}

    def resolve(self, spec: object) -> Profile:
        if isinstance(spec, Profile):
            return spec
        if spec is None or (isinstance(spec, float) and spec != spec):  # null, or pandas' NaN
            raise RowError("profile", "no profile: the profile column is null")
        if not isinstance(spec, str):
            raise RowError("profile", f"profile must be a string, got {type(spec).__name__}")
        got = self._memo.get(spec)
        if got is None:
            try:
                got = self._load(spec)
            except RowError as e:
                got = e
            self._memo[spec] = got
        if isinstance(got, RowError):
            raise got
        return got

    def _load(self, spec: str) -> Profile:
        """Through :func:`autoparser.specs.load_spec` (the sources every command accepts); a spec
        that names nothing is a ``profile`` error, a template that cannot be analysed a
        ``template`` error."""
        from .specs import load_spec, source_of

        try:
            source, _ = source_of(spec)
            if not source.derived:
                return load_spec(spec)
        except AutoparserError as e:
            raise RowError("profile", str(e)) from None
        try:
            if self._cache is None:
                from .cache import default_cache

                self._cache = default_cache()
            return load_spec(spec, known=self.known, cache=self._cache)
        except ModuleNotFoundError as e:  # jinja2 (or gguf) missing in this installation
            raise RowError("template", f"cannot analyse {spec}: {e.name} is not installed") from None
        except AutoparserError as e:
            raise RowError("template", f"cannot analyse {spec}: {e}") from None


_MISSING = object()  # a JSON row without the text field


def _text_of(value: object) -> str:
    if isinstance(value, str):
        return value
    if value is _MISSING:
        raise RowError("text", "the row has no text field")
    if value is None or (isinstance(value, float) and value != value):
        raise RowError("text", "the text is null")
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RowError("text", f"the text is bytes that are not UTF-8 ({e.reason} at {e.start})") from None
    raise RowError("text", f"the text must be a string, got {type(value).__name__}")


def _tools_of(value: object) -> list[Any] | None:
    """A row's tools: a list of tool definitions (or a request body with a "tools" list), its
    JSON text, or null for none."""
    from .toolsfile import tools_from_json

    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as e:
            raise RowError("tools", f"the tools value is not valid JSON ({e})") from None
        if value is None:
            return None
    if hasattr(value, "tolist") and not isinstance(value, list | tuple | dict):  # numpy arrays
        value = value.tolist()
    try:
        return tools_from_json(list(value) if isinstance(value, tuple) else value)
    except ValueError as e:
        raise RowError("tools", f"bad tools value: {e}") from None


def _row_output(text: object, profile: Profile, tools: list[Any] | None) -> tuple[Any, ...]:
    from .openai import tool_calls_from_result
    from .parse import parse

    body = _text_of(text)
    try:
        res = parse(body, profile, tools=tools)
    except (TypeError, ValueError, AutoparserError) as e:  # the parser rejected the tools
        raise RowError("tools", f"tools rejected: {e}") from None
    return (res.reasoning, res.content, json.dumps(tool_calls_from_result(res), ensure_ascii=False),
            json.dumps([c.status for c in res.tool_calls]), res.finish,
            json.dumps([i.to_dict() for i in res.issues], ensure_ascii=False), None, None)


_ERROR_ROW: tuple[Any, ...] = (None,) * 6


@dataclass(frozen=True)
class _Source:
    """Where each row's profile and tools come from."""

    profile: Profile | str | None
    profile_column: str | None
    tools: list[Any] | None
    tools_column: str | None


class Parse:
    """A callable for ``ray.data.Dataset.map_batches``: the constructor runs once per worker (so
    profiles are resolved once per worker), each call parses one batch.

    >>> ds.map_batches(Parse, fn_constructor_kwargs={"profile_column": "model"},
    ...                batch_format="pyarrow")   # doctest: +SKIP

    ``profile`` is one profile for every row (a :class:`Profile`, or a spec as in a profile
    column); ``profile_column`` names each row's spec instead. ``tools`` is one list for every
    row, or a path to a JSON file holding it; ``tools_column`` names each row's tools (a list, or
    its JSON text). ``prefix`` is put before every output column name.
    """

    def __init__(self, *, text_column: str = "completion", profile: Profile | str | None = None,
                 profile_column: str | None = None, tools: Sequence[Any] | str | os.PathLike[str] | None = None,
                 tools_column: str | None = None, known: bool = True, prefix: str = "",
                 cache: Any = None) -> None:
        if (profile is None) == (profile_column is None):
            raise UsageError("give exactly one of profile= (one for all rows) or profile_column=")
        if tools is not None and tools_column is not None:
            raise UsageError("give at most one of tools= and tools_column=")
        self.text_column = text_column
        self.prefix = prefix
        self.columns = tuple(prefix + c for c in OUTPUT_COLUMNS)
        self._profiles = ProfileResolver(known=known, cache=cache)
        self._source = _Source(profile, profile_column, _load_tools(tools), tools_column)
        if profile is not None:  # one profile: resolve it now (a bad one fails every row alike)
            with contextlib.suppress(RowError):
                self._profiles.resolve(profile)

    # -- the per-row core ---------------------------------------------------------------------
    def rows(self, texts: Sequence[object], profiles: Sequence[object] | None,
             tools: Sequence[object] | None) -> list[tuple[Any, ...]]:
        """One output tuple (in :data:`OUTPUT_COLUMNS` order) per row."""
        src = self._source
        out = []
        for i, text in enumerate(texts):
            try:
                spec = profiles[i] if profiles is not None else src.profile
                prof = self._profiles.resolve(spec)
                row_tools = _tools_of(tools[i]) if tools is not None else src.tools
                out.append(_row_output(text, prof, row_tools))
            except RowError as e:
                out.append((*_ERROR_ROW, e.message, e.kind))
            except Exception as e:  # a parser bug must not stop a million-row batch either
                out.append((*_ERROR_ROW, f"{type(e).__name__}: {e}", "internal"))
        return out

    def columns_for(self, texts: Sequence[object], profiles: Sequence[object] | None,
                    tools: Sequence[object] | None) -> dict[str, list[Any]]:
        rows = self.rows(texts, profiles, tools)
        return {name: [r[k] for r in rows] for k, name in enumerate(self.columns)}

    # -- batch shapes -------------------------------------------------------------------------
    def __call__(self, batch: Any) -> Any:
        """The batch with the output columns added, in the batch's own shape."""
        module = type(batch).__module__.split(".")[0]
        if module == "pyarrow":
            return self._arrow(batch)
        if module == "pandas":
            return self._pandas(batch)
        if isinstance(batch, Mapping):
            return self._dict(batch)
        if isinstance(batch, list):
            return self.parse_rows(batch)
        raise TypeError(f"expected a pyarrow.Table, pandas.DataFrame, dict of columns or list of rows, "
                        f"got {type(batch).__name__}")

    def _check_names(self, names: Iterable[str]) -> None:
        have, s = set(names), self._source
        missing = [c for c in (self.text_column, s.profile_column, s.tools_column) if c is not None and c not in have]
        if missing:
            raise UsageError(f"the batch has no column {missing[0]!r} (it has {sorted(have)})")
        clash = [c for c in self.columns if c in have]
        if clash:
            raise UsageError(f"the batch already has a column {clash[0]!r}; pass prefix= (--prefix) "
                             "to name the output columns apart")

    def _inputs(self, get: Any) -> tuple[Sequence[object], Sequence[object] | None, Sequence[object] | None]:
        s = self._source
        return (get(self.text_column), get(s.profile_column) if s.profile_column else None,
                get(s.tools_column) if s.tools_column else None)

    def _arrow(self, table: Any) -> Any:
        import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]

        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        self._check_names(table.column_names)
        cols = self.columns_for(*self._inputs(lambda c: table.column(c).to_pylist()))
        for name, values in cols.items():
            table = table.append_column(name, pa.array(values, type=pa.string()))
        return table

    def _pandas(self, frame: Any) -> Any:
        self._check_names(frame.columns)
        cols = self.columns_for(*self._inputs(lambda c: frame[c].tolist()))
        return frame.assign(**cols)

    def _dict(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        self._check_names(batch.keys())
        cols = self.columns_for(*self._inputs(lambda c: list(batch[c])))
        return {**batch, **cols}

    def parse_rows(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Row dicts (a JSON line each) with the output fields added; a row missing the text,
        profile or tools field gets the same error as a null one."""
        clash = next((c for r in rows for c in self.columns if c in r), None)
        if clash is not None:
            raise UsageError(f"a row already has a field {clash!r}; pass prefix= (--prefix) to name the "
                             "output fields apart")
        s = self._source
        outs = self.rows([r.get(self.text_column, _MISSING) for r in rows],
                         [r.get(s.profile_column) for r in rows] if s.profile_column else None,
                         [r.get(s.tools_column) for r in rows] if s.tools_column else None)
        return [{**r, **dict(zip(self.columns, o, strict=True))} for r, o in zip(rows, outs, strict=True)]


def _load_tools(tools: Sequence[Any] | str | os.PathLike[str] | None) -> list[Any] | None:
    """``tools=``: a list (or a request body with a "tools" list), or the path of a JSON file
    holding either (:func:`autoparser.toolsfile.read_tools_file`)."""
    from .toolsfile import read_tools_file, tools_from_json

    if tools is None:
        return None
    if isinstance(tools, str | os.PathLike):
        return read_tools_file(tools)
    try:
        return tools_from_json(list(tools) if isinstance(tools, tuple) else tools)
    except ValueError as e:
        raise UsageError(f"tools=: {e}") from None


def parse_batch(batch: Any, **options: Any) -> Any:
    """``Parse(**options)(batch)``: for one batch; make one :class:`Parse` to reuse its profiles."""
    return Parse(**options)(batch)
