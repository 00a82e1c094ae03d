"""One reading of the wire format (issue 18): the parser, the grammars (live regex/structural tag,
exported GBNF) and the exported response template read tool lists, schema type names and tool
names through ``autoparser.wire``, so they agree. Each test below failed before that package."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

import autoparser
from autoparser.export import GrammarExport, build_grammar, response_template
from autoparser.grammar import example_calls, grammar_for
from autoparser.wire import is_name, json_type, json_types, name_class, normalized, read_tools

ROOT = Path(__file__).resolve().parents[1] / "autoparser"


def _tool(name: str, props: dict[str, Any], form: str = "openai") -> dict[str, Any]:
    params = {"type": "object", "properties": props, "required": list(props)}
    if form == "anthropic":
        return {"name": name, "description": "d", "input_schema": params}
    return {"type": "function", "function": {"name": name, "parameters": params}}


def _qwen_call(name: str, key: str, value: str) -> str:
    return (f"<tool_call>\n<function={name}>\n<parameter={key}>\n{value}\n</parameter>\n</function>\n"
            "</tool_call>")


def _gbnf_accepts(grammar: GrammarExport, text: str) -> bool:
    """Whether llguidance accepts ``text`` by the exported grammar's Lark print."""
    pytest.importorskip("llguidance")
    from test_export_grammar import accepts

    return bool(accepts(grammar, text))


def _regex_accepts(spec: dict[str, Any], text: str) -> bool:
    assert spec["kind"] == "regex", spec
    return re.fullmatch(spec["regex"], text) is not None


# -- type aliases -------------------------------------------------------------------------------


def test_str_alias_is_raw_text_in_parser_and_every_grammar() -> None:
    """``{"type": "str"}``: the parser takes the raw text; the grammars force raw text too (before,
    the GBNF forced a JSON string, so a model under it wrote ``"UTC"`` and the quotes came back
    inside the argument)."""
    prof = autoparser.get_profile("qwen3-coder")
    tools = [_tool("get_time", {"tz": {"type": "str"}})]
    raw = _qwen_call("get_time", "tz", "UTC")
    res = autoparser.parse(raw, prof, tools=tools)
    assert [(c.name, c.arguments, c.status) for c in res.tool_calls] == [("get_time", {"tz": "UTC"}, "ok")]
    assert not res.issues
    assert _gbnf_accepts(build_grammar(prof, tools, "gbnf"), raw)
    spec = grammar_for(prof, tools)
    assert _regex_accepts(spec, example_calls(prof, [("get_time", {"tz": "UTC"})]))
    forced = example_calls(prof, [("get_time", {"tz": "UTC"})])
    assert autoparser.parse(forced, prof, tools=tools).tool_calls[0].arguments == {"tz": "UTC"}


def test_int_alias_is_an_integer_in_parser_and_every_grammar() -> None:
    """``{"type": "int"}``: the parser reads 5 as an integer and flags ``UTC``; the grammars force an
    integer (before, the GBNF allowed any JSON value and the live grammar passed the alias on)."""
    prof = autoparser.get_profile("qwen3-coder")
    tools = [_tool("wait", {"n": {"type": "int"}})]
    good, bad = _qwen_call("wait", "n", "5"), _qwen_call("wait", "n", "UTC")
    assert autoparser.parse(good, prof, tools=tools).tool_calls[0].arguments == {"n": 5}
    flagged = autoparser.parse(bad, prof, tools=tools)
    assert flagged.issues and flagged.tool_calls[0].arguments == {"n": "UTC"}
    gbnf = build_grammar(prof, tools, "gbnf")
    assert _gbnf_accepts(gbnf, good)
    assert not _gbnf_accepts(gbnf, bad)
    assert not _gbnf_accepts(gbnf, _qwen_call("wait", "n", '"UTC"'))
    spec = grammar_for(prof, tools)
    assert _regex_accepts(spec, example_calls(prof, [("wait", {"n": 5})]))
    assert not _regex_accepts(spec, example_calls(prof, [("wait", {"n": "UTC"})]))


@pytest.mark.parametrize("dialect", ["hermes", "qwen3-coder", "pythonic", "gemma4"])
def test_aliases_in_nested_schemas_reach_every_grammar(dialect: str) -> None:
    prof = autoparser.get_profile(dialect)
    props = {"when": {"type": "dict", "properties": {"day": {"type": "long"}}, "required": ["day"]},
             "flags": {"type": "list", "items": {"type": "bool"}}}
    tools = [_tool("plan", props)]
    good = example_calls(prof, [("plan", {"when": {"day": 3}, "flags": [True]})])
    bad = example_calls(prof, [("plan", {"when": {"day": "3"}, "flags": [True]})])
    assert _gbnf_accepts(build_grammar(prof, tools, "gbnf"), good)
    assert not _gbnf_accepts(build_grammar(prof, tools, "gbnf"), bad)
    res = autoparser.parse(good, prof, tools=tools)
    assert [(c.arguments, c.status) for c in res.tool_calls] == [({"when": {"day": 3}, "flags": [True]}, "ok")]


# -- tool names ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ns:get_time", "weather.current", "get-time"])
def test_names_with_punctuation_parse_and_match_the_response_template(name: str) -> None:
    """``ns:get_time`` parses with our parser and with the response template we export (before, the
    template's name pattern excluded ``:``)."""
    chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")
    tools = [_tool(name, {"tz": {"type": "string"}})]
    for dialect in ("qwen3-coder", "deepseek-v3.1", "functiongemma", "kimi-k2"):
        prof = autoparser.get_profile(dialect)
        text = example_calls(prof, [(name, {"tz": "UTC"})])
        ours = autoparser.parse(text, prof, tools=tools)
        assert [(c.name, c.arguments) for c in ours.tool_calls] == [(name, {"tz": "UTC"})], dialect
        theirs = chat_parsing.parse_response(text, response_template(prof).template, prefix="", tools=tools)
        fns = [c.get("function", c) for c in theirs.get("tool_calls") or []]
        assert [f["name"] for f in fns] == [name], (dialect, theirs)


def test_name_rule_is_one_rule() -> None:
    rx = re.compile(name_class() + "+")
    for name in ("ns:get_time", "a.b", "x-y", "résumé", "f" * 256):
        assert is_name(name) and rx.fullmatch(name)
    for name in ("", "a b", "a<b", "f(x)", 'a"b', "a,b", "a\nb", "f" * 257):
        assert not is_name(name)
    # the parser forwards a name the tools do not list only when it is a name by this rule
    prof = autoparser.get_profile("qwen3-coder")
    assert autoparser.parse(_qwen_call("ns:x", "k", "v"), prof).tool_calls[0].name == "ns:x"
    # the no-tools grammar lets a model write exactly such names
    gbnf = build_grammar(prof, None, "gbnf")
    assert _gbnf_accepts(gbnf, _qwen_call("ns:x", "k", "v"))


# -- tool list shapes ------------------------------------------------------------------------------


def test_anthropic_input_schema_reaches_the_live_grammar() -> None:
    """An Anthropic ``input_schema`` tool gets its parameters in ``grammar_for`` (before, it got
    none: the grammar forced a call with an empty argument object)."""
    prof = autoparser.get_profile("hermes")
    tools = [_tool("get_time", {"tz": {"type": "string", "enum": ["UTC", "CET"]}}, form="anthropic")]
    spec = grammar_for(prof, tools)
    call = example_calls(prof, [("get_time", {"tz": "UTC"})])
    assert _regex_accepts(spec, call)
    assert not _regex_accepts(spec, example_calls(prof, [("get_time", {})]))
    assert not _regex_accepts(spec, example_calls(prof, [("get_time", {"tz": "PST"})]))
    assert _gbnf_accepts(build_grammar(prof, tools, "gbnf"), call)
    assert autoparser.parse(call, prof, tools=tools).tool_calls[0].arguments == {"tz": "UTC"}


def test_every_shape_reads_the_same() -> None:
    params = {"type": "object", "properties": {"a": {"type": "int"}}}
    shapes = [{"type": "function", "function": {"name": "f", "parameters": params}},
              {"type": "function", "name": "f", "parameters": params},
              {"name": "f", "parameters": params},
              {"name": "f", "input_schema": params}]
    for shape in shapes:
        assert read_tools([shape]) == read_tools([shape], strict=True) == {"f": params}
    assert read_tools({"f": params}, strict=True) == {"f": params}


def test_pydantic_refs_and_aliases_normalize_once() -> None:
    schema = {"type": "object", "properties": {"u": {"$ref": "#/$defs/U"}, "n": {"type": ["int", "null"]}},
              "$defs": {"U": {"type": "str", "enum": ["a", "b"]}}}
    view = normalized(schema)
    assert view["properties"]["u"] == {"type": "string", "enum": ["a", "b"]}
    assert view["properties"]["n"]["type"] == ["integer", "null"]
    assert "$defs" not in view
    assert json_type(" Float ") == "number" and json_type("decimal") is None
    assert json_types({"anyOf": [{"type": "str"}, {"type": "int"}]}) == {"string", "integer"}


# -- nothing else reads the wire format ----------------------------------------------------------------

# what only autoparser/wire may spell: tool-list shapes and schema document keywords
_WIRE_ONLY = frozenset({"input_schema", "$defs", "definitions"})
_ALIASES = frozenset({"str", "int", "long", "float", "double", "bool", "dict", "list", "text", "none"})
_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _offences(tree: ast.Module) -> list[str]:
    found: list[str] = []
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if node.value in _WIRE_ONLY:
                found.append(f"line {node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Dict):
            # a table mapping a Python type spelling to a JSON Schema type name
            pairs = [(k.value, v.value) for k, v in zip(node.keys, node.values, strict=True)
                     if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)]
            if any(k in _ALIASES and v in _JSON_TYPES for k, v in pairs):
                found.append(f"line {node.lineno}: a type-alias table")
        elif isinstance(node, ast.Compare):
            # a comparison against an alias spelling next to a JSON type name: reading aliases by hand
            texts = set(_strings(node))
            if texts & _ALIASES and texts & _JSON_TYPES:
                found.append(f"line {node.lineno}: compares type names with aliases")
    return found


def test_no_module_but_wire_reads_tool_shapes_refs_or_aliases() -> None:
    offences: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] == "wire":
            continue
        found = _offences(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            offences[str(rel)] = found
    assert not offences


def test_the_structural_check_can_fail() -> None:
    bad = ast.parse('T = {"int": "integer"}\nx = spec.get("input_schema")\nif t in ("str", "string"): pass\n')
    assert len(_offences(bad)) == 3
