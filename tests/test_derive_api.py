"""analyze / load / detect: the API around derivation, with a small template written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sample_templates import HERMES_LIKE as TEMPLATE

import autoparser
from autoparser.errors import AutoparserError, SourceError


def test_analyze_derives_and_names() -> None:
    p = autoparser.analyze(TEMPLATE, known=False)
    assert p.name == "hermes"
    assert p.tools is not None and p.tools.call_open == ("<tool_call>",)
    assert p.reasoning is not None and p.reasoning.open == ("<think>",) and p.reasoning.close == ("</think>",)
    assert "<|im_end|>" in p.strip
    assert p.confidence >= 0.8
    res = autoparser.parse('<think>hm</think><tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>'
                           "<|im_end|>", p)
    assert res.reasoning == "hm" and res.tool_calls[0].arguments == {"x": 1} and res.content == ""


def test_a_template_that_prints_the_time_derives_as_one_that_does_not() -> None:
    # every probe reads one clock: a template that prints the time to the microsecond (Hunyuan's
    # prints seconds) must not differ between two probes by the clock alone
    timed = "<|im_start|>system\nNow: {{ strftime_now('%H:%M:%S.%f') }}<|im_end|>\n" + TEMPLATE
    assert timed != TEMPLATE
    plain, stamped = autoparser.analyze(TEMPLATE, known=False), autoparser.analyze(timed, known=False)
    assert (stamped.tools, stamped.reasoning, stamped.strip) == (plain.tools, plain.reasoning, plain.strip)
    assert stamped.history == plain.history and stamped.confidence == plain.confidence


def test_special_tokens_confirm_markers() -> None:
    p = autoparser.analyze(TEMPLATE, known=False, special_tokens=("<tool_call>", "</tool_call>", "<|im_end|>"))
    assert any("special tokens" in e and "<tool_call>" in e for e in p.evidence)


def test_known_true_takes_builtin_rules_for_a_known_format() -> None:
    pure = autoparser.analyze(TEMPLATE, known=False)
    known = autoparser.analyze(TEMPLATE, known=True)
    assert known.tools == autoparser.get_profile("hermes").tools
    assert pure.confidence == known.confidence
    assert known.builtin is not None and known.builtin.dialect == "hermes" and "tools" in known.builtin.taken
    assert pure.builtin is None


def test_load_model_dir_and_template_file(tmp_path: Path) -> None:
    d = tmp_path / "model"
    d.mkdir()
    (d / "tokenizer_config.json").write_text(json.dumps({"chat_template": TEMPLATE, "eos_token": "<|im_end|>"}))
    assert autoparser.load(d).name == "hermes"
    f = tmp_path / "t.jinja"
    f.write_text(TEMPLATE)
    assert autoparser.load(f).name == "hermes"


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer_config.json"
    bad.write_text("{not json")
    with pytest.raises(SourceError) as info:
        autoparser.load(tmp_path)
    assert "tokenizer_config.json" in str(info.value)
    with pytest.raises(AutoparserError):
        autoparser.load(tmp_path / "missing.gguf")


def test_detect_by_template_or_model_id() -> None:
    assert autoparser.detect(chat_template=TEMPLATE).name == "hermes"
    by_id = autoparser.detect(model_id="Qwen/Qwen3-Coder-30B-A3B-Instruct")
    assert by_id.name == "qwen3-coder" and by_id.confidence < 0.9
    with pytest.raises(AutoparserError):
        autoparser.detect(model_id="some/unknown-model")


def test_template_without_tools_derives_none() -> None:
    t = ("{% for m in messages %}<s>{{ m.role }}: {{ m.content }}</s>{% endfor %}"
         "{% if add_generation_prompt %}<s>assistant: {% endif %}")
    p = autoparser.analyze(t, known=False)
    assert p.tools is None and p.reasoning is None
    assert any("renders no tool calls" in e for e in p.evidence)


HEADED = """{%- for m in messages -%}
{%- if m.role == 'assistant' -%}
{%- if m.reasoning_content %}<@head>muse<@body>{{ m.reasoning_content }}<@stop><@turn>bot{% endif -%}
{%- if m.tool_calls %}{% for c in m.tool_calls -%}
 to=tool.{{ c.function.name }}<@head>act<@body>{{ c.function.arguments | tojson }}<@fire>
{%- endfor -%}
{%- else %}<@head>say<@body>{{ m.content }}<@done>{% endif -%}
{%- else %}<@turn>{{ m.role }}<@head>say<@body>{{ m.content }}<@stop>{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}<@turn>bot{% endif -%}"""


def test_header_routed_messages_are_derived() -> None:
    """An invented Harmony-like format: bodies routed by '<@head>CHANNEL<@body>' headers."""
    p = autoparser.analyze(HEADED, known=False)
    m = p.messages
    assert m is not None and p.tools is None and p.reasoning is None
    assert (m.channel, m.message, m.reasoning_channels) == ("<@head>", "<@body>", ("muse",))
    assert m.recipient_prefix == "to=tool." and m.header_open and m.start == "<@turn>"
    out = ' to=tool.lookup<@head>act<@body>{"q": "x"}<@fire>'
    res = autoparser.parse(out, p)
    assert [(c.name, c.arguments) for c in res.tool_calls] == [("lookup", {"q": "x"})]
    res = autoparser.parse("<@head>muse<@body>hmm<@stop><@turn>bot<@head>say<@body>Hi.<@done>", p)
    assert (res.reasoning, res.content) == ("hmm", "Hi.")
