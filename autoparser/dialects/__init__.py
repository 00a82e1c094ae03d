"""The builtin dialects: profiles shipped as data files, looked up by name or alias.

The registry is the ``data/`` folder itself: one ``<name>.json`` profile per dialect and
``aliases.json`` mapping names users know (``qwen3``, ``gpt-oss``, ``llama4``) to dialects.
Files are read on first use and cached; nothing happens at import time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from ..errors import ProfileError, UnknownDialectError
from ..profile import Profile

__all__ = ["DialectInfo", "dialects", "get_profile", "resolve_name"]


@dataclass(frozen=True)
class DialectInfo:
    name: str
    families: tuple[str, ...]
    description: str
    aliases: tuple[str, ...]


def _data_dir() -> Any:
    return resources.files(__package__).joinpath("data")


@lru_cache(maxsize=1)
def _aliases() -> dict[str, str]:
    raw = _data_dir().joinpath("aliases.json").read_text(encoding="utf-8")
    data = json.loads(raw)
    return {str(k): str(v) for k, v in data.items()}


@lru_cache(maxsize=1)
def _names() -> tuple[str, ...]:
    return tuple(sorted(p.name[:-5] for p in _data_dir().iterdir()
                        if p.name.endswith(".json") and p.name != "aliases.json"))


@cache
def _load(name: str) -> Profile:
    path = _data_dir().joinpath(f"{name}.json")
    try:
        return Profile.from_json(path.read_text(encoding="utf-8"))
    except ProfileError as e:  # a broken shipped file is a bug; say which file
        raise ProfileError(e.field, f"in builtin dialect file {name}.json: {e}") from None


def resolve_name(name: str) -> str:
    """The dialect a name or alias refers to; raises UnknownDialectError listing known names."""
    if not isinstance(name, str):
        raise TypeError(f"dialect name must be a str, got {type(name).__name__}")
    key = name.strip().lower()
    names = _names()
    if key in names:
        return key
    alias = _aliases().get(key)
    if alias is not None:
        return alias
    raise UnknownDialectError(name, sorted([*names, *_aliases()]))


def get_profile(name: str) -> Profile:
    """The builtin profile for a dialect name or alias (confidence 1.0, evidence "builtin")."""
    return _load(resolve_name(name))


def dialects() -> list[DialectInfo]:
    """Every builtin dialect with the model families that use it and its aliases."""
    aliases = _aliases()
    out = []
    for n in _names():
        p = _load(n)
        out.append(DialectInfo(n, p.families, p.description,
                               tuple(sorted(a for a, t in aliases.items() if t == n))))
    return out
