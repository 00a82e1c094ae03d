"""The ``autoparse`` command line.

Sub-commands are dispatched by hand (not argparse sub-parsers) because the main form is
``autoparse PATH``: a model directory, template or GGUF file to analyse. Heavy modules are
imported inside the commands that need them, so ``autoparse --help`` stays instant.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from .errors import AutoparserError

__all__ = ["main"]

_USAGE = """\
usage: autoparse PATH [--json] [--explain] [--emit FORMAT]   analyse a model dir / template / GGUF
       autoparse parse --profile NAME|FILE [--tools FILE] [--stream] [--no-stream-arguments]
                       [--reasoning MODE]
                                                           parse stdin into an OpenAI message (or events)
       autoparse dialects                                  list the builtin dialects
       autoparse scan PATH... [--engine ray]               analyse many models or templates
       autoparse batch IN -o OUT --profile-column COL      parse a JSONL/Parquet file of completions
       autoparse verify [PATH] [--dialect NAME ...]        check a profile against live OpenVINO output
       autoparse resolve --for HOST MODEL [--json]         which of HOST's own parsers fits MODEL, or none and why
       autoparse demo                                      show the parser at work on built-in examples
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(_USAGE)
        return 0 if args else 2
    cmd, rest = args[0], args[1:]
    try:
        if cmd == "parse":
            return _cmd_parse(rest, sys.stdin, sys.stdout)
        if cmd == "dialects":
            return _cmd_dialects(rest, sys.stdout)
        if cmd == "demo":
            from .demo import run_demo

            return run_demo(rest, sys.stdout)
        if cmd in ("scan", "verify", "batch", "resolve"):
            return _delegate(cmd, rest)
        return _delegate("analyze", args)
    except AutoparserError as e:
        sys.stderr.write(f"autoparse: error: {e}\n")
        return 1
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0


def _delegate(cmd: str, rest: list[str]) -> int:
    """Commands implemented by optional parts of the package."""
    import importlib

    modules = {"analyze": "autoparser.derive.cli", "scan": "autoparser.derive.cli",
               "verify": "autoparser.live.verify", "batch": "autoparser.batch_cli",
               "resolve": "autoparser.export.resolve_cli"}
    try:
        mod = importlib.import_module(modules[cmd])
    except ModuleNotFoundError as e:
        sys.stderr.write(f"autoparse: {cmd} is not available in this installation ({e.name} missing)\n")
        return 2
    result: int = getattr(mod, "main_" + cmd)(rest)
    return result


def _load_profile(spec: str) -> Any:
    from .dialects import get_profile
    from .profile import Profile

    if spec.endswith(".json"):
        try:
            with open(spec, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise AutoparserError(f"cannot read profile file {spec}: {e.strerror}") from None
        return Profile.from_json(text)
    return get_profile(spec)


def _cmd_parse(argv: list[str], stdin: TextIO, stdout: TextIO) -> int:
    ap = argparse.ArgumentParser(prog="autoparse parse",
                                 description="Parse raw model output from stdin.")
    ap.add_argument("--profile", required=True, help="dialect name or profile .json file")
    ap.add_argument("--tools", help="JSON file with the request's tools (OpenAI format)")
    ap.add_argument("--reasoning", choices=["prefilled", "auto", "explicit", "off"])
    ap.add_argument("--strict", action="store_true", help="raise on anything lenient mode repairs")
    ap.add_argument("--stream", action="store_true",
                    help="print one event per line as JSON while reading stdin (argument deltas "
                         "included, merged per chunk read)")
    ap.add_argument("--no-stream-arguments", action="store_true",
                    help="announce a tool call only once it is complete (fail-closed)")
    a = ap.parse_args(argv)
    from .openai import message_from_result

    prof = _load_profile(a.profile)
    tools = None
    if a.tools:
        try:
            with open(a.tools, encoding="utf-8") as f:
                tools = json.load(f)
        except (OSError, ValueError) as e:
            raise AutoparserError(f"cannot read tools file {a.tools}: {e}") from None
    p = prof.parser(tools=tools, reasoning=a.reasoning, policy="strict" if a.strict else None,
                    stream_arguments=not a.no_stream_arguments)
    if a.stream:
        from .events import coalesce

        for chunk in _stdin_chunks(stdin):
            for ev in coalesce(p.feed(chunk)):
                stdout.write(_event_json(ev) + "\n")
                stdout.flush()
        for ev in coalesce(p.close()):
            stdout.write(_event_json(ev) + "\n")
        return 0
    p.feed(stdin.read())
    p.close()
    res = p.result()
    out = message_from_result(res)
    if res.issues:
        out = {"message": out, "issues": [i.to_dict() for i in res.issues]}
    stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
    return 0


def _stdin_chunks(stdin: TextIO) -> Iterator[str]:
    """What the pipe has, as soon as it has it (a live model's output arrives in small pieces)."""
    import codecs
    import os

    try:
        fd = stdin.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests, wrappers)
        yield from iter(lambda: stdin.read(256), "")
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        data = os.read(fd, 4096)
        text = decoder.decode(data, final=not data)
        if text:
            yield text
        if not data:
            return


def _event_json(ev: object) -> str:
    import dataclasses

    d = {"event": type(ev).__name__}
    d.update(dataclasses.asdict(ev))  # type: ignore[call-overload]
    return json.dumps(d, ensure_ascii=False)


def _cmd_dialects(argv: list[str], stdout: TextIO) -> int:
    from .dialects import dialects

    as_json = "--json" in argv
    infos = dialects()
    if as_json:
        stdout.write(json.dumps([{"name": d.name, "families": list(d.families),
                                  "aliases": list(d.aliases), "description": d.description}
                                 for d in infos], indent=2) + "\n")
        return 0
    for d in infos:
        alias = f" (aliases: {', '.join(d.aliases)})" if d.aliases else ""
        stdout.write(f"{d.name:14} {', '.join(d.families)}{alias}\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
