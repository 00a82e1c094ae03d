"""Loader helpers: a tokenizer built locally (no hub download), plus argument checks."""

from __future__ import annotations

import pytest

import autoparser
from autoparser.errors import AutoparserError
from autoparser.loaders import from_gguf, from_openvino, from_transformers

pytest.importorskip("jinja2")

CHATML_TOOLS = """{%- if tools %}<|im_start|>system
# Tools
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>
For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == "assistant" %}<|im_start|>assistant
{%- if message.content %}
{{ message.content }}
{%- endif %}
{%- for tool_call in message.tool_calls or [] %}
{%- set tc = tool_call.function if tool_call.function is defined else tool_call %}
<tool_call>
{"name": "{{ tc.name }}", "arguments": {{ tc.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == "tool" %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


def _tokenizer(response_template: dict[str, object] | None = None) -> object:
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    vocab = {"<unk>": 0, "<|im_start|>": 1, "<|im_end|>": 2, "<tool_call>": 3, "</tool_call>": 4}
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<|im_start|>",
                                               eos_token="<|im_end|>", unk_token="<unk>")
    tok.chat_template = CHATML_TOOLS
    if response_template is not None:
        tok.response_template = response_template
    return tok


def test_from_transformers_derives_hermes() -> None:
    prof = from_transformers(_tokenizer())
    assert prof.tools is not None and prof.tools.call_open == ("<tool_call>",)
    assert prof.name == "hermes"
    r = autoparser.parse('<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call><|im_end|>', prof)
    assert [(c.name, c.arguments) for c in r.tool_calls] == [("f", {"a": 1})]


def test_shipped_response_template_is_evidence() -> None:
    rt = {"start_anchor": "<|im_start|>assistant\n",
          "fields": {"tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "content": "json"},
                     "content": {"content": "text"}}}
    prof = from_transformers(_tokenizer(rt))
    assert any("shares markers ['</tool_call>', '<tool_call>']" in e for e in prof.evidence)


def test_from_transformers_without_template() -> None:
    tok = _tokenizer()
    tok.chat_template = None  # type: ignore[attr-defined]
    with pytest.raises(AutoparserError, match="no chat template"):
        from_transformers(tok)


def test_path_loaders_check_their_input(tmp_path: object) -> None:
    with pytest.raises(AutoparserError, match=r"not a \.gguf"):
        from_gguf("model.bin")
    with pytest.raises(AutoparserError, match=r"expected a path or an openvino_genai\.Tokenizer"):
        from_openvino(42)
