"""What the hub's store holds, and the rules on it: its errors (messages safe to show a client), file
entries, commits, repo metadata and the operations of a commit, with the checks on names, paths and
branches. Pure data and functions; :mod:`zoo.hub_server.storage` writes and reads them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_BRANCH = "main"
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?")
#: A commit id: a lowercase sha1.
HEX40 = re.compile(r"[0-9a-f]{40}")
#: A blob's name: its lowercase sha256.
HEX64 = re.compile(r"[0-9a-f]{64}")
_BRANCH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}")


class StorageError(Exception):
    """A request the storage refuses; the message is safe to send to the client."""


class InvalidInput(StorageError):
    """Malformed names, paths or content (checksum, size)."""


class RepoNotFound(StorageError):
    pass


class RepoExists(StorageError):
    pass


class RevisionNotFound(StorageError):
    pass


class EntryNotFound(StorageError):
    pass


class RefExists(StorageError):
    """A branch of that name is there already."""


class Forbidden(StorageError):
    """An operation the repo's state does not allow (deleting the default branch, committing to a tag)."""


class CommitConflict(StorageError):
    """The branch moved since the parent commit the client based its change on."""


@dataclass(frozen=True)
class FileEntry:
    """One file of a commit. ``git_sha1`` is what git would call the blob (the pointer's, for LFS)."""

    sha256: str
    size: int
    lfs: bool
    git_sha1: str

    @property
    def etag(self) -> str:
        """The Hub's ETag: sha256 of the content for LFS files, the git blob sha1 otherwise."""
        return self.sha256 if self.lfs else self.git_sha1

    @property
    def pointer_size(self) -> int:
        return len(lfs_pointer(self.sha256, self.size))


@dataclass(frozen=True)
class Commit:
    id: str
    parent: str | None
    message: str
    author: str
    date: str
    files: dict[str, FileEntry]

    @property
    def title(self) -> str:
        return self.message.split("\n", 1)[0]


@dataclass(frozen=True)
class RepoMeta:
    owner: str
    private: bool
    created_at: str


@dataclass(frozen=True)
class Put:
    """Add or replace ``path`` with an already stored blob."""

    path: str
    entry: FileEntry


@dataclass(frozen=True)
class Delete:
    """Remove a file, or with ``folder`` every file under ``path/``."""

    path: str
    folder: bool = False


Operation = Put | Delete


def now_iso() -> str:
    """UTC time in the Hub's format (``2024-01-31T12:00:00.000Z``), which huggingface_hub parses."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    """The git-lfs pointer file git would store in place of an LFS file."""
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


def check_name(name: str, what: str) -> str:
    """A namespace or repo name: also a folder name on disk, so no dots-only, slashes or '--'."""
    if not _NAME.fullmatch(name) or "--" in name or ".." in name:
        raise InvalidInput(f"invalid {what} {name!r}: use letters, digits, '-', '_', '.' (at most 96)")
    return name


def check_path(path: str) -> str:
    """A file path inside a repo: relative, '/'-separated, no '.', '..' or '.git' parts."""
    parts = path.split("/")
    if not path or len(path) > 1024 or "\\" in path or "\0" in path:
        raise InvalidInput(f"invalid path in repo: {path!r}")
    if any(part in ("", ".", "..", ".git") for part in parts):
        raise InvalidInput(f"invalid path in repo: {path!r}")
    return path


def check_branch(name: str) -> str:
    """A new branch name: git's rules for a ref, narrowed. Never ``refs/...`` or a full commit id, which
    :meth:`HubStorage.resolve` would read as something else."""
    parts = name.split("/")
    if (
        not _BRANCH.fullmatch(name)
        or ".." in name
        or name.startswith("refs/")
        or HEX40.fullmatch(name.lower())
        or any(not part or part.startswith(".") or part.endswith((".", ".lock")) for part in parts)
    ):
        raise InvalidInput(f"invalid branch name {name!r}: use letters, digits, '-', '_', '.' and '/'")
    return name


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable, not only atomic."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def apply_operations(files: dict[str, FileEntry], ops: Iterable[Operation]) -> dict[str, FileEntry]:
    """The file map after ``ops``, in order; refuses deleting what is absent and file/folder clashes."""
    result = dict(files)
    for op in ops:
        if isinstance(op, Put):
            result[check_path(op.path)] = op.entry
        elif op.folder:
            prefix = op.path.rstrip("/") + "/"
            doomed = [path for path in result if path.startswith(prefix)]
            if not doomed:
                raise EntryNotFound(f"folder {op.path!r} not found")
            for path in doomed:
                del result[path]
        elif result.pop(op.path, None) is None:
            raise EntryNotFound(f"file {op.path!r} not found")
    _check_no_file_folder_clash(result)
    return result


def _check_no_file_folder_clash(files: dict[str, FileEntry]) -> None:
    """Git cannot hold 'a' as a file and 'a/b' at once."""
    for path in files:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in files:
                raise InvalidInput(f"{path!r} needs {parent!r} to be a folder, but it is a file")


def path_view(files: dict[str, FileEntry], path: str) -> Any:
    """What ``path`` looks like in a file map: its entry, or the sorted entries under it for a folder."""
    if path in files:
        return files[path]
    prefix = path + "/"
    return tuple(sorted((p, entry) for p, entry in files.items() if p.startswith(prefix)))
