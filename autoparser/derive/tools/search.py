"""The search: the template is the oracle that chooses among the recognisers' hypotheses.

Theory. The aligned probe renders allow several readings (a JSON object or a pattern of JSON
members; raw, XML-escaped or percent-encoded values; an id slot or none). Each reading is a
profile, and the template can test it: random assistant turns (random names, keys and ids; values
of every JSON type, strings with quotes, backslashes, line breaks, unicode, ``<``/``>``/``&``,
``%``, ``=`` and the format's own markers; one to four calls, some after content) are rendered
once and parsed back with every hypothesis. The hypothesis that reproduces the most turns wins;
among equals, the simplest (the lowest rank: named codecs before the pattern codec, plainer
encodings first). The simplest one is tried first and a perfect score ends the search, so a
template a named codec reads costs the renders and one parse each.

Rules of this module: it renders through the ``Prober`` (sandbox, limits, the analysis's time
budget), never decides from a template's text, and records what it tried as evidence: the scores
of every hypothesis and, when none reproduces the renders, what failed.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from ...errors import ProfileError
from ...profile import Profile, ToolSpec
from ..extract import Findings
from ..probes import USER, CallShape, Prober
from ..rules import Rule
from .proposals import Proposal

__all__ = ["RULES", "SEARCH_TOOLS", "Sample", "choose", "samples"]

CHOSEN = Rule("tools.search_chosen", "tools.codec",
              "of several readings of the renders, the one that parses the most random renders back wins")
NONE_FITS = Rule("tools.search_none_fits", "tools.codec",
                 "no reading parses four in five random renders back: the call format is not confirmed")
INVALID = Rule("tools.search_invalid", "tools.codec",
               "a reading that breaks the profile's loading rules cannot parse anything: not tested", guard=True)
REASONING_REFUTED = Rule("reasoning.refuted_by_search", "reasoning",
                         "a guessed reasoning block that turns call turns into reasoning is not the model's")
RULES = (CHOSEN, NONE_FITS, INVALID, REASONING_REFUTED)

#: how many random call turns test the hypotheses
SAMPLES = 6

_PARAMS: dict[str, dict[str, Any]] = {
    "city": {"type": "string"}, "count": {"type": "integer"}, "ratio": {"type": "number"},
    "flag": {"type": "boolean"}, "opts": {"type": "object"}, "tags": {"type": "array"},
    "note": {"type": "string"}}
_NAMES = ("get_weather", "lookupUser", "search_v2", "book_flight")
SEARCH_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": n, "description": "search tool",
                                      "parameters": {"type": "object", "properties": _PARAMS,
                                                     "required": ["city"]}}}
    for n in _NAMES]
# strings that need escaping in one encoding or another
_STRINGS = ("Paris", 'say "hi"', "back\\slash", "line1\nline2", "Tōkyō 用户 🎉", "a < b & c > d",
            "50% off, k=v; x", "it's ok", "&lt;b&gt; %20 done", "  padded  ", "New York")


#: a tame turn's one string: a plain word, or text an encoding must escape (XML, percent, quotes)
_TAME = (("Paris", "Oslo", "Lima"), ("a < b & c > d", 'say "hi"', "50% off, k=v; it's"))


@dataclass
class Sample:
    """One random call turn as the template renders it, and the calls it holds."""

    span: str
    calls: list[dict[str, Any]]
    content: str
    ids: list[str] = field(default_factory=list)


def _value(rng: random.Random, kind: str, extra: tuple[str, ...]) -> Any:
    if kind == "string":
        return rng.choice(_STRINGS + extra)
    if kind == "integer":
        return rng.choice([0, 7, -12, 31337])
    if kind == "number":
        return rng.choice([0.5, -2.25, 1e-3])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "object":
        return {"depth": rng.randint(0, 3), "mode": rng.choice(_STRINGS[:4])}
    return [rng.choice(_STRINGS[:3]), rng.randint(0, 9)]


def samples(pr: Prober, shape: CallShape, markers: tuple[str, ...], n: int = SAMPLES,
            seed: int = 11, tame: bool = False, positional: bool = False) -> list[Sample]:
    """``n`` random call turns rendered (turns the template refuses are left out). ``tame``: one
    string argument (a plain word, or text that needs escaping), one or two calls, no content:
    what every reading of a format must parse. ``positional``: the arguments are the schema's
    first parameters, in its order (all that values without keys can say)."""
    rng = random.Random(seed)
    out = []
    keys = ["city"] if tame else list(_PARAMS)
    for i in range(n):
        calls: list[dict[str, Any]] = []
        for _ in range(1 + i % 2 if tame else 1 + i % 4 if i < 4 else rng.randint(1, 3)):
            chosen = ["city", *rng.sample(keys[1:], rng.randint(0, 3))] if not tame else ["city"]
            rng.shuffle(chosen)
            if positional:
                chosen = keys[:len(chosen)]
            extra = markers if i == n - 1 and not tame else ()
            calls.append({"name": rng.choice(_NAMES),
                          "arguments": {k: (rng.choice(_TAME[i % 2]) if tame and k == "city"
                                            else _value(rng, _PARAMS[k]["type"], extra)) for k in chosen}})
        ids = ["call_" + "".join(rng.choice("abcdefghjk0123456789") for _ in range(6)) for _ in calls]
        wire = []
        for c, cid in zip(calls, ids, strict=True):
            one = shape.call(c["name"], c["arguments"], 1)
            if shape.ids and not shape.id_is_name:
                one["id"] = cid
            wire.append(one)
        msg = shape.message(wire, reasoning="Plan: call the tools.")
        content = rng.choice(["", "", "Let me check that."]) if shape.content is not None and not tame else ""
        if content:
            msg["content"] = content
        p = pr.turn(f"search {i}", msg, tools=SEARCH_TOOLS, history=[{"role": "user", "content": USER}],
                    **shape.context())
        if p.span is None or any(p.span.count(c["name"]) < 1 for c in calls):
            continue
        out.append(Sample(p.span, calls, content, ids if shape.ids and not shape.id_is_name else []))
    return out


def _positional(p: Proposal) -> bool:
    """A reading whose values carry no keys (the n-th value is the n-th parameter)."""
    pat = p.spec.codec.pattern
    return pat is not None and "{args}" in pat.call and "{key}" not in pat.arg


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def _has_id_slot(spec: ToolSpec) -> bool:
    c = spec.codec
    return "{call_id}" in c.header or (c.pattern is not None and "{call_id}" in c.pattern.call)


def score(prof: Profile, turns: list[Sample]) -> tuple[int, str]:
    """How many turns ``prof`` parses back exactly, and the first failure."""
    from ...parse import parse

    ok, first = 0, ""
    assert prof.tools is not None
    ids = _has_id_slot(prof.tools)
    for t in turns:
        try:
            res = parse(t.span, prof, tools=SEARCH_TOOLS)
        except Exception as e:  # a hypothesis that crashes the parser is a wrong one
            first = first or f"{type(e).__name__}: {e}"
            continue
        got = [{"name": c.name, "arguments": c.arguments} for c in res.tool_calls]
        good = got == t.calls and _norm(res.content) == _norm(t.content)
        if good and ids and t.ids:
            good = [c.id for c in res.tool_calls] == t.ids
        if good:
            ok += 1
        elif not first:
            first = f"{t.span[:100]!r}: calls {got} != {t.calls}"
    return ok, first


def _profile(f: Findings, spec: ToolSpec, reasoning: bool = True) -> Profile:
    r = f.reasoning if reasoning else None
    marks = {*r.open, *r.close} if r is not None else set()
    strip = tuple(dict.fromkeys(m for m in f.strip if m and m not in marks))
    return Profile(reasoning=r, strip=strip, tools=spec)


def _loads(prof: Profile) -> bool:
    try:
        Profile.from_dict(prof.to_dict())
    except ProfileError:
        return False
    return True


def choose(pr: Prober, f: Findings, shape: CallShape, proposals: list[Proposal], block: str) -> Proposal:
    """The proposal the template's own renders confirm best (see the module docstring)."""
    guessed = f.reasoning is not None and f.confidence.get("reasoning", 1.0) <= 0.6
    if len(proposals) == 1 and not guessed:
        return proposals[0]  # (one reading, and no guessed reasoning block to test with it)
    ranked = sorted(proposals, key=lambda p: p.rank)
    # named codecs stay where they reproduce plain renders (they carry the peers' recovery rules):
    # the first that parses every tame turn back wins at once
    tame = samples(pr, shape, (), n=4, seed=5, tame=True)
    named = [p for p in ranked if not p.label.startswith("pattern")]
    if tame and named and not guessed:
        prof = _profile(named[0].findings, named[0].spec)
        if _loads(prof) and score(prof, tame)[0] == len(tame):
            named[0].findings.fire(CHOSEN, snippet=block, text=f"{named[0].label} reproduces all {len(tame)} "
                                                               "plain random call turns")
            return named[0]
    markers = tuple(dict.fromkeys(m for p in ranked for m in (*p.spec.call_close, *p.spec.section_close)
                                  if m.strip()))[:1]
    turns = tame + samples(pr, shape, markers)
    if not turns:
        return ranked[0]
    by_order = tame + samples(pr, shape, markers, positional=True) if any(_positional(p) for p in ranked) else []
    # a reasoning block only guessed (the closing form of the prompt's last tag) is a hypothesis too
    results: list[tuple[int, Proposal, str, bool]] = []
    for p in ranked:
        for with_reasoning in (True, False) if guessed else (True,):
            prof = _profile(p.findings, p.spec, with_reasoning)
            if not _loads(prof):
                p.findings.fire(INVALID, text=f"{p.label}: the reading breaks the profile's loading rules")
                break
            use = by_order if _positional(p) else turns
            got, why = score(prof, use)
            # (scored on as many turns as the others, so the counts compare)
            got = round(got * len(turns) / len(use)) if use else 0
            results.append((got, p, why, with_reasoning))
            if got == len(turns):
                break
        if results and results[-1][0] == len(turns):
            break
    if not results:
        return ranked[0]
    got, won, why, with_reasoning = max(results, key=lambda r: (r[0], -r[1].rank, r[3]))
    # no reading fits (or only a pattern, half-way): the simplest stands, and the evidence says what
    # failed. A pattern replaces a named codec's reading only when it reproduces the renders.
    named_tried = any(not r[1].label.startswith("pattern") for r in results)
    if got * 2 < len(turns) or (won.label.startswith("pattern") and named_tried and got * 5 < len(turns) * 4):
        got, won, why, with_reasoning = results[0]
    if not with_reasoning:
        r = won.findings.reasoning
        assert r is not None
        won.findings.reasoning = None
        won.findings.drop("reasoning")
        won.findings.fire(REASONING_REFUTED, conf=0.85, snippet=f"{r.open[:1]} {r.close[:1]}",
                          text=f"the guessed reasoning block {r.open[:1]}...{r.close[:1]} makes call turns parse "
                               "worse than none: no reasoning block")
    tried = ", ".join(f"{p.label}{'' if r else ' (no reasoning)'} {n}/{len(turns)}" for n, p, _, r in results)
    won.findings.fire(CHOSEN, snippet=block, text=f"{won.label} reproduces {got}/{len(turns)} random "
                                                  f"call turns (tried: {tried})")
    if got * 5 < len(turns) * 4:
        won.findings.fire(NONE_FITS, cap=0.6, snippet=why,
                          text=f"no reading reproduces four in five random call turns; {won.label} fails on {why}")
    return won
