"""The machine's states and every transition between them, as data.

Rules of this file:

* Everything about *which state follows which* lives here: the modes (``Mode``), the places inside
  a tool-call region (``Spot``), and for each of them what a marker of each kind (``markers.Kind``)
  found there does. ``machine.py`` holds the handlers; they look the marker up here instead of
  branching on its kind, and do the one thing the entry's ``Act`` names.
* This file does not know the profile: which markers exist, and so which kinds can be found in a
  mode, is ``machine._Compiled``'s business. A kind missing from a mode's row is a kind that mode
  never searches for.
* Conditions the text alone cannot show in a table (a policy, whether a call was already read, a
  Harmony header the prompt opened) are named by the entry's ``Act`` and decided by its handler;
  ``Step.then`` is the state that follows in the usual case, ``Step.alt`` the others it may lead
  to. ``state_diagram()`` draws all of them (docs/engine.md carries its output; a test keeps the two
  in step).

Theory of operation. A handler scans from where the last one stopped for the markers its mode
knows. Text before a marker is written per mode (content, reasoning, held, a call body). At a
marker the row ``TRANSITIONS[mode][kind]`` says: the next mode (``then``), whether the marker is
consumed (``eat``) or read again by the next mode (a ``look`` marker is the first text of a call
body; a tool-call marker in ``undecided`` text makes the held text content and is then read as
content's), and what else happens (``act``). When the text ends without a marker, ``AT_END[mode]``
is what ``close()`` does. Region handlers use ``IN_REGION[spot][kind]`` the same way; ``then`` is
a ``Spot``, or ``Mode.content`` when the region is over. What ends a state without a marker of
the machine's (a codec finishing a call body, text between calls) is listed in ``OTHER``, for the
diagram: those decisions are the codecs'.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from .markers import Kind

__all__ = ["AT_END", "IN_REGION", "OTHER", "TRANSITIONS", "Act", "Mode", "Spot", "SpotStep", "Step", "state_diagram"]


class Mode(Enum):
    """What the text being read is: the machine's state."""

    __hash__ = object.__hash__  # identity, a C slot: as cheap as a str key (see markers.Kind)

    content = "content"        # visible text
    undecided = "undecided"    # reasoning="auto": reasoning or content, until a marker decides
    reasoning = "reasoning"    # inside a reasoning block
    defer = "defer"            # a call marker inside reasoning: held until the block closes or not
    whole = "whole"            # at a call marker: a complete JSON call decoded at once, else the region
    region = "region"          # tool calls (where in them: ``Spot``)
    skip = "skip"              # a rejected call's text, dropped up to its end marker
    h_header = "h_header"      # Harmony: a message header
    h_body = "h_body"          # Harmony: a message body (reasoning or content by its channel)
    h_call = "h_call"          # Harmony: the JSON arguments of a message addressed to a function
    h_after = "h_after"        # Harmony: after a call message, up to its end marker


class Spot(Enum):
    """Where in a tool-call region the text is."""

    __hash__ = object.__hash__

    between = "between"        # before a call (after the section marker, a separator, a call)
    call = "call"              # inside one call body (a codec parses it)
    after = "after"            # right after a call body: its end marker, the next call, the end


class Act(Enum):
    """What a transition does besides changing the state (each is one branch of a handler)."""

    __hash__ = object.__hash__

    none = "none"
    open_reasoning = "open_reasoning"      # a reasoning block starts (joined to the last one)
    region = "region"                      # a tool-call region starts at the marker
    header = "header"                      # a Harmony header starts
    prompt_block = "prompt_block"          # the held text was a block the prompt opened: reasoning
    held_content = "held_content"          # the held text was content
    held_reasoning = "held_reasoning"      # the held text (a call lookalike) was reasoning after all
    call_in_reasoning = "call_in_reasoning"  # policy ``call_in_reasoning``: defer, call or raise
    reread_held = "reread_held"            # the held text is read again as content (the call ends the block)
    unclosed = "unclosed"                  # an issue: the reasoning block never closed
    channel = "channel"                    # a header's channel part
    message = "message"                    # the header is complete: a body, or a call if addressed
    header_end = "header_end"              # the header ended early (prose, if the prompt opened it)
    need_call = "need_call"                # the region ends; rejected if it holds no call yet
    call_open = "call_open"                # a per-call open marker
    look = "look"                          # a marker-less call body starts here
    close_call = "close_call"              # a call's end marker: the next in a section, else the end
    check_closed = "check_closed"          # the region ends; an issue if the call's end marker is missing
    next_call = "next_call"                # the next call starts while this one was not closed


class Step(NamedTuple):
    then: Mode
    eat: bool = True                 # consume the marker (else the next mode reads it)
    act: Act = Act.none
    alt: tuple[Mode, ...] = ()       # other modes ``act`` may choose


class SpotStep(NamedTuple):
    then: Spot | Mode                # ``Mode.content``: the region is over
    eat: bool = True
    act: Act = Act.none
    alt: tuple[Spot | Mode, ...] = ()


_C, _U, _R, _D, _W = Mode.content, Mode.undecided, Mode.reasoning, Mode.defer, Mode.whole
_RG, _SK, _HH, _HB, _HC, _HA = Mode.region, Mode.skip, Mode.h_header, Mode.h_body, Mode.h_call, Mode.h_after
_HELD_CONTENT = Step(_C, eat=False, act=Act.held_content)

#: (mode, kind of the marker found) -> what happens
TRANSITIONS: dict[Mode, dict[Kind, Step]] = {
    Mode.content: {
        Kind.strip: Step(_C),
        Kind.r_open: Step(_R, act=Act.open_reasoning),
        Kind.section: Step(_RG, act=Act.region),
        Kind.call: Step(_W, eat=False),
        Kind.look: Step(_RG, eat=False, act=Act.region),
        Kind.h_start: Step(_HH, act=Act.header),
        Kind.h_channel: Step(_HH, act=Act.header),
    },
    Mode.undecided: {
        Kind.strip: Step(_U),
        Kind.r_close: Step(_C, act=Act.prompt_block),
        Kind.r_open: _HELD_CONTENT,
        Kind.section: _HELD_CONTENT,
        Kind.call: _HELD_CONTENT,
        Kind.look: _HELD_CONTENT,
        Kind.h_start: _HELD_CONTENT,
        Kind.h_channel: _HELD_CONTENT,
    },
    Mode.reasoning: {
        Kind.r_close: Step(_C),
        Kind.strip: Step(_R),  # includes a nested open marker
        Kind.section: Step(_D, act=Act.call_in_reasoning, alt=(_C,)),
        Kind.call: Step(_D, act=Act.call_in_reasoning, alt=(_C,)),
    },
    Mode.defer: {
        Kind.r_close: Step(_C, act=Act.held_reasoning),
    },
    Mode.skip: {
        Kind.end: Step(_C),
    },
    Mode.h_header: {
        Kind.h_channel: Step(_HH, act=Act.channel),
        Kind.msg: Step(_HB, act=Act.message, alt=(_HC,)),
        Kind.h_start: Step(_C, eat=False, act=Act.header_end),
        Kind.end: Step(_C, act=Act.header_end),
    },
    Mode.h_body: {
        Kind.strip: Step(_HB),
        Kind.end: Step(_C),
        Kind.h_start: Step(_C, eat=False),
        Kind.h_channel: Step(_C, eat=False),
    },
    Mode.h_after: {
        Kind.end: Step(_C),
    },
}

#: the text ended (``close()``) in a mode without a marker deciding it
AT_END: dict[Mode, Step] = {
    Mode.content: Step(_C),
    Mode.undecided: Step(_C, act=Act.held_content),
    Mode.reasoning: Step(_R, act=Act.unclosed),
    Mode.defer: Step(_C, act=Act.reread_held),
    Mode.whole: Step(_C),  # (never: at the end its handler decides, as it does with more text)
    Mode.region: Step(_C, act=Act.need_call),
    Mode.skip: Step(_C),
    Mode.h_header: Step(_C, act=Act.header_end),
    Mode.h_body: Step(_C),
    Mode.h_call: Step(_C),
    Mode.h_after: Step(_C),
}

_B, _CA, _AF = Spot.between, Spot.call, Spot.after

#: (spot in a region, kind of the marker found) -> what happens; text that is no marker is the
#: codec's (``between`` -> ``call``, ``after`` -> ``between`` in a section, else the region ends)
IN_REGION: dict[Spot, dict[Kind, SpotStep]] = {
    Spot.between: {
        Kind.s_open: SpotStep(_C, eat=False),
        Kind.eot: SpotStep(_C, eat=False, act=Act.need_call),
        Kind.s_close: SpotStep(_C, act=Act.need_call),
        Kind.c_open: SpotStep(_CA, act=Act.call_open),
        Kind.look: SpotStep(_CA, eat=False, act=Act.look),
        Kind.sep: SpotStep(_B),
        Kind.c_close: SpotStep(_B),  # a stray call end
    },
    Spot.after: {
        Kind.c_close: SpotStep(_B, act=Act.close_call, alt=(_C,)),
        Kind.s_close: SpotStep(_C, act=Act.check_closed),
        Kind.s_open: SpotStep(_C, eat=False),
        Kind.eot: SpotStep(_C, eat=False, act=Act.check_closed),
        Kind.look: SpotStep(_CA, eat=False, act=Act.look),
        Kind.c_open: SpotStep(_B, eat=False, act=Act.next_call, alt=(_C,)),
        Kind.sep: SpotStep(_B),  # the next call follows (marker-less calls too: Llama 3's ';')
    },
}


#: what ends a state other than a marker: a call body ends where its codec (``Spot.call``) or
#: Harmony's bracket scanner (``Mode.h_call``) says; other text than a marker between or after
#: calls (``text``: a call body in a section, ``?``: depending on the codec and the region); at a
#: call marker (``Mode.whole``) a complete JSON call in hand is written at once, a short one held
#: whole (the carry) until it is complete, and anything else goes to the region
OTHER: dict[Spot | Mode, dict[str, Spot | Mode]] = {
    Spot.between: {"text": _CA, "text?": _C},
    Mode.whole: {"a whole call, closed": _C, "a whole call, not closed": _RG, "anything else": _RG},
    Spot.call: {"done": _AF, "rejected": _C, "rejected, dropped": _SK},
    Spot.after: {"text": _B, "text?": _C},
    Mode.h_call: {"done": _HA, "not JSON": _HA},
    Mode.h_after: {"text": _C},
}


def state_diagram() -> str:
    """A mermaid ``stateDiagram-v2`` of ``TRANSITIONS``, ``AT_END``, ``IN_REGION`` and ``OTHER``, as
    docs/engine.md carries it: one arrow per (state, next state), labelled with the marker kinds
    (``end of text`` for ``AT_END``); a conditional entry draws its alternatives too, marked ``?``."""
    edges: dict[tuple[str, str], list[str]] = {}

    def name(state: Mode | Spot) -> str:
        return state.value if isinstance(state, Mode) else "region_" + state.value

    def add(src: Mode | Spot, dst: Mode | Spot, label: str) -> None:
        # leaving the region from inside it is the composite state's end, then content
        target = "[*]" if isinstance(src, Spot) and dst is Mode.content else name(dst)
        source = "region" if isinstance(src, Spot) and isinstance(dst, Mode) and target != "[*]" else name(src)
        labels = edges.setdefault((source, target), [])
        if label not in labels:
            labels.append(label)

    for mode, row in TRANSITIONS.items():
        for kind, step in row.items():
            add(mode, step.then, kind.value)
            for other in step.alt:
                add(mode, other, kind.value + "?")
    for mode, step in AT_END.items():
        if step.then is not mode and mode not in (Mode.region, Mode.whole):  # (they end by their handlers)
            add(mode, step.then, "end of text")
    for spot, srow in IN_REGION.items():
        for kind, sstep in srow.items():
            add(spot, sstep.then, kind.value)
            for dst in sstep.alt:
                add(spot, dst, kind.value + "?")
    for src, outcomes in OTHER.items():
        for outcome, dst in outcomes.items():
            add(src, dst, outcome)
    lines = ["stateDiagram-v2", "    [*] --> content", "    [*] --> reasoning: prefilled",
             "    [*] --> undecided: auto", "    [*] --> h_header: header open",
             "    region --> content: the region ends"]
    inner = ["    state region {", "        [*] --> region_between: section",
             "        [*] --> region_call: call, look"]
    for (source, target), labels in edges.items():
        inside = source.startswith("region_")
        (inner if inside else lines).append(
            ("        " if inside else "    ") + f"{source} --> {target}: {', '.join(labels)}")
    return "\n".join(lines + inner + ["    }"]) + "\n"
