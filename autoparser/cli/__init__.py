"""The ``autoparse`` command line: the table of sub-commands, and how every one of them fails.

This package holds the command line; the library below it (``derive/``, the engine, the loaders)
never imports it. ``analyze.py`` has ``autoparse PATH`` and ``autoparse scan``.

Rules:

- The sub-commands are the rows of :data:`COMMANDS` (name, ``module:function``, usage line); a new
  one is a new row. Modules are imported only when their command runs, so ``autoparse --help``
  and ``--version`` stay instant and never import an optional dependency. The main form,
  ``autoparse PATH``, is :data:`ANALYZE`: any first argument that is not a command name.
- Every command entry point is wrapped by :func:`command`: it returns an exit status and never
  lets a traceback reach the user. ``0`` success; ``2`` the command cannot start as given (a bad
  option, a missing or malformed input file, an unknown dialect, a missing column, an optional
  dependency that is not installed); ``1`` it started and failed (a template that cannot be
  analysed, a strict parse that met malformed output, a live check that did not pass, an output
  that cannot be written); ``130`` interrupted. The exit status of an error is decided by its type
  in :data:`EXIT_CODES`, in one place. Messages are ``autoparse CMD: error: ...`` and name the file
  or argument at fault. ``--debug`` (anywhere on the command line) shows the traceback instead.
"""

from __future__ import annotations

import argparse
import contextvars
import functools
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from ..errors import (
    AutoparserError,
    OptionError,
    ProfileError,
    SourceError,
    UnknownDialectError,
    UsageError,
)

if TYPE_CHECKING:
    from ..profile import Profile

__all__ = ["ANALYZE", "COMMANDS", "EXIT_CODES", "Command", "announce_cache", "command", "exit_code", "load_profile",
           "main", "main_dialects", "main_parse", "version_report"]


@dataclass(frozen=True)
class Command:
    """One sub-command: ``target`` is ``"module:function"``, a ``(argv: list[str]) -> int``
    wrapped by :func:`command`."""

    name: str
    target: str
    usage: str
    summary: str


ANALYZE = Command("", "autoparser.cli.analyze:main_analyze", "PATH [--json] [--explain] [--emit FORMAT] [-o FILE]",
                  "derive a model's profile from its chat template (model dir, .jinja, .gguf, OpenVINO IR)")

COMMANDS: tuple[Command, ...] = (
    Command("parse", "autoparser.cli:main_parse",
            "parse --profile SPEC [--tools FILE] [--stream] [--reasoning MODE] [--strict]",
            "parse raw model output from stdin into an OpenAI message (or events)"),
    Command("dialects", "autoparser.cli:main_dialects", "dialects [--json]", "list the builtin dialects"),
    Command("scan", "autoparser.cli.analyze:main_scan", "scan PATH... [--json] [--engine ray]",
            "analyse many models or templates"),
    Command("batch", "autoparser.batch_cli:main_batch",
            "batch IN -o OUT (--profile SPEC | --profile-column COL)",
            "parse a JSONL or Parquet file of completions"),
    Command("verify", "autoparser.live.verify:main_verify", "verify [PATH] [--dialect NAME ... | --all]",
            "check a profile against live OpenVINO GenAI output"),
    Command("resolve", "autoparser.cli.analyze:main_resolve", "resolve --for HOST MODEL [--json]",
            "which of a host's own parsers fits a model, with what flags, or none and why"),
    Command("demo", "autoparser.demo:main_demo", "demo [--offline]",
            "show the parser at work on a live model (or bundled examples)"),
    Command("serve", "autoparser.serve.cli:main_serve", "serve [MODEL] [--host H] [--port P] [--profile SPEC]",
            "serve an OpenAI-compatible endpoint over OpenVINO GenAI"),
)

#: the exit status of an error, by type (the first matching row wins)
EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (UsageError, 2),
    (SourceError, 2),
    (ProfileError, 2),
    (UnknownDialectError, 2),
    (OptionError, 2),
    (ModuleNotFoundError, 2),
    (AutoparserError, 1),
    (OSError, 1),
)

#: the extra that brings an optional dependency, for the message when it is missing
_EXTRAS = {"openvino_genai": "live", "openvino": "live", "gguf": "gguf", "pyarrow": "batch", "ray": "ray",
           "transformers": "test", "llguidance": "test"}

_DEBUG: contextvars.ContextVar[bool] = contextvars.ContextVar("autoparse_debug", default=False)


def _usage() -> str:
    rows = [(f"autoparse {ANALYZE.usage}", ANALYZE.summary)]
    rows += [(f"autoparse {c.usage}", c.summary) for c in COMMANDS]
    lines = ["usage: autoparse [--version] [--debug] COMMAND ...", ""]
    for use, summary in rows:
        lines += [f"  {use}", f"      {summary}"]
    from ..specs import SPEC_HELP

    lines += ["", f"SPEC (a profile): {SPEC_HELP}.", "`autoparse COMMAND --help` shows a command's options.",
              "Exit status: 0 done, 2 bad command line or input files, 1 failed, 130 interrupted.", ""]
    return "\n".join(lines)


def _ours(exc: BaseException) -> bool:
    """A module of this package that does not import is a bug, not a missing optional dependency."""
    return isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "autoparser"


def exit_code(exc: BaseException) -> int:
    if _ours(exc):
        return 1
    for kind, code in EXIT_CODES:
        if isinstance(exc, kind):
            return code
    return 1


def _message(exc: BaseException) -> str:
    if isinstance(exc, ModuleNotFoundError) and not _ours(exc):
        name = (exc.name or "?").split(".")[0]
        extra = _EXTRAS.get(name)
        hint = f": pip install 'autoparser[{extra}]'" if extra else ""
        return f"this needs the '{name}' package, which is not installed{hint}"
    if isinstance(exc, OSError) and not isinstance(exc, AutoparserError):
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return f"{where}{exc.strerror or exc}"
    if isinstance(exc, AutoparserError):
        return str(exc)
    return (f"internal error: {type(exc).__name__}: {exc}\n(this is a bug in autoparser; "
            "rerun with --debug for the traceback and report it)")


def command(prog: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Wrap a command entry point: exceptions become a one-line message and an exit status
    (:data:`EXIT_CODES`), ``SystemExit`` from argparse becomes its status, a traceback is shown
    only with ``--debug``."""

    def wrap(fn: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(fn)
        def guarded(*args: object, **kwargs: object) -> int:
            try:
                return fn(*args, **kwargs)
            except SystemExit as exc:  # argparse: --help (0) or a usage error (2), already printed
                return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except KeyboardInterrupt:
                sys.stderr.write(f"{prog}: interrupted\n")
                return 130
            except BrokenPipeError:
                raise  # the reader went away: main() closes quietly
            except Exception as exc:
                if _DEBUG.get():
                    raise
                sys.stderr.write(f"{prog}: error: {_message(exc)}\n")
                return exit_code(exc)

        return guarded

    return wrap


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    token = _DEBUG.set(debug)
    try:
        return _dispatch(args)
    except BrokenPipeError:  # e.g. piped into head: stop quietly, without Python's own complaint
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0  # the reader has what it wanted
    finally:
        _DEBUG.reset(token)


@command("autoparse")
def _dispatch(args: list[str]) -> int:
    if not args or args[0] in ("-h", "--help", "help"):
        (sys.stdout if args else sys.stderr).write(_usage())
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        sys.stdout.write(version_report())
        return 0
    by_name = {c.name: c for c in COMMANDS}
    cmd = by_name.get(args[0], ANALYZE)
    rest = args[1:] if cmd is not ANALYZE else args
    import importlib

    module, _, function = cmd.target.partition(":")
    entry: Callable[[list[str]], int] = getattr(importlib.import_module(module), function)
    return entry(rest)


def version_report() -> str:
    """``autoparse --version``: this package, the optional engines found, where the cache is."""
    import platform
    from importlib import metadata
    from pathlib import Path

    from .. import __file__ as package_file
    from .. import __version__
    from ..cache import cache_directory

    lines = [f"autoparser {__version__} (python {platform.python_version()}, {Path(package_file).parent})",
             "optional engines:"]
    for dist in ("jinja2", "openvino-genai", "transformers", "llguidance", "ray", "gguf", "pyarrow"):
        try:
            found = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found = "not installed"
        lines.append(f"  {dist:15} {found}")
    directory = cache_directory()
    lines.append(f"profile cache: {directory} (AUTOPARSER_CACHE_DIR=off turns it off)" if directory
                 else "profile cache: off (AUTOPARSER_CACHE_DIR)")
    return "\n".join(lines) + "\n"


def announce_cache(prog: str = "autoparse") -> None:
    """Say on stderr, before a command first writes the profile cache in its default place, where
    it goes and how to turn it off (nothing when the directory exists already, or when
    ``AUTOPARSER_CACHE_DIR`` chose the place or turned the cache off)."""
    import os

    from ..cache import CACHE_ENV, cache_directory

    directory = cache_directory()
    if directory is not None and CACHE_ENV not in os.environ and not directory.exists():
        sys.stderr.write(f"{prog}: keeping derived profiles in {directory} to skip deriving them again "
                         "(AUTOPARSER_CACHE_DIR=off turns this off)\n")


def load_profile(spec: str, *, known: bool, prog: str) -> Profile:
    """The profile ``--profile SPEC`` names; a template is derived through the profile cache, which
    :func:`announce_cache` says where it is."""
    from ..cache import default_cache
    from ..specs import load_spec, source_of

    derived = source_of(spec)[0].derived
    if derived:
        announce_cache(prog)
    return load_spec(spec, known=known, cache=default_cache() if derived else None)


# -- parse ---------------------------------------------------------------------------------------

@command("autoparse parse")
def main_parse(argv: list[str], stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    from ..specs import SPEC_HELP

    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    ap = argparse.ArgumentParser(prog="autoparse parse",
                                 description="Parse raw model output from stdin into an OpenAI message "
                                             "(or, with --stream, one event per line).")
    ap.add_argument("--profile", required=True, metavar="SPEC", help=SPEC_HELP)
    ap.add_argument("--tools", metavar="FILE",
                    help='JSON file with the request\'s tools: a list, or a request body with a "tools" list')
    ap.add_argument("--reasoning", choices=["prefilled", "auto", "explicit", "off"])
    ap.add_argument("--strict", action="store_true", help="fail on anything lenient mode repairs")
    ap.add_argument("--pure", action="store_true", help="derive a template's profile without builtin rules")
    ap.add_argument("--stream", action="store_true",
                    help="print one event per line as JSON while reading stdin (argument deltas "
                         "included, merged per chunk read)")
    ap.add_argument("--no-stream-arguments", action="store_true",
                    help="announce a tool call only once it is complete (fail-closed)")
    a = ap.parse_args(argv)
    from ..openai import message_from_result
    from ..toolsfile import read_tools_file

    tools = read_tools_file(a.tools) if a.tools else None
    prof = load_profile(a.profile, known=not a.pure, prog="autoparse parse")
    p = prof.parser(tools=tools, reasoning=a.reasoning, policy="strict" if a.strict else None,
                    stream_arguments=not a.no_stream_arguments)
    if a.stream:
        from ..events import coalesce

        for chunk in _stdin_chunks(stdin):
            for ev in coalesce(p.feed(chunk)):
                stdout.write(_event_json(ev) + "\n")
                stdout.flush()
        for ev in coalesce(p.close()):
            stdout.write(_event_json(ev) + "\n")
        return 0
    p.feed("".join(_stdin_chunks(stdin)))  # bytes that are not UTF-8 become U+FFFD, as when streaming
    p.close()
    res = p.result()
    out = message_from_result(res)
    if res.issues:
        out = {"message": out, "issues": [i.to_dict() for i in res.issues]}
    stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
    return 0


def _stdin_chunks(stdin: TextIO) -> Iterator[str]:
    """What the pipe has, as soon as it has it (a live model's output arrives in small pieces),
    decoded as UTF-8 whatever the locale says."""
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


# -- dialects ------------------------------------------------------------------------------------

@command("autoparse dialects")
def main_dialects(argv: list[str], stdout: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    ap = argparse.ArgumentParser(prog="autoparse dialects", description="List the builtin dialects.")
    ap.add_argument("--json", action="store_true", help="one JSON list (name, families, aliases, description)")
    a = ap.parse_args(argv)
    from ..dialects import dialects

    infos = dialects()
    if a.json:
        stdout.write(json.dumps([{"name": d.name, "families": list(d.families),
                                  "aliases": list(d.aliases), "description": d.description}
                                 for d in infos], indent=2) + "\n")
        return 0
    for d in infos:
        alias = f" (aliases: {', '.join(d.aliases)})" if d.aliases else ""
        stdout.write(f"{d.name:14} {', '.join(d.families)}{alias}\n")
    return 0
