"""vLLM and SGLang parser names for a profile: the flags a user pastes into ``vllm serve`` / SGLang.

Why names and not code: both servers ship their own per-model parsers; the useful export is
which of those implements the same wire format. The mapping is the profile's ``runtime_names``
(curated per builtin dialect); a derived profile uses the builtin dialect its wire format
matched (``Profile.name``). Anything else is reported as "no equivalent" rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..profile import Profile
from .errors import ExportError

__all__ = ["RUNTIMES", "RuntimeParsers", "runtime_parsers"]

Runtime = Literal["vllm", "sglang"]
RUNTIMES: tuple[Runtime, ...] = ("vllm", "sglang")


@dataclass(frozen=True)
class RuntimeParsers:
    """The parser names one server uses for a profile; ``None`` where it has no equivalent."""

    runtime: Runtime
    dialect: str | None
    tool: str | None
    reasoning: str | None
    missing: tuple[str, ...]
    #: where the template and the matched builtin dialect differ (``Profile.builtin``): a part only
    #: the builtin knows of gets no server parser; a prompt that opens reasoning the builtin expects
    #: the model to open is said, since the server's parser follows the builtin
    notes: tuple[str, ...] = ()

    @property
    def equivalent(self) -> bool:
        """True when every part of the profile (tools, reasoning) has a server parser."""
        return not self.missing

    def flags(self) -> list[str]:
        """Command-line flags, in the server's own spelling."""
        out: list[str] = []
        if self.tool is not None:
            if self.runtime == "vllm":
                out.append("--enable-auto-tool-choice")
            out += ["--tool-call-parser", self.tool]
        if self.reasoning is not None:
            out += ["--reasoning-parser", self.reasoning]
        return out

    def command(self, model: str = "MODEL") -> str:
        """A complete launch command line."""
        base = (["vllm", "serve", model] if self.runtime == "vllm"
                else ["python", "-m", "sglang.launch_server", "--model-path", model])
        return " ".join([*base, *self.flags()])

    def render(self, model: str = "MODEL") -> str:
        """What ``--emit vllm|sglang`` prints: the command, then one line per missing part."""
        lines = []
        if self.tool is None and self.reasoning is None:
            lines.append(f"# {self.runtime}: no equivalent parser for dialect {self.dialect or '<unnamed>'}")
        else:
            lines.append(self.command(model))
        lines += [f"# no {self.runtime} equivalent for {m}" for m in self.missing]
        lines += [f"# {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def _names_for(profile: Profile) -> tuple[str | None, dict[str, dict[str, str]]]:
    names = {k: dict(v) for k, v in profile.runtime_names.items()}
    if names or profile.name is None:
        return profile.name, names
    from ..dialects import get_profile
    from ..errors import UnknownDialectError

    try:
        b = get_profile(profile.name)
    except UnknownDialectError:
        return profile.name, {}
    return profile.name, {k: dict(v) for k, v in b.runtime_names.items()}


def runtime_parsers(profile: Profile, runtime: str) -> RuntimeParsers:
    """The ``--tool-call-parser`` / ``--reasoning-parser`` names of ``runtime`` for ``profile``."""
    if runtime not in RUNTIMES:
        raise ExportError(f"unknown runtime {runtime!r} (valid: {', '.join(RUNTIMES)})")
    dialect, names = _names_for(profile)
    mine = names.get(runtime, {})
    missing: list[str] = []
    harmony = profile.messages is not None
    tool = mine.get("tool")
    reasoning = mine.get("reasoning")
    if (profile.tools is not None or harmony) and tool is None:
        missing.append("tool calls")
    # a reasoning block only the builtin dialect knows of is no reason to run a reasoning parser
    shows_reasoning = profile.reasoning is not None and not profile.builtin_only("reasoning")
    notes = []
    if profile.reasoning is not None and not shows_reasoning:
        notes.append(f"reasoning: added by dialect {dialect!r} but shown by no render of the template; "
                     "no reasoning parser")
    start = profile.builtin.declined.get("reasoning.start") if profile.builtin is not None else None
    if shows_reasoning and reasoning is not None and start is not None and profile.reasoning is not None:
        notes.append(f"reasoning.start: {start}; check that the {reasoning!r} parser reads output that starts "
                     f"{'inside the block' if profile.reasoning.start == 'prefilled' else 'outside it'}")
    if (shows_reasoning or harmony) and reasoning is None:
        missing.append("reasoning")
    if profile.tools is None and not harmony:
        tool = None
    if not shows_reasoning and not harmony:
        reasoning = None
    return RuntimeParsers(runtime, dialect, tool, reasoning, tuple(missing), tuple(notes))
