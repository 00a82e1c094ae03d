#!/usr/bin/env python3
"""Resolve every template of ../shared/templates for every host; check each named parser against
the labels (EXPECTED.tsv). Writes analysis/resolve.json and analysis/resolve.md.

For each template and host, each part (tool calls, reasoning) is ``resolved`` (a host parser is
named), ``refused`` (none, with the reason) or ``n/a`` (the derived profile has no such part), and
a named parser is ``wrong`` when its format, as kept in the host table, does not read what the
label says the template writes:

* tool calls: the label's ``call_example`` (unescaped) must parse, with the host parser's format
  (for transformers: with transformers' own ``parse_response`` and the generated template), into
  exactly one call ``get_weather`` with ``city`` Paris and ``days`` 3; a template labelled ``none``
  has no call format, so naming any tool parser for it is wrong (for a format that reads the name
  from the model's own id, Kimi's ``functions.NAME:0``, the label's caller id is replaced by it);
* reasoning: the label's markers must be markers the host parser reads, and its start rule must
  read the label's ``prompt_opens_reasoning`` (a host that follows ``enable_thinking`` reads a
  template whose prompt ``enable_thinking`` changes); a template labelled without reasoning markers
  has no reasoning format, so naming any reasoning parser for it is wrong.

    python scripts/resolve_corpus.py [--shared ../shared] [--only SUBSTRING] [--no-write]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import autoparser  # noqa: E402
from autoparser.derive.history import SAMPLE_TOOLS, sample_turns  # noqa: E402
from autoparser.export.hosts import HOSTS, HostReasoning, HostTool, host  # noqa: E402
from autoparser.export.resolve import (  # noqa: E402
    Resolution,
    as_rendered,
    reasoning_read,
    resolve_profile,
    with_switches,
)
from autoparser.profile import Profile, ReasoningSpec  # noqa: E402

EXPECTED_CALL = ("get_weather", {"city": "Paris", "days": 3})


def unescape(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append({"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}.get(s[i + 1], s[i:i + 2]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def _calls_ok(calls: list[tuple[str, Any]]) -> bool:
    if len(calls) != 1 or calls[0][0] != "get_weather" or not isinstance(calls[0][1], dict):
        return False
    args = calls[0][1]
    return args.get("city") == "Paris" and str(args.get("days")) == "3" and set(args) <= {"city", "days"}


def tool_wrong(t: HostTool, row: dict[str, str], prof: Profile) -> str | None:
    """Why the named tool parser does not read the labelled format (None: it does)."""
    if row["tool_format"] == "none":
        return "the label says the template writes no calls"
    example = unescape(row["call_example"])
    spec = t.tools or prof.tools
    if spec is not None and "{id}" in spec.codec.header:
        # the label rendered the caller's id ("call0A1b2") where this format reads the name from the
        # model's own id (Kimi's functions.NAME:0): check with the id the model writes
        example = example.replace("call0A1b2", f"{spec.codec.id_name_prefix}get_weather:0")
    if t.from_profile:
        from transformers.utils import chat_parsing  # type: ignore[import-untyped]

        from autoparser.export.resolve import _openai_calls
        from autoparser.export.response_template import response_template

        try:
            got = chat_parsing.parse_response(example, response_template(prof).template, prefix="",
                                              tools=SAMPLE_TOOLS)
        except Exception as e:
            return f"transformers raised {type(e).__name__}"
        calls = _openai_calls(got.get("tool_calls") or [])
    else:
        spec = autoparser.get_profile("harmony") if t.harmony else Profile(tools=t.tools)
        res = autoparser.parse(example, spec, tools=SAMPLE_TOOLS)
        calls = [(c.name, c.arguments) for c in res.tool_calls]
    return None if _calls_ok(calls) else f"reads the label's call as {calls}"


def enable_thinking_switches(text: str, bos: str | None, eos: str | None) -> bool:
    """Whether enable_thinking changes the generation prompt (what a request-following host reads)."""
    from autoparser.templates.render import TemplateRenderer

    out = set()
    for value in (True, False):
        try:
            out.add(TemplateRenderer(text).render([{"role": "user", "content": "hi"}], add_generation_prompt=True,
                                                  bos_token=bos, eos_token=eos, enable_thinking=value))
        except autoparser.AutoparserError:
            return False
    return len(out) > 1


def reasoning_wrong(r: HostReasoning, row: dict[str, str], switch: bool) -> str | None:
    if r.harmony:  # Harmony's analysis channel: right exactly for a Harmony template
        return None if row["tool_format"] == "harmony" else "the label's format is not Harmony"
    o, c = unescape(row["reasoning_open"]).strip(), unescape(row["reasoning_close"]).strip()
    if not c:
        return "the label says the template has no reasoning format"
    opens = row["prompt_opens_reasoning"]
    start = {"yes": "prefilled", "no": "explicit"}.get(opens, "explicit")
    # a host that follows enable_thinking reads any template that enable_thinking switches
    spec = ReasoningSpec(open=(o,) if o else (), close=(c,), start=start,  # type: ignore[arg-type]
                         switchable=opens == "switchable" or (r.start == "request" and switch))
    if r.reasoning is not None:  # compare markers up to surrounding whitespace, as the label trims them
        r = HostReasoning(r.name, ReasoningSpec(open=tuple(x.strip() for x in r.reasoning.open),
                                                close=tuple(x.strip() for x in r.reasoning.close)), r.start)
    why = reasoning_read(r, spec)
    return None if why is None else f"label {o!r}…{c!r} ({opens}): {why}"


def classify(res: Resolution, row: dict[str, str], prof: Profile, switch: bool) -> dict[str, Any]:
    h = host(res.host)
    out: dict[str, Any] = {}
    for part, binding in (("tools", res.tools), ("reasoning", res.reasoning)):
        if binding is None:
            out[part] = {"status": "n/a"}
        elif binding.parser is None:
            out[part] = {"status": "refused", "reason": binding.reason}
        else:
            if part == "tools":
                why = tool_wrong(next(t for t in h.tools if t.name == binding.parser), row, prof)
            else:
                why = reasoning_wrong(next(r for r in h.reasoning if r.name == binding.parser), row, switch)
            out[part] = {"status": "wrong" if why else "resolved", "parser": binding.parser,
                         **({"why_wrong": why} if why else {})}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--only", default="")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    tdir = Path(args.shared) / "templates"
    with (tdir / "EXPECTED.tsv").open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if args.only in r["file"]]
    with (tdir / "SOURCES.tsv").open(encoding="utf-8") as f:
        src = {r["file"]: r for r in csv.DictReader(f, delimiter="\t")}
    t0 = time.perf_counter()
    results: list[dict[str, Any]] = []
    for row in rows:
        s = src[row["file"]]
        text = (tdir / row["file"]).read_text(encoding="utf-8")
        bos, eos = s.get("bos") or None, s.get("eos") or None
        entry: dict[str, Any] = {"file": row["file"], "label": row["tool_format"]}
        try:
            prof = as_rendered(autoparser.analyze(text, bos, eos), autoparser.analyze(text, bos, eos, known=False))
            prof = with_switches(prof, text, bos, eos)
        except autoparser.AutoparserError as e:
            entry["error"] = str(e)[:200]
            entry["hosts"] = {h: {"tools": {"status": "refused", "reason": "no profile: " + str(e)[:120]},
                                  "reasoning": {"status": "n/a"}} for h in HOSTS}
            results.append(entry)
            continue
        samples = sample_turns(text, bos, eos, prof)
        entry["dialect"], entry["confidence"] = prof.name, round(prof.confidence, 2)
        switch = enable_thinking_switches(text, bos, eos)
        entry["hosts"] = {h: classify(resolve_profile(prof, h, samples=samples), row, prof, switch) for h in HOSTS}
        results.append(entry)
    seconds = time.perf_counter() - t0
    summary = {h: {part: dict(Counter(r["hosts"][h][part]["status"] for r in results))
                   for part in ("tools", "reasoning")} for h in HOSTS}
    wrong = [(r["file"], h, part, r["hosts"][h][part]) for r in results for h in HOSTS
             for part in ("tools", "reasoning") if r["hosts"][h][part]["status"] == "wrong"]
    print(f"{len(results)} templates x {len(HOSTS)} hosts in {seconds:.0f} s; wrong: {len(wrong)}")
    for h in HOSTS:
        print(f"  {h:13} tools {summary[h]['tools']}  reasoning {summary[h]['reasoning']}")
    for w in wrong:
        print("  WRONG", *w)
    if not args.no_write:
        out = {"summary": summary, "wrong": len(wrong), "templates": len(results),
               "hosts": {h: {"version": host(h).version, "read_from": host(h).read_from} for h in HOSTS},
               "results": results}
        (ROOT / "analysis" / "resolve.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n",
                                                        encoding="utf-8")
        (ROOT / "analysis" / "resolve.md").write_text(markdown(results, summary), encoding="utf-8")
    return 1 if wrong else 0


def markdown(results: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    lines = ["# Host resolution over the template corpus", "",
             "Generated by `python scripts/resolve_corpus.py` (do not edit). For each of the "
             f"{len(results)} templates of `../shared/templates` and each host, `autoparser.resolve` names "
             "the host's own tool-call and reasoning parsers, or refuses with the reason. A named parser is "
             "*wrong* when its format (the host table in `autoparser/export/hosts/`) does not read what "
             "`EXPECTED.tsv` says the template writes (see the script's docstring).", "",
             "| host | version | tools resolved | tools refused | tools n/a | tools wrong | reasoning resolved "
             "| reasoning refused | reasoning n/a | reasoning wrong |", "|---|---|---|---|---|---|---|---|---|---|"]
    for h in HOSTS:
        t, r = summary[h]["tools"], summary[h]["reasoning"]
        lines.append(f"| {h} | {host(h).version} | {t.get('resolved', 0)} | {t.get('refused', 0)} | "
                     f"{t.get('n/a', 0)} | {t.get('wrong', 0)} | {r.get('resolved', 0)} | {r.get('refused', 0)} | "
                     f"{r.get('n/a', 0)} | {r.get('wrong', 0)} |")
    lines += ["", "`n/a`: the derived profile has no such part (the template writes no calls, or no reasoning "
              "block was derived). Refusals keep autoparser's own parser for that part.", ""]
    for h in HOSTS:
        lines += [f"## {h}", "", "| template | label | tools | reasoning |", "|---|---|---|---|"]
        for r in results:
            cells = []
            for part in ("tools", "reasoning"):
                c = r["hosts"][h][part]
                if c["status"] in ("resolved", "wrong"):
                    cells.append(f"`{c['parser']}`" + (" **wrong**" if c["status"] == "wrong" else ""))
                elif c["status"] == "refused":
                    cells.append("refused: " + c["reason"].replace("|", "\\|")[:160])
                else:
                    cells.append("—")
            label = r["label"].replace("|", "\\|")
            lines.append(f"| {r['file']} | {label} | {cells[0]} | {cells[1]} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
