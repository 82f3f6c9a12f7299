"""Which LFS objects a repo may commit: the records in ``repos/NS/NAME/lfs/`` (an upload verified, or a
copy from a repo the committer can read) and the objects its commits name already. Knowing an object's
sha256 and size is not enough; the module docstring of :mod:`zoo.hub_server.storage` says why.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.hub_server.blobs import BlobStore
from zoo.hub_server.store_records import (
    HEX64,
    FileEntry,
    InvalidInput,
    RepoNotFound,
    check_name,
    fsync_dir,
    git_blob_sha1,
    lfs_pointer,
)

if TYPE_CHECKING:
    from zoo.hub_server.storage import HubStorage


class LfsStore(BlobStore):
    """The blob store with the per-repo LFS records on top; :class:`~zoo.hub_server.storage.HubStorage`
    adds the repos themselves."""

    def _repo_dir(self, repo_id: str) -> Path:
        """A repo's folder under ``ROOT/repos``: its LFS records live in it, :class:`HubStorage` keeps the rest."""
        namespace, _, name = repo_id.partition("/")
        return self.root / "repos" / check_name(namespace, "namespace") / check_name(name, "repo name")

    def lfs_file(self, access: RepoLfs, sha256: str, size: int | None) -> FileEntry:
        """An LFS file the repo of ``access`` may commit (see :class:`RepoLfs`); refused otherwise, with the
        same message whether or not the object is stored for another repo."""
        path = self.blob_path(sha256)
        if not access.may_commit(sha256) or not self.touch_blob(sha256):
            raise InvalidInput(
                f"LFS object {sha256} was not uploaded to {access.repo_id}; upload it (or copy it "
                "from a repo you can read) before committing"
            )
        actual = path.stat().st_size
        if size is not None and size != actual:
            raise InvalidInput(f"LFS object {sha256} has {actual} bytes, the commit says {size}")
        return FileEntry(sha256, actual, lfs=True, git_sha1=git_blob_sha1(lfs_pointer(sha256, actual)))

    def lfs_granted(self, repo_id: str, sha256: str) -> bool:
        """Whether ``repo_id`` has a record for the LFS object ``sha256``: uploaded or copied to it."""
        self.blob_path(sha256)  # InvalidInput for anything but a sha256: it becomes a file name
        return (self._repo_dir(repo_id) / "lfs" / sha256).is_file()

    def lfs_ready(self, repo_id: str, sha256: str, size: int) -> bool:
        """Whether a commit of ``repo_id`` may name the object now, with nothing uploaded: the repo has its
        record and the blob is stored with that size (refreshed, since the commit will use it)."""
        return self.lfs_granted(repo_id, sha256) and self.has_blob(sha256, size)

    def grant_lfs(self, repo_id: str, sha256: str) -> None:
        """Record that ``repo_id`` may commit the stored blob ``sha256``: its bytes were uploaded to the repo
        and verified, or copied from a repo the caller may read. :class:`InvalidInput` if the blob is not
        stored, :class:`RepoNotFound` if the repo went away (deleted or moved) meanwhile."""
        folder = self._repo_dir(repo_id) / "lfs"
        with self.blob_guard(exclusive=False):  # gc removes a record only under the exclusive one
            try:
                os.utime(self.blob_path(sha256))
            except FileNotFoundError:
                raise InvalidInput(f"LFS object {sha256} is not stored") from None
            try:
                folder.mkdir(exist_ok=True)  # a repo of an earlier release has none; never its parents
                os.close(os.open(folder / sha256, os.O_WRONLY | os.O_CREAT, 0o644))
            except FileNotFoundError:
                raise RepoNotFound(f"repo {repo_id} not found") from None
        fsync_dir(folder)

    def lfs_records(self, repo_id: str) -> list[str]:
        """The sha256 of every LFS object the repo has a record for (none, for a repo written before
        records existed or gone meanwhile: this only reads)."""
        try:
            with os.scandir(self._repo_dir(repo_id) / "lfs") as entries:
                return [entry.name for entry in entries if HEX64.fullmatch(entry.name)]
        except FileNotFoundError:
            return []

    def drop_lfs_record(self, repo_id: str, sha256: str) -> bool:
        """Remove the record of a blob that is no longer stored (``zoo hub gc``), re-checked under the
        exclusive ``blobs.lock``; True if it was removed."""
        record = self._repo_dir(repo_id) / "lfs" / sha256
        with self.blob_guard(exclusive=True):
            if self.blob_path(sha256).exists():
                return False
            try:
                record.unlink()
            except FileNotFoundError:
                return False
        return True


class RepoLfs:
    """Which LFS objects one repo may commit, asked object by object for one request: those its commits
    name already (read once, at the first object that has no record) and those it has a record for."""

    def __init__(self, storage: HubStorage, repo_id: str):
        self.storage, self.repo_id = storage, repo_id
        self._named: set[str] | None = None

    def named(self, sha256: str) -> bool:
        """Whether a commit of the repo names the object (old commits too: they stay downloadable)."""
        if self._named is None:
            self._named = self.storage.lfs_objects(self.repo_id)
        return sha256 in self._named

    def may_commit(self, sha256: str) -> bool:
        return self.storage.lfs_granted(self.repo_id, sha256) or self.named(sha256)
