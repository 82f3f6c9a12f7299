"""File checksums, read in 1 MiB chunks so that big model files never sit in memory at once."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import _Hash


def _digest(digest: _Hash, path: Path) -> str:
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_file(path: Path) -> str:
    """The sha256 of a file (what git-LFS and the Hub report for large files)."""
    return _digest(hashlib.sha256(), path)


def git_blob_sha1(path: Path) -> str:
    """git's blob id of a file: sha1 over ``blob <size>\\0`` and the content."""
    return _digest(hashlib.sha1(f"blob {path.stat().st_size}\0".encode()), path)
