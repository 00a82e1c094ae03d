"""The template's own variables: which settings change where the generation prompt leaves the output.

Why: ``reasoning.start`` says what the prompt does by default, but a caller renders with its own
variables (``enable_thinking=False``, ``reasoning_effort="high"``, ``thinking_mode="disabled"``) and
must parse with the mode that prompt gives. The template says which variables it reads and what it
compares them with (``TemplateRenderer.inputs()``); each is probed with those values (plus ``true``
and ``false``, and the next integer after an integer it compares with, for budgets) one variable at a
time, and a variable whose values change the generation prompt becomes a setting: per value, the
``parser(reasoning=...)`` mode its prompt gives (``Profile.prompt_settings``, read by
``Profile.reasoning_for``).

A prompt gives ``prefilled`` when it ends with an open marker, ``off`` when it ends with a close
marker (an empty block written for the model), the default's mode when it equals the default prompt
(a block opened without a marker), and ``explicit`` otherwise. ``reasoning.switchable`` keeps its
narrower meaning (the ``enable_thinking`` / ``thinking`` / ``reasoning`` switch hosts follow);
the settings are the finer record. Limits: one variable at a time (combinations are not probed), at most
``MAX_VARIABLES`` variables and ``MAX_VALUES`` values each; only the generation prompt is read (a
variable that changes how history keeps reasoning is not a setting).
"""

from __future__ import annotations

from typing import Any

from ..profile import PromptSetting, ReasoningSpec
from .extract import Findings
from .probes import Prober, after_user
from .rules import Rule

__all__ = ["RULES", "find_settings"]

SETTING = Rule("variables.prompt_setting", "prompt_settings",
               "a template variable whose values change the generation prompt is a setting: each value's prompt "
               "says where the output starts")
RULES = (SETTING,)

_WS = " \t\r\n"
MAX_VARIABLES = 8  # bounds the probe renders of a template that reads many variables
MAX_VALUES = 6


def probe_values(constants: tuple[object, ...]) -> list[object]:
    """What a variable is set to: ``true``, ``false``, each constant the template compares it with,
    and the next integer after an integer one (a budget compared with ``> 0``)."""
    out: list[object] = [True, False]
    for c in constants:
        out.append(c)
        if isinstance(c, int) and not isinstance(c, bool):
            out.append(c + 1)
    unique: list[object] = []
    for v in out:
        if not any(type(v) is type(w) and v == w for w in unique):
            unique.append(v)
    return unique[:MAX_VALUES]


def find_settings(pr: Prober, f: Findings, tools: list[dict[str, Any]] | None,
                  r: ReasoningSpec | None) -> tuple[PromptSetting, ...]:
    """The settings of the template's own variables for reasoning ``r`` (none without reasoning
    markers: the evidence still names the variables that change the prompt)."""
    inputs = list(pr.renderer.inputs().items())[:MAX_VARIABLES]
    if not inputs:
        return ()
    default = after_user(pr.setting_prompt(tools))
    if default is None:
        return ()
    out: list[PromptSetting] = []
    for var, constants in inputs:
        rows = [(v, after_user(pr.setting_prompt(tools, **{var: v}))) for v in probe_values(constants)]
        seen = [(v, p) for v, p in rows if p is not None]
        if not any(p != default for _, p in seen):
            continue
        modes = [(v, start_of(p, default, r)) for v, p in seen] if r is not None else []
        out += [PromptSetting(var, v, mode) for v, mode in modes]  # type: ignore[arg-type]
        changed = next(p for _, p in seen if p != default)
        said = ", ".join(f"{v!r} -> {m}" for v, m in modes) or "no reasoning markers to read it with"
        f.fire(SETTING, snippet=changed[-80:], text=f"{var!r} changes the generation prompt: {said}")
    return tuple(out)


def start_of(prompt: str, default: str, r: ReasoningSpec | None) -> str:
    """The reasoning mode a generation prompt (from the user's message on) gives."""
    if r is None:
        return "explicit"
    tail = prompt.rstrip(_WS)
    if any(o.strip(_WS) and tail.endswith(o.strip(_WS)) for o in r.open):
        return "prefilled"
    if any(c.strip(_WS) and tail.endswith(c.strip(_WS)) for c in r.close):
        return "off"
    if prompt == default:  # (a block the prompt opens without a marker: the default's own reading)
        return r.start if r.start != "auto" else "explicit"
    return "explicit"
