"""Find rl_games runs: folders holding ``nn/*.pth`` checkpoints, from listings and names only.

Layouts (``a2c_common.py`` names every file; Isaac Lab only chooses the folder):

- plain rl_games: ``{train_dir or runs}/{config.name}_{%d-%H-%M-%S}/nn/`` and ``summaries/``, no config;
- Isaac Lab's ``rl_games/train.py``: ``logs/rl_games/{config.name}/{%Y-%m-%d_%H-%M-%S}/`` with the same
  ``nn/`` and ``summaries/`` plus ``params/agent.yaml`` (and ``env.yaml``; its ``*.pkl`` twins are never read).

In ``nn/``: ``{name}.pth`` is the best so far (saved over in place once ``epoch >= save_best_after``: the run's
model, as Isaac Lab's play.py picks it); ``last_{name}_ep_{E}_rew_{r}.pth`` every ``save_frequency`` epochs and
``last_{name}_ep_{E}_rew__{r}_.pth`` at ``max_epochs`` (``last_{name}_frame_{F}_rew__{r}_.pth`` at ``max_frames``),
``{name}_ep_{E}_rew_{r}.pth`` when ``score_to_win`` is beaten. Without a best, the latest of those is the model.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from zoo.artifacts.runs import Run, is_folder, listdir, run_files, scan_tree
from zoo.frameworks.base import BEST_MODEL, SavedCheckpoint

NN = "nn"
SUMMARIES = "summaries"
#: The registry entry of every rl_games run: its A2C/PPO agents (``a2c_continuous``/``a2c_discrete``).
DEFAULT_EXP_NAME = "rl_games_ppo"
#: ``[last_]{name}_{ep|frame}_{N}_rew_{r}.pth``: a checkpoint of the series, its counter in the name.
SERIES = re.compile(r"^(?:last_)?.+_(ep|frame)_(\d+)_rew_.*\.pth$")
BEST_FILE = f"{BEST_MODEL}.pth"
_PLAIN_STAMP = re.compile(r"_(\d{2}-\d{2}-\d{2}-\d{2})$")
_ISAAC_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}")


def counter(path: Path) -> tuple[int, int]:
    """``(kind, N)`` of a series file (epochs before the final save at ``max_frames``); (-1, -1) for the best."""
    m = SERIES.match(path.name)
    return (0 if m[1] == "ep" else 1, int(m[2])) if m else (-1, -1)


def _pth(entries: list[os.DirEntry]) -> list[Path]:
    return [Path(e.path) for e in entries if e.name.endswith(".pth") and not is_folder(e)]


def model_of(files: list[Path]) -> tuple[Path | None, list[Path]]:
    """The run's model (the best ``{name}.pth``, else the latest of the series) and the others."""
    best = sorted(p for p in files if not SERIES.match(p.name))
    series = sorted((p for p in files if SERIES.match(p.name)), key=lambda p: (counter(p), p.name))
    model = best[0] if best else (series[-1] if series else None)
    return model, [p for p in sorted(files) if p != model]


def _is_run(folder: Path, entries: list[os.DirEntry]) -> bool:
    """``nn/`` holding a ``.pth``, beside ``summaries/`` or ``params/`` (what rl_games and Isaac Lab write), or
    holding a file of rl_games' checkpoint series (a run fetched from a hub has neither folder)."""
    names = {e.name for e in entries if is_folder(e)}
    if NN not in names:
        return False
    try:
        files = _pth(listdir(folder / NN))
    except OSError:
        return False
    return bool(files) and (bool({SUMMARIES, "params"} & names) or any(SERIES.match(p.name) for p in files))


def run_from_dir(run_dir: Path, chosen: Path | None = None) -> Run:
    entries = listdir(run_dir)
    try:
        files = _pth(listdir(run_dir / NN))
    except OSError:
        files = []
    model, others = model_of(files)
    isaac = _ISAAC_STAMP.match(run_dir.name) is not None
    run_name = f"{run_dir.parent.name}/{run_dir.name}" if isaac else run_dir.name
    run = Run(framework="rl_games", path=run_dir, run_name=run_name, exp_name=DEFAULT_EXP_NAME)
    run.model_file = chosen or model
    run.other_model_files = [p for p in files if p != run.model_file]
    _, run.eval_json = run_files(run_dir, entries)
    if (run_dir / SUMMARIES).is_dir():
        run.events_file, _ = run_files(run_dir / SUMMARIES)
    return run


def discover(root: Path) -> Iterator[Run]:
    """Every rl_games run under ``root`` (a folder of runs, one run folder, or one of its ``.pth`` files)."""
    if root.is_file():
        parent = root.parent
        if root.suffix == ".pth" and parent.name == NN and _is_run(parent.parent, listdir(parent.parent)):
            yield run_from_dir(parent.parent, chosen=root)
        elif root.name == BEST_FILE and _is_run(parent, listdir(parent)):
            yield run_from_dir(parent, chosen=root)
        return
    for folder, entries, subdirs in scan_tree(root):
        if _is_run(folder, entries):
            yield run_from_dir(folder)
            subdirs.clear()


def saved_checkpoints(run_dir: Path) -> list[SavedCheckpoint]:
    """The series ``nn/[last_]{name}_{ep|frame}_{N}_rew_*.pth`` saved so far, by counter (never the best)."""
    try:
        files = [p for p in _pth(listdir(run_dir / NN)) if SERIES.match(p.name)]
    except OSError:
        return []
    ordered = sorted(files, key=lambda p: (counter(p), p.name))
    return [SavedCheckpoint(counter(p)[1], p) for p in ordered]
