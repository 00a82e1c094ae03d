"""An on-disk cache of derived profiles, keyed by what the derivation reads.

Why: a million model repositories share a few thousand chat templates, and analysing one costs
tens of renders. The derivation is a pure function of the template text, the BOS/EOS tokens, the
special tokens, ``known`` and the code that derives, so its result can be kept and shared by
``autoparse PATH``, ``autoparse scan`` and ``autoparser.batch``.

Rules:

- The key is the template's sha256 plus a digest of the other inputs (BOS, EOS, special tokens,
  ``known``); the file is ``<dir>/<build>/<sha[:2]>/<sha>-<inputs>.json``.
- ``<build>`` is the autoparser version plus a digest of the package's own source files, so a new
  release, or an edited checkout, never reads another build's profiles (they stay on disk until
  the directory is removed).
- Writers never leave a partial file: an entry is written to a temporary file in the same
  directory and renamed over the target (``os.replace`` is atomic on POSIX and Windows), so
  concurrent writers of the same key leave one complete entry. A reader that meets anything
  unreadable treats it as a miss.
- Nothing here raises for cache trouble (read-only home, full disk): the cache is an
  optimisation, and the analysis result is returned either way.

The directory is ``$AUTOPARSER_CACHE_DIR`` if set (``off`` or the empty string disables the
cache), else ``$XDG_CACHE_HOME/autoparser/profiles``, else ``~/.cache/autoparser/profiles``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .profile import Profile

__all__ = ["CACHE_ENV", "CachedAnalysis", "CheckSummary", "ProfileCache", "analyze_source", "build_id",
           "cache_directory", "default_cache"]

CACHE_ENV = "AUTOPARSER_CACHE_DIR"


@lru_cache(maxsize=1)
def build_id() -> str:
    """The autoparser version and a digest of the package's source (computed once per process)."""
    from . import __version__

    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(root)).encode("utf-8") + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return f"{__version__}-{digest.hexdigest()[:16]}"


def cache_directory() -> Path | None:
    """Where the environment puts the cache (``None``: the cache is off); nothing is created."""
    env = os.environ.get(CACHE_ENV)
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0", "none") else Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "autoparser" / "profiles"


@dataclass(frozen=True)
class CheckSummary:
    """The self-check counts a cached analysis keeps (what ``autoparse PATH`` prints)."""

    passed: int
    rendered: int


@dataclass(frozen=True)
class CachedAnalysis:
    """What an analysis produced, as the cache keeps it; ``findings`` is ``None`` (not kept)."""

    profile: Profile
    check: CheckSummary
    seconds: float
    renders: int
    cached: bool
    findings: Any = None


class ProfileCache:
    """Derived profiles on disk; ``directory=None`` is a cache that keeps nothing."""

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(template: str, bos_token: str | None, eos_token: str | None, *, known: bool = True,
            special_tokens: tuple[str, ...] = (), model_id: str | None = None) -> str:
        """``<template sha256>-<digest of the other inputs>`` (``model_id`` can name the dialect
        with ``known=True``, so it is an input too)."""
        sha = hashlib.sha256(template.encode("utf-8")).hexdigest()
        rest = json.dumps([bos_token, eos_token, bool(known), sorted(set(special_tokens)),
                           model_id if known else None], ensure_ascii=False)
        return f"{sha}-{hashlib.sha256(rest.encode('utf-8')).hexdigest()[:16]}"

    def path_for(self, key: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / build_id() / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedAnalysis | None:
        path = self.path_for(key)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("build") != build_id() or data.get("key") != key:
                raise ValueError("entry of another build or key")
            entry = CachedAnalysis(Profile.from_dict(data["profile"]),
                                   CheckSummary(int(data["check"]["passed"]), int(data["check"]["rendered"])),
                                   float(data["seconds"]), int(data["renders"]), cached=True)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):  # absent, partial or foreign: a miss
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def put(self, key: str, analysis: Any) -> bool:
        """Store an analysis (anything with ``profile``, ``check``, ``seconds``, ``renders``)."""
        path = self.path_for(key)
        if path is None:
            return False
        data = {"build": build_id(), "key": key, "written": time.time(),
                "profile": analysis.profile.to_dict(),
                "check": {"passed": analysis.check.passed, "rendered": analysis.check.rendered},
                "seconds": analysis.seconds, "renders": analysis.renders}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(data, f, ensure_ascii=False)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:  # a read-only or full cache costs speed, never the result
            return False
        return True


def default_cache() -> ProfileCache:
    """The cache in the directory the environment selects (see the module docstring)."""
    return ProfileCache(cache_directory())


def analyze_source(src: Any, *, known: bool = True, cache: ProfileCache | None = None,
                   refresh: bool = False) -> Any:
    """Analyse a :class:`~autoparser.templates.sources.TemplateSource`, through the cache.

    Returns the full ``Analysis`` on a miss (or with ``refresh``, which analyses and rewrites the
    entry) and a :class:`CachedAnalysis` on a hit; both have ``profile``, ``check``, ``seconds``,
    ``renders`` and ``findings``.
    """
    from .derive import analyze_detailed

    cache = default_cache() if cache is None else cache
    template = src.template_for(tools=True)
    key = ProfileCache.key(template, src.bos_token, src.eos_token, known=known,
                           special_tokens=tuple(src.special_tokens), model_id=src.model_id)
    if not refresh:
        hit = cache.get(key)
        if hit is not None:
            return hit
    from .tokens import with_special_markers

    analysis = analyze_detailed(template, src.bos_token, src.eos_token, known=known,
                                special_tokens=src.special_tokens, model_id=src.model_id)
    analysis.profile = with_special_markers(analysis.profile, src.special_tokens, src.kind)
    cache.put(key, analysis)
    return analysis
