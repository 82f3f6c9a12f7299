"""Find rsl_rl runs: folders holding ``model_{iter}.pt`` checkpoints.

Layouts: Isaac Lab / mjlab ``logs/rsl_rl/{experiment}/{date_time}[_{run_name}]/model_{iter}.pt`` beside
``params/agent.yaml`` and ``params/env.yaml``; Genesis ``logs/{exp_name}/model_{iter}.pt`` beside
``cfgs.pkl``. Discovery only lists directories and parses names (no file is opened), so it stays fast
on large trees; the configs are read later by ``inspect_run`` and ``load_policy``.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Iterator
from pathlib import Path

from zoo.artifacts.runs import Run, is_folder, listdir, run_files, scan_tree
from zoo.frameworks.base import BEST_MODEL, SavedCheckpoint

MODEL_NAME = re.compile(r"^model_(\d+)\.pt$")
#: The copy of the best checkpoint ``zoo watch`` keeps beside a run's ``model_{iter}.pt``: given by name it is
#: read as that run's model (its config is the run's), never taken for the latest checkpoint.
BEST_FILE = f"{BEST_MODEL}.pt"
#: The registry entry a discovered run belongs to: rsl_rl's runners write one checkpoint layout for PPO.
DEFAULT_EXP_NAME = "rsl_ppo"
_DATE_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2})")


def iteration(path: Path) -> int:
    """The training iteration in a ``model_{iter}.pt`` name."""
    m = MODEL_NAME.match(path.name)
    return int(m[1]) if m else -1


def _started_at(name: str) -> int | None:
    """Unix time of Isaac Lab's ``%Y-%m-%d_%H-%M-%S`` run-dir prefix (local time, as it was written)."""
    m = _DATE_TIME.match(name)
    if not m:
        return None
    return int(_dt.datetime.strptime(m[1], "%Y-%m-%d_%H-%M-%S").timestamp())


def run_from_dir(run_dir: Path, entries: list[os.DirEntry] | None = None, chosen: Path | None = None) -> Run:
    """One run: the latest checkpoint (or ``chosen``) is the model, the others are counted."""
    if entries is None:
        entries = listdir(run_dir)
    models = sorted(
        (Path(e.path) for e in entries if MODEL_NAME.match(e.name) and not is_folder(e)), key=iteration
    )
    started_at = _started_at(run_dir.name)
    # Isaac Lab run dirs are only a date: the experiment folder above them makes the name telling
    run_name = f"{run_dir.parent.name}/{run_dir.name}" if started_at is not None else run_dir.name
    run = Run(
        framework="rsl_rl", path=run_dir, run_name=run_name, exp_name=DEFAULT_EXP_NAME, started_at=started_at
    )
    run.model_file = chosen or (models[-1] if models else None)
    run.other_model_files = [p for p in models if p != run.model_file]
    run.events_file, run.eval_json = run_files(run_dir, entries)
    return run


def discover(root: Path) -> Iterator[Run]:
    """Every rsl_rl run under ``root`` (a logs folder, one run dir, or one ``model_{iter}.pt``)."""
    if root.is_file():
        if MODEL_NAME.match(root.name) or (root.name == BEST_FILE and saved_checkpoints(root.parent)):
            yield run_from_dir(root.parent, chosen=root)
        return
    for folder, entries, subdirs in scan_tree(root):
        if any(MODEL_NAME.match(e.name) for e in entries):
            yield run_from_dir(folder, entries)
            subdirs.clear()


def saved_checkpoints(run_dir: Path) -> list[SavedCheckpoint]:
    """The ``model_{iter}.pt`` files ``OnPolicyRunner`` has saved in ``run_dir`` so far, by iteration."""
    try:
        models = [Path(e.path) for e in listdir(run_dir) if MODEL_NAME.match(e.name) and not is_folder(e)]
    except OSError:
        return []
    return [SavedCheckpoint(iteration(path), path) for path in sorted(models, key=iteration)]
