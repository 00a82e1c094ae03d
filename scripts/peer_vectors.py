"""The harvested peer vectors (fixtures/peers/): pass rates, and the record of our disagreements.

    python scripts/peer_vectors.py report     # pass rate per source and per dialect
    python scripts/peer_vectors.py annotate   # (re)write the ``disagreement`` of failing vectors
    python scripts/peer_vectors.py list       # the disagreements as a markdown table

A vector holds what the peer's test asserts, and only that (fixtures/peers/README.md). Where our
result differs, ``annotate`` records it in the vector as ``disagreement``: our result (``ours``),
the setting that gives the peer's result when one does (``peer_setting``: a ``Policy`` field or the
``reasoning=`` option; ``null`` when none does) and the reason, one of :data:`REASONS` (explained
in docs/conformance.md). A reason written by hand is kept. The test (tests/test_peers.py) then
checks that we still produce our recorded result, at every chunking.
"""

from __future__ import annotations

import argparse
import collections
import functools
import itertools
import json
import random
import sys
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "fixtures" / "peers"
TEMPLATES = ROOT.parent / "shared" / "templates"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import autoparser  # noqa: E402
from autoparser.compare import normalize, summary  # noqa: E402

#: why a vector's result is ours and not the peer's (the docs explain each one)
REASONS = {
    "setting": "the peer's result is one of our settings (peer_setting), not our default",
    "kept-as-content": "the peer drops or repairs text we keep as content (no silent loss)",
    "recovered-call": "we recover or forward a call the peer rejects (EOS recovery, unknown names)",
    "value-form": "same calls, argument values written differently (typing by schema, escapes)",
    "reasoning-split": "reasoning and content are split differently (the peer's fixed start state)",
    "derived-profile": "the profile derived from the model's template parses differently",
    "gap": "a recovery the peer does and we do not (yet)",
}

#: settings tried, in order, to find one that gives the peer's result
SETTINGS: list[dict[str, Any]] = [
    {"reasoning": "auto"}, {"reasoning": "prefilled"}, {"reasoning": "explicit"}, {"reasoning": "off"},
    {"policy": {"text_after_call": "drop"}}, {"policy": {"truncated_call": "drop"}},
    {"policy": {"unknown_tool": "drop"}}, {"policy": {"call_in_reasoning": "call"}},
    {"policy": {"call_in_reasoning": "reasoning"}}, {"policy": {"malformed_arguments": "recover"}},
]


def sources() -> list[str]:
    return sorted(p.stem for p in PEERS.glob("*.json"))


def vectors(source: str | None = None) -> list[dict[str, Any]]:
    """Every harvested vector (of one source file)."""
    out: list[dict[str, Any]] = []
    for name in sources() if source is None else [source]:
        out.extend(json.loads((PEERS / f"{name}.json").read_text(encoding="utf-8")))
    return out


@functools.cache
def derived(template: str) -> autoparser.Profile:
    """The profile derived from a ../shared template (cached: derivation renders the template)."""
    return autoparser.load(TEMPLATES / template)


def profile_of(case: Mapping[str, Any]) -> autoparser.Profile | None:
    """The case's builtin profile, or the one derived from its template (None without ../shared)."""
    if case.get("dialect"):
        return autoparser.get_profile(case["dialect"])
    if not (TEMPLATES / case["template"]).exists():
        return None
    return derived(case["template"])


def parse(case: Mapping[str, Any], chunks: list[str], stream: bool = False,
          setting: Mapping[str, Any] | None = None) -> autoparser.Result:
    prof = profile_of(case)
    assert prof is not None, f"{case['template']} is not available"
    setting = setting or {}
    policy = autoparser.Policy(**setting["policy"]) if "policy" in setting else None
    p = prof.parser(tools=case.get("tools"), reasoning=setting.get("reasoning", case.get("reasoning")),
                    policy=policy, stream_arguments=stream)
    for chunk in chunks:
        p.feed(chunk)
    p.close()
    return p.result()


def _subset(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _subset(w, got[k]) for k, w in want.items())
    return bool(want == got)


def mismatches(expected: Mapping[str, Any], got: Mapping[str, Any]) -> list[str]:
    """Where a result (in ``summary`` form) differs from a peer expectation, which asserts only the
    fields it holds: ``reasoning``, ``content``, ``tool_calls`` (each with ``name``, ``arguments``
    or ``arguments_subset`` when asserted) and ``tools_called``."""
    want = normalize({k: expected.get(k) for k in ("reasoning", "content")})
    bad = [f"{key}: {got[key]!r} != {want[key]!r}" for key in ("reasoning", "content")
           if key in expected and got[key] != want[key]]
    if "tool_calls" in expected:
        calls = expected["tool_calls"]
        if len(calls) != len(got["tool_calls"]):
            bad.append(f"{len(got['tool_calls'])} calls != {len(calls)}: {got['tool_calls']}")
        else:
            for w, g in zip(calls, got["tool_calls"], strict=True):
                if "name" in w and w["name"] != g["name"]:
                    bad.append(f"name {g['name']!r} != {w['name']!r}")
                if "arguments" in w and w["arguments"] != g["arguments"]:
                    bad.append(f"arguments {g['arguments']} != {w['arguments']}")
                if "arguments_subset" in w and not _subset(w["arguments_subset"], g["arguments"]):
                    bad.append(f"arguments {g['arguments']} lack {w['arguments_subset']}")
    if "tools_called" in expected and bool(got["tool_calls"]) != expected["tools_called"]:
        bad.append(f"tools_called {bool(got['tool_calls'])} != {expected['tools_called']}")
    return bad


def chunkings(case: Mapping[str, Any]) -> list[list[str]]:
    """One character at a time, four split points and three random chunkings (seeded by the id)."""
    text = case["input"]
    out = [list(text)]
    if len(text) < 2:
        return out
    rng = random.Random(zlib.crc32(case["id"].encode()))
    for k in rng.sample(range(1, len(text)), min(4, len(text) - 1)):
        out.append([text[:k], text[k:]])
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(2, 12))))
        out.append([text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])])
    return out


def stream_consistent(whole: Mapping[str, Any], streamed: autoparser.Result) -> bool:
    """The default (streaming) mode gives the whole-text result, except for a call the output cuts
    off: announced already, it stays as the last call, ``truncated`` (docs/conformance.md)."""
    got = summary(streamed)
    return got == whole or (streamed.finish == "length" and bool(streamed.tool_calls)
                            and streamed.tool_calls[-1].status == "truncated"
                            and got["tool_calls"][:-1] == whole["tool_calls"])


def engine_failure(case: Mapping[str, Any]) -> str | None:
    """Why the engine's guarantees fail on this vector (chunking, stream mode), or None."""
    for stream in (False, True):
        whole = summary(parse(case, [case["input"]], stream))
        for chunks in chunkings(case):
            if summary(parse(case, chunks, stream)) != whole:
                return (f"result depends on the chunking (stream_arguments={stream}), e.g. "
                        f"{json.dumps(chunks[:60], ensure_ascii=False)[:300]}")
    if not stream_consistent(summary(parse(case, [case["input"]])), parse(case, [case["input"]], True)):
        return "stream_arguments=True gives another result than False on the whole text (not a truncation)"
    return None


def reason_for(case: Mapping[str, Any], ours: Mapping[str, Any]) -> str:
    """A first classification of a disagreement from the shape of the two results."""
    exp = case["expected"]
    if case.get("template"):
        return "derived-profile"
    want_calls = exp.get("tool_calls")
    if want_calls is not None and len(want_calls) < len(ours["tool_calls"]):
        return "recovered-call"
    if want_calls is not None and len(want_calls) > len(ours["tool_calls"]):
        return "kept-as-content" if ours["content"] else "gap"
    if want_calls is not None and any(("arguments" in w or "arguments_subset" in w) for w in want_calls) \
            and [w.get("name", g["name"]) for w, g in zip(want_calls, ours["tool_calls"], strict=True)] \
            == [g["name"] for g in ours["tool_calls"]] \
            and not any(k in exp and normalize(exp)[k] != ours[k] for k in ("reasoning", "content")):
        return "value-form"
    if "reasoning" in exp and normalize(exp)["reasoning"] != ours["reasoning"]:
        return "reasoning-split"
    if "content" in exp and len(normalize(exp)["content"]) < len(ours["content"]):
        return "kept-as-content"
    return "gap"


def _gives_peer_result(case: Mapping[str, Any], setting: Mapping[str, Any]) -> bool:
    try:
        return not mismatches(case["expected"], summary(parse(case, [case["input"]], setting=setting)))
    except autoparser.AutoparserError:  # e.g. a reasoning option for a profile without reasoning
        return False


def annotate() -> None:
    for source in sources():
        path = PEERS / f"{source}.json"
        cases = json.loads(path.read_text(encoding="utf-8"))
        for case in cases:
            if profile_of(case) is None:
                continue
            failure = engine_failure(case)
            if failure:
                case["known_failure"] = failure
            else:
                case.pop("known_failure", None)
            ours = summary(parse(case, [case["input"]]))
            if not mismatches(case["expected"], ours):
                case.pop("disagreement", None)
                continue
            old = case.get("disagreement") or {}
            setting = next((s for s in SETTINGS if _gives_peer_result(case, s)), None)
            reason = old.get("reason") if old.get("reason") not in (None, "setting") else None
            case["disagreement"] = {"reason": reason or ("setting" if setting else reason_for(case, ours)),
                                    "peer_setting": setting, "ours": ours,
                                    **({"note": old["note"]} if "note" in old else {})}
        path.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def report() -> None:
    by_source: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    by_dialect: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    reasons: collections.Counter[str] = collections.Counter()
    for source in sources():
        for case in vectors(source):
            if profile_of(case) is None:
                continue
            ok = not mismatches(case["expected"], summary(parse(case, [case["input"]])))
            for table, key in ((by_source, source), (by_dialect, case.get("dialect") or case["template"])):
                table[key][0] += ok
                table[key][1] += 1
            if not ok:
                reasons[(case.get("disagreement") or {}).get("reason", "unrecorded")] += 1
    for title, table in (("source", by_source), ("dialect / template", by_dialect)):
        print(f"| {title} | pass | |\n|---|---|---|")
        for key, (ok, n) in sorted(table.items()):
            print(f"| {key} | {ok}/{n} | {100 * ok / n:.0f}% |")
        print()
    ok = sum(v[0] for v in by_source.values())
    n = sum(v[1] for v in by_source.values())
    print(f"total {ok}/{n} ({100 * ok / n:.1f}%); disagreements by reason: {dict(reasons)}")


def listing() -> None:
    """The disagreements and engine failures as a markdown table (docs/conformance.md)."""
    print("| vector | dialect / template | reason | setting giving the peer's result |\n|---|---|---|---|")
    for case in vectors():
        d = case.get("disagreement")
        if d:
            setting = json.dumps(d["peer_setting"]) if d["peer_setting"] else "none"
            print(f"| `{case['id']}` | {case.get('dialect') or case['template']} | {d['reason']} | `{setting}` |")
    print("\n| vector (engine: strict xfail) | dialect | diagnosis |\n|---|---|---|")
    for case in vectors():
        if case.get("known_failure"):
            print(f"| `{case['id']}` | {case.get('dialect') or case['template']} | "
                  f"{case['known_failure'].split(', e.g.')[0]} |")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["report", "annotate", "list"])
    args = ap.parse_args(argv)
    {"report": report, "annotate": annotate, "list": listing}[args.command]()


if __name__ == "__main__":
    main()
