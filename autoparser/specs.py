"""Where a profile can come from: one table, read by every command and by ``autoparser.load``.

A *profile spec* is what a user types to name a profile: ``--profile`` of ``autoparse parse`` and
``autoparse batch``, a batch's profile column, the argument of ``autoparser.load``. It is one of
the sources in :data:`SOURCES`, tried in this order:

1. a builtin dialect name or alias (``hermes``, ``qwen3``), unless the spec looks like a path
   (it has a path separator, starts with ``~`` or ``.``, or ends in a profile suffix): a folder
   named ``hermes`` in the current directory is ``./hermes``;
2. a profile ``.json`` (what ``autoparse PATH --save`` writes; ``autoparse PATH --json`` output,
   whose ``derivation`` record is set aside);
3. a chat template wherever a model keeps it: a Hugging Face model directory, a ``.gguf`` file, a
   ``.jinja`` file, an OpenVINO IR directory (or its tokenizer ``.xml``), a ``tokenizer_config.json``
   (or ``chat_template.json``); these are read by :func:`autoparser.templates.load_source` and
   derived, through the profile cache when one is given.

Anything else is a :class:`~autoparser.errors.SourceError` naming the spec: one message for every
command, instead of "unknown dialect" from one and "no such file" from another.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ProfileError, SourceError, UnknownDialectError
from .profile import Profile

__all__ = ["SOURCES", "SPEC_HELP", "Source", "load", "load_spec", "looks_like_path", "read_profile_file", "source_of"]


@dataclass(frozen=True)
class Source:
    """One kind of profile source. ``kind`` matches ``TemplateSource.kind`` for derived sources."""

    kind: str
    what: str  # how help texts and messages name it
    derived: bool  # derived from a chat template (rather than read as a profile)


SOURCES: tuple[Source, ...] = (
    Source("dialect", "a builtin dialect name (`autoparse dialects`)", False),
    Source("profile", "a profile .json (`autoparse PATH --save` writes one)", False),
    Source("hf-dir", "a Hugging Face model directory", True),
    Source("gguf", "a .gguf file", True),
    Source("jinja", "a chat template file (.jinja)", True),
    Source("openvino-ir", "an OpenVINO IR directory (or its tokenizer .xml)", True),
    Source("tokenizer-config", "a tokenizer_config.json (or chat_template.json)", True),
)

_BY_KIND = {source.kind: source for source in SOURCES}

#: one line for ``--help`` texts
SPEC_HELP = ("a dialect name, a profile .json, a model dir, .gguf, .jinja, OpenVINO IR dir or "
             "tokenizer_config.json")

_PATH_SUFFIXES = (".json", ".jinja", ".gguf", ".xml")
_NOT_PROFILE_JSON = ("tokenizer_config.json", "chat_template.json")


def looks_like_path(spec: str) -> bool:
    """Whether a spec is meant as a path rather than a dialect name."""
    return ("/" in spec or os.sep in spec or spec.startswith(("~", "."))
            or spec.lower().endswith(_PATH_SUFFIXES))


def source_of(spec: str | os.PathLike[str]) -> tuple[Source, str]:
    """Which source a spec names, without reading it: ``(SOURCES row, the spec as a str)``; a
    template source is reported as its directory or file kind (``hf-dir`` for any directory, the
    reader tells an OpenVINO IR directory apart when it reads it).

    Raises :class:`TypeError` for a spec that is neither a str nor a path, and a
    :class:`~autoparser.errors.SourceError` naming the spec when it names nothing.
    """
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str):
        raise TypeError(f"the path or name of a profile must be a str or os.PathLike ({SPEC_HELP}), "
                        f"got {type(spec).__name__}")
    if not spec.strip():
        raise SourceError(repr(spec), f"empty profile spec; expected {SPEC_HELP}")
    if not looks_like_path(spec):
        from .dialects import resolve_name

        try:
            resolve_name(spec)
            return _BY_KIND["dialect"], spec
        except UnknownDialectError as exc:
            if not Path(spec).exists():
                import difflib

                close = difflib.get_close_matches(spec.strip().lower(), exc.known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise SourceError(spec, f"not a builtin dialect name ({hint}`autoparse dialects` lists them), "
                                  "and no such file or directory") from None
    path = Path(spec).expanduser()
    if not path.exists():
        raise SourceError(spec, f"no such file or directory (expected {SPEC_HELP})")
    suffix = path.suffix.lower()
    if path.is_dir():
        return _BY_KIND["hf-dir"], spec
    if suffix == ".json":
        return _BY_KIND["tokenizer-config" if path.name in _NOT_PROFILE_JSON else "profile"], spec
    return _BY_KIND[{".gguf": "gguf", ".xml": "openvino-ir"}.get(suffix, "jinja")], spec


def load(path: str | os.PathLike[str], *, known: bool = True) -> Profile:
    """``autoparser.load``: a profile from any source this module reads (a profile .json, a .jinja
    template, a HF model dir, a GGUF, an OpenVINO IR, a dialect name), derived without a cache."""
    return load_spec(path, known=known)


def load_spec(spec: str | os.PathLike[str], *, known: bool = True, cache: Any = None) -> Profile:
    """The profile a spec names (see the module docstring for the sources and their order).

    ``known`` is :func:`autoparser.analyze`'s (for derived sources); ``cache`` is a
    :class:`~autoparser.cache.ProfileCache` for derived sources (``None``: derive, keep nothing).
    Raises what :func:`source_of` raises, a :class:`~autoparser.errors.ProfileError` naming the
    file and field of a malformed profile ``.json``, and whatever deriving raises for a template
    that cannot be analysed.
    """
    source, text = source_of(spec)
    if source.kind == "dialect":
        from .dialects import get_profile

        return get_profile(text)
    path = Path(text).expanduser()
    if source.kind == "profile":
        return read_profile_file(path)
    from .cache import ProfileCache, analyze_source
    from .templates.sources import load_source

    src = load_source(path)
    prof: Profile = analyze_source(src, known=known, cache=cache or ProfileCache(None)).profile
    return prof


def read_profile_file(path: str | os.PathLike[str]) -> Profile:
    """A profile ``.json`` file; errors name the file (and the field, for a malformed profile)."""
    from .templates._hf import read_json

    data = read_json(Path(path))
    if isinstance(data, dict) and isinstance(data.get("derivation"), dict):  # `autoparse PATH --json`
        data = {k: v for k, v in data.items() if k != "derivation"}
    try:
        return Profile.from_dict(data)
    except ProfileError as exc:
        raise ProfileError(exc.field, exc.problem, path=str(path)) from None
