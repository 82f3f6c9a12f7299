"""The content-addressed blob store under ROOT/blobs/sha256/ and the uploads into it (``tmp/``, each
flock'd by its writer), with the start-up cleaning of what killed processes left; the module docstring of
:mod:`zoo.hub_server.storage` says why each step is safe beside other processes and gc.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

from zoo.hub_server.store_records import HEX64, FileEntry, InvalidInput, fsync_dir, git_blob_sha1

_COPY_CHUNK = 1 << 20


class Removed(NamedTuple):
    """What a start-up cleaning removed from ``tmp/``: partial uploads of processes that are gone."""

    files: int
    bytes: int


def _locked_temp_file(folder: Path) -> tuple[BinaryIO, Path]:
    """A new temp file in ``folder``, flock'd by us.

    Between ``mkstemp`` and ``flock`` another process's cleaning may find the file unlocked and remove
    it; the lock is then held on a file that has no name any more, so check and start again.
    """
    while True:
        fd, name = tempfile.mkstemp(prefix="upload.", dir=folder)
        fh = os.fdopen(fd, "wb")
        fcntl.flock(fh, fcntl.LOCK_EX)  # blocks only while a cleaning holds it to remove the file
        with contextlib.suppress(FileNotFoundError):
            if os.path.samestat(os.fstat(fd), os.stat(name)):
                return fh, Path(name)
        fh.close()


def remove_dead_uploads(folder: Path, dry_run: bool = False) -> Removed:
    """Remove the files in ``folder`` whose flock nobody holds: uploads of a process that was killed
    (with ``dry_run``, only count them: taking a lock for a moment makes an upload starting then wait).

    A live upload holds its lock, so this is safe while other processes serve the same ROOT.
    """
    files = size = 0
    if not folder.is_dir():
        return Removed(0, 0)
    with os.scandir(folder) as entries:
        paths = [entry.path for entry in entries]
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue  # gone already, or a link: not ours
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode):
                if not dry_run:
                    os.unlink(path)  # under our lock, so no upload can adopt the file meanwhile
                files, size = files + 1, size + info.st_size
        except OSError:
            pass  # locked: an upload in flight
        finally:
            os.close(fd)
    return Removed(files, size)


#: How long a multipart upload's parts are kept (:mod:`zoo.hub_server.lfs_multipart`): twice the upload URLs'
#: lifetime, so that no part PUT or completion can still arrive for a folder removed.
PARTS_TTL = 2 * 3600


def parts_root(root: Path) -> Path:
    """Where multipart uploads keep their parts until completion: ``ROOT/parts/OID-EXPIRES/N``."""
    return Path(root) / "parts"


def remove_stale_parts(root: Path, older_than: float = PARTS_TTL, dry_run: bool = False) -> int:
    """Remove (or with ``dry_run`` count) the parts folders of multipart uploads abandoned long ago."""
    folder, removed = parts_root(root), 0
    if not folder.is_dir():
        return 0
    cutoff = time.time() - older_than
    for entry in folder.iterdir():
        try:
            if entry.stat().st_mtime < cutoff:
                if not dry_run:
                    shutil.rmtree(entry, ignore_errors=True)
                removed += 1
        except FileNotFoundError:
            continue
    return removed


class BlobUpload:
    """One blob being written: a locked temp file in ``tmp/``, hashed as the chunks arrive.

    :meth:`finish` checks the announced sha256 and size (:class:`InvalidInput` otherwise) and publishes
    the blob with one rename; :meth:`close` (also the end of a ``with`` block) drops an unpublished temp
    file. Nothing appears under ``blobs/`` before it is verified.
    """

    def __init__(self, storage: BlobStore, sha256: str | None, size: int | None):
        self._storage, self._sha256, self._size = storage, sha256, size
        self._digest, self.written = hashlib.sha256(), 0
        self._fh, self._path = _locked_temp_file(storage.tmp)
        self._published = False

    def write(self, chunk: bytes) -> None:
        self.written += len(chunk)
        if self._size is not None and self.written > self._size:
            raise InvalidInput(f"upload is larger than the announced {self._size} bytes")
        self._digest.update(chunk)
        self._fh.write(chunk)

    def write_file(self, path: Path, sha256: str | None) -> None:
        """Append a whole file (one part of a multipart upload), which must hash to ``sha256``."""
        digest = hashlib.sha256()
        try:
            with path.open("rb") as fh:
                while chunk := fh.read(_COPY_CHUNK):
                    digest.update(chunk)
                    self.write(chunk)
        except FileNotFoundError:
            raise InvalidInput(
                f"part {path.name} was not uploaded (or its URL expired); upload again"
            ) from None
        if sha256 is not None and digest.hexdigest() != sha256:
            raise InvalidInput(f"part {path.name} does not match its ETag; upload again")

    def finish(self) -> tuple[str, int]:
        """Verify and publish; returns the content's sha256 and size."""
        self._fh.flush()
        os.fsync(self._fh.fileno())
        actual = self._digest.hexdigest()
        if self._size is not None and self.written != self._size:
            raise InvalidInput(f"upload has {self.written} bytes, announced {self._size}")
        if self._sha256 is not None and actual != self._sha256:
            raise InvalidInput(f"upload's sha256 is {actual}, announced {self._sha256}")
        self._published = self._storage._publish(self._path, actual)
        return actual, self.written

    def close(self) -> None:
        """Remove the temp file unless it was renamed into ``blobs/``, then release its lock."""
        if self._fh.closed:
            return
        if not self._published:
            self._path.unlink(missing_ok=True)
        self._fh.close()

    def __enter__(self) -> BlobUpload:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class BlobStore:
    """The blobs of one ROOT: where each lives, storing one (verified, then one rename), re-using one
    (refreshed under the shared ``blobs.lock``) and reading one. :class:`~zoo.hub_server.storage.HubStorage`
    sets ``root`` and ``tmp``."""

    root: Path
    tmp: Path

    def blob_path(self, sha256: str) -> Path:
        if not HEX64.fullmatch(sha256):
            raise InvalidInput(f"invalid sha256 {sha256!r}")
        return self.root / "blobs" / "sha256" / sha256[:2] / sha256[2:]

    def has_blob(self, sha256: str, size: int) -> bool:
        """Whether the blob is stored, with that size; a yes refreshes it, since a commit will use it."""
        path = self.blob_path(sha256)
        return path.is_file() and path.stat().st_size == size and self.touch_blob(sha256)

    def touch_blob(self, sha256: str) -> bool:
        """Refresh a stored blob's mtime before re-using it, so that gc's grace period protects it;
        False if it is not stored (gc may just have removed it). See the module's docstring."""
        with self.blob_guard(exclusive=False):
            try:
                os.utime(self.blob_path(sha256))
            except FileNotFoundError:
                return False
        return True

    @contextlib.contextmanager
    def blob_guard(self, exclusive: bool) -> Iterator[None]:
        """``blobs.lock``: shared while a writer refreshes a blob it re-uses, exclusive while gc removes one."""
        with (self.root / "blobs.lock").open("a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def iter_blobs(self) -> Iterator[tuple[str, Path]]:
        """Every stored blob's sha256 and path."""
        for folder in sorted((self.root / "blobs" / "sha256").iterdir()):
            if folder.is_dir() and len(folder.name) == 2:
                for path in sorted(folder.iterdir()):
                    if HEX64.fullmatch(folder.name + path.name):
                        yield folder.name + path.name, path

    def open_upload(self, sha256: str | None = None, size: int | None = None) -> BlobUpload:
        """Start writing a blob whose chunks arrive over time (an HTTP body); see :class:`BlobUpload`."""
        if sha256 is not None:
            self.blob_path(sha256)  # InvalidInput now, not after the upload
        return BlobUpload(self, sha256, size)

    def store_blob(
        self, chunks: Iterable[bytes], sha256: str | None = None, size: int | None = None
    ) -> tuple[str, int]:
        """Stream ``chunks`` into the blob store and return their sha256 and size; refuse (InvalidInput)
        content whose sha256 or size is not the announced one. A failed upload leaves nothing behind."""
        with self.open_upload(sha256, size) as upload:
            for chunk in chunks:
                upload.write(chunk)
            return upload.finish()

    def _publish(self, tmp: Path, sha256: str) -> bool:
        """Rename ``tmp`` to the blob's name; False (``tmp`` stays) if the blob is stored already."""
        dest = self.blob_path(sha256)
        if dest.is_file() and self.touch_blob(sha256):  # same name, same content: keep the one there
            return False
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, dest)
        fsync_dir(dest.parent)
        return True

    def regular_file(self, data: bytes) -> FileEntry:
        """Store a small file sent inline in a commit."""
        sha256, size = self.store_blob([data])
        return FileEntry(sha256, size, lfs=False, git_sha1=git_blob_sha1(data))

    def read_blob(self, entry: FileEntry) -> bytes:
        return self.blob_path(entry.sha256).read_bytes()
