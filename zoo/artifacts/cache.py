"""zoo's cache folder, and ``zoo check``'s memory of verdicts.

A verdict on a run is remembered with the stamp of every file it was read from (size, mtime and
ctime in nanoseconds, inode) and under the *context* it was made in: zoo's own sources, the registry
files, the versions of the libraries whose presence or version changes a verdict. A later check of
an unchanged run in the same context reuses it without opening a file; any change to a stamp or to
the context means "read it again". The memo is an optimisation only: a missing, corrupt, locked or
unwritable cache file means "recompute", never an error. It lives in ``$ZOO_CACHE_DIR`` (default
``~/.cache/zoo``) as one SQLite file, so concurrent checks neither corrupt nor block each other.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import zoo

_SCHEMA = 1
#: Distributions whose version (or absence) changes what ``zoo check`` says about a run.
CONTEXT_PACKAGES = ("torch", "numpy", "gymnasium", "stable-baselines3", "skrl", "rsl-rl-lib", "tensordict",
                    "ale-py", "mujoco", "tensorboard", "google-crc32c")  # fmt: skip


def cache_dir() -> Path:
    base = os.environ.get("ZOO_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "zoo"
    )
    return Path(base)


def stamp(paths: Iterable[Path | None]) -> str:
    """The identity of the files a verdict was read from (absent files included, as absent)."""
    parts = []
    for path in paths:
        if path is None:
            continue
        try:
            st = os.stat(path)
            parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}")
        except OSError:
            parts.append(f"{path}:-")
    return "|".join(parts)


def context(registry_sources: Iterable[Path]) -> str:
    """A digest of what a verdict depends on besides the run's own files."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256(f"{_SCHEMA}:{zoo.__version__}".encode())
    package = Path(zoo.__file__).parent
    sources = sorted(package.rglob("*.py"))
    digest.update(stamp([*sources, *registry_sources]).encode())
    for name in CONTEXT_PACKAGES:
        try:
            digest.update(f"{name}={version(name)};".encode())
        except PackageNotFoundError:
            digest.update(f"{name}=-;".encode())
    return digest.hexdigest()[:32]


class VerdictMemo:
    """``get``/``put`` report JSON texts by run key and stamp; ``save`` writes them in one transaction."""

    def __init__(self, context_key: str, enabled: bool = True, name: str = "check.sqlite"):
        self.context, self.enabled = context_key, enabled
        self.path = cache_dir() / name
        self._known: dict[str, tuple[str, str]] = {}
        self._new: dict[str, tuple[str, str]] = {}
        if enabled:
            with (
                contextlib.suppress(sqlite3.Error, OSError),
                contextlib.closing(self._connect(create=False)) as db,
            ):
                rows = db.execute(
                    "SELECT key, stamp, report FROM verdicts WHERE context = ?", (self.context,)
                )
                self._known = {key: (st, report) for key, st, report in rows}

    def _connect(self, create: bool) -> sqlite3.Connection:
        if not create and not self.path.is_file():
            raise OSError("no cache yet")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=2.0)
        db.execute("CREATE TABLE IF NOT EXISTS verdicts (context TEXT, key TEXT, stamp TEXT, report TEXT, "
                   "PRIMARY KEY (context, key))")  # fmt: skip
        return db

    def get(self, key: str, file_stamp: str) -> str | None:
        """The remembered report (JSON text), if the run's files are exactly as they were."""
        known = self._known.get(key)
        return known[1] if known is not None and known[0] == file_stamp else None

    def put(self, key: str, file_stamp: str, report: dict) -> None:
        if self.enabled:
            self._new[key] = (file_stamp, json.dumps(report))

    def save(self) -> None:
        """Write the new verdicts; verdicts made in other contexts (an older zoo, other libraries) go."""
        if not (self.enabled and self._new):
            return
        rows = [(self.context, key, st, report) for key, (st, report) in self._new.items()]
        with (
            contextlib.suppress(sqlite3.Error, OSError),
            contextlib.closing(self._connect(create=True)) as db,
            db,
        ):
            db.execute("DELETE FROM verdicts WHERE context != ?", (self.context,))
            db.executemany("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?)", rows)
        self._new.clear()
