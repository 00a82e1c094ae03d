"""Strict means strict: every issue code, generated from ``IssueCode``, has an input that records it
in lenient mode, and under ``policy="strict"`` (and under its governing ``Policy`` field alone set
to ``"raise"``) that input raises ``ParseError`` with the same code at the same position, whole,
per character and at random splits; what was parsed before the error stays in ``result()``."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

import autoparser
from autoparser import ParseError, Policy
from autoparser.engine.issues import GOVERNED_BY, IssueCode


def _tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


WEATHER = [_tool("get_weather", {"type": "object", "properties": {"city": {"type": "string"},
                                                                   "days": {"type": "integer"}}})]
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
HERMES_SPECIAL = {"<tool_call>", "</tool_call>"}


@dataclass(frozen=True)
class Case:
    dialect: str
    text: str
    tools: Any = None
    lenient: dict[str, str] = field(default_factory=dict)  # the lenient policy that records the code
    kwargs: dict[str, Any] = field(default_factory=dict)   # more parser options (token mode)


CASES: dict[IssueCode, Case] = {
    IssueCode.call_in_reasoning: Case("hermes", f"<think>let me {CALL}", lenient={"call_in_reasoning": "call"}),
    IssueCode.coercion_fallback: Case(
        "qwen3-coder", "<tool_call><function=get_weather><parameter=days>\nsoon\n</parameter></function></tool_call>",
        WEATHER),
    IssueCode.double_encoded_arguments: Case(
        "hermes", '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}</tool_call>'),
    IssueCode.invalid_call: Case("hermes", "Hi <tool_call>not json</tool_call>"),
    IssueCode.invalid_header: Case("harmony", "<|start|>assistant<|channel|>final"),
    IssueCode.lookalike_marker: Case("hermes", CALL, kwargs={"special_tokens": HERMES_SPECIAL}),
    IssueCode.missing_end_marker: Case(
        "hermes", '<tool_call>{"name": "get_weather", "arguments": {}}<tool_call>{"name": "f", "arguments": {}}'),
    IssueCode.noncharacter: Case("hermes", "a\ufdd0b", kwargs={"special_tokens": HERMES_SPECIAL}),
    IssueCode.partial_value: Case("qwen3-coder", "<tool_call><function=get_weather><parameter=city>\nPar", WEATHER),
    IssueCode.repaired_arguments: Case(
        "hermes", '<tool_call>{"name": "get_weather", "arguments": {"city": "P"}</tool_call>'),
    IssueCode.schema_mismatch: Case(
        "hermes", '<tool_call>{"name": "get_weather", "arguments": {"days": "3"}}</tool_call>', WEATHER),
    IssueCode.schema_unusable: Case(
        "hermes", '<tool_call>{"name": "f", "arguments": {}}</tool_call>',
        [_tool("f", {"$ref": "https://example.com/schema.json"})]),
    # (a parameter repeated, the second cut off empty: the parse keeps the first, the stream sent both)
    IssueCode.stream_mismatch: Case("qwen3-coder", "<tool_call><function=f><parameter=a>p<parameter=a>"),
    IssueCode.text_after_call: Case("hermes", f"{CALL} and then more", lenient={"text_after_call": "drop"}),
    IssueCode.truncated_call: Case("hermes", 'Hi <tool_call>{"name": "get_weather", "arguments": {"ci'),
    IssueCode.unclosed_reasoning: Case("hermes", "<think>never closed"),
    IssueCode.unknown_tool: Case("hermes", '<tool_call>{"name": "launch", "arguments": {}}</tool_call>', WEATHER),
}


def chunkings(text: str) -> list[list[str]]:
    rng = random.Random(len(text))
    out = [[text], list(text)]
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 6))))
        out.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)])
    return out


def parse(case: Case, chunks: list[str], policy: Policy) -> autoparser.Result:
    parser = autoparser.get_profile(case.dialect).parser(tools=case.tools, policy=policy, **case.kwargs)
    for chunk in chunks:
        parser.feed(chunk)
    parser.close()
    return parser.result()


def lenient_issues(code: IssueCode) -> list[tuple[str, int]]:
    """What lenient mode records on the code's input (the code among them)."""
    case = CASES[code]
    res = parse(case, [case.text], Policy(**case.lenient))  # type: ignore[arg-type]
    found = [(i.code.value if isinstance(i.code, IssueCode) else i.code, i.position) for i in res.issues]
    assert code.value in [c for c, _ in found], res.issues
    return found


def test_every_code_has_a_case() -> None:
    assert set(CASES) == set(IssueCode)


@pytest.mark.parametrize("code", list(IssueCode), ids=[c.value for c in IssueCode])
@pytest.mark.parametrize("policy", ["strict", "its field"])
def test_strict_raises_where_lenient_records(code: IssueCode, policy: str) -> None:
    """``strict`` raises at the first issue lenient mode records; the code's governing field alone
    set to ``"raise"`` raises at the first issue it governs (this code's, on its input)."""
    case = CASES[code]
    found = lenient_issues(code)
    if policy == "strict":
        raising = Policy.strict()
        want = found[0]
    else:
        raising = Policy(**{**case.lenient, GOVERNED_BY[code]: "raise"})  # type: ignore[arg-type]
        want = next((c, p) for c, p in found if GOVERNED_BY[IssueCode(c)] == GOVERNED_BY[code])
        assert want[0] == code.value, found
    for chunks in chunkings(case.text):
        parser = autoparser.get_profile(case.dialect).parser(tools=case.tools, policy=raising, **case.kwargs)
        with pytest.raises(ParseError) as info:
            for chunk in chunks:
                parser.feed(chunk)
            parser.close()
        assert (info.value.code, info.value.position) == want, chunks
        assert f"at character {want[1]}" in str(info.value)
