"""``autoparse resolve --for HOST MODEL [--json]``: the host's own parsers for a model, or why none.

Prints the flags (or settings) to bind, one line per part with the reason, the return-trip facts
and the profile's confidence; ``--json`` prints :meth:`Resolution.to_dict`. Exit status 0 when every
part of the profile has a host parser, 3 when some part is refused (autoparser's parser is needed
for it), and the status of ``autoparser.cli.EXIT_CODES`` on an error (a bad path, an unknown host).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from ..cli import command
from .hosts import HOSTS
from .resolve import Resolution, resolve

__all__ = ["main_resolve"]


@command("autoparse resolve")
def main_resolve(argv: list[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    ap = argparse.ArgumentParser(prog="autoparse resolve", description=__doc__.splitlines()[0] if __doc__ else "")
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
