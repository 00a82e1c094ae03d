"""Streaming arguments (issue 10): calls announced once their name is certain, argument deltas as
the text arrives, nothing taken back, and the fail-closed mode (``stream_arguments=False``).

Expected values here are written from the input texts, never computed by the parser.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import close_json_prefix

import autoparser
from autoparser import ContentDelta, ToolCallArgsDelta, ToolCallEnd, ToolCallStart
from autoparser.engine.argstream import JsonArgStream


def feed_chunks(dialect: str, text: str, size: int, **kw: Any) -> tuple[list[tuple[int, Any]], Any]:
    """Events tagged with how many characters had been fed when each came out."""
    p = autoparser.get_profile(dialect).parser(**kw)
    out: list[tuple[int, Any]] = []
    for k in range(0, len(text), size):
        out += [(min(k + size, len(text)), e) for e in p.feed(text[k:k + size])]
    out += [(len(text), e) for e in p.close()]
    return out, p.result()


def first_value_delta(events: list[tuple[int, Any]]) -> int:
    """Characters fed when the first delta carrying argument characters (beyond '{') came out."""
    return next(at for at, e in events if isinstance(e, ToolCallArgsDelta) and e.text.strip("{"))


BIG = "x" * 200_000


def test_hermes_200kb_string_streams_within_64_chars() -> None:
    head = '<tool_call>\n{"name": "write_file", "arguments": {"content": "'
    text = head + BIG + '", "mode": "w"}}\n</tool_call>'
    events, res = feed_chunks("hermes", text, 4)
    start = head.index('{"content"')  # where the argument object begins
    assert first_value_delta(events) - start <= 64
    starts = [at for at, e in events if isinstance(e, ToolCallStart)]
    assert starts and starts[0] <= len(head)
    deltas = [e for _, e in events if isinstance(e, ToolCallArgsDelta)]
    assert len(deltas) >= 200
    assert json.loads("".join(d.text for d in deltas)) == {"content": BIG, "mode": "w"}
    assert res.tool_calls[0].arguments == {"content": BIG, "mode": "w"}
    assert res.tool_calls[0].status == "ok" and res.finish == "tool_calls"


def test_qwen3_coder_50kb_string_parameter_streams() -> None:
    value = "line of code\n" * 3846  # ~50 kB
    head = "<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/a.py\n</parameter>\n<parameter=content>\n"
    text = head + value + "\n</parameter>\n</function>\n</tool_call>"
    tools = [{"type": "function", "function": {"name": "write_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}}]
    events, res = feed_chunks("qwen3-coder", text, 4, tools=tools)
    content_start = len(head)
    late = [at for at, e in events if isinstance(e, ToolCallArgsDelta) and '"content"' in e.text]
    assert late and late[0] - content_start <= 64
    deltas = [e for _, e in events if isinstance(e, ToolCallArgsDelta)]
    assert len(deltas) >= 200
    # the template writes one newline around a value; the value itself ends with its own newline
    want = {"path": "src/a.py", "content": value}
    assert json.loads("".join(d.text for d in deltas)) == want
    assert res.tool_calls[0].arguments == want


def test_truncated_call_keeps_complete_part() -> None:
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "da'
    events, res = feed_chunks("hermes", text, 3)
    ends = [e for _, e in events if isinstance(e, ToolCallEnd)]
    assert ends == [ToolCallEnd(0, {"city": "Paris"}, "truncated")]
    assert res.finish == "length"
    assert [(c.name, c.status) for c in res.tool_calls] == [("get_weather", "truncated")]
    assert not any(isinstance(e, ContentDelta) and e.text.strip() for _, e in events)
    assert "truncated_call" in {i.code for i in res.issues}


def test_fail_closed_mode_is_todays_behaviour() -> None:
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "da'
    events, res = feed_chunks("hermes", text, 3, stream_arguments=False)
    assert not any(isinstance(e, (ToolCallStart, ToolCallArgsDelta, ToolCallEnd)) for _, e in events)
    assert res.content == text and res.tool_calls == []
    whole = '<tool_call>\n{"name": "f", "arguments": {"a": "' + "y" * 1000 + '"}}\n</tool_call>'
    events, res = feed_chunks("hermes", whole, 4, stream_arguments=False)
    calls = [(at, e) for at, e in events if isinstance(e, (ToolCallStart, ToolCallArgsDelta, ToolCallEnd))]
    assert len(calls) == 3 and all(at >= len(whole) - len("\n</tool_call>") for at, _ in calls)


def test_started_call_stays_a_call_when_malformed() -> None:
    text = '<tool_call>\n{"name": "f", "arguments": {"a": "b", 7}}\n</tool_call>after'
    events, res = feed_chunks("hermes", text, 2)
    ends = [e for _, e in events if isinstance(e, ToolCallEnd)]
    assert len(ends) == 1 and ends[0].status == "invalid" and ends[0].arguments == {"a": "b"}
    assert [c.name for c in res.tool_calls] == ["f"]


def test_name_is_never_a_prefix() -> None:
    text = '<tool_call>\n{"name": "roll_back_release", "arguments": {"target": "v1"}}\n</tool_call>'
    for size in (1, 2, 3, 5):
        events, _ = feed_chunks("hermes", text, size)
        assert [e.name for _, e in events if isinstance(e, ToolCallStart)] == ["roll_back_release"]


# -- building block: the JSON transcoder, at every split point -------------------------------------

ARG_TEXTS = [
    '{"a": 1, "b": [true, false, null, -2.5e3], "c": {"d": "e\\u00e9\\n\\"q\\""}, "f": ""}',
    '{ "s" : "\\ud83d\\ude00 smile" , "n" :0 }',
    '{}',
    '{"nested": [[], {}, [{"x": [1, 2]}]], "t": "tab\\there"}',
]


@pytest.mark.parametrize("text", ARG_TEXTS)
def test_transcoder_every_split_point(text: str) -> None:
    want = json.loads(text)
    for k in range(len(text) + 1):
        st_ = JsonArgStream(whole_call=False)
        sent = ""
        for piece in (text[:k], text[k:]):
            st_.feed(piece)
            sent += st_.take()
            if sent:
                json.loads(sent + st_.closing())  # valid at every point
        assert st_.complete and json.loads(sent) == want, k


@pytest.mark.parametrize("text", ARG_TEXTS)
def test_transcoder_whole_call_finds_name_and_arguments(text: str) -> None:
    call = '{"id": "c1", "name": "do_it", "arguments": ' + text + "}"
    for k in range(len(call) + 1):
        st_ = JsonArgStream(whole_call=True, name_keys=("name",), args_keys=("arguments",), id_keys=("id",))
        st_.feed(call[:k])
        sent = st_.take()
        assert st_.name in (None, "do_it")
        st_.feed(call[k:])
        sent += st_.take()
        assert (st_.name, st_.call_id) == ("do_it", "c1")
        assert json.loads(sent) == json.loads(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
arguments = st.dictionaries(st.text(max_size=8), json_values, max_size=5)


@settings(deadline=None, database=None, max_examples=150)
@given(args=arguments, data=st.data())
def test_hermes_streamed_arguments_equal_and_valid_at_every_delta(args: dict[str, Any], data: Any) -> None:
    text = ('<tool_call>\n{"name": "f", "arguments": ' + json.dumps(args, ensure_ascii=data.draw(st.booleans()))
            + "}\n</tool_call>")
    cuts = sorted(data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=25)))
    p = autoparser.get_profile("hermes").parser()
    sent = ""
    ends = []
    prev = 0
    for c in [*cuts, len(text)]:
        for e in p.feed(text[prev:c]):
            if isinstance(e, ToolCallArgsDelta):
                sent += e.text
                json.loads(close_json_prefix(sent))
            elif isinstance(e, ToolCallEnd):
                ends.append(e)
        prev = c
    p.close()
    assert json.loads(sent) == args
    assert [e.arguments for e in ends] == [args]


tag_value = st.text(alphabet="ab <>/=\n\t\"'\\é{}[]", min_size=1, max_size=40)


@settings(deadline=None, database=None, max_examples=150)
@given(values=st.lists(tag_value, min_size=1, max_size=3), data=st.data())
def test_tagged_stream_equals_fail_closed_parse(values: list[str], data: Any) -> None:
    """qwen3-coder string parameters: streaming gives the fail-closed mode's arguments, chunk by chunk."""
    params = "".join(f"<parameter=p{i}>\n{v}\n</parameter>\n" for i, v in enumerate(values))
    text = f"<tool_call>\n<function=f>\n{params}</function>\n</tool_call>"
    closed = autoparser.parse(text, "qwen3-coder", stream_arguments=False)
    cuts = sorted(data.draw(st.lists(st.integers(1, len(text) - 1), max_size=25)))
    p = autoparser.get_profile("qwen3-coder").parser()
    sent = ""
    prev = 0
    for c in [*cuts, len(text)]:
        for e in p.feed(text[prev:c]):
            if isinstance(e, ToolCallArgsDelta):
                sent += e.text
                json.loads(close_json_prefix(sent))
        prev = c
    for e in p.close():
        if isinstance(e, ToolCallArgsDelta):
            sent += e.text
    res = p.result()
    assert [(c.name, c.arguments) for c in res.tool_calls] == [(c.name, c.arguments) for c in closed.tool_calls]
    if res.tool_calls:
        assert json.loads(sent) == res.tool_calls[0].arguments


TOOLS = [{"type": "function", "function": {"name": "known", "parameters": {
    "type": "object", "properties": {"a": {"type": "string"}}}}}]


def test_unknown_tool_dropped_by_policy_is_never_announced() -> None:
    text = '<tool_call>\n{"name": "other", "arguments": {"a": "' + "z" * 300 + '"}}\n</tool_call>'
    pol = autoparser.Policy(unknown_tool="drop")
    events, res = feed_chunks("hermes", text, 4, tools=TOOLS, policy=pol)
    assert not any(isinstance(e, (ToolCallStart, ToolCallArgsDelta, ToolCallEnd)) for _, e in events)
    assert res.tool_calls == [] and "unknown_tool" in {i.code for i in res.issues}


def test_unknown_tool_forwarded_streams_flagged() -> None:
    text = '<tool_call>\n{"name": "other", "arguments": {"a": "' + "z" * 300 + '"}}\n</tool_call>'
    events, res = feed_chunks("hermes", text, 4, tools=TOOLS)
    starts = [e for _, e in events if isinstance(e, ToolCallStart)]
    assert [(s.name, s.known) for s in starts] == [("other", False)]
    assert len([e for _, e in events if isinstance(e, ToolCallArgsDelta)]) > 10
    assert [(c.name, c.known) for c in res.tool_calls] == [("other", False)]


def test_strict_policy_raises_on_a_call_cut_after_its_start() -> None:
    p = autoparser.get_profile("hermes").parser(policy="strict")
    p.feed('<tool_call>\n{"name": "f", "arguments": {"a": "b')
    with pytest.raises(autoparser.ParseError) as info:
        p.close()
    assert info.value.code == "truncated_call"


@pytest.mark.parametrize("dialect,text", [
    ("hermes", '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": }}</tool_call>after'),
    ("kimi-k2", "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
                '{"city": "Paris", "days": }<|tool_call_end|><|tool_calls_section_end|>after'),
])
def test_malformed_call_after_its_start_keeps_its_end_marker_out_of_the_content(dialect: str, text: str) -> None:
    """The rest of an announced call's text, end marker included, is the call's, not content."""
    for cut in range(len(text) + 1):
        p = autoparser.get_profile(dialect).parser()
        p.feed(text[:cut])
        p.feed(text[cut:])
        p.close()
        res = p.result()
        assert res.content == "after", cut
        assert [(c.name, c.arguments, c.status) for c in res.tool_calls] == [
            ("get_weather", {"city": "Paris"}, "invalid")], cut
