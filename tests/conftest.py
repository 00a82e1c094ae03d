"""Test-session settings shared by every test module."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_profile_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``autoparse PATH`` caches derived profiles; the suite keeps its entries out of the user's
    cache directory (tests that exercise the cache point it at their own directory)."""
    old = os.environ.get("AUTOPARSER_CACHE_DIR")
    os.environ["AUTOPARSER_CACHE_DIR"] = str(tmp_path_factory.mktemp("profile-cache"))
    yield
    if old is None:
        os.environ.pop("AUTOPARSER_CACHE_DIR", None)
    else:
        os.environ["AUTOPARSER_CACHE_DIR"] = old
