"""Streaming arguments for the shapes that used to be sent whole (issue 10, second part): JSON arrays
of calls (granite, phi4, jamba, command-r), pythonic call lists, Gemma's relaxed objects.

Expected values are written from the input texts (or are the values the texts were rendered from),
never computed by the parser under test.
"""

from __future__ import annotations

import itertools
import json
import keyword
from typing import Any

import pytest
from corpus import coalesce
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import close_json_prefix

import autoparser
from autoparser import ContentDelta, ToolCallArgsDelta, ToolCallEnd, ToolCallStart
from autoparser.engine.literalstream import PythonicCallStream, RelaxedArgStream

Q = '<|"|>'
ESC = "<escape>"


def json_list(dialect: str, calls: list[tuple[str, dict[str, Any]]], raw_args: list[str] | None = None) -> str:
    """``calls`` as the dialect writes a JSON array of calls (``raw_args``: argument texts as written)."""
    name_key, args_key = ("tool_name", "parameters") if dialect == "command-r" else ("name", "arguments")
    items = []
    for n, (name, args) in enumerate(calls):
        a = raw_args[n] if raw_args else json.dumps(args)
        items.append('{"' + name_key + '": ' + json.dumps(name) + ', "' + args_key + '": ' + a + "}")
    body = "[" + ", ".join(items) + "]"
    return {"granite": "<|tool_call|>" + body, "phi4": "functools" + body,
            "jamba": "<tool_calls>" + body + "</tool_calls>",
            "command-r": "<|START_ACTION|>" + body + "<|END_ACTION|>"}[dialect]


JSON_LISTS = ["granite", "phi4", "jamba", "command-r"]
PYTHONIC = ["pythonic", "lfm2"]
GEMMA = {"gemma4": ("<|tool_call>", "<tool_call|>", Q), "functiongemma": ("<start_function_call>",
                                                                        "<end_function_call>", ESC)}

TWO_CALLS = [("get_weather", {"city": "Paris", "days": 3}),
             ("search", {"q": 'say "hi"\n\\ é', "n": [1, 2.5, True, None], "opt": {"k": False}})]


def cases() -> list[tuple[str, str, list[tuple[str, dict[str, Any]]]]]:
    out = [(d, json_list(d, TWO_CALLS), TWO_CALLS) for d in JSON_LISTS]
    py = ('<|tool_call_start|>[get_weather(city="Paris", days=3), '
          "search(q='say \"hi\"\\n\\\\ \\xe9', n=[1, 2.5, True, None], opt={'k': False})]<|tool_call_end|>")
    out += [(d, py, TWO_CALLS) for d in PYTHONIC]
    for d, (open_, close, q) in GEMMA.items():
        text = (f"{open_}call:get_weather{{city:{q}Paris{q},days:3}}{close}"
                f"{open_}call:search{{q:{q}say \"hi\"\n\\ é{q},n:[1,2.5,true,null],opt:{{k:false}}}}{close}")
        out.append((d, text, TWO_CALLS))
    return out


CASES = cases()
ids = [c[0] for c in CASES]


def call_events(events: list[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, (ToolCallStart, ToolCallArgsDelta, ToolCallEnd))]


def feed(dialect: str, chunks: list[str], **kw: Any) -> tuple[list[list[Any]], Any]:
    """Events per chunk (the close() events last), and the result."""
    p = autoparser.get_profile(dialect).parser(**kw)
    out = [p.feed(c) for c in chunks]
    out.append(p.close())
    return out, p.result()


def check_stream(per_chunk: list[list[Any]], where: str) -> dict[int, str]:
    """Deltas valid-JSON prefixes after every event; each call's deltas equal its end arguments."""
    sent: dict[int, str] = {}
    for events in per_chunk:
        for e in events:
            if isinstance(e, ToolCallStart):
                assert e.index not in sent, where
                sent[e.index] = ""
            elif isinstance(e, ToolCallArgsDelta):
                sent[e.index] += e.text
                json.loads(close_json_prefix(sent[e.index]))
            elif isinstance(e, ToolCallEnd):
                assert json.loads(sent[e.index]) == e.arguments, where
    return sent


@pytest.mark.parametrize(("dialect", "text", "want"), CASES, ids=ids)
def test_whole_per_character_and_every_split_point(dialect: str, text: str, want: list[Any]) -> None:
    whole, res = feed(dialect, [text])
    assert [(c.name, c.arguments, c.status) for c in res.tool_calls] == [(n, a, "ok") for n, a in want]
    assert res.content == "" and res.finish == "tool_calls"
    ref = coalesce([e for ev in whole for e in ev])
    splits = [list(text)] + [[text[:k], text[k:]] for k in range(1, len(text))]
    for chunks in splits:
        per, res2 = feed(dialect, chunks)
        where = f"{dialect} {len(chunks)} chunks, first {chunks[0]!r}"
        assert coalesce([e for ev in per for e in ev]) == ref, where
        sent = check_stream(per, where)
        assert [json.loads(s) for s in sent.values()] == [a for _, a in want], where
        assert res2.tool_calls == res.tool_calls or [(c.name, c.arguments) for c in res2.tool_calls] == [
            (c.name, c.arguments) for c in res.tool_calls], where


@pytest.mark.parametrize(("dialect", "text", "want"), CASES, ids=ids)
def test_streams_call_by_call_before_the_list_ends(dialect: str, text: str, want: list[Any]) -> None:
    per, res = feed(dialect, list(text))
    at: dict[tuple[str, int], int] = {}
    for k, events in enumerate(per):
        for e in events:
            if isinstance(e, (ToolCallStart, ToolCallEnd)):
                at.setdefault((type(e).__name__, e.index), k + 1)
    second = text.index("search")
    # the first call ends before the second one's name is there, the second starts before the end
    assert at[("ToolCallEnd", 0)] <= second
    assert at[("ToolCallStart", 1)] < len(text) - 20
    assert sum(isinstance(e, ToolCallArgsDelta) for ev in per for e in ev) > 10
    assert [c.name for c in res.tool_calls] == ["get_weather", "search"]


@pytest.mark.parametrize(("dialect", "text", "want"), CASES, ids=ids)
def test_fail_closed_mode_sends_each_call_whole(dialect: str, text: str, want: list[Any]) -> None:
    per, res = feed(dialect, list(text), stream_arguments=False)
    calls = [(k, e) for k, ev in enumerate(per) for e in ev
             if isinstance(e, (ToolCallStart, ToolCallArgsDelta, ToolCallEnd))]
    assert len(calls) == 6 and sum(isinstance(e, ToolCallArgsDelta) for _, e in calls) == 2
    assert [(c.name, c.arguments) for c in res.tool_calls] == want


BIG = "x" * 20_000


def long_call(dialect: str) -> tuple[str, str]:
    """A text whose first call has a 20 kB string argument; and the text just before the value."""
    if dialect in JSON_LISTS:
        text = json_list(dialect, [("write_file", {"content": BIG, "mode": "w"}), ("f", {})])
        return text, text[:text.index('"content": "') + len('"content": "')]
    if dialect in PYTHONIC:
        head = "<|tool_call_start|>[write_file(content='"
        return head + BIG + "', mode='w'), f()]<|tool_call_end|>", head
    open_, close, q = GEMMA[dialect]
    head = f"{open_}call:write_file{{content:{q}"
    return head + BIG + f"{q},mode:{q}w{q}}}{close}", head


@pytest.mark.parametrize("dialect", [*JSON_LISTS, *PYTHONIC, *GEMMA])
def test_long_string_argument_streams_early(dialect: str) -> None:
    text, head = long_call(dialect)
    p = autoparser.get_profile(dialect).parser()
    first = None
    deltas = []
    for k in range(0, len(text), 4):
        for e in p.feed(text[k:k + 4]):
            if isinstance(e, ToolCallArgsDelta) and e.index == 0:
                deltas.append(e.text)
                if first is None and "x" in e.text:
                    first = min(k + 4, len(text))
    p.close()
    assert first is not None and first - len(head) <= 64
    assert len(deltas) >= 300
    assert json.loads("".join(deltas)) == {"content": BIG, "mode": "w"}
    assert p.result().tool_calls[0].arguments == {"content": BIG, "mode": "w"}


def truncated(dialect: str) -> tuple[str, dict[str, Any]]:
    """A second call cut inside its arguments, and what of it was complete."""
    if dialect in JSON_LISTS:
        text = json_list(dialect, TWO_CALLS[:1])
        text = text[:text.index("]")] + ', {"' + ("tool_name" if dialect == "command-r" else "name") + \
            '": "search", "' + ("parameters" if dialect == "command-r" else "arguments") + '": {"n": 7, "q": "ab'
        return text, {"n": 7, "q": "ab"}
    if dialect in PYTHONIC:
        return '<|tool_call_start|>[get_weather(city="Paris", days=3), search(n=7, q="ab', {"n": 7, "q": "ab"}
    open_, close, q = GEMMA[dialect]
    return f"{open_}call:get_weather{{city:{q}Paris{q},days:3}}{close}{open_}call:search{{n:7,q:{q}ab", \
        {"n": 7, "q": "ab"}


@pytest.mark.parametrize("dialect", [*JSON_LISTS, *PYTHONIC, *GEMMA])
def test_truncated_after_start_is_a_truncated_call(dialect: str) -> None:
    text, partial = truncated(dialect)
    for chunks in ([text], list(text), [text[:len(text) // 2], text[len(text) // 2:]]):
        per, res = feed(dialect, chunks)
        ends = [e for ev in per for e in ev if isinstance(e, ToolCallEnd)]
        assert [(e.arguments, e.status) for e in ends] == [(TWO_CALLS[0][1], "ok"), (partial, "truncated")]
        assert res.finish == "length"
        assert [(c.name, c.status) for c in res.tool_calls] == [("get_weather", "ok"), ("search", "truncated")]
        assert not any(isinstance(e, ContentDelta) and e.text.strip() for ev in per for e in ev)
        check_stream(per, dialect)


def test_list_broken_after_a_streamed_call_keeps_that_call() -> None:
    """A JSON list whose second element is not a call: the first, already ended, stays."""
    text = '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, 42]'
    for chunks in (list(text), [text[:60], text[60:]]):
        per, res = feed("granite", chunks)
        assert [(c.name, c.arguments) for c in res.tool_calls] == [("get_weather", {"city": "Paris"})]
        assert "invalid_call" in {i.code for i in res.issues}
        check_stream(per, "granite")


def test_bare_pythonic_list_still_waits_until_complete() -> None:
    """No marker: ``[f(...)`` may still be prose, so nothing is announced before the list closes."""
    text = "[get_weather(city='Paris', days=3)]"
    per, res = feed("pythonic", list(text))
    assert all(not call_events(ev) for ev in per[:-2])
    assert [(c.name, c.arguments) for c in res.tool_calls] == [("get_weather", {"city": "Paris", "days": 3})]


# -- building blocks, at every split point ---------------------------------------------------------

PY_CALLS = [
    ('get_weather(city="Paris", days=3)', {"city": "Paris", "days": 3}),
    ("f()", {}),
    ("f(a='x\\n\\'y\\x41\\u00e9\\N{BULLET}\\101z', b=[1, (2, 'a)b'), {'k': None}], c=True, d=-1.5e3,)",
     {"a": "x\n'yAé\u2022Az", "b": [1, [2, "a)b"], {"k": None}], "c": True, "d": -1500.0}),
    ("m.f( a = '''tri'ple''q''' , b=\"\"\"x\"\"\", c='', d=r'\\d\\'', e='a' \"b\")",
     {"a": "tri'ple''q", "b": "x", "c": "", "d": "\\d\\'", "e": "ab"}),
    ("f(a='\\\nb', b=\"\"\"\"\"\")", {"a": "b", "b": ""}),
]
RELAXED = [
    ("{city:<escape>Paris<escape>,days:3}", ESC, {"city": "Paris", "days": 3}),
    ('{ a : <|"|>x<|"|> , "b c": "q\\"", n: [1, {x:<|"|>]}<|"|>}], t:true, e:{},}', Q,
     {"a": "x", "b c": 'q"', "n": [1, {"x": "]}"}], "t": True, "e": {}}),
    ("{}", ESC, {}),
    ("{<escape>k<escape>:<escape><esc<escape>, z: 007}", ESC, {"k": "<esc", "z": 7}),
]


def transcode_at_splits(make: Any, text: str, want: dict[str, Any], tail: str) -> None:
    full = text + tail
    for k in range(len(full) + 1):
        stream = make()
        sent = ""
        end = None
        for a, b in ((0, k), (k, len(full))):
            r = stream.feed(full[a:b])
            sent += stream.take()
            if sent:
                json.loads(sent + stream.closing())
            if stream.finished and end is None:
                end = a + r
        assert stream.finished and not stream.dead, k
        assert json.loads(sent) == want, k
        assert end == len(text), k  # where the call ended: the text after it is not consumed


@pytest.mark.parametrize(("text", "want"), PY_CALLS)
def test_pythonic_transcoder_every_split_point(text: str, want: dict[str, Any]) -> None:
    transcode_at_splits(PythonicCallStream, text, want, ", g()]")


@pytest.mark.parametrize(("text", "delim", "want"), RELAXED)
def test_relaxed_transcoder_every_split_point(text: str, delim: str, want: dict[str, Any]) -> None:
    transcode_at_splits(lambda: RelaxedArgStream([(delim, delim)]), text, want, "\n<tool_call|>")


# -- properties: random arguments in each syntax, random chunkings --------------------------------

scalars = (st.none() | st.booleans() | st.integers(-10**9, 10**9)
           | st.floats(allow_nan=False, allow_infinity=False, width=32)
           | st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12))
nested = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.from_regex(r"[a-z]{1,5}", fullmatch=True), inner, max_size=3),
                      max_leaves=8)
# a Python keyword (``in=1``) is not a keyword argument: such a call is malformed (not generated)
keys = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True).filter(lambda k: not keyword.iskeyword(k))
arguments = st.dictionaries(keys, nested, max_size=4)


def py_literal(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(repr(k) + ": " + py_literal(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(py_literal(x) for x in v) + "]"
    return repr(v)


def relaxed(v: Any, q: str) -> str:
    if isinstance(v, dict):
        return "{" + ",".join(k + ":" + relaxed(x, q) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(relaxed(x, q) for x in v) + "]"
    if isinstance(v, str):
        return q + v + q
    return json.dumps(v)


def render(dialect: str, calls: list[dict[str, Any]]) -> str:
    if dialect in JSON_LISTS:
        return json_list(dialect, [(f"f{n}", a) for n, a in enumerate(calls)])
    if dialect in PYTHONIC:
        return "<|tool_call_start|>[" + ", ".join(
            f"f{n}(" + ", ".join(f"{k}={py_literal(v)}" for k, v in a.items()) + ")"
            for n, a in enumerate(calls)) + "]<|tool_call_end|>"
    open_, close, q = GEMMA[dialect]
    return "".join(f"{open_}call:f{n}{relaxed(a, q)}{close}" for n, a in enumerate(calls))


def chunked(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted({c % max(1, len(text)) for c in cuts} - {0}), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@settings(deadline=None, database=None, max_examples=60)
@given(dialect=st.sampled_from([*JSON_LISTS, *PYTHONIC, *GEMMA]),
       calls=st.lists(arguments, min_size=1, max_size=3), data=st.data())
def test_random_arguments_stream_to_what_was_written(dialect: str, calls: list[dict[str, Any]],
                                                     data: Any) -> None:
    q = GEMMA[dialect][2] if dialect in GEMMA else ""
    if q and any("<" in json.dumps(a, ensure_ascii=False) for a in calls):
        return  # a verbatim relaxed string cannot hold its own delimiter (or a marker's start)
    text = render(dialect, calls)
    want = calls
    cuts = data.draw(st.lists(st.integers(1, 10**6), max_size=20))
    per, res = feed(dialect, chunked(text, cuts))
    sent = check_stream(per, dialect)
    assert [json.loads(s) for s in sent.values()] == want
    assert [(c.name, c.arguments, c.status) for c in res.tool_calls] == [
        (f"f{n}", a, "ok") for n, a in enumerate(want)]
    whole, _ = feed(dialect, [text])
    assert coalesce([e for ev in per for e in ev]) == coalesce([e for ev in whole for e in ev])


def test_text_only_the_complete_parse_reads_still_gives_its_arguments() -> None:
    """A Python comment, a prefixed string after implicit concatenation: the transcoder stops there;
    what it sent is a prefix of the parsed arguments' JSON, so the rest of that JSON follows."""
    text = ("<|tool_call_start|>[f(a='a' r'\\b', c=1), g(x=1,  # note\n y=2), h(z='''q''')]"
            "<|tool_call_end|>")
    want = [("f", {"a": "a\\b", "c": 1}, "ok"), ("g", {"x": 1, "y": 2}, "ok"), ("h", {"z": "q"}, "ok")]
    for chunks in ([text], list(text), [text[:30], text[30:]]):
        per, res = feed("pythonic", chunks)
        check_stream(per, "pythonic")
        assert [(c.name, c.arguments, c.status) for c in res.tool_calls] == want
        assert "stream_mismatch" not in {i.code for i in res.issues}


STRICT_TOOLS = [{"type": "function", "function": {"name": n, "parameters": {
    "type": "object", "properties": {"city": {"type": "integer"}, "q": {"type": "integer"}}}}}
    for n in ("get_weather", "search")]


@pytest.mark.parametrize(("dialect", "text", "want"), CASES, ids=ids)
def test_issues_of_calls_ended_early_are_located_the_same_for_every_chunking(
        dialect: str, text: str, want: list[Any]) -> None:
    _, res = feed(dialect, [text], tools=STRICT_TOOLS)
    assert [c.status for c in res.tool_calls] == ["invalid", "invalid"]
    assert [i.code for i in res.issues].count("schema_mismatch") == 2
    for chunks in (list(text), [text[:40], text[40:]]):
        _, res2 = feed(dialect, chunks, tools=STRICT_TOOLS)
        assert res2.issues == res.issues


KNOWN = [{"type": "function", "function": {"name": "known", "parameters": {
    "type": "object", "properties": {"a": {"type": "string"}}}}}]


@pytest.mark.parametrize("policy", ["drop", "forward"])
@pytest.mark.parametrize("dialect", ["granite", "pythonic"])
def test_unknown_tools_in_a_list(dialect: str, policy: str) -> None:
    """A dropped unknown call is never announced, and the known call after it still streams."""
    z = "z" * 100
    text = {"granite": '<|tool_call|>[{"name": "other", "arguments": {"a": "x"}}, {"name": "known", '
                       '"arguments": {"a": "' + z + '"}}, {"name": "other", "arguments": {}}]',
            "pythonic": f"<|tool_call_start|>[other(a='x'), known(a='{z}'), other()]<|tool_call_end|>"}[dialect]
    want = [("other", False), ("known", True), ("other", False)] if policy == "forward" else [("known", True)]
    ref = None
    for chunks in ([text], list(text), [text[:50], text[50:]]):
        per, res = feed(dialect, chunks, tools=KNOWN, policy=autoparser.Policy(unknown_tool=policy))
        check_stream(per, dialect)
        starts = [e.name for ev in per for e in ev if isinstance(e, ToolCallStart)]
        assert starts == [n for n, _ in want]
        assert [(c.name, c.known) for c in res.tool_calls] == want
        got = (coalesce([e for ev in per for e in ev]), res.issues)
        assert ref is None or got == ref
        ref = got
    per, _ = feed(dialect, list(text), tools=KNOWN, policy=autoparser.Policy(unknown_tool=policy))
    known_deltas = [e for ev in per for e in ev if isinstance(e, ToolCallArgsDelta) and "z" in e.text]
    assert len(known_deltas) >= 50


@pytest.mark.parametrize("dialect", ["granite", "pythonic"])
def test_list_cut_between_calls_keeps_the_complete_ones(dialect: str) -> None:
    """Cut after a complete call, before the next one is certain: the complete call stays, the cut
    text is dropped (not content), and finish is tool_calls: the client runs what it got."""
    text = {"granite": '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "sea',
            "pythonic": "<|tool_call_start|>[get_weather(city='Paris'), sea"}[dialect]
    for chunks in ([text], list(text)):
        per, res = feed(dialect, chunks)
        check_stream(per, dialect)
        assert [(c.name, c.arguments, c.status) for c in res.tool_calls] == [
            ("get_weather", {"city": "Paris"}, "ok")]
        assert res.content == "" and res.finish == "tool_calls"
        assert "truncated_call" in {i.code for i in res.issues}
