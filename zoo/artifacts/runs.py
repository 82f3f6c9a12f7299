"""The run record every framework's discovery produces, and filters over it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Run:
    """One training run (or a lone model file) found on disk."""

    framework: str
    path: Path  # the run dir, or the model file when given one alone
    run_name: str | None = None
    env_id: str | None = None
    exp_name: str | None = None
    seed: int | None = None
    started_at: int | None = None  # unix time from the run name
    model_file: Path | None = None
    other_model_files: list[Path] = field(default_factory=list)
    events_file: Path | None = None
    videos: dict[str, int] = field(default_factory=dict)  # "train"/"eval" -> number of mp4 files
    eval_json: Path | None = None
    name_problem: str | None = None

    def to_json(self) -> dict:
        data = asdict(self)
        for key in ("path", "model_file", "events_file", "eval_json"):
            data[key] = str(data[key]) if data[key] is not None else None
        data["other_model_files"] = [str(p) for p in self.other_model_files]
        return data


@dataclass(frozen=True)
class RunFilter:
    """``--exp-name`` / ``--env-id`` / ``--seed``: narrow discovery to the run a user means."""

    exp_name: str | None = None
    env_id: str | None = None
    seed: int | None = None

    def active(self) -> bool:
        return any(v is not None for v in (self.exp_name, self.env_id, self.seed))

    def matches(self, run: Run) -> bool:
        return (
            (self.exp_name is None or run.exp_name == self.exp_name)
            and (self.env_id is None or run.env_id == self.env_id)
            and (self.seed is None or run.seed == self.seed)
        )

    def describe(self) -> str:
        parts = [f"--{k.replace('_', '-')} {v}" for k, v in vars(self).items() if v is not None]
        return " ".join(parts)


def scan_tree(root: Path) -> Iterator[tuple[Path, list[os.DirEntry], list[Path]]]:
    """Depth-first ``(folder, entries, subdirs)`` in name order, from directory listings only.

    Like ``os.walk(topdown=True)``: a caller that recognises a run in ``folder`` clears ``subdirs``
    so that its insides are not searched again. Hidden folders and ``videos/`` are skipped.
    """
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        subdirs = sorted(
            (
                Path(e.path)
                for e in entries
                if e.is_dir() and not e.name.startswith(".") and e.name != "videos"
            ),
            reverse=True,
        )
        yield folder, entries, subdirs
        stack.extend(subdirs)
