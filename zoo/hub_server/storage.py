"""Plain-file storage behind ``zoo hub serve``: content-addressed blobs, immutable commits, locked refs.

Layout under ROOT (everything is a plain file, readable with ``cat`` and ``jq``)::

    blobs/sha256/ab/cdef...            file contents, named by their sha256 (2 hex digits, then the rest)
    tmp/upload.*                       uploads in flight, each flock'd by the process writing it; same
                                       filesystem as blobs/, so publishing is one rename
    repos/NS/NAME/repo.json            {"owner", "private", "created_at"}
    repos/NS/NAME/commits/ID.json      {"parent", "message", "author", "date", "files": {path: entry}}
    repos/NS/NAME/refs.json            {"heads": {"main": ID}, "pr": {"1": ID}, "tags": {"v1": ID}}
    repos/NS/NAME/.lock                flock'd while refs.json or repo.json change
    repos/NS/NAME/lfs/SHA256           one empty file per LFS object uploaded or copied to the repo (below)
    trash/                             deleted repos, renamed here (one atomic step), then removed
    blobs.lock                         flock'd shared by writers that re-use a stored blob, exclusive by gc
    index.sqlite                       the list queries' index (:mod:`zoo.hub_server.index`), rebuilt from the above

Why it is safe to crash at any point: every file is written to a temp file, fsync'd and renamed into
place, so a reader sees the old content or the new, never half of one. A commit id is the sha1 of the
commit's canonical JSON, so commit files never change once written; the only mutable file of a repo is
``refs.json``, rewritten under a per-repo lock (a ``threading.Lock`` for this process's threads plus
``fcntl.flock`` for other processes serving the same ROOT). A repo is built in a temp folder and renamed
into place, so it appears complete or not at all (its locked work folder ``repos/NS/.NAME.*``, when a
crash leaves one, is removed by the next creation of that repo).

What a crash leaves is an upload's temp file in ``tmp/``. Several processes may serve one ROOT, so a
new :class:`HubStorage` must not take another process's upload in flight for a leftover: each upload
holds an ``flock`` on its temp file while it is written (the kernel drops it when the process dies),
and at start every file in ``tmp/`` whose lock nobody holds is removed (the idea of
:func:`zoo.atomic.private_workdir`, per file, because an upload is one file).

Garbage collection (:mod:`zoo.hub_server.maintenance`) may run while servers do. A blob becomes referenced
some time after it is stored (an LFS upload lands before its commit), so gc only takes unreferenced
blobs older than a grace period, and every write that re-uses a stored blob first refreshes its mtime
(:meth:`HubStorage.touch_blob`) under a shared ``blobs.lock``, which gc holds exclusively while it
re-checks and unlinks one blob. So a blob is either seen fresh by gc, or found missing by the writer,
which then stores it again or refuses the commit with a clear message; never referenced and gone.

LFS objects are stored once, but visible per repo. Knowing an object's sha256 and size must not be enough
to commit it (and then download it): a commit may name an LFS object only if one of the repo's commits
names it already, or the repo has a record for it in ``lfs/``, written when its bytes were uploaded to that
repo (:meth:`HubStorage.grant_lfs`, after the upload was verified) or copied from a repo the committer can
read (the Hub's ``lfs-files/duplicate``); :class:`RepoLfs` decides. A record is one empty file, created in
one step (``O_CREAT``) and fsync'd; it travels with its repo when the repo is moved or deleted. Records
only bridge the time between an upload and its commit, so a root of an earlier release (no ``lfs/``
folders) or a backup without them loses nothing that was committed. gc removes the records of blobs it
removed, under the same exclusive ``blobs.lock``; a record is made under the shared one while its blob is
there.

This module knows nothing about HTTP: it raises :class:`StorageError` subclasses whose messages are safe
to show to a client, and the server maps them to status codes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from zoo.atomic import private_workdir, write_text_atomic

DEFAULT_BRANCH = "main"
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?")
_HEX40 = re.compile(r"[0-9a-f]{40}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_PR_REF = re.compile(r"refs/pr/(\d+)")
_BRANCH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}")
_COPY_CHUNK = 1 << 20


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
        or _HEX40.fullmatch(name.lower())
        or any(not part or part.startswith(".") or part.endswith((".", ".lock")) for part in parts)
    ):
        raise InvalidInput(f"invalid branch name {name!r}: use letters, digits, '-', '_', '.' and '/'")
    return name


def _fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable, not only atomic."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True))
    _fsync_dir(path.parent)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _commit_body(commit: Commit) -> dict[str, Any]:
    body = asdict(commit)
    del body["id"]
    return body


def _commit_id(body: dict[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha1(canonical.encode()).hexdigest()


def _commit_from_json(commit_id: str, data: dict[str, Any]) -> Commit:
    files = {path: FileEntry(**entry) for path, entry in data["files"].items()}
    return Commit(commit_id, data["parent"], data["message"], data["author"], data["date"], files)


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

    def __init__(self, storage: HubStorage, sha256: str | None, size: int | None):
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


class HubStorage:
    """Repos, commits and blobs under one root folder; safe for concurrent threads and processes.

    Opening it for a server (``prepare``) creates the folders and removes what killed processes left:
    partial uploads in ``tmp/`` (``removed`` says how many), expired multipart parts and half-deleted
    repos; uploads of live processes serving the same ROOT are left alone. ``prepare=False`` opens an
    existing root and changes nothing (``zoo hub gc --dry-run``, ``zoo hub verify``).
    """

    def __init__(self, root: Path, *, prepare: bool = True):
        self.root = Path(root)
        self.tmp = self.root / "tmp"
        self.trash = self.root / "trash"
        self.removed = Removed(0, 0)
        if not prepare:
            if not (self.root / "blobs" / "sha256").is_dir() or not (self.root / "repos").is_dir():
                raise InvalidInput(f"{self.root} is not a zoo hub root (no blobs/sha256/ and repos/ in it)")
        else:
            for folder in (self.root / "blobs" / "sha256", self.root / "repos", self.tmp, self.trash):
                folder.mkdir(parents=True, exist_ok=True)
            self.removed = remove_dead_uploads(self.tmp)
            remove_stale_parts(self.root)
            _empty_trash(self.trash)
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    # ------------------------------------------------------------------------------------------ blobs
    def blob_path(self, sha256: str) -> Path:
        if not _HEX64.fullmatch(sha256):
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
                    if _HEX64.fullmatch(folder.name + path.name):
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
        _fsync_dir(dest.parent)
        return True

    def regular_file(self, data: bytes) -> FileEntry:
        """Store a small file sent inline in a commit."""
        sha256, size = self.store_blob([data])
        return FileEntry(sha256, size, lfs=False, git_sha1=git_blob_sha1(data))

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

    def read_blob(self, entry: FileEntry) -> bytes:
        return self.blob_path(entry.sha256).read_bytes()

    # ------------------------------------------------------------------------------------------ LFS records
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
        _fsync_dir(folder)

    def lfs_records(self, repo_id: str) -> list[str]:
        """The sha256 of every LFS object the repo has a record for (none, for a repo written before
        records existed or gone meanwhile: this only reads)."""
        try:
            with os.scandir(self._repo_dir(repo_id) / "lfs") as entries:
                return [entry.name for entry in entries if _HEX64.fullmatch(entry.name)]
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

    def lfs_objects(self, repo_id: str) -> set[str]:
        """The sha256 of every LFS file that any commit of the repo names (old commits stay downloadable)."""
        found: set[str] = set()
        for path in (self._repo_dir(repo_id) / "commits").glob("*.json"):
            commit = _commit_from_json(path.stem, _read_json(path))
            found.update(entry.sha256 for entry in commit.files.values() if entry.lfs)
        return found

    # ------------------------------------------------------------------------------------------ repos
    def _repo_dir(self, repo_id: str) -> Path:
        namespace, _, name = repo_id.partition("/")
        return self.root / "repos" / check_name(namespace, "namespace") / check_name(name, "repo name")

    def create_repo(self, repo_id: str, owner: str, private: bool) -> Commit:
        """Create the repo with an empty initial commit on ``main``; :class:`RepoExists` if it is there.

        Built in a temp folder and renamed: renaming onto an existing (never empty) repo folder fails, which
        makes the existence check and the creation one atomic step.
        """
        final = self._repo_dir(repo_id)
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():
            raise RepoExists(f"repo {repo_id} already exists")
        with private_workdir(final.parent, f".{final.name}.") as work:  # a killed server's is removed
            staging = work / "repo"
            staging.mkdir()
            (staging / "lfs").mkdir()
            created = now_iso()
            _write_json_atomic(staging / "repo.json", asdict(RepoMeta(owner, private, created)))
            initial = self._write_commit(staging, None, "initial commit", owner, {})
            _write_json_atomic(staging / "refs.json", {"heads": {DEFAULT_BRANCH: initial.id}, "pr": {}})
            try:
                os.rename(staging, final)
            except OSError as exc:
                raise RepoExists(f"repo {repo_id} already exists") from exc
            _fsync_dir(final.parent)
        return initial

    def repo_meta(self, repo_id: str) -> RepoMeta:
        path = self._repo_dir(repo_id) / "repo.json"
        try:
            return RepoMeta(**_read_json(path))
        except FileNotFoundError:  # also a repo deleted or moved since the caller looked
            raise RepoNotFound(f"repo {repo_id} not found") from None

    def iter_repos(self) -> Iterator[str]:
        """Every repo's id, sorted; work folders of creations in flight (``.NAME.*``) are not repos."""
        for namespace in sorted((self.root / "repos").iterdir()):
            if namespace.is_dir() and not namespace.name.startswith("."):
                for repo in sorted(namespace.iterdir()):
                    if not repo.name.startswith(".") and (repo / "repo.json").is_file():
                        yield f"{namespace.name}/{repo.name}"

    def set_private(self, repo_id: str, private: bool) -> RepoMeta:
        """Make the repo private or public (``update_repo_settings``)."""
        self.repo_meta(repo_id)
        with self._locked(repo_id):
            meta = self.repo_meta(repo_id)
            meta = RepoMeta(meta.owner, private, meta.created_at)
            _write_json_atomic(self._repo_dir(repo_id) / "repo.json", asdict(meta))
        return meta

    def delete_repo(self, repo_id: str) -> None:
        """Remove the repo: one rename into ``trash/`` under the repo lock (readers see it whole or not at
        all, and a commit in flight either lands before or finds no repo), then the files go. Its blobs stay
        until ``zoo hub gc``: other repos may share them."""
        repo_dir = self._repo_dir(repo_id)
        self.repo_meta(repo_id)
        with self._locked(repo_id):
            self.repo_meta(repo_id)
            doomed = Path(tempfile.mkdtemp(prefix="repo.", dir=self.trash))
            os.rename(repo_dir, doomed / "repo")
            _fsync_dir(repo_dir.parent)
        shutil.rmtree(doomed, ignore_errors=True)

    def move_repo(self, src: str, dst: str) -> None:
        """Rename ``src`` to ``dst`` (``move_repo``); :class:`RepoExists` if ``dst`` is taken. A rename onto
        a repo folder (never empty) fails, so the check and the move are one step."""
        src_dir, dst_dir = self._repo_dir(src), self._repo_dir(dst)
        self.repo_meta(src)
        dst_dir.parent.mkdir(parents=True, exist_ok=True)
        with self._locked(src):
            self.repo_meta(src)
            if dst_dir.exists():
                raise RepoExists(f"repo {dst} already exists")
            try:
                os.rename(src_dir, dst_dir)
            except OSError as exc:
                raise RepoExists(f"repo {dst} already exists") from exc
            _fsync_dir(src_dir.parent)
            _fsync_dir(dst_dir.parent)

    # ------------------------------------------------------------------------------------------ commits
    def _write_commit(
        self, repo_dir: Path, parent: str | None, message: str, author: str, files: dict[str, FileEntry]
    ) -> Commit:
        draft = Commit("", parent, message, author, now_iso(), files)
        body = _commit_body(draft)
        commit = Commit(_commit_id(body), parent, message, author, draft.date, files)
        _write_json_atomic(repo_dir / "commits" / f"{commit.id}.json", body)
        return commit

    def load_commit(self, repo_id: str, commit_id: str) -> Commit:
        path = self._repo_dir(repo_id) / "commits" / f"{commit_id}.json"
        if not _HEX40.fullmatch(commit_id) or not path.is_file():
            raise RevisionNotFound(f"revision {commit_id} not found in {repo_id}")
        return _commit_from_json(commit_id, _read_json(path))

    def refs(self, repo_id: str) -> dict[str, dict[str, str]]:
        """``{"heads": {branch: id}, "pr": {number: id}, "tags": {tag: id}}``; refs.json is replaced
        atomically, so no lock. (Stores written before tags existed have no "tags" key.)"""
        self.repo_meta(repo_id)
        try:
            refs = _read_json(self._repo_dir(repo_id) / "refs.json")
        except FileNotFoundError:
            raise RepoNotFound(f"repo {repo_id} not found") from None
        refs.setdefault("tags", {})
        return refs

    def history(self, repo_id: str, commit: Commit) -> Iterator[Commit]:
        """``commit``, then its parents back to the repo's initial commit."""
        current: Commit | None = commit
        while current is not None:
            yield current
            current = self.load_commit(repo_id, current.parent) if current.parent else None

    def resolve(self, repo_id: str, revision: str) -> Commit:
        """A branch, a tag, ``refs/heads/BRANCH``, ``refs/tags/TAG``, ``refs/pr/N`` or a full commit id."""
        refs = self.refs(repo_id)
        kind, name = _ref_of(refs, revision) or (None, None)
        if kind is not None:
            return self.load_commit(repo_id, refs[kind][name])
        if _HEX40.fullmatch(revision):
            return self.load_commit(repo_id, revision)
        raise RevisionNotFound(f"revision {revision} not found in {repo_id}")

    def commit(
        self,
        repo_id: str,
        revision: str,
        ops: list[Operation],
        *,
        message: str,
        author: str,
        parent_commit: str | None = None,
        create_pr: bool = False,
    ) -> tuple[Commit, int | None]:
        """Apply ``ops`` on ``revision`` (a branch or PR ref); returns the commit and the new PR's number.

        Under the repo lock, concurrent commits serialize: each lands on top of the previous one. A client
        that names its ``parent_commit`` (a full id or a prefix) is refused with :class:`CommitConflict`
        when the branch has moved since; with ``create_pr`` the PR starts from that commit instead.
        """
        repo_dir = self._repo_dir(repo_id)
        self.repo_meta(repo_id)  # RepoNotFound before the lock file is opened in its folder
        with self._locked(repo_id):
            refs = self.refs(repo_id)
            ref = _ref_of(refs, revision)
            if ref is None:
                raise RevisionNotFound(f"branch {revision} not found in {repo_id} (commits go to branches)")
            if ref[0] == "tags":
                raise Forbidden(f"{revision} is a tag of {repo_id}: commits go to branches")
            head = refs[ref[0]][ref[1]]
            base = head
            if parent_commit is not None and create_pr:
                base = self._find_commit(repo_id, parent_commit).id
            elif parent_commit is not None and not head.startswith(parent_commit.lower()):
                raise CommitConflict(
                    f"{revision} moved: its head is {head}, not {parent_commit}; refresh and try again"
                )
            files = apply_operations(self.load_commit(repo_id, base).files, ops)
            new = self._write_commit(repo_dir, base, message, author, files)
            pr_number = None
            if create_pr:
                pr_number = max((int(n) for n in refs["pr"]), default=0) + 1
                refs["pr"][str(pr_number)] = new.id
            else:
                refs[ref[0]][ref[1]] = new.id
            _write_json_atomic(repo_dir / "refs.json", refs)
        return new, pr_number

    def create_branch(self, repo_id: str, branch: str, starting_point: str | None = None) -> Commit:
        """Point a new branch at ``starting_point`` (a revision; main by default); :class:`RefExists` if
        the branch is there already. Returns the commit it starts at."""
        check_branch(branch)
        self.repo_meta(repo_id)  # RepoNotFound before the lock file is opened in its folder
        with self._locked(repo_id):
            refs = self.refs(repo_id)
            if branch in refs["heads"]:
                raise RefExists(f"branch {branch} already exists in {repo_id}")
            start = self.resolve(repo_id, starting_point or DEFAULT_BRANCH)
            refs["heads"][branch] = start.id
            _write_json_atomic(self._repo_dir(repo_id) / "refs.json", refs)
        return start

    def delete_branch(self, repo_id: str, branch: str) -> None:
        """Remove a branch (never ``main``); :class:`RevisionNotFound` if there is none of that name."""
        self._delete_ref(repo_id, "heads", branch.removeprefix("refs/heads/"))

    def create_tag(self, repo_id: str, tag: str, revision: str | None = None) -> Commit:
        """Tag ``revision`` (main by default); :class:`RefExists` if the tag is there already."""
        check_branch(tag)
        self.repo_meta(repo_id)
        with self._locked(repo_id):
            refs = self.refs(repo_id)
            if tag in refs["tags"]:
                raise RefExists(f"tag {tag} already exists in {repo_id}")
            target = self.resolve(repo_id, revision or DEFAULT_BRANCH)
            refs["tags"][tag] = target.id
            _write_json_atomic(self._repo_dir(repo_id) / "refs.json", refs)
        return target

    def delete_tag(self, repo_id: str, tag: str) -> None:
        self._delete_ref(repo_id, "tags", tag.removeprefix("refs/tags/"))

    def _delete_ref(self, repo_id: str, kind: str, name: str) -> None:
        what = {"heads": "branch", "tags": "tag"}[kind]
        if kind == "heads" and name == DEFAULT_BRANCH:
            raise Forbidden(f"the default branch {DEFAULT_BRANCH} cannot be deleted")
        self.repo_meta(repo_id)
        with self._locked(repo_id):
            refs = self.refs(repo_id)
            if refs[kind].pop(name, None) is None:
                raise RevisionNotFound(f"{what} {name} not found in {repo_id}")
            _write_json_atomic(self._repo_dir(repo_id) / "refs.json", refs)

    def _find_commit(self, repo_id: str, prefix: str) -> Commit:
        """A commit of this repo by a unique id prefix (clients may send 7 characters)."""
        prefix = prefix.lower()
        folder = self._repo_dir(repo_id) / "commits"
        matches = [p.stem for p in folder.glob("*.json") if p.stem.startswith(prefix)]
        if len(matches) != 1:
            raise RevisionNotFound(f"commit {prefix} not found (or ambiguous) in {repo_id}")
        return self.load_commit(repo_id, matches[0])

    def last_commits(self, repo_id: str, commit: Commit, paths: Iterable[str]) -> dict[str, Commit]:
        """For each path, the commit that last changed it: walking back from ``commit``, the oldest commit of
        the unbroken run in which the path looks as it does in ``commit``."""
        want = {path: path_view(commit.files, path) for path in paths}
        found: dict[str, Commit] = {}
        current = commit
        while len(found) < len(want):
            parent = self.load_commit(repo_id, current.parent) if current.parent else None
            for path, view in want.items():
                if path not in found and (parent is None or path_view(parent.files, path) != view):
                    found[path] = current
            if parent is None:
                break
            current = parent
        return found

    # ------------------------------------------------------------------------------------------ locks
    @contextlib.contextmanager
    def _locked(self, repo_id: str) -> Iterator[None]:
        """Serialize ref updates of one repo across this process's threads and across processes."""
        with self._locks_guard:
            thread_lock = self._locks.setdefault(repo_id, threading.Lock())
        with thread_lock, (self._repo_dir(repo_id) / ".lock").open("a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)


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


def _ref_of(refs: dict[str, dict[str, str]], revision: str) -> tuple[str, str] | None:
    """Where ``revision`` lives in refs.json: ``("heads", name)``, ``("pr", number)``, ``("tags", name)``
    or None. A bare name is a branch before it is a tag, as git reads it."""
    branch = revision.removeprefix("refs/heads/")
    if branch in refs["heads"] and not revision.startswith("refs/tags/"):
        return "heads", branch
    match = _PR_REF.fullmatch(revision)
    if match and match.group(1) in refs["pr"]:
        return "pr", match.group(1)
    tag = revision.removeprefix("refs/tags/")
    if tag in refs.get("tags", {}) and not revision.startswith("refs/heads/"):
        return "tags", tag
    return None


def _empty_trash(trash: Path) -> None:
    """Finish removing repos whose deletion a killed process left in ``trash/``; another process's
    removal in flight may race this one, which is harmless (both remove)."""
    for leftover in trash.iterdir():
        shutil.rmtree(leftover, ignore_errors=True)
