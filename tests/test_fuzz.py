"""The differential chunk fuzzer in the default run, and every soup it ever broke on, pinned.

* ``test_pinned_soups_parse_alike_at_every_split``: each soup of ``fixtures/fuzz/regressions.json``
  (failures the fuzzers found once, minimised, plus the examples of issue 17) fed whole, per
  character and cut once at every point gives the same events, result and issues, and never raises.
* ``test_fresh_soups_parse_alike_at_every_chunking``: new soups for every builtin dialect and every
  profile derived from ``fixtures/templates`` (a fresh seed per run, printed with any failure;
  ``AUTOPARSER_FUZZ_SEED=N AUTOPARSER_FUZZ_SOUPS=K`` replays it; ``AUTOPARSER_FUZZ_SECONDS`` sizes
  the run, default 35).
  ``scripts/fuzz.py --minutes N`` runs the same fuzzer for long runs.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import soups

import autoparser

REGRESSIONS = soups.load_regressions()


@pytest.fixture(scope="session")
def derived(request: pytest.FixtureRequest) -> dict[str, soups.Target]:
    """The profiles derived from the fixture templates, once per session (and cached on disk
    between sessions by pytest's cache, keyed by the templates' and the package's contents)."""
    cache = getattr(request.config, "cache", None)  # (None with -p no:cacheprovider)
    where = Path(cache.mkdir("autoparser-fuzz")) if cache is not None else None
    return {t.name: t for t in soups.template_targets(where)}


def _profile(name: str, derived: dict[str, soups.Target]) -> object:
    return derived[name].profile if name.startswith("template:") else autoparser.get_profile(name)


@pytest.mark.parametrize("target,text,opts", REGRESSIONS,
                         ids=[f"{target}:{n}" for n, (target, _, _) in enumerate(REGRESSIONS)])
def test_pinned_soups_parse_alike_at_every_split(target: str, text: str, opts: soups.Options,
                                                  derived: dict[str, soups.Target]) -> None:
    profile = _profile(target, derived)
    if getattr(profile, "reasoning", None) is None and opts.reasoning in ("auto", "prefilled"):
        # (a derived profile that no longer has reasoning markers: the soup still runs)
        opts = dataclasses.replace(opts, reasoning=None)
    why = soups.failure(profile, text, opts, soups.every_split(text))
    assert why is None, f"[{target}] {text!r} {opts}: {why}"


def test_fresh_soups_parse_alike_at_every_chunking(derived: dict[str, soups.Target]) -> None:
    seed = soups.seed_from_env()
    seconds = float(os.environ.get("AUTOPARSER_FUZZ_SECONDS", "35"))
    targets = soups.builtin_targets() + list(derived.values())
    count, found = soups.fuzz(targets, seed, seconds, limit=3, count_limit=soups.soups_from_env())
    print(f"fuzz seed {seed}: {count} soups over {len(targets)} profiles")
    assert not found, "\n".join(hit.report(seed) for hit in found) + f"\n({count} soups, seed {seed})"
    assert count > 10 * len(targets), f"only {count} soups ran in {seconds} s (seed {seed})"
