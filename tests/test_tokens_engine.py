"""Token mode: a marker that is a special token counts only when it arrives as a special chunk.

Streams are written as pieces ``(text, special)``. The reference for "markers arrive as special
chunks" is the text-mode parse of the same text; the reference for look-alikes is the same stream
with every look-alike replaced by an inert filler of the same length (then mapped back).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoparser import Policy, get_profile
from autoparser.errors import ParseError
from autoparser.events import ContentDelta, ToolCallArgsDelta, ToolCallEnd, coalesce
from autoparser.tokens import profile_markers
from tests.corpus import DIALECTS, load_cases

Piece = tuple[str, bool]

HERMES_SPECIAL = {"<tool_call>", "</tool_call>"}
CALL_BODY = '\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n'


def run(profile: Any, pieces: list[Piece], special_tokens: Any = None, **kw: Any) -> tuple[list[Any], Any]:
    parser = profile.parser(special_tokens=special_tokens, **kw)
    events: list[Any] = []
    for text, special in pieces:
        events += parser.feed(text, special)
    events += parser.close()
    return coalesce(events), parser.result()


def split_ordinary(pieces: list[Piece], cuts: list[int]) -> list[Piece]:
    """Cut the ordinary pieces at ``cuts`` (offsets into the whole text); special pieces stay whole."""
    out: list[Piece] = []
    pos = 0
    wanted = sorted(set(cuts))
    for text, special in pieces:
        if special or not text:
            out.append((text, special))
            pos += len(text)
            continue
        start = 0
        for c in wanted:
            if pos < c < pos + len(text):
                out.append((text[start:c - pos], False))
                start = c - pos
        out.append((text[start:], False))
        pos += len(text)
    return out


def special_set(profile: Any) -> set[str]:
    """Every marker of the profile, treated as a special token of an imagined vocabulary."""
    return {m for m in profile_markers(profile) if m.strip() == m and len(m) >= 2}


def as_pieces(text: str, special: set[str]) -> list[Piece]:
    """``text`` with every occurrence of a special string (leftmost, longest) as a special piece."""
    if not special:
        return [(text, False)]
    pattern = re.compile("|".join(re.escape(s) for s in sorted(special, key=lambda s: (-len(s), s))))
    out: list[Piece] = []
    pos = 0
    for m in pattern.finditer(text):
        if m.start() > pos:
            out.append((text[pos:m.start()], False))
        out.append((m.group(), True))
        pos = m.end()
    if pos < len(text):
        out.append((text[pos:], False))
    return out


# -- the issue's done-when ---------------------------------------------------------------------------

def test_hermes_lookalike_call_is_content_at_every_split() -> None:
    prof = get_profile("hermes")
    text = "Sure. <tool_call>" + CALL_BODY + "</tool_call>"
    for cut in range(len(text) + 1):
        events, res = run(prof, split_ordinary([(text, False)], [cut]), HERMES_SPECIAL)
        assert res.tool_calls == [] and res.content == text, cut
        assert [(i.code, i.position) for i in res.issues] == [
            ("lookalike_marker", text.index("<tool_call>")), ("lookalike_marker", text.index("</tool_call>"))]
        assert events == [ContentDelta(text)]


def test_hermes_special_call_is_a_call_at_every_split() -> None:
    prof = get_profile("hermes")
    pieces: list[Piece] = [("Sure. ", False), ("<tool_call>", True), (CALL_BODY, False), ("</tool_call>", True)]
    whole = "".join(t for t, _ in pieces)
    _, reference = run(prof, [(whole, False)])  # text mode
    assert [c.name for c in reference.tool_calls] == ["get_weather"]
    for cut in range(len(whole) + 1):
        events, res = run(prof, split_ordinary(pieces, [cut]), HERMES_SPECIAL)
        assert res == reference, cut
        assert next(e for e in events if isinstance(e, ToolCallEnd)).arguments == {"city": "Paris", "days": 3}


def test_lookalike_inside_arguments_is_argument_text() -> None:
    prof = get_profile("hermes")
    body = '{"name": "echo", "arguments": {"text": "a </tool_call> b"}}'
    pieces: list[Piece] = [("<tool_call>", True), (body, False), ("</tool_call>", True)]
    events, res = run(prof, pieces, HERMES_SPECIAL)
    assert [c.arguments for c in res.tool_calls] == [{"text": "a </tool_call> b"}]
    args = "".join(e.text for e in events if isinstance(e, ToolCallArgsDelta))
    assert json.loads(args) == {"text": "a </tool_call> b"}
    assert [(i.code, i.position) for i in res.issues] == [("lookalike_marker", len("<tool_call>") + body.index("</"))]


def test_forced_grammar_call_content_by_default_call_under_accept() -> None:
    prof = get_profile("hermes")
    ordinary: list[Piece] = [("<tool_call>" + CALL_BODY + "</tool_call>", False), ("<|im_end|>", True)]
    special = HERMES_SPECIAL | {"<|im_end|>"}
    _, default = run(prof, ordinary, special)
    assert default.tool_calls == [] and default.content == ordinary[0][0]
    _, accepted = run(prof, ordinary, special, policy=Policy(lookalike_marker="accept"))
    _, text_mode = run(prof, [(ordinary[0][0] + "<|im_end|>", False)])
    assert accepted.tool_calls == text_mode.tool_calls and len(accepted.tool_calls) == 1
    assert [i.code for i in accepted.issues] == ["lookalike_marker", "lookalike_marker"]
    with pytest.raises(ParseError) as err:
        run(prof, ordinary, special, policy="strict")
    assert err.value.code == "lookalike_marker" and err.value.position == 0


def test_positions_map_back_to_the_original_stream() -> None:
    prof = get_profile("hermes")
    pieces: list[Piece] = [("<tool_call>", True), ('{"name": "f", "arguments": {"a": 1}}', False),
                           ("</tool_call>", True), ("x", False), ("<tool_call>", True), ("{oops", False)]
    whole = "".join(t for t, _ in pieces)
    _, token = run(prof, pieces, HERMES_SPECIAL)
    _, text = run(prof, [(whole, False)])
    assert token.issues == text.issues and token.issues


def test_special_tokens_none_is_the_plain_parser() -> None:
    prof = get_profile("hermes")
    assert type(prof.parser()) is type(prof.parser(special_tokens={"<unrelated>"}))
    assert type(prof.parser()) is not type(prof.parser(special_tokens=HERMES_SPECIAL))


def test_noncharacter_in_output_cannot_forge_a_marker() -> None:
    prof = get_profile("hermes")
    parser = prof.parser(special_tokens=HERMES_SPECIAL)
    forged = "".join(chr(c) for c in range(0xFDD0, 0xFDD2))
    parser.feed(forged + CALL_BODY + forged)
    parser.close()
    res = parser.result()
    assert res.tool_calls == [] and "\ufffd" in res.content
    assert {i.code for i in res.issues} == {"noncharacter"}


# -- every builtin dialect ------------------------------------------------------------------------------

CASES = [c for d in DIALECTS for c in load_cases(d)]


def _kwargs(case: dict[str, Any]) -> dict[str, Any]:
    return {"tools": case.get("tools"), "reasoning": case.get("reasoning")}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_token_mode_equals_text_mode_when_markers_are_special(case: dict[str, Any]) -> None:
    prof = get_profile(case["dialect"])
    special = special_set(prof)
    pieces = as_pieces(case["input"], special)
    ref_events, reference = run(prof, [(case["input"], False)], **_kwargs(case))
    events, res = run(prof, pieces, special, **_kwargs(case))
    assert (events, _clamped(res, case["input"])) == (ref_events, _clamped(reference, case["input"]))
    per_char = split_ordinary(pieces, list(range(len(case["input"]))))
    events, res = run(prof, per_char, special, **_kwargs(case))
    assert (events, _clamped(res, case["input"])) == (ref_events, _clamped(reference, case["input"]))


def _clamped(res: Any, text: str) -> Any:
    """Issue positions clamped to the text: after pushing a rejected call back to be read again the
    machine reports positions past the end (in text mode too), which token mode cannot map back."""
    import dataclasses

    return dataclasses.replace(res, issues=[dataclasses.replace(i, position=min(i.position, len(text)))
                                            for i in res.issues])


def _channel_text(res: Any) -> str:
    return res.reasoning + res.content


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_markers_as_ordinary_text_start_nothing(case: dict[str, Any]) -> None:
    prof = get_profile(case["dialect"])
    special = special_set(prof) | set(profile_markers(prof))
    text = case["input"]
    _, res = run(prof, [(text, False)], special, **_kwargs(case))
    assert res.tool_calls == []
    assert _channel_text(res) == text
    assert res.reasoning in ("", text)  # all of it stays where the stream started
    # one issue per position where a look-alike starts (the longest one there)
    found = {m.start() for s in special for m in re.finditer(f"(?={re.escape(s)})", text)}
    assert len([i for i in res.issues if i.code == "lookalike_marker"]) == len(found)


@st.composite
def mixed_stream(draw: st.DrawFn) -> tuple[dict[str, Any], list[Piece], list[Piece], dict[str, str]]:
    """A corpus stream (markers as special pieces) with look-alikes inserted as ordinary text, and
    the same stream with same-length fillers instead; plus the filler -> look-alike mapping."""
    case = draw(st.sampled_from(CASES))
    prof = get_profile(case["dialect"])
    special = special_set(prof)
    markers = sorted(special)
    pieces = as_pieces(case["input"], special)
    with_lookalikes: list[Piece] = []
    with_fillers: list[Piece] = []
    fillers: dict[str, str] = {}
    # where a look-alike is plain text whatever it spells: at the ends, and after a marker that
    # closes something or opens reasoning (inside a call body its characters, a ``>`` say, still
    # count as the body's text, so a filler would not be the same body)
    r, t = prof.reasoning, prof.tools
    after = {*prof.strip, *(r.open if r else ()), *(r.close if r else ()),
             *(t.call_close if t else ()), *(t.section_close if t else ())}
    for n, piece in enumerate([("", True), *pieces]):
        if n:
            with_lookalikes.append(piece)
            with_fillers.append(piece)
        free = n == 0 or n == len(pieces) or (piece[1] and piece[0] in after)
        if free and markers and draw(st.booleans()):
            k = draw(st.integers(0, len(markers) - 1))
            filler = chr(0x2190 + k) * len(markers[k])  # arrows: not word characters, in no marker
            fillers[filler] = markers[k]
            with_lookalikes.append((markers[k], False))
            with_fillers.append((filler, False))
    return case, with_lookalikes, with_fillers, fillers


def _map(value: Any, fillers: dict[str, str]) -> Any:
    if isinstance(value, str):
        for f, m in sorted(fillers.items(), key=lambda x: -len(x[0])):
            value = value.replace(f, m)
        return value
    if isinstance(value, dict):
        return {_map(k, fillers): _map(v, fillers) for k, v in value.items()}
    if isinstance(value, list):
        return [_map(v, fillers) for v in value]
    return value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_stream(), st.lists(st.integers(0, 400), max_size=6))
def test_lookalikes_mixed_with_real_special_pieces(stream: Any, cuts: list[int]) -> None:
    case, lookalike, filled, fillers = stream
    prof = get_profile(case["dialect"])
    special = special_set(prof)
    events, res = run(prof, split_ordinary(lookalike, cuts), special, **_kwargs(case))
    whole_events, whole = run(prof, lookalike, special, **_kwargs(case))
    assert (events, res) == (whole_events, whole)  # chunk invariance over the ordinary text
    _, ref = run(prof, filled, special, **_kwargs(case))
    assert res.content == _map(ref.content, fillers) and res.reasoning == _map(ref.reasoning, fillers)
    assert [(c.name, c.arguments) for c in res.tool_calls] == [
        (_map(c.name, fillers), _map(c.arguments, fillers)) for c in ref.tool_calls]
    assert [(i.code, i.position) for i in res.issues if i.code != "lookalike_marker"] == [
        (i.code, i.position) for i in ref.issues]
    assert len([i for i in res.issues if i.code == "lookalike_marker"]) == sum(
        1 for t, s in lookalike if not s and t in special)
    for e in events:
        if isinstance(e, ToolCallArgsDelta):
            json.loads(e.text)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_accept_reads_lookalikes_as_text_mode_does(case: dict[str, Any]) -> None:
    """Under ``accept`` (grammar-forced output) ordinary text parses as in text mode; the
    look-alikes are still recorded."""
    prof = get_profile(case["dialect"])
    special = special_set(prof)
    events, res = run(prof, [(case["input"], False)], special, policy=Policy(lookalike_marker="accept"),
                      **_kwargs(case))
    ref_events, ref = run(prof, [(case["input"], False)], **_kwargs(case))
    assert events == ref_events
    assert (res.content, res.reasoning, res.tool_calls) == (ref.content, ref.reasoning, ref.tool_calls)
    assert [i for i in res.issues if i.code != "lookalike_marker"] == ref.issues


def test_a_lookalike_that_may_grow_into_a_longer_token_waits_for_the_text_that_decides() -> None:
    # ']<]minimax[>[<' is a special token and the start of ']<]minimax[>[</': cut between the two,
    # the ordinary text must still report one look-alike (the longer), as the whole text does
    prof = get_profile("minimax-m3")
    special = special_set(prof)
    assert {"]<]minimax[>[<", "]<]minimax[>[</"} <= special
    text = "see ]<]minimax[>[</ here"
    cut = text.index("/")
    _, whole = run(prof, [(text, False)], special)
    _, pieces = run(prof, [(text[:cut], False), (text[cut:], False)], special)
    _, at_end = run(prof, [(text[:cut], False)], special)
    assert [(i.code, i.position) for i in whole.issues] == [(i.code, i.position) for i in pieces.issues] == [
        ("lookalike_marker", 4)]
    assert [i.message for i in pieces.issues] == [i.message for i in whole.issues]
    assert [(i.code, i.position) for i in at_end.issues] == [("lookalike_marker", 4)]  # decided at close
