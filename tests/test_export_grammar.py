"""Grammars exported from profiles, checked with a real grammar engine (llguidance, CPU-only).

The tool-call part of every peer vector whose calls are clean (our parser reads exactly the
expected calls from it, with no repair, and every argument fits the tool's schema) must be
accepted; malformed variants of the same text must be rejected.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import autoparser
from autoparser.export import ExportError, GrammarExport, build_grammar, emit
from autoparser.grammar import grammar_dialects
from autoparser.wire import read_tools

llg = pytest.importorskip("llguidance")


PEERS = Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "peer-cases.json"
#: dialects the issue requires, plus every other one with a tool-call format
REQUIRED = ("hermes", "qwen3-coder", "mistral", "llama3-json", "kimi-k2", "harmony")
NOT_COVERED = {"think"}
#: vectors our lenient parser reads but whose text is not the wire format the grammar generates
EXCLUDED = {
    "dyn-q3c-b4d-missing-param-close": "malformed: a closing </parameter> is missing",
    "dyn-q3c-b5b-missing-open": "malformed: </tool_call> without <tool_call>",
    "dyn-glm-b4d-missing-argvalue-close": "malformed: a closing </arg_value> is missing",
    "dyn-mm2-b4d-missing-invoke-close": "malformed: </invoke> is missing",
    "dyn-dsv32-b4d-missing-param-close": "malformed: a closing parameter tag is missing",
    "lcpp-mm3-nested-object": "object parameter written as nested tags; the grammar writes objects as JSON",
    "mlx-qwen3c-python-literal-dict": "object parameter written as a Python literal; the grammar writes JSON",
    "mlx-gemma4-two-calls-one-block": "two calls inside one <|tool_call> wrapper; the grammar writes one per wrapper",
}


class _ByteTokenizer:
    """One token per byte, so acceptance is decided on the exact text."""

    eos_token_id = 256
    bos_token_id = None
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    special_token_ids = (256,)

    def __call__(self, s: bytes) -> list[int]:
        return list(s)


_TOK = llg.LLTokenizer(llg.TokenizerWrapper(_ByteTokenizer()))


def _matcher(lark: str) -> Any:
    m = llg.LLMatcher(_TOK, llg.LLMatcher.grammar_from_lark(lark), log_level=0)
    assert not m.is_error(), m.get_error()
    return m


def accepts(grammar: GrammarExport, text: str) -> bool:
    """Whether llguidance accepts ``text`` by the export's own Lark print."""
    m = _matcher(grammar.lark)
    return bool(m.consume_tokens(list(text.encode()))) and bool(m.is_accepting())


def _struct_tags(g: GrammarExport) -> Any:
    tags = [llg.StructTag(trigger=begin, begin=begin, end="", grammar=lark.replace("%llguidance {}\n", ""))
            for begin, lark in json.loads(g.lark)]
    return llg.StructTag.to_grammar(tags, assume_special=False)


def accepts_structural_tag(g: GrammarExport, text: str) -> bool:
    g = _struct_tags(g)
    m = llg.LLMatcher(_TOK, g, log_level=0)
    assert not m.is_error(), m.get_error()
    return bool(m.consume_tokens(list(text.encode()))) and bool(m.is_accepting())


# -- peer vectors ---------------------------------------------------------------------------------

def _valid(value: Any, schema: Any) -> bool:
    """A small JSON-schema check (types, enum, properties, required, items): enough for the vectors."""
    if not isinstance(schema, dict) or not schema:
        return True
    if "enum" in schema and value not in schema["enum"]:
        return False
    for k in ("anyOf", "oneOf"):
        if k in schema:
            return any(_valid(value, s) for s in schema[k])
    t = schema.get("type")
    types = t if isinstance(t, list) else [t] if t else []
    checks = {"string": lambda v: isinstance(v, str),
              "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
              "boolean": lambda v: isinstance(v, bool), "null": lambda v: v is None,
              "array": lambda v: isinstance(v, list), "object": lambda v: isinstance(v, dict)}
    if types and not any(checks.get(x, lambda v: True)(value) for x in types):
        return False
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        if any(r not in value for r in schema.get("required") or ()):
            return False
        if props and any(k not in props for k in value):
            return False
        if props and list(value) != [k for k in props if k in value]:
            return False  # the grammar follows the schema's property order
        return all(_valid(v, props.get(k)) for k, v in value.items())
    if isinstance(value, list):
        return all(_valid(v, schema.get("items")) for v in value)
    return True


def _triggers(prof: autoparser.Profile) -> list[str]:
    if prof.messages is not None:  # Harmony: the parser leaves content at a header marker
        return [prof.messages.channel, prof.messages.start]
    t = prof.tools
    assert t is not None
    return [*t.section_open, *t.call_open, *t.lookahead_open]


def tool_part(case: dict[str, Any]) -> tuple[str | None, str, str]:
    """(prose before the calls, the tool-call part, why it is not clean) for one vector."""
    prof = autoparser.get_profile(case["dialect"])
    text = case["input"]
    tools = read_tools(case.get("tools"))
    exp = case["expected"]["tool_calls"]
    if not exp or not tools:
        return None, "", "no calls or no tools"
    for c in exp:
        if c["name"] not in tools:
            return None, "", "unknown tool"
        if not _valid(c["arguments"], {"type": "object", **tools[c["name"]]}):
            return None, "", "arguments do not fit the schema (or its property order)"
    starts = [i for i in (text.find(m) for m in _triggers(prof)) if i >= 0]
    if not starts:
        return None, "", "no trigger"
    start = min(starts)
    part = text[start:].rstrip()
    changed = True
    while changed:
        changed = False
        for s in prof.strip:
            if part.endswith(s):
                part, changed = part[: -len(s)].rstrip(), True
    res = autoparser.parse(part, prof, tools=case.get("tools"))
    got = [{"name": c.name, "arguments": c.arguments} for c in res.tool_calls]
    if got != [{"name": c["name"], "arguments": c["arguments"]} for c in exp]:
        return None, "", "the calls are not all in one tool-call part"
    # a Harmony turn carries its analysis messages in the grammar's part; elsewhere reasoning is prose
    if res.content.strip() or (res.reasoning.strip() and prof.messages is None):
        return None, "", "text between or after calls"
    if res.issues or any(c.status != "ok" for c in res.tool_calls):
        return None, "", "needs repair: " + ",".join(sorted({i.code for i in res.issues}))
    return text[:start], part, ""


def _cases() -> list[dict[str, Any]]:
    if not PEERS.is_file():
        return []
    return [c for c in json.loads(PEERS.read_text(encoding="utf-8"))
            if c["dialect"] not in NOT_COVERED]


CASES = _cases()
needs_shared = pytest.mark.skipif(not PEERS.is_file(), reason="../shared is absent")


def _clean() -> list[tuple[dict[str, Any], str, str]]:
    out = []
    for c in CASES:
        prose, part, _why = tool_part(c)
        if prose is not None and c["id"] not in EXCLUDED:
            out.append((c, prose, part))
    return out


CLEAN = _clean()


def _mutations(dialect: str, part: str, case: dict[str, Any]) -> list[tuple[str, str]]:
    prof = autoparser.get_profile(dialect)
    name = case["expected"]["tool_calls"][0]["name"]
    # Harmony: the name after the recipient prefix (an analysis message may mention the tool too)
    at = prof.messages.recipient_prefix if prof.messages is not None else ""
    muts = [("truncated", part[:-3]),
            ("unknown tool", part.replace(at + name, at + "no_such_tool_xyz", 1)),
            ("garbage after the trigger", _insert_after_trigger(dialect, part, "@@garbage@@"))]
    last_brace = part.rfind("}")
    if last_brace > 0 and (prof.tools is None or prof.tools.codec.kind != "tagged"):
        muts.append(("unbalanced braces", part[:last_brace] + part[last_brace + 1:]))
    if prof.messages is not None:
        # the first call's arguments as written: cut inside them, and break the schema (strings
        # become numbers, anything else a string)
        first = case["expected"]["tool_calls"][0]["arguments"]
        spelt = [a for a in (json.dumps(first, separators=(",", ":")), json.dumps(first)) if a in part]
        assert spelt, f"arguments of {case['id']} not found verbatim"
        args = spelt[0]
        at_args = part.index(args)
        bad = json.dumps({k: 7 if isinstance(v, str) else "x" for k, v in first.items()})
        muts += [("truncated arguments", part[: at_args + len(args) - 2]),
                 ("arguments violate the schema", part.replace(args, bad, 1))]
    return [(k, v) for k, v in muts if v != part]


def _insert_after_trigger(dialect: str, part: str, junk: str) -> str:
    prof = autoparser.get_profile(dialect)
    for m in sorted(_triggers(prof), key=len, reverse=True):
        if part.startswith(m):
            return part[: len(m)] + junk + part[len(m):]
    return junk + part


@needs_shared
@pytest.mark.parametrize("dialect", REQUIRED)
def test_required_dialects_have_clean_vectors(dialect: str) -> None:
    assert any(c["dialect"] == dialect for c, _, _ in CLEAN), f"no clean {dialect} vector to test"


@needs_shared
@pytest.mark.parametrize("case,prose,part", CLEAN, ids=[c["id"] for c, _, _ in CLEAN])
def test_gbnf_accepts_clean_tool_calls_and_rejects_malformed(case: dict[str, Any], prose: str,
                                                             part: str) -> None:
    prof = autoparser.get_profile(case["dialect"])
    g = build_grammar(prof, case["tools"], "gbnf")
    assert accepts(g, part), part
    for kind, bad in _mutations(case["dialect"], part, case):
        assert not accepts(g, bad), f"{kind}: {bad!r}"


@needs_shared
@pytest.mark.parametrize("case,prose,part", CLEAN, ids=[c["id"] for c, _, _ in CLEAN])
def test_ebnf_accepts_prose_then_calls(case: dict[str, Any], prose: str, part: str) -> None:
    prof = autoparser.get_profile(case["dialect"])
    g = build_grammar(prof, case["tools"], "ebnf")
    assert accepts(g, prose + part)
    assert accepts(g, "Just an answer, no call.")
    if all(len(t) > 1 for t in (*g.triggers, *g.start_triggers)):
        # with a one-character trigger ("[") prose may contain anything, so a cut call is prose
        assert not accepts(g, prose + part[:-3])


@needs_shared
@pytest.mark.parametrize("case,prose,part", CLEAN, ids=[c["id"] for c, _, _ in CLEAN])
def test_structural_tag_accepts_prose_then_calls(case: dict[str, Any], prose: str, part: str) -> None:
    prof = autoparser.get_profile(case["dialect"])
    try:
        g = build_grammar(prof, case["tools"], "structural-tag")
    except ExportError:
        pytest.skip("no literal trigger for a structural tag")
    if not any(part.startswith(t) for t in g.triggers):
        pytest.skip("this vector's calls start with a lookahead marker (not a structural-tag trigger)")
    assert accepts_structural_tag(g, prose + part)
    bad = _insert_after_trigger(case["dialect"], part, "@@garbage@@")
    assert not accepts_structural_tag(g, prose + bad)


def test_every_dialect_with_tool_markers_is_covered() -> None:
    cov = grammar_dialects()
    assert {d for d, why in cov.items() if why != "covered"} == NOT_COVERED
    for d in REQUIRED:
        assert cov[d] == "covered"


def test_no_tools_still_enforces_the_shape() -> None:
    g = build_grammar(autoparser.get_profile("hermes"), None, "gbnf")
    assert accepts(g, '<tool_call>\n{"name": "anything", "arguments": {"x": [1, {"y": null}]}}\n</tool_call>')
    assert not accepts(g, '<tool_call>\n{"name": "anything"}\n</tool_call>')


def test_schema_types_are_enforced() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}, "u": {"enum": ["c", "f"]},
                                         "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["n"]}}}]
    prof = autoparser.get_profile("hermes")
    g = build_grammar(prof, tools, "gbnf")
    ok = '<tool_call>{"name": "f", "arguments": {"n": 3, "u": "c", "tags": ["a", "b"]}}</tool_call>'
    assert accepts(g, ok)
    assert not accepts(g, ok.replace('"n": 3', '"n": "3"'))
    assert not accepts(g, ok.replace('"c"', '"k"'))
    assert not accepts(g, ok.replace('["a", "b"]', '["a", 2]'))
    assert not accepts(g, '<tool_call>{"name": "f", "arguments": {"u": "c"}}</tool_call>')
    q = build_grammar(autoparser.get_profile("qwen3-coder"), tools, "gbnf")
    xml = "<tool_call>\n<function=f>\n<parameter=n>\n{}\n</parameter>\n</function>\n</tool_call>"
    assert accepts(q, xml.format("42"))
    assert not accepts(q, xml.format("forty-two"))


def test_pythonic_and_relaxed_values() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}}]
    py = build_grammar(autoparser.get_profile("pythonic"), tools, "gbnf")
    assert accepts(py, "[get_weather(city='Paris', days=3)]")
    assert not accepts(py, "[get_weather(days=3)]")
    gem = build_grammar(autoparser.get_profile("gemma4"), tools, "gbnf")
    assert accepts(gem, '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|>')
    assert not accepts(gem, '<|tool_call>call:get_weather{city:2}<tool_call|>')


def test_errors_are_clear() -> None:
    with pytest.raises(ExportError, match="no tool-call format"):
        build_grammar(autoparser.get_profile("think"), None, "gbnf")
    with pytest.raises(ExportError, match="Harmony header"):
        emit(autoparser.get_profile("harmony"), "ebnf", {"get weather": {}})
    with pytest.raises(ExportError, match="valid: ebnf, gbnf, lark, structural-tag"):
        build_grammar(autoparser.get_profile("hermes"), None, "bnf")  # type: ignore[arg-type]


def test_gbnf_lists_its_triggers() -> None:
    g = build_grammar(autoparser.get_profile("llama3-json"), None, "gbnf")
    assert g.triggers == ("<|python_tag|>",)
    assert g.start_triggers == ("{",)
    assert '"<|python_tag|>"' in g.text.splitlines()[2]



# -- Harmony (header-routed messages) and think (no tool calls) -----------------------------------

_H_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]},
                                         "days": {"type": "integer"}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {
        "type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}},
]
_ANALYSIS = "<|channel|>analysis<|message|>Need the weather; get_weather takes a city.<|end|><|start|>assistant"
_CALL = ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
         '{"city": "Paris", "days": 2}<|call|>')
_TIME = '<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"tz": "UTC"}<|call|>'

#: what gpt-oss writes (and the parser reads as the intended calls or answer)
HARMONY_OK = {
    "canonical": _ANALYSIS + _CALL,
    "call only": _CALL,
    "role echoed by the engine": "<|start|>assistant" + _CALL,
    "stop token stripped": _CALL.removesuffix("<|call|>"),
    "content type json": _CALL.replace(" <|constrain|>json", " json"),
    "no content type": _CALL.replace(" <|constrain|>json", ""),
    "call from the analysis channel": '<|channel|>analysis to=functions.get_time code<|message|>{"tz":"UTC"}<|call|>',
    "recipient in the role": _ANALYSIS + ' to=functions.get_time<|channel|>commentary json<|message|>{"tz": "UTC"}',
    "two calls": _CALL + "<|start|>assistant" + _TIME,
    "unit from the enum": _CALL.replace('"days": 2', '"unit": "f"'),
    "final answer": _ANALYSIS + "<|channel|>final<|message|>Sunny in Paris.<|return|>",
    "final, stop token stripped": "<|channel|>final<|message|>Sunny.",
    "preamble then call": "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant" + _CALL,
    "two analysis messages": _ANALYSIS + _ANALYSIS + _CALL,
}
#: (text, whether a structural tag must reject it too: tags hold headers and arguments, not bodies)
HARMONY_BAD = {
    "unknown tool": (_CALL.replace("get_weather", "get_wether"), True),
    "truncated arguments": (_CALL[: _CALL.index(', "days"')], True),
    "string for an integer": (_CALL.replace('"days": 2', '"days": "2"'), True),
    "value outside the enum": (_CALL.replace('"days": 2', '"unit": "k"'), True),
    "required property missing": (_CALL.replace('"city": "Paris", ', ""), True),
    "extra property": (_CALL.replace('"days": 2', '"days": 2, "x": 1'), True),
    "properties out of schema order": (_CALL.replace('"city": "Paris", "days": 2', '"days": 2, "city": "Paris"'), True),
    "arguments not an object": (_CALL.replace('{"city": "Paris", "days": 2}', '["Paris"]'), True),
    "arguments of another tool": (_CALL.replace('"city": "Paris", "days": 2', '"tz": "UTC"'), True),
    "call on the final channel": (_CALL.replace("commentary to=", "final to="), True),
    "recipient but no arguments": ("<|channel|>analysis to=functions.get_time<|message|>think<|end|>", True),
    "unknown channel": ("<|channel|>secret<|message|>x<|end|><|start|>assistant" + _CALL, True),
    "header marker inside a body": ("<|channel|>analysis<|message|>x<|channel|>final<|message|>y", False),
    "analysis only (no answer, no call)": (_ANALYSIS.removesuffix("<|start|>assistant"), False),
    "text after the call": (_CALL + " Done.", False),
    "role missing between messages": (_ANALYSIS.removesuffix("<|start|>assistant") + _CALL, False),
}


def _harmony(fmt: str, tools: object = _H_TOOLS) -> GrammarExport:
    return build_grammar(autoparser.get_profile("harmony"), tools, fmt)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", list(HARMONY_OK))
def test_harmony_accepts_what_gpt_oss_writes(kind: str) -> None:
    text = HARMONY_OK[kind]
    assert accepts(_harmony("gbnf"), text)
    assert accepts(_harmony("ebnf"), text)
    assert accepts(_harmony("ebnf"), "Some prose first. " + text)
    assert accepts_structural_tag(_harmony("structural-tag"), "Some prose first. " + text)


@pytest.mark.parametrize("kind", list(HARMONY_BAD))
def test_harmony_rejects_malformed_turns(kind: str) -> None:
    text, tag_rejects = HARMONY_BAD[kind]
    assert not accepts(_harmony("gbnf"), text)
    assert not accepts(_harmony("ebnf"), text)
    if tag_rejects:
        assert not accepts_structural_tag(_harmony("structural-tag"), text)


def _harmony_texts() -> list[tuple[str, object]]:
    texts: list[tuple[str, object]] = [(t, _H_TOOLS) for t in HARMONY_OK.values()]
    texts += [(t, _H_TOOLS) for t, _ in HARMONY_BAD.values()]
    if PEERS.is_file():
        texts += [(c["input"], c["tools"]) for c in json.loads(PEERS.read_text(encoding="utf-8"))
                  if c["dialect"] == "harmony" and c["tools"]]
    return texts


@pytest.mark.parametrize("fmt", ["gbnf", "ebnf", "structural-tag"])
def test_harmony_accepted_text_never_holds_an_unconstrained_call(fmt: str) -> None:
    """Soundness: whatever a Harmony grammar accepts, the parser reads only calls of the given
    tools with schema-valid arguments (a grammar that let a call through untyped would be wrong)."""
    prof = autoparser.get_profile("harmony")
    accepted = 0
    for text, tools in _harmony_texts():
        g = build_grammar(prof, tools, fmt)  # type: ignore[arg-type]
        if fmt == "gbnf":
            starts = [i for i in (text.find(t) for t in g.triggers) if i >= 0]
            if not starts:
                continue
            text = text[min(starts):]
            ok = accepts(g, text)
        elif fmt == "ebnf":
            ok = accepts(g, text)
        else:
            ok = accepts_structural_tag(g, text)
        if not ok:
            continue
        accepted += 1
        schemas = read_tools(tools)
        res = autoparser.parse(text, prof, tools=tools)
        assert not [i for i in res.issues if "call" in i.code], (text, res.issues)
        for c in res.tool_calls:
            assert c.name in schemas and c.status == "ok", text
            assert _valid(c.arguments, {"type": "object", **schemas[c.name]}), text
    assert accepted >= len(HARMONY_OK)



_FRAGMENTS = ("<|start|>", "assistant", "<|channel|>", "analysis", "commentary", "final", " ",
              " to=functions.get_weather", " to=functions.get_time", "to=functions.", "get_time", " json",
              " <|constrain|>json", "<|constrain|>", " code", "<|message|>", "<|end|>", "<|call|>", "<|return|>",
              '{"city": "Paris"}', '{"tz": "UTC"}', '{"tz": 5}', '{"city": "P', "}", "{", '"', "hi", "x<", "|>", "\n")


def test_harmony_soundness_on_random_texts() -> None:
    """The same implication on 300 random texts: Harmony fragments strung together, and valid turns
    with a stretch replaced by a fragment. Seeded, so a failure reproduces."""
    import random

    prof = autoparser.get_profile("harmony")
    schemas = read_tools(_H_TOOLS)
    matchers: dict[str, tuple[tuple[str, ...], Any]] = {}
    for fmt in ("gbnf", "ebnf", "structural-tag"):
        g = build_grammar(prof, _H_TOOLS, fmt)
        if fmt == "structural-tag":
            compiled = _struct_tags(g)
        else:
            compiled = llg.LLMatcher.grammar_from_lark(g.lark)
        matchers[fmt] = (g.triggers if fmt == "gbnf" else (), compiled)
    rng = random.Random(20240611)
    seeds = list(HARMONY_OK.values())
    accepted = 0
    for _ in range(300):
        if rng.random() < 0.5:
            text = "".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(1, 14)))
        else:
            seed = rng.choice(seeds)
            i = rng.randint(0, len(seed))
            text = seed[:i] + rng.choice((*_FRAGMENTS, "")) + seed[min(len(seed), i + rng.randint(0, 12)):]
        for triggers, compiled in matchers.values():
            out = text
            if triggers:  # a lazy grammar sees the output from its first trigger on
                starts = [i for i in (text.find(t) for t in triggers) if i >= 0]
                if not starts:
                    continue
                out = text[min(starts):]
            m = llg.LLMatcher(_TOK, compiled, log_level=0)
            if not (m.consume_tokens(list(out.encode())) and m.is_accepting()):
                continue
            accepted += 1
            res = autoparser.parse(out, prof, tools=_H_TOOLS)
            assert not [i for i in res.issues if "call" in i.code], (out, res.issues)
            for c in res.tool_calls:
                assert c.name in schemas and c.status == "ok", out
                assert _valid(c.arguments, {"type": "object", **schemas[c.name]}), out
    assert accepted > 150

def test_harmony_grammar_is_derived_from_the_messages_spec() -> None:
    from autoparser.profile import MessagesSpec

    spec = MessagesSpec(start="<S>", channel="<C>", message="<M>", ends=("<E>", "<CALL>"),
                        constrain="<K>", recipient_prefix="to=tools.", reasoning_channels=("thinking",))
    prof = autoparser.get_profile("harmony").replace(name="renamed", messages=spec)
    text = '<C>thinking<M>hmm<E><S>assistant<C>commentary to=tools.get_time <K>json<M>{"tz": "UTC"}<CALL>'
    res = autoparser.parse(text, prof, tools=_H_TOOLS)
    assert [(c.name, c.arguments) for c in res.tool_calls] == [("get_time", {"tz": "UTC"})]
    g = build_grammar(prof, _H_TOOLS, "gbnf")
    assert g.triggers == ("<C>", "<S>")
    assert accepts(g, text)
    assert not accepts(g, HARMONY_OK["canonical"])
    assert not accepts(g, text.replace("thinking", "analysis"))  # not a reasoning channel here
    assert "<|" not in g.text


def test_harmony_grammar_accepts_the_live_layout() -> None:
    """The layout ``autoparser.grammar.grammar_for`` forces for OpenVINO GenAI is one the exports accept."""
    from autoparser.grammar import example_calls

    prof = autoparser.get_profile("harmony")
    text = example_calls(prof, [("get_weather", {"city": "Paris", "days": 2})])
    assert text == _CALL
    for fmt in ("gbnf", "ebnf"):
        assert accepts(_harmony(fmt), text)
    assert accepts_structural_tag(_harmony("structural-tag"), text)


def test_harmony_triggers_and_no_tools() -> None:
    g = build_grammar(autoparser.get_profile("harmony"), None, "gbnf")
    assert g.triggers == ("<|channel|>", "<|start|>") and g.start_triggers == ()
    assert '["<|channel|>", "<|start|>"]' in g.text.splitlines()[2]
    anything = '<|channel|>commentary to=functions.any_tool <|constrain|>json<|message|>{"x": [1, {"y": null}]}'
    assert accepts(g, anything)
    assert not accepts(g, anything.replace('{"x": [1, {"y": null}]}', '"x"'))
    st = json.loads(_harmony("structural-tag").text)["format"]
    assert st["triggers"] == ["<|channel|>", "<|start|>"]
    assert [t["begin"] for t in st["tags"]] == st["triggers"]
    with pytest.raises(ExportError, match="Harmony header"):
        build_grammar(autoparser.get_profile("harmony"), {"a<b": {}}, "gbnf")
    both = autoparser.get_profile("harmony").replace(tools=autoparser.get_profile("hermes").tools)
    with pytest.raises(ExportError, match="both tool markers"):
        build_grammar(both, None, "gbnf")


@pytest.mark.parametrize("fmt", ["gbnf", "ebnf", "structural-tag"])
def test_think_has_nothing_to_constrain(fmt: str) -> None:
    prof = autoparser.get_profile("think")
    with pytest.raises(ExportError, match="'think' has no tool-call format to constrain") as e:
        build_grammar(prof, _H_TOOLS, fmt)  # type: ignore[arg-type]
    assert "run without a grammar" in str(e.value)
    with pytest.raises(ExportError, match="no tool-call format"):
        emit(prof, fmt)

if os.environ.get("AUTOPARSER_PRINT_GRAMMAR_SKIPS"):  # pragma: no cover - a helper for the docs
    for _c in CASES:
        _p, _part, _why = tool_part(_c)
        if _why:
            print(_c["dialect"], _c["id"], _why)
