"""A small on-disk memo of per-file results, keyed by path, size and mtime.

Reading a long run's TensorBoard events file takes seconds (tens of MB, every record
CRC-checked); ``zoo check`` on a tree of hundreds of runs would pay that on every call.
Results are remembered in ``$ZOO_CACHE_DIR`` (default ``~/.cache/zoo``) and reused while
the file's size and mtime are unchanged. The cache is an optimisation only: a missing,
corrupt or unwritable cache file means "recompute", never an error.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from zoo.atomic import write_json_atomic

_VERSION = 2


def cache_dir() -> Path:
    base = os.environ.get("ZOO_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "zoo"
    )
    return Path(base)


class FileMemo:
    """``get``/``put`` results for files; ``save`` writes the memo back atomically."""

    def __init__(self, name: str, enabled: bool = True):
        self.path = cache_dir() / f"{name}.json"
        self.enabled = enabled
        self.entries: dict[str, dict] = {}
        self.dirty = False
        if enabled:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                if data.get("version") == _VERSION:
                    self.entries = data["entries"]
            except (OSError, ValueError, KeyError, AttributeError):
                self.entries = {}

    @staticmethod
    def _stamp(path: Path) -> list[int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return [st.st_size, st.st_mtime_ns]

    @staticmethod
    def _key(path: Path, what: str) -> str:
        return f"{what}:{path.resolve()}"

    def get(self, path: Path, what: str = "") -> tuple[bool, Any]:
        """``(hit, value)`` for ``what`` about ``path``: a hit only while the file is unchanged."""
        if not self.enabled:
            return False, None
        entry = self.entries.get(self._key(path, what))
        if entry is not None and entry["stamp"] == self._stamp(path):
            return True, entry["value"]
        return False, None

    def put(self, path: Path, value: Any, what: str = "") -> None:
        stamp = self._stamp(path)
        if self.enabled and stamp is not None:
            self.entries[self._key(path, what)] = {"stamp": stamp, "value": value}
            self.dirty = True

    def save(self) -> None:
        if not (self.enabled and self.dirty):
            return
        with contextlib.suppress(OSError):  # a read-only home must not fail a check
            write_json_atomic(self.path, {"version": _VERSION, "entries": self.entries})
        self.dirty = False
