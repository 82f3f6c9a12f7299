"""Find DEP-RL runs: ``<working_dir>/<name>/`` holding ``config.yaml`` and ``checkpoints/step_<N>.pt``.

deprl 0.3.2's trainer (``python -m deprl.main config.json``) writes ``config.yaml``, ``log.csv``, ``script.py``
and ``checkpoints/`` (``step_<N>.pt``: the model's state dict; ``time.pt``, ``obs_norm.pt``, the optimizers and the
replay buffer with ``full_save``, written without a step in their names). ``deprl.load_baseline`` fetches
``baselines_DEPRL/<x>/<y>/`` with ``config.yaml`` and ``checkpoints/step_<N>.pt`` only. Both are the same run to
zoo. Discovery lists folders and parses names; it opens no file. The latest step is the model (what
``deprl.load(path, env, checkpoint="last")`` picks); deprl keeps no best.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Set
from pathlib import Path

from zoo.artifacts.runs import Run, is_folder, listdir, listed_names, run_files, scan_tree
from zoo.frameworks.base import BEST_MODEL, SavedCheckpoint
from zoo.frameworks.deprl.config import CONFIG

STEP_FILE = re.compile(r"^step_(\d{1,15})\.pt$")
CHECKPOINTS = "checkpoints"
#: The registry entry of every DEP-RL run: deprl trains MPO (with or without DEP exploration).
EXP_NAME = "deprl_mpo"
#: The copy of the best checkpoint ``zoo watch`` keeps in the run folder: read as a model of the run when named,
#: never taken for its latest step.
BEST_FILE = f"{BEST_MODEL}.pt"


def step_of(path: Path) -> int:
    match = STEP_FILE.match(path.name)
    return int(match[1]) if match else -1


def step_files(checkpoints: Path) -> list[Path]:
    """The ``step_<N>.pt`` files of a ``checkpoints/`` folder, oldest first (none when it cannot be listed)."""
    try:
        entries = listdir(checkpoints)
    except OSError:
        return []
    files = [Path(e.path) for e in entries if STEP_FILE.match(e.name) and not is_folder(e)]
    return sorted(files, key=step_of)


def run_from_dir(folder: Path, chosen: Path | None = None) -> Run:
    """One run: the latest ``step_<N>.pt`` (or ``chosen``) is the model, the other steps are listed."""
    steps = step_files(folder / CHECKPOINTS)
    run = Run(framework="deprl", path=folder, run_name=folder.name, exp_name=EXP_NAME)
    run.model_file = chosen or (steps[-1] if steps else None)
    run.other_model_files = [p for p in steps if p != run.model_file]
    run.events_file, run.eval_json = run_files(folder)
    return run


def _is_run(folder: Path, names: Set[str]) -> bool:
    return CONFIG in names and CHECKPOINTS in names and bool(step_files(folder / CHECKPOINTS))


def discover(root: Path) -> Iterator[Run]:
    """Every DEP-RL run under ``root`` (a working dir, a run folder, its ``checkpoints/``, a ``step_<N>.pt``)."""
    if root.is_file():
        folder = root.parent.parent
        if STEP_FILE.match(root.name) and root.parent.name == CHECKPOINTS and (folder / CONFIG).is_file():
            yield run_from_dir(folder, chosen=root)
        elif root.name == BEST_FILE and _is_run(root.parent, listed_names(root.parent)):
            yield run_from_dir(root.parent, chosen=root)  # zoo watch's copy of the best step, by name
        return
    if root.name == CHECKPOINTS and (root.parent / CONFIG).is_file():
        root = root.parent
    for folder, entries, subdirs in scan_tree(root):
        if _is_run(folder, {e.name for e in entries}):
            yield run_from_dir(folder)
            subdirs.clear()


def saved_checkpoints(run_dir: Path) -> list[SavedCheckpoint]:
    """What ``zoo watch`` follows: the ``step_<N>.pt`` files saved so far, by step."""
    return [SavedCheckpoint(step_of(path), path) for path in step_files(run_dir / CHECKPOINTS)]
