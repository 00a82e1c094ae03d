"""Tool choice: what a request's ``tool_choice`` and ``parallel_tool_calls`` let the model write.

The one place these semantics live (the server, and any caller that builds a request for
OpenVINO GenAI structured output, ask here):

* ``"none"``, or no tools: no grammar (the output is free; the caller should not parse calls).
* ``"auto"``: free text; once the model writes the format's first marker, the call is forced to
  completion (a format whose first marker cannot serve as a trigger, such as a bare ``{``, gets no
  grammar: its calls are still parsed). With parallel calls the text may go on after a call.
* ``"required"``: one call, or 1 to ``max_calls`` with ``parallel_tool_calls`` (``max_calls=None``:
  no bound), and nothing else.
* a named function (``{"type": "function", "function": {"name": N}}``, or ``{"name": N}``):
  exactly one call of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoparser.grammar.canonical import grammar_for
from autoparser.grammar.tree import GrammarError
from autoparser.profile import Profile
from autoparser.wire import ToolsError, read_tools

__all__ = ["for_request"]


def for_request(
    profile: Profile,
    tools: object,
    tool_choice: object = "auto",
    *,
    parallel_tool_calls: bool = True,
    max_calls: int | None = None,
) -> dict[str, Any] | None:
    """The structured-output spec enforcing ``tool_choice`` in ``profile``'s call format, or None.

    Returns a spec for :func:`autoparser.live.structured.build_structured_output`. Raises
    :class:`~autoparser.grammar.GrammarError` when a call must be forced (``required``, a
    named function) and cannot be: no call format, a tool the format cannot write, a schema the
    grammar cannot express, or a name the tools do not list.
    """
    try:
        schemas = read_tools(tools, strict=True)
    except ToolsError as exc:
        raise GrammarError(str(exc)) from None
    mode, name = _choice(tool_choice)
    if mode == "none" or not schemas:
        if mode in ("required", "named"):
            raise GrammarError(f"tool_choice {tool_choice!r} needs tools")
        return None
    if mode == "named":
        if name not in schemas:
            raise GrammarError(f"tool_choice names {name!r}, which is not among the tools")
        schemas = {name: schemas[name]}
    most = max_calls if parallel_tool_calls and mode != "named" else 1
    required = grammar_for(profile, schemas, mode="required", min_calls=1, max_calls=most)
    if mode != "auto":
        return required
    try:
        spec = grammar_for(profile, schemas, mode="auto", max_calls=1)
    except GrammarError:
        return None
    if most != 1:  # each triggered block is one call; with parallel calls, the text may go on
        spec["tag"]["stop_after_first"] = False
    return spec


def _choice(value: object) -> tuple[str, str | None]:
    if value in ("none", "auto", "required"):
        return str(value), None
    if isinstance(value, Mapping):
        fn = value.get("function", value)
        name = fn.get("name") if isinstance(fn, Mapping) else None
        if isinstance(name, str) and name:
            return "named", name
    raise GrammarError(f"tool_choice must be 'none', 'auto', 'required' or a named function, got {value!r}")
