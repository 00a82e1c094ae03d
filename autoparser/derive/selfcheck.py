"""Self-verification: render random assistant messages, parse them back, compare.

A derived profile is a claim about how the template writes assistant turns. The template itself
can check the claim: render messages we invent (content, reasoning, one to three calls with
nested, unicode and marker-like arguments), cut the assistant's output, parse it with the
profile, and compare with what we put in. The pass rate feeds the confidence.

Call turns are written in every shape the template can write: one to three calls, calls after
content, calls after reasoning. A render that cannot carry the message faithfully (a string
argument printed without quotes where the codec quotes strings, a quote left unescaped) says
nothing about the profile, since no parser could recover the message from it: such a message is
retried with plain values and otherwise counted as ``lossy``, not as a failure. What kinds of
message passed is recorded, so the confidence can tell a round trip that covered calls from one
that did not.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..profile import Profile
from .probes import USER, CallShape, Prober

__all__ = ["CHECK_TOOLS", "CheckResult", "Sample", "replay", "self_check"]

_PARAMS = {"type": "object", "properties": {
    "text": {"type": "string"}, "count": {"type": "integer"}, "ratio": {"type": "number"},
    "flag": {"type": "boolean"}, "opts": {"type": "object"}, "tags": {"type": "array"}},
    "required": ["text"]}
CHECK_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": n, "description": "check tool", "parameters": _PARAMS}}
    for n in ("get_weather", "roll_back_release", "search-db.v2", "write_file")]

# for templates that refuse some parameter schemas (nested objects, arrays): flat parameters only
_FLAT = {"type": "object", "properties": {k: v for k, v in _PARAMS["properties"].items()  # type: ignore[attr-defined]
                                          if v["type"] not in ("object", "array")}, "required": ["text"]}
FLAT_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": n, "description": "check tool", "parameters": _FLAT}}
    for n in ("get_weather", "roll_back_release", "search-db.v2", "write_file")]

_STRINGS = ["Paris", "Tōkyō \"central\"", "line1\nline2", "a { b } [c]", "C:\\temp\\x.txt",
            "50% of <b>bold</b>", "emoji 🎉 ok", "tabs\tand  spaces", "semi; colon, comma",
            "用户 数据"]


@dataclass(frozen=True)
class Sample:
    """One rendered self-check message: the assistant's output and what it must parse back to."""

    span: str
    tools: list[dict[str, Any]]
    message: dict[str, Any]
    calls: list[dict[str, Any]]
    label: str

    def problems(self, prof: Profile) -> list[str]:
        """What ``prof`` gets wrong when it parses this output (empty: parsed back exactly)."""
        from ..parse import parse

        r, span, msg = prof.reasoning, self.span, self.message
        mode = "explicit"
        if r is not None:
            close_at = min((span.find(c) for c in r.close if c in span), default=-1)
            open_at = min((span.find(o) for o in r.open if o in span), default=-1)
            if close_at >= 0 and not 0 <= open_at < close_at:
                # the history writes the block's close without its open: the prompt opened it
                mode = "prefilled"
        res = parse(span, prof, tools=self.tools, reasoning=mode if r is not None else None)
        got_calls = [{"name": c.name, "arguments": c.arguments} for c in res.tool_calls]
        problems = []
        if got_calls != self.calls:
            problems.append(f"calls {got_calls} != {self.calls}")
        want_content = msg.get("content") or ""
        if _norm(res.content) != _norm(want_content):
            problems.append(f"content {res.content!r} != {want_content!r}")
        if "reasoning_content" in msg and msg["reasoning_content"] in span:
            if _norm(res.reasoning) != _norm(msg["reasoning_content"]):
                problems.append(f"reasoning {res.reasoning!r}")
        elif res.reasoning.strip() and "reasoning_content" not in msg:
            problems.append(f"unexpected reasoning {res.reasoning!r}")
        return problems


@dataclass
class CheckResult:
    samples: list[Sample] = field(default_factory=list)  # the rendered messages, for replay()
    rendered: int = 0
    passed: int = 0
    failures: list[str] = field(default_factory=list)
    lossy: int = 0  # messages the template could not write faithfully (not counted in rendered)
    kinds: Counter[str] = field(default_factory=Counter)  # kinds of message that passed
    failed_kinds: Counter[str] = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        return self.passed / self.rendered if self.rendered else 0.0


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def _args(rng: random.Random, rich: bool) -> dict[str, Any]:
    args: dict[str, Any] = {"text": rng.choice(_STRINGS)}
    if rng.random() < 0.6:
        args["count"] = rng.randint(-5, 3000)
    if rng.random() < 0.4:
        args["flag"] = rng.random() < 0.5
    if rich and rng.random() < 0.4:
        args["opts"] = {"depth": rng.randint(0, 3), "name": rng.choice(_STRINGS[:4])}
    if rich and rng.random() < 0.3:
        args["tags"] = [rng.choice(_STRINGS[:3]), rng.randint(0, 9)]
    if rng.random() < 0.3:
        args["ratio"] = rng.choice([0.5, 2.25, -1.75])
    return args


def _forms(value: Any, quoted: bool, end: str) -> list[str]:
    """The spellings under which a codec could read ``value`` back from a render.

    A raw (unquoted) string that contains the text ending its value is ambiguous: no spelling."""
    if isinstance(value, str) and not quoted and end and end in value:
        return []
    forms = [json.dumps(value, ensure_ascii=False), json.dumps(value),
             json.dumps(value, ensure_ascii=False, separators=(",", ":")), repr(value)]
    if isinstance(value, bool):
        forms += ["true" if value else "false", str(value)]
    elif isinstance(value, str) and not quoted:
        forms.append(value)
    return forms


def _faithful(span: str, calls: list[dict[str, Any]], quoted: bool, end: str) -> bool:
    """Whether every argument value is written in a form a parser can read it back from."""
    return all(any(form in span for form in _forms(v, quoted, end))
               for c in calls for v in c["arguments"].values())


def _plain(args: dict[str, Any]) -> dict[str, Any]:
    """The values every codec writes faithfully: numbers and booleans."""
    out = {k: v for k, v in args.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    return out or {"count": 7}


def self_check(pr: Prober, prof: Profile, *, n: int = 10, seed: int = 7,
               shape: CallShape | None = None) -> CheckResult:
    """Render ``n`` random assistant messages (call turns written as ``shape`` says, plus calls after
    content and after reasoning) and parse them back."""
    from ..parse import parse

    shape = shape or CallShape()
    rng = random.Random(seed)
    out = CheckResult()
    r = prof.reasoning
    has_calls = prof.tools is not None or prof.messages is not None
    # string values are quoted by every codec but the tagged one (which writes them raw)
    quoted = prof.messages is not None or (prof.tools is not None and prof.tools.codec.kind != "tagged")
    end = ""  # what ends a raw value (tagged parameters)
    if prof.tools is not None and prof.tools.codec.kind == "tagged" and "{value}" in prof.tools.codec.param:
        end = prof.tools.codec.param.split("{value}", 1)[1] or prof.tools.codec.trailer
    # positional arguments (no key written) can say only the schema's first parameters, in order
    pat = prof.tools.codec.pattern if prof.tools is not None else None
    positional = pat is not None and "{args}" in pat.call and "{key}" not in pat.arg
    tools = CHECK_TOOLS
    first = pr.turn("self-check tools", {"role": "assistant", "content": "ok"}, tools=tools,
                    history=[{"role": "user", "content": USER}], **shape.context())
    if first.span is None:  # the template refuses nested parameter schemas: check with flat ones
        tools = FLAT_TOOLS
    plan = [i % 4 for i in range(n)]
    if has_calls:
        plan += [4] + ([5] if r is not None and not shape.reasoned else [])
    for i, kind in enumerate(plan):
        msg: dict[str, Any] = {"role": "assistant"}
        want_calls: list[dict[str, Any]] = []
        content = rng.choice(["Sure, here it is.", "The answer is 42.", "Ça marche — 好的!"])
        label = "content"
        if kind == 1 and (r is not None or prof.messages is not None):
            msg["content"] = content
            msg["reasoning_content"] = rng.choice(["First, think.", "Compare a and b; pick b."])
            label = "reasoning"
        elif kind == 0 or not has_calls:
            msg["content"] = content
        else:
            k = 1 + (i % 3) if kind < 4 else 1
            for _ in range(k):
                name = str(CHECK_TOOLS[rng.randrange(len(CHECK_TOOLS))]["function"]["name"])
                rich = tools is CHECK_TOOLS and (prof.messages is not None or (
                    prof.tools is not None and prof.tools.codec.kind in ("json", "name_json", "pythonic")))
                args = _args(rng, rich=rich)
                if positional:
                    order = list(tools[0]["function"]["parameters"]["properties"])
                    cut = next((j for j, key in enumerate(order) if key not in args), len(order))
                    args = {key: args[key] for key in order[:cut]}
                want_calls.append({"name": name, "arguments": args})
            label = f"calls{min(k, 2)}"
            if kind == 4:
                label = "calls+content"
            elif kind == 5:
                label = "calls+reasoning"
        p = None
        for attempt in range(2 if want_calls else 1):
            if want_calls:
                calls = [shape.call(c["name"], c["arguments"], j + 1) for j, c in enumerate(want_calls)]
                msg = shape.message(calls, reasoning="Plan: call the tools.")
                if kind == 4:
                    msg["content"] = content
                elif kind == 5:
                    msg["reasoning_content"] = "Plan: call the tools."
            p = pr.turn(f"self-check {i}", msg, tools=tools,
                        history=[{"role": "user", "content": USER}], **shape.context())
            if p.span is None or not want_calls or _faithful(p.span, want_calls, quoted, end):
                break
            if attempt == 0:  # the template cannot write these values faithfully: plain ones
                want_calls = [{"name": c["name"], "arguments": _plain(c["arguments"])} for c in want_calls]
            else:
                p = None
                out.lossy += 1
        if p is None:
            continue
        wanted = Counter(str(c["name"]) for c in want_calls)
        if p.span is None or any(p.span.count(n) < k for n, k in wanted.items()):
            continue  # the template did not write every call of this message (some write only the first)
        if kind == 4 and content not in p.span:
            continue  # the template drops content on call turns: not a shape it writes
        if kind == 5 and "Plan: call the tools." not in p.span:
            continue
        if kind == 4 and _norm(parse(p.span, prof, tools=tools).reasoning) == _norm(content):
            continue  # the template writes a call turn's content as reasoning: not this shape
        out.rendered += 1
        sample = Sample(p.span, tools, dict(msg), want_calls, label)
        out.samples.append(sample)
        problems = sample.problems(prof)
        if problems:
            out.failures.append(f"{p.span[:120]!r}: " + "; ".join(problems))
            out.failed_kinds[label] += 1
        else:
            out.passed += 1
            out.kinds[label] += 1
    return out


def replay(check: CheckResult, prof: Profile) -> list[bool]:
    """Which of the self-check's rendered messages ``prof`` parses back (no new renders): how
    another profile (a builtin dialect's fields over the derived ones) is judged by the same renders."""
    return [not s.problems(prof) for s in check.samples]
