"""``autoparse PATH``, ``autoparse scan PATH...`` and ``autoparse resolve``: models and templates from the shell."""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import AutoparserError, SourceError
from ..profile import Profile
from . import announce_cache, command

if TYPE_CHECKING:
    from ..export.resolve import Resolution

__all__ = ["fit_path", "main_analyze", "main_resolve", "main_scan"]


def _analyze_path(path: str, known: bool, refresh: bool = False) -> tuple[Any, Any]:
    """Through the profile cache (autoparser/cache.py); ``refresh`` re-analyses (``--explain``
    needs the findings, which the cache does not keep)."""
    from ..cache import analyze_source
    from ..templates.sources import load_source

    src = load_source(Path(path))
    return src, analyze_source(src, known=known, refresh=refresh)


@command("autoparse")
def main_analyze(argv: list[str], out: TextIO | None = None) -> int:
    from ..export import FORMATS
    from ..toolsfile import read_tools_file

    out = out or sys.stdout
    ap = argparse.ArgumentParser(prog="autoparse", description="Derive a model's output protocol from its "
                                 "chat template (a .jinja file, HF model dir, .gguf or OpenVINO IR dir). "
                                 "Nothing is written beside the model unless asked (-o / --save).",
                                 epilog="Other commands: autoparse --help")
    ap.add_argument("path")
    ap.add_argument("--json", action="store_true", help="print the profile as JSON")
    ap.add_argument("--explain", action="store_true", help="show the probe renders behind each field")
    ap.add_argument("--emit", metavar="FORMAT", choices=FORMATS,
                    help=f"print the profile for another runtime ({', '.join(FORMATS)})")
    ap.add_argument("--tools", metavar="FILE", help='JSON file with tools for grammar formats: a list, or a '
                    'request body with a "tools" list')
    ap.add_argument("--pure", action="store_true", help="pure derivation: do not use builtin dialect rules")
    ap.add_argument("-o", "--save", metavar="FILE", nargs="?", const="",
                    help="write the profile JSON to FILE (--save alone: autoparser_profile.json in the model "
                         "directory, or PATH.autoparser.json beside a file)")
    ap.add_argument("--no-save", action="store_true", help=argparse.SUPPRESS)  # the old default wrote; now a no-op
    a = ap.parse_args(argv)
    tools = read_tools_file(a.tools) if a.tools else None  # before the analysis: a bad file is the cheaper mistake
    announce_cache()
    # --explain and --json show how the profile was derived: the cache keeps only the profile
    src, an = _analyze_path(a.path, known=not a.pure, refresh=a.explain or a.json)
    prof: Profile = an.profile
    saved = None
    if a.save is not None:
        saved = Path(a.save) if a.save else _default_save_path(Path(a.path))
        saved.write_text(prof.to_json() + "\n", encoding="utf-8")  # asked for: failing is an error
    if a.emit:
        from ..export import emit

        out.write(emit(prof, a.emit, tools=tools).rstrip("\n") + "\n")
        return 0
    if a.json:
        # the profile, plus how it was derived (structured evidence, round trip); autoparser.load
        # reads this back as the profile alone
        out.write(json.dumps({**prof.to_dict(), "derivation": an.to_dict()}, indent=2, ensure_ascii=False) + "\n")
        return 0
    _summary(out, src, an)
    if a.explain:
        _explain(out, an)
    if saved is not None:
        out.write(f"  saved        {saved}  (use it: autoparser.load({str(saved)!r}))\n")
    else:
        out.write("  save it      add -o FILE (or --save, to write it beside the model)\n")
    return 0


def _default_save_path(path: Path) -> Path:
    if path.is_dir():
        return path / "autoparser_profile.json"
    return path.with_name(path.name + ".autoparser.json")


def _summary(out: TextIO, src: Any, an: Any) -> None:
    p: Profile = an.profile
    w = out.write
    w(f"{src.path}  ({src.kind}{', ' + src.model_id if src.model_id else ''})\n")
    w(f"  dialect      {p.name or 'no builtin match (a new format)'}\n")
    w(f"  confidence   {p.confidence:.2f}   self-check {an.check.passed}/{an.check.rendered}"
      f"   analysed in {an.seconds * 1000:.0f} ms ({an.renders} renders"
      f"{'; from the profile cache' if getattr(an, 'cached', False) else ''})\n")
    r = p.reasoning
    if r is not None:
        only = (f"   [builtin-only: dialect {p.name!r} adds it; no render shows reasoning]"
                if p.builtin_only("reasoning") else "")
        w(f"  reasoning    {' | '.join(r.open) or '(opened by the prompt)'} ... {' | '.join(r.close)}"
          f"   start: {r.start}{', switchable' if r.switchable else ''}{only}\n")
    else:
        w("  reasoning    none\n")
    if p.prompt_settings:
        by_var: dict[str, list[str]] = {}
        for st in p.prompt_settings:
            by_var.setdefault(st.variable, []).append(f"{json.dumps(st.value)} -> {st.reasoning}")
        w("  settings     " + "; ".join(f"{v}: {', '.join(vals)}" for v, vals in by_var.items())
          + "   (parser(reasoning=profile.reasoning_for(VAR=VALUE)))\n")
    t = p.tools
    if p.messages is not None:
        m = p.messages
        w(f"  messages     {m.channel}CHANNEL{m.message} BODY {' | '.join(m.ends)}; calls are messages to "
          f"{m.recipient_prefix}NAME; reasoning channels: {', '.join(m.reasoning_channels)}"
          f"{'; the prompt opens a header' if m.header_open else ''}\n")
    elif t is None:
        w("  tool calls   none\n")
    else:
        if t.section_open or t.section_close:
            w(f"  section      {' | '.join(t.section_open) or '-'} ... {' | '.join(t.section_close) or '-'}\n")
        if t.call_open or t.call_close:
            w(f"  call         {' | '.join(t.call_open) or '-'} ... {' | '.join(t.call_close) or '-'}\n")
        c = t.codec
        detail = {"json": f"JSON object, name {c.name_keys[0]!r}, arguments {c.args_keys[0]!r}"
                          + (f" (a nested {c.function_key!r} object is accepted too)"
                             if c.function_key and c.kind == "json" else ""),
                  "name_json": f"header {c.header!r} then {'relaxed ' if c.flavor == 'relaxed' else ''}JSON",
                  "tagged": f"header {c.header!r}, parameter {c.param!r}",
                  "pythonic": "Python call list"}[c.kind]
        w(f"  codec        {c.kind}: {detail}\n")
        if c.trailer:
            w(f"  trailer      {c.trailer!r}\n")
    if p.strip:
        w(f"  stripped     {' '.join(p.strip)}\n")
    b = p.builtin
    if b is not None:
        parts = [f"taken {', '.join(b.taken)}" if b.taken else "",
                 f"added {', '.join(b.added)} (builtin-only: no render shows it)" if b.added else "",
                 f"not taken {', '.join(b.declined)} (the renders show otherwise)" if b.declined else ""]
        w(f"  builtin      {b.dialect}: {'; '.join(x for x in parts if x) or 'nothing taken'}\n")
    if p.special_markers:
        w(f"  tokens       {' '.join(p.special_markers)}  (single special tokens of the vocabulary:"
          " token mode matches them only as tokens)\n")
    if p.field_confidence:
        w("  per field    " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(p.field_confidence.items())) + "\n")
    w("  evidence\n")
    for e in p.evidence:
        w(f"    - {e}\n")


def _explain(out: TextIO, an: Any) -> None:
    out.write("  rules (field, rule, effect on its confidence, the render text it read)\n")
    for e in an.evidence:
        effect = f"{e.effect} {e.confidence:.2f}" if e.confidence is not None else e.effect
        out.write(f"    {e.field or '-':22} {e.rule or '(no rule)':34} {effect:9} {e.snippet[:80]!r}\n")
    out.write("  probes (what the template wrote for each assistant turn)\n")
    for p in an.findings.probes:
        body = (p.error and f"ERROR {p.error}") or repr(p.span)
        out.write(f"    {p.label:38} {body[:200]}\n")
        if p.prompt_tail:
            out.write(f"    {'':38} (generation prompt adds {p.prompt_tail[:80]!r})\n")


@command("autoparse scan")
def main_scan(argv: list[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    ap = argparse.ArgumentParser(prog="autoparse scan", description="Analyse many models or templates.")
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    ap.add_argument("--pure", action="store_true")
    ap.add_argument("--engine", choices=["local", "ray"], default="local",
                    help="ray: analyse in parallel on Ray (a local cluster, or --address)")
    ap.add_argument("--address", help="Ray cluster address for --engine ray")
    a = ap.parse_args(argv)
    files: list[Path] = []
    for raw in a.paths:
        p = Path(raw)
        if not p.exists():
            raise SourceError(raw, "no such file or directory")
        if p.is_dir() and not _is_model_dir(p):
            found = sorted(x for x in p.rglob("*") if x.suffix in (".jinja", ".gguf") or _is_model_dir(x))
            if not found:
                raise SourceError(raw, "no .jinja or .gguf file and no model directory inside")
            files += found
        else:
            files.append(p)
    announce_cache("autoparse scan")
    rows = []
    t0 = time.perf_counter()
    if a.engine == "ray":
        from ..batch_cli import scan_paths_ray

        rows = scan_paths_ray([str(f) for f in files], functools.partial(_scan_row, known=not a.pure),
                              address=a.address)
        if a.json:
            out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    for i, f in enumerate(files if a.engine == "local" else [], 1):
        if not a.json and sys.stderr.isatty():
            sys.stderr.write(f"\r[{i}/{len(files)}] {fit_path(str(f), 60):60}")
        row = _scan_row(str(f), known=not a.pure)
        rows.append(row)
        if a.json:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    if not a.json:
        if sys.stderr.isatty():
            sys.stderr.write("\n")
        out.write(f"{'path':60} {'dialect':14} {'conf':>5} {'tools':9} {'reasoning':12} check\n")
        for r in rows:
            if "error" in r:
                out.write(f"{fit_path(r['path'], 60):60} ERROR {r['error'][:200]}\n")
                continue
            reasoning = r["reasoning"] or "-"
            if "reasoning" in r["builtin_only"]:
                reasoning = f"({reasoning})"  # the builtin's markers, no render shows them
            out.write(f"{fit_path(r['path'], 60):60} {r['dialect'] or '-':14} {r['confidence']:5.2f} "
                      f"{r['tools'] or '-':9} {reasoning:12} {r['self_check']}\n")
        ok = [r for r in rows if "error" not in r]
        out.write(f"\n{len(rows)} analysed in {time.perf_counter() - t0:.1f} s: {len(ok)} derived, "
                  f"{sum(1 for r in ok if r['dialect'])} match a builtin dialect, "
                  f"{sum(1 for r in ok if r['confidence'] >= 0.9)} with confidence >= 0.9, "
                  f"{len(rows) - len(ok)} errors\n")
        if any("reasoning" in r.get("builtin_only", ()) for r in ok):
            out.write("(reasoning in brackets): builtin-only, added by the matched dialect; no render of the "
                      "template shows it\n")
    return 0


def fit_path(path: str, width: int) -> str:
    """``path`` in at most ``width`` characters: whole directories are dropped from the left (cut at
    a separator, shown as ``…/``), the file name is kept; a name longer than the column keeps its
    start and its end (the extension) around a ``…``."""
    if len(path) <= width:
        return path
    sep = "/" if "/" in path else "\\"
    parts = path.split(sep)
    name = parts[-1]
    if len(name) + 2 > width:
        head = (width - 1) // 2
        return name[:head] + "…" + name[len(name) - (width - 1 - head):]
    kept = [name]
    for part in reversed(parts[:-1]):
        if len(part) + 1 + sum(len(k) + 1 for k in kept) + 1 > width:
            break
        kept.insert(0, part)
    return "…" + sep + sep.join(kept)


def _scan_row(path: str, known: bool = True) -> dict[str, Any]:
    """One line of ``autoparse scan`` (a module-level function, so Ray workers can run it)."""
    try:
        _src, an = _analyze_path(path, known=known)
        p = an.profile
        return {"path": path, "dialect": p.name, "confidence": p.confidence,
                "tools": p.tools.codec.kind if p.tools else None,
                "reasoning": "/".join(p.reasoning.close) if p.reasoning else None,
                "builtin_only": list(p.builtin.added) if p.builtin else [],
                "builtin_declined": sorted(p.builtin.declined) if p.builtin else [],
                "self_check": f"{an.check.passed}/{an.check.rendered}", "ms": round(an.seconds * 1000),
                "cached": bool(getattr(an, "cached", False))}
    except AutoparserError as e:
        return {"path": path, "error": str(e)}  # the whole cause: scan --json keeps it


def _is_model_dir(p: Path) -> bool:
    return p.is_dir() and any((p / n).exists() for n in ("tokenizer_config.json", "chat_template.jinja",
                                                          "chat_template.json", "openvino_tokenizer.xml"))


@command("autoparse resolve")
def main_resolve(argv: list[str], out: TextIO | None = None) -> int:
    """Exit status 0 when every part of the profile has a host parser, 3 when some part is refused
    (autoparser's parser is needed for it), and that of :data:`autoparser.cli.EXIT_CODES` on an error."""
    from ..export.hosts import HOSTS
    from ..export.resolve import resolve

    out = out or sys.stdout
    ap = argparse.ArgumentParser(prog="autoparse resolve", description="``autoparse resolve --for HOST MODEL "
                                 "[--json]``: the host's own parsers for a model, or why none.")
    ap.add_argument("--for", dest="host", required=True, choices=HOSTS, help="the host that will load the model")
    ap.add_argument("model", help="HF model dir, tokenizer_config.json, .jinja, .gguf, OpenVINO IR or profile")
    ap.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    args = ap.parse_args(argv)
    res = resolve(args.model, args.host)
    if args.json:
        out.write(json.dumps(res.to_dict(), ensure_ascii=False, indent=2) + "\n")
    else:
        _human(res, out)
    return 0 if res.complete else 3


def _human(res: Resolution, out: TextIO) -> None:
    w = out.write
    w(f"{res.host} {res.host_version}: {res.source}\n")
    w(f"profile      {res.profile.name or 'derived'}, confidence {res.confidence:.2f}\n")
    for label, b in (("tool calls", res.tools), ("reasoning", res.reasoning)):
        if b is None:
            continue
        w(f"{label:12} {b.parser if b.parser else '-'}: {b.reason}\n")
        for c in b.caveats:
            w(f"{'':12} caveat: {c}\n")
    if res.flags:
        w(f"flags        {' '.join(res.flags)}\n")
    for key, value in res.settings.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        w(f"{key:12} {text}\n")
    trip = res.return_trip
    w("return trip  " + ", ".join(f"{k}={trip[k]}" for k in ("arguments", "reasoning_field", "reasoning_in_history",
                                                             "prompt_opens_reasoning", "empty_content", "call_ids"))
      + "\n")
    if trip["special_markers"]:
        w(f"{'':12} special tokens: {' '.join(trip['special_markers'])}\n")
    w(f"{'':12} message back into the history: {trip['message']}\n")
