"""Self-verification: render random assistant messages, parse them back, compare.

A derived profile is a claim about how the template writes assistant turns. The template itself
can check the claim: render messages we invent (content, reasoning, one to three calls with
nested, unicode and marker-like arguments), cut the assistant's output, parse it with the
profile, and compare with what we put in. The pass rate feeds the confidence.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..profile import Profile
from .probes import USER, CallShape, Prober

__all__ = ["CHECK_TOOLS", "CheckResult", "self_check"]

_PARAMS = {"type": "object", "properties": {
    "text": {"type": "string"}, "count": {"type": "integer"}, "ratio": {"type": "number"},
    "flag": {"type": "boolean"}, "opts": {"type": "object"}, "tags": {"type": "array"}},
    "required": ["text"]}
CHECK_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": n, "description": "check tool", "parameters": _PARAMS}}
    for n in ("get_weather", "roll_back_release", "search-db.v2", "write_file")]

_STRINGS = ["Paris", "Tōkyō \"central\"", "line1\nline2", "a { b } [c]", "C:\\temp\\x.txt",
            "50% of <b>bold</b>", "emoji 🎉 ok", "tabs\tand  spaces", "semi; colon, comma",
            "用户 数据"]


@dataclass
class CheckResult:
    rendered: int = 0
    passed: int = 0
    failures: list[str] = field(default_factory=list)

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


def self_check(pr: Prober, prof: Profile, *, n: int = 10, seed: int = 7,
               shape: CallShape | None = None) -> CheckResult:
    """Render ``n`` random assistant messages (call turns written as ``shape`` says) and parse them back."""
    from ..parse import parse

    shape = shape or CallShape()
    rng = random.Random(seed)
    out = CheckResult()
    r = prof.reasoning
    for i in range(n):
        kind = i % 4
        msg: dict[str, Any] = {"role": "assistant"}
        want_calls: list[dict[str, Any]] = []
        content = rng.choice(["Sure, here it is.", "The answer is 42.", "Ça marche — 好的!"])
        if kind == 0 or (prof.tools is None and prof.messages is None):
            msg["content"] = content
        elif kind == 1 and (r is not None or prof.messages is not None):
            msg["content"] = content
            msg["reasoning_content"] = rng.choice(["First, think.", "Compare a and b; pick b."])
        else:
            k = 1 + (i % 3)
            calls = []
            for j in range(k):
                name = str(CHECK_TOOLS[rng.randrange(len(CHECK_TOOLS))]["function"]["name"])
                rich = prof.messages is not None or (prof.tools is not None
                                                     and prof.tools.codec.kind in ("json", "name_json", "pythonic"))
                args = _args(rng, rich=rich)
                calls.append(shape.call(str(name), args, j + 1))
                want_calls.append({"name": name, "arguments": args})
            msg = shape.message(calls, reasoning="Plan: call the tools.")
        p = pr.turn(f"self-check {i}", msg, tools=CHECK_TOOLS,
                    history=[{"role": "user", "content": USER}], **shape.context())
        wanted = Counter(str(c["name"]) for c in want_calls)
        if p.span is None or any(p.span.count(n) < k for n, k in wanted.items()):
            continue  # the template did not write every call of this message (some write only the first)
        out.rendered += 1
        mode = "explicit"
        if r is not None:
            close_at = min((p.span.find(c) for c in r.close if c in p.span), default=-1)
            open_at = min((p.span.find(o) for o in r.open if o in p.span), default=-1)
            if close_at >= 0 and not 0 <= open_at < close_at:
                # the history writes the block's close without its open: the prompt opened it
                mode = "prefilled"
        res = parse(p.span, prof, tools=CHECK_TOOLS, reasoning=mode if r is not None else None)
        got_calls = [{"name": c.name, "arguments": c.arguments} for c in res.tool_calls]
        problems = []
        if got_calls != want_calls:
            problems.append(f"calls {got_calls} != {want_calls}")
        want_content = msg.get("content") or ""
        if _norm(res.content) != _norm(want_content):
            problems.append(f"content {res.content!r} != {want_content!r}")
        if "reasoning_content" in msg and msg["reasoning_content"] in p.span:
            if _norm(res.reasoning) != _norm(msg["reasoning_content"]):
                problems.append(f"reasoning {res.reasoning!r}")
        elif res.reasoning.strip() and "reasoning_content" not in msg:
            problems.append(f"unexpected reasoning {res.reasoning!r}")
        if problems:
            out.failures.append(f"{p.span[:120]!r}: " + "; ".join(problems))
        else:
            out.passed += 1
    return out
