"""Recoveries the peers' parsers make on real model output, each fed whole, at every split point
and one character at a time, with ``stream_arguments`` off and on: the result is written here by
hand and must be the same for every chunking.

Each case is a shape the peers' test suites assert (fixtures/peers/) reduced to what the rule is
about: nested XML values read by the schema, closing tags that do not match, several calls in one
call block, and the like.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import autoparser
from autoparser.compare import normalize, summary

NS = "]<]minimax[>["


def _chunkings(text: str) -> Iterator[list[str]]:
    yield [text]
    for k in range(1, len(text)):
        yield [text[:k], text[k:]]
    yield list(text)


def _parse(dialect: str, chunks: list[str], tools: Any, stream: bool) -> dict[str, Any]:
    parser = autoparser.get_profile(dialect).parser(tools=tools, stream_arguments=stream)
    for chunk in chunks:
        parser.feed(chunk)
    parser.close()
    return summary(parser.result())


def _tool(name: str, **props: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": props}}}


PLAN = _tool("plan", steps={"type": "array", "items": {"type": "object", "properties": {
    "id": {"type": "integer"}, "title": {"type": "string"}}}}, tags={"type": "array", "items": {"type": "string"}},
    note={"type": "string"})

PLAN_A = {"name": "plan", "arguments": {"note": "a"}}

#: (title, dialect, text, tools, expected, expected with stream_arguments=True when it differs: a
#: call announced before it turned out malformed stays a call, status "invalid")
CASES: list[tuple[str, str, str, Any, dict[str, Any], dict[str, Any] | None]] = [
    ("minimax-m3 array of objects as <item> elements", "minimax-m3",
     f'{NS}<tool_call>\n{NS}<invoke name="plan">{NS}<steps>{NS}<item>{NS}<id>1{NS}</id>{NS}<title>a b{NS}</title>'
     f"{NS}</item>{NS}<item>{NS}<id>2{NS}</id>{NS}<title>c{NS}</title>{NS}</item>{NS}</steps>{NS}<tags>{NS}<item>x"
     f"{NS}</item>{NS}<item>y{NS}</item>{NS}</tags>{NS}<note>{NS}<item>kept{NS}</item>{NS}</note>{NS}</invoke>\n"
     f"{NS}</tool_call>", [PLAN],
     {"tool_calls": [{"name": "plan", "arguments": {
         "steps": [{"id": 1, "title": "a b"}, {"id": 2, "title": "c"}], "tags": ["x", "y"],
         "note": f"{NS}<item>kept{NS}</item>"}}]}, None),
    ("minimax-m3 closing tag of another key: the block stays content", "minimax-m3",
     f'{NS}<tool_call>{NS}<invoke name="plan">{NS}<note>hi{NS}</wrong>{NS}</invoke>{NS}</tool_call>', [PLAN],
     {"content": f'{NS}<tool_call>{NS}<invoke name="plan">{NS}<note>hi{NS}</wrong>{NS}</invoke>{NS}</tool_call>'},
     {"tool_calls": [{"name": "plan", "arguments": {"note": f"hi{NS}</wrong>"}}]}),
    ("minimax-m3 second invoke cut off: its text stays content", "minimax-m3",
     f'Hi {NS}<tool_call>\n{NS}<invoke name="plan">{NS}<note>a{NS}</note>{NS}</invoke>\n{NS}<invoke name="plan">'
     f"{NS}<note>b", [PLAN],
     {"content": f'Hi {NS}<invoke name="plan">{NS}<note>b', "tool_calls": [PLAN_A]},
     {"content": "Hi", "tool_calls": [PLAN_A, {"name": "plan", "arguments": {"note": "b"}}]}),
    ("gemma4 several call: bodies in one block, no tools given", "gemma4",
     '<|tool_call>call:a{x:<|"|>1<|"|>}call:b{y:{z:true}}\ncall:c{}<tool_call|>', None,
     {"tool_calls": [{"name": "a", "arguments": {"x": "1"}}, {"name": "b", "arguments": {"y": {"z": True}}},
                     {"name": "c", "arguments": {}}]}, None),
    ("gemma4 a stray colon before call:", "gemma4", 'Hi <|tool_call>:call:a{x:<|"|>1<|"|>}<tool_call|>', None,
     {"content": "Hi", "tool_calls": [{"name": "a", "arguments": {"x": "1"}}]}, None),
    ("attribute values are unescaped: a name and a key written as quoted attributes", "minimax-m2",
     '<minimax:tool_call>\n<invoke name="a&amp;b">\n<parameter name="k&lt;1">say &quot;hi&quot;</parameter>\n'
     "</invoke>\n</minimax:tool_call>", None,
     {"tool_calls": [{"name": "a&b", "arguments": {"k<1": "say &quot;hi&quot;"}}]}, None),
    ("llama3-json bare calls separated by ';' (no <|python_tag|>)", "llama3-json",
     '{"name": "a", "parameters": {"x": 1}} ; {"name": "b", "parameters": {}};{"name": "c", "parameters": {"y": [2]}}',
     None, {"tool_calls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}},
                           {"name": "c", "arguments": {"y": [2]}}]}, None),
    ("a JSON object naming something, with no arguments but other members, is no call", "llama3-json",
     '{"name": "Jane Doe", "location": "unknown"}', None,
     {"content": '{"name": "Jane Doe", "location": "unknown"}'}, None),
    ("arguments under another runtime's key are the arguments", "hermes",
     '<tool_call>{"name": "a", "args": {"x": 1}}</tool_call><tool_call>{"name": "b", "input": {"y": 2}}</tool_call>',
     None, {"tool_calls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {"y": 2}}]}, None),
    ("a self-closing invoke element is a call with no arguments", "deepseek-v3.2",
     '<｜DSML｜function_calls>\n<｜DSML｜invoke name="plan">\n<｜DSML｜parameter name="note" string="true">a'
     '</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name="submit" />\n</｜DSML｜function_calls>', None,
     {"tool_calls": [PLAN_A, {"name": "submit", "arguments": {}}]}, None),
    ("Llama 4 <|python_start|> call lists", "pythonic", "Hi <|python_start|>[a(x=1), b()]<|python_end|> ok", None,
     {"content": "Hi  ok", "tool_calls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]}, None),
    ("a JSON call inside a GLM call block is read as JSON", "glm",
     '<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>', None,
     {"tool_calls": [{"name": "a", "arguments": {"x": 1}}]}, None),
    ("a value on lines of its own loses those two line breaks; a value ending in one keeps it", "minimax-m2",
     '<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">\nx\n\n</parameter>\n<parameter name="b">y\n'
     "</parameter>\n</invoke>\n</minimax:tool_call>", None,
     {"tool_calls": [{"name": "f", "arguments": {"a": "x\n", "b": "y\n"}}]}, None),
    ("gemma4 thought channel label without its newline", "gemma4", "<|channel>thought<channel|>Hello", None,
     {"content": "Hello"}, None),
]


@pytest.mark.parametrize(("dialect", "text", "tools", "expected", "streamed"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
@pytest.mark.parametrize("stream", [False, True])
def test_recovery(dialect: str, text: str, tools: Any, expected: dict[str, Any],
                  streamed: dict[str, Any] | None, stream: bool) -> None:
    want = normalize(streamed if stream and streamed is not None else expected)
    for chunks in _chunkings(text):
        assert _parse(dialect, chunks, tools, stream) == want, chunks
