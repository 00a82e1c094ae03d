"""Long runs of the differential chunk fuzzer (``tests/soups.py``; the default suite runs it briefly).

    python scripts/fuzz.py --minutes 30 [--seed N] [--target NAME] [--builtin-only] [--pin]

Every builtin dialect and every profile derived from ``fixtures/templates/*.jinja`` get marker
soups fed whole, per character and at random splits; prints each failure (minimised, with the
line to pin it in ``fixtures/fuzz/regressions.json`` and the seed that replays it) and the number
of soups per minute. Exits 1 if anything failed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def main(argv: list[str] | None = None) -> int:
    import soups

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=None, help=f"default: {soups.SEED_ENV} or a fresh one")
    ap.add_argument("--soups", type=int, default=None, help="run exactly this many soups (a replay), not minutes")
    ap.add_argument("--target", action="append", default=None,
                    help="a dialect name or template:FILE.jinja (repeatable); default: all")
    ap.add_argument("--builtin-only", action="store_true", help="skip the profiles derived from templates")
    ap.add_argument("--limit", type=int, default=10, help="stop after this many failures")
    ap.add_argument("--pin", action="store_true", help="append the failures to fixtures/fuzz/regressions.json")
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else soups.seed_from_env()
    targets = soups.builtin_targets()
    if not a.builtin_only:
        targets += soups.template_targets(Path(tempfile.gettempdir()) / "autoparser-fuzz")
    if a.target:
        targets = [t for t in targets if t.name in a.target]
        if not targets:
            ap.error(f"no target named {a.target}")
    start = time.monotonic()
    count, found = soups.fuzz(targets, seed, a.minutes * 60, limit=a.limit, count_limit=a.soups)
    minutes = (time.monotonic() - start) / 60
    for hit in found:
        print(hit.report(seed))
    if a.pin and found:
        print(f"pinned {soups.pin(found, seed)} new vector(s) in {soups.REGRESSIONS}")
    print(f"fuzz seed {seed}: {count - len(found)}/{count} soups clean over {len(targets)} profiles in "
          f"{minutes:.1f} min ({count / max(minutes, 1e-9):,.0f} soups/min)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
