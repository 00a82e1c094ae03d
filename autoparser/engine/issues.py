"""The issue codes the engine records, each with what it means: the one list of them.

``Issue.code`` is one of these (a ``str`` enum, so comparisons with plain strings keep working).
Each situation is governed by one ``Policy`` field (``GOVERNED_BY``; a few sites name another one
when the situation decides, e.g. a missing end marker at the end of the output is a truncation):
that field set to ``"raise"`` makes the issue a ``ParseError`` where it is recorded, so
``policy="strict"`` (every field ``"raise"``) raises wherever lenient mode repairs or flags.
docs/engine.md carries the table ``issue_table()`` renders, and tests check that the doc and every
code used in ``autoparser/engine`` agree with this list and that each code raises under strict.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["GOVERNED_BY", "IssueCode", "issue_table"]


class IssueCode(str, Enum):
    """Why lenient mode repaired or flagged something (``policy="strict"`` raises instead)."""

    call_in_reasoning = "call_in_reasoning"
    coercion_fallback = "coercion_fallback"
    double_encoded_arguments = "double_encoded_arguments"
    invalid_call = "invalid_call"
    invalid_header = "invalid_header"
    lookalike_marker = "lookalike_marker"
    missing_end_marker = "missing_end_marker"
    noncharacter = "noncharacter"
    partial_value = "partial_value"
    repaired_arguments = "repaired_arguments"
    schema_mismatch = "schema_mismatch"
    schema_unusable = "schema_unusable"
    stream_mismatch = "stream_mismatch"
    text_after_call = "text_after_call"
    truncated_call = "truncated_call"
    unclosed_reasoning = "unclosed_reasoning"
    unknown_tool = "unknown_tool"


#: each situation: the ``Policy`` field that says what happens in it (``"raise"``: a ``ParseError``),
#: and what it means
_TABLE: dict[IssueCode, tuple[str, str]] = {
    IssueCode.call_in_reasoning: ("call_in_reasoning", "a tool-call marker inside an open reasoning block (deferred, "
        "ended the block, or kept as reasoning per policy)"),
    IssueCode.coercion_fallback: ("malformed_arguments", "a tagged parameter value did not fit its schema type; the "
        "raw string was kept"),
    IssueCode.double_encoded_arguments: ("malformed_arguments", "arguments were a JSON string holding JSON; decoded"),
    IssueCode.invalid_call: ("malformed_arguments", "a call body that is not a call (kept as content or dropped per "
        "profile), or malformed after it was announced (status `invalid`)"),
    IssueCode.invalid_header: ("malformed_arguments", "a Harmony message header that never reached its message marker"),
    IssueCode.lookalike_marker: ("lookalike_marker", "token mode: a marker's text arrived as ordinary text, not as "
        "its special token; kept as text (or accepted as the marker, per policy)"),
    IssueCode.missing_end_marker: ("malformed_arguments", "a call or section was not closed; recovered at the next "
        "marker or the end"),
    IssueCode.noncharacter: ("malformed_arguments", "token mode: a Unicode noncharacter in the output was replaced by "
        "U+FFFD"),
    IssueCode.partial_value: ("truncated_call", "the last tagged parameter value was cut off and surfaced as is "
        "(status `truncated`)"),
    IssueCode.repaired_arguments: ("malformed_arguments", "closing brackets were missing before the end marker; added "
        "(status `repaired`)"),
    IssueCode.schema_mismatch: ("schema_mismatch", "arguments do not match the tool's JSON schema (status `invalid`)"),
    IssueCode.schema_unusable: ("schema_mismatch", "a tool schema the validator cannot use (invalid, or a remote "
        "`$ref`): reported once per tool; its calls are not blocked"),
    IssueCode.stream_mismatch: ("malformed_arguments", "the complete body parsed to other arguments than were "
        "streamed; the streamed ones were kept (status `repaired`)"),
    IssueCode.text_after_call: ("text_after_call", "visible text after a tool call, dropped "
        "(`text_after_call=\"drop\"`; kept as content it is no issue)"),
    IssueCode.truncated_call: ("truncated_call", "the output ended inside a call: kept as content/dropped "
        "(fail-closed) or a call with status `truncated` (streaming)"),
    IssueCode.unclosed_reasoning: ("unclosed_reasoning", "the output ended inside a reasoning block"),
    IssueCode.unknown_tool: ("unknown_tool", "a call to a tool that is not in the request (`known=False`)"),
}
GOVERNED_BY: dict[IssueCode, str] = {code: field for code, (field, _) in _TABLE.items()}


def issue_table() -> str:
    """The markdown table of issue codes, as docs/engine.md carries it."""
    rows = ["| code | meaning | raises when `Policy.…` is `\"raise\"` |", "|---|---|---|"]
    rows += [f"| `{code.value}` | {_TABLE[code][1]} | `{_TABLE[code][0]}` |" for code in IssueCode]
    return "\n".join(rows) + "\n"
