"""Every case of the project's own corpus (fixtures/corpus), through the public streaming API.

Each case is parsed

* whole (one ``feed``) and must equal the case's ``expected`` (``test_whole``);
* one character at a time, at every single split point (two chunks), and in five seeded random
  chunkings; each of these must give exactly the whole-text result, hence ``expected`` too;
* through ``autoparser.parse`` with a string and with a list of chunks.

Comparison follows the conformance rules (see tests/corpus.py). Needs nothing outside this repo.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from corpus import (
    CASE_KEYS,
    DIALECTS,
    check_stream_truncation,
    corpus_files,
    describe,
    expected,
    load_cases,
    normalize,
    random_chunking,
    run_chunked,
    seed_for,
    split_at,
    summarize,
)

CASES = load_cases()
IDS = [c["id"] for c in CASES]

BIG_DIALECTS = {
    "hermes", "qwen3-coder", "glm", "gemma4", "kimi-k2", "mistral", "harmony", "minimax-m2",
    "deepseek-v3.2", "pythonic", "llama3-json", "think",
}
MAX_INPUT_CHARS = 600  # every-split-point is O(n^2): keep cases short

cases = pytest.mark.parametrize("case", CASES, ids=IDS)
modes = pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])


def _show(result: dict[str, Any]) -> str:
    return json.dumps(result, ensure_ascii=False)


# ----------------------------------------------------------------------------- the corpus itself

def test_corpus_covers_every_dialect() -> None:
    by_dialect: dict[str, int] = {}
    for c in CASES:
        by_dialect[c["dialect"]] = by_dialect.get(c["dialect"], 0) + 1
    for d in DIALECTS:
        minimum = 6 if d in BIG_DIALECTS else 3
        assert by_dialect.get(d, 0) >= minimum, f"{d}: {by_dialect.get(d, 0)} cases, want >= {minimum}"
    files = {p.stem for p in corpus_files()}
    assert files == set(DIALECTS), f"unexpected corpus files: {sorted(files ^ set(DIALECTS))}"


def test_corpus_schema() -> None:
    seen: set[str] = set()
    for c in CASES:
        cid = c.get("id")
        assert set(c) == CASE_KEYS, f"{cid}: keys {sorted(c)}"
        assert cid not in seen, f"duplicate id {cid}"
        seen.add(cid)
        assert cid.startswith(f"own-{c['dialect']}-"), cid
        assert isinstance(c["input"], str)
        assert len(c["input"]) <= MAX_INPUT_CHARS, f"{cid}: input too long for every-split-point"
        assert c["reasoning"] in (None, "prefilled"), cid
        assert isinstance(c["notes"], str) and c["notes"].strip(), f"{cid}: notes missing"
        if c["tools"] is not None:
            assert isinstance(c["tools"], list) and c["tools"], cid
            for t in c["tools"]:
                assert t["type"] == "function" and isinstance(t["function"]["name"], str), cid
                assert t["function"]["parameters"]["type"] == "object", cid
        e = c["expected"]
        assert set(e) == {"reasoning", "content", "tool_calls"}, cid
        assert isinstance(e["reasoning"], str) and isinstance(e["content"], str), cid
        for tc in e["tool_calls"]:
            assert set(tc) == {"name", "arguments"}, cid
            assert isinstance(tc["name"], str) and tc["name"], cid
            assert isinstance(tc["arguments"], dict), cid


# ----------------------------------------------------------------------------- parsing

@modes
@cases
def test_whole(case: dict[str, Any], stream: bool) -> None:
    got = run_chunked(case, [case["input"]], stream)
    want = expected(case)
    if stream and got != want:
        check_stream_truncation(case, want)
        return
    assert got == want, (
        f"{case['id']} ({case['notes']})\n  input:    {case['input']!r}\n"
        f"  got:      {_show(got)}\n  expected: {_show(want)}"
    )


@modes
@cases
def test_char_by_char(case: dict[str, Any], stream: bool) -> None:
    whole = run_chunked(case, [case["input"]], stream)
    got = run_chunked(case, list(case["input"]), stream)
    assert got == whole, (
        f"{case['id']}: one-character chunks differ from the whole-text parse\n"
        f"  chars: {_show(got)}\n  whole: {_show(whole)}\n  expected: {_show(expected(case))}"
    )


@modes
@cases
def test_every_split_point(case: dict[str, Any], stream: bool) -> None:
    text = case["input"]
    whole = run_chunked(case, [text], stream)
    bad: list[str] = []
    for i in range(1, len(text)):
        got = run_chunked(case, [text[:i], text[i:]], stream)
        if got != whole:
            bad.append(f"split at {i} {describe([text[:i], text[i:]])}: {_show(got)}")
    assert not bad, (
        f"{case['id']}: {len(bad)} of {max(len(text) - 1, 0)} split points differ from the whole-text "
        f"parse {_show(whole)}; first ones:\n  " + "\n  ".join(bad[:5])
    )


@modes
@cases
def test_random_chunkings(case: dict[str, Any], stream: bool) -> None:
    text = case["input"]
    whole = run_chunked(case, [text], stream)
    for k in range(5):
        chunks = random_chunking(text, random.Random(seed_for(case["id"], k)))
        got = run_chunked(case, chunks, stream)
        assert got == whole, (
            f"{case['id']}: seeded chunking #{k} differs from the whole-text parse\n"
            f"  chunks: {describe(chunks, 40)}\n  got:   {_show(got)}\n  whole: {_show(whole)}"
        )


@cases
def test_parse_function(case: dict[str, Any]) -> None:
    import autoparser

    kwargs = {"tools": case["tools"], "reasoning": case["reasoning"], "stream_arguments": False}
    want = expected(case)
    res = autoparser.parse(case["input"], case["dialect"], **kwargs)
    assert normalize(summarize(res)) == want, f"{case['id']}: autoparser.parse(str, name)"
    chunks = split_at(case["input"], list(range(3, len(case["input"]), 3)))
    res = autoparser.parse(chunks, autoparser.get_profile(case["dialect"]), **kwargs)
    assert normalize(summarize(res)) == want, f"{case['id']}: autoparser.parse(list of chunks, profile)"
    res = autoparser.parse(chunks, case["dialect"], tools=case["tools"], reasoning=case["reasoning"])
    assert normalize(summarize(res)) == want, "default: fail-closed"
    res = autoparser.parse(chunks, case["dialect"], tools=case["tools"], reasoning=case["reasoning"],
                           stream_arguments=True)
    assert normalize(summarize(res)) == run_chunked(case, [case["input"]], True), "streaming"
