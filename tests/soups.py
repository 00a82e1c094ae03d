"""Marker soups: the differential fuzzer behind ``test_fuzz.py`` and ``scripts/fuzz.py``.

Not a test module. A *target* is a profile with the pieces its soups are made of: its own markers
(read from the profile's data, so a derived profile gets its own), the placeholders of its
patterns filled with plausible names and keys, pieces of real outputs for it (the project corpus
for a builtin dialect, and ``../shared``'s peer vectors when present; the fixture cases for a
profile derived from a fixture template), and
generic JSON / pythonic / XML fragments, escapes and unicode. A soup is a random concatenation of
those pieces and of truncated slices of the real outputs.

Each soup is parsed whole, per character and at random split points, with random parser options
(arguments streamed or not, the reasoning start, some policies); the parse must never raise in
lenient mode, every call's argument deltas must concatenate to its final arguments, and
everything a caller can observe (the coalesced events, the result with ids and statuses, the
issues with their positions) must be the same for every chunking. A failure is printed with the
seed that replays it (``AUTOPARSER_FUZZ_SEED``) and a minimised soup, ready to be pinned in
``fixtures/fuzz/regressions.json``.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REGRESSIONS = ROOT / "fixtures" / "fuzz" / "regressions.json"
TEMPLATES = ROOT / "fixtures" / "templates"
SEED_ENV = "AUTOPARSER_FUZZ_SEED"
SOUPS_ENV = "AUTOPARSER_FUZZ_SOUPS"

JUNK = ('{"name": "', '"arguments": {', '}', '{', '"', '\\"', ':', ',', '[', ']', '(', ')', '=', 'null',
        'true', 'True', 'None', 'false', '12.5e3', '-0', '\n', ' ', '\t', 'é🙂', '\\u00e9', '\\ud83d', '<', '>',
        '</', "'", '"""', '#', 'get_weather', 'city', 'Paris', '<parameter=city>', '</parameter>', 'key="x"',
        '```', '```json\n', '\\n', '<tool_call>', '</tool_call>', '<think>', '</think>', '<|im_end|>',
        '{"a": [1, {"b": null}]}', "f(a=1, b='x')", '[f(x=[1, 2])]', '<x>', '<item>1</item>', '&lt;',
        '\u2028', '\x00', '\ufffe', 'param<1>', 'enabled=true', ' hmm ')
NAMES = ("get_weather", "f", "special_function", "search", "unknown_tool")
KEYS = ("city", "a", "arg1", "param<1>", "enabled")
_SLOT = re.compile(r"\{(\w+)\}")


@dataclass
class Target:
    """A profile to fuzz and what its soups are made of."""

    name: str
    profile: Any
    pieces: list[str]
    samples: list[str]
    tools: list[Any] = field(default_factory=list)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


_NOT_MARKERS = {"kind", "flavor", "array", "on_invalid", "on_truncated", "start", "name_keys", "args_keys",
                "id_keys", "function_key", "string_true", "role", "call_channel", "final_channel",
                "content_types", "reasoning_channels"}


def profile_pieces(profile: Any) -> list[str]:
    """The marker strings of a profile (and their pattern pieces, placeholders filled)."""
    data = profile.to_dict()
    found: set[str] = set()
    for key in ("reasoning", "content_open", "content_close", "strip", "tools", "messages", "special_markers"):
        section = data.get(key)
        if isinstance(section, dict):
            items = [v for k, v in section.items() if k not in _NOT_MARKERS]
            codec = section.get("codec")
            if isinstance(codec, dict):
                items += [v for k, v in codec.items() if k not in _NOT_MARKERS]
                items += [codec.get("name_keys"), codec.get("args_keys")]
            alt = section.get("alt_codec")
            if isinstance(alt, dict):
                items += [v for k, v in alt.items() if k not in _NOT_MARKERS]
        else:
            items = [section]
        for text in _strings(items):
            if not text or text in ("allow", "never", "require"):
                continue
            found.add(text)
            if "{" in text:
                for part in _SLOT.split(text)[::2]:
                    if part:
                        found.add(part)
                for name, key in zip(NAMES, KEYS, strict=True):
                    found.add(_SLOT.sub(lambda m, n=name, k=key: {"name": n, "key": k, "value": "1",
                                                                   "index": "0", "id": "call_1"}
                                        .get(m.group(1), m.group(0)), text))
    return sorted(found)


def _tool(name: str, props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": props}}}


TOOL_LISTS: list[Any] = [
    None,
    [_tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}})],
    [_tool("special_function", {"arg1": {"type": "integer"}}), _tool("f", {"a": {"type": "number"}})],
    [_tool("search", {"enabled": {"type": "boolean"}, "param<1>": {"type": "string"}}),
     _tool("get_weather", {"city": {"type": "string"}})],
]


def builtin_targets() -> list[Target]:
    import autoparser
    from autoparser.dialects import dialects

    shared = ROOT.parent / "shared" / "conformance" / "peer-cases.json"
    peers = json.loads(shared.read_text(encoding="utf-8")) if shared.exists() else []
    targets = []
    for name in (info.name for info in dialects()):
        path = ROOT / "fixtures" / "corpus" / f"{name}.json"
        cases = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
        # (the peers' vectors, when ../shared is beside the repo, add real outputs to cut up)
        cases += [c for c in peers if c.get("dialect") == name]
        prof = autoparser.get_profile(name)
        tools = TOOL_LISTS + [c["tools"] for c in cases if c.get("tools")][:4]
        targets.append(Target(name, prof, profile_pieces(prof), [c["input"] for c in cases], tools))
    return targets


def _derive_all() -> list[tuple[str, dict[str, Any], list[str]]]:
    import autoparser
    from autoparser.errors import AutoparserError

    cases = json.loads((TEMPLATES / "cases.json").read_text(encoding="utf-8"))["templates"]
    out = []
    for path in sorted(TEMPLATES.glob("*.jinja")):
        try:
            prof = autoparser.analyze(path.read_text(encoding="utf-8"), known=False)
        except AutoparserError:
            continue  # a template that derives no profile (some refuse on purpose)
        samples = [c["input"] for c in cases.get(path.name, {}).get("cases", [])]
        out.append((path.name, prof.to_dict(), samples))
    return out


def template_targets(cache_dir: Path | None = None) -> list[Target]:
    """Profiles derived from every fixture template (``known=False``), derived once and cached in
    ``cache_dir`` (keyed by the templates' and the package's contents)."""
    import hashlib

    import autoparser

    derived: list[Any] | None = None
    cache = None
    if cache_dir is not None:
        digest = hashlib.sha256()
        for path in sorted([*TEMPLATES.glob("*.jinja"), TEMPLATES / "cases.json",
                            *(ROOT / "autoparser").rglob("*.py")]):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        cache = cache_dir / f"derived-{digest.hexdigest()[:16]}.json"
        if cache.exists():
            derived = json.loads(cache.read_text(encoding="utf-8"))
    if derived is None:
        derived = [list(item) for item in _derive_all()]
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps(derived), encoding="utf-8")
    shared_tools = json.loads((TEMPLATES / "cases.json").read_text(encoding="utf-8"))["tools"]
    targets = []
    for name, data, samples in derived:
        prof = autoparser.Profile.from_dict(data)
        targets.append(Target("template:" + name, prof, profile_pieces(prof), samples,
                              [*TOOL_LISTS, shared_tools]))
    return targets


# ----------------------------------------------------------------------------- soups and runs

def make_soup(rng: random.Random, target: Target) -> str:
    pieces = target.pieces + list(JUNK)
    parts = []
    for _ in range(rng.randint(1, 30)):
        if target.samples and rng.random() < 0.3:
            base = rng.choice(target.samples)
            start = rng.randrange(len(base) + 1)
            parts.append(base[start:start + rng.randint(0, 60)])
        else:
            parts.append(rng.choice(pieces))
    if target.samples and rng.random() < 0.15:  # a real output, cut short
        base = rng.choice(target.samples)
        parts.append(base[:rng.randrange(len(base) + 1)])
    return "".join(parts)


@dataclass(frozen=True)
class Options:
    tools: Any = None
    reasoning: str | None = None
    stream: bool = True
    policy: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"tools": self.tools, "reasoning": self.reasoning, "stream": self.stream, "policy": self.policy}


def random_options(rng: random.Random, target: Target) -> Options:
    reasoning = None
    if target.profile.reasoning is not None and rng.random() < 0.3:
        reasoning = rng.choice(["auto", "prefilled", "off"])
    policy = None
    if rng.random() < 0.2:
        policy = {"call_in_reasoning": rng.choice(["defer", "call", "reasoning"]),
                  "unknown_tool": rng.choice(["forward", "drop"]),
                  "text_after_call": rng.choice(["content", "drop"])}
    return Options(rng.choice(target.tools) if target.tools else None, reasoning, rng.random() < 0.7, policy)


def observe(profile: Any, chunks: list[str], opts: Options) -> tuple[Any, ...]:
    """Everything a caller sees of one parse, in a comparable form; raises what the parser raised
    and ``AssertionError`` when a call's argument deltas do not concatenate to its arguments."""
    from autoparser import Policy, coalesce
    from autoparser.events import ToolCallArgsDelta, ToolCallEnd

    policy = Policy(**opts.policy) if opts.policy else None
    parser = profile.parser(tools=opts.tools, reasoning=opts.reasoning, policy=policy,
                            stream_arguments=opts.stream)
    events = []
    for chunk in chunks:
        events += parser.feed(chunk)
    events += parser.close()
    sent: dict[int, str] = {}
    for ev in events:
        if isinstance(ev, ToolCallArgsDelta):
            sent[ev.index] = sent.get(ev.index, "") + ev.text
        elif isinstance(ev, ToolCallEnd):
            assert json.loads(sent.get(ev.index, "null")) == ev.arguments, (
                f"call {ev.index}: deltas {sent.get(ev.index)!r} != arguments {ev.arguments!r}")
    res = parser.result()
    calls = [(c.name, json.dumps(c.arguments, sort_keys=True), c.id, c.status) for c in res.tool_calls]
    issues = [(i.code, i.position, i.message) for i in res.issues]
    seen = [_decoded(ev) for ev in coalesce(events)]
    return repr(seen), res.reasoning, res.content, calls, res.finish, issues


def _decoded(event: Any) -> Any:
    """An argument delta as the value a client decodes from it: the one textual difference allowed
    between chunkings is a key the model wrote twice (streamed, both members were sent; from whole
    text, the decoded object; a JSON reader keeps the last either way)."""
    from autoparser.events import ToolCallArgsDelta

    if isinstance(event, ToolCallArgsDelta):
        try:
            return ("args", event.index, json.dumps(json.loads(event.text), sort_keys=True))
        except ValueError:
            return event
    return event


def chunkings(text: str, rng: random.Random) -> list[list[str]]:
    out = [[text], list(text)]
    for _ in range(2):
        if len(text) > 1:
            cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 12))))
            out.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)])
    return out


class Hang(Exception):
    """A parse took longer than ``HANG_SECONDS`` (an endless loop, or worse than linear time)."""


HANG_SECONDS = 5.0


@contextmanager
def _watchdog() -> Iterator[None]:
    """Raise ``Hang`` in a parse that runs away (main thread of a POSIX process only)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"a parse took more than {HANG_SECONDS} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def failure(profile: Any, text: str, opts: Options, splits: list[list[str]]) -> str | None:
    """Why ``text`` breaks a guarantee under these chunkings (None: it does not)."""
    try:
        with _watchdog():
            first = observe(profile, splits[0], opts)
    except Exception as err:  # lenient mode never raises
        return f"raised {type(err).__name__}: {str(err)[:200]}"
    for chunks in splits[1:]:
        try:
            with _watchdog():
                other = observe(profile, chunks, opts)
        except Exception as err:
            return f"raised {type(err).__name__} at cuts {_cuts(chunks)}: {str(err)[:200]}"
        if other != first:
            names = ("events", "reasoning", "content", "calls", "finish", "issues")
            what = next(n for n, a, b in zip(names, first, other, strict=True) if a != b)
            return f"{what} differ at cuts {_cuts(chunks)}:\n    whole: {first[names.index(what)]!r}\n" \
                   f"    split: {other[names.index(what)]!r}"
    return None


def _cuts(chunks: list[str]) -> list[int]:
    out, pos = [], 0
    for chunk in chunks[:-1]:
        pos += len(chunk)
        out.append(pos)
    return out


def every_split(text: str) -> list[list[str]]:
    """The whole text, per character, and cut once at every point."""
    return [[text], list(text)] + [[text[:k], text[k:]] for k in range(1, len(text))]


def some_splits(text: str) -> list[list[str]]:
    """The whole text, per character and cut once at up to 24 points spread over it (cheaper
    than ``every_split`` on a long soup)."""
    step = max(1, len(text) // 24)
    return [[text], list(text)] + [[text[:k], text[k:]] for k in range(1, len(text), step)]


def minimize(profile: Any, text: str, opts: Options) -> str:
    """A shorter soup that still fails (whole against per character or one split point)."""
    def fails(candidate: str) -> bool:
        splits = every_split(candidate) if len(candidate) <= 48 else some_splits(candidate)
        return bool(candidate) and failure(profile, candidate, opts, splits) is not None

    if not fails(text):
        return text
    step = max(1, len(text) // 2)
    while step >= 1:
        k = 0
        changed = False
        while k < len(text):
            candidate = text[:k] + text[k + step:]
            if fails(candidate):
                text = candidate
                changed = True
            else:
                k += step
        if not changed:
            step //= 2
    return text


@dataclass
class Found:
    target: str
    text: str
    options: Options
    why: str
    small: str = ""
    number: int = 0     # the soup's number in its seed's sequence

    def report(self, seed: int) -> str:
        entry = {"target": self.target, "text": self.small or self.text, **self.options.to_dict(),
                 "source": f"tests/soups.py fuzzer, seed {seed} (minimised)"}
        return (f"FAIL [{self.target}] {self.why}\n  soup    = {self.text!r}\n  options = {self.options}\n"
                f"  pin in fixtures/fuzz/regressions.json: {json.dumps(entry, ensure_ascii=False)}\n"
                f"  replay: {SEED_ENV}={seed} {SOUPS_ENV}={self.number} (python scripts/fuzz.py --seed {seed} "
                f"--soups {self.number})")


def fuzz(targets: list[Target], seed: int, seconds: float, *, limit: int = 5, count_limit: int | None = None,
         on_soup: Callable[[], None] | None = None, shrink: bool = True) -> tuple[int, list[Found]]:
    """Soups over ``targets`` for ``seconds`` (round robin, so every target gets its share), or
    exactly ``count_limit`` soups (a replay: the soups of a seed are always the same sequence);
    returns how many soups ran and the failures (at most ``limit``), minimised."""
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    found: list[Found] = []
    count = 0
    while (count < count_limit if count_limit is not None else time.monotonic() < deadline) and len(found) < limit:
        target = targets[count % len(targets)]
        text = make_soup(rng, target)
        opts = random_options(rng, target)
        count += 1
        why = failure(target.profile, text, opts, chunkings(text, rng))
        if why is not None:
            hit = Found(target.name, text, opts, why, number=count)
            if shrink:
                hit.small = minimize(target.profile, text, opts)
                hit.why = failure(target.profile, hit.small, opts, every_split(hit.small)) or why
            found.append(hit)
        if on_soup is not None:
            on_soup()
    return count, found


def soups_from_env() -> int | None:
    value = os.environ.get(SOUPS_ENV)
    return int(value) if value else None


def seed_from_env() -> int:
    value = os.environ.get(SEED_ENV)
    return int(value) if value else random.SystemRandom().randrange(1 << 31)


def load_regressions() -> list[tuple[str, str, Options]]:
    """The pinned soups: (target name, text, options)."""
    data = json.loads(REGRESSIONS.read_text(encoding="utf-8"))
    tables = data["tools"]
    out = []
    for v in data["vectors"]:
        tools = tables[v["tools"]] if v["tools"] is not None else None
        out.append((v["target"], v["text"], Options(tools, v["reasoning"], v["stream"], v["policy"])))
    return out


def pin(hits: list[Found], seed: int) -> int:
    """Append minimised failures to ``fixtures/fuzz/regressions.json`` (the format it is kept in:
    one vector a line, tool lists in a table); returns how many were new."""
    data = json.loads(REGRESSIONS.read_text(encoding="utf-8"))
    names = {json.dumps(v, sort_keys=True): k for k, v in data["tools"].items()}
    known = {(v["target"], v["text"]) for v in data["vectors"]}
    added = 0
    for hit in hits:
        text = hit.small or hit.text
        if (hit.target, text) in known:
            continue
        tools = None
        if hit.options.tools is not None:
            key = json.dumps(hit.options.tools, sort_keys=True)
            if key not in names:
                names[key] = f"tools{len(data['tools'])}"
                data["tools"][names[key]] = hit.options.tools
            tools = names[key]
        data["vectors"].append({"target": hit.target, "text": text, "tools": tools, "reasoning": hit.options.reasoning,
                                "stream": hit.options.stream, "policy": hit.options.policy,
                                "source": f"tests/soups.py fuzzer, seed {seed} (minimised)"})
        known.add((hit.target, text))
        added += 1
    lines = ["{", ' "README": ' + json.dumps(data["README"], ensure_ascii=False) + ",", ' "tools": {',
             ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in data["tools"].items()),
             " },", ' "vectors": [',
             ",\n".join("  " + json.dumps(v, ensure_ascii=False) for v in data["vectors"]), " ]", "}"]
    REGRESSIONS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return added

