"""The default path (``known=True``): what a matched builtin dialect may add to a derived profile.

Rules of this module:

* The renders are the authority. A builtin dialect describes a family; the template is what this
  checkpoint was trained on. Where the two differ, the derived value stands, and the profile's
  ``builtin`` record (:class:`~autoparser.profile.BuiltinUse`) says which builtin field was
  declined and what the renders show instead.
* A builtin part is *taken* only where it agrees with the renders: the profile with it must parse
  back every self-check message the profile without it parsed back (:func:`selfcheck.replay`: the
  same renders, none new), and what the renders read directly (where the generation prompt leaves
  the output: ``reasoning.start``; whether a variable switches it) is compared as a value.
* What no render can show is *added* and marked: recovery rules and alternative spellings come
  with a part that agrees; reasoning markers of a template that never writes reasoning are added
  as builtin-only (they parse a block if the model writes one, start ``explicit``, and no export
  configures a reasoning parser for them).

Theory of operation: the parts are decided one after the other, tools, reasoning, then the
end-of-turn and wrapper tokens, each candidate built on what was accepted before and judged by
the replay; then the name. Every decision fires one of the rules below, so ``--explain`` lists it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..profile import BuiltinUse, Profile, ReasoningSpec
from .extract import Findings
from .rules import Rule
from .selfcheck import CheckResult, replay

__all__ = ["RULES", "with_builtin"]

TAKEN = Rule("known.taken", "tools",
             "a builtin part that parses back every render the derived one parses back is taken, with what "
             "templates cannot show (recovery rules, other spellings)")
DECLINED = Rule("known.declined", "tools",
                "a builtin part that misreads a render the derived one reads is not taken: the derived value stands")
MARKERS_DIFFER = Rule("known.markers_differ", "reasoning",
                      "the renders close reasoning with another marker than the builtin: the derived markers stand")
REASONING_ADDED = Rule("known.reasoning_added", "reasoning",
                       "no render shows reasoning: the builtin's markers are added as builtin-only (a block "
                       "parses only if the model opens it)")
PROMPT_KEPT = Rule("known.prompt_kept", "reasoning.start",
                   "where the generation prompt leaves the output is read from the prompt itself: the builtin's "
                   "value does not replace it")
NAMES = Rule("known.names", "name",
             "a derived profile whose wire format matches a builtin dialect carries its name, description and "
             "families; hosts' parsers are bound per part by the resolver, from what was taken")
RULES = (TAKEN, DECLINED, MARKERS_DIFFER, REASONING_ADDED, PROMPT_KEPT, NAMES)


@dataclass
class _Merge:
    """The profile being built, the renders that judge it, and the record of what was decided."""

    profile: Profile
    check: CheckResult
    f: Findings
    taken: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    declined: dict[str, str] = field(default_factory=dict)
    passing: list[bool] | None = None  # the replay of ``profile`` (computed when first needed)

    def broken_by(self, candidate: Profile) -> str | None:
        """The first self-check render the current profile parses back and ``candidate`` does not
        (None: ``candidate`` may replace it)."""
        if candidate == self.profile:
            return None
        if self.passing is None:
            self.passing = replay(self.check, self.profile)
        for sample, was in zip(self.check.samples, self.passing, strict=True):
            problems = sample.problems(candidate) if was else []  # what failed before may fail still
            if problems:
                return f"{sample.span[:100]!r}: {'; '.join(problems)[:200]}"
        self.passing = None  # ``candidate`` will replace the profile; what it parses back is read when needed
        return None


def with_builtin(prof: Profile, name: str, check: CheckResult, f: Findings) -> Profile:
    """``prof`` with what the builtin dialect ``name`` adds where it agrees with the renders."""
    from ..dialects import get_profile

    b = get_profile(name)
    m = _Merge(prof, check, f)
    _messages(m, b)
    _tools(m, b)
    _reasoning(m, b)
    _tokens(m, b)
    f.fire(NAMES, snippet=name, text=f"named {name!r} (its description and families); the parts taken: "
                                    f"{', '.join(m.taken) or 'none'}")
    use = BuiltinUse(dialect=name, taken=tuple(m.taken), added=tuple(m.added), declined=dict(m.declined))
    return replace(m.profile, name=name, description=b.description, families=b.families, builtin=use)


def _messages(m: _Merge, b: Profile) -> None:
    """Header-routed messages: the builtin's spec (its end markers, content types) where the renders agree."""
    d = m.profile
    if d.messages is None or b.messages is None:
        return
    # whether the prompt ends inside a header is read from the prompt itself
    cand = replace(b.messages, header_open=d.messages.header_open)
    broken = m.broken_by(replace(d, messages=cand))
    if broken is None:
        m.profile = replace(d, messages=cand)
        m.taken.append("messages")
        m.f.fire(TAKEN, fieldname="messages",
                 text="the builtin's message headers parse every message the template renders")
        if b.messages.header_open != cand.header_open:
            _decline(m, "messages.header_open", f"the generation prompt shows {cand.header_open!r}; the builtin "
                                                f"says {b.messages.header_open!r}", rule=PROMPT_KEPT)
        return
    _decline(m, "messages", f"the builtin's message headers misread a message the template renders: {broken}",
             broken)


def _tools(m: _Merge, b: Profile) -> None:
    d = m.profile
    if d.tools is None or b.tools is None:
        return
    broken = m.broken_by(replace(d, tools=b.tools))
    if broken is None:
        m.profile = replace(d, tools=b.tools)
        m.taken.append("tools")
        m.f.fire(TAKEN, text="the builtin's call format (with its recovery rules) parses every call the "
                             "template renders")
        return
    _decline(m, "tools", f"the builtin's call format misreads a call the template renders: {broken}", broken)


def _reasoning(m: _Merge, b: Profile) -> None:
    d, br = m.profile, b.reasoning
    if br is None:
        return
    dr = d.reasoning
    if dr is not None and not set(dr.close) & set(br.close):
        _decline(m, "reasoning", f"the renders close reasoning with {' | '.join(dr.close)!r}, the builtin with "
                                 f"{' | '.join(br.close)!r}", " | ".join(dr.close), MARKERS_DIFFER)
        return
    if dr is None:
        # the renders show no reasoning and the generation prompt opens no block: a builtin block can
        # only be one the model opens itself
        cand = replace(br, start="explicit")
        prompt_read: list[tuple[str, object, object]] = [("reasoning.start", "explicit", br.start)]
    else:
        cand = ReasoningSpec(open=_union(dr.open, br.open), close=_union(dr.close, br.close), start=dr.start,
                             switchable=dr.switchable, join=dr.join or br.join)
        prompt_read = [("reasoning.start", dr.start, br.start), ("reasoning.switchable", dr.switchable, br.switchable)]
    broken = m.broken_by(replace(d, reasoning=cand))
    if broken is not None:
        _decline(m, "reasoning", f"the builtin's reasoning markers change how a render parses: {broken}", broken)
        return
    m.profile = replace(d, reasoning=cand)
    if dr is None:
        m.added.append("reasoning")
        m.f.fire(REASONING_ADDED, text=f"no render shows reasoning; {' | '.join(br.open)} ... "
                                       f"{' | '.join(br.close)} added from the builtin (builtin-only)")
    else:
        m.taken.append("reasoning")
        m.f.fire(TAKEN, fieldname="reasoning", snippet=" | ".join(dr.close),
                 text=f"the builtin closes reasoning with {' | '.join(br.close)!r} too; its spellings are added")
    for part, ours, theirs in prompt_read:
        if ours != theirs:
            _decline(m, part, f"the generation prompt shows {ours!r}; the builtin says {theirs!r}", rule=PROMPT_KEPT)


def _tokens(m: _Merge, b: Profile) -> None:
    d = m.profile
    cand = replace(d, strip=_union(d.strip, b.strip), content_open=_union(d.content_open, b.content_open),
                   content_close=_union(d.content_close, b.content_close))
    if cand == d:
        return
    broken = m.broken_by(cand)
    if broken is not None:
        _decline(m, "strip", f"a builtin end-of-turn or wrapper token changes how a render parses: {broken}", broken)
        return
    extra = [t for t in (*cand.strip, *cand.content_open, *cand.content_close)
             if t not in (*d.strip, *d.content_open, *d.content_close)]
    m.profile = cand
    m.taken.append("strip")
    m.f.fire(TAKEN, fieldname="strip", text=f"added {' '.join(extra)} from the builtin")


def _decline(m: _Merge, part: str, text: str, snippet: str = "", rule: Rule = DECLINED) -> None:
    """The builtin's ``part`` is not taken: record why (the profile's ``builtin.declined``, evidence)."""
    m.declined[part] = text
    m.f.fire(rule, fieldname=part, snippet=snippet, text=text)


def _union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*a, *b)))
