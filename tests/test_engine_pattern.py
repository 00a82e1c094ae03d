"""The pattern codec (engine/pattern.py): formats spelled out as data, run by the one engine.

Every format below is parsed whole, one character at a time and split at every point, in both
modes (fail-closed and streaming): the coalesced events must not depend on the chunking, and a
streamed call's argument deltas concatenate to the JSON of its final arguments. Then hypothesis
writes random calls (every JSON type; strings with quotes, backslashes, line breaks, unicode and
the format's own markers) with ``write_call`` and parses them back.
"""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from corpus import coalesce, feed_all, split_at
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autoparser
from autoparser.engine.pattern import decode_value, encode_value, write_call
from autoparser.errors import ProfileError
from autoparser.profile import CodecSpec, PatternSpec, Profile, ToolSpec

SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}, "ratio": {"type": "number"},
    "flag": {"type": "boolean"}, "opts": {"type": "object"}, "tags": {"type": "array"},
    "note": {"type": "string"}}}
TOOLS = [{"type": "function", "function": {"name": n, "parameters": SCHEMA}}
         for n in ("get_weather", "search-db.v2")]


def _prof(pat: PatternSpec, **markers: Any) -> Profile:
    return Profile(tools=ToolSpec(codec=CodecSpec(kind="pattern", pattern=pat), **markers))


TYPES = (("str", "string"), ("int", "integer"), ("float", "number"), ("bool", "boolean"),
         ("dict", "object"), ("list", "array"), ("none", "null"))
FORMATS: dict[str, Profile] = {
    "key-value-lines": _prof(PatternSpec(call="{name}\n{args}", arg="{key}: {value}\n", value="raw"),
                             call_open=("[[call]]",), call_close=("[[/call]]",)),
    "type-tags": _prof(PatternSpec(call='{name}">{args}</call>',
                                   arg='<{type} key="{key}">{value}</{type}>', value="xml", types=TYPES),
                       call_open=('<call name="',)),
    "child-elements": _prof(PatternSpec(call='fn="{name}" id="{call_id}">\n{args}</invoke>',
                                        arg="<{key}>{value}</{key}>\n", value="xml"),
                            call_open=("<invoke ",)),
    "query-string": _prof(PatternSpec(call="{name}?{args}", arg="{key}={value}", arg_sep="&", value="percent"),
                          call_open=("<<",), call_close=(">>",)),
    "shell": _prof(PatternSpec(call="{name} {args}", arg="--{key} {value}", arg_sep=" ", value="shell"),
                   call_open=("$ ",), call_close=(";;",)),
    "python-kwargs": _prof(PatternSpec(call="{name}({args})", arg="{key}={value}", arg_sep=", ", value="python"),
                           call_open=("⟦",), call_close=("⟧",)),
    "json-values": _prof(PatternSpec(call="CALL {name} #{index}\n{args}END", arg="  {key} := {value};\n",
                                     value="json"), lookahead_open=("CALL ",)),
    "toml-table": _prof(PatternSpec(call="[call.{name}]\n{args}", arg="{key} = {value}\n", value="toml"),
                        call_open=("<toml>",), call_close=("</toml>",)),
}

# (format, raw output, expected (content, calls)), calls as (name, arguments, status)
CASES: list[tuple[str, str, tuple[str, list[tuple[str, dict[str, Any], str]]]]] = [
    ("key-value-lines", "Hi.[[call]]\nget_weather\ncity: Paris\ndays: 3\n[[/call]] done",
     ("Hi. done", [("get_weather", {"city": "Paris", "days": 3}, "ok")])),
    ("key-value-lines", "[[call]]\nget_weather\nnote: a: b\nline two\ncity: X\n[[/call]]",
     ("", [("get_weather", {"note": "a: b\nline two", "city": "X"}, "ok")])),
    ("type-tags", 'Ok <call name="get_weather"><str key="city">A &amp; B &lt;x&gt;</str>'
                  '<int key="days">3</int><dict key="opts">{"a": [1]}</dict></call> bye',
     ("Ok bye", [("get_weather", {"city": "A & B <x>", "days": 3, "opts": {"a": [1]}}, "ok")])),
    ("type-tags", 'See <call here>.', ("See <call here>.", [])),
    ("child-elements", 'x<invoke fn="get_weather" id="c9">\n<city>Pa</b>ris</city>\n<days>3</days>\n</invoke>',
     ("x", [("get_weather", {"city": "Pa</b>ris", "days": 3}, "ok")])),
    ("query-string", "x<<get_weather?city=New%20York%26Co&days=3>>y",
     ("xy", [("get_weather", {"city": "New York&Co", "days": 3}, "ok")])),
    ("shell", "x$ get_weather --city 'New York' --days 3;;",
     ("x", [("get_weather", {"city": "New York", "days": 3}, "ok")])),
    ("python-kwargs", "x⟦get_weather(city='Pa, ris', days=3, flag=True)⟧",
     ("x", [("get_weather", {"city": "Pa, ris", "days": 3, "flag": True}, "ok")])),
    ("json-values", 'CALL get_weather #1\n  city := "A\\"b";\n  tags := [1, "x"];\nEND and',
     ("and", [("get_weather", {"city": 'A"b', "tags": [1, "x"]}, "ok")])),
    ("toml-table", 'x<toml>[call.get_weather]\ncity = "Paris"\nopts = {depth = 2}\n</toml>',
     ("x", [("get_weather", {"city": "Paris", "opts": {"depth": 2}}, "ok")])),
    ("toml-table", "x<toml>[call.get_weather]\n</toml>", ("x", [("get_weather", {}, "ok")])),
]


def _summary(res: autoparser.Result) -> tuple[str, list[tuple[str, dict[str, Any], str]]]:
    return res.content, [(c.name, c.arguments, c.status) for c in res.tool_calls]


def _events(prof: Profile, chunks: list[str], stream: bool) -> tuple[list[Any], autoparser.Result]:
    p = prof.parser(tools=TOOLS, stream_arguments=stream)
    fed, closed = feed_all(p, chunks)
    return coalesce(fed + closed), p.result()


def _check_deltas(events: list[Any]) -> None:
    """Each call's argument deltas concatenate to the JSON of its final arguments."""
    from autoparser import events as ev

    sent: dict[int, str] = {}
    for e in events:
        if e[0] == "args":
            sent[e[1]] = sent.get(e[1], "") + e[2]
    for e in events:
        if e[0] == ev.ToolCallEnd.__name__ or e[0] == "end":
            idx, args = e[1], e[2]
            assert json.loads(sent.get(idx, "{}")) == args


@pytest.mark.parametrize(("fmt", "text", "want"), [pytest.param(*c, id=f"{c[0]}-{i}") for i, c in enumerate(CASES)])
def test_case_whole_per_character_and_split(fmt: str, text: str, want: Any) -> None:
    prof = FORMATS[fmt]
    for stream in (False, True):
        whole, res = _events(prof, [text], stream)
        assert _summary(res) == want
        assert _events(prof, list(text), stream)[0] == whole
        for k in range(1, len(text)):
            assert _events(prof, split_at(text, [k]), stream)[0] == whole, (stream, k)


def test_streamed_argument_deltas_are_the_arguments() -> None:
    from autoparser import events as ev

    for fmt, text, _want in CASES:
        p = FORMATS[fmt].parser(tools=TOOLS, stream_arguments=True)
        events = [e for ch in text for e in p.feed(ch)] + list(p.close())
        sent: dict[int, str] = {}
        for e in events:
            if isinstance(e, ev.ToolCallArgsDelta):
                sent[e.index] = sent.get(e.index, "") + e.text
            elif isinstance(e, ev.ToolCallEnd):
                assert json.loads(sent[e.index]) == e.arguments, fmt


def test_string_value_streams_as_it_arrives() -> None:
    from autoparser import events as ev

    prof = _prof(PatternSpec(call="{name}>{args}", arg="<{key}>{value}</{key}>", value="xml"),
                 call_open=("<use:",), call_close=("</use>",))
    p = prof.parser(tools=TOOLS, stream_arguments=True)
    first = p.feed("<use:get_weather><city>Par")
    assert [e.text for e in first if isinstance(e, ev.ToolCallArgsDelta)] == ['{"city": "Par']
    got = p.feed("is &amp; Lyo &am")
    assert [e.text for e in got if isinstance(e, ev.ToolCallArgsDelta)] == ["is & Lyo "]
    p.feed("p;</city></use>")
    p.close()
    assert p.result().tool_calls[0].arguments == {"city": "Paris & Lyo &"}


@pytest.mark.parametrize(("fmt", "text", "partial"), [
    ("key-value-lines", "[[call]]\nget_weather\ncity: Par", {"city": "Par"}),
    ("type-tags", '<call name="get_weather"><str key="city">Pa', {"city": "Pa"}),
    ("child-elements", '<invoke fn="get_weather" id="c1">\n<days>3</days>\n<city>Ly', {"days": 3, "city": "Ly"}),
    ("python-kwargs", "⟦get_weather(city='Pa", {}),
])
def test_a_call_cut_off_is_truncated_never_executed(fmt: str, text: str, partial: dict[str, Any]) -> None:
    """Streaming: announced once its header is complete, the call ends ``truncated`` with the
    arguments that were certain (a string value cut off is kept as far as it came). Fail-closed:
    no call."""
    prof = FORMATS[fmt]
    res = autoparser.parse(text, prof, tools=TOOLS, stream_arguments=True)
    assert [(c.name, c.arguments, c.status) for c in res.tool_calls] == [("get_weather", partial, "truncated")]
    assert autoparser.parse(list(text), prof, tools=TOOLS, stream_arguments=True).tool_calls == res.tool_calls
    assert autoparser.parse(text, prof, tools=TOOLS).tool_calls == []


def test_partial_values_surface_the_cut_call_fail_closed() -> None:
    prof = FORMATS["key-value-lines"]
    assert prof.tools is not None
    prof = prof.replace(tools=ToolSpec(**{**prof.tools.__dict__, "partial_values": True}))
    res = autoparser.parse("[[call]]\nget_weather\ndays: 2\ncity: Par", prof, tools=TOOLS)
    assert [(c.name, c.arguments, c.status) for c in res.tool_calls] == [
        ("get_weather", {"days": 2, "city": "Par"}, "truncated")]


# -- hypothesis: whatever a template writes in the format parses back -----------------------------

_TEXT = st.text(alphabet=st.sampled_from(list(string.ascii_letters + string.digits + " \"'\\\n\t{}[]<>&%=;,:#/-é🎉用")),
                max_size=12)
_SCALAR = st.one_of(st.integers(-10**6, 10**6), st.booleans(),
                    st.floats(allow_nan=False, allow_infinity=False, width=32).filter(lambda x: x == x))
_VALUE = st.one_of(_TEXT, _SCALAR, st.lists(st.one_of(_TEXT, st.integers(0, 9)), max_size=3),
                   st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 9), max_size=2))
KEYS = {"city": _TEXT, "note": _TEXT, "days": st.integers(-99, 10**6), "flag": st.booleans(),
        "ratio": st.floats(-100, 100, allow_nan=False).map(lambda x: round(x, 3)),
        "opts": st.dictionaries(st.sampled_from(["a", "b"]), _VALUE, max_size=2),
        "tags": st.lists(_VALUE, max_size=3)}


def _faithful(fmt: str, prof: Profile, args: dict[str, Any]) -> bool:
    """Whether the format can carry these values: text encodings cannot hold what ends a value."""
    assert prof.tools is not None and prof.tools.codec.pattern is not None
    pat = prof.tools.codec.pattern
    for k, v in args.items():
        text = encode_value(v, pat.value)
        if pat.value in ("raw",) and (v != v.strip() if isinstance(v, str) else False):
            return False
        if pat.value == "raw" and any(m in text for m in ("\n", "[[/call]]")):
            return False
        if pat.value == "xml" and isinstance(v, str) and v != v.strip():
            return False
        if pat.value in ("xml", "raw", "percent") and not isinstance(v, str) and k in ("city", "note"):
            return False
        if pat.value == "toml" and (isinstance(v, float) or (isinstance(v, list) and len({type(x) for x in v}) > 1)):
            return False
        if pat.value == "shell" and isinstance(v, dict | list):
            return False
        if isinstance(v, str) and k not in ("city", "note"):
            return False
    return True


@settings(deadline=None, database=None, max_examples=80,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(fmt=st.sampled_from(sorted(FORMATS)), data=st.data())
def test_written_calls_parse_back(fmt: str, data: st.DataObject) -> None:
    prof = FORMATS[fmt]
    assert prof.tools is not None and prof.tools.codec.pattern is not None
    keys = data.draw(st.lists(st.sampled_from(sorted(KEYS)), unique=True, max_size=4))
    args = {k: data.draw(KEYS[k]) for k in keys}
    if not _faithful(fmt, prof, args):
        return
    name = data.draw(st.sampled_from(["get_weather", "search-db.v2"]))
    t = prof.tools
    call = write_call(t.codec.pattern, name, args, call_id="c1")  # type: ignore[arg-type]
    text = "Pre " + (t.call_open[0] if t.call_open else "") + call + (t.call_close[0] if t.call_close else "")
    res = autoparser.parse(text, prof, tools=TOOLS)
    assert [(c.name, c.arguments) for c in res.tool_calls] == [(name, args)], text
    cuts = data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=8))
    whole, _ = _events(prof, [text], True)
    assert _events(prof, split_at(text, cuts), True)[0] == whole


@pytest.mark.parametrize("enc", ["json", "python", "toml", "raw", "xml", "percent", "shell"])
def test_encodings_invert(enc: str) -> None:
    for v in ["a \"q\" \\ b\nc é 🎉 <x> & 50% a=b", 3, -2.5, True, [1, "x"], {"a": {"b": None}}]:
        if enc == "toml" and isinstance(v, dict) and v["a"]["b"] is None:
            continue  # TOML has no null
        want_type = "string" if isinstance(v, str) else "object" if isinstance(v, dict) else "any"
        assert decode_value(encode_value(v, enc), enc, want_type) == v, (enc, v)


@pytest.mark.parametrize(("pattern", "where"), [
    ({"call": "{args}"}, "call"),
    ({"call": "{name}{args}", "arg": "{key}={value}"}, "call"),
    ({"call": "{name}({args})", "arg": "{value}={key}"}, "arg"),
    ({"call": "{name}({args})", "arg": "{key}"}, "arg"),
    ({"call": "{name}", "arg": "{key}={value}"}, "arg"),
    ({"call": "{name}({args})", "arg": "{key}={value}", "types": [["s", "string"]]}, "types"),
    ({"call": "{name} {bogus}"}, "call"),
    ({"call": "{name}({args})", "arg": "{key}={value}", "value": "yaml"}, "value"),
])
def test_bad_patterns_are_refused_on_load(pattern: dict[str, Any], where: str) -> None:
    d = _prof(PatternSpec(call="{name}"), call_open=("<c>",)).to_dict()
    d["tools"]["codec"]["pattern"] = {"call": "", "arg": "", "arg_sep": "", "value": "json", "types": [],
                                      **pattern}
    with pytest.raises(ProfileError) as e:
        Profile.from_dict(d)
    assert e.value.field.startswith("tools.codec.pattern"), e.value.field
    assert e.value.field.endswith(where) or where in e.value.field


def test_pattern_profiles_round_trip_as_json() -> None:
    for prof in FORMATS.values():
        assert Profile.from_json(prof.to_json()) == prof


POSITIONAL = _prof(PatternSpec(call="{name}({args})", arg="{value}", arg_sep=", ", value="json"),
                   call_open=("⟪",), call_close=("⟫",))


@pytest.mark.parametrize(("text", "want"), [
    # the n-th value is the tool's n-th parameter (schema order: city, days, ratio, flag, ...)
    ('x⟪get_weather("Pa, ris", 3, -1.5)⟫', [("get_weather", {"city": "Pa, ris", "days": 3, "ratio": -1.5}, "ok")]),
    ("x⟪get_weather()⟫", [("get_weather", {}, "ok")]),
    # a tool the request does not list has no parameter order: not read as a call
    ('x⟪lookup("a")⟫', []),
])
def test_positional_values_take_the_schema_s_order(text: str, want: list[Any]) -> None:
    for stream in (False, True):
        whole, res = _events(POSITIONAL, [text], stream)
        assert [(c.name, c.arguments, c.status) for c in res.tool_calls] == want
        if not want:
            assert "(" in res.content  # the text stays content
        assert _events(POSITIONAL, list(text), stream)[0] == whole
        for k in range(1, len(text)):
            assert _events(POSITIONAL, split_at(text, [k]), stream)[0] == whole, (stream, k)


def test_shell_words_read_json_objects_and_words_that_start_with_a_dash() -> None:
    prof = FORMATS["shell"]
    text = "x$ get_weather --opts {\"a\": [1, \"x y\"]} --city 'New York' --ratio -1.5 --note '-';;"
    for stream in (False, True):
        whole, res = _events(prof, [text], stream)
        assert [(c.name, c.arguments) for c in res.tool_calls] == [
            ("get_weather", {"opts": {"a": [1, "x y"]}, "city": "New York", "ratio": -1.5, "note": "-"})]
        for k in range(1, len(text)):
            assert _events(prof, split_at(text, [k]), stream)[0] == whole, (stream, k)
    # a name ends at whitespace, not at a dash inside it ('search-db.v2 --city')
    res = autoparser.parse("$ search-db.v2 --city 'Oslo';;", prof, tools=TOOLS)
    assert [(c.name, c.arguments) for c in res.tool_calls] == [("search-db.v2", {"city": "Oslo"})]


def test_positional_values_beyond_the_parameters_are_no_valid_call() -> None:
    text = 'x⟪get_weather("a", 1, 2.5, true, {}, [], "n", 9)⟫'
    assert autoparser.parse(text, POSITIONAL, tools=TOOLS).tool_calls == []
    # streamed, the call was announced with its name: it ends invalid, never ok
    res = autoparser.parse(list(text), POSITIONAL, tools=TOOLS, stream_arguments=True)
    assert [c.status for c in res.tool_calls] in ([], ["invalid"])
