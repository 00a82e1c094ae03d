"""What each host's own parsers read, kept as data (one JSON file per host, beside this module).

Every file lists *every* tool-call and reasoning parser its host ships (by the name a user passes
to it), the host version it was read from, and where: a parser's format is either a builtin
dialect's (``"reads": "hermes"``: the tool part of that profile), a format of its own written as
a profile's ``tools`` object, a reasoning block (``open`` / ``close`` / ``start``), Harmony
(``"reads": "harmony"``), or ``null`` with the format and why it is not modelled (such a parser
is listed and never bound). ``start`` is how a reasoning parser decides where reasoning begins:

* ``explicit``   only a block the output opens;
* ``prefilled``  the output starts inside the block (no close: all reasoning);
* ``auto``       a close before any open means the prompt opened it; neither: content;
* ``request``    the host follows the request's ``enable_thinking`` (the loader must pass it);
* ``prompt``     the host reads the rendered prompt's end (any start reads correctly);
* ``configurable`` the markers and the start are constructor options (``"*"`` markers).

Rules: this module reads and validates the files; it decides nothing (``resolve.py`` compares).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Literal

from ...errors import ProfileError
from ...profile import Profile, ReasoningSpec, ToolSpec
from ..errors import ExportError

__all__ = ["HOSTS", "Host", "HostReasoning", "HostTool", "host"]

HOSTS: tuple[str, ...] = ("vllm", "sglang", "ovms", "genai", "llamacpp", "trtllm", "mlx", "ollama", "transformers")

Start = Literal["explicit", "prefilled", "auto", "request", "prompt", "configurable"]


@dataclass(frozen=True)
class HostTool:
    """One tool-call parser: ``tools`` is what it reads (``None``: not modelled, never bound)."""

    name: str
    tools: ToolSpec | None = None
    harmony: bool = False
    dialect: str | None = None      # the builtin dialect whose tool format it reads, if any
    from_profile: bool = False      # reads whatever the profile says (a generated response template)
    exact_whitespace: bool = False  # its patterns require the whitespace written in them
    caveats: tuple[str, ...] = ()
    why: str = ""                   # why it is not modelled
    format: str = ""                # the format it reads, in words, when not modelled


@dataclass(frozen=True)
class HostReasoning:
    """One reasoning parser; ``reasoning`` is ``None`` when not modelled (or Harmony)."""

    name: str
    reasoning: ReasoningSpec | None = None
    start: Start = "explicit"
    any_markers: bool = False       # markers are options ("*"): any single open/close pair
    harmony: bool = False
    special_tokens: bool = False    # the markers must be single tokens of the vocabulary
    why: str = ""


@dataclass(frozen=True)
class Host:
    name: str
    title: str
    version: str
    read_from: str
    tools: tuple[HostTool, ...] = field(default_factory=tuple)
    reasoning: tuple[HostReasoning, ...] = field(default_factory=tuple)


def host(name: str) -> Host:
    """The parser table of ``name`` (one of :data:`HOSTS`); ExportError for an unknown host."""
    if name not in HOSTS:
        raise ExportError(f"unknown host {name!r} (valid: {', '.join(HOSTS)})")
    return _load(name)


@cache
def _load(name: str) -> Host:
    text = resources.files(__package__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    data = json.loads(text)
    where = f"host table {name}.json"
    try:
        return Host(name=data["host"], title=data["title"], version=data["version"], read_from=data["read_from"],
                    tools=tuple(_tool(k, v, where) for k, v in data["tool_parsers"].items()),
                    reasoning=tuple(_reasoning(k, v, where) for k, v in data["reasoning_parsers"].items()))
    except (KeyError, TypeError, ProfileError) as e:  # a packaging error, never user input
        raise ExportError(f"{where} is invalid: {e}") from None


def _tool(name: str, d: dict[str, Any], where: str) -> HostTool:
    reads = d["reads"]
    caveats = tuple(d.get("caveats", ()))
    exact = bool(d.get("exact_whitespace", False))
    if reads is None:
        return HostTool(name, why=d.get("why", "not modelled"), format=d.get("format", ""), caveats=caveats)
    if reads == "harmony":
        return HostTool(name, harmony=True, dialect="harmony", caveats=caveats)
    if reads == "profile":
        return HostTool(name, from_profile=True, caveats=caveats)
    if isinstance(reads, str):
        from ...dialects import get_profile

        spec = get_profile(reads).tools
        if spec is None:
            raise ExportError(f"{where}: {name} reads dialect {reads!r}, which has no tool calls")
        return HostTool(name, tools=spec, dialect=reads, exact_whitespace=exact, caveats=caveats)
    prof = Profile.from_dict({"tools": reads})
    return HostTool(name, tools=prof.tools, exact_whitespace=exact, caveats=caveats)


def _reasoning(name: str, d: dict[str, Any], where: str) -> HostReasoning:
    if "reads" in d:
        if d["reads"] == "harmony":
            return HostReasoning(name, harmony=True)
        return HostReasoning(name, why=d.get("why", "not modelled"))
    start = d["start"]
    if start not in ("explicit", "prefilled", "auto", "request", "prompt", "configurable"):
        raise ExportError(f"{where}: {name}: unknown start {start!r}")
    if d["open"] == ["*"]:
        return HostReasoning(name, start=start, any_markers=True)
    spec = ReasoningSpec(open=tuple(d["open"]), close=tuple(d["close"]))
    return HostReasoning(name, reasoning=spec, start=start, special_tokens=bool(d.get("special_tokens", False)))
