"""Misuse of the public API fails loudly, clearly, and without losing what was already parsed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from corpus import DIALECTS

HERMES_CALL = '<tool_call>{"name": "search_docs", "arguments": {"query": "x"}}</tool_call>'


def _parser(name: str = "hermes"):
    import autoparser

    return autoparser.get_profile(name).parser()


@pytest.mark.parametrize(
    "bad", [b"bytes are not text", 42, None, ["a", "list"]], ids=lambda v: type(v).__name__
)
def test_feed_non_str_raises_type_error(bad: object) -> None:
    p = _parser()
    with pytest.raises(TypeError) as info:
        p.feed(bad)  # type: ignore[arg-type]
    msg = str(info.value)
    assert re.search(r"\bstr\b", msg), f"message should say a str is expected: {msg!r}"
    assert type(bad).__name__ in msg, f"message should name the type received ({type(bad).__name__}): {msg!r}"


def test_feed_after_close_raises_clearly() -> None:
    from autoparser.errors import AutoparserError

    p = _parser()
    p.feed("Hello")
    p.close()
    with pytest.raises((AutoparserError, RuntimeError)) as info:
        p.feed(" again")
    assert "close" in str(info.value).lower(), f"message should say the parser is closed: {info.value!s}"


def test_unknown_dialect_lists_known_names() -> None:
    import autoparser
    from autoparser.errors import AutoparserError, UnknownDialectError

    with pytest.raises(UnknownDialectError) as info:
        autoparser.get_profile("no-such-dialect")
    err = info.value
    assert isinstance(err, AutoparserError)
    msg = str(err)
    assert "no-such-dialect" in msg, msg
    missing = [d for d in DIALECTS if d not in msg]
    assert not missing, f"message should list every known dialect; missing {missing}: {msg!r}"


def test_parse_with_unknown_dialect_name_raises() -> None:
    import autoparser
    from autoparser.errors import UnknownDialectError

    with pytest.raises(UnknownDialectError):
        autoparser.parse("hello", "no-such-dialect")


def test_every_dialect_is_registered() -> None:
    import autoparser

    for d in DIALECTS:
        assert autoparser.get_profile(d) is not None, d


def test_type_error_loses_nothing_fed_before() -> None:
    p = _parser()
    p.feed("Before the call. ")
    p.feed(HERMES_CALL)
    p.feed(" After")
    with pytest.raises(TypeError):
        p.feed(b" bytes")  # type: ignore[arg-type]
    p.feed(" the call.")  # the parser is still usable after rejecting bad input
    p.close()
    res = p.result()
    assert " ".join(res.content.split()) == "Before the call. After the call."
    assert [(c.name, c.arguments) for c in res.tool_calls] == [("search_docs", {"query": "x"})]


def test_feed_after_close_loses_nothing() -> None:
    p = _parser()
    p.feed("Kept text. " + HERMES_CALL)
    p.close()
    with pytest.raises(Exception):  # noqa: B017 - the type is checked in test_feed_after_close_raises_clearly
        p.feed("late text")
    res = p.result()
    assert res.content.strip() == "Kept text."
    assert [c.name for c in res.tool_calls] == ["search_docs"]
    assert "late text" not in res.content



def test_bad_reasoning_option_is_an_autoparser_error() -> None:
    """errors.py: every error autoparser raises derives from AutoparserError (ValueError too is fine)."""
    import autoparser
    from autoparser.errors import AutoparserError

    prof = autoparser.get_profile("hermes")
    with pytest.raises(AutoparserError) as info:
        prof.parser(reasoning="sometimes")
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    assert "sometimes" in msg and "prefilled" in msg, (
        f"message should name the bad and the valid values: {msg!r}"
    )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_reasoning_modes_accepted_or_rejected_clearly(dialect: str) -> None:
    """Each documented reasoning mode either builds a parser or raises an AutoparserError saying why."""
    import autoparser
    from autoparser.errors import AutoparserError

    prof = autoparser.get_profile(dialect)
    for mode in (None, "prefilled", "auto", "off"):
        try:
            prof.parser(reasoning=mode)
        except Exception as e:
            assert isinstance(e, AutoparserError), f"{dialect} reasoning={mode!r}: {type(e).__name__}: {e}"
            assert "reasoning" in str(e), f"{dialect} reasoning={mode!r}: unclear message {e}"


# -- every public function, each kind of bad input: the error names the argument or the file --------

@pytest.mark.parametrize(("bad", "says"), [
    (b"raw bytes", "decode it first"), (bytearray(b"raw"), "decode it first"), (None, "got NoneType"),
    (42, "got int"), (["ok", 3], "text_or_chunks[1] must be a str, got int"), ([b"a"], "text_or_chunks[0]"),
], ids=lambda v: repr(v)[:20])
def test_parse_names_a_bad_text_argument(bad: object, says: str) -> None:
    import autoparser

    with pytest.raises(TypeError) as info:
        autoparser.parse(bad, "hermes")  # type: ignore[arg-type]
    assert "text_or_chunks" in str(info.value) and says in str(info.value)


def test_parse_names_each_bad_argument() -> None:
    import autoparser
    from autoparser.errors import AutoparserError

    for profile, kind, says in [(None, TypeError, "profile must be"), (3, TypeError, "profile must be"),
                                ("no-such-dialect", AutoparserError, "no-such-dialect"),
                                ("models/qwen", AutoparserError, "autoparser.load('models/qwen')")]:
        with pytest.raises(kind) as info:
            autoparser.parse("x", profile)  # type: ignore[arg-type]
        assert says in str(info.value)
    for tools in ({"tools": []}, "tools.json", 3):
        with pytest.raises(TypeError, match="tools must be a list"):
            autoparser.parse("x", "hermes", tools=tools)
    with pytest.raises(AutoparserError, match="reasoning"):
        autoparser.parse("x", "hermes", reasoning="sometimes")
    with pytest.raises(AutoparserError, match="policy"):
        autoparser.parse("x", "hermes", policy="picky")
    assert autoparser.parse("", "hermes").content == ""  # empty output: an empty result, not an error
    assert autoparser.parse([], "hermes").content == ""


def test_get_profile_names_a_bad_name() -> None:
    import autoparser

    with pytest.raises(TypeError, match="dialect name must be a str, got NoneType"):
        autoparser.get_profile(None)  # type: ignore[arg-type]
    for name in ("", "   "):
        with pytest.raises(autoparser.UnknownDialectError):
            autoparser.get_profile(name)


def test_coalesce_and_profile_constructors_name_bad_input() -> None:
    import autoparser

    with pytest.raises(TypeError, match="events must be an iterable"):
        autoparser.coalesce(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="events must hold autoparser events, got int"):
        autoparser.coalesce([1])  # type: ignore[list-item]
    assert autoparser.coalesce([]) == []
    with pytest.raises(TypeError, match=r"from_json\(\) takes the JSON text"):
        autoparser.Profile.from_json(None)  # type: ignore[arg-type]
    for text, field in (("", "<root>"), ("{bad", "<root>"), ("[]", "<root>"), ('{"tools": 3}', "tools")):
        with pytest.raises(autoparser.ProfileError) as info:
            autoparser.Profile.from_json(text)
        assert info.value.field == field
    with pytest.raises(autoparser.ProfileError, match="expected a JSON object, got list"):
        autoparser.Profile.from_dict([])  # type: ignore[arg-type]
    for policy in (3, "picky"):
        with pytest.raises(autoparser.AutoparserError, match="policy must be"):
            autoparser.Policy.coerce(policy)  # type: ignore[arg-type]


def test_load_names_the_file_for_each_kind_of_bad_input(tmp_path: Path) -> None:
    import json

    import autoparser
    from autoparser.errors import SourceError

    with pytest.raises(TypeError, match=r"path or name of a profile must be a str or os\.PathLike .*got NoneType"):
        autoparser.load(None)
    with pytest.raises(TypeError, match="got int"):
        autoparser.load(3)
    with pytest.raises(SourceError, match="empty profile spec"):
        autoparser.load("")  # not the current directory
    bad = {"missing.json": None, "dir.json": "dir", "binary.json": b"\xff\xfe not UTF-8", "empty.json": b"",
           "invalid.json": b"{bad", "list.json": b"[1]", "empty.jinja": b"", "binary.jinja": b"\xff\xfe\x81"}
    for name, content in bad.items():
        path = tmp_path / name
        if content == "dir":
            path.mkdir()
        elif content is not None:
            path.write_bytes(content)
        with pytest.raises(autoparser.AutoparserError) as info:
            autoparser.load(path)
        assert str(path) in str(info.value), (name, str(info.value))
    (tmp_path / "p.json").write_text(json.dumps({"tools": {"codec": {"kind": "jsn"}}}))
    with pytest.raises(autoparser.ProfileError) as perr:
        autoparser.load(tmp_path / "p.json")
    assert perr.value.path == str(tmp_path / "p.json") and perr.value.field == "tools.codec.kind"
    assert autoparser.load("hermes") == autoparser.get_profile("hermes")  # a dialect name is a spec too


def test_analyze_and_detect_name_bad_input() -> None:
    import autoparser
    from autoparser.errors import TemplateError

    for bad in (None, b"{{ x }}", 42):
        with pytest.raises(TypeError, match="chat template must be a str"):
            autoparser.analyze(bad)
    for empty in ("", "  \n"):
        with pytest.raises(TemplateError, match="empty"):  # renders nothing: not a profile
            autoparser.analyze(empty)
    with pytest.raises(autoparser.AutoparserError, match="chat template or a model id"):
        autoparser.detect()
