"""Policies: the lenient default never raises and records issues; strict raises with a position;
every per-situation override does what it says, and nothing parsed before an error is lost."""

from __future__ import annotations

import pytest

import autoparser
from autoparser import ParseError, Policy

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"]}}}]

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


def parse(text: str, policy: object = None, dialect: str = "hermes", tools: object = TOOLS,
          reasoning: str | None = None) -> autoparser.Result:
    return autoparser.parse(text, dialect, tools=tools, reasoning=reasoning, policy=policy)  # type: ignore[arg-type]


def codes(res: autoparser.Result) -> list[str]:
    return [i.code for i in res.issues]


# -- lenient default: repairs are issues ------------------------------------------------------------

def test_lenient_repairs_are_recorded_with_positions() -> None:
    res = parse('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"</tool_call>')
    assert res.tool_calls[0].arguments == {"city": "Paris"}
    assert res.tool_calls[0].status == "repaired"
    assert "repaired_arguments" in codes(res)
    assert all(i.position >= 0 for i in res.issues)


def test_lenient_truncated_call_is_content_and_an_issue() -> None:
    res = parse('<tool_call>{"name": "get_weather", "arguments": {"ci')
    assert res.tool_calls == []
    assert res.content.startswith("<tool_call>")
    assert "truncated_call" in codes(res)
    assert res.finish == "length"


def test_unknown_tool_forwarded_and_flagged() -> None:
    res = parse('<tool_call>{"name": "launch", "arguments": {}}</tool_call>')
    assert [c.name for c in res.tool_calls] == ["launch"]
    assert res.tool_calls[0].known is False
    assert "unknown_tool" in codes(res)


def test_schema_mismatch_is_a_status_not_a_drop() -> None:
    res = parse('<tool_call>{"name": "get_weather", "arguments": {"days": "3"}}</tool_call>')
    assert res.tool_calls[0].status == "invalid"
    assert res.tool_calls[0].arguments == {"days": "3"}  # JSON dialects keep the type as written
    assert "schema_mismatch" in codes(res)


def test_unclosed_reasoning_is_reasoning_and_an_issue() -> None:
    res = parse("<think>still thinking", tools=None)
    assert res.reasoning == "still thinking"
    assert "unclosed_reasoning" in codes(res)


# -- strict: raises with a position, keeps what was parsed -------------------------------------------

@pytest.mark.parametrize("text,code", [
    ('<tool_call>{"name": "get_weather", "arguments": {"ci', "truncated_call"),
    ("<tool_call>not json</tool_call>", "invalid_call"),
    ('<tool_call>{"name": "launch", "arguments": {}}</tool_call>', "unknown_tool"),
    ('<tool_call>{"name": "get_weather", "arguments": {"days": 2}}</tool_call>', "schema_mismatch"),
    ("<think>never closed", "unclosed_reasoning"),
    (f"{CALL} and then more", "text_after_call"),
])
def test_strict_raises_with_position(text: str, code: str) -> None:
    p = autoparser.get_profile("hermes").parser(tools=TOOLS, policy="strict")
    with pytest.raises(ParseError) as info:
        p.feed(text)
        p.close()
    assert info.value.code == code
    assert info.value.position >= 0
    assert "at character" in str(info.value)
    assert code in [i.code for i in p.result().issues]


def test_strict_keeps_what_was_parsed_before_the_error() -> None:
    p = autoparser.get_profile("hermes").parser(tools=TOOLS, policy="strict")
    p.feed("Hello. " + CALL)
    with pytest.raises(ParseError):
        p.feed("<tool_call>oops</tool_call>")
    res = p.result()
    assert res.content.startswith("Hello.")
    assert [c.name for c in res.tool_calls] == ["get_weather"]


def test_strict_accepts_clean_output() -> None:
    res = parse("<think>plan</think>Sure. " + CALL, policy="strict")
    assert res.reasoning == "plan" and len(res.tool_calls) == 1 and res.issues == []


# -- per-situation overrides ----------------------------------------------------------------------------

def test_unknown_tool_drop() -> None:
    res = parse('<tool_call>{"name": "launch", "arguments": {}}</tool_call>', Policy(unknown_tool="drop"))
    assert res.tool_calls == []


def test_text_after_call_drop() -> None:
    res = parse(f"Before. {CALL} After.", Policy(text_after_call="drop"))
    assert res.content.strip() == "Before."
    assert len(res.tool_calls) == 1


def test_truncated_call_drop() -> None:
    res = parse('<tool_call>{"name": "get_weather", "arguments": {"ci', Policy(truncated_call="drop"))
    assert res.content == "" and res.tool_calls == []


@pytest.mark.parametrize("choice,calls,reasoning", [
    ("defer", 0, f"a {CALL} b"),        # the block closes later: it was reasoning
    ("reasoning", 0, f"a {CALL} b"),
    ("call", 1, "a "),                  # ends reasoning at the marker at once
])
def test_call_in_reasoning_choices(choice: str, calls: int, reasoning: str) -> None:
    res = parse(f"<think>a {CALL} b</think>done", Policy(call_in_reasoning=choice))  # type: ignore[arg-type]
    assert len(res.tool_calls) == calls
    assert res.reasoning.strip() == reasoning.strip()


def test_call_in_open_reasoning_that_never_closes_is_a_call() -> None:
    res = parse(f"<think>let me call {CALL}")
    assert [c.name for c in res.tool_calls] == ["get_weather"]
    assert res.reasoning.strip() == "let me call"
    assert "call_in_reasoning" in codes(res)


def test_call_in_reasoning_raise() -> None:
    with pytest.raises(ParseError):
        parse(f"<think>a {CALL}", Policy(call_in_reasoning="raise"))


def test_policy_string_and_errors() -> None:
    assert Policy.coerce("lenient") == Policy()
    assert Policy.coerce("strict") == Policy.strict()
    with pytest.raises(autoparser.AutoparserError):
        Policy.coerce("paranoid")
