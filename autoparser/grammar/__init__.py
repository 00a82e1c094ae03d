"""Grammars that force a profile's tool-call format: one tree with its back-ends (:mod:`.tree`), the
canonical layout OpenVINO GenAI is given (:mod:`.canonical`), GBNF / EBNF / structural-tag text
accepting every spelling the parser reads (:mod:`.text`), and the request semantics
(:func:`for_request`). ``tests/test_grammar_property.py`` checks them against the parser."""

from __future__ import annotations

from .canonical import Mode, example_calls, grammar_for, reasoning_spec, structured_output_for
from .choice import for_request
from .text import GrammarExport, GrammarFormat, build_grammar, grammar_dialects
from .tree import GrammarError, regex_literal

__all__ = [
    "GrammarError",
    "GrammarExport",
    "GrammarFormat",
    "Mode",
    "build_grammar",
    "example_calls",
    "for_request",
    "grammar_dialects",
    "grammar_for",
    "reasoning_spec",
    "regex_literal",
    "structured_output_for",
]
