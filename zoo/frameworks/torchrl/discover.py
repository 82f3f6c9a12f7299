"""TorchRL runs, from directory listings and names only.

TorchRL has no run folder of its own; what it writes is a checkpoint, wherever the user's script says. zoo
recognises, in this order for one folder:

- a ``CheckpointRotation`` root: ``checkpoint-NNNNNNNNNNNN/`` folders (the step in the name) each holding a
  ``manifest.json``; the newest step is the model (its ``manifest.json`` stands for the checkpoint), the others
  are the run's other checkpoints, and ``best_model/`` (``zoo watch``'s copy of the best) one more;
- a directory checkpoint: ``manifest.json`` beside ``components/`` (``Checkpoint.save(path)``, format
  ``directory``);
- a folder holding the model description ``torchrl_policy.yaml``: its files named ``*.pt``, ``*.pth``, ``*.ckpt``
  or ``*ckpt`` (an archive's name is free; sota-implementations write ``dqn_ckpt``, ``ppo_ckpt.pt``), the newest
  the model. Without the YAML such a name says nothing (rsl_rl, skrl and users write ``.pt`` files too): zoo takes
  one only as a file target with ``--exp-name``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from zoo.artifacts.runs import Run, is_folder, listdir, listed_names, run_files, scan_tree
from zoo.frameworks.base import BEST_MODEL
from zoo.frameworks.torchrl.config import CONFIG_FILE
from zoo.frameworks.torchrl.files import MANIFEST

FRAMEWORK = "torchrl"
ROTATED = re.compile(r"^checkpoint-(?P<step>\d+)$")
COMPONENTS = "components"
MODEL_SUFFIXES = (".pt", ".pth", ".ckpt")


def is_model_name(name: str) -> bool:
    """A file name TorchRL scripts give checkpoints (beside a ``torchrl_policy.yaml``)."""
    return name.endswith(MODEL_SUFFIXES) or name.endswith("ckpt")


def step_of(model_file: Path) -> int | None:
    """The step a rotated checkpoint's folder name says (``checkpoint-000000000400/manifest.json`` -> 400)."""
    match = ROTATED.match(model_file.parent.name) if model_file.name == MANIFEST else None
    return int(match["step"]) if match else None


def rotated(folder: Path, names: frozenset[str] | set[str] | None = None) -> list[Path]:
    """The ``manifest.json`` of each rotated checkpoint in ``folder``, oldest step first."""
    names = listed_names(folder) if names is None else names
    found = []
    for name in names:
        match = ROTATED.match(name)
        if match and MANIFEST in listed_names(folder / name):
            found.append((int(match["step"]), folder / name / MANIFEST))
    return [path for _, path in sorted(found)]


def is_checkpoint_dir(names: frozenset[str] | set[str]) -> bool:
    return MANIFEST in names and COMPONENTS in names


def discover(root: Path) -> Iterator[Run]:
    if root.is_file():
        run = _file_run(root)
        if run is not None:
            yield run
        return
    for folder, entries, subdirs in scan_tree(root):
        run = _folder_run(folder, entries)
        if run is not None:
            taken = {
                p.parent
                for p in (run.model_file, *run.other_model_files)
                if p is not None and p.name == MANIFEST
            }
            subdirs[:] = [d for d in subdirs if d not in taken and d.name != COMPONENTS]
            yield run


def _file_run(path: Path) -> Run | None:
    """The run a file target belongs to: a checkpoint's ``manifest.json``, or a model file beside a
    ``torchrl_policy.yaml``."""
    folder = path.parent
    if path.name == MANIFEST and COMPONENTS in listed_names(folder):
        root = folder.parent if (ROTATED.match(folder.name) or folder.name == BEST_MODEL) else folder
        run = _folder_run(root, listdir(root)) if root != folder else None
        if run is None or path not in (run.model_file, *run.other_model_files):
            return _run(folder, path, [])
        return _pick(run, path)
    if is_model_name(path.name) and CONFIG_FILE in listed_names(folder):
        run = _folder_run(folder, listdir(folder))
        return _pick(run, path) if run is not None else None
    return None


def _pick(run: Run, model: Path) -> Run:
    """``run`` with ``model`` (one of its files) as the model the target names."""
    others = [p for p in (run.model_file, *run.other_model_files) if p is not None and p != model]
    run.model_file, run.other_model_files = model, others
    return run


def _folder_run(folder: Path, entries: list[os.DirEntry[str]]) -> Run | None:
    names = {e.name for e in entries}
    checkpoints = rotated(folder, names)
    if checkpoints:
        best = folder / BEST_MODEL / MANIFEST
        others = checkpoints[:-1] + (
            [best] if BEST_MODEL in names and MANIFEST in listed_names(best.parent) else []
        )
        return _run(folder, checkpoints[-1], others, entries)
    if is_checkpoint_dir(names):
        return _run(folder, folder / MANIFEST, [], entries)
    if CONFIG_FILE not in names:
        return None
    models = [e for e in entries if is_model_name(e.name) and not is_folder(e)]
    models += [e for e in entries if is_folder(e) and is_checkpoint_dir(listed_names(e.path))]
    if not models:
        return None
    models.sort(key=lambda e: (_mtime(e), e.name))
    paths = [folder / e.name / MANIFEST if is_folder(e) else folder / e.name for e in models]
    return _run(folder, paths[-1], paths[:-1], entries)


def _mtime(entry: os.DirEntry[str]) -> float:
    try:
        return entry.stat().st_mtime
    except OSError:
        return 0.0


def _run(folder: Path, model: Path, others: list[Path], entries: list[os.DirEntry[str]] | None = None) -> Run:
    run = Run(
        framework=FRAMEWORK, path=folder, run_name=folder.name, model_file=model, other_model_files=others
    )
    run.events_file, run.eval_json = run_files(folder, entries)
    return run
