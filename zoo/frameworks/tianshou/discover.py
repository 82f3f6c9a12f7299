"""Find Tianshou runs: the folders its high-level API persists and its mujoco examples log, from listings and names.

``ExperimentBuilder.build_and_run`` writes ``<persistence_base_dir>/<ExperimentName>/exp_seed=<seed>/`` (the
examples pass ``persistence_base_dir=log/<task>``, and the default name is ``<Algo>Experiment_<YYYYMMDD-HHMMSS>``):
``experiment.pkl`` (the experiment's config), ``policy.pt`` (the whole ``Algorithm``, saved over at each new
best test return), ``policy_epoch_<N>.pt`` when the logger has a ``save_interval``, ``env_obs_rms.pkl`` for
an obs-normalizing env factory, ``log.txt`` and the TensorBoard events. A folder is a Tianshou run when it
holds ``experiment.pkl`` beside a policy file: no other library writes that pair.

The low-level mujoco examples (``examples/mujoco/mujoco_{ppo,a2c,npg,trpo,reinforce}.py``) log to
``<persistence_base_dir>/<task>/<algo>/<seed>/<yymmdd-HHMMSS>/`` and save ``policy.pth`` there,
``{"model": algorithm.state_dict(), "obs_rms": RunningMeanStd}``: a folder with that name pattern and file.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Iterator
from pathlib import Path

from zoo.artifacts.runs import Run, is_folder, listdir, run_files, scan_tree
from zoo.frameworks.base import BEST_MODEL, SavedCheckpoint

EXPERIMENT = "experiment.pkl"
POLICY = "policy.pt"
OBS_RMS = "env_obs_rms.pkl"
EPOCH = re.compile(r"^policy_epoch_(\d+)\.pt$")
#: The copy of the best checkpoint ``zoo watch`` keeps: given by name, it is read as a model of its run.
BEST_FILE = f"{BEST_MODEL}.pt"
_SEED = re.compile(r"^exp_seed=(\d+)$")
#: The low-level examples' ``policy.pth`` and their log folder's time stamp (``datetime.now():%y%m%d-%H%M%S``).
LOW_LEVEL = "policy.pth"
_LOW_LEVEL_TIME = re.compile(r"^\d{6}-\d{6}$")
#: zoo watch's copy of a low-level run's best ``policy.pth``: given by name, read as a model of its run.
BEST_LOW_LEVEL = f"{BEST_MODEL}.pth"
#: The algorithm folders of the examples whose actor zoo rebuilds (a Gaussian ContinuousActorProbabilistic).
LOW_LEVEL_ALGORITHMS = ("ppo", "a2c", "npg", "trpo", "reinforce")
_EXPERIMENT_NAME = re.compile(r"^([A-Za-z0-9]+)Experiment_(\d{8}-\d{6})$")


def is_model_name(name: str) -> bool:
    return name in (POLICY, BEST_FILE) or bool(EPOCH.match(name))


def epoch_of(path: Path) -> int | None:
    m = EPOCH.match(path.name)
    return int(m[1]) if m else None


def obs_rms_file(model: Path) -> Path:
    """The normalizer statistics saved with ``model`` (``best_model_obs_rms.pkl`` beside zoo's best copy)."""
    return model.parent / (f"{BEST_MODEL}_obs_rms.pkl" if model.name == BEST_FILE else OBS_RMS)


def algorithm_of_name(run_dir: Path) -> str | None:
    """The algorithm the default experiment name says (``DQNExperiment_20261206-084011`` -> ``dqn``)."""
    m = _EXPERIMENT_NAME.match(run_dir.parent.name)
    return m[1].lower() if m else None


def _started_at(run_dir: Path) -> int | None:
    m = _EXPERIMENT_NAME.match(run_dir.parent.name)
    return int(_dt.datetime.strptime(m[2], "%Y%m%d-%H%M%S").timestamp()) if m else None


def is_low_level_dir(folder: Path) -> bool:
    """``<task>/<algo>/<seed>/<yymmdd-HHMMSS>``, as the low-level mujoco examples name their log folder."""
    return (
        bool(_LOW_LEVEL_TIME.match(folder.name))
        and folder.parent.name.isdigit()
        and folder.parent.parent.name in LOW_LEVEL_ALGORITHMS
    )


def run_from_low_level_dir(
    folder: Path, entries: list[os.DirEntry[str]] | None = None, chosen: Path | None = None
) -> Run:
    """One low-level example run: ``policy.pth`` (or ``chosen``); env id, algorithm and seed from the names."""
    if entries is None:
        entries = listdir(folder)
    started = _dt.datetime.strptime(folder.name, "%y%m%d-%H%M%S").timestamp()
    run = Run(
        framework="tianshou",
        path=folder,
        run_name="/".join(folder.parts[-4:]),
        env_id=folder.parent.parent.parent.name or None,
        exp_name=f"tianshou_{folder.parent.parent.name}",
        seed=int(folder.parent.name),
        started_at=int(started),
    )
    run.model_file = chosen or folder / LOW_LEVEL
    run.events_file, run.eval_json = run_files(folder, entries)
    return run


def run_from_dir(
    run_dir: Path, entries: list[os.DirEntry[str]] | None = None, chosen: Path | None = None
) -> Run:
    """One run: ``policy.pt`` (or ``chosen``) is the model; the epoch checkpoints are counted."""
    if entries is None:
        entries = listdir(run_dir)
    names = {e.name for e in entries if not is_folder(e)}
    epochs = sorted((run_dir / n for n in names if EPOCH.match(n)), key=lambda p: epoch_of(p) or 0)
    model = chosen or (run_dir / POLICY if POLICY in names else epochs[-1] if epochs else None)
    algorithm = algorithm_of_name(run_dir)
    seed = _SEED.match(run_dir.name)
    named = _SEED.match(run_dir.name) is not None and run_dir.parent.name
    run = Run(
        framework="tianshou",
        path=run_dir,
        run_name=f"{run_dir.parent.name}/{run_dir.name}" if named else run_dir.name,
        exp_name=f"tianshou_{algorithm}" if algorithm else None,
        seed=int(seed[1]) if seed else None,
        started_at=_started_at(run_dir),
    )
    run.model_file = model
    run.other_model_files = [p for p in [*epochs, run_dir / POLICY] if p != model and p.name in names]
    run.events_file, run.eval_json = run_files(run_dir, entries)
    return run


def discover(root: Path) -> Iterator[Run]:
    """Every Tianshou run under ``root`` (a persistence folder, one ``exp_seed=`` folder, or one policy file)."""
    if root.is_file():
        if is_model_name(root.name) and (root.parent / EXPERIMENT).is_file():
            yield run_from_dir(root.parent, chosen=root)
        elif root.name in (LOW_LEVEL, BEST_LOW_LEVEL) and is_low_level_dir(root.parent):
            yield run_from_low_level_dir(root.parent, chosen=root)
        return
    for folder, entries, subdirs in scan_tree(root):
        names = {e.name for e in entries if not is_folder(e)}
        if EXPERIMENT in names and any(is_model_name(n) and n != BEST_FILE for n in names):
            yield run_from_dir(folder, entries)
            subdirs.clear()
        elif LOW_LEVEL in names and is_low_level_dir(folder):
            yield run_from_low_level_dir(folder, entries)
            subdirs.clear()


def saved_checkpoints(run_dir: Path) -> list[SavedCheckpoint]:
    """``policy_epoch_<N>.pt`` by epoch, then ``policy.pt`` (the best so far, saved over in place: no step)."""
    try:
        names = {e.name for e in listdir(run_dir) if not is_folder(e)}
    except OSError:
        return []
    if LOW_LEVEL in names and is_low_level_dir(run_dir):
        return [SavedCheckpoint(None, run_dir / LOW_LEVEL)]  # saved over at each new best
    if EXPERIMENT not in names:
        return []
    files = sorted((run_dir / n for n in names if EPOCH.match(n)), key=lambda p: epoch_of(p) or 0)
    if POLICY in names:
        files.append(run_dir / POLICY)
    found = []
    for path in files:
        rms = obs_rms_file(path)
        companions = {"obs_rms": rms} if rms.name in names else {}
        found.append(SavedCheckpoint(epoch_of(path), path, companions))
    return found
