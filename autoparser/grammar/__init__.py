"""Grammars that force or accept a profile's tool-call format: one tree per request
(:mod:`.layout`, nodes and back-ends in :mod:`.tree`) printed as a regex or structural tag (the
canonical layout, for OpenVINO GenAI / xgrammar), GBNF, EBNF, Lark and examples (:mod:`.api`).
``tests/test_grammar_property.py`` checks them against the parser."""

from __future__ import annotations

from .api import (
    GrammarExport,
    GrammarFormat,
    Mode,
    build_grammar,
    example_calls,
    for_request,
    grammar_dialects,
    grammar_for,
    reasoning_spec,
    structured_output_for,
)
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
