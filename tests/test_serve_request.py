"""The server's pure parts, without a model: request checking, the two seams, the token budget.

Every rejection is asserted on its structured fields (status, ``param``, ``code``), never on prose.
The grammar seam is checked with Python's ``re`` against text written by ``example_calls`` in the
same layout, both ways: what ``tool_choice`` allows matches, what it forbids does not.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from autoparser import get_profile, parse
from autoparser.grammar import example_calls
from autoparser.serve.errors import ApiError
from autoparser.serve.plan import _budget, _options
from autoparser.serve.request import ChatRequest, ChoiceMode, ToolChoice, parse_chat_request
from autoparser.serve.seams import history_for_template, tool_grammar

MODEL = "m"
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "pattern": "[A-Z][a-z]{2,12}"}}, "required": ["city"],
    "additionalProperties": False}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"zone": {"type": "string", "enum": ["UTC", "CET"]}}, "required": ["zone"]}}}
USER = [{"role": "user", "content": "hi"}]


def body(**kw: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": USER, **kw}


def rejected(payload: object) -> ApiError:
    with pytest.raises(ApiError) as info:
        parse_chat_request(payload, [MODEL])
    return info.value


# -- request checking ---------------------------------------------------------------------------


@pytest.mark.parametrize(("payload", "param"), [
    ([1, 2], None),
    ({"messages": USER}, "model"),
    ({"model": MODEL}, "messages"),
    (body(messages=[]), "messages"),
    (body(messages="hi"), "messages"),
    (body(messages=[{"role": "robot", "content": "x"}]), "messages[0].role"),
    (body(messages=[{"role": "user"}]), "messages[0].content"),
    (body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]),
     "messages[0].content[0].type"),
    (body(messages=[{"role": "tool", "content": "r"}]), "messages[0].tool_call_id"),
    (body(messages=[{"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function",
                                                                           "function": {"name": "f",
                                                                                        "arguments": {}}}]}]),
     "messages[0].tool_calls[0].function.arguments"),
    (body(max_tokens="ten"), "max_tokens"),
    (body(max_tokens=0), "max_tokens"),
    (body(max_completion_tokens=True), "max_completion_tokens"),
    (body(temperature=3), "temperature"),
    (body(stream="yes"), "stream"),
    (body(stream_options={"include_usage": True}), "stream_options"),
    (body(n=2), "n"),
    (body(stop=["a", "b", "c", "d", "e"]), "stop"),
    (body(tools=[]), "tools"),
    (body(tools=[{"type": "retrieval"}]), "tools[0].type"),
    (body(tools=[{"type": "function", "function": {"name": "bad name"}}]), "tools[0].function.name"),
    (body(tools=[WEATHER, WEATHER]), "tools[1].function.name"),
    (body(tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}]),
     "tools[0].function.parameters"),
    (body(tool_choice="required"), "tool_choice"),
    (body(tools=[WEATHER], tool_choice="sometimes"), "tool_choice"),
    (body(tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "nope"}}),
     "tool_choice.function.name"),
    (body(logprobs=True), "logprobs"),
    (body(response_format={"type": "json_object"}), "response_format"),
    (body(frobnicate=1), "frobnicate"),
])
def test_a_bad_request_is_a_400_naming_the_field(payload: object, param: str | None) -> None:
    err = rejected(payload)
    assert (err.status, err.type, err.param) == (400, "invalid_request_error", param)
    assert set(err.body()["error"]) == {"message", "type", "param", "code"}


def test_an_unknown_model_is_a_404_model_not_found() -> None:
    err = rejected(body(model="gpt-9"))
    assert (err.status, err.code, err.param) == (404, "model_not_found", "model")


def test_a_good_request_reads_into_its_meaning() -> None:
    req = parse_chat_request(body(
        messages=[{"role": "developer", "content": [{"type": "text", "text": "be "},
                                                    {"type": "text", "text": "brief"}]},
                  {"role": "user", "content": "hi", "name": "ann"}],
        tools=[WEATHER, TIME], parallel_tool_calls=False, max_tokens=9, max_completion_tokens=7, stream=True,
        stream_options={"include_usage": True}, temperature=0, seed=3, stop="\n", user="ignored"), [MODEL])
    assert req.messages[0] == {"role": "developer", "content": "be brief"}
    assert req.messages[1] == {"role": "user", "content": "hi", "name": "ann"}
    assert req.tool_choice == ToolChoice(ChoiceMode.AUTO)  # tools given, no choice: auto
    assert (req.parallel_tool_calls, req.max_tokens, req.stream, req.include_usage) == (False, 7, True, True)
    assert (req.temperature, req.seed, req.stop) == (0.0, 3, ("\n",))
    assert parse_chat_request(body(), [MODEL]).tool_choice == ToolChoice(ChoiceMode.NONE)  # no tools: none
    named = parse_chat_request(body(tools=[WEATHER, TIME], tool_choice={"type": "function",
                                                                        "function": {"name": "get_time"}}), [MODEL])
    assert named.tool_choice == ToolChoice(ChoiceMode.NAMED, "get_time")


# -- the grammar seam ---------------------------------------------------------------------------


def _regex(spec: dict[str, Any] | None) -> re.Pattern[str]:
    assert spec is not None and spec["kind"] == "regex"
    return re.compile(spec["regex"], re.S)


def _request(choice: ToolChoice, parallel: bool = True) -> ChatRequest:
    return ChatRequest(model=MODEL, messages=tuple(USER), tools=(WEATHER, TIME), tool_choice=choice,
                       parallel_tool_calls=parallel)


PARIS = ("get_weather", {"city": "Paris"})
UTC = ("get_time", {"zone": "UTC"})


@pytest.mark.parametrize("dialect", ["hermes", "mistral", "qwen3-coder", "llama3-json"])
def test_tool_choice_is_what_the_grammar_allows(dialect: str) -> None:
    prof = get_profile(dialect)

    def grammar(choice: ToolChoice, parallel: bool = True, most: int | None = 2) -> re.Pattern[str]:
        req = _request(choice, parallel)
        return _regex(tool_grammar(prof, req.tools, req.tool_choice, parallel=parallel, max_calls=most))

    def allows(pattern: re.Pattern[str], *calls: tuple[str, dict[str, Any]]) -> bool:
        text = example_calls(prof, list(calls))
        if pattern.fullmatch(text) is None:
            return False
        parsed = parse(text, prof, tools=[WEATHER, TIME]).tool_calls  # the parser reads what the grammar forces
        assert [(c.name, c.arguments) for c in parsed] == list(calls)
        return True

    required = grammar(ToolChoice(ChoiceMode.REQUIRED))
    assert allows(required, PARIS) and allows(required, UTC) and allows(required, PARIS, UTC)
    assert not allows(required, PARIS, UTC, PARIS)  # the server's bound on parallel calls
    assert not required.fullmatch("It is sunny.")  # required: a call, never text
    single = grammar(ToolChoice(ChoiceMode.REQUIRED), parallel=False)
    assert allows(single, PARIS) and not allows(single, PARIS, UTC)  # parallel_tool_calls=False: one call
    named = grammar(ToolChoice(ChoiceMode.NAMED, "get_time"))
    assert allows(named, UTC) and not allows(named, PARIS) and not allows(named, UTC, UTC)
    assert not allows(required, ("get_weather", {"city": "paris"}))  # the schema's pattern holds
    assert tool_grammar(prof, (WEATHER,), ToolChoice(ChoiceMode.NONE), parallel=True, max_calls=None) is None


def test_auto_lets_text_through_and_forces_a_started_call() -> None:
    prof = get_profile("hermes")
    one = tool_grammar(prof, (WEATHER, TIME), ToolChoice(ChoiceMode.AUTO), parallel=False, max_calls=None)
    many = tool_grammar(prof, (WEATHER, TIME), ToolChoice(ChoiceMode.AUTO), parallel=True, max_calls=None)
    assert one is not None and many is not None
    assert one["kind"] == many["kind"] == "structural_tags"
    tag, tags = one["tag"], many["tag"]
    assert tag["type"] == "triggered_tags" and tag["triggers"] == ["<tool_call>"] and not tag["at_least_one"]
    assert (tag["stop_after_first"], tags["stop_after_first"]) == (True, False)


def test_a_tool_schema_no_grammar_can_force_is_a_400_naming_tools() -> None:
    with pytest.raises(ApiError) as info:  # a profile without a call format cannot force a call
        tool_grammar(get_profile("hermes").replace(tools=None), (WEATHER,), ToolChoice(ChoiceMode.REQUIRED),
                     parallel=True, max_calls=None)
    assert (info.value.status, info.value.param) == (400, "tools")


# -- the history seam ---------------------------------------------------------------------------

HISTORY = (
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
)


def test_history_keeps_calls_for_a_template_that_writes_them() -> None:
    out = history_for_template(HISTORY, call_format=get_profile("hermes"), renders_calls=True)
    assert out[0] == {"role": "system", "content": "Be brief."}
    assert out[2]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert out[2]["tool_calls"][0]["id"] == "call_1" and out[3] == HISTORY[3]


def test_history_writes_calls_as_text_for_a_template_that_cannot() -> None:
    hermes = get_profile("hermes")
    out = history_for_template(HISTORY, call_format=hermes, renders_calls=False)
    assert "tool_calls" not in out[2]
    parsed = parse(out[2]["content"], hermes)  # the text is the call, in the format the model is asked to use
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [PARIS] and parsed.content.strip() == ""


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]"])
def test_history_with_unusable_arguments_is_a_400_naming_them(arguments: str) -> None:
    msg = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}]}
    with pytest.raises(ApiError) as info:
        history_for_template([msg], call_format=get_profile("hermes"), renders_calls=True)
    assert (info.value.status, info.value.param) == (400, "messages[0].tool_calls[0].function.arguments")


# -- budget and sampling ------------------------------------------------------------------------


def test_the_budget_fits_the_context_or_the_request_is_refused() -> None:
    assert _budget(100, 40, None, 512) == 60  # the default shrinks to the context left
    assert _budget(100, 40, 10, 512) == 10
    assert _budget(None, 10**6, None, 512) == 512  # unknown context: no check
    for asked, prompt in ((61, 40), (None, 100)):
        with pytest.raises(ApiError) as info:
            _budget(100, prompt, asked, 512)
        assert (info.value.status, info.value.code) == (400, "context_length_exceeded")


def test_temperature_zero_is_greedy_and_sampling_is_seeded() -> None:
    def opts(**kw: Any) -> dict[str, Any]:
        return _options(ChatRequest(model=MODEL, messages=tuple(USER), **kw), 16)

    assert opts(temperature=0.0)["do_sample"] is False
    assert opts(seed=5)["rng_seed"] == 5 and opts(seed=5)["temperature"] == 1.0  # OpenAI's default temperature
    unseeded = {opts()["rng_seed"] for _ in range(4)}
    assert len(unseeded) > 1  # no fixed seed: two requests do not sample alike
    assert opts(stop=("x",), temperature=0.0)["stop_strings"] == {"x"}


def test_importing_the_serve_package_imports_nothing_heavy() -> None:
    heavy = "('starlette', 'uvicorn', 'openvino', 'openvino_genai')"
    code = ("import sys, autoparser.serve, autoparser.serve.request, autoparser.serve.seams; "
            f"print(json.dumps([m for m in {heavy} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
