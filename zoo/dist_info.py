"""Installed distributions' versions and entry points, read from their ``*.dist-info`` folders directly.

``importlib.metadata`` answers the same questions, but each ``version()`` parses a whole ``METADATA`` file
with the email package and ``entry_points()`` builds an object per distribution; importing it and asking
for a dozen versions and the plug-in entry points cost ``zoo --version`` and every ``zoo check`` tens of
milliseconds. This module lists each ``sys.path`` folder once, finds a distribution the way
``importlib.metadata`` does (its normalized name, the first ``sys.path`` entry that has it) and reads
only the ``Version:`` header. Wherever its answer could differ from ``importlib.metadata``'s (a zip on
``sys.path``, a meta-path finder that provides distributions of its own, a metadata file it cannot read
or without a version), it asks ``importlib.metadata`` instead.
"""

from __future__ import annotations

import functools
import os
import re
import sys


def _normalized(name: str) -> str:
    """A distribution name as ``importlib.metadata`` matches it (``Prepared.normalize``: PEP 503, with ``_``)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _exact() -> bool:
    """Can :func:`_index` find every distribution ``importlib.metadata`` would? Not with a zip or egg on
    ``sys.path`` (read from inside archives) or a finder besides the path finder that provides distributions."""
    from importlib.machinery import PathFinder

    if any(hasattr(finder, "find_distributions") and finder is not PathFinder for finder in sys.meta_path):
        return False
    return not any(os.path.isfile(entry) or entry.lower().endswith(".egg") for entry in sys.path)


def _index() -> dict[str, str] | None:
    """:func:`_index_of` the current ``sys.path`` (a library may add folders to it, as setuptools adds its
    vendored distributions)."""
    return _index_of(tuple(sys.path))


@functools.lru_cache(maxsize=4)
def _index_of(path: tuple[str, ...]) -> dict[str, str] | None:
    """Each installed distribution's metadata folder by normalized name, the first ``sys.path`` entry's
    winning (as with imports); None when only ``importlib.metadata`` can answer (:func:`_exact`)."""
    if not _exact():
        return None
    found: dict[str, str] = {}
    for entry in path:
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for child in names:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                found.setdefault(
                    _normalized(low.rpartition(".")[0].partition("-")[0]), os.path.join(folder, child)
                )
    return found


def _version_header(meta: str) -> str | None:
    """The ``Version:`` header of a distribution's metadata (a folder's METADATA or PKG-INFO, or an egg-info
    file itself); None when there is none or it cannot be read."""
    files = (
        [os.path.join(meta, "METADATA"), os.path.join(meta, "PKG-INFO")] if os.path.isdir(meta) else [meta]
    )
    for path in files:
        try:
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    if not line.strip():
                        return None  # the headers end at the first blank line
                    key, colon, value = line.partition(":")
                    if colon and key.lower() == "version":
                        return value.strip() or None
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError):
            return None
    return None


def version(name: str) -> str | None:
    """The installed version of distribution ``name``, None when it is not installed: what
    ``importlib.metadata.version`` says."""
    index = _index()
    meta = index.get(_normalized(name)) if index is not None else None
    found = _version_header(meta) if meta is not None else None
    if found is not None:
        return found
    if index is not None and meta is None:
        return None
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as metadata_version

    try:
        return metadata_version(name)
    except PackageNotFoundError:
        return None


def may_declare(group: str) -> bool:
    """Could an installed distribution declare an entry point in ``group``? False only when none of their
    ``entry_points.txt`` files names it, which lets a caller skip ``importlib.metadata.entry_points``."""
    index = _index()
    if index is None:
        return True
    for meta in index.values():
        try:
            with open(os.path.join(meta, "entry_points.txt"), encoding="utf-8") as fh:
                if group in fh.read():
                    return True
        except (FileNotFoundError, NotADirectoryError):  # no entry points (an egg-info file has none)
            continue
        except (OSError, UnicodeDecodeError):
            return True  # unreadable here: let importlib.metadata decide
    return False
