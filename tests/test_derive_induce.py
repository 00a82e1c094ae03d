"""Wrapper induction (autoparser/derive/induce.py) and the call shapes it lets derivation reach.

The alignment primitives are tested on synthetic render fragments; the shapes on invented
templates (spellings no real model uses), each derived with ``known=False`` and then asked to
parse an output written the way its own template writes calls.
"""

from __future__ import annotations

from typing import Any

import pytest

import autoparser
from autoparser.derive import analyze_detailed
from autoparser.derive.induce import constant_head, constant_tail, has_slot, number_slot, slotted

# -- primitives ---------------------------------------------------------------------------------


def test_slotted_replaces_longer_values_first() -> None:
    assert slotted("<b>ab1</b><n>ab</n>", {"call_id": "ab1", "name": "ab"}) == "<b>{call_id}</b><n>{name}</n>"
    assert slotted("no values here", {"name": "zz"}) == "no values here"


@pytest.mark.parametrize(("samples", "want"), [
    (['" n="1"', '" n="2"'], '" n="{index}"'),            # counted from 1
    ([":0>", ":1>", ":2>"], ":{index}>"),                  # counted from 0
    (["|sep|", "|sep|"], "|sep|"),                         # constant: literal
    (['" n="1"', '" n="5"'], None),                        # digits that do not count the calls
    (["<a>", "<b>"], None),                                # not one pattern
    (["x12y", "x13y"], "x{index}y"),                       # a multi-digit run is one slot
])
def test_number_slot(samples: list[str], want: str | None) -> None:
    numbers = list(range(1, len(samples) + 1))
    if want == "x{index}y":
        numbers = [13, 14]
    assert number_slot(samples, numbers) == want


def test_constant_parts_of_a_slotted_pattern() -> None:
    assert constant_head("<fn={name}>") == "<fn="
    assert constant_tail(" to={name}<|body|><calls>") == "<|body|><calls>"
    assert constant_head("plain") == "plain" == constant_tail("plain")
    assert has_slot("{call_id}<n>") and not has_slot("{key}") and not has_slot("{}")


# -- shapes, on invented templates ---------------------------------------------------------------

_TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "d",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]
_WANT = [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]

_HEAD = """{%- for m in messages -%}
{%- if m.role == 'user' -%}<<u>>{{ m.content }}<<end>>
{% elif m.role == 'assistant' -%}<<a>>{% if m.content %}{{ m.content }}{% endif %}"""
_FOOT = """<<end>>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}<<a>>{% endif -%}"""

SHAPES: dict[str, tuple[str, str]] = {
    # the constant part of the header is the only opener
    "header opener": (
        "{%- for tc in m.tool_calls or [] %}<@fn:{{ tc.function.name }}@>{{ tc.function.arguments | tojson }}"
        "<@/fn@>{%- endfor %}",
        '<@fn:get_weather@>{"city": "Paris", "days": 3}<@/fn@>'),
    # the caller's id before the name
    "id before name": (
        "{%- if m.tool_calls %}~~calls~~{% for tc in m.tool_calls %}~~c~~{{ tc.id }}~~n~~{{ tc.function.name }}"
        "~~x~~{{ tc.function.arguments | tojson }}~~/c~~{% endfor %}~~/calls~~{% endif %}",
        '~~calls~~~~c~~abc123~~n~~get_weather~~x~~{"city": "Paris", "days": 3}~~/c~~~~/calls~~'),
    # a name followed by a separator, parameters with a type attribute, the call's number in the header
    "tagged with typed attributes and a numbered header": (
        "{%- if m.tool_calls %}<%calls%>{% for tc in m.tool_calls %}<%call%>{{ tc.function.name }}"
        "#{{ loop.index }}<%:%>{% for k, v in tc.function.arguments.items() %}"
        "<%arg%>{{ k }} kind={{ 'text' if v is string else 'json' }}<%=%>"
        "{{ v if v is string else v | tojson }}<%/arg%>{% endfor %}<%/call%>{% endfor %}"
        "<%/calls%>{% endif %}",
        "<%calls%><%call%>get_weather#1<%:%><%arg%>city kind=text<%=%>Paris<%/arg%>"
        "<%arg%>days kind=json<%=%>3<%/arg%><%/call%><%/calls%>"),
    # a bare JSON array, no marker at all: a call only at the start of the output
    "bare array": (
        "{%- if m.tool_calls %}{{ m.tool_calls | map(attribute='function') | list | tojson }}{% endif %}",
        '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]'),
    # call lines without list brackets, fenced inside call markers
    "fenced call lines": (
        "{%- if m.tool_calls %}<<tc>>\n~~~py\n{% for tc in m.tool_calls %}{{ tc.function.name }}("
        "{% for k, v in tc.function.arguments.items() %}{{ k }}={{ v | tojson }}{% if not loop.last %}, {% endif %}"
        "{% endfor %})\n{% endfor %}~~~\n<</tc>>{% endif %}",
        '<<tc>>\n~~~py\nget_weather(city="Paris", days=3)\n~~~\n<</tc>>'),
    # a routing header naming the recipient before a body that names it again
    "routed body": (
        "{%- for tc in m.tool_calls or [] %}@@to {{ tc.function.name }}@@<x:calls>"
        "<x:call fn=\"{{ tc.function.name }}\">"
        "{% for k, v in tc.function.arguments.items() %}<x:p k=\"{{ k }}\">{{ v }}</x:p>{% endfor %}"
        "</x:call></x:calls>{% endfor %}",
        '@@to get_weather@@<x:calls><x:call fn="get_weather"><x:p k="city">Paris</x:p>'
        '<x:p k="days">3</x:p></x:call></x:calls>'),
}


def _derive(body: str) -> autoparser.Profile:
    return analyze_detailed(_HEAD + body + _FOOT, known=False).profile


def _calls(prof: autoparser.Profile, raw: str) -> list[dict[str, Any]]:
    res = autoparser.parse(raw, prof, tools=_TOOLS)
    return [{"name": c.name, "arguments": c.arguments} for c in res.tool_calls]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_shape_derives_and_parses_its_own_example(shape: str) -> None:
    body, example = SHAPES[shape]
    prof = _derive(body)
    assert prof.tools is not None, prof.evidence
    assert _calls(prof, example) == _WANT
    # and character by character
    p = prof.parser(tools=_TOOLS)
    for ch in example:
        p.feed(ch)
    p.close()
    assert [{"name": c.name, "arguments": c.arguments} for c in p.result().tool_calls] == _WANT


def test_header_opener_is_the_constant_head() -> None:
    prof = _derive(SHAPES["header opener"][0])
    assert prof.tools is not None
    assert prof.tools.lookahead_open == ("<@fn:",)
    assert not prof.tools.section_open and not prof.tools.call_open


def test_id_before_name_is_a_header_slot() -> None:
    prof = _derive(SHAPES["id before name"][0])
    assert prof.tools is not None
    assert prof.tools.codec.header.startswith("{call_id}")
    res = autoparser.parse(SHAPES["id before name"][1], prof, tools=_TOOLS)
    assert [c.id for c in res.tool_calls] == ["abc123"]


def test_numbered_header_and_typed_attribute() -> None:
    prof = _derive(SHAPES["tagged with typed attributes and a numbered header"][0])
    assert prof.tools is not None
    c = prof.tools.codec
    assert "{index}" in c.header and "{string}" in c.param and c.string_true == "text"
    two = ("<%calls%><%call%>get_weather#1<%:%><%arg%>city kind=text<%=%>Paris<%/arg%><%/call%>"
           "<%call%>get_weather#2<%:%><%arg%>city kind=text<%=%>Rome<%/arg%><%/call%><%/calls%>")
    assert [c["arguments"] for c in _calls(prof, two)] == [{"city": "Paris"}, {"city": "Rome"}]


def test_bare_array_is_a_call_only_at_the_start() -> None:
    prof = _derive(SHAPES["bare array"][0])
    assert prof.tools is not None and prof.tools.lookahead_at_start == ("[",)
    res = autoparser.parse('See [{"name": "get_weather", "arguments": {}}]', prof, tools=_TOOLS)
    assert res.tool_calls == [] and "See" in res.content


def test_separator_before_later_calls_opens_every_call() -> None:
    # the generation prompt ends with the opener; only the second call writes it itself
    tpl = ("{%- for m in messages -%}{%- if m.role == 'user' -%}<<u>>{{ m.content }}<<end>>\n"
           "{% elif m.role == 'assistant' -%}<<a>>%%{% if m.content %}text\n{{ m.content }}{% endif %}"
           "{% for tc in m.tool_calls or [] %}{% if not loop.first or m.content %}%%{% endif %}"
           "{{ tc.function.name }}\n{{ tc.function.arguments | tojson }}{% endfor %}<<end>>\n"
           "{% endif -%}{%- endfor -%}{%- if add_generation_prompt %}<<a>>%%{% endif -%}")
    prof = analyze_detailed(tpl, known=False).profile
    assert prof.tools is not None and prof.tools.call_open == ("%%",)
    assert _calls(prof, '%%get_weather\n{"city": "Paris", "days": 3}') == _WANT


def test_flat_tool_list_template_derives() -> None:
    tpl = ("{%- if tools %}<<tools>>{% for t in tools %}{{ t.name }}: "
           "{{ t.parameters.properties | list | join(',') }}\n{% endfor %}{% endif -%}"
           + _HEAD + "{%- for tc in m.tool_calls or [] %}<<call>>{{ {'name': tc.function.name, "
           "'arguments': tc.function.arguments} | tojson }}<</call>>{% endfor %}" + _FOOT)
    an = analyze_detailed(tpl, known=False)
    assert an.profile.tools is not None
    assert any(e.startswith("tools.list") for e in an.profile.evidence)
    assert _calls(an.profile, '<<call>>{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
                              '<</call>>') == _WANT


def test_id_written_where_the_name_would_be() -> None:
    # the template never writes the name, only the caller's id: calls whose ids are their names
    # show the id slot
    body = ("{%- if m.tool_calls %}<<sec>>{% for tc in m.tool_calls %}<<tc>>{{ tc.id }}<<args>>"
            "{{ tc.function.arguments | tojson }}<</tc>>{% endfor %}<</sec>>{% endif %}")
    prof = _derive(body)
    assert prof.tools is not None
    assert prof.tools.codec.header.startswith("{id}")
    assert any("id where other templates write the name" in e for e in prof.evidence)
    res = autoparser.parse('<<sec>><<tc>>get_weather<<args>>{"city": "Paris"}<</tc>><</sec>>', prof, tools=_TOOLS)
    assert [(c.name, c.id) for c in res.tool_calls] == [("get_weather", "get_weather")]


# -- the engine features these shapes need, on handwritten profiles, at every split point ----------

def _spec(**tools: Any) -> autoparser.Profile:
    return autoparser.Profile.from_dict({"tools": tools})


ENGINE_CASES = [
    # an id before the name
    (_spec(codec={"kind": "name_json", "header": "{call_id}<n>{name}<a>"}, call_open=["<c>"], call_close=["</c>"]),
     'x<c>id-7<n>get_weather<a>{"city": "Paris", "days": 3}</c>', [("get_weather", "id-7")]),
    # the call's number in a tagged header, a type attribute deciding coercion
    (_spec(codec={"kind": "tagged", "header": '<call fn="{name}" n="{index}">', "trailer": "</call>",
                  "param": '<p k="{key}" t="{string}">{value}</p>', "string_true": "str"},
           lookahead_open=['<call fn="']),
     '<call fn="get_weather" n="12"><p k="city" t="str">Paris</p><p k="days" t="num">3</p></call>',
     [("get_weather", None)]),
    # call lines without list brackets, up to the call's end marker
    (_spec(codec={"kind": "pythonic", "array": "never"}, call_open=["<py>"], call_close=["</py>"]),
     '<py>\nget_weather(city="Paris", days=3)\nget_weather(city="Paris", days=3)\n</py>',
     [("get_weather", None), ("get_weather", None)]),
]


@pytest.mark.parametrize(("prof", "raw", "want"), ENGINE_CASES, ids=["id-first", "index-and-type", "call-lines"])
def test_engine_extensions_at_every_split_point(prof: autoparser.Profile, raw: str,
                                                want: list[tuple[str, str | None]]) -> None:
    for k in range(len(raw) + 1):
        p = prof.parser(tools=_TOOLS)
        p.feed(raw[:k])
        p.feed(raw[k:])
        p.close()
        res = p.result()
        assert [c.name for c in res.tool_calls] == [n for n, _ in want], k
        assert all(c.arguments == {"city": "Paris", "days": 3} for c in res.tool_calls), k
        assert [c.id for c, (_, i) in zip(res.tool_calls, want, strict=True) if i is not None] == \
            [i for _, i in want if i is not None], k


def test_call_lines_that_are_not_calls_stay_text() -> None:
    prof = ENGINE_CASES[2][0]
    res = autoparser.parse("<py>\nprint x\n</py>", prof, tools=_TOOLS)
    assert res.tool_calls == [] and "print x" in res.content


def test_loading_rejects_an_index_glued_to_another_slot() -> None:
    with pytest.raises(autoparser.ProfileError) as e:
        _spec(codec={"kind": "name_json", "header": "{name}{index}:"}, call_open=["<c>"])
    assert e.value.field == "tools.codec.header"
