"""Derivation rules as named data, and the structured evidence they leave behind.

Why: a derivation is only as trustworthy as the reasons it can give. Every decision the analysis
takes that is not read directly off a render (a guessed closing tag, an end-of-turn split, a
template variable bound to ``''``) is a *rule*: a frozen record with a name, the profile field it
decides, and a one-line reason. When a rule fires it leaves an :class:`Evidence` record: which
rule, which field, the render snippet it read, and what it did to that field's confidence. The
records are what ``autoparse PATH --explain`` and ``--json`` show; the human-readable evidence
lines of a profile are rendered from them.

The registry is data: each rule module under ``derive/`` holds a module-level tuple ``RULES`` of
:class:`Rule` values, and :data:`RULE_MODULES` lists the modules. :func:`registry` imports them
lazily and indexes the rules by name (no import-time registration, no side effects).

How to declare a rule and emit evidence (the API for every rule module)::

    # in autoparser/derive/mymodule.py
    from .rules import Rule

    SPLIT = Rule("eot.split_wrapper", "end_of_turn",
                 "a content wrapper's closing form glued to the end of turn is its own marker")
    RULES = (SPLIT,)

    def find_something(pr, f):           # f is a derive.extract.Findings
        ...
        f.fire(SPLIT, snippet=post, text=f"split {post!r} into {a!r} and {b!r}", conf=0.95)

    # then add "mymodule" to RULE_MODULES below.

``Findings.fire`` says what ``conf``, ``cap`` and ``fieldname`` do; a rule that neither sets nor
caps records a ``"note"``; the probe strings live in ``probes.py``. Field ``"confidence"`` is the
profile's overall confidence (confidence.py): its evidence is recorded but sets no field. Rule
names are ``area.what`` and unique across modules; ``tests/test_derive_rules.py`` checks that
every registered rule fires on some template in ``fixtures/templates/`` (a guard rule,
``guard=True``, is fired by a unit test).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any, Literal

__all__ = ["RULE_MODULES", "SNIPPET_CHARS", "Effect", "Evidence", "Rule", "clip", "registry"]

SNIPPET_CHARS = 160

# the modules whose RULES tuples make up the registry (relative to autoparser.derive)
RULE_MODULES: tuple[str, ...] = ("extract", "reasoning", "messages", "probes", "tools.shapes", "tools.blocks",
                                 "tools.layout", "tools.jsoncalls", "tools.pythonic", "tools.namejson",
                                 "tools.tagged", "tools.pattern", "tools.search", "failures", "structure",
                                 "confidence", "known", "settings")

Effect = Literal["set", "cap", "note"]


@dataclass(frozen=True)
class Rule:
    """One named derivation rule: what it decides and why it is allowed to."""

    name: str
    field: str
    reason: str
    # a guard catches what another rule derived wrongly; the fixtures exercise it only while some
    # rule still can, so a unit test fires it directly (tests/test_derive_rules.py)
    guard: bool = False

    def __post_init__(self) -> None:
        if not self.name or " " in self.name or "." not in self.name:
            raise ValueError(f"rule names are 'area.what' without spaces: {self.name!r}")
        if not self.reason:
            raise ValueError(f"rule {self.name!r} needs a reason")


@dataclass(frozen=True)
class Evidence:
    """What one rule (or one direct reading of a render) established for one field.

    ``rule`` is empty for evidence that no registered rule produced (plain readings of a render
    that older code still records as text).
    """

    field: str
    rule: str
    text: str
    snippet: str = ""
    effect: Effect = "note"
    confidence: float | None = None

    def line(self) -> str:
        """The human-readable rendering (a profile's ``evidence`` entry)."""
        return f"{self.field}: {self.text}" + (f" [{self.rule}]" if self.rule else "")

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "rule": self.rule, "text": self.text, "snippet": self.snippet,
                "effect": self.effect, "confidence": self.confidence}


def registry() -> dict[str, Rule]:
    """Every registered rule by name (imports the rule modules; raises on a duplicate name)."""
    out: dict[str, Rule] = {}
    for mod in RULE_MODULES:
        for r in getattr(import_module(f"{__package__}.{mod}"), "RULES", ()):
            if r.name in out and out[r.name] != r:
                raise ValueError(f"rule {r.name!r} is declared twice ({mod})")
            out[r.name] = r
    return out


def clip(text: str | None) -> str:
    """A render excerpt short enough for evidence."""
    if not text:
        return ""
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS - 3] + "..."
