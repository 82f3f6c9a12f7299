"""``zoo check`` for one SB3 zip: decode, rebuild, load weights, find statistics, compare with the env.

Every step is the safe one ``zoo eval`` takes (restricted unpickler, ``weights_only=True``), so
"ready to evaluate" means the eval will load it; a refused global is an error naming it.
"""

from __future__ import annotations

import os
from pathlib import Path

from zoo.artifacts.report import ERROR, WARNING, RunReport
from zoo.errors import ZooError
from zoo.frameworks.sb3.archive import SB3Archive
from zoo.registry import Entry


def flag_error(report: RunReport, exc: ZooError, model_file: Path) -> None:
    """An error about one of the run's files, named from the model's folder (the row already says which run)."""
    report.flag(ERROR, exc.message.replace(f"{model_file.parent}{os.sep}", "", 1), exc.hint)


def _stats(report: RunReport, archive: SB3Archive, env_id: str | None) -> bool:
    """Record the VecNormalize statistics next to the model; False when they are unsafe or broken."""
    from zoo.frameworks.sb3.normalize import find_stats, load_stats

    path = find_stats(archive.path, env_id)
    report.details["normalization"] = None
    if path is None:
        return True
    try:
        normalizer = load_stats(path)
    except ZooError as exc:
        flag_error(report, exc, archive.path)
        return False
    report.details["normalization"] = {"file": str(path), "norm_obs": normalizer is not None,
                                       **(normalizer.describe() if normalizer else {})}  # fmt: skip
    return True


def inspect_model(report: RunReport, archive: SB3Archive, entry: Entry, env_id: str | None) -> None:
    """Fill ``report`` for a zip whose registry entry is known."""
    from zoo.frameworks.sb3.build import rebuild
    from zoo.frameworks.sb3.fit import env_spaces, missing_extra, space_problem, unsupported_env

    if archive.algorithm and archive.algorithm != entry.algorithm:
        report.flag(ERROR, f"the zip holds an SB3 {archive.algorithm} model, {entry.name} is {entry.algorithm}",
                    f"pass --exp-name sb3_{archive.algorithm.lower()}")  # fmt: skip
        return
    if missing_extra(entry, env_id) == "sb3":
        report.flag(
            WARNING,
            "missing optional extra 'sb3' to evaluate it",
            "install the sb3 extra: pip install stable-baselines3",
        )
        return
    try:
        rebuilt = rebuild(archive)
    except ZooError as exc:
        flag_error(report, exc, archive.path)
        return
    report.details.update(observation_space=str(rebuilt.observation_space), action_space=str(rebuilt.action_space),
                          tensors=len(rebuilt.policy.state_dict()))  # fmt: skip
    if archive.notes:
        report.details["compat"] = list(archive.notes)
    if not _stats(report, archive, env_id):
        return
    if env_id is None:
        report.flag(WARNING, "env id unknown (no rl_zoo3 folder, hub file name or args.yml)",
                    "pass --env-id to zoo eval")  # fmt: skip
        return
    unsupported = unsupported_env(env_id)
    if unsupported:
        report.flag(WARNING, unsupported.message)
        return
    extra = missing_extra(entry, env_id)
    if extra:
        report.flag(
            WARNING, f"missing optional extra {extra!r} to evaluate it", f"pip install 'rl-zoo-hub[{extra}]'"
        )
        return
    try:
        obs_space, act_space = env_spaces(entry, env_id)
    except ZooError as exc:
        report.flag(WARNING, f"cannot build env to compare spaces: {exc.message}", exc.hint)
        return
    problem = space_problem(rebuilt.observation_space, obs_space, "observation") or space_problem(
        rebuilt.action_space, act_space, "action"
    )
    if problem:
        report.flag(ERROR, f"model does not fit {env_id}: {problem}", "check the env id of this run")
