"""Test set-up: tests/ importable (for helpers.py), headless MuJoCo, a private zoo cache per test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("MUJOCO_GL", "egl")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Each test gets its own zoo cache dir: no test reads another's memo or the user's."""
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path_factory.mktemp("zoo-cache")))
