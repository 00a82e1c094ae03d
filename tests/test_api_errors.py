"""Misuse of the public API fails loudly, clearly, and without losing what was already parsed."""

from __future__ import annotations

import re

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
