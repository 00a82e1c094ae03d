"""Grammars that force a profile's tool-call format.

One tree (:mod:`.tree`: literals, regexes, JSON-schema nodes, sequences, alternatives,
repetitions) with its back-ends (regex, structural tag, example text); the canonical layout built
on it (:mod:`.canonical`: one spelling per call, what OpenVINO GenAI is given); the GBNF / EBNF /
structural-tag text that accepts every spelling the parser reads (:mod:`.text`, for llama.cpp,
llguidance and xgrammar); and the request semantics (:func:`for_request`: OpenAI's
``tool_choice`` and ``parallel_tool_calls``). Every builder reads tools through
:mod:`autoparser.wire`; ``tests/test_grammar_property.py`` checks them against the parser.
"""

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
