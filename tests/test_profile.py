"""The Profile: JSON round trip, validation that names the bad field, the documented schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import autoparser
from autoparser import Profile, ProfileError
from autoparser.engine.values import validate_arguments
from autoparser.profile import json_schema

ROOT = Path(__file__).resolve().parents[1]
NAMES = [d.name for d in autoparser.dialects()]


@pytest.mark.parametrize("name", NAMES)
def test_builtin_round_trips_and_matches_schema(name: str) -> None:
    p = autoparser.get_profile(name)
    assert Profile.from_dict(p.to_dict()) == p
    assert Profile.from_json(p.to_json()) == p
    assert p.confidence == 1.0 and p.evidence == ("builtin",) and p.name == name
    assert validate_arguments(p.to_dict(), json_schema()) == []


def test_schema_doc_is_current() -> None:
    on_disk = json.loads((ROOT / "docs" / "profile.schema.json").read_text(encoding="utf-8"))
    assert on_disk == json_schema(), "run: python -c 'import json, autoparser.profile as p; " \
                                     "print(json.dumps(p.json_schema(), indent=2))' > docs/profile.schema.json"


def test_dialects_list_families_and_aliases() -> None:
    infos = {d.name: d for d in autoparser.dialects()}
    assert len(infos) == 23
    assert "qwen3" in infos["hermes"].aliases and "gpt-oss" in infos["harmony"].aliases
    assert all(d.families for d in infos.values())
    assert autoparser.get_profile("llama4") == autoparser.get_profile("pythonic")
    assert autoparser.get_profile("deepseek-r1").reasoning.start == "prefilled"  # type: ignore[union-attr]


def _broken(path: str, value: Any) -> dict[str, Any]:
    d = autoparser.get_profile("hermes").to_dict()
    cur = d
    keys = path.split(".")
    for k in keys[:-1]:
        cur = cur[k]
    cur[keys[-1]] = value
    return d


@pytest.mark.parametrize("path,value,field", [
    ("tools.codec.kind", "jsn", "tools.codec.kind"),
    ("tools.call_open", "<tool_call>", "tools.call_open"),
    ("tools.call_open", [""], "tools.call_open[0]"),
    ("reasoning.start", "sometimes", "reasoning.start"),
    ("reasoning.close", [], "reasoning.close"),
    ("confidence", 1.5, "confidence"),
    ("confidence", "high", "confidence"),
    ("tools.bare_calls", "yes", "tools.bare_calls"),
    ("strip", [1], "strip[0]"),
    ("tools.codec.string_delims", [["<|", ""]], "tools.codec.string_delims[0]"),
    ("version", 2, "version"),
    ("tools.on_truncated", "maybe", "tools.on_truncated"),
])
def test_malformed_profile_names_the_field(path: str, value: Any, field: str) -> None:
    with pytest.raises(ProfileError) as info:
        Profile.from_dict(_broken(path, value))
    assert info.value.field == field
    assert repr(field) in str(info.value)


def test_unknown_field_is_refused() -> None:
    d = autoparser.get_profile("hermes").to_dict()
    d["tools"]["call_opn"] = ["x"]
    with pytest.raises(ProfileError) as info:
        Profile.from_dict(d)
    assert info.value.field == "tools.call_opn"


def test_not_json_and_not_object() -> None:
    with pytest.raises(ProfileError):
        Profile.from_json("{nope")
    with pytest.raises(ProfileError):
        Profile.from_dict([])  # type: ignore[arg-type]


def test_tagged_codec_needs_key_and_value_slots() -> None:
    d = autoparser.get_profile("qwen3-coder").to_dict()
    d["tools"]["codec"]["param"] = "<parameter>{value}</parameter>"
    with pytest.raises(ProfileError, match=r"tools\.codec\.param"):
        Profile.from_dict(d)


def test_wire_format_ignores_names_and_evidence() -> None:
    a = autoparser.get_profile("hermes")
    b = a.replace(name=None, confidence=0.5, evidence=("derived",), description="x")
    assert a.wire_format() == b.wire_format()
    assert a != b


def test_load_reads_profile_json(tmp_path: Path) -> None:
    f = tmp_path / "mine.json"
    f.write_text(autoparser.get_profile("glm").to_json())
    assert autoparser.load(f) == autoparser.get_profile("glm")


def test_unknown_dialect_lists_names() -> None:
    with pytest.raises(autoparser.UnknownDialectError) as info:
        autoparser.get_profile("gpt5")
    assert "hermes" in str(info.value) and "gpt5" in str(info.value)


def test_parser_memory_is_bounded_by_longest_marker_plus_current_call() -> None:
    """Plain text never accumulates: only a possible marker prefix is carried between feeds."""
    for name in NAMES:
        prof = autoparser.get_profile(name)
        p = prof.parser(reasoning="explicit" if prof.reasoning else None)
        longest = max(len(m) for m in (*prof.strip, *(prof.reasoning.open if prof.reasoning else ()),
                                        *(prof.tools.section_open + prof.tools.call_open if prof.tools else ()),
                                        "x"))
        text = "Plain words with < and | and : and call and Here is my answer. " * 200
        for i in range(0, len(text), 7):
            p.feed(text[i:i + 7])
            assert len(p._pending.carry) < max(longest, 8), (name, p._pending.carry)
        p.close()
        assert p.result().content == text
