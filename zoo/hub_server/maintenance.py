"""``zoo hub gc`` and ``zoo hub verify``: keep a hub root's blob store lean and prove it sound.

Both read the commits of every repo (``repos/NS/NAME/commits/*.json``, see :mod:`zoo.hub_server.storage`): a blob
is referenced when a file entry of any commit names its sha256, reachable from a ref or not (an old commit
stays downloadable by id, so its blobs stay). Neither ever writes a commit or a ref.

Garbage collection is safe while servers serve the same root (the protocol is in :mod:`zoo.hub_server.storage`'s
docstring): a blob is taken only when no commit referenced it when gc looked, and it is older than the
grace period; each one is re-stat'ed and unlinked under the exclusive ``blobs.lock``, which every writer
that re-uses a stored blob holds shared while it refreshes the blob's mtime. So a blob a commit is about to
use is either fresh when gc looks again (kept), or gone when the writer looks (the writer stores it again
or refuses the commit); it is never referenced and gone. A grace of 0 drops that margin for blobs just
uploaded and not committed yet: use it only when no server runs.

A repo renamed (``move_repo``) while gc lists the repos could be missed by one listing; the listing is
repeated until one finds no repo folder (by inode, which a rename keeps) that was not read in full.

The repos' LFS records (``repos/NS/NAME/lfs/SHA256``: which objects a repo may commit) protect no blob: an
upload whose commit never came is collected all the same. gc then removes the records of blobs that are
gone, each re-checked under the exclusive ``blobs.lock``, under which alone a record is made.

Verification streams every blob through sha256 and compares it with its name and with the sizes the
commits state, and checks that every blob a commit names, and every commit a ref or parent names, is there.
It repairs nothing: what is corrupt or missing comes back from a backup (docs/hub-serve.md#backups).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from zoo.errors import ZooError
from zoo.hub_server.blobs import remove_dead_uploads, remove_stale_parts
from zoo.hub_server.storage import HubStorage
from zoo.hub_server.store_records import InvalidInput

_CHUNK = 1 << 20
_LISTING_ROUNDS = 20


@dataclass(frozen=True)
class Reference:
    """Where a commit names a blob: the first place found (``count`` says how many there are)."""

    repo_id: str
    commit: str
    path: str
    size: int
    count: int = 1


@dataclass
class References:
    """Every blob the commits of the root name, and what the listing saw."""

    blobs: dict[str, Reference] = field(default_factory=dict)
    repos: int = 0
    commits: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (file, message): what verify reports
    missing_commits: list[str] = field(default_factory=list)  # refs and parents naming no commit file

    def add(self, sha256: str, ref: Reference) -> None:
        """Count one more reference to ``sha256``; the first one found is the one reports name."""
        seen = self.blobs.get(sha256)
        self.blobs[sha256] = ref if seen is None else replace(seen, count=seen.count + ref.count)

    def merge(self, other: References) -> None:
        for sha256, ref in other.blobs.items():
            self.add(sha256, ref)
        self.commits += other.commits
        self.unreadable += other.unreadable
        self.missing_commits += other.missing_commits


@dataclass(frozen=True)
class GcReport:
    """What ``collect_garbage`` did (or, with ``dry_run``, would do)."""

    dry_run: bool
    grace_seconds: float
    repos: int
    commits: int
    blobs: int  # blobs stored when gc listed them
    referenced: int  # of those, named by a commit: kept
    kept_fresh: int  # unreferenced but younger than the grace period: kept
    removed: int  # unreferenced blobs removed (would be, on a dry run)
    removed_bytes: int
    uploads_removed: int  # dead uploads in tmp/ (of killed processes) removed
    uploads_bytes: int
    parts_removed: int  # multipart uploads abandoned long ago (their parts folders) removed
    records_removed: int  # repos' LFS records of blobs no longer stored, removed

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Problem:
    """One thing verify found wrong, and the one line that says it."""

    kind: str  # "corrupt", "missing", "unreadable" (a commit file or a repo's), "missing-commit"
    what: str  # a sha256, or a commit file / ref
    message: str


@dataclass(frozen=True)
class VerifyReport:
    repos: int
    commits: int
    blobs: int
    bytes: int
    orphans: int  # stored blobs no commit names (``zoo hub gc`` removes them once past the grace period)
    orphan_bytes: int
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def count(self, kind: str) -> int:
        return sum(p.kind == kind for p in self.problems)

    def to_json(self) -> dict[str, Any]:
        return {
            **{k: v for k, v in asdict(self).items() if k != "problems"},
            "ok": self.ok,
            "problems": [asdict(p) for p in self.problems],
        }


def open_root(root: Path) -> HubStorage:
    """An existing root, opened without what a server's start does (creating folders, removing dead
    uploads, emptying ``trash/``): a dry run and a verification change nothing, and a mistyped ``--root``
    is an error rather than a new, empty store that verifies clean."""
    try:
        return HubStorage(root, prepare=False)
    except InvalidInput as exc:
        raise ZooError(str(exc), hint="pass the --root that zoo hub serve uses") from None


# ------------------------------------------------------------------------------------------ references
def references(storage: HubStorage) -> References:
    """Every blob named by a commit of any repo; see the module docstring for why the listing repeats."""
    found = References()
    read: set[tuple[int, int]] = set()
    for _ in range(_LISTING_ROUNDS):
        new = 0
        for repo_id in _repo_ids(storage):
            repo_dir = storage.root / "repos" / repo_id
            key = _inode(repo_dir)
            if key in read:
                continue
            new += 1  # read now, or gone (deleted, or moved: the next listing finds it under its new name)
            part = _read_repo_whole(repo_id, repo_dir, key) if key is not None else None
            if part is not None:
                found.merge(part)
                read.add(key)  # type: ignore[arg-type]
        if new == 0:
            found.repos = len(read)
            return found
    raise ZooError(
        f"repos kept being created or moved while gc listed {storage.root / 'repos'}; nothing was removed",
        hint="run it again",
    )


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino


def _repo_ids(storage: HubStorage) -> Iterator[str]:
    try:
        yield from list(storage.iter_repos())
    except FileNotFoundError:  # a namespace folder vanished under the listing; the next round lists again
        return


def _read_repo_whole(repo_id: str, repo_dir: Path, key: tuple[int, int]) -> References | None:
    """One repo's references read in full, or None if it moved or went away meanwhile. A file that
    vanishes while the repo stays where it was (a rewrite of its history racing the read) means a read
    again; one still missing after that is the repo's own fault, which verify reports."""
    for _ in range(3):
        part = References()
        try:
            _read_repo(repo_id, repo_dir, part)
            return part
        except FileNotFoundError as exc:
            if _inode(repo_dir) != key:
                return None
            missing = Path(exc.filename or repo_dir)
    where = missing.relative_to(repo_dir) if missing.is_relative_to(repo_dir) else missing
    name = f"{repo_id}/{where}"  # what was read before the file was found missing still counts
    part.unreadable.append((name, f"unreadable repo {repo_id}: {name} is missing"))
    return part


def _read_repo(repo_id: str, repo_dir: Path, found: References) -> None:
    """Add the references of every commit file of one repo; FileNotFoundError if a file is missing."""
    commits = repo_dir / "commits"
    names = sorted(entry.name for entry in os.scandir(commits) if entry.name.endswith(".json"))
    ids = {name.removesuffix(".json") for name in names}
    for name in names:
        commit_id = name.removesuffix(".json")
        try:
            body = json.loads((commits / name).read_bytes())
            files = body["files"]
            entries = [(path, entry["sha256"], int(entry["size"])) for path, entry in files.items()]
        except FileNotFoundError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError):
            what = f"{repo_id}/commits/{name}"
            found.unreadable.append((what, f"unreadable commit {what}: not the JSON zoo writes"))
            continue
        found.commits += 1
        parent = body.get("parent")
        if parent and parent not in ids and not (commits / f"{parent}.json").is_file():
            found.missing_commits.append(f"{repo_id}: commit {commit_id}'s parent {parent}")
        for path, sha256, size in entries:
            found.add(sha256, Reference(repo_id, commit_id, path, size))
    refs = json.loads((repo_dir / "refs.json").read_bytes())
    for kind, names_to_ids in refs.items():
        for ref, commit_id in names_to_ids.items() if isinstance(names_to_ids, dict) else ():
            if commit_id not in ids and not (commits / f"{commit_id}.json").is_file():  # or committed since
                found.missing_commits.append(f"{repo_id}: {kind} {ref} -> {commit_id}")


# ------------------------------------------------------------------------------------------ gc
def collect_garbage(root: Path, grace_seconds: float = 3600, dry_run: bool = False) -> GcReport:
    """Remove the blobs no commit names that are older than ``grace_seconds``, the dead uploads in ``tmp/``
    and multipart uploads abandoned long ago; safe while servers serve ``root`` (module docstring).
    ``dry_run`` counts, removes nothing."""
    if grace_seconds < 0:
        raise ZooError(f"the grace period must be 0 or more seconds, not {grace_seconds:g}")
    storage = open_root(root)
    refs = references(storage)  # before the blobs are listed: a blob stored after this is fresh anyway
    if refs.unreadable:  # its blobs would look unreferenced
        raise ZooError(
            f"{refs.unreadable[0][1]} (under {storage.root / 'repos'}); gc removed nothing",
            hint="run zoo hub verify, and restore that file from a backup",
        )
    blobs = kept_fresh = removed_bytes = 0
    removed: set[str] = set()
    for sha256, path in storage.iter_blobs():
        blobs += 1
        if sha256 in refs.blobs:
            continue
        size = _remove_if_stale(storage, path, grace_seconds, dry_run)
        if size is None:
            kept_fresh += 1
        else:
            removed.add(sha256)
            removed_bytes += size
    uploads = remove_dead_uploads(storage.tmp, dry_run=dry_run)
    parts = remove_stale_parts(storage.root, dry_run=dry_run)
    records = _remove_stale_records(storage, removed, dry_run)
    return GcReport(
        dry_run,
        grace_seconds,
        refs.repos,
        refs.commits,
        blobs,
        blobs - kept_fresh - len(removed),
        kept_fresh,
        len(removed),
        removed_bytes,
        uploads.files,
        uploads.bytes,
        parts,
        records,
    )


def _remove_stale_records(storage: HubStorage, removed: set[str], dry_run: bool) -> int:
    """Remove the repos' LFS records whose blob is no longer stored; with ``dry_run``, count those whose
    blob is missing or would have been ``removed``."""
    count = 0
    for repo_id in _repo_ids(storage):
        for sha256 in storage.lfs_records(repo_id):
            if dry_run:
                count += sha256 in removed or not storage.blob_path(sha256).exists()
            elif not storage.blob_path(sha256).exists():
                count += storage.drop_lfs_record(repo_id, sha256)
    return count


def _remove_if_stale(storage: HubStorage, path: Path, grace_seconds: float, dry_run: bool) -> int | None:
    """Unlink an unreferenced blob if it is still older than the grace period, re-checked under the
    exclusive guard (a writer re-using it refreshes its mtime under the shared one); returns its size, or
    None when it is kept. A blob that is gone already counts as kept: someone else removed it."""
    with (
        contextlib.nullcontext() if dry_run else storage.blob_guard(exclusive=True)
    ):  # a dry run blocks no one
        try:
            info = path.stat()
        except FileNotFoundError:
            return None
        if time.time() - info.st_mtime < grace_seconds or not stat.S_ISREG(info.st_mode):
            return None
        if not dry_run:
            path.unlink()
    return info.st_size


# ------------------------------------------------------------------------------------------ verify
def verify_blobs(root: Path, workers: int | None = None) -> VerifyReport:
    """Recheck every stored blob's sha256 (streamed) and its size against the commits; report corrupt and
    missing blobs, commits that do not parse or are missing, and how many blobs no commit names."""
    storage = open_root(root)
    refs = references(storage)
    stored = dict(storage.iter_blobs())
    problems: list[Problem] = []
    problems += [Problem("unreadable", what, message) for what, message in refs.unreadable]
    problems += [
        Problem("missing-commit", ref, f"missing commit: {ref} names a commit file that is not there")
        for ref in refs.missing_commits
    ]
    with ThreadPoolExecutor(workers or min(4, os.cpu_count() or 1)) as pool:
        checked = list(pool.map(_hash_file, stored.values()))  # hashlib releases the GIL on big chunks
    total = orphans = orphan_bytes = 0
    for (sha256, path), (actual, size) in zip(stored.items(), checked, strict=True):
        if actual is None:
            continue  # removed since it was listed (gc): not stored, so not checked
        total += size
        ref = refs.blobs.get(sha256)
        if ref is None:
            orphans, orphan_bytes = orphans + 1, orphan_bytes + size
        if actual != sha256:
            problems.append(
                Problem(
                    "corrupt",
                    sha256,
                    f"corrupt blob {path}: its content's sha256 is {actual}"
                    + (f" ({_where(ref)})" if ref else " (no commit names it)"),
                )
            )
        elif ref is not None and size != ref.size:
            problems.append(
                Problem(
                    "corrupt",
                    sha256,
                    f"corrupt blob {path}: {size} bytes, the commits say {ref.size} ({_where(ref)})",
                )
            )
    for sha256, ref in sorted(refs.blobs.items(), key=lambda item: (item[1].repo_id, item[1].path)):
        if sha256 not in stored and not storage.blob_path(sha256).is_file():
            problems.append(Problem("missing", sha256, f"missing blob {sha256}: {_where(ref)}"))
    return VerifyReport(refs.repos, refs.commits, len(stored), total, orphans, orphan_bytes, tuple(problems))


def _where(ref: Reference) -> str:
    more = f", and {ref.count - 1} more reference{'s' if ref.count > 2 else ''}" if ref.count > 1 else ""
    return f"{ref.repo_id}@{ref.commit[:12]} {ref.path}{more}"


def _hash_file(path: Path) -> tuple[str | None, int]:
    """The file's sha256 and size, read in 1 MiB chunks; (None, 0) if it is gone."""
    digest = hashlib.sha256()
    size = 0
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except FileNotFoundError:
        return None, 0
    return digest.hexdigest(), size
