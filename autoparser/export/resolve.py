"""Which of a host's own parsers fits a model, with what settings, how sure, and why — or none.

A loader (vLLM, SGLang, OVMS, OpenVINO GenAI, llama.cpp, TensorRT-LLM, mlx-lm, Ollama,
transformers) asks one pure question of a model: which of *its* parsers to bind. The answer is
decided by comparing profiles: the model's (derived from its template) and each host parser's
(``autoparser/export/hosts/*.json``, read from that host's source). A parser is named only when
it reads everything the profile says the model writes; for a template source the host parser must
also read the template's own call turns back exactly (the template is the oracle). Otherwise the
part is refused with the reason, and the loader keeps autoparser's own parser. Never a guess:
nothing here looks at model names or template source strings.

Comparison rules (``tools_read`` / ``reasoning_read``):

* markers: every spelling the profile lists for a role (section open/close, call open/close,
  separators, look-ahead starts) is one the host accepts, and a role the profile does not use is
  one the host does not require (calls outside a section need the host's ``bare_calls``);
* codec: the same kind and the same parameters (keys, header, parameter and trailer patterns,
  string delimiters, array form); patterns compare with whitespace removed, as the engine reads
  them, except for hosts whose patterns need the exact whitespace;
* reasoning: the profile's markers are the host's (or the host takes markers as options), and the
  host's start rule reads the prompt's behaviour: ``explicit`` and ``prefilled`` only their own,
  ``auto`` and ``prompt`` (the host reads the rendered prompt) any, ``request`` (the host follows
  ``enable_thinking``) only a switchable template, ``configurable`` a fixed explicit or prefilled
  start.

The profile compared is the template's as the renders show it: known-dialect additions (a
builtin's reasoning block the template never renders) do not count; the known dialect's name and
tool format are used, and its tool format is then confirmed on the template's own call turns.
"""

from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..profile import CodecSpec, Profile, ReasoningSpec, ToolSpec
from .errors import ExportError
from .hosts import HOSTS, Host, HostReasoning, HostTool, host

__all__ = [
    "HOSTS",
    "Binding",
    "Resolution",
    "as_rendered",
    "describe_tools",
    "reasoning_read",
    "resolve",
    "resolve_profile",
    "tools_read",
    "with_switches",
]

log = logging.getLogger("autoparser.resolve")

Sample = tuple[str, list[tuple[str, dict[str, Any]]]]


@dataclass(frozen=True)
class Binding:
    """One part (tool calls or reasoning) for one host: the parser named, or ``None`` and why."""

    part: Literal["tools", "reasoning"]
    parser: str | None
    reason: str
    alternatives: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"parser": self.parser, "reason": self.reason, "alternatives": list(self.alternatives),
                "caveats": list(self.caveats)}


@dataclass(frozen=True)
class Resolution:
    """The answer for one model and one host. ``tools`` / ``reasoning`` are ``None`` when the
    profile has no such part (nothing to bind)."""

    host: str
    host_version: str
    profile: Profile
    tools: Binding | None
    reasoning: Binding | None
    flags: tuple[str, ...]
    settings: dict[str, Any]
    return_trip: dict[str, Any]
    log: str
    source: str = ""
    evidence: tuple[str, ...] = field(default_factory=tuple)

    @property
    def confidence(self) -> float:
        return self.profile.confidence

    @property
    def complete(self) -> bool:
        """Every part of the profile has a host parser: the host can parse this model by itself."""
        return all(b is None or b.parser is not None for b in (self.tools, self.reasoning))

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "host_version": self.host_version, "source": self.source,
                "dialect": self.profile.name, "confidence": self.confidence,
                "tools": self.tools.to_dict() if self.tools else None,
                "reasoning": self.reasoning.to_dict() if self.reasoning else None,
                "complete": self.complete, "flags": list(self.flags), "settings": self.settings,
                "return_trip": self.return_trip, "evidence": list(self.evidence), "log": self.log}


# -- comparing formats ------------------------------------------------------------------------

def _norm(pattern: str, exact: bool) -> str:
    return pattern if exact else re.sub(r"\s+", "", pattern)


def _codec_read(h: CodecSpec, m: CodecSpec, exact: bool) -> str | None:
    if h.kind != m.kind:
        return f"its calls are {h.kind}, the model's {m.kind}"
    if h.array != m.array and h.array != "allow":
        return f"it reads call arrays {h.array!r}, the model writes them {m.array!r}"
    if m.kind == "json":
        if h.name_as_key != m.name_as_key:
            return "the name is a key in one and a value in the other"
        if not m.name_as_key and not set(m.name_keys) <= set(h.name_keys):
            return f"it reads the name from {list(h.name_keys)}, the model writes {list(m.name_keys)}"
        if not set(m.args_keys) <= set(h.args_keys):
            return f"it reads arguments from {list(h.args_keys)}, the model writes {list(m.args_keys)}"
        if h.function_key != m.function_key:
            return "the nested function object differs"
        return None
    for attr in ("header", "trailer", "param"):
        if _norm(getattr(h, attr), exact) != _norm(getattr(m, attr), exact):
            return f"its {attr} is {getattr(h, attr)!r}, the model's {getattr(m, attr)!r}"
    for attr in ("flavor", "string_delims", "string_true", "id_name_prefix", "id_name_suffix"):
        if getattr(h, attr) != getattr(m, attr):
            return f"its {attr} differs"
    return None


def tools_read(h: ToolSpec, m: ToolSpec, *, exact_whitespace: bool = False) -> str | None:
    """``None`` when a parser reading ``h`` reads every call the profile's ``m`` describes, else why not."""
    for role in ("section_open", "section_close", "call_open", "call_close", "separators"):
        mine, theirs = getattr(m, role), getattr(h, role)
        missing = [x for x in mine if x not in theirs]
        if missing:
            return f"it does not read {role.replace('_', ' ')} {missing[0]!r}"
        if theirs and not mine and not (role == "section_open" and h.bare_calls):
            return f"it needs {role.replace('_', ' ')} {theirs[0]!r}, which the model does not write"
    if not (m.section_open or m.call_open):
        missing = [x for x in m.lookahead_open if x not in h.lookahead_open]
        if missing or not m.lookahead_open:
            return "it does not start calls where the model does"
    for codec in (m.codec, *([m.alt_codec] if m.alt_codec else [])):
        whys = [_codec_read(c, codec, exact_whitespace) for c in (h.codec, *([h.alt_codec] if h.alt_codec else []))]
        if all(w is not None for w in whys):
            return whys[0]
    return None


def reasoning_read(h: HostReasoning, m: ReasoningSpec) -> str | None:
    """``None`` when the host reasoning parser reads the profile's reasoning block, else why not."""
    if h.harmony:
        return "it reads Harmony channels, not reasoning markers"
    if h.any_markers:
        if len(m.close) != 1 or len(m.open) > 1:
            return "it takes one open and one close marker"
    elif h.reasoning is None:
        return h.why or "not modelled"
    else:
        missing = [x for x in (*m.open, *m.close) if x not in (*h.reasoning.open, *h.reasoning.close)]
        if missing:
            return f"it does not read {missing[0]!r}"
    mode = "switchable" if m.switchable else m.start
    ok = {"explicit": {"explicit"}, "prefilled": {"prefilled"}, "auto": {"explicit", "prefilled", "auto", "switchable"},
          "request": {"switchable"}, "prompt": {"explicit", "prefilled", "auto", "switchable"},
          "configurable": {"explicit", "prefilled"}}[h.start]
    if mode not in ok:
        what = {"explicit": "reads only a block the output opens", "prefilled": "assumes the output starts inside a "
                "block", "request": "follows the request's enable_thinking, which this template does not switch",
                "configurable": "takes one fixed start", "auto": "", "prompt": ""}[h.start]
        return f"it {what}; the template's prompt is {mode}"
    return None


def describe_tools(t: ToolSpec) -> str:
    """One call as the profile writes it, with NAME / ARGS placeholders (for messages)."""
    c = t.codec
    if c.kind == "json":
        body = ('{"NAME": ARGS}' if c.name_as_key
                else f'{{"{c.name_keys[0]}": NAME, "{(c.args_keys or ("arguments",))[0]}": ARGS}}')
        body = f"[{body}]" if c.array == "require" else body
    elif c.kind == "pythonic":
        body = "[NAME(k=v)]" if c.array != "never" else "NAME(k=v)"
    elif c.kind == "tagged":
        body = c.header.replace("{name}", "NAME") + c.param.replace("{key}", "K").replace("{value}", "V") + c.trailer
    else:
        body = c.header.replace("{name}", "NAME").replace("{id}", "ID").replace("{call_id}", "ID") + "ARGS" + c.trailer
    first = "".join((*t.section_open[:1], *t.call_open[:1]))
    last = "".join((*t.call_close[:1], *t.section_close[:1]))
    return (first + body + last).replace("\n", "\\n")


# -- the answer -------------------------------------------------------------------------------

def resolve(source: str | Path | Profile, host_name: str, *, samples: list[Sample] | None = None) -> Resolution:
    """Resolve ``source`` (a model directory, GGUF, OpenVINO IR, template or profile file, or a
    :class:`Profile`) for ``host_name``; the template, when there is one, confirms each binding."""
    if isinstance(source, Profile):
        return resolve_profile(source, host_name, samples=samples)
    from ..derive import analyze
    from ..derive.history import sample_turns
    from ..templates.sources import load_source
    from ..tokens import with_special_markers

    path = Path(source)
    if path.suffix == ".json" and path.is_file() and path.name not in ("tokenizer_config.json", "chat_template.json"):
        from ..specs import load

        return resolve_profile(load(path), host_name, source=str(path), samples=samples)
    src = load_source(path)
    template = src.template_for(tools=True)
    known = analyze(template, src.bos_token, src.eos_token, special_tokens=src.special_tokens, model_id=src.model_id)
    pure = analyze(template, src.bos_token, src.eos_token, known=False, special_tokens=src.special_tokens,
                   model_id=src.model_id)
    prof = as_rendered(known, pure)
    prof = with_special_markers(prof, src.special_tokens, src.kind)
    prof = with_switches(prof, template, src.bos_token, src.eos_token)
    if samples is None:
        samples = sample_turns(template, src.bos_token, src.eos_token, prof)
    return resolve_profile(prof, host_name, source=str(path), samples=samples)


def as_rendered(known: Profile, pure: Profile) -> Profile:
    """The known-dialect profile with the reasoning block the renders show (``analyze(known=False)``):
    a builtin's reasoning that the template never renders is not the model's format."""
    if known.reasoning == pure.reasoning:
        return known
    note = ("reasoning as the template renders it: "
            + (f"{pure.reasoning.open}…{pure.reasoning.close}" if pure.reasoning else "none")
            + f" (the known dialect {known.name!r} adds {'one' if known.reasoning else 'none'})")
    return replace(known, reasoning=pure.reasoning, evidence=(*known.evidence, note))


def with_switches(prof: Profile, template: str, bos: str | None, eos: str | None) -> Profile:
    """A reasoning block that a template variable switches (read from prompt renders) is switchable,
    whatever else the derivation found: a host parser with one fixed start would misread it."""
    from ..derive.history import reasoning_switches

    r = prof.reasoning
    if r is None or r.switchable:
        return prof
    found = reasoning_switches(template, bos, eos, (*r.open, *r.close))
    if not found:
        return prof
    return replace(prof, reasoning=replace(r, switchable=True),
                   evidence=(*prof.evidence, f"reasoning is switched by {', '.join(found)} (prompt renders)"))


def resolve_profile(prof: Profile, host_name: str, *, source: str = "",
                    samples: list[Sample] | None = None) -> Resolution:
    """:func:`resolve` for a profile already in hand; ``samples`` are the template's own call turns
    (text, expected calls), which a named tool parser must read back exactly."""
    h = host(host_name)
    if prof.builtin_only("reasoning"):  # the known dialect adds it, no render shows it (Profile.builtin)
        prof = replace(prof, reasoning=None)
    tools = _bind_tools(h, prof, samples) if (prof.tools is not None or prof.messages is not None) else None
    reasoning = (_bind_reasoning(h, prof, tools.parser if tools else None) if prof.reasoning is not None
                 else _bind_harmony(h) if prof.messages is not None else None)
    if h.name == "ollama":
        tools, reasoning = _one_parser(h, tools, reasoning)
    flags, settings = _flags(h, prof, tools, reasoning)
    line = _log_line(h, prof, tools, reasoning)
    log.info(line)
    return Resolution(host=h.name, host_version=h.version, profile=prof, tools=tools, reasoning=reasoning,
                      flags=tuple(flags), settings=settings, return_trip=return_trip(prof), log=line,
                      source=source, evidence=prof.evidence)


def _bind_tools(h: Host, prof: Profile, samples: list[Sample] | None) -> Binding:
    what = "Harmony headers" if prof.messages is not None else f"`{describe_tools(prof.tools)}`"  # type: ignore[arg-type]
    fits: list[HostTool] = []
    why_not: list[tuple[int, str]] = []
    for t in h.tools:
        why = _tool_fits(t, prof, samples)
        if why is None:
            fits.append(t)
        elif t.tools is not None and prof.tools is not None:
            why_not.append((_closeness(t.tools, prof.tools), f"{t.name}: {why}"))
    if not fits:
        best_near = max(why_not, default=(0, ""))
        near = f" (closest: {best_near[1]})" if best_near[0] > 0 else ""
        return Binding("tools", None, f"no {h.title} tool parser reads {what} calls{near}; use autoparser's parser")
    own = (prof.name or "").replace("-", "_").replace(".", "")
    fits.sort(key=lambda t: (t.dialect != prof.name, t.name.replace("-", "_") != own, t.name))
    best = fits[0]
    how = f"reads {what} calls as the profile does" + (f" (dialect {best.dialect})" if best.dialect else "")
    if samples:
        how += f"; the template's own call turns ({len(samples)}) parse back exactly"
    return Binding("tools", best.name, how, tuple(t.name for t in fits[1:]), best.caveats)


def _closeness(h: ToolSpec, m: ToolSpec) -> int:
    """How much two formats share (for naming the nearest miss in a refusal)."""
    shared = {*h.section_open, *h.call_open, *h.call_close} & {*m.section_open, *m.call_open, *m.call_close}
    return 2 * len(shared) + (h.codec.kind == m.codec.kind)


def _tool_fits(t: HostTool, prof: Profile, samples: list[Sample] | None) -> str | None:
    if prof.messages is not None:
        return None if t.harmony else "it does not read Harmony headers"
    if t.harmony:
        return "it reads Harmony headers only"
    assert prof.tools is not None
    if t.from_profile:
        return _response_template_fits(prof, samples)
    if t.tools is None:
        return t.why or "not modelled"
    why = tools_read(t.tools, prof.tools, exact_whitespace=t.exact_whitespace)
    if why is None and samples is not None:
        why = _reads_samples(replace(prof, tools=t.tools), samples)
    return why


def _response_template_fits(prof: Profile, samples: list[Sample] | None) -> str | None:
    """transformers reads the response template generated from the profile; when transformers is
    installed, its own ``parse_response`` must read the template's call turns back exactly."""
    from .response_template import response_template

    try:
        template = response_template(prof).template
    except ExportError as e:
        return str(e)
    try:
        from transformers.utils import chat_parsing
    except ImportError:
        return None
    from ..derive.history import SAMPLE_TOOLS

    if samples is not None and not samples:
        return "the template's own call turns do not render as the profile says, so nothing confirms the format"
    for text, calls in samples or ():
        try:
            got = chat_parsing.parse_response(text, template, prefix="", tools=list(SAMPLE_TOOLS))
        except Exception as e:  # transformers raises on a region it cannot read: that is a refusal
            return f"transformers' parse_response fails on the template's own call turn: {type(e).__name__}"
        if _openai_calls(got.get("tool_calls") or []) != calls:
            return f"transformers' parse_response does not read the template's own call turn {text[:60]!r} back"
    return None


def _openai_calls(tool_calls: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    import json

    out = []
    for tc in tool_calls:
        for c in tc if isinstance(tc, list) else [tc]:
            fn = c.get("function", c)
            args = fn.get("arguments")
            if isinstance(args, str):
                with contextlib.suppress(ValueError):
                    args = json.loads(args)
            out.append((fn.get("name"), args))
    return out


def _reads_samples(host_prof: Profile, samples: list[Sample]) -> str | None:
    """Parse the template's own call turns with the host parser's format: same calls, or why not."""
    from ..derive.history import SAMPLE_TOOLS
    from ..parse import parse

    if not samples:
        return "the template's own call turns do not render as the profile says, so nothing confirms the format"
    for text, calls in samples:
        got = parse(text, host_prof, tools=SAMPLE_TOOLS, reasoning="auto" if host_prof.reasoning else None)
        if [(c.name, c.arguments) for c in got.tool_calls] != calls:
            return f"the template's own call turn {text[:80]!r} does not parse back with it"
    return None


#: below this field confidence a derived reasoning block binds no host parser
MIN_REASONING_CONFIDENCE = 0.8

#: generic reasoning parser names preferred when several read the block (no name says more)
_GENERIC = ("qwen3", "deepseek_r1", "deepseek-r1", "think", "ReasoningParser", "deepseek", "response_template")


def _bind_reasoning(h: Host, prof: Profile, tool_parser: str | None) -> Binding:
    r = prof.reasoning
    assert r is not None
    what = f"`{(r.open or ('',))[0]}…{r.close[0]}` ({'switchable' if r.switchable else r.start} start)"
    sure = prof.field_confidence.get("reasoning", prof.confidence)
    if sure < MIN_REASONING_CONFIDENCE:
        return Binding("reasoning", None, f"the derived reasoning block {what} is uncertain (confidence {sure:.2f} < "
                                          f"{MIN_REASONING_CONFIDENCE}); no host parser is bound on a guess")
    fits, why_not = [], []
    for p in h.reasoning:
        why = reasoning_read(p, r)
        if why is None:
            fits.append(p)
        elif p.any_markers or (p.reasoning is not None and set(p.reasoning.close) & set(r.close)):
            why_not.append(f"{p.name}: {why}")
    if not fits:
        near = f" (closest: {why_not[0]})" if why_not else ""
        return Binding("reasoning", None, f"no {h.title} reasoning parser reads {what}{near}; use autoparser's parser")
    own = (prof.name or "").replace("-", "_")
    fits.sort(key=lambda p: (p.name != tool_parser, p.name.replace("-", "_") != own,
                             _GENERIC.index(p.name) if p.name in _GENERIC else len(_GENERIC), p.name))
    best = fits[0]
    caveats: tuple[str, ...] = ("the markers must be single tokens of the vocabulary",) if best.special_tokens else ()
    if best.start == "request":
        caveats += ("pass enable_thinking in chat_template_kwargs on every request, as the prompt was rendered",)
    return Binding("reasoning", best.name, f"reads {what}", tuple(p.name for p in fits[1:]), caveats)


def _bind_harmony(h: Host) -> Binding:
    """Harmony's analysis channel is the reasoning: the host's Harmony reasoning parser, if any."""
    names = [p.name for p in h.reasoning if p.harmony]
    if not names:
        return Binding("reasoning", None, f"no {h.title} reasoning parser reads Harmony channels; "
                                          "use autoparser's parser")
    return Binding("reasoning", names[0], "reads Harmony's analysis channel", tuple(names[1:]))


def _one_parser(h: Host, tools: Binding | None, reasoning: Binding | None) -> tuple[Binding | None, Binding | None]:
    """Ollama binds one PARSER for both parts: a name that reads both, or refuse the one that differs."""
    if tools is None or reasoning is None or tools.parser is None or reasoning.parser is None:
        return tools, reasoning
    both = [n for n in (tools.parser, *tools.alternatives) if n in (reasoning.parser, *reasoning.alternatives)]
    if both:
        return replace(tools, parser=both[0]), replace(reasoning, parser=both[0])
    return tools, replace(reasoning, parser=None,
                          reason=f"{h.title} binds one parser for both parts and none that reads the calls "
                                 "also reads the reasoning; use autoparser's parser")


def _flags(h: Host, prof: Profile, tools: Binding | None,
           reasoning: Binding | None) -> tuple[list[str], dict[str, Any]]:
    t = tools.parser if tools else None
    r = reasoning.parser if reasoning else None
    flags: list[str] = []
    settings: dict[str, Any] = {}
    if h.name == "vllm":
        flags = ((["--enable-auto-tool-choice", "--tool-call-parser", t] if t else [])
                 + (["--reasoning-parser", r] if r else []))
        settings["command"] = " ".join(["vllm", "serve", "MODEL", *flags])
    elif h.name == "sglang":
        flags = (["--tool-call-parser", t] if t else []) + (["--reasoning-parser", r] if r else [])
        settings["command"] = " ".join(["python", "-m", "sglang.launch_server", "--model-path", "MODEL", *flags])
    elif h.name in ("trtllm", "ovms"):
        flags = (["--tool_parser", t] if t else []) + (["--reasoning_parser", r] if r else [])
        base = (["trtllm-serve", "MODEL"] if h.name == "trtllm"
                else ["ovms", "--rest_port", "8000", "--source_model", "MODEL"])
        settings["command"] = " ".join([*base, *flags])
    elif h.name == "llamacpp":
        flags = ["--jinja"] + (["--reasoning-format", "deepseek"] if r else [])
        settings["command"] = " ".join(["llama-server", "-m", "MODEL.gguf", *flags])
        if t:
            settings["note"] = f"llama.cpp builds its parser from the template; its {t!r} handler reads this format"
    elif h.name == "mlx":
        if t:
            settings["tokenizer_config.json"] = {"tool_parser_type": t}
    elif h.name == "ollama":
        name = t or r
        if name:
            settings["Modelfile"] = f"PARSER {name}"
    elif h.name == "genai":
        parsers = []
        if r == "ReasoningParser":
            rs = prof.reasoning
            assert rs is not None
            parsers.append(f"openvino_genai.ReasoningParser(open_tag={(rs.open or ('<think>',))[0]!r}, "
                           f"close_tag={rs.close[0]!r}, expect_open_tag={rs.start == 'explicit'}, "
                           "keep_original_content=False)")
        if t:
            parsers.append(f"openvino_genai.{t}()")
        if (tools is not None and not t) or (reasoning is not None and not r):
            parsers = ["autoparser.live.GenAIParser(profile, tools=tools)"]
        settings["GenerationConfig.parsers"] = parsers
    elif h.name == "transformers" and (t or r):
        from .response_template import response_template

        try:
            settings["tokenizer_config.json"] = response_template(prof).tokenizer_config()
        except ExportError as e:
            settings["error"] = str(e)
    return flags, settings


def return_trip(prof: Profile) -> dict[str, Any]:
    """The facts a loader needs to put a parsed answer back into the history (``Profile.history``)."""
    r = prof.reasoning
    opens: str | None = None
    if r is not None:
        opens = "switchable" if r.switchable else {"prefilled": "yes", "explicit": "no", "auto": "unknown"}[r.start]
    hist = prof.history
    return {"arguments": hist.arguments if hist else None,
            "reasoning_field": hist.reasoning_field if hist else None,
            "reasoning_in_history": hist.reasoning_in_history if hist else None,
            "drops_reasoning_from_history": (hist.reasoning_in_history != "all") if hist and hist.reasoning_field
            else None,
            "empty_content": hist.empty_content if hist else None,
            "call_ids": hist.call_ids if hist else None,
            "prompt_opens_reasoning": opens,
            "special_markers": list(prof.special_markers),
            "message": "autoparser.openai.history_message(result, profile)"}


def _log_line(h: Host, prof: Profile, tools: Binding | None, reasoning: Binding | None) -> str:
    parts = []
    for label, b in (("tool-call parser", tools), ("reasoning parser", reasoning)):
        if b is None:
            continue
        parts.append(f"{label} {b.parser!r} ({b.reason})" if b.parser else f"no {label}: {b.reason}")
    body = "; ".join(parts) or "nothing to bind (no tool calls, no reasoning)"
    return (f"autoparser.resolve: {h.name} {h.version}: {body}; profile {prof.name or 'derived'} "
            f"confidence {prof.confidence:.2f}")
