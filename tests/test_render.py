"""The sandboxed renderer: hostile templates fail fast and small, honest templates render exactly."""

from __future__ import annotations

import json
import time
import tracemalloc
from datetime import datetime

import pytest

pytest.importorskip("jinja2")

from autoparser.errors import TemplateError
from autoparser.templates import (
    RenderLimits,
    TemplateLimitExceeded,
    TemplateRaised,
    TemplateRenderer,
    render,
)

USER = [{"role": "user", "content": "hi"}]

# Time and memory every hostile template must stay within (the default render limit is 2 s).
MAX_SECONDS = 5.0
MAX_PEAK_BYTES = 64 * 1024 * 1024


def _fails_fast(source: str, permissive: bool = False) -> TemplateError:
    """Compile and render ``source``; it must raise TemplateError quickly and with little memory."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(TemplateError) as caught:
            TemplateRenderer(source, permissive=permissive).render(USER)
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < MAX_SECONDS, f"took {elapsed:.1f} s"
    assert peak < MAX_PEAK_BYTES, f"peak allocation {peak / 1e6:.0f} MB"
    return caught.value


# --- hostile templates ----------------------------------------------------------------------------

SANDBOX_ESCAPES = {
    "str-mro-subclasses": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "str-class-by-item": "{{ ''['__class__'] }}",
    "cycler-globals": "{{ cycler.__init__.__globals__.os }}",
    "lipsum-globals": "{{ lipsum.__globals__['os'] }}",
    "self-dict": "{{ self.__dict__ }}",
    "self-private-context": "{{ self._TemplateReference__context }}",
    "generator-frame": "{% set g = range(3)|map('string') %}{{ g.gi_frame }}",
    "namespace-underscore-init": "{% set ns = namespace(_secret=1) %}",
    "namespace-underscore-set": "{% set ns = namespace() %}{% set ns._Namespace__attrs = 1 %}",
    "namespace-class": "{{ namespace.__init__ }}",
    "dict-type-internals": "{{ dict.__call__.__globals__ }}",
    "format-attribute-walk": "{{ '{0.__class__.__mro__}'.format('') }}",
    "format-map-attribute-walk": "{{ '{x.__class__}'.format_map({'x': 1}) }}",
    "dict-update-mutation": "{% set d = {} %}{{ d.update({'a': 1}) }}",
    "list-append-mutation": "{% set l = [] %}{{ l.append(1) }}",
    "messages-mutation": "{{ messages.pop() }}",
}


MUTATIONS = ("dict-update-mutation", "list-append-mutation", "messages-mutation")


# the permissive semantics allow mutation (tested below); every other escape fails in both
ESCAPE_CASES = [pytest.param(src, False, id=f"{name}-transformers") for name, src in SANDBOX_ESCAPES.items()] + [
    pytest.param(src, True, id=f"{name}-permissive") for name, src in SANDBOX_ESCAPES.items() if name not in MUTATIONS]


@pytest.mark.parametrize(("source", "permissive"), ESCAPE_CASES)
def test_sandbox_escapes_are_refused(source: str, permissive: bool) -> None:
    error = _fails_fast(source, permissive)
    assert "unsafe" in str(error) or "underscore" in str(error)


def test_permissive_semantics_are_what_other_engines_accept() -> None:
    """Mutation, ``content: None`` and ``tojson`` of an iterator: refused or dropped under
    transformers' semantics, accepted by the permissive renderer the analyzer falls back to."""
    source = ("{% set ns = namespace(ids=[]) %}{% for m in messages %}{% set _ = ns.ids.append(m.role) %}"
              "{{ m.content is none }};{% endfor %}{{ ns.ids | tojson }}"
              "{{ messages | map(attribute='role') | tojson }}")
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]
    with pytest.raises(TemplateError, match="unsafe"):
        TemplateRenderer(source).render(msgs)
    assert TemplateRenderer(source, permissive=True).render(msgs) == \
        'False;True;["user", "assistant"]["user", "assistant"]'
    strict = "{% for m in messages %}{{ m.content is none }}{% endfor %}{{ messages | map(attribute='role') | tojson }}"
    with pytest.raises(TemplateError, match="not JSON serializable"):
        TemplateRenderer(strict).render(msgs)
    # the caller's messages are never changed, whatever the template does to its copy
    TemplateRenderer("{{ messages.pop() }}{{ messages[0].update({'role': 'x'}) }}", permissive=True).render(msgs)
    assert msgs == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]


MUTATION_BOMBS = {
    "extend-doubling": ("{% set l = [1] %}{% for i in range(60) %}{{ l.extend(l) }}{% endfor %}", "value"),
    "append-itself": ("{% set l = [] %}{% for i in range(1000) %}{{ l.append(l) }}{% endfor %}{{ l|tojson }}",
                      "depth"),
    "many-containers": ("{% set outer = [] %}{% for i in range(2000) %}{% set x = ['y' * 900000] %}"
                        "{{ outer.append(x) }}{% endfor %}", "value"),
    "grow-forever": ("{% set l = [] %}{% for i in range(100000) %}{% for j in range(100000) %}"
                     "{{ l.append('xxxxxxxxxx') }}{% endfor %}{% endfor %}", "time"),
}


@pytest.mark.parametrize(("source", "limit"), MUTATION_BOMBS.values(), ids=MUTATION_BOMBS.keys())
def test_permissive_mutation_stays_within_limits(source: str, limit: str) -> None:
    error = _fails_fast(source, permissive=True)
    assert isinstance(error, TemplateLimitExceeded), repr(error)
    assert error.limit == limit


RESOURCE_BOMBS = {
    "range-1e9": ("{% for i in range(10**9) %}{% endfor %}", "range"),
    "range-huge-int": ("{{ range(10**30)|length }}", "range"),
    "tilde-doubling": (
        "{% set ns = namespace(s='a') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "value",
    ),
    "plus-doubling": (
        "{% set ns = namespace(s='a') %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
        "value",
    ),
    "star-huge": ("{{ 'a' * 10**9 }}", "value"),
    "star-doubling": (
        "{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = ns.s * 2 %}{% endfor %}",
        "value",
    ),
    "list-star-huge": ("{{ ([0] * 10**9)|length }}", "value"),
    "join-doubling": (
        "{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = [ns.s, ns.s]|join %}{% endfor %}",
        "value",
    ),
    "join-huge-separator": ("{% set s = 'x' * 100000 %}{{ range(100000)|join(s) }}", "value"),
    "str-join-method": ("{% set s = 'x' * 100000 %}{{ s.join(range(20000)|map('string')) }}", "value"),
    "macro-infinite-recursion": ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "depth"),
    "recursive-loop": ("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}", "depth"),
    "macro-exponential": (
        "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}",
        "time",
    ),
    "nested-loops": ("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}", "time"),
    "output-bomb": ("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "output"),
    "macro-buffer-bomb": (
        "{% macro m() %}{% for i in range(100000) %}{{ 'y' * 1000 }}{% endfor %}{% endmacro %}{% set x = m() %}",
        "emitted",
    ),
    "literal-buffer-bomb": (
        "{% set x %}{% for i in range(100000) %}" + "z" * 1000 + "{% endfor %}{% endset %}",
        "emitted",
    ),
    "lipsum-huge": ("{{ lipsum(10**6, False, 10**4, 10**5) }}", "value"),
    "format-width": ("{{ '{:>999999999}'.format(1) }}", "value"),
    "format-nested-width": ("{{ '{:>{w}}'.format(1, w=10**9) }}", "value"),
    "format-repeated-field": ("{% set s = 'x' * 500000 %}{{ '{0}{0}{0}{0}'.format(s) }}", "value"),
    "percent-width": ("{{ '%999999999d' % 1 }}", "value"),
    "percent-star-width": ("{{ '%*d' % (10**9, 1) }}", "value"),
    "percent-repeated-key": ("{% set s = 'x' * 200000 %}{{ '%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s' % {'a': s} }}", "value"),
    "format-filter-width": ("{{ '%999999999d'|format(1) }}", "value"),
    "power": ("{{ 2 ** (10**8) }}", "integer"),
    "repeated-squaring": (
        "{% set ns = namespace(n=3) %}{% for i in range(40) %}{% set ns.n = ns.n * ns.n %}{% endfor %}",
        "integer",
    ),
    "shared-structure-tojson": (
        "{% set a = [1,2,3,4,5,6,7,8,9,10] %}{% set b = [a,a,a,a,a,a,a,a,a,a] %}{% set c = [b,b,b,b,b,b,b,b,b,b] %}"
        "{% set d = [c,c,c,c,c,c,c,c,c,c] %}{% set e = [d,d,d,d,d,d,d,d,d,d] %}{% set f = [e,e,e,e,e,e,e,e,e,e] %}"
        "{% set g = [f,f,f,f,f,f,f,f,f,f] %}{{ g|tojson }}",
        "value",
    ),
    "shared-structure-compare": (
        "{% set a = [1,2,3,4,5,6,7,8,9,10] %}{% set b = [a,a,a,a,a,a,a,a,a,a] %}{% set c = [b,b,b,b,b,b,b,b,b,b] %}"
        "{% set d = [c,c,c,c,c,c,c,c,c,c] %}{% set e = [d,d,d,d,d,d,d,d,d,d] %}{% set f = [e,e,e,e,e,e,e,e,e,e] %}"
        "{% set g = [f,f,f,f,f,f,f,f,f,f] %}{{ g == g }}",
        "value",
    ),
    "center-filter": ("{{ 'a'|center(10**9) }}", "value"),
    "ljust-method": ("{{ 'a'.ljust(10**9) }}", "value"),
    "indent-filter": ("{% set s = '\n' * 100000 %}{{ s|indent(100000, true, true) }}", "value"),
    "replace-filter": ("{% set s = 'a' * 100000 %}{{ s|replace('a', 'b' * 100000) }}", "value"),
    "replace-method-empty-old": ("{% set s = 'a' * 100000 %}{{ s.replace('', 'b' * 1000) }}", "value"),
    "batch-fill": ("{{ [1]|batch(10**9, 0)|list|length }}", "value"),
    "slice-count": ("{{ [1]|slice(10**8)|list|length }}", "value"),
    "tojson-indent": ("{{ [[[[1]]]]|tojson(indent=10**8) }}", "value"),
    "to-bytes": ("{{ (1).to_bytes(10**9, 'big') }}", "value"),
    "expandtabs": ("{{ ('\t' * 100000).expandtabs(100000) }}", "value"),
    "sum-quadratic": ("{% set a = [[1] * 10] * 20000 %}{{ (a|sum(start=[]))|length }}", "time"),
    "striptags-quadratic": ("{{ ('<b>' * 300000)|striptags }}", "time"),
    "wordwrap-wrapstring": ("{{ ('a ' * 400000)|wordwrap(1, wrapstring='x' * 1000) }}", "value"),
    "deep-expression-nesting": ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "depth"),
}


@pytest.mark.parametrize("permissive", [False, True], ids=["transformers", "permissive"])
@pytest.mark.parametrize(("source", "limit"), RESOURCE_BOMBS.values(), ids=RESOURCE_BOMBS.keys())
def test_resource_bombs_stop_at_a_limit(source: str, limit: str, permissive: bool) -> None:
    error = _fails_fast(source, permissive)
    assert isinstance(error, TemplateLimitExceeded), repr(error)
    assert error.limit == limit


def test_source_size_is_capped() -> None:
    with pytest.raises(TemplateLimitExceeded) as caught:
        TemplateRenderer("x" * 1_000_001)
    assert caught.value.limit == "source"


def test_include_and_import_have_no_loader() -> None:
    for source in ("{% include 'other' %}", "{% import 'other' as o %}", "{% extends 'base' %}"):
        _fails_fast(source)


def test_time_limit_is_configurable() -> None:
    renderer = TemplateRenderer(
        "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
        limits=RenderLimits(time_seconds=0.2),
    )
    started = time.monotonic()
    with pytest.raises(TemplateLimitExceeded, match=r"0\.2 s"):
        renderer.render(USER)
    assert time.monotonic() - started < 1.5


def test_output_limit_is_exact_and_configurable() -> None:
    renderer = TemplateRenderer("{{ 'x' * n }}", limits=RenderLimits(max_output_chars=10))
    assert renderer.render(USER, n=10) == "x" * 10
    with pytest.raises(TemplateLimitExceeded) as caught:
        renderer.render(USER, n=11)
    assert caught.value.limit == "output"


def test_limits_reject_nonsense() -> None:
    with pytest.raises(ValueError, match="max_output_chars"):
        RenderLimits(max_output_chars=0)
    with pytest.raises(ValueError, match="time_seconds"):
        RenderLimits(time_seconds=-1)


def test_renderer_is_reusable_after_a_failure() -> None:
    renderer = TemplateRenderer("{% if boom %}{{ 'a' * 10**9 }}{% endif %}ok")
    with pytest.raises(TemplateLimitExceeded):
        renderer.render(USER, boom=True)
    assert renderer.render(USER) == "ok"


# --- errors say what and where --------------------------------------------------------------------


def test_syntax_error_has_line_number() -> None:
    with pytest.raises(TemplateError, match="syntax error at line 3"):
        TemplateRenderer("a\nb\n{% if %}\n")


def test_unknown_filter_is_a_compile_error() -> None:
    with pytest.raises(TemplateError, match="No filter named 'nope'"):
        TemplateRenderer("{{ x|nope }}")


def test_runtime_error_has_line_number_and_cause() -> None:
    with pytest.raises(TemplateError, match="line 2") as caught:
        TemplateRenderer("line one\n{{ messages[0].missing.deeper }}").render(USER)
    assert type(caught.value.__cause__).__name__ == "UndefinedError"


def test_raise_exception_carries_the_template_message() -> None:
    source = (
        "{% if messages[0].role != 'system' %}\n{{ raise_exception('System message required, got ' ~ 1) }}{% endif %}"
    )
    with pytest.raises(TemplateRaised) as caught:
        TemplateRenderer(source).render(USER)
    assert str(caught.value) == "System message required, got 1"
    assert caught.value.template_message == "System message required, got 1"
    assert caught.value.lineno == 2
    assert isinstance(caught.value, TemplateError)


# --- correct rendering ----------------------------------------------------------------------------


def test_strftime_now() -> None:
    before = datetime.now().strftime("%d %b %Y")
    text = render("{{ strftime_now('%d %b %Y') }}", USER)
    after = datetime.now().strftime("%d %b %Y")
    assert text in (before, after)


def test_a_fixed_clock_makes_every_render_read_the_same_time() -> None:
    from autoparser.templates.render import TemplateRenderer

    fmt = "{{ strftime_now('%Y-%m-%d %H:%M:%S.%f') }}"
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901)
    fixed = TemplateRenderer(fmt, now=moment)
    assert {fixed.render(USER) for _ in range(5)} == {"2026-01-02 03:04:05.678901"}
    live = TemplateRenderer(fmt)
    assert len({live.render(USER) for _ in range(5)}) > 1  # microseconds: each render reads the clock


def test_tojson_keeps_unicode_order_and_html() -> None:
    value = {"z": "é ✓ <b>&'", "a": [1, 2.5, None, True]}
    text = render("{{ v|tojson }}", USER, v=value)
    assert text == json.dumps(value, ensure_ascii=False)
    assert text.startswith('{"z"')  # insertion order, not sorted like Jinja's own tojson


def test_tojson_options_follow_transformers() -> None:
    value = {"b": 1, "a": "é"}
    assert render("{{ v|tojson(indent=2) }}", USER, v=value) == json.dumps(value, ensure_ascii=False, indent=2)
    assert render("{{ v|tojson(sort_keys=true) }}", USER, v=value) == '{"a": "é", "b": 1}'
    assert render("{{ v|tojson(separators=(',', ':')) }}", USER, v=value) == '{"b":1,"a":"é"}'
    # transformers' positional order: the first argument is ensure_ascii, not indent.
    assert render("{{ v|tojson(true) }}", USER, v=value) == '{"b": 1, "a": "\\u00e9"}'


def test_generation_tag_renders_body_and_records_spans() -> None:
    source = (
        "{% for m in messages %}<{{ m.role }}>"
        "{% if m.role == 'assistant' %}{% generation %}{{ m.content }}</s>{% endgeneration %}"
        "{% else %}{{ m.content }}{% endif %}{% endfor %}"
    )
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    result = TemplateRenderer(source).render_detailed(messages)
    assert result.text == "<user>hi<assistant>hello</s>"
    assert [result.text[a:b] for a, b in result.generation_spans] == ["hello</s>"]


def test_trim_blocks_and_lstrip_blocks() -> None:
    source = "<a>\n    {% if true %}\n    x\n    {% endif %}\n<b>\n{{ 'y' }}\n"
    # lstrip_blocks removes the indentation before a block tag, trim_blocks the newline after it;
    # the final newline of the template is dropped (keep_trailing_newline is off).
    assert render(source, USER) == "<a>\n    x\n<b>\ny"


def test_loop_controls() -> None:
    source = (
        "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}"
        "{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}"
    )
    assert render(source, USER) == "0134"


def test_loop_variables_and_filters_behave_normally() -> None:
    source = (
        "{% for m in messages %}{{ loop.index }}/{{ loop.length }}{{ ',' if not loop.last }}{% endfor %}|"
        "{{ messages|map(attribute='role')|join(',') }}|"
        "{{ messages|selectattr('role', 'equalto', 'user')|list|length }}|"
        "{% for x in [] %}x{% else %}empty{% endfor %}|{{ [3, 1, 2]|sort|join }}|{{ 'a-b'.split('-') }}|"
        "{{ '%s=%d'|format('k', 3) }}|{{ '{}:{}'.format(1, 'x') }}|{{ 'ab' * 2 }}|{{ 2 ** 10 }}"
    )
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert render(source, messages) == "1/2,2/2|user,assistant|1|empty|123|['a', 'b']|k=3|1:x|abab|1024"


def test_namespace_and_dict_globals() -> None:
    source = (
        "{% set ns = namespace(count=0) %}{% for m in messages %}{% set ns.count = ns.count + 1 %}{% endfor %}"
        "{{ ns.count }} {{ dict(a=1) }} {{ dict.fromkeys(['x']) }}"
    )
    assert render(source, USER) == "1 {'a': 1} {'x': None}"


def test_context_matches_transformers() -> None:
    source = (
        "{{ messages[0].content is defined }}|{{ messages[0].thinking }}|{{ messages[0].reasoning_content }}|"
        "{{ documents is none }}|{{ tools|tojson }}|{{ add_generation_prompt }}|{{ bos_token }}|{{ eos_token }}|"
        "{{ enable_thinking }}"
    )
    messages = [{"role": "assistant", "content": None, "reasoning": "because"}]
    text = render(
        source,
        messages,
        tools=[{"name": "f"}],
        add_generation_prompt=True,
        bos_token="<s>",
        eos_token=None,
        enable_thinking=False,
    )
    # content=None is dropped; reasoning is copied to ``thinking`` and ``reasoning_content``.
    assert text == 'False|because|because|True|[{"name": "f"}]|True|<s>||False'


def test_messages_are_not_mutated_and_must_be_dicts() -> None:
    messages = [{"role": "user", "content": None, "reasoning_content": "r"}]
    render("{{ messages|length }}", messages)
    assert messages == [{"role": "user", "content": None, "reasoning_content": "r"}]
    with pytest.raises(TypeError):
        render("x", ["not a dict"])  # type: ignore[list-item]


def test_rich_inputs_are_made_plain() -> None:
    class Opaque:
        def dangerous(self) -> str:
            return "called"

    text = render(
        "{{ messages[0].content }}|{{ messages[0].extra }}", [{"role": "user", "content": "x", "extra": Opaque()}]
    )
    assert text == "x|<Opaque>"


def test_module_render_reuses_compiled_templates() -> None:
    source = "{{ messages[0].content }}"
    assert render(source, USER) == render(source, USER) == "hi"


def test_reads_names_the_inputs_a_template_can_read() -> None:
    """The analyzer skips call probes for templates that never read ``tool_calls``: a comment or
    other text that merely mentions the word does not count, every way of reading it does."""
    for source in ("{{ messages[0].tool_calls }}", "{{ messages[0]['tool_calls'] }}",
                   "{{ messages[0].get('tool_calls') }}", "{% set tool_calls = 1 %}{{ tool_calls }}"):
        assert TemplateRenderer(source).reads("tool_calls"), source
    for source in ("{# tool_calls #}{{ messages[0].content }}", "tool_calls: {{ messages | length }}"):
        assert not TemplateRenderer(source).reads("tool_calls"), source
    assert TemplateRenderer("{% if documents %}x{% endif %}").reads("documents")
