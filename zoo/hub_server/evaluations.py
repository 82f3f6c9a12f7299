"""The outcomes of ``zoo hub serve --reevaluate``, in ROOT/evaluations.sqlite.

Its own file beside the index (:mod:`zoo.hub_server.index`): the index is derived from the store and may be
rebuilt at any start, while an outcome took minutes of CPU to get. The worker (:mod:`zoo.hub_server.reevaluate`)
writes them; the leaderboard (:mod:`zoo.hub_server.scores`) reads them.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path

DB_FILE = "evaluations.sqlite"
_SCHEMA = """CREATE TABLE IF NOT EXISTS evaluations (
    repo_id TEXT NOT NULL, sha TEXT NOT NULL, status TEXT NOT NULL, reason TEXT, eval_json TEXT,
    evaluated_at TEXT NOT NULL, seconds REAL NOT NULL, PRIMARY KEY (repo_id, sha))"""


@dataclass(frozen=True)
class Outcome:
    """One commit's re-evaluation: ``status`` is ``ok`` (``eval_json`` holds what zoo eval wrote),
    ``failed`` or ``skipped`` (``reason`` says why, in one line)."""

    repo_id: str
    sha: str
    status: str
    reason: str | None
    eval_json: str | None
    evaluated_at: str
    seconds: float


class EvaluationStore:
    """The outcomes in ROOT/evaluations.sqlite; a connection per call, so any thread may use it."""

    def __init__(self, root: Path):
        self.path = Path(root) / DB_FILE

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(_SCHEMA)
        return conn

    def record(self, outcome: Outcome) -> None:
        """Write (or replace) one outcome, atomically."""
        with contextlib.closing(self._connect()) as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT OR REPLACE INTO evaluations VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    outcome.repo_id,
                    outcome.sha,
                    outcome.status,
                    outcome.reason,
                    outcome.eval_json,
                    outcome.evaluated_at,
                    outcome.seconds,
                ),
            )
            conn.execute("COMMIT")

    def get(self, repo_id: str, sha: str) -> Outcome | None:
        if not self.path.is_file():
            return None
        with contextlib.closing(self._connect()) as conn:
            row = conn.execute(
                "SELECT * FROM evaluations WHERE repo_id = ? AND sha = ?", (repo_id, sha)
            ).fetchone()
        return Outcome(*row) if row else None

    def outcomes(self) -> dict[tuple[str, str], Outcome]:
        """Every outcome by (repo_id, sha); {} without the file (it is not created by reading)."""
        if not self.path.is_file():
            return {}
        with contextlib.closing(self._connect()) as conn:
            rows = conn.execute("SELECT * FROM evaluations").fetchall()
        return {(row[0], row[1]): Outcome(*row) for row in rows}

    def forget(self, repo_id: str) -> None:
        """Drop a deleted repo's outcomes."""
        if self.path.is_file():
            with contextlib.closing(self._connect()) as conn:
                conn.execute("DELETE FROM evaluations WHERE repo_id = ?", (repo_id,))
