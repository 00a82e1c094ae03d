"""The search (derive/tools/search.py): the template chooses among the recognisers' readings.

Every recogniser proposes on some fixture, every codec family wins on some fixture, the pattern
codec's encodings are told apart by the renders, and a reading that breaks the profile's loading
rules is left out with its guard rule.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from autoparser.derive import Analysis, analyze_detailed
from autoparser.derive.extract import Findings
from autoparser.derive.probes import CallShape, Prober
from autoparser.derive.tools.proposals import RECOGNISERS, Proposal, propose
from autoparser.derive.tools.search import INVALID, choose
from autoparser.profile import CodecSpec, ToolSpec

DIR = Path(__file__).resolve().parents[1] / "fixtures" / "templates"
CASES: dict[str, Any] = json.loads((DIR / "cases.json").read_text(encoding="utf-8"))["templates"]


@functools.cache
def fixture(name: str) -> Analysis:
    return analyze_detailed((DIR / name).read_text(encoding="utf-8"), known=False)


def test_every_codec_family_and_pattern_encoding_wins_somewhere() -> None:
    kinds: set[str] = set()
    encodings: set[str] = set()
    for name in CASES:
        t = fixture(name).profile.tools
        if t is None:
            continue
        kinds.add(t.codec.kind)
        if t.codec.pattern is not None:
            encodings.add(t.codec.pattern.value)
    assert {label for label, _ in RECOGNISERS} | {"pattern"} <= kinds
    assert {"json", "toml", "raw", "xml", "percent"} <= encodings, encodings


def test_the_search_tells_encodings_apart() -> None:
    """The probe's value is bare in both templates; only values that need escaping show which
    encoding the template writes."""
    def value_of(name: str) -> str:
        t = fixture(name).profile.tools
        assert t is not None and t.codec.pattern is not None
        return t.codec.pattern.value

    assert value_of("query_string_calls.jinja") == "percent"
    assert value_of("type_named_elements.jinja") == "xml"
    assert value_of("toml_tables.jinja") == "toml"


def test_every_recogniser_proposes_on_some_fixture() -> None:
    from autoparser.derive.tools.blocks import after_reasoning, call_block

    seen: set[str] = set()
    for name in CASES:
        a = fixture(name)
        f = a.findings
        p1 = next((p for p in f.probes if p.label.startswith("1 call") and p.span), None)
        p2 = next((p for p in f.probes if p.label.startswith("2 calls") and p.span), None)
        if p1 is None or p1.span is None:
            continue
        b2 = call_block(after_reasoning(p2.span, f), f) if p2 is not None and p2.span else None
        seen |= {p.label.split("/")[0] for p in propose(call_block(after_reasoning(p1.span, f), f), b2, f.fork())}
    assert {label for label, _ in RECOGNISERS} | {"pattern"} <= seen


def test_a_reading_that_breaks_the_loading_rules_is_not_tested() -> None:
    src = (DIR / "kv_lines_in_markers.jinja").read_text(encoding="utf-8")
    good = fixture("kv_lines_in_markers.jinja").profile.tools
    assert good is not None
    bad = Proposal("json", ToolSpec(codec=CodecSpec(kind="json")), Findings(), 0)  # no opening marker
    fine = Proposal("pattern/raw", good, Findings(), 10)
    won = choose(Prober(src, None, None), Findings(), CallShape(), [bad, fine], "")
    assert won is fine
    assert [r.rule for r in bad.findings.records] == [INVALID.name]
