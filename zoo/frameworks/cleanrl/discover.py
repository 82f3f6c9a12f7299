"""Find CleanRL runs: ``runs/{env_id}__{exp_name}__{seed}__{unix_time}/{exp_name}.cleanrl_model``.

Discovery only lists directories (``os.scandir``) and parses names; it reads no
file contents, so it stays fast on trees of many thousands of runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from zoo.artifacts.runs import Run, is_folder, listdir, listed_names, run_files, scan_tree
from zoo.frameworks.base import BEST_MODEL, SavedCheckpoint

MODEL_SUFFIX = ".cleanrl_model"
RUN_NAME = re.compile(r"^(?P<env_id>.+?)__(?P<exp_name>[^_].*?)__(?P<seed>\d+)__(?P<time>\d+)$")
#: A step-numbered copy of the model (``dqn_10000.cleanrl_model``; qdagger's ``..._offline-100000``):
#: CleanRL's ``--save-model`` writes one file at the end, so periodic saves are the user's own names.
STEP_COPY = re.compile(rf"^.+?[_-](?P<step>\d+){re.escape(MODEL_SUFFIX)}$")


def parse_run_name(name: str) -> dict | None:
    """``{"env_id", "exp_name", "seed", "time"}`` or None when the name is not CleanRL's."""
    m = RUN_NAME.match(name)
    if not m:
        return None
    return {"env_id": m["env_id"], "exp_name": m["exp_name"], "seed": int(m["seed"]), "time": int(m["time"])}


def _count_videos(folder: Path) -> int:
    try:
        return sum(1 for e in listdir(folder) if e.name.endswith(".mp4"))
    except OSError:
        return 0


def run_from_dir(run_dir: Path, entries: list[os.DirEntry] | None = None) -> Run:
    """Describe one run dir from its listing (and the sibling ``videos/`` folder)."""
    if entries is None:
        entries = listdir(run_dir)
    run = Run(framework="cleanrl", path=run_dir, run_name=run_dir.name)
    parsed = parse_run_name(run_dir.name)
    if parsed:
        run.env_id, run.exp_name, run.seed, run.started_at = (
            parsed["env_id"],
            parsed["exp_name"],
            parsed["seed"],
            parsed["time"],
        )
    else:
        run.name_problem = f"run name {run_dir.name!r} is not env_id__exp_name__seed__time"
    models = [e.name for e in entries if e.name.endswith(MODEL_SUFFIX) and not is_folder(e)]
    expected = f"{run.exp_name}{MODEL_SUFFIX}" if run.exp_name else None
    for name in sorted(models) if len(models) > 1 else models:
        if name == expected:
            run.model_file = run_dir / name
        else:
            run.other_model_files.append(run_dir / name)
    run.events_file, run.eval_json = run_files(run_dir, entries)
    videos_root = os.path.join(os.path.dirname(run_dir.parent), "videos")  # CleanRL's, beside runs/
    recorded = listed_names(videos_root)
    for kind, suffix in (("train", ""), ("eval", "-eval")):
        if f"{run_dir.name}{suffix}" in recorded:
            count = _count_videos(Path(videos_root) / f"{run_dir.name}{suffix}")
            if count:
                run.videos[kind] = count
    return run


def run_from_model_file(model: Path) -> Run:
    """A model file given directly: described by its parent run dir when that parses."""
    parent = model.parent
    if parse_run_name(parent.name):
        run = run_from_dir(parent)
        if run.model_file != model:
            run.other_model_files = [p for p in run.other_model_files if p != model]
            if run.model_file is not None:
                run.other_model_files.append(run.model_file)
            run.model_file = model
        return run
    return Run(
        framework="cleanrl",
        path=model,
        run_name=None,
        model_file=model,
        exp_name=model.name.split(".")[0],
        name_problem=f"its folder {parent.name!r} is not a run dir env_id__exp_name__seed__time",
    )


def discover(root: Path) -> Iterator[Run]:
    """Every CleanRL run under ``root`` (a runs folder, one run dir, or a model file).

    A folder is a run when its name parses as CleanRL's run name. A ``.cleanrl_model`` in a folder whose
    name does not parse (a file copied to the top of ``runs/``, a renamed run) is a lone model file of
    its own, and the folder's subfolders are still searched: one stray file never hides the runs below.
    """
    if root.is_file():
        if root.name.endswith(MODEL_SUFFIX):
            yield run_from_model_file(root)
        return
    for folder, entries, subdirs in scan_tree(root):
        if parse_run_name(folder.name) is not None:
            yield run_from_dir(folder, entries)
            subdirs.clear()
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name.endswith(MODEL_SUFFIX) and not is_folder(entry):
                yield run_from_model_file(Path(entry.path))


def saved_checkpoints(run_dir: Path) -> list[SavedCheckpoint]:
    """The model files of a run being trained: step-numbered copies by step, then files saved over in
    place (``{exp_name}.cleanrl_model`` written again every K steps), which have no step in their name."""
    names = sorted(e.name for e in listdir(run_dir) if e.name.endswith(MODEL_SUFFIX) and not is_folder(e))
    found = [(STEP_COPY.match(n), run_dir / n) for n in names if n != f"{BEST_MODEL}{MODEL_SUFFIX}"]
    by_step = [SavedCheckpoint(*saved) for saved in sorted((int(m["step"]), path) for m, path in found if m)]
    return by_step + [SavedCheckpoint(None, path) for m, path in found if not m]
