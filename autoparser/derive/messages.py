"""Header-routed messages (the Harmony shape): every block of output is a message whose header
names a channel, and the channel (or a recipient in the header) decides what the body is.

Recognised from shape alone: the plain answer and the reasoning are both written as
``<TAG>word<TAG2>body``, with the same two tags and a different word; a call's header holds a
recipient (a word glued to the tool name) before the message tag. Nothing here knows Harmony's
marker strings.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..profile import MessagesSpec
from .extract import Findings
from .probes import CONTENT, NAME1, REASONING, Probe
from .rules import Rule

__all__ = ["RULES", "find_messages"]

HEADED = Rule("messages.headed", "messages",
              "answer and reasoning written as TAG word TAG body with one word differing: headers route bodies")
HEADER_OPEN = Rule("messages.header_open", "messages.header_open",
                   "a generation prompt ending in a message start and role leaves the output inside a header")
RECIPIENT = Rule("messages.recipient", "messages.recipient_prefix",
                 "a call renders as a message whose header holds a word glued to the tool name")
RULES = (HEADED, HEADER_OPEN, RECIPIENT)

_TAG = r"<[^<>\s]+>|\[[^\[\]\s]+\]"
_HEADER = re.compile(rf"(?P<chan>{_TAG})(?P<word>[A-Za-z_][\w-]*)(?P<msg>{_TAG})\Z")


def _tags(s: str) -> list[str]:
    return re.findall(_TAG, s)


def find_messages(f: Findings, prompt: str | None = None) -> MessagesSpec | None:
    """A MessagesSpec when content and reasoning are written as headed messages, else None."""
    content = _probe(f, "content", CONTENT)
    reasoning = _probe(f, "reasoning", REASONING)
    if content is None or reasoning is None:
        return None
    c_span, c_at = content
    r_span, r_at = reasoning
    ch = _HEADER.search(c_span[:c_at].strip())
    rh = _HEADER.search(r_span[:r_at].strip())
    if not ch or not rh or (ch["chan"], ch["msg"]) != (rh["chan"], rh["msg"]) or ch["word"] == rh["word"]:
        return None
    chan, msg = ch["chan"], ch["msg"]
    # between the reasoning body and the answer's header: the end marker, then a new message start
    between = r_span[r_at + len(REASONING): r_span.index(CONTENT)]
    between = between[: between.rfind(chan)] if chan in between else between
    tags = _tags(between)
    ends = [t for t in (tags[:1] + _tags(c_span[c_at + len(CONTENT):])[:1]) if t]
    start = tags[1] if len(tags) > 1 else ""
    role = between[between.find(start) + len(start):].strip() if start else ""
    spec = MessagesSpec(start=start or MessagesSpec().start, channel=chan, message=msg,
                        ends=tuple(dict.fromkeys(ends)) or MessagesSpec().ends,
                        reasoning_channels=(rh["word"],), final_channel=ch["word"],
                        role=role or MessagesSpec().role)
    if prompt is not None and start and prompt.rstrip().endswith(start + spec.role):
        spec = replace(spec, header_open=True)
        f.fire(HEADER_OPEN, snippet=prompt[-80:],
               text=f"the generation prompt ends with {start + spec.role!r}: the output begins inside a message header")
    call = next((p for p in f.probes if p.label.startswith("1 call") and p.span and NAME1 in p.span), None)
    if call is not None and call.span is not None:
        spec = _with_calls(spec, call)
        f.fire(RECIPIENT, snippet=call.span, text=f"calls are messages to {spec.recipient_prefix}NAME on "
               f"channel {spec.call_channel!r}")
    f.fire(HEADED, conf=0.85, snippet=r_span, text=f"content and reasoning are headed messages "
           f"({chan}{ch['word']}{msg} vs {chan}{rh['word']}{msg}): bodies are routed by their header")
    return spec


def _probe(f: Findings, label: str, sentinel: str) -> tuple[str, int] | None:
    for p in f.probes:
        if p.label.startswith(label) and p.span is not None and sentinel in p.span and CONTENT in p.span:
            return p.span, p.span.index(sentinel)
    return None


def _with_calls(spec: MessagesSpec, p: Probe) -> MessagesSpec:
    """The recipient prefix, call channel, content type and call end from a rendered call."""
    span = p.span or ""
    n = span.index(NAME1)
    head = span[:n]
    prefix = re.search(r"[\w.:=-]*\Z", head)
    recipient = prefix.group() if prefix else ""
    rest = span[n + len(NAME1):]
    m = rest.find(spec.message)
    header_tail = rest[:m] if m >= 0 else ""
    words = re.findall(r"[A-Za-z_][\w-]*", header_tail.replace(spec.channel, " ").replace(spec.constrain, " "))
    body_end = _tags(rest[m + len(spec.message):]) if m >= 0 else []
    ends = tuple(dict.fromkeys((*spec.ends, *body_end[-1:])))
    return replace(spec, recipient_prefix=recipient or spec.recipient_prefix,
                   call_channel=words[0] if words else spec.call_channel,
                   content_types=tuple(words[1:2]) or spec.content_types, ends=ends)
