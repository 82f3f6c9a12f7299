"""Find SB3 models: any ``*.zip`` whose central directory holds ``data`` and ``policy.pth``.

Layouts named by their writers:

- rl_zoo3: ``logs/{algo}/{env_id}_{n}/{env_id}.zip`` (plus ``best_model.zip`` and
  ``rl_model_{steps}_steps.zip`` checkpoints), statistics and settings in ``{env_id}/``
  (``vecnormalize.pkl``, ``config.yml``, ``args.yml``): one run, the final model first.
- huggingface_sb3 repos: ``{algo}-{env_id}.zip`` beside ``vec_normalize.pkl`` and ``config.yml``.
- anything else: one run per SB3 zip; the env id comes from ``args.yml`` when one is beside it.

A zip named as an SB3 model in the first two layouts is that run's model even when it cannot be read
(truncated, or without ``data``): ``zoo check`` then reports why, instead of finding no run.

Besides listings, discovery reads each zip's central directory (so that other zips, and
CleanRL runs, are never claimed) and its small ``data`` JSON (the algorithm, hence the
registry entry ``sb3_{algo}``, rl_zoo3's name: ``sb3_ppo_lstm`` for RecurrentPPO). Nothing is unpickled.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from zoo.artifacts.runs import Run, is_folder, listdir, note_read, run_files, scan_tree
from zoo.errors import ZooError
from zoo.frameworks.base import BEST_MODEL, SavedCheckpoint
from zoo.frameworks.sb3.archive import (
    CHECKPOINT,
    ZOO_NAMES,
    checkpoint_stats_name,
    exp_name_for,
    is_sb3_zip,
    read_archive,
)

FRAMEWORK = "sb3"
_ZOO_RUN_DIR = re.compile(r"^(?P<env_id>.+)_(?P<n>\d+)$")
_ENV_ID_PATTERN = r"(?:[\w.-]+/)?[\w.:-]+-v\d+"
_ENV_ID = re.compile(rf"^{_ENV_ID_PATTERN}$")
#: rl_zoo3's algorithm names (``ppo``, ``ppo_lstm``, ``qrdqn``...) back to the algorithm.
_BY_ZOO_NAME = {name: algorithm for algorithm, name in ZOO_NAMES.items()}
_HUB_FILE = re.compile(rf"^(?P<algo>{'|'.join(_BY_ZOO_NAME)})-(?P<env_id>{_ENV_ID_PATTERN})\.zip$")


def _args_env_id(folder: Path) -> str | None:
    """``env`` from an rl_zoo3 ``args.yml`` (a YAML-dumped OrderedDict) in ``folder``."""
    from zoo.frameworks.sb3.zooyaml import read_zoo_yaml

    path = folder / "args.yml"
    note_read(path)
    env = read_zoo_yaml(path).get("env") if path.is_file() else None
    return env if isinstance(env, str) else None


def qualified_env_id(run: Run) -> str | None:
    """The run's env id with the module gymnasium needs to find it: rl_zoo3 names folders and files after the
    bare id (``myoElbowPose1D6MRandom-v0``) and keeps ``module:EnvId`` (``myosuite:...``) in ``args.yml`` only."""
    if run.env_id is None or run.model_file is None:
        return run.env_id
    for folder in (run.model_file.parent / run.env_id, run.model_file.parent):
        named = _args_env_id(folder)
        if named and named.split(":", 1)[-1] == run.env_id:
            return named
    return run.env_id


def _describe(run: Run, model: Path) -> Run:
    """Fill the entry (unless the rl_zoo3 folder or hub file name said it) and the seed from ``data``."""
    run.model_file = model
    note_read(model)
    try:
        archive = read_archive(model)
    except ZooError:
        return run  # inspect_run says what is wrong with it
    run.exp_name = run.exp_name or exp_name_for(archive.algorithm)
    seed = archive.data.get("seed")
    run.seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else None
    return run


def _zoo_run(folder: Path, zips: list[Path]) -> Run | None:
    """An rl_zoo3 run dir ``{env_id}_{n}``: the final model, else ``best_model.zip``, else the last checkpoint."""
    m = _ZOO_RUN_DIR.match(folder.name)
    if not m:
        return None
    env_id = m["env_id"]
    by_name = {z.name: z for z in zips}
    checkpoints = sorted(
        (z for z in zips if CHECKPOINT.match(z.name)), key=lambda z: int(CHECKPOINT.match(z.name)["steps"])
    )
    model = (
        by_name.get(f"{env_id}.zip")
        or by_name.get("best_model.zip")
        or (checkpoints[-1] if checkpoints else None)
    )
    if model is None:
        return None
    run = Run(framework=FRAMEWORK, path=folder, run_name=folder.name, env_id=env_id)
    run.exp_name = exp_name_for(_BY_ZOO_NAME.get(folder.parent.name.lower()))
    _, run.eval_json = run_files(folder)
    return _describe(run, model)


def run_for_file(model: Path) -> Run:
    """A lone SB3 zip: env id from a huggingface_sb3 name, an env-id stem, or ``args.yml``."""
    run = Run(framework=FRAMEWORK, path=model)
    hub = _HUB_FILE.match(model.name)
    if hub:
        run.env_id, run.exp_name = hub["env_id"], exp_name_for(_BY_ZOO_NAME[hub["algo"]])
    elif _ENV_ID.match(model.stem):
        run.env_id = model.stem
    else:
        run.env_id = _args_env_id(model.parent / model.stem) or _args_env_id(model.parent)
    _, run.eval_json = run_files(model.parent)
    return _describe(run, model)


def _named_as_model(path: Path) -> bool:
    """A zip whose name says it is an SB3 model: huggingface_sb3's ``{algo}-{env_id}.zip``, or in an rl_zoo3
    run dir its ``{env_id}.zip``, ``best_model.zip`` or a checkpoint."""
    run_dir = _ZOO_RUN_DIR.match(path.parent.name)
    return bool(
        _HUB_FILE.match(path.name)
        or (
            run_dir
            and (
                path.name in (f"{run_dir['env_id']}.zip", f"{BEST_MODEL}.zip") or CHECKPOINT.match(path.name)
            )
        )
    )


def _sb3_zips(entries: list[os.DirEntry]) -> list[Path]:
    """SB3's zips among ``entries``, and the zips named as SB3 models that are not readable as one: a
    corrupt model where a run's model is expected is that run's error, never a run that disappears."""
    zips = sorted(Path(e.path) for e in entries if e.name.endswith(".zip") and not is_folder(e))
    for path in zips:
        note_read(path)
    return [path for path in zips if is_sb3_zip(path) or _named_as_model(path)]


def discover(root: Path) -> Iterator[Run]:
    """Every SB3 model under ``root``; a zip given by name that is not SB3's is reported, not skipped, and one
    named as a model (a corrupt download) is that model's run, as in a folder."""
    if root.is_file():
        if root.name.endswith(".zip"):
            note_read(root)
            if is_sb3_zip(root) or _named_as_model(root):
                run = _zoo_run(root.parent, [root]) if _ZOO_RUN_DIR.match(root.parent.name) else None
                yield run if run is not None and run.model_file == root else run_for_file(root)
            else:
                yield Run(
                    framework=FRAMEWORK,
                    path=root,
                    name_problem=f"{root.name} is not a "
                    "Stable-Baselines3 model (its zip has no data and policy.pth)",
                )
        return
    for folder, entries, _subdirs in scan_tree(root):
        zips = _sb3_zips(entries)
        run = _zoo_run(folder, zips) if zips else None
        if run is not None:
            yield run
        else:
            yield from (run_for_file(z) for z in zips)


def saved_checkpoints(run_dir: Path) -> list[SavedCheckpoint]:
    """The models a training run has saved in ``run_dir`` so far: ``CheckpointCallback``'s
    ``{prefix}_{steps}_steps.zip`` by step (each with its ``{prefix}_vecnormalize_{steps}_steps.pkl`` once that
    exists), then any other SB3 zip, saved over in place (``model.save("ppo")`` in a loop), with the statistics
    its evaluation reads. A zip still being written is not an SB3 zip yet: it is listed once it is one."""
    from zoo.frameworks.sb3.normalize import find_stats

    files = {e.name for e in listdir(run_dir) if not is_folder(e)}
    by_step, in_place = [], []
    for name in sorted(files):
        model = run_dir / name
        if not name.endswith(".zip") or name == f"{BEST_MODEL}.zip":
            continue
        checkpoint = CHECKPOINT.match(name)
        if checkpoint:
            stats = checkpoint_stats_name(checkpoint)
            companions = {"vecnormalize": run_dir / stats} if stats in files else {}
            by_step.append(SavedCheckpoint(int(checkpoint["steps"]), model, companions))
        elif is_sb3_zip(model):
            stats_file = find_stats(model, None)
            in_place.append(SavedCheckpoint(None, model, {"vecnormalize": stats_file} if stats_file else {}))
    return sorted(by_step, key=lambda c: c.step or 0) + in_place
