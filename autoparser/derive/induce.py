"""Wrapper induction: literal text versus slots, from renders that differ only in probe values.

Theory. The call probes render the same call turn with different names, ids and argument values
(every value a unique sentinel) and with one, two and three calls. Aligned on the sentinels,
whatever is the same in every render is the format's literal text (markers, the constant part of a
header), and whatever changes is a slot: a sentinel the probe put there (``{name}``, ``{call_id}``)
or, when two renders differ only by a run of digits the probe never wrote, the call's number
(``{index}``). Literal text that holds a slot cannot be a marker to scan for; only its constant
parts can (``<function={name}>`` is opened by ``<function=``).

The functions here are the alignment primitives; ``calls.py`` applies them to the call block's
header, its per-call markers and its separators. They know no marker strings.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

__all__ = ["SLOT", "constant_head", "constant_tail", "has_slot", "number_slot", "slotted"]

#: a slot in an induced pattern
SLOT = re.compile(r"\{(?:name|id|call_id|index)\}")


def slotted(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each sentinel value replaced by its slot (``{"call_id": "QXid00001"}`` turns
    ``<|begin|>QXid00001`` into ``<|begin|>{call_id}``); longer values first, so a value that
    contains another is not split."""
    for slot, value in sorted(values.items(), key=lambda kv: -len(kv[1])):
        if value:
            text = text.replace(value, "{" + slot + "}")
    return text


def number_slot(samples: Sequence[str], numbers: Sequence[int]) -> str | None:
    """One pattern for texts that differ only where call ``numbers[i]`` is written.

    ``samples[i]`` is what the template wrote for call ``numbers[i]`` (1-based) at one place of
    the call (a header, a separator). When all samples are equal the text is literal; when they
    differ only in one run of digits that counts with the calls (from 0 or from 1), that run is the
    ``{index}`` slot. Anything else: None (the text is not one pattern).
    """
    if not samples:
        return None
    if all(s == samples[0] for s in samples):
        return samples[0]
    head = os.path.commonprefix(list(samples))
    tail = os.path.commonprefix([s[len(head):][::-1] for s in samples])[::-1]
    while head and head[-1].isdigit():
        head = head[:-1]
    while tail and tail[0].isdigit():
        tail = tail[1:]
    mids = [s[len(head): len(s) - len(tail)] for s in samples]
    if not all(m.isdigit() for m in mids):
        return None
    got = [int(m) for m in mids]
    if not any(all(g == n - base for g, n in zip(got, numbers, strict=True)) for base in (0, 1)):
        return None
    return head + "{index}" + tail


def has_slot(text: str) -> bool:
    return SLOT.search(text) is not None


def constant_head(pattern: str) -> str:
    """The literal text before the first slot: what opens a header that holds slots."""
    m = SLOT.search(pattern)
    return pattern if m is None else pattern[: m.start()]


def constant_tail(pattern: str) -> str:
    """The literal text after the last slot: the part of a slotted marker that is a marker."""
    last = None
    for m in SLOT.finditer(pattern):
        last = m
    return pattern if last is None else pattern[last.end():]
