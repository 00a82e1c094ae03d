"""``analyze(model_id=...)``: a hint recorded in evidence that never overrides what the renders show.

It can only choose among builtin dialects that match the derived wire format equally well (hermes
and ernie write identical calls), only with ``known=True``; pure derivation records it unused, and
a hint the renders contradict changes nothing but the evidence line that says so.
"""

from __future__ import annotations

from pathlib import Path

from sample_templates import HERMES_LIKE

import autoparser
from autoparser.derive.match import _best, dialect_for_model_id

INVENTED = (Path(__file__).resolve().parents[1] / "fixtures" / "templates" / "guillemet_name_json.jinja"
            ).read_text(encoding="utf-8")
ERNIE_ID = "baidu/ERNIE-4.5-21B-A3B-PT"
DEEPSEEK_ID = "deepseek-ai/DeepSeek-V3-0324"


def _note(prof: autoparser.Profile) -> list[str]:
    return [e for e in prof.evidence if e.startswith("model_id:")]


def _wire(prof: autoparser.Profile) -> dict[str, object]:
    d = prof.to_dict()
    for k in ("evidence", "name", "families", "description"):
        d.pop(k, None)
    return d


def test_the_renders_leave_a_tie_the_hint_can_break() -> None:
    """The premise of the tests below, checked rather than assumed."""
    derived = autoparser.analyze(HERMES_LIKE, known=False)
    ties = _best(derived)
    assert ties[0] == "hermes" and "ernie" in ties
    assert dialect_for_model_id(ERNIE_ID) == "ernie"
    assert dialect_for_model_id(DEEPSEEK_ID) not in ties


def test_hint_breaks_a_tie_with_known_true() -> None:
    plain = autoparser.analyze(HERMES_LIKE)
    hinted = autoparser.analyze(HERMES_LIKE, model_id=ERNIE_ID)
    assert plain.name == "hermes"
    assert hinted.name == "ernie"
    assert not _note(plain)
    assert len(_note(hinted)) == 1 and ERNIE_ID in _note(hinted)[0]
    # the builtin rules now come from the hinted dialect (its end-of-turn tokens, recovery rules)
    assert set(autoparser.get_profile("ernie").strip) <= set(hinted.strip)
    assert hinted.tools == autoparser.get_profile("ernie").tools
    assert hinted.confidence == plain.confidence


def test_a_contradicted_hint_changes_nothing_but_the_evidence() -> None:
    plain = autoparser.analyze(HERMES_LIKE)
    hinted = autoparser.analyze(HERMES_LIKE, model_id=DEEPSEEK_ID)
    assert hinted.name == plain.name == "hermes"
    assert _wire(hinted) == _wire(plain)
    assert [e for e in hinted.evidence if not e.startswith("model_id:")] == list(plain.evidence)
    assert len(_note(hinted)) == 1 and repr(dialect_for_model_id(DEEPSEEK_ID)) in _note(hinted)[0]


def test_pure_derivation_does_not_consult_the_hint() -> None:
    plain = autoparser.analyze(HERMES_LIKE, known=False)
    hinted = autoparser.analyze(HERMES_LIKE, known=False, model_id=ERNIE_ID)
    assert hinted.name == plain.name == "hermes"
    assert _wire(hinted) == _wire(plain)
    assert len(_note(hinted)) == 1


def test_a_hint_never_names_a_new_format() -> None:
    for known in (True, False):
        prof = autoparser.analyze(INVENTED, known=known, model_id="Qwen/Qwen3-8B")
        assert prof.name is None and prof.tools is not None
        assert _wire(prof) == _wire(autoparser.analyze(INVENTED, known=known))


def test_an_unknown_model_id_is_recorded_and_unused() -> None:
    plain = autoparser.analyze(HERMES_LIKE)
    hinted = autoparser.analyze(HERMES_LIKE, model_id="acme/unheard-of-7b")
    assert hinted.name == plain.name
    assert _wire(hinted) == _wire(plain)
    assert len(_note(hinted)) == 1
