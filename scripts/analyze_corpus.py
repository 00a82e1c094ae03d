#!/usr/bin/env python3
"""Derive a profile for every template in ../shared/templates and report how good it is.

For each template: the derived format and markers, the confidence, the matched dialect, whether
that agrees with EXPECTED.tsv, the pass rate of that dialect's peer vectors parsed with the
derived profile (``known=False``: pure derivation), the self-check round-trip rate and the
analysis time. Writes analysis/corpus.json and analysis/corpus.md.

    python scripts/analyze_corpus.py [--shared ../shared] [--only SUBSTRING] [--no-write]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import autoparser  # noqa: E402
from autoparser.compare import normalize, summary  # noqa: E402
from autoparser.derive import analyze_detailed  # noqa: E402
from autoparser.derive.match import _score  # noqa: E402

PEER_DIALECTS = {"hermes", "qwen3-coder", "glm", "gemma4", "kimi-k2", "mistral", "harmony", "minimax-m2",
                 "minimax-m3", "think", "llama3-json", "pythonic", "deepseek-r1", "deepseek-v3",
                 "deepseek-v3.1", "deepseek-v3.2", "deepseek-v4", "functiongemma", "granite", "phi4",
                 "jamba", "command-r", "ernie"}


def run_vectors(prof: autoparser.Profile, cases: list[dict[str, Any]]) -> tuple[int, list[str]]:
    ok, fails = 0, []
    for case in cases:
        notes = case.get("notes") or ""
        # the vectors' convention (conformance README): the prompt did not open a reasoning block
        # unless the notes say so
        reasoning: str | None = "prefilled" if ("[prompt-opened-reasoning]" in notes
                                               or case["dialect"] == "deepseek-r1") else "explicit"
        if prof.reasoning is None:
            reasoning = None
        try:
            results = []
            for chunks in ([case["input"]], list(case["input"])):
                p = prof.parser(tools=case.get("tools"), reasoning=reasoning, stream_arguments=False)
                for ch in chunks:
                    p.feed(ch)
                p.close()
                results.append(summary(p.result()))
            good = results[0] == results[1] == normalize(case["expected"])
        except Exception as e:  # a crash is a failure
            good = False
            results = [{"error": repr(e)}]
        ok += good
        if not good:
            fails.append(case["id"])
    return ok, fails


def explain_failures(prof: autoparser.Profile, dialect: str, cases: list[dict[str, Any]],
                     failed: list[str]) -> dict[str, list[str]]:
    """Attribute each failing peer vector to the profile part that makes it fail.

    The vector is re-run with one part of the derived profile replaced by the builtin dialect's;
    the first replacement that makes it pass names the cause.
    """
    from dataclasses import replace

    b = autoparser.get_profile(dialect)
    variants = [
        ("reasoning the template never writes (or writes differently)", replace(prof, reasoning=b.reasoning)),
        ("tool-call details no template shows (recovery rules, other spellings or versions of the format)",
         replace(prof, tools=b.tools, messages=b.messages)),
        ("end-of-turn or control tokens the template does not write", replace(prof, strip=b.strip)),
    ]
    by_id = {c["id"]: c for c in cases}
    out: dict[str, list[str]] = {}
    for cid in failed:
        case = by_id[cid]
        if prof.tools is None and case["expected"]["tool_calls"]:
            why = "the template renders no tool calls (see the evidence)"
        else:
            why = "several of the above at once"
            for label, variant in variants:
                ok, _ = run_vectors(variant, [case])
                if ok:
                    why = label
                    break
        out.setdefault(why, []).append(cid)
    return out


# what a marker looks like in raw output: <|x|>, <｜x｜>, [X], <x>, </x>, <|x>, <x|>
_MARKER = re.compile(r"<\|[^<>|\s]+\|>|<｜[^｜]+｜>|\[[A-Z_]+\]|</?[A-Za-z_][\w-]*>|<\|[\w-]+>|<[\w-]+\|>")


def absent_markers(template: str, cases: list[dict[str, Any]], failed: list[str]) -> dict[str, list[str]]:
    """Failing vectors whose raw output holds markers the template's text never contains.

    No derivation from this template can know what such a marker means (``[ARGS]`` for a template
    that only writes v0.3 arrays, ``<think>`` for one that never reasons): these vectors bound what
    pure derivation can reach, whatever the analyzer does.
    """
    by_id = {c["id"]: c for c in cases}
    out = {}
    for cid in failed:
        raw = by_id[cid]["input"]
        # a marker wholly inside a JSON string is argument text (HTML in a call), not protocol
        strings = [m.span() for m in re.finditer(r'"(?:[^"\\\n]|\\.)*"', raw)]
        missing = sorted({m.group() for m in _MARKER.finditer(raw) if m.group() not in template
                          and not any(a < m.start() and m.end() < b for a, b in strings)})
        if missing:
            out[cid] = missing
    return out


# -- the `other:` measure: a template whose format no builtin covers parses its own call example --

OTHER_TOOLS: list[dict[str, Any]] = [{"type": "function", "function": {
    "name": "get_weather", "description": "weather forecast",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                   "required": ["city"]}}}]
OTHER_WANT = [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]


def other_example(row: dict[str, str]) -> str:
    """The call example of an EXPECTED.tsv row (written with ``\\n`` escapes)."""
    return row["call_example"].replace("\\n", "\n").replace("\\t", "\t")


def other_measure(prof: autoparser.Profile, row: dict[str, str]) -> dict[str, Any]:
    """Parse the row's own call example with the derived profile: exactly one call
    ``get_weather({"city": "Paris", "days": 3})`` passes (whole and character by character)."""
    raw = other_example(row)
    got: list[Any] = []
    try:
        for chunks in ([raw], list(raw)):
            p = prof.parser(tools=OTHER_TOOLS)
            for ch in chunks:
                p.feed(ch)
            p.close()
            res = p.result()
            got.append(([{"name": c.name, "arguments": c.arguments} for c in res.tool_calls],
                        res.content.strip()))
    except Exception as e:  # a crash is a miss
        return {"other_pass": False, "other_got": repr(e)[:200]}
    calls, content = got[0]
    ok = got[0] == got[1] and calls == OTHER_WANT
    return {"other_pass": ok, "other_got": {"calls": calls, "content": content[:120]},
            "other_chunking_agrees": got[0] == got[1]}


def other_cause(prof: autoparser.Profile, rec: dict[str, Any]) -> str:
    """Why an `other:` template misses: no calls derived (and what the evidence says), or what
    the parse of its example gave instead."""
    if prof.tools is None and prof.messages is None:
        why = [e for e in prof.evidence if e.startswith(("tools", "content", "renders"))]
        return "no tool calls derived: " + ("; ".join(why)[:300] or "no evidence")
    got = rec.get("other_got")
    return f"derived {describe(prof)[:120]}; the example parses to {json.dumps(got, ensure_ascii=False)[:240]}"


def other_markdown(out: list[dict[str, Any]]) -> list[str]:
    """The `other:` table: formats no builtin covers, each parsing its own call example."""
    rows = [r for r in out if r["expected"].startswith("other:")]
    if not rows:
        return []
    ok = sum(1 for r in rows if r.get("other_pass"))
    lines = ["## Formats no builtin covers (`other:`)", "",
             f"Each template's own `call_example` (EXPECTED.tsv) parsed with its pure derivation must give "
             f"exactly one call `get_weather({{\"city\": \"Paris\", \"days\": 3}})`, whole and character by "
             f"character: **{ok}/{len(rows)}**.", "",
             "| template | format | derived | confidence | self-check | cause of a miss |", "|---|---|---|---|---|---|"]
    for r in rows:
        cause = (r.get("other_cause") or r.get("error") or "").replace("|", "\\|").replace("\n", " ")
        fmt = r["expected"][len("other:"):].replace("|", "\\|")
        lines.append(f"| `{r['file']}` | {fmt[:60]} | {'yes' if r.get('other_pass') else '**no**'} | "
                     f"{r.get('confidence', '')} | {r.get('self_check', '')} | {cause[:300]} |")
    return [*lines, ""]


def covered_markdown(out: list[dict[str, Any]]) -> list[str]:
    """Per template: the peer vectors whose markers the template's text contains, and how many parse."""
    rows = [r for r in out if "peer_pass" in r]
    if not rows:
        return []
    lines = ["## Covered vectors per template", "",
             "Vectors whose raw output holds only markers the template's text contains (\"covered\"), and how "
             "many of them the pure derivation parses; a template counts when >= 90% do.", "",
             "| template | dialect | covered | parsed | ok |", "|---|---|---|---|---|"]
    for r in rows:
        absent = set(r.get("absent_marker_vectors", {}))
        covered = r["peer_total"] - len(absent)
        parsed = covered - len(set(r.get("peer_failures", [])) - absent)
        lines.append(f"| `{r['file']}` | {r['expected']} | {covered} | {parsed} | "
                     f"{'yes' if r.get('covered_correct') else '**no**'} |")
    return [*lines, ""]


# -- the default path (known=True) against pure derivation, on the template's own renders ------------

def own_renders(row: dict[str, str]) -> dict[str, tuple[str, dict[str, Any]]]:
    """What the template itself writes, with the parse it must give: its call example, and where
    the generation prompt opens reasoning, a block closed by the template's own marker."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    if row["call_example"] and row["tool_format"] != "none":
        out["call"] = (other_example(row), {"calls": OTHER_WANT})
    if row["prompt_opens_reasoning"] == "yes":
        close = row["reasoning_close"] or "</think>"
        out["reasoning"] = (f"R_TEXT\n{close}\n\nC_TEXT", {"reasoning": "R_TEXT", "content": "C_TEXT"})
    return out


def parses(prof: autoparser.Profile, raw: str, want: dict[str, Any]) -> bool:
    try:
        res = autoparser.parse(raw, prof, tools=OTHER_TOOLS)
    except Exception:  # a crash is a miss
        return False
    got = {"calls": [{"name": c.name, "arguments": c.arguments} for c in res.tool_calls],
           "reasoning": res.reasoning.strip(), "content": res.content.strip()}
    return all(got[k] == v for k, v in want.items())


def default_path(pure: autoparser.Profile, default: autoparser.Profile, row: dict[str, str]) -> dict[str, Any]:
    """Per own render: does pure derivation parse it, does the default path; and what the builtin gave."""
    rec: dict[str, Any] = {}
    for kind, (raw, want) in own_renders(row).items():
        rec[f"own_{kind}_pure"] = parses(pure, raw, want)
        rec[f"own_{kind}_default"] = parses(default, raw, want)
    b = default.builtin
    if b is not None:
        rec["builtin"] = {"dialect": b.dialect, "taken": list(b.taken), "added": list(b.added),
                          "declined": sorted(b.declined)}
    if default.prompt_settings:
        rec["prompt_settings"] = [[s.variable, s.value, s.reasoning] for s in default.prompt_settings]
    return rec


def default_markdown(out: list[dict[str, Any]], s: dict[str, Any]) -> list[str]:
    lines = ["## The default path (`known=True`) on the template's own renders", "",
             "The matched builtin dialect adds its parts only where the template's renders agree "
             "(docs/derive.md, \"The default path\"). Measured on what each template itself writes: its call "
             "example (EXPECTED.tsv) must parse to exactly `get_weather({\"city\": \"Paris\", \"days\": 3})`, "
             "and where the generation prompt opens reasoning, `R_TEXT\\n<close>\\n\\nC_TEXT` (the template's "
             "own close marker) must parse to reasoning `R_TEXT` and content `C_TEXT`.", "",
             "| measure | default path | pure derivation | templates where the default path is worse |",
             "|---|---|---|---|"]
    for kind, label in (("reasoning", "prompt-opened reasoning"), ("call", "own call example")):
        d = s[f"default_own_{kind}"]
        lines.append(f"| {label} | {d['default']}/{d['n']} | {d['pure']}/{d['n']} | "
                     f"{', '.join(f'`{x}`' for x in d['worse']) or 'none'} |")
    rows = [r for r in out if "own_reasoning_default" in r]
    lines += ["", "| template (prompt opens reasoning) | default path | pure | builtin: declined |",
              "|---|---|---|---|"]
    for r in rows:
        declined = ", ".join(r.get("builtin", {}).get("declined", [])) or "-"
        lines.append(f"| `{r['file']}` | {'yes' if r['own_reasoning_default'] else '**no**'} | "
                     f"{'yes' if r['own_reasoning_pure'] else 'no'} | {declined} |")
    added = [r["file"] for r in out if "reasoning" in r.get("builtin", {}).get("added", [])]
    declined_tools = [r["file"] for r in out if "tools" in r.get("builtin", {}).get("declined", [])]
    settings = [r for r in out if r.get("prompt_settings")]
    lines += ["", f"Builtin-only reasoning (no render shows it; marked, no server reasoning parser exported): "
              f"{len(added)} templates. Builtin call format declined (it misreads the template's own calls): "
              f"{len(declined_tools)} ({', '.join(f'`{x}`' for x in declined_tools) or 'none'}). "
              f"Templates with prompt settings (their own variables that move where the output starts): "
              f"{len(settings)}.", ""]
    return lines


def describe(prof: autoparser.Profile) -> str:
    if prof.messages is not None:
        m = prof.messages
        return (f"headed messages {m.channel}CHANNEL{m.message}...{'/'.join(m.ends)}, calls to "
                f"{m.recipient_prefix}NAME, reasoning channels {', '.join(m.reasoning_channels)}")
    t = prof.tools
    if t is None:
        tools = "no tool calls"
    else:
        c = t.codec
        opens = "/".join(x for x in (*t.section_open, *t.call_open) if x) or "(none)"
        detail = {"json": f"json {c.name_keys[0]}/{c.args_keys[0]}", "name_json": f"name_json {c.header!r}",
                  "tagged": f"tagged {c.header!r} {c.param!r}", "pythonic": "pythonic",
                  "pattern": (f"pattern {c.pattern.call!r} {c.pattern.arg!r} {c.pattern.value}"
                              if c.pattern else "")}[c.kind]
        tools = f"{opens} {detail}"
    r = prof.reasoning
    reasoning = f"{'/'.join(r.open) or '-'}..{'/'.join(r.close)} ({r.start})" if r else "no reasoning"
    return f"{tools}; {reasoning}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--only", help="only templates whose file name contains this")
    ap.add_argument("--format", help="only templates whose EXPECTED tool_format starts with this "
                    "(`other:` is the measure of formats no builtin covers)")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--save", help="also write the per-template records (JSON) to this path")
    a = ap.parse_args()
    shared = Path(a.shared)
    tdir = shared / "templates"
    def tsv(name: str) -> list[dict[str, str]]:
        with open(tdir / name, encoding="utf-8") as fh:
            return list(csv.DictReader(fh, delimiter="\t"))

    rows = tsv("EXPECTED.tsv")
    sources = {r["file"]: r for r in tsv("SOURCES.tsv")}
    cases = json.loads((shared / "conformance" / "peer-cases.json").read_text(encoding="utf-8"))
    by_dialect: dict[str, list[dict[str, Any]]] = {}
    for c in cases:
        by_dialect.setdefault(c["dialect"], []).append(c)
    out = []
    t_all = time.perf_counter()
    for row in rows:
        f = row["file"]
        if a.only and a.only not in f:
            continue
        if a.format and not row["tool_format"].startswith(a.format):
            continue
        src = sources.get(f, {})
        text = (tdir / f).read_text(encoding="utf-8")
        exp = row["tool_format"]
        rec: dict[str, Any] = {"file": f, "expected": exp}
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            # the default path (known=True); its ``derived`` profile is pure derivation (known=False)
            an = analyze_detailed(text, src.get("bos") or None, src.get("eos") or None, known=True)
        except Exception as e:
            rec.update(error=f"{type(e).__name__}: {e}"[:300], seconds=round(time.perf_counter() - t0, 4))
            if exp == "none" and isinstance(e, autoparser.TemplateError):
                # renders nothing at all: no profile, so certainly no tool calls (honest failure)
                rec.update(correct=True, agrees=True, renders_nothing=True)
            elif exp.startswith("other:"):
                rec.update(other_pass=False, other_cause=f"the template renders no conversation: {e}"[:300])
            out.append(rec)
            print(f"{f}: ERROR {rec['error'][:120]}", flush=True)
            continue
        prof, kp = an.derived, an.profile
        rec["cpu_seconds"] = round(time.process_time() - c0, 4)
        rec.update(default_path(prof, kp, row))
        rec.update(
            seconds=round(an.seconds, 4), renders=an.renders, name=prof.name, confidence=prof.confidence,
            known_confidence=kp.confidence,
            derived=describe(prof), self_check=f"{an.check.passed}/{an.check.rendered}",
            self_check_rate=round(an.check.rate, 3), has_tools=prof.tools is not None or prof.messages is not None,
            profile=prof.wire_format(), evidence=list(prof.evidence))
        exp_close = (row.get("reasoning_close") or "").strip()
        got_close = set(prof.reasoning.close) if prof.reasoning else set()
        if prof.messages is not None:  # headed messages end a reasoning message with an end marker
            got_close |= set(prof.messages.ends)
        rec["reasoning_agrees"] = (exp_close in got_close) if exp_close else None
        if exp in PEER_DIALECTS:
            okn, fails = run_vectors(prof, by_dialect.get(exp, []))
            n = len(by_dialect.get(exp, []))
            rec.update(peer_pass=okn, peer_total=n, peer_rate=round(okn / n, 3) if n else None,
                       peer_failures=fails,
                       failure_causes=explain_failures(prof, exp, by_dialect.get(exp, []), fails))
            absent = absent_markers(text, by_dialect.get(exp, []), fails)
            # at most 10% of the vectors may fail; more than that need markers this template lacks
            covered = n - len(absent)
            rec.update(absent_marker_vectors=absent, reachable=len(absent) <= int(n * 0.1 + 1e-9),
                       covered_correct=not covered or (covered - len(set(fails) - set(absent))) / covered >= 0.9)
            builtin = autoparser.get_profile(exp)
            calls = prof.tools is not None or prof.messages is not None
            rec["agrees"] = prof.name == exp or (_score(prof, builtin) > 0 and calls)
            rec["correct"] = bool(n) and okn / n >= 0.9
            # with known=True a matched dialect brings the rules no template shows
            okk, _ = run_vectors(kp, by_dialect.get(exp, []))
            rec.update(known_peer_pass=okk, known_correct=bool(n) and okk / n >= 0.9)
        elif exp == "none":
            rec["agrees"] = prof.tools is None
            rec["correct"] = rec["agrees"]
        else:
            rec["agrees"] = None
            rec["correct"] = None
            if exp.startswith("other:"):
                rec.update(other_measure(prof, row))
                if not rec["other_pass"]:
                    rec["other_cause"] = other_cause(prof, rec)
        out.append(rec)
        flag = {True: "ok ", False: "MISS", None: "   "}[rec["correct"] if "other_pass" not in rec
                                                       else rec["other_pass"]]
        peer = (f" peers {rec['peer_pass']}/{rec['peer_total']} covered {'ok' if rec['covered_correct'] else 'MISS'}"
                if "peer_pass" in rec else "")
        print(f"{flag} {f}: {prof.name} conf {prof.confidence}{peer} check {rec['self_check']} "
              f"[{rec['derived'][:90]}]", flush=True)
        if rec.get("other_cause"):
            print(f"     cause: {rec['other_cause'][:300]}", flush=True)
    total = time.perf_counter() - t_all
    summary = _summary(out, total)
    summary["calibration"] = calibration(out)
    print(json.dumps(summary, indent=2))
    if a.save:
        Path(a.save).write_text(json.dumps({"summary": summary, "templates": out}, indent=1,
                                           ensure_ascii=False) + "\n", encoding="utf-8")
    if not a.no_write and not a.only and not a.format:
        adir = ROOT / "analysis"
        adir.mkdir(exist_ok=True)
        (adir / "corpus.json").write_text(json.dumps({"summary": summary, "templates": out}, indent=1,
                                                     ensure_ascii=False) + "\n", encoding="utf-8")
        (adir / "corpus.md").write_text(_markdown(summary, out), encoding="utf-8")
    return 0


def _summary(out: list[dict[str, Any]], total: float) -> dict[str, Any]:
    peer = [r for r in out if r["expected"] in PEER_DIALECTS]
    good = [r for r in peer if r.get("correct")]
    none = [r for r in out if r["expected"] == "none"]
    times = [r["seconds"] for r in out if "seconds" in r]
    cpu = [r["cpu_seconds"] for r in out if "cpu_seconds" in r]
    wrong_high = [r["file"] for r in out if r.get("correct") is False and r.get("confidence", 0) >= 0.9]
    # a wrong wire format: tools where the label says none (or none where it says some), a tool
    # format that is not the labelled dialect's, or reasoning markers that are not the labelled ones
    def wrong_format(r: dict[str, Any]) -> bool:
        if "error" in r:
            return False
        if r["expected"] == "none":
            return bool(r.get("has_tools"))
        if r["expected"] in PEER_DIALECTS and (not r.get("has_tools") or not r.get("agrees")):
            return True
        return r.get("reasoning_agrees") is False
    wrong_fmt = [r for r in out if wrong_format(r)]
    by_dialect: dict[str, list[int]] = {}
    for r in peer:
        d = by_dialect.setdefault(r["expected"], [0, 0])
        d[1] += 1
        d[0] += bool(r.get("correct"))
    return {
        "templates": len(out),
        "peer_dialect_templates": len(peer),
        "peer_dialect_correct": len(good),
        "peer_dialect_rate": round(len(good) / len(peer), 3) if peer else None,
        "per_dialect": {k: f"{v[0]}/{v[1]}" for k, v in sorted(by_dialect.items())},
        "no_tool_templates": len(none),
        "no_tool_correct": sum(1 for r in none if r.get("correct")),
        "errors": sum(1 for r in out if "error" in r),
        "wrong_with_confidence_ge_0.9": wrong_high,
        "wrong_format": len(wrong_fmt),
        "wrong_format_with_confidence_ge_0.9": [r["file"] for r in wrong_fmt if r.get("confidence", 0) >= 0.9],
        "known_true_correct": sum(1 for r in peer if r.get("known_correct")),
        "unreachable_by_any_derivation": [r["file"] for r in peer if r.get("reachable") is False],
        "upper_bound_for_pure_derivation": sum(1 for r in peer if r.get("reachable", True)),
        "correct_on_covered_vectors": sum(1 for r in peer if r.get("covered_correct")),
        "other_templates": sum(1 for r in out if r["expected"].startswith("other:")),
        "renders_nothing": sum(1 for r in out if r.get("renders_nothing")),
        "other_call_example_parses": sum(1 for r in out if r.get("other_pass")),
        **{f"default_own_{kind}": {
            "n": sum(1 for r in out if f"own_{kind}_default" in r),
            "default": sum(1 for r in out if r.get(f"own_{kind}_default")),
            "pure": sum(1 for r in out if r.get(f"own_{kind}_pure")),
            "worse": [r["file"] for r in out if r.get(f"own_{kind}_pure") and not r.get(f"own_{kind}_default")]}
           for kind in ("reasoning", "call")},
        "analysis_seconds_p50": round(statistics.median(times), 4) if times else None,
        "analysis_seconds_p95": round(sorted(times)[int(0.95 * (len(times) - 1))], 4) if times else None,
        "analysis_seconds_total": round(sum(times), 2),
        "analysis_cpu_seconds_p50": round(statistics.median(cpu), 4) if cpu else None,
        "analysis_cpu_seconds_total": round(sum(cpu), 2),
        "script_seconds": round(total, 2),
        "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}",
    }


def _markdown(s: dict[str, Any], out: list[dict[str, Any]]) -> str:
    lines = ["# Template corpus: what each template derives to", "",
             "Generated by `python scripts/analyze_corpus.py` (pure derivation, `known=False`, unless a measure "
             "says `known=True`: one analysis gives both, the default path's `derived` profile is pure) over "
             "`../shared/templates`. Do not edit by hand.", "", "## Summary", ""]
    lines += [f"- templates analysed: {s['templates']} ({s['errors']} could not be analysed)",
              f"- templates whose expected format is a peer-case dialect: {s['peer_dialect_templates']}; "
              f"derived profile parses >= 90% of that dialect's peer vectors: **{s['peer_dialect_correct']}** "
              f"({s['peer_dialect_rate']:.0%})" if s["peer_dialect_rate"] is not None else "",
              "- per dialect (correct/templates): "
              + ", ".join(f"{k} {v}" for k, v in s["per_dialect"].items()),
              f"- templates without tool calls (EXPECTED `none`) that derive \"no tool calls\": "
              f"{s['no_tool_correct']}/{s['no_tool_templates']}"
              + (f" ({s['renders_nothing']} of them render no conversation at all and raise TemplateError)"
                 if s.get("renders_nothing") else ""),
              f"- upper bound for any pure derivation: **{s['upper_bound_for_pure_derivation']}**"
              f"/{s['peer_dialect_templates']} "
              f"({s['upper_bound_for_pure_derivation'] / s['peer_dialect_templates']:.0%}); "
              f"for {len(s['unreachable_by_any_derivation'])} templates more than 10% of the dialect's peer "
              "vectors hold markers the template's text never contains (see below)",
              f"- on only the vectors whose markers the template's text contains: "
              f"{s['correct_on_covered_vectors']}/{s['peer_dialect_templates']} "
              f"({s['correct_on_covered_vectors'] / s['peer_dialect_templates']:.0%}) parse >= 90% of them",
              f"- formats no builtin covers (`other:`): the template's own call example parses to exactly the "
              f"expected call for **{s['other_call_example_parses']}/{s['other_templates']}** (table below)",
              f"- with `known=True` (a matched dialect adds its recovery rules): "
              f"{s['known_true_correct']}/{s['peer_dialect_templates']} parse >= 90% of the peer vectors",
              f"- derivations whose wire format contradicts EXPECTED.tsv (tools, tool format or reasoning "
              f"markers): {s['wrong_format']}; of those with confidence >= 0.9: "
              f"{len(s['wrong_format_with_confidence_ge_0.9'])}"
              + (f" ({', '.join(s['wrong_format_with_confidence_ge_0.9'])})"
                 if s["wrong_format_with_confidence_ge_0.9"] else ""),
              f"- derivations below 90% of their dialect's peer vectors with confidence >= 0.9: "
              f"{len(s['wrong_with_confidence_ge_0.9'])}"
              + (f" ({', '.join(s['wrong_with_confidence_ge_0.9'])})" if s["wrong_with_confidence_ge_0.9"] else ""),
              "- default path (`known=True`) on the templates' own renders (table below): prompt-opened reasoning "
              f"{s['default_own_reasoning']['default']}/{s['default_own_reasoning']['n']} (pure derivation "
              f"{s['default_own_reasoning']['pure']}), own call examples {s['default_own_call']['default']}/"
              f"{s['default_own_call']['n']} (pure {s['default_own_call']['pure']}); templates where the default "
              f"path parses less than pure derivation: "
              f"{len(s['default_own_reasoning']['worse']) + len(s['default_own_call']['worse'])}",
              f"- analysis time per template (`analyze_detailed(known=True)`: both profiles): p50 "
              f"{s['analysis_seconds_p50'] * 1000:.0f} ms, p95 {s['analysis_seconds_p95'] * 1000:.0f} ms, CPU p50 "
              f"{s['analysis_cpu_seconds_p50'] * 1000:.0f} ms; whole corpus {s['analysis_seconds_total']} s of "
              f"analysis, {s['analysis_cpu_seconds_total']} s CPU ({s['machine']})", ""]
    misses = [r for r in out if r.get("correct") is False]
    tally: Counter[str] = Counter()
    for r in misses:
        for cause, ids in r.get("failure_causes", {}).items():
            tally[cause] += len(ids)
    lines += ["## Why derivations miss", "",
              "Failing peer vectors of the missed templates, by cause (a vector is counted once per template):",
              ""]
    lines += [f"- {n}× {cause}" for cause, n in tally.most_common()]
    lines += ["", "## What no derivation can reach", "",
              "A peer vector whose raw output holds a marker that the template's text never contains "
              "cannot be parsed by anything derived from that template: nothing in it says what the "
              "marker means. When more than 10% of a dialect's vectors are like that for a template, no "
              "analyzer can make it parse >= 90% of them by derivation alone:", ""]
    for r in misses:
        if r.get("reachable") is False:
            absent = r["absent_marker_vectors"]
            marks = sorted({m for ms in absent.values() for m in ms})
            lines.append(f"- `{r['file']}` ({r['expected']}): {len(absent)} of {r['peer_total']} vectors hold "
                         f"{', '.join(f'`{m}`' for m in marks[:6])}")
    lines += ["", "Templates whose format no peer dialect covers (EXPECTED `other:...`) are analysed and listed "
              "below but not scored.", ""]
    lines += ["## Misses", "", "Every template whose derivation is wrong or incomplete, with the reason "
              "the analyzer recorded.", ""]
    for r in misses:
        why = r.get("error") or "; ".join(e for e in r.get("evidence", []) if "fail" in e or "no " in e)[:400]
        if "peer_failures" in r:
            causes = "; ".join(f"{len(ids)}× {cause} ({', '.join(ids[:4])}{', ...' if len(ids) > 4 else ''})"
                               for cause, ids in r.get("failure_causes", {}).items())
            why = f"parses {r['peer_pass']}/{r['peer_total']} peer vectors. Failing: {causes}. " + why
        lines.append(f"- `{r['file']}` (expected {r['expected']}, derived {r.get('name')}, "
                     f"confidence {r.get('confidence')}): {why}")
    lines += ["", *other_markdown(out), *default_markdown(out, s), *covered_markdown(out)]
    lines += ["## All templates", "",
              "| template | expected | derived | matched | confidence | peers | self-check | ms |",
              "|---|---|---|---|---|---|---|---|"]
    for r in out:
        peers = f"{r['peer_pass']}/{r['peer_total']}" if "peer_pass" in r else ""
        derived = (r.get("derived") or r.get("error", "")).replace("|", "\\|")
        lines.append(f"| `{r['file']}` | {r['expected'].replace('|', '/')} | {derived[:140]} | "
                     f"{r.get('name') or ''} | {r.get('confidence', '')} | {peers} | "
                     f"{r.get('self_check', '')} | {r.get('seconds', 0) * 1000:.0f} |")
    lines += calibration_markdown(s.get("calibration") or {})
    return "\n".join(lines) + "\n"


# -- calibration: does the confidence separate derivations that pass their measure from those that fail?

def _distribution(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    v = sorted(values)
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return {"n": len(v), "min": v[0], "p25": round(q[0], 3), "median": round(statistics.median(v), 3),
            "p75": round(q[2], 3), "max": v[-1]}


def calibration(out: list[dict[str, Any]]) -> dict[str, Any]:
    """Confidence of passing vs failing derivations, per measure (failing with >= 0.9 must not happen)."""
    measures = {
        "peer_covered": [(r.get("covered_correct"), r) for r in out if r["expected"] in PEER_DIALECTS],
        "peer_all_vectors": [(r.get("correct"), r) for r in out if r["expected"] in PEER_DIALECTS],
        "other_call_example": [(r.get("other_pass"), r) for r in out if r["expected"].startswith("other:")],
        "own_renders_default_path": [(all(r[k] for k in r if k.startswith("own_") and k.endswith("_default")),
                                      {**r, "confidence": r.get("known_confidence", r.get("confidence", 0.0))})
                                     for r in out if any(k.startswith("own_") for k in r)],
        "no_tool": [(r.get("correct"), r) for r in out if r["expected"] == "none"],
    }
    res: dict[str, Any] = {}
    for name, pairs in measures.items():
        passed = [r.get("confidence", 0.0) for ok, r in pairs if ok]
        failed = [r.get("confidence", 0.0) for ok, r in pairs if not ok]
        res[name] = {"passing": _distribution(passed), "failing": _distribution(failed),
                     "failing_with_confidence_ge_0.9": sorted(r["file"] for ok, r in pairs
                                                              if not ok and r.get("confidence", 0.0) >= 0.9)}
    return res


def calibration_markdown(cal: dict[str, Any]) -> list[str]:
    if not cal:
        return []
    lines = ["", "## Calibration: confidence of passing vs failing derivations", "",
             "Per measure, the distribution of the derived profile's confidence for derivations that pass "
             "it and for those that fail it. A failing derivation with confidence >= 0.9 is a calibration "
             "error.", "",
             "| measure | passing n | min | p25 | median | p75 | max | failing n | min | p25 | median | p75 "
             "| max | failing with >= 0.9 |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, m in cal.items():
        cells = []
        for side in ("passing", "failing"):
            d = m[side]
            cells += [str(d["n"])] + [str(d.get(k, "")) for k in ("min", "p25", "median", "p75", "max")]
        bad = m["failing_with_confidence_ge_0.9"]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {len(bad)}{': ' + ', '.join(bad) if bad else ''} |")
    return lines


if __name__ == "__main__":
    sys.exit(main())
