"""Grammars that force a profile's tool-call format.

Today this package holds the request semantics (:func:`for_request`: OpenAI's ``tool_choice`` and
``parallel_tool_calls``); the grammar trees themselves are still built by
:mod:`autoparser.live.grammar` (regex / structural tag, one canonical layout) and
:mod:`autoparser.export.grammar` (GBNF / EBNF / structural tag, every spelling the parser reads),
both reading tools through :mod:`autoparser.wire` and checked against the parser by
``tests/test_grammar_property.py``.
"""

from __future__ import annotations

from .choice import for_request

__all__ = ["for_request"]
