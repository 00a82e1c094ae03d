"""Helpers for the project's own parse corpus (``fixtures/corpus/<dialect>.json``).

Not a test module: ``test_corpus.py`` and ``test_properties.py`` import it. Everything here goes
through the public API only (``autoparser.get_profile(...).parser(...)``, ``feed``/``close``/
``result``), so the corpus proves the runtime exactly as a user drives it.

Comparison rules (identical to the conformance harness):

* ``reasoning`` and ``content``: runs of whitespace collapsed to one space, ends stripped;
* tool calls in order, by ``name`` and deep equality of ``arguments``; ids are not compared.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = ROOT / "fixtures" / "corpus"

# The package is not necessarily installed (a fresh clone runs `python -m pytest` from the root,
# but plain `pytest` only puts tests/ on sys.path). Make the working tree importable either way.
if importlib.util.find_spec("autoparser") is None:  # pragma: no cover - depends on the environment
    sys.path.insert(0, str(ROOT))

DIALECTS: tuple[str, ...] = (
    "hermes", "qwen3-coder", "glm", "gemma4", "kimi-k2", "mistral", "harmony", "minimax-m2",
    "minimax-m3", "think", "llama3-json", "pythonic", "deepseek-r1", "deepseek-v3", "deepseek-v3.1",
    "deepseek-v3.2", "deepseek-v4", "functiongemma", "granite", "phi4", "jamba", "command-r", "ernie",
)

CASE_KEYS = {"id", "dialect", "input", "tools", "reasoning", "expected", "notes"}


# ----------------------------------------------------------------------------- loading

def load_cases(dialect: str | None = None) -> list[dict[str, Any]]:
    """All corpus cases (or one dialect's), in file order, dialects in ``DIALECTS`` order."""
    names = [dialect] if dialect else list(DIALECTS)
    cases: list[dict[str, Any]] = []
    for name in names:
        path = CORPUS_DIR / f"{name}.json"
        if not path.exists():
            continue
        with path.open(encoding="utf-8") as f:
            cases.extend(json.load(f))
    return cases


def corpus_files() -> list[Path]:
    return sorted(CORPUS_DIR.glob("*.json"))


# ----------------------------------------------------------------------------- normalisation

def normalize(summary: dict[str, Any]) -> dict[str, Any]:
    """The conformance comparison form (autoparser.compare.normalize)."""
    from autoparser.compare import normalize as _normalize

    return _normalize(summary)


def summarize(res: Any) -> dict[str, Any]:
    """A ``Result`` as a plain mapping (not yet normalised)."""
    return {
        "reasoning": res.reasoning,
        "content": res.content,
        "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in res.tool_calls],
    }


def expected(case: dict[str, Any]) -> dict[str, Any]:
    return normalize(case["expected"])


# ----------------------------------------------------------------------------- running

def make_parser(case: dict[str, Any], **overrides: Any) -> Any:
    import autoparser

    prof = autoparser.get_profile(case["dialect"])
    kwargs = {"tools": case.get("tools"), "reasoning": case.get("reasoning")}
    kwargs.update(overrides)
    return prof.parser(**kwargs)


def feed_all(parser: Any, chunks: list[str]) -> tuple[list[Any], list[Any]]:
    """Feed every chunk, then close. Returns (events from feed() calls, events from close())."""
    fed: list[Any] = []
    for ch in chunks:
        fed.extend(parser.feed(ch))
    closed = list(parser.close())
    return fed, closed


def run_chunked(case: dict[str, Any], chunks: list[str], stream: bool = False) -> dict[str, Any]:
    """Parse ``case`` fed as ``chunks`` through the public API; return the normalised result.

    ``stream`` is the parser's ``stream_arguments``; the corpus's ``expected`` is the result of
    the fail-closed mode (False), which streaming mode equals except on calls cut off by the end
    of the output (see ``check_stream_truncation``).
    """
    assert "".join(chunks) == case["input"], "chunks must concatenate to the case input"
    p = make_parser(case, stream_arguments=stream)
    feed_all(p, chunks)
    return normalize(summarize(p.result()))


def check_stream_truncation(case: dict[str, Any], want: dict[str, Any]) -> None:
    """Streaming mode on output cut inside a call: ``want``'s complete calls, then that call as a call
    with status ``truncated`` (finish ``length``), its arguments taken from the text; the call's
    text, which was content in fail-closed mode, is not content."""
    p = make_parser(case, stream_arguments=True)
    feed_all(p, [case["input"]])
    res = p.result()
    got = normalize(summarize(res))
    assert res.finish == "length", case["id"]
    assert res.tool_calls and res.tool_calls[-1].status == "truncated", case["id"]
    assert got["tool_calls"][:-1] == want["tool_calls"], case["id"]
    assert want["content"].startswith(got["content"]), case["id"]
    last = res.tool_calls[-1]
    assert last.name in case["input"], case["id"]
    for key, value in last.arguments.items():
        assert key in case["input"], case["id"]
        assert not isinstance(value, str) or value in case["input"], case["id"]


def run_events(case: dict[str, Any], chunks: list[str]) -> tuple[list[Any], list[Any], Any]:
    """Like :func:`run_chunked` but returns (feed events, close events, raw Result)."""
    p = make_parser(case)
    fed, closed = feed_all(p, chunks)
    return fed, closed, p.result()


# ----------------------------------------------------------------------------- chunkings

def split_at(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(text))), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def random_chunking(text: str, rng: random.Random) -> list[str]:
    """Chunks of mixed sizes: mostly small (token-like), some large (coarse stream intervals)."""
    if len(text) < 2:
        return [text]
    cuts: list[int] = []
    pos = 0
    while True:
        pos += rng.choice((1, 1, 2, 3, 4, 5, 7, 11, 17, 40))
        if pos >= len(text):
            break
        cuts.append(pos)
    return split_at(text, cuts)


def seed_for(case_id: str, k: int) -> int:
    import zlib

    return zlib.crc32(f"{case_id}#{k}".encode())


# ----------------------------------------------------------------------------- events

def coalesce(events: list[Any]) -> list[tuple[Any, ...]]:
    """Events as comparable tuples, adjacent deltas of the same kind (and call index) merged.

    ``ToolCallStart.id`` is masked: ids may legitimately be generated per parser instance (ids are
    never compared by the harness). Everything else must be identical for every chunking.
    """
    from autoparser import events as ev

    out: list[tuple[Any, ...]] = []
    for e in events:
        if isinstance(e, ev.ReasoningDelta):
            key: tuple[Any, ...] = ("reasoning",)
            text = e.text
        elif isinstance(e, ev.ContentDelta):
            key = ("content",)
            text = e.text
        elif isinstance(e, ev.ToolCallArgsDelta):
            key = ("args", e.index)
            text = e.text
        elif isinstance(e, ev.ToolCallStart):
            out.append(("start", e.index, e.name, e.known))
            continue
        elif isinstance(e, ev.ToolCallEnd):
            out.append(("end", e.index, json.dumps(e.arguments, sort_keys=True), e.status))
            continue
        else:  # an event type this helper does not know: keep it verbatim
            out.append(("other", repr(e)))
            continue
        if text == "":
            continue
        if out and out[-1][:-1] == key:
            out[-1] = (*key, out[-1][-1] + text)
        else:
            out.append((*key, text))
    return out


def describe(chunks: list[str], limit: int = 12) -> str:
    """Short printable form of a chunking for assertion messages."""
    shown = chunks[:limit]
    more = "" if len(chunks) <= limit else f" ... (+{len(chunks) - limit} more)"
    return json.dumps(shown, ensure_ascii=False) + more
