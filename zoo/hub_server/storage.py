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
read (the Hub's ``lfs-files/duplicate``); :class:`~zoo.hub_server.lfs_access.RepoLfs` decides. A record is one empty file, created in
one step (``O_CREAT``) and fsync'd; it travels with its repo when the repo is moved or deleted. Records
only bridge the time between an upload and its commit, so a root of an earlier release (no ``lfs/``
folders) or a backup without them loses nothing that was committed. gc removes the records of blobs it
removed, under the same exclusive ``blobs.lock``; a record is made under the shared one while its blob is
there.

The store is four modules: :mod:`zoo.hub_server.store_records` (what it holds: entries, commits,
operations, the checks on names and paths), :mod:`zoo.hub_server.blobs` (the blob store and uploads),
:mod:`zoo.hub_server.lfs_access` (the LFS records and :class:`~zoo.hub_server.lfs_access.RepoLfs`) and this
one (repos, refs and commits, in :class:`HubStorage`, which builds on the other two).

None of them knows anything about HTTP: they raise :class:`~zoo.hub_server.store_records.StorageError` subclasses whose messages are safe
to show to a client, and the server maps them to status codes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from zoo.atomic import private_workdir, write_text_atomic
from zoo.hub_server.blobs import Removed, remove_dead_uploads, remove_stale_parts
from zoo.hub_server.lfs_access import LfsStore
from zoo.hub_server.store_records import (
    DEFAULT_BRANCH,
    HEX40,
    Commit,
    CommitConflict,
    FileEntry,
    Forbidden,
    InvalidInput,
    Operation,
    RefExists,
    RepoExists,
    RepoMeta,
    RepoNotFound,
    RevisionNotFound,
    apply_operations,
    check_branch,
    fsync_dir,
    now_iso,
    path_view,
)

_PR_REF = re.compile(r"refs/pr/(\d+)")


def _write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True))
    fsync_dir(path.parent)


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


class HubStorage(LfsStore):
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

    # ------------------------------------------------------------------------------------------ repos
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
            fsync_dir(final.parent)
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
            fsync_dir(repo_dir.parent)
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
            fsync_dir(src_dir.parent)
            fsync_dir(dst_dir.parent)

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
        if not HEX40.fullmatch(commit_id) or not path.is_file():
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
        if HEX40.fullmatch(revision):
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

    # ------------------------------------------------------------------------------------------ LFS
    def lfs_objects(self, repo_id: str) -> set[str]:
        """The sha256 of every LFS file that any commit of the repo names (old commits stay downloadable)."""
        found: set[str] = set()
        for path in (self._repo_dir(repo_id) / "commits").glob("*.json"):
            commit = _commit_from_json(path.stem, _read_json(path))
            found.update(entry.sha256 for entry in commit.files.values() if entry.lfs)
        return found


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
