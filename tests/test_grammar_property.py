"""The parser and the grammars, checked against each other both ways (issue 18), per builtin dialect.

Random tool sets (names with ``.``, ``:``, ``-``; every JSON type and the common Python spellings;
enums, nested objects, arrays, ``$ref`` into ``$defs``; OpenAI, flat and Anthropic shapes) and
random valid calls for them:

(a) the profile's own layout of the calls (``example_calls``, the text the live grammar forces)
    parses back to exactly those calls with no issue, matches the live grammar, and is accepted by
    the exported grammar (its Lark print, one-character terminals, run by llguidance);
(b) strings derived at random from the exported GBNF grammar (``grammar_sampler``; each also
    checked by llguidance) parse to calls of the listed tools whose arguments validate against
    their schema, with no issue.

A tool name a format cannot write (``ns:get_time`` as a Python callee) must make both grammar
builders refuse the tool set rather than force text the parser would not read.
"""

from __future__ import annotations

import json
import os
import random
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import autoparser
from autoparser.dialects import dialects
from autoparser.engine.values import check_arguments
from autoparser.errors import AutoparserError
from autoparser.export import build_grammar
from autoparser.grammar import example_calls, grammar_for
from autoparser.wire import normalized, read_tools, writable

pytest.importorskip("llguidance")
from grammar_sampler import GbnfSampler
from test_export_grammar import _matcher


def _covered() -> list[str]:
    out = []
    for d in dialects():
        p = autoparser.get_profile(d.name)
        if (p.tools is not None and p.tools.codec.kind != "pattern") or (p.tools is None and p.messages is not None):
            out.append(d.name)
    return out


DIALECTS = _covered()
EXAMPLES = 200
#: AUTOPARSER_PROPERTY_NO_SHRINK=1 reports the first failing example as found (quicker to debug)
_PHASES = [p for p in Phase if p is not Phase.shrink or not os.environ.get("AUTOPARSER_PROPERTY_NO_SHRINK")]

# -- random tool sets ------------------------------------------------------------------------------

_WORD = st.builds(str.__add__, st.sampled_from("abcdefgh"), st.text("abcxyz_", max_size=5))
_NAME = st.builds(lambda a, seps: a + "".join(s + w for s, w in seps), _WORD,
                  st.lists(st.tuples(st.sampled_from(".:-"), _WORD), max_size=2))
_KEY = st.builds(str.__add__, st.sampled_from("abcdefgh"), st.text("abcxyz09_", max_size=5))
_SCALAR = st.sampled_from(["string", "str", "integer", "int", "number", "float", "boolean", "bool"])
_TEXT = st.text(st.sampled_from("abcxyzKLM0179 _-.:,é"), min_size=1, max_size=8).map(str.strip).filter(
    lambda s: bool(s) and s.lower() not in ("null", "none", "true", "false"))


def _schema(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    leaves = st.one_of(
        _SCALAR.map(lambda t: {"type": t}),
        st.lists(_TEXT, min_size=1, max_size=3, unique=True).map(lambda v: {"type": "string", "enum": v}),
    )
    if depth <= 0:
        return leaves
    return st.one_of(
        leaves,
        st.builds(lambda t, items: {"type": t, "items": items}, st.sampled_from(["array", "list"]), _schema(depth - 1)),
        _object(depth - 1),
    )


def _object(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda t, props, req: {"type": t, "properties": props,
                               "required": [k for k, r in zip(props, req, strict=False) if r]},
        st.sampled_from(["object", "dict"]),
        st.dictionaries(_KEY, _schema(depth), min_size=1, max_size=3),
        st.lists(st.booleans(), min_size=3, max_size=3),
    )


def _with_refs(params: dict[str, Any], use: list[bool]) -> dict[str, Any]:
    """Move some property schemas into ``$defs`` behind a ``$ref`` (what Pydantic writes)."""
    props = dict(params["properties"])
    defs: dict[str, Any] = {}
    for (key, sub), move in zip(list(props.items()), use, strict=False):
        if move:
            defs[f"D{len(defs)}"] = sub
            props[key] = {"$ref": f"#/$defs/D{len(defs) - 1}"}
    return {**params, "properties": props, **({"$defs": defs} if defs else {})}


def _tool(name: str, params: dict[str, Any], shape: str) -> dict[str, Any]:
    if shape == "anthropic":
        return {"name": name, "description": "d", "input_schema": params}
    if shape == "flat":
        return {"type": "function", "name": name, "parameters": params}
    return {"type": "function", "function": {"name": name, "parameters": params}}


_TOOLS = st.lists(
    st.tuples(_NAME, _object(1), st.lists(st.booleans(), min_size=3, max_size=3),
              st.sampled_from(["openai", "flat", "anthropic"])),
    min_size=1, max_size=2, unique_by=lambda t: t[0],
).map(lambda ts: [_tool(n, _with_refs(p, refs), shape) for n, p, refs, shape in ts])


def _value(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        return _TEXT
    if kind == "integer":
        return st.integers(-999, 999)
    if kind == "number":
        return st.one_of(st.integers(-999, 999), st.sampled_from([0.5, -2.25, 3.125]))
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(_value(schema["items"]), max_size=2)
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    return st.fixed_dictionaries({k: _value(v) for k, v in props.items() if k in required},
                                 optional={k: _value(v) for k, v in props.items() if k not in required}).map(
        lambda d: {k: d[k] for k in props if k in d})  # schema order: the layout the grammars force


# -- the property -------------------------------------------------------------------------------------


def _refused(fn: Any) -> bool:
    try:
        fn()
    except AutoparserError:
        return True
    return False


def _accepts(matcher: Any, text: str) -> bool:
    """Whether llguidance accepts ``text`` whole (the matcher is reset, so it serves again)."""
    matcher.reset()
    return bool(matcher.consume_tokens(list(text.encode()))) and bool(matcher.is_accepting())


def _reasoning(prof: autoparser.Profile) -> str | None:
    """The text is the tool-call part alone (a lazy grammar's), so no reasoning block is open."""
    return "auto" if prof.reasoning is not None else None


def _check_parsed(text: str, prof: autoparser.Profile, tools: list[dict[str, Any]],
                  schemas: dict[str, dict[str, Any]]) -> None:
    res = autoparser.parse(text, prof, tools=tools, reasoning=_reasoning(prof))
    assert res.tool_calls or prof.messages is not None, text  # a Harmony turn may end in a final answer
    assert not res.issues, (text, [str(i) for i in res.issues])
    for call in res.tool_calls:
        assert call.name in schemas and call.status == "ok", (text, call)
        assert not check_arguments(call.arguments, schemas[call.name]), (text, call.arguments)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_parser_and_grammar_agree(dialect: str) -> None:
    prof = autoparser.get_profile(dialect)
    kind = prof.tools.codec.kind if prof.tools is not None else None

    @settings(max_examples=EXAMPLES, deadline=None, database=None, phases=_PHASES,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(tools=_TOOLS, data=st.data())
    def run(tools: list[dict[str, Any]], data: st.DataObject) -> None:
        schemas = read_tools(tools)
        if not all(writable(name, kind) for name in schemas):
            assert _refused(lambda: build_grammar(prof, tools, "gbnf"))
            assert _refused(lambda: grammar_for(prof, tools))
            return
        name = data.draw(st.sampled_from(sorted(schemas)))
        args = data.draw(_value(normalized(schemas[name])))
        # (a) the profile's layout of a valid call: parsed back exactly, accepted by both grammars
        text = example_calls(prof, [(name, args)])
        res = autoparser.parse(text, prof, tools=tools, reasoning=_reasoning(prof))
        assert [(c.name, c.arguments, c.status) for c in res.tool_calls] == [(name, args, "ok")], text
        assert not res.issues, (text, [str(i) for i in res.issues])
        gbnf = build_grammar(prof, tools, "gbnf").text
        matcher = _matcher(build_grammar(prof, tools, "lark").text)
        assert _accepts(matcher, text), text
        try:
            spec = grammar_for(prof, tools)
        except AutoparserError as exc:
            assert "optional parameters" in str(exc)  # the live layout spells out optional subsets
        else:
            if spec["kind"] == "regex":
                assert re.fullmatch(spec["regex"], text), text
        # (b) text the grammar lets a model write: read as valid calls with no issue
        sample = GbnfSampler(gbnf).sample(random.Random(data.draw(st.integers(0, 2**32))))
        assert _accepts(matcher, sample), sample
        _check_parsed(sample, prof, tools, schemas)

    run()


def test_property_covers_every_dialect_with_calls() -> None:
    assert len(DIALECTS) >= 20 and "harmony" in DIALECTS and "think" not in DIALECTS
    assert json.dumps(sorted(DIALECTS))
