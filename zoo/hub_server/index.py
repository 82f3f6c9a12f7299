"""The query index of ``zoo hub serve``: repo metadata in SQLite, derived from the plain-file store.

The store (:mod:`zoo.hub_server.storage`) is the truth; this index only answers what a list query needs
(``list_models`` with author, search, tags and sort; the web index and leaderboard pages) without
opening every repo. It holds one row per repo: owner, visibility, dates, the ``main`` head and the
README's card metadata, plus one row per tag.

Why it stays consistent: every change the API makes to a repo (a commit, a new repo, a move, a
deletion, its settings) is written to the store first, then the repo's row is re-read from the store
(:meth:`HubIndex.refresh`). A crash between the two leaves a stale row; opening the index compares each
repo's ``main`` head and visibility with the store and refreshes what differs (:meth:`reconcile`), so a
stale row lives no longer than the process that wrote it. A missing, unreadable or older-schema
database file is rebuilt from the store. SQLite in WAL mode lets several processes that serve one ROOT
share the file.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.hub.card_header import card_metadata
from zoo.hub_server.protocol import TokenInfo, card_tags
from zoo.hub_server.storage import HubStorage
from zoo.hub_server.store_records import DEFAULT_BRANCH, FileEntry, RepoNotFound, RevisionNotFound

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE repos (
    repo_id TEXT PRIMARY KEY, author TEXT NOT NULL, name TEXT NOT NULL, private INTEGER NOT NULL,
    created_at TEXT NOT NULL, last_modified TEXT NOT NULL, sha TEXT NOT NULL,
    card TEXT NOT NULL, library_name TEXT, pipeline_tag TEXT, size INTEGER NOT NULL
);
CREATE TABLE repo_tags (repo_id TEXT NOT NULL REFERENCES repos ON DELETE CASCADE, tag TEXT NOT NULL,
                        PRIMARY KEY (repo_id, tag));
CREATE INDEX repo_tags_by_tag ON repo_tags (tag);
CREATE INDEX repos_by_author ON repos (author);
"""
#: ``list_models``' sort keys and their columns; the Hub's popularity keys (downloads, likes, trending)
#: are all zero here, so they order by the last change, as an empty popularity would.
SORT_COLUMNS = {
    "lastModified": "last_modified",
    "last_modified": "last_modified",
    "createdAt": "created_at",
    "created_at": "created_at",
    "id": "repo_id",
    "downloads": "last_modified",
    "likes": "last_modified",
    "trendingScore": "last_modified",
    "trending_score": "last_modified",
}

Listener = Callable[[str, str | None], None]


@dataclass(frozen=True)
class RepoRow:
    """What the index knows of one repo: enough for a list item, a search hit or a leaderboard entry."""

    repo_id: str
    author: str
    name: str
    private: bool
    created_at: str
    last_modified: str
    sha: str
    card: dict[str, Any]
    tags: list[str] = field(default_factory=list)
    library_name: str | None = None
    pipeline_tag: str | None = None
    size: int = 0


class HubIndex:
    """The SQLite index of one store; safe for concurrent threads (one connection per thread).

    ``may_read(viewer, namespace)`` says whether a viewer may see the private repos of a namespace;
    ``listeners`` are called with ``(repo_id, main_head)`` after a repo's ``main`` head changes, and with
    ``(repo_id, None)`` after it is deleted or moved away.
    """

    def __init__(
        self, storage: HubStorage, may_read: Callable[[TokenInfo | None, str], bool], max_card_bytes: int
    ):
        self.storage, self.may_read = storage, may_read
        self.path = storage.root / "index.sqlite"
        self.max_card_bytes = max_card_bytes
        self.listeners: list[Listener] = []
        self._local = threading.local()
        # a README's metadata, by blob: blobs never change, and model_info asks for it on every call
        self._card_of_blob = functools.lru_cache(maxsize=256)(self._parse_card)
        self.rebuilt = self._open()
        self.reconcile()

    # ------------------------------------------------------------------------------------------ db
    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=True)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA foreign_keys=ON")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _open(self) -> bool:
        """Open the database, creating or rebuilding it when it is missing, damaged or of another schema;
        True if it was (re)built."""
        try:
            version = self._connection().execute("PRAGMA user_version").fetchone()[0]
            if version == SCHEMA_VERSION:
                self._connection().execute("SELECT count(*) FROM repos").fetchone()
                return False
        except sqlite3.DatabaseError:
            pass
        self.rebuild()
        return True

    def rebuild(self) -> None:
        """Drop everything and re-read every repo from the store (the index is only ever derived)."""
        self.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self._connection().executescript(f"BEGIN; {_SCHEMA} PRAGMA user_version={SCHEMA_VERSION}; COMMIT;")
        for repo_id in self.storage.iter_repos():
            self.refresh(repo_id, notify=False)

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    # ------------------------------------------------------------------------------------------ updates
    def reconcile(self) -> int:
        """Refresh every row whose ``main`` head or visibility differs from the store, drop rows of repos
        that are gone; returns how many rows changed."""
        known = {
            row[0]: (row[1], bool(row[2]))
            for row in self._connection().execute("SELECT repo_id, sha, private FROM repos")
        }
        changed = 0
        for repo_id in self.storage.iter_repos():
            state = known.pop(repo_id, None)
            try:
                current = (
                    self.storage.refs(repo_id)["heads"][DEFAULT_BRANCH],
                    self.storage.repo_meta(repo_id).private,
                )
            except (RepoNotFound, KeyError):
                continue
            if state != current:
                self.refresh(repo_id, notify=False)
                changed += 1
        for repo_id in known:
            self.refresh(repo_id, notify=False)
            changed += 1
        return changed

    def refresh(self, repo_id: str, *, notify: bool = True) -> RepoRow | None:
        """Re-read one repo from the store into its row (or drop the row if the repo is gone)."""
        before = self._head(repo_id)
        row = self._read_store(repo_id)
        with self._transaction() as db:
            db.execute("DELETE FROM repos WHERE repo_id = ?", (repo_id,))
            if row is not None:
                db.execute(
                    "INSERT INTO repos VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        row.repo_id,
                        row.author,
                        row.name,
                        int(row.private),
                        row.created_at,
                        row.last_modified,
                        row.sha,
                        json.dumps(row.card),
                        row.library_name,
                        row.pipeline_tag,
                        row.size,
                    ),
                )
                db.executemany("INSERT INTO repo_tags VALUES (?, ?)", [(repo_id, tag) for tag in row.tags])
        after = row.sha if row is not None else None
        if notify and after != before:
            for listener in list(self.listeners):
                listener(repo_id, after)
        return row

    def _head(self, repo_id: str) -> str | None:
        found = self._connection().execute("SELECT sha FROM repos WHERE repo_id = ?", (repo_id,)).fetchone()
        return found[0] if found else None

    def _read_store(self, repo_id: str) -> RepoRow | None:
        try:
            meta = self.storage.repo_meta(repo_id)
            head = self.storage.resolve(repo_id, DEFAULT_BRANCH)
        except (RepoNotFound, RevisionNotFound):
            return None
        card = self.card(head.files.get("README.md"))
        author, _, name = repo_id.partition("/")
        library = card.get("library_name") if isinstance(card.get("library_name"), str) else None
        pipeline = card.get("pipeline_tag") if isinstance(card.get("pipeline_tag"), str) else None
        return RepoRow(
            repo_id,
            author,
            name,
            meta.private,
            meta.created_at,
            head.date,
            head.id,
            card,
            card_tags(card),
            library,
            pipeline,
            sum(e.size for e in head.files.values()),
        )

    # ------------------------------------------------------------------------------------------ cards
    def card(self, readme: FileEntry | None) -> dict[str, Any]:
        """A README's card metadata ({} without one, or for one that does not parse or is too large)."""
        if readme is None or readme.size > self.max_card_bytes:
            return {}
        return self._card_of_blob(readme)

    def _parse_card(self, readme: FileEntry) -> dict[str, Any]:
        try:
            return card_metadata(self.storage.read_blob(readme).decode("utf-8", "replace"))
        except (ValueError, OSError):
            return {}

    # ------------------------------------------------------------------------------------------ queries
    def get(self, repo_id: str) -> RepoRow | None:
        rows = self._select("WHERE repo_id = ?", [repo_id])
        return rows[0] if rows else None

    def all_public(self) -> list[RepoRow]:
        return self._select("WHERE private = 0 ORDER BY repo_id", [])

    def newest(self, limit: int) -> list[RepoRow]:
        """The ``limit`` repos changed last, private ones included (for the server's own work)."""
        return self._select("ORDER BY last_modified DESC, repo_id LIMIT ?", [limit])

    def search(
        self,
        viewer: TokenInfo | None,
        *,
        author: str | None = None,
        search: str | None = None,
        tags: tuple[str, ...] | list[str] = (),
        sort: str = "lastModified",
        direction: int = -1,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[RepoRow]:
        """The repos ``viewer`` may see that match every filter given: ``author`` exactly, ``search`` as a
        case-insensitive part of the repo id, each of ``tags``; sorted, then ``offset``/``limit``."""
        if sort not in SORT_COLUMNS:
            raise ValueError(f"unknown sort {sort!r}: use one of lastModified, createdAt, id")
        where, args = ["1 = 1"], []
        if author:
            where.append("author = ?")
            args.append(author)
        if search:
            where.append("instr(lower(repo_id), ?) > 0")
            args.append(search.lower())
        for tag in tags:
            where.append("repo_id IN (SELECT repo_id FROM repo_tags WHERE tag = ?)")
            args.append(tag)
        order = "DESC" if direction < 0 else "ASC"
        clause = f"WHERE {' AND '.join(where)} ORDER BY {SORT_COLUMNS[sort]} {order}, repo_id"
        rows = [
            row for row in self._select(clause, args) if not row.private or self.may_read(viewer, row.author)
        ]
        return rows[offset : None if limit is None else offset + limit]

    def _select(self, clause: str, args: list[Any]) -> list[RepoRow]:
        db = self._connection()
        rows = db.execute(
            "SELECT repo_id, author, name, private, created_at, last_modified, sha, card, library_name,"
            f" pipeline_tag, size FROM repos {clause}",
            args,
        ).fetchall()
        tags: dict[str, list[str]] = {}
        if rows:
            marks = ",".join("?" * len(rows))
            for repo_id, tag in db.execute(
                f"SELECT repo_id, tag FROM repo_tags WHERE repo_id IN ({marks})", [r[0] for r in rows]
            ):
                tags.setdefault(repo_id, []).append(tag)
        return [
            RepoRow(
                r[0],
                r[1],
                r[2],
                bool(r[3]),
                r[4],
                r[5],
                r[6],
                json.loads(r[7]),
                sorted(tags.get(r[0], [])),
                r[8],
                r[9],
                r[10],
            )
            for r in rows
        ]
