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
from collections.abc import Iterable, Sequence
from pathlib import Path

from zoo.artifacts.forking import fork_is_safe
from zoo.version import __version__

_SCHEMA = 3
#: Distributions whose version (or absence) changes what ``zoo check`` says about a run, whatever the
#: framework; the caller adds each adapter's :attr:`~zoo.frameworks.Adapter.packages` (:func:`context`).
CONTEXT_PACKAGES = (
    "torch",
    "numpy",
    "gymnasium",
    "tensordict",
    "ale-py",
    "mujoco",
    "tensorboard",
    "google-crc32c",
)


def cache_dir() -> Path:
    base = os.environ.get("ZOO_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "zoo"
    )
    return Path(base)


def stamp(paths: Iterable[str | os.PathLike[str] | None]) -> str:
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


def context(
    registry_sources: Iterable[Path], packages: Iterable[str] = (), sources: Iterable[Path] = ()
) -> str:
    """A digest of what a verdict depends on besides the run's own files: zoo's sources and ``sources`` (the
    plug-in adapters'), the registry files, and the versions of :data:`CONTEXT_PACKAGES` and ``packages``
    (the adapters' libraries)."""
    from zoo.dist_info import version

    digest = hashlib.sha256(f"{_SCHEMA}:{__version__}".encode())
    package = Path(__file__).parent.parent  # the zoo package: its sources are part of every verdict
    digest.update(stamp([*sorted(package.rglob("*.py")), *sources, *registry_sources]).encode())
    for name in dict.fromkeys([*CONTEXT_PACKAGES, *packages]):
        digest.update(f"{name}={version(name) or '-'};".encode())
    return digest.hexdigest()[:32]


class CheckMemo:
    """What ``zoo check`` found and said, remembered while the files it read are unchanged.

    Two memories, both in one SQLite file and both scoped to a context (:func:`context`):

    - discoveries: for the paths given, the runs found (their JSON, which is the key of their verdict,
      and the files each verdict reads), valid while every folder discovery listed and every file it
      looked inside stamps the same (a folder's mtime changes whenever an entry is added, removed or
      renamed in it);
    - verdicts: a run's report (its status kept apart, so that output needs no parsing), valid while
      the run's inputs stamp the same. New verdicts are written in batches as they come, while the
      worker processes read the next runs, and committed by :meth:`save`.

    With ``detached``, nothing is written until :meth:`save`, which then writes from a forked process that
    outlives this one: the ``zoo`` command shows a big tree's results without waiting for the write.
    """

    def __init__(
        self, context_key: str, enabled: bool = True, name: str = "check.sqlite", detached: bool = False
    ):
        self.context, self.enabled, self.detached = context_key, enabled, detached
        self.path = cache_dir() / name
        self._verdicts: dict[str, tuple[str, str, str]] = {}
        self._pending: list[tuple[str, str, str, str, str]] = []
        self._discovery: tuple[str, str, str, str] | None = None
        self._writer: sqlite3.Connection | None = None
        if enabled:
            with (
                contextlib.suppress(sqlite3.Error, OSError),
                contextlib.closing(self._connect(create=False)) as db,
            ):
                rows = db.execute(
                    "SELECT key, stamp, status, report FROM verdicts WHERE context = ?", (self.context,)
                )
                self._verdicts = {key: (st, status, report) for key, st, status, report in rows}

    def _connect(self, create: bool) -> sqlite3.Connection:
        if not create and not self.path.is_file():
            raise OSError("no cache yet")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=2.0)
        db.executescript(  # WAL: readers never wait for a writer; NORMAL sync is durable enough for a cache
            f"""PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA user_version = {_SCHEMA};
            CREATE TABLE IF NOT EXISTS verdicts (context TEXT, key TEXT, stamp TEXT, status TEXT, report TEXT,
                                                 PRIMARY KEY (context, key));
            CREATE TABLE IF NOT EXISTS discoveries (context TEXT, roots TEXT, stamp TEXT, runs TEXT,
                                                    PRIMARY KEY (context, roots));"""
        )
        return db

    def _write(self, sql: str, rows: Sequence[tuple[str, ...]]) -> None:
        """Into the open write transaction (the first write opens it); a failing cache just stops writing."""
        if not (self.enabled and rows):
            return
        try:
            if self._writer is None:
                self._writer = self._connect(create=True)
                for table in ("verdicts", "discoveries"):  # what other contexts remembered goes
                    self._writer.execute(f"DELETE FROM {table} WHERE context != ?", (self.context,))  # noqa: S608
            self._writer.executemany(sql, rows)
        except (sqlite3.Error, OSError):
            self.enabled = False

    # ------------------------------------------------------------------------------------------ discoveries
    def discovery(self, roots: str) -> list[tuple[str, list[str]]] | None:
        """``[(run key, input paths)]`` found under ``roots`` last time, if nothing discovery read changed."""
        if not self.enabled:
            return None
        with (
            contextlib.suppress(sqlite3.Error, OSError, ValueError),
            contextlib.closing(self._connect(create=False)) as db,
        ):
            row = db.execute(
                "SELECT stamp, runs FROM discoveries WHERE context = ? AND roots = ?", (self.context, roots)
            ).fetchone()
            if row is None:
                return None
            inputs, file_stamp = json.loads(row[0])
            if stamp(inputs) != file_stamp:
                return None
            return [(key, inputs.split("\n") if inputs else []) for key, inputs in json.loads(row[1])]
        return None

    def put_discovery(self, roots: str, read: list[str], runs: list[tuple[str, list[str]]]) -> None:
        found = json.dumps([(key, "\n".join(inputs)) for key, inputs in runs])
        self._discovery = (self.context, roots, json.dumps([read, stamp(read)]), found)
        if not self.detached:
            self._flush()

    # ------------------------------------------------------------------------------------------ verdicts
    @staticmethod
    def _id(key: str) -> str:
        """A run key (its JSON, hundreds of bytes) as a short primary key."""
        return hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()

    def verdict(self, key: str, file_stamp: str) -> tuple[str, str] | None:
        """``(status, report JSON)`` remembered for the run, if its files are exactly as they were."""
        known = self._verdicts.get(self._id(key))
        return known[1:] if known is not None and known[0] == file_stamp else None

    def put_verdict(self, key: str, file_stamp: str, status: str, report: str) -> None:
        self._pending.append((self.context, self._id(key), file_stamp, status, report))
        if len(self._pending) >= 512 and not self.detached:
            self._flush()

    def _flush(self) -> None:
        if self._discovery is not None:
            self._write("INSERT OR REPLACE INTO discoveries VALUES (?, ?, ?, ?)", [self._discovery])
            self._discovery = None
        self._write("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?)", self._pending)
        self._pending = []

    def save(self) -> None:
        """Write what is still pending and commit (detached: in a forked process this one does not wait for)."""
        if self.detached and self.enabled and (self._pending or self._discovery) and fork_is_safe():
            if os.fork() != 0:
                self._pending, self._discovery = [], None
                return
            try:  # the child: this process's connections were never opened, so it opens its own
                self._commit()
            finally:
                os._exit(0)
        self._commit()

    def _commit(self) -> None:
        self._flush()
        if self._writer is not None:
            with contextlib.suppress(sqlite3.Error):
                self._writer.commit()
            self._writer.close()
            self._writer = None
