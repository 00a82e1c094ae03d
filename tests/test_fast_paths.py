"""The engine's two shortcuts read the text exactly as the general path does.

* ``Parser._whole_call``: a call whose marker, JSON body and end marker are all in hand is
  decoded in one step instead of walking the region states;
* ``JsonBody._feed_short``: a short object body is kept, not scanned, until a character that can
  decide (``}``, ``]``, a stop marker's first character) arrives.

Each test runs the same input with the shortcut on and with it turned off (monkeypatched to
"not applicable", which sends every input down the general path) and compares the events. The
inputs are the project corpus of every dialect plus generated texts that mix complete, broken,
unknown, cut-off and back-to-back calls with prose, so both the taken and the refused cases of
each shortcut are covered. A third group pins the rule that makes ids chunk-invariant: an id
written after a streamed call's arguments began is not its id.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from corpus import DIALECTS, load_cases, make_parser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autoparser
from autoparser import coalesce
from autoparser.engine import codecs, machine

SETTINGS = settings(deadline=None, database=None, max_examples=150,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "write_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}},
]


@contextmanager
def general_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Both shortcuts refused for every input, for the duration of the block."""
    def no_whole_call(self: Any, m: Any, w: str, final: bool) -> None:
        return None

    def no_short_phase(self: Any, text: str, pos: int, final: bool) -> None:
        self._short = False
        return None

    with monkeypatch.context() as patch:
        patch.setattr(machine.Parser, "_whole_call", no_whole_call)
        patch.setattr(codecs.JsonBody, "_feed_short", no_short_phase)
        yield


def run(make: Callable[[], Any], chunks: list[str]) -> tuple[list[Any], Any]:
    parser = make()
    events: list[Any] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    events += parser.close()
    return events, parser.result()


def both(monkeypatch: pytest.MonkeyPatch, make: Callable[[], Any], chunks: list[str]
         ) -> tuple[tuple[list[Any], Any], tuple[list[Any], Any]]:
    fast = run(make, chunks)
    with general_path(monkeypatch):
        slow = run(make, chunks)
    return fast, slow


CASES = load_cases()


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "fail-closed"])
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_corpus_case_events_equal_with_and_without_shortcuts(case: dict[str, Any], stream: bool,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    text = case["input"]

    def make() -> Any:
        return make_parser(case, stream_arguments=stream)

    # whole text: the very same events, not only the same coalesced ones
    (fast_events, fast_res), (slow_events, slow_res) = both(monkeypatch, make, [text])
    assert fast_events == slow_events
    assert fast_res == slow_res
    # and every split point: the shortcuts see partial calls there
    for cut in range(0, len(text) + 1, max(1, len(text) // 40)):
        (fast_events, fast_res), (slow_events, slow_res) = both(monkeypatch, make, [text[:cut], text[cut:]])
        assert coalesce(fast_events) == coalesce(slow_events), cut
        assert fast_res == slow_res, cut


def _hermes_call(name: str, args: Any, *, id_before: str | None = None, id_after: str | None = None) -> str:
    obj: dict[str, Any] = {}
    if id_before is not None:
        obj["id"] = id_before
    obj["name"] = name
    obj["arguments"] = args
    if id_after is not None:
        obj["id"] = id_after
    return json.dumps(obj, ensure_ascii=False)


PIECES = st.one_of(
    st.sampled_from(["Sure. ", "\n", "  ", "x < y and {braces} ", "</tool_call>", "<tool_", "]", "}"]),
    st.builds(lambda city, days: "<tool_call>\n" + _hermes_call("get_weather", {"city": city, "days": days})
              + "\n</tool_call>\n",
              st.sampled_from(["Paris", "São Paulo", "a}b", "<tool_call>", "x\"y", "\\n"]), st.integers(-3, 99)),
    st.builds(lambda s: "<tool_call>" + _hermes_call("write_file", {"path": "a.md", "content": s}) + "</tool_call>",
              st.text(alphabet="ab <>{}[]\"\\\n", max_size=120)),
    st.sampled_from([
        '<tool_call>{"name": "nope", "arguments": {}}</tool_call>',             # unknown tool
        '<tool_call>{"name": "get_weather", "arguments": {"days": "x"}}</tool_call>',  # schema mismatch
        '<tool_call>{"name": "get_weather", "arguments": {"city": "P"}</tool_call>',   # repaired
        '<tool_call>{"name": "get_weather" "arguments": {}}</tool_call>',      # not JSON
        '<tool_call>[{"name": "get_weather", "arguments": {"city": "P"}}]</tool_call>',  # an array
        '<tool_call>{"function": {"name": "get_weather", "arguments": {"city": "P"}}}</tool_call>',
        '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"P\\"}"}</tool_call>',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "P"}} trailing</tool_call>',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "P"}}',      # no end marker
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Pa',        # cut off
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "P"}, "id": "late"}\n</tool_call>',
        '<tool_call>{"id": "early", "name": "get_weather", "arguments": {"city": "P"}}</tool_call>',
    ]),
)


@SETTINGS
@given(pieces=st.lists(PIECES, min_size=1, max_size=6), cuts=st.lists(st.integers(0, 400), max_size=6),
       stream=st.booleans(), with_tools=st.booleans())
def test_generated_outputs_parse_alike_with_and_without_shortcuts(
        pieces: list[str], cuts: list[int], stream: bool, with_tools: bool) -> None:
    text = "".join(pieces)
    profile = autoparser.get_profile("hermes")
    tools = TOOLS if with_tools else None

    def make() -> Any:
        return profile.parser(tools=tools, stream_arguments=stream)

    bounds = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]
    with pytest.MonkeyPatch.context() as monkeypatch:
        (fast_events, fast_res), (slow_events, slow_res) = both(monkeypatch, make, [text])
        # (how the text of one feed is cut into content deltas is no guarantee: a held short call
        # that turns out to be text comes out with what follows it)
        assert coalesce(fast_events) == coalesce(slow_events)
        assert fast_res == slow_res
        (fast_events, fast_res), (slow_events, slow_res) = both(monkeypatch, make, chunks)
        assert coalesce(fast_events) == coalesce(slow_events)
        assert fast_res == slow_res
    # and the shortcut's own chunk invariance
    assert coalesce(run(make, chunks)[0]) == coalesce(run(make, [text])[0])


@pytest.mark.parametrize("dialect", [d for d in DIALECTS if autoparser.get_profile(d).tools is not None])
def test_whole_call_is_taken_only_where_the_profile_allows(dialect: str) -> None:
    """Eligibility is a property of the profile: a JSON codec with an end marker."""
    tools = autoparser.get_profile(dialect).tools
    assert tools is not None
    compiled = machine._compiled(autoparser.get_profile(dialect))
    assert compiled.whole_calls == (tools.codec.kind == "json" and tools.alt_codec is None
                                    and bool(tools.call_close))


LONG = "z" * 120


@pytest.mark.parametrize("body,expected_id", [
    (_hermes_call("f", {"a": 1}, id_after="late"), "call_0"),
    (_hermes_call("f", {"a": 1, "s": LONG}, id_after="late"), "call_0"),
    (_hermes_call("f", {"a": 1}, id_before="early"), "early"),
    (_hermes_call("f", {"a": 1, "s": LONG}, id_before="early"), "early"),
    ('{"function": {"name": "f", "arguments": {"a": 1}}, "id": "late"}', "call_0"),
    ('{"id": "early", "function": {"name": "f", "arguments": {"s": "' + LONG + '"}}}', "early"),
])
def test_streamed_call_id_is_the_one_written_before_its_arguments(body: str, expected_id: str) -> None:
    text = "<tool_call>" + body + "</tool_call>"
    profile = autoparser.get_profile("hermes")
    for cut in range(len(text) + 1):
        events, res = run(lambda: profile.parser(), [text[:cut], text[cut:]])
        starts = [e for e in events if isinstance(e, autoparser.ToolCallStart)]
        assert [s.id for s in starts] == [expected_id], cut
        assert [c.id for c in res.tool_calls] == [expected_id], cut


def test_fail_closed_keeps_an_id_written_after_the_arguments() -> None:
    text = "<tool_call>" + _hermes_call("f", {"a": 1, "s": LONG}, id_after="late") + "</tool_call>"
    profile = autoparser.get_profile("hermes")
    for cut in range(0, len(text) + 1, 7):
        _, res = run(lambda: profile.parser(stream_arguments=False), [text[:cut], text[cut:]])
        assert [c.id for c in res.tool_calls] == ["late"], cut


def _call_timeline(make: Callable[[], Any], text: str, size: int) -> list[tuple[int, str, int]]:
    """(characters fed, event type, call index) of every call start and end."""
    parser = make()
    out: list[tuple[int, str, int]] = []
    for k in range(0, len(text), size):
        for e in parser.feed(text[k:k + size]):
            if isinstance(e, (autoparser.ToolCallStart, autoparser.ToolCallEnd)):
                out.append((min(k + size, len(text)), type(e).__name__, e.index))
    out += [(len(text), type(e).__name__, e.index) for e in parser.close()
            if isinstance(e, (autoparser.ToolCallStart, autoparser.ToolCallEnd))]
    return out


@pytest.mark.parametrize("size", [1, 4, 7, 64])
@pytest.mark.parametrize("case", [c for c in CASES if c["expected"]["tool_calls"]],
                         ids=[c["id"] for c in CASES if c["expected"]["tool_calls"]])
def test_a_call_is_announced_and_ended_in_the_same_chunk_either_way(case: dict[str, Any], size: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Holding a short call's text changes when nothing is announced: its start still comes out
    in the chunk that completes its name, and its end in the chunk that ends it."""
    def make() -> Any:
        return make_parser(case)

    fast = _call_timeline(make, case["input"], size)
    with general_path(monkeypatch):
        slow = _call_timeline(make, case["input"], size)
    assert fast == slow


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_issue_positions_are_in_the_text_and_the_same_for_every_chunking(case: dict[str, Any]) -> None:
    """Positions count from the start of the output, also after rejected text is read again."""
    text = case["input"]
    _, whole = run(lambda: make_parser(case), [text])
    assert all(0 <= issue.position <= len(text) for issue in whole.issues), whole.issues
    for cut in range(0, len(text) + 1, max(1, len(text) // 30)):
        _, res = run(lambda: make_parser(case), [text[:cut], text[cut:]])
        assert [i.position for i in res.issues] == [i.position for i in whole.issues], cut


def test_issue_after_a_rejected_call_points_at_its_own_text() -> None:
    rejected = '<tool_call>{"name": "get_weather" "arguments": {}}</tool_call>'
    repaired = '<tool_call>{"name": "get_weather", "arguments": {"city": "P"}</tool_call>'
    text = rejected + repaired
    for stream in (True, False):
        _, res = run(lambda mode=stream: autoparser.get_profile("hermes").parser(stream_arguments=mode), [text])
        codes = {i.code: i.position for i in res.issues}
        # the repair is where the body ended: at the second call's end marker
        assert codes["repaired_arguments"] == text.rindex("</tool_call>")
