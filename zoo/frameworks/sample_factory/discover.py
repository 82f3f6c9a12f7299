"""Find Sample Factory experiments: ``train_dir/<experiment>/`` with ``config.json`` and ``checkpoint_p<N>/``.

Sample Factory 2.x's ``Learner`` saves ``checkpoint_p<policy>/checkpoint_<train_step:09d>_<env_steps>.pth`` (it keeps
``--keep_checkpoints``, 2 by default) and, once ``--save_best_after`` env steps have passed, the one
``best_<train_step:09d>_<env_steps>_<metric>_<value:.3f>.pth``; ``--save_milestones_sec`` adds
``checkpoint_p<policy>/milestones/checkpoint_*.pth``. Its ``enjoy`` takes ``sorted(glob("checkpoint_*"))[-1]``
(``--load_checkpoint_kind latest``, the default) or ``sorted(glob("best_*"))[-1]`` (``best``) of policy
``--policy_index`` (0): that is what discovery names the run's model. A ``config.json`` alone is anybody's, so an
experiment is claimed only with a ``checkpoint_p<N>/`` holding one of those names. Names and listings only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from zoo.artifacts.runs import Run, is_folder, listdir, run_files, scan_tree
from zoo.frameworks.base import BEST_MODEL, SavedCheckpoint

CONFIG = "config.json"
#: ``checkpoint_p<policy id>``: one folder per policy (``--num_policies`` > 1 under population-based training).
POLICY_DIR = re.compile(r"^checkpoint_p(\d+)$")
CHECKPOINT = re.compile(r"^checkpoint_(\d{9,})_(\d+)\.pth$")
BEST = re.compile(r"^best_(\d{9,})_(\d+)_(.+)_(-?(?:\d+\.\d+|nan|inf))\.pth$")
#: The registry entry of a discovered experiment: Sample Factory 2.x trains with APPO only.
DEFAULT_EXP_NAME = "sf_appo"
DEFAULT_POLICY = 0
#: ``zoo watch``'s copy of the best checkpoint it evaluated, in the experiment folder (read back as the run's model).
BEST_FILE = f"{BEST_MODEL}.pth"


def is_model_name(name: str) -> bool:
    return bool(CHECKPOINT.match(name) or BEST.match(name))


def env_steps(path: Path) -> int | None:
    """The env steps a checkpoint's name holds."""
    m = CHECKPOINT.match(path.name) or BEST.match(path.name)
    return int(m[2]) if m else None


def policy_dir(experiment: Path, policy: int = DEFAULT_POLICY) -> Path:
    return experiment / f"checkpoint_p{policy}"


def _names(folder: Path) -> list[str]:
    try:
        return sorted(e.name for e in listdir(folder) if not is_folder(e) and is_model_name(e.name))
    except OSError:
        return []


def latest_and_best(folder: Path) -> tuple[list[Path], list[Path]]:
    """``(checkpoint_*, best_*)`` of a ``checkpoint_p<N>/`` folder, each sorted by name as Sample Factory sorts."""
    names = _names(folder)
    return (
        [folder / n for n in names if CHECKPOINT.match(n)],
        [folder / n for n in names if BEST.match(n)],
    )


def events_file(experiment: Path, policy: int = DEFAULT_POLICY) -> Path | None:
    """The newest TensorBoard file of ``.summary/<policy>/`` (Sample Factory writes one folder per policy)."""
    events, _ = run_files(experiment / ".summary" / str(policy))
    return events


def run_from_dir(experiment: Path, model_file: Path | None = None) -> Run:
    """One experiment: its model is ``model_file``, else policy 0's latest checkpoint (then its best)."""
    latest, best = latest_and_best(policy_dir(experiment))
    run = Run(
        framework="sample_factory", path=experiment, run_name=experiment.name, exp_name=DEFAULT_EXP_NAME
    )
    chosen = latest or best  # enjoy's default --load_checkpoint_kind latest, else the best
    run.model_file = model_file or (chosen[-1] if chosen else None)
    run.other_model_files = [p for p in [*latest, *best] if p != run.model_file]
    _, run.eval_json = run_files(experiment)
    run.events_file = events_file(experiment)
    return run


def _policy_dirs(folder: Path, entries) -> list[Path]:
    return [folder / e.name for e in entries if POLICY_DIR.match(e.name) and is_folder(e)]


def is_experiment(folder: Path, entries=None) -> bool:
    """``config.json`` beside a ``checkpoint_p<N>/`` that holds a Sample Factory checkpoint name."""
    if entries is None:
        try:
            entries = listdir(folder)
        except OSError:
            return False
    if not any(e.name == CONFIG and not is_folder(e) for e in entries):
        return False
    return any(_names(d) for d in _policy_dirs(folder, entries))


def discover(root: Path) -> Iterator[Run]:
    """Every experiment under ``root`` (a train_dir, one experiment, its ``checkpoint_p<N>/``, or a checkpoint)."""
    if root.is_file():
        folder = root.parent
        if is_model_name(root.name) and POLICY_DIR.match(folder.name) and is_experiment(folder.parent):
            yield run_from_dir(folder.parent, root)
        elif root.name == BEST_FILE and is_experiment(folder):  # zoo watch's copy of the best checkpoint
            yield run_from_dir(folder, root)
        return
    if POLICY_DIR.match(root.name) and is_experiment(root.parent):
        root = root.parent
    for folder, entries, subdirs in scan_tree(root):
        if is_experiment(folder, entries):
            yield run_from_dir(folder)
            subdirs.clear()


def saved_checkpoints(experiment: Path) -> list[SavedCheckpoint]:
    """Policy 0's ``checkpoint_*.pth`` files so far, oldest first (never ``best_*``: it is saved over)."""
    latest, _ = latest_and_best(policy_dir(experiment))
    return [SavedCheckpoint(env_steps(p), p) for p in latest]
