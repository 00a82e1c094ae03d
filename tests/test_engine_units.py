"""Unit tests for the engine's building blocks, each fed at every split point.

Each block is driven the way the machine drives it (the unread tail of one call is fed again with
the next chunk), whole, split in two at every position and one character at a time, and the
result must equal a value written here by hand (or, for marker search, an independent naive
search over the whole text). The blocks: marker search (``MarkerSet.scan``/``match_at``/
``holdback``), the bracket scanner (``BalancedScanner``), each codec body (``make_body``: json,
name_json, name_json relaxed, tagged, pythonic), the JSON argument transcoder (``JsonArgStream``)
and each mode of the machine (a small profile per mode, through ``Parser``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autoparser
from autoparser import coalesce
from autoparser.engine.argstream import JsonArgStream
from autoparser.engine.codecs import Body, make_body
from autoparser.engine.machine import _compiled
from autoparser.engine.markers import Kind, MarkerSet, Match
from autoparser.engine.scanner import BalancedScanner
from autoparser.events import ContentDelta, ReasoningDelta, ToolCallArgsDelta, ToolCallEnd, ToolCallStart


def chunkings(text: str) -> Iterator[list[str]]:
    """The whole text, every split into two pieces, and one character at a time."""
    yield [text]
    for k in range(1, len(text)):
        yield [text[:k], text[k:]]
    yield list(text)


# -- marker search ---------------------------------------------------------------------------------

TAGS = MarkerSet([("<tool_call>", Kind.call), ("</tool_call>", Kind.c_close), ("<tool", Kind.strip),
                  ("<think>", Kind.r_open)])


def read_markers(ms: MarkerSet, chunks: list[str]) -> list[tuple[str, ...]]:
    """Text and markers as a mode handler reads them: scan, write the certain text, keep the rest."""
    out: list[tuple[str, ...]] = []
    carry = ""
    for n, chunk in enumerate([*chunks, ""]):
        final = n == len(chunks)
        w = carry + chunk
        i = 0
        while True:
            m, safe = ms.scan(w, i, final)
            if m is None:
                if safe > i:
                    out.append(("text", w[i:safe]))
                i = safe
                break
            assert m.start >= i
            if m.start > i:
                out.append(("text", w[i:m.start]))
            out.append(("marker", m.marker, m.kind.value))
            i = m.end
        carry = w[i:]
    assert carry == ""
    merged: list[tuple[str, ...]] = []
    for item in out:
        if item[0] == "text" and merged and merged[-1][0] == "text":
            merged[-1] = ("text", merged[-1][1] + item[1])
        else:
            merged.append(item)
    return merged


def naive_markers(pairs: list[tuple[str, Kind]], text: str) -> list[tuple[str, ...]]:
    """The same reading, by brute force over the whole text: at each position the longest marker."""
    out: list[tuple[str, ...]] = []
    i = 0
    buf = ""
    while i < len(text):
        hits = [(m, k) for m, k in pairs if text.startswith(m, i)]
        if hits:
            m, k = max(hits, key=lambda h: len(h[0]))
            if buf:
                out.append(("text", buf))
                buf = ""
            out.append(("marker", m, k.value))
            i += len(m)
        else:
            buf += text[i]
            i += 1
    if buf:
        out.append(("text", buf))
    return out


MARKER_TEXT = "a<tool_call>b</tool_call><toolx<think>y</tool_c<<tool_ca"


def test_marker_scan_reads_the_same_at_every_split() -> None:
    want = [("text", "a"), ("marker", "<tool_call>", "call"), ("text", "b"),
            ("marker", "</tool_call>", "c_close"), ("marker", "<tool", "strip"), ("text", "x"),
            ("marker", "<think>", "r_open"), ("text", "y</tool_c<"), ("marker", "<tool", "strip"),
            ("text", "_ca")]
    for chunks in chunkings(MARKER_TEXT):
        assert read_markers(TAGS, chunks) == want, chunks


_ALPHABET = "<>/tolca_hink x"
_PAIRS = [("<tool_call>", Kind.call), ("</tool_call>", Kind.c_close), ("<tool", Kind.strip),
          ("<think>", Kind.r_open), ("<t", Kind.look)]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=40), st.data())
def test_marker_scan_equals_a_naive_search(text: str, data: st.DataObject) -> None:
    ms = MarkerSet(_PAIRS)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert read_markers(ms, chunks) == naive_markers(_PAIRS, text)


def naive_holdback(markers: list[str], text: str, pos: int) -> int:
    for k in range(pos, len(text)):
        tail = text[k:]
        if any(m.startswith(tail) and len(tail) < len(m) for m in markers):
            return k
    return len(text)


def test_holdback_keeps_exactly_a_marker_prefix() -> None:
    assert TAGS.holdback("abc<to") == 3
    assert TAGS.holdback("abc<") == 3
    assert TAGS.holdback("abc</tool_cal") == 3
    assert TAGS.holdback("abc<x") == 5
    assert TAGS.holdback("<tool_call") == 0
    assert TAGS.holdback("no marker") == 9
    assert TAGS.holdback("a<", 2) == 2  # nothing before pos is held


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=30), st.integers(0, 30))
def test_holdback_equals_a_naive_suffix_search(text: str, pos: int) -> None:
    pos = min(pos, len(text))
    ms = MarkerSet(_PAIRS)
    assert ms.holdback(text, pos) == naive_holdback([m for m, _ in _PAIRS], text, pos)


def test_match_at_answers_marker_maybe_or_no() -> None:
    r = TAGS.match_at("x<tool_call>y", 1)
    assert isinstance(r, Match) and (r.start, r.end, r.marker, r.kind) == (1, 12, "<tool_call>", Kind.call)
    assert TAGS.match_at("x<tool_c", 1) is True             # may still become <tool_call>
    assert TAGS.match_at("x<tool", 1) is True               # <tool, or the start of <tool_call>
    r = TAGS.match_at("x<tool", 1, final=True)              # the stream ended: it is <tool
    assert isinstance(r, Match) and r.kind is Kind.strip
    assert TAGS.match_at("x<tox", 1) is None
    assert TAGS.match_at("x<tool_call>", 0) is None
    # at every split, the whole-text answer is the one a reader waiting for more text reaches
    for chunks in chunkings("<tool_call>"):
        w = ""
        for n, chunk in enumerate(chunks):
            w += chunk
            r = TAGS.match_at(w, 0, final=False)
            if n < len(chunks) - 1:
                assert r is True, w
        assert isinstance(r, Match) and r.marker == "<tool_call>"


# -- bracket scanner ---------------------------------------------------------------------------------

def scan_value(chunks: list[str], scanner: BalancedScanner) -> tuple[str, int, str]:
    """(status, index in the whole text, text consumed) of a value fed chunk by chunk."""
    carry = ""
    consumed = 0
    for n, chunk in enumerate([*chunks, ""]):
        final = n == len(chunks)
        w = carry + chunk
        status, j = scanner.feed(w, 0, final)
        if status != "more":
            return status, consumed + j, scanner.text()
        consumed += j
        carry = w[j:]
    return "more", consumed, scanner.text()


STOPS = MarkerSet([("</call>", Kind.stop)])


@pytest.mark.parametrize(("text", "want"), [
    ('{"a": "}]", "b": [1, {"c": "\\""}]} tail', ("done", 34, '{"a": "}]", "b": [1, {"c": "\\""}]}')),
    ('[1, [2, [3]]], rest', ("done", 13, "[1, [2, [3]]]")),
    ('{"a": 1</call>', ("stop", 7, '{"a": 1')),
    ('{"a": "</call>"}</call>', ("done", 16, '{"a": "</call>"}')),  # inside a string it is no marker
    ('{"a": ]', ("error", 6, '{"a": ')),
    ('{"a": [1, 2', ("more", 11, '{"a": [1, 2')),
])
def test_scanner_finds_the_end_at_every_split(text: str, want: tuple[str, int, str]) -> None:
    for chunks in chunkings(text):
        assert scan_value(chunks, BalancedScanner("{[", (('"', '"', True),), STOPS)) == want, chunks


def test_scanner_bounds_a_value_cut_by_its_end_marker() -> None:
    sc = BalancedScanner("{[", (('"', '"', True),), STOPS)
    status, _, _ = scan_value(['{"a": [1', ", 2</call>"], sc)
    assert sc.bounded(status) == ('{"a": [1, 2]}', True)  # type: ignore[arg-type]


def test_scanner_python_strings_and_parentheses() -> None:
    text = "[f(a=')', b=\"]\"), g()] x"
    for chunks in chunkings(text):
        sc = BalancedScanner("[(", (('"', '"', True), ("'", "'", True)))
        assert scan_value(chunks, sc) == ("done", 22, "[f(a=')', b=\"]\"), g()]"), chunks


# -- codec bodies ----------------------------------------------------------------------------------

def run_body(dialect: str, chunks: list[str], schemas: dict[str, Any] | None = None,
             streaming: bool = True) -> tuple[str, str, list[tuple[str, dict[str, Any], str]], str | None]:
    """Feed a call body the way the region handler does; (status, text after the body, calls as
    (name, arguments, status), the argument JSON streamed or None)."""
    prof = autoparser.get_profile(dialect)
    t = prof.tools
    assert t is not None
    c = _compiled(prof)
    body: Body = make_body(t.codec, c.body_stops, schemas or {}, False, t.partial_values, c.header_stops,
                           streaming=streaming)
    carry = ""
    sent: list[str] | None = None
    status = "more"
    w = ""
    i = 0
    n = 0
    for n, chunk in enumerate([*chunks, ""]):  # n: where the body ended
        final = n == len(chunks)
        w = carry + chunk
        i = 0
        while True:
            status, j = body.feed(w, i, final)
            if body.streaming and body.call_name is not None:
                if sent is None:
                    sent = []
                sent.append(body.take_args())
            if status != "more" or j == i or (j == len(w) and not final):
                i = j
                break
            i = j
        if status != "more":
            break
        carry = w[i:]
    if sent is not None:
        sent.append(body.take_args() + body.args_closing())
    calls = [(call.name, call.arguments, call.status) for call in body.calls]
    return status, w[i:] + "".join(chunks[n + 1:]), calls, ("".join(sent) if sent is not None else None)


def check_body(dialect: str, text: str, want_calls: list[tuple[str, dict[str, Any], str]], rest: str,
               schemas: dict[str, Any] | None = None, streaming: bool = True) -> None:
    for chunks in chunkings(text):
        status, after, calls, sent = run_body(dialect, chunks, schemas, streaming)
        assert (status, after, calls) == ("done", rest, want_calls), chunks
        if sent:  # what streamed is the arguments, as JSON (nothing streamed: sent whole at the end)
            assert json.loads(sent) == want_calls[0][1], (chunks, sent)


def test_json_body() -> None:
    check_body("hermes", '\n{"name": "search_docs", "arguments": {"query": "refund policy", "limit": 3}}\n</tool_call>',
               [("search_docs", {"query": "refund policy", "limit": 3}, "ok")], "\n</tool_call>")


def test_json_body_repairs_braces_its_end_marker_bounds() -> None:
    check_body("hermes", '{"name": "f", "arguments": {"x": [1, 2]</tool_call>',
               [("f", {"x": [1, 2]}, "repaired")], "</tool_call>")


def test_name_json_body() -> None:
    check_body("mistral", 'fetch_stock_price[ARGS]{"ticker": "ASML", "exchange": "AEX"}',
               [("fetch_stock_price", {"ticker": "ASML", "exchange": "AEX"}, "ok")], "")


def test_name_json_relaxed_body() -> None:
    check_body("gemma4", 'call:translate_text{text:<|"|>Good, {morning}<|"|>,n:5,ok:true}<tool_call|>',
               [("translate_text", {"text": "Good, {morning}", "n": 5, "ok": True}, "ok")], "<tool_call|>")


THERMOSTAT = {"set_thermostat": {"type": "object", "properties": {
    "zone": {"type": "string"}, "celsius": {"type": "number"}, "hold": {"type": "boolean"}}}}


def test_tagged_body_typed_by_the_schema() -> None:
    text = ("\n<function=set_thermostat>\n<parameter=zone>\nliving room\n</parameter>\n<parameter=celsius>\n"
            "21.5\n</parameter>\n<parameter=hold>\nfalse\n</parameter>\n</function>\n</tool_call>")
    check_body("qwen3-coder", text, [("set_thermostat", {"zone": "living room", "celsius": 21.5, "hold": False},
                                      "ok")], "\n</tool_call>", THERMOSTAT)
    # without a schema every value is the string written
    check_body("qwen3-coder", text, [("set_thermostat", {"zone": "living room", "celsius": "21.5", "hold": "false"},
                                      "ok")], "\n</tool_call>")


def test_pythonic_body() -> None:
    check_body("pythonic", '[search_docs(query="a, b)", limit=5), f(a=[1, "x"], b=None)] after',
               [("search_docs", {"query": "a, b)", "limit": 5}, "ok"), ("f", {"a": [1, "x"], "b": None}, "ok")],
               " after", streaming=False)


# -- JSON argument transcoder -------------------------------------------------------------------------

def transcode(chunks: list[str], **kw: Any) -> tuple[JsonArgStream, list[str]]:
    stream = JsonArgStream(**kw)
    sent: list[str] = []
    for chunk in chunks:
        stream.feed(chunk)
        sent.append(stream.take())
        if stream.started:
            # at every point, what was sent closes into valid JSON
            json.loads("".join(sent) + stream.closing())
    return stream, sent


ARGS_TEXT = '{"city": "Paris",  "days": 3, "tags": ["a", "b\\n\\u00e9"], "ok": true, "n": null}'


def test_argstream_arguments_object_at_every_split() -> None:
    want = '{"city": "Paris", "days": 3, "tags": ["a", "b\\n\u00e9"], "ok": true, "n": null}'
    for chunks in chunkings(ARGS_TEXT):
        stream, sent = transcode(chunks, whole_call=False)
        assert "".join(sent) == want, chunks
        assert stream.complete and stream.closing() == ""


@pytest.mark.parametrize("text,call_id", [
    ('{"id": "c7", "name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}', "c7"),
    # written after the arguments began: a streamed call was announced without it
    ('{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}, "id": "c7"}', None),
])
def test_argstream_whole_call_at_every_split(text: str, call_id: str | None) -> None:
    for chunks in chunkings(text):
        stream, sent = transcode(chunks, whole_call=True, name_keys=("name",), args_keys=("arguments",),
                                 id_keys=("id",))
        assert (stream.name, stream.call_id, "".join(sent)) == ("get_weather", call_id,
                                                                 '{"city": "Paris", "days": [1, 2]}'), chunks


def test_argstream_never_sends_a_key_without_its_value() -> None:
    for chunks in chunkings('{"city": "Paris", "days"'):
        stream, sent = transcode(chunks, whole_call=False)
        assert "".join(sent) + stream.closing() == '{"city": "Paris"}', chunks


# -- the machine, one mode at a time ---------------------------------------------------------------------

def machine_events(dialect: str, chunks: list[str], **kw: Any) -> tuple[list[Any], list[tuple[str, int]]]:
    p = autoparser.get_profile(dialect).parser(**kw)
    events: list[Any] = []
    for chunk in chunks:
        events += p.feed(chunk)
    events += p.close()
    return coalesce(events), [(i.code, i.position) for i in p.result().issues]


def check_mode(dialect: str, text: str, want: list[Any], issues: list[tuple[str, int]] = (),  # type: ignore[assignment]
               **kw: Any) -> None:
    for chunks in chunkings(text):
        assert machine_events(dialect, chunks, **kw) == (want, list(issues)), chunks


def test_mode_content() -> None:
    check_mode("hermes", "Hello <b>world</b> <tool", [ContentDelta("Hello <b>world</b> <tool")])


def test_mode_reasoning() -> None:
    check_mode("think", "Two plus two.</think>It is 4.",
               [ReasoningDelta("Two plus two."), ContentDelta("It is 4.")], reasoning="prefilled")
    check_mode("think", "<think>a</think>b<think>c</think>d", _two_blocks(), reasoning="explicit")


def _two_blocks() -> list[Any]:
    join = autoparser.get_profile("think").reasoning.join  # type: ignore[union-attr]
    # the content between the blocks comes out when it is read, before the second block
    return [ReasoningDelta("a"), ContentDelta("b"), ReasoningDelta(join + "c" if join else "c"), ContentDelta("d")]


def test_mode_reasoning_unclosed() -> None:
    check_mode("think", "<think>still thinking", [ReasoningDelta("still thinking")],
               [("unclosed_reasoning", 21)], reasoning="explicit")


def test_mode_undecided() -> None:
    check_mode("think", "Two plus two.</think>It is 4.",
               [ReasoningDelta("Two plus two."), ContentDelta("It is 4.")], reasoning="auto")
    check_mode("think", "No markers here.", [ContentDelta("No markers here.")], reasoning="auto")
    check_mode("think", "Hi <think>x</think>y", [ContentDelta("Hi "), ReasoningDelta("x"), ContentDelta("y")],
               reasoning="auto")


CALL = '<tool_call>{"name": "a", "arguments": {}}</tool_call>'


def test_mode_defer() -> None:
    # the block closes: the call-like text was reasoning
    check_mode("hermes", "Maybe " + CALL + " no.</think>Done.",
               [ReasoningDelta("Maybe " + CALL + " no."), ContentDelta("Done.")], reasoning="prefilled")
    # it never closes: the call ends the block
    check_mode("hermes", "Maybe " + CALL,
               [ReasoningDelta("Maybe "), ToolCallStart(0, "call_0", "a", True), ToolCallArgsDelta(0, "{}"),
                ToolCallEnd(0, {}, "ok")], [("call_in_reasoning", 59)], reasoning="prefilled")


def test_mode_region() -> None:
    text = 'Hi <tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call><tool_call>\n{"name": "g", "arguments": {}}\n'
    want = [ContentDelta("Hi "), ToolCallStart(0, "call_0", "f", True), ToolCallArgsDelta(0, '{"x": 1}'),
            ToolCallEnd(0, {"x": 1}, "ok"), ToolCallStart(1, "call_1", "g", True), ToolCallArgsDelta(1, "{}"),
            ToolCallEnd(1, {}, "ok")]
    for stream in (True, False):
        check_mode("hermes", text, want, [("missing_end_marker", 105)], stream_arguments=stream)  # at the end


def test_mode_region_section() -> None:
    text = ("A<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>"
            '{"x": 1}<|tool_call_end|><|tool_calls_section_end|>B')
    check_mode("kimi-k2", text, [ContentDelta("A"), ToolCallStart(0, "functions.f:0", "f", True),
                                 ToolCallArgsDelta(0, '{"x": 1}'), ToolCallEnd(0, {"x": 1}, "ok"), ContentDelta("B")])


def test_mode_skip() -> None:
    # fail-closed, a dialect that drops an invalid call: its text is skipped up to the section end
    text = ("A<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>"
            '{"x": oops}<|tool_call_end|><|tool_calls_section_end|>B')
    check_mode("kimi-k2", text, [ContentDelta("AB")], [("invalid_call", 29)], stream_arguments=False)


def test_mode_harmony() -> None:
    text = ("<|channel|>analysis<|message|>Need the invoice.<|end|><|start|>assistant<|channel|>commentary "
            'to=functions.lookup_invoice <|constrain|>json<|message|>{"invoice_id":"A-17"}<|call|>'
            "<|start|>assistant<|channel|>final<|message|>Sent.<|return|>")
    check_mode("harmony", text, [ReasoningDelta("Need the invoice."),
                                 ToolCallStart(0, "call_0", "lookup_invoice", True),
                                 ToolCallArgsDelta(0, '{"invoice_id": "A-17"}'),
                                 ToolCallEnd(0, {"invoice_id": "A-17"}, "ok"), ContentDelta("Sent.")])


def test_mode_harmony_header_never_ends() -> None:
    check_mode("harmony", "<|start|>assistant<|channel|>final", [], [("invalid_header", 34)])


def test_mode_harmony_body_ended_by_the_next_header() -> None:
    # a body the next start marker ends (no end marker): that marker is read again as a header;
    # two content messages are joined with the profile's join text
    text = "<|channel|>final<|message|>Hi<|start|>assistant<|channel|>final<|message|>there<|return|>"
    check_mode("harmony", text, [ContentDelta("Hi\nthere")])


def test_scanner_escape_skips_a_whole_multi_character_closer() -> None:
    """JSON written into a CSV field doubles its quotes: an escaped quote is '\\""', which must not
    close the '""'-quoted string, whole or split anywhere."""
    text = '{""a"": ""x\\"""", ""b"": [""}""]} tail'
    want = text.index(" tail")
    for chunks in chunkings(text):
        status, end, _ = scan_value(chunks, BalancedScanner("{[", (('""', '""', True),)))
        assert (status, end) == ("done", want), chunks
