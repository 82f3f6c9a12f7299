"""Stable-Baselines3 adapter: recognise SB3 zips, inspect them safely, build policies.

Registry entries ``sb3_ppo``, ``sb3_a2c``, ``sb3_dqn``, ``sb3_sac``, ``sb3_td3`` and ``sb3_ddpg``
(the ``sb3_`` prefix keeps rl_zoo3's algorithm names apart from CleanRL's experiments) map
the algorithm found in a zip's ``data`` to its eval defaults and hub pattern. Loading never
runs SB3's ``load``: see :mod:`zoo.frameworks.sb3.archive` and :mod:`~zoo.frameworks.sb3.build`.
"""

from __future__ import annotations

from pathlib import Path

from zoo.artifacts.report import ERROR, WARNING, RunReport
from zoo.artifacts.runs import Run
from zoo.errors import ZooError
from zoo.frameworks.sb3.archive import ALGORITHMS, read_archive
from zoo.frameworks.sb3.discover import discover
from zoo.frameworks.sb3.fit import env_spaces, env_spec, missing_extra, space_problem, unsupported_env
from zoo.registry import Entry, Registry

__all__ = [
    "discover",
    "inspect_run",
    "inputs",
    "load_policy",
    "env_spec",
    "entry_problem",
    "TRAIN_RETURN_TAG",
]

#: What SB3's logger writes to TensorBoard as the mean training episode return.
TRAIN_RETURN_TAG = "rollout/ep_rew_mean"


def entry_problem(raw: dict) -> tuple[str, str] | None:
    """``(field, problem)`` for the first SB3-specific field of a registry entry that is wrong."""
    if raw.get("algorithm") not in ALGORITHMS:
        return "algorithm", f"{raw.get('algorithm', '<missing>')!r} is not one of {', '.join(ALGORITHMS)}"
    if raw.get("format") != "sb3-zip":
        return "format", "SB3 models are 'sb3-zip'"
    if raw.get("layout", {}).get("kind", "sb3-zip") != "sb3-zip":
        return "layout.kind", "SB3 models have one layout: 'sb3-zip'"
    if not str(raw.get("filename", "")).endswith(".zip"):
        return "filename", "SB3 models are .zip files"
    return None


def _installed_sb3() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("stable-baselines3")
    except PackageNotFoundError:
        return None


def inputs(run: Run) -> list[Path | None]:
    """The files ``inspect_run``'s verdict is read from: the zip and every place its statistics may be."""
    from zoo.frameworks.sb3.normalize import stats_candidates

    model = run.model_file
    return [model, *(stats_candidates(model, run.env_id) if model else []), run.events_file]


def inspect_run(run: Run, registry: Registry) -> RunReport:
    """Everything ``zoo check`` says about one SB3 model, without unpickling beyond the allowlist."""
    from zoo.frameworks.sb3.inspect import flag_error, inspect_model

    report = RunReport(run)
    if run.model_file is None:
        report.flag(WARNING, run.name_problem or "no SB3 model here", "give an SB3 .zip (data + policy.pth)")
        return report
    try:
        archive = read_archive(run.model_file)
    except ZooError as exc:
        flag_error(report, exc, run.model_file)
        return report
    report.details.update(size=run.model_file.stat().st_size, format="sb3-zip", algorithm=archive.algorithm,
                          policy_class=archive.policy_class_name, sb3_saved=archive.version,
                          sb3_installed=_installed_sb3(), num_timesteps=archive.num_timesteps,
                          saved_with=archive.saved_with)  # fmt: skip
    entry = registry.find(run.exp_name or "")
    if entry is None:
        what = run.exp_name or f"policy class {archive.policy_class_name}"
        report.flag(ERROR, f"no registry entry for {what}",
                    f"zoo knows SB3's {', '.join(ALGORITHMS)}; pass --exp-name")  # fmt: skip
        return report
    inspect_model(report, archive, entry, run.env_id)
    return report


def load_policy(model_file, entry: Entry, env_id: str, *, device: str, seed: int, trust_pickle: bool = False):
    """A ready :class:`~zoo.frameworks.sb3.policy.SB3Policy` for ``env_id``."""
    from zoo.frameworks.sb3.build import load
    from zoo.frameworks.sb3.normalize import find_stats, load_stats
    from zoo.frameworks.sb3.policy import SB3Policy

    archive = read_archive(model_file)
    if archive.algorithm and archive.algorithm != entry.algorithm:
        raise ZooError(f"{model_file} holds an SB3 {archive.algorithm} model, {entry.name} is {entry.algorithm}",
                       hint=f"pass --exp-name sb3_{archive.algorithm.lower()}")  # fmt: skip
    unsupported = unsupported_env(env_id)
    if unsupported:
        raise unsupported
    if missing_extra(entry, env_id) == "sb3":
        raise ZooError(
            "SB3 models need Stable-Baselines3", hint="install the sb3 extra: pip install stable-baselines3"
        )
    rebuilt = load(archive, device=device, trust_pickle=trust_pickle)
    obs_space, act_space = env_spaces(entry, env_id)
    problem = space_problem(rebuilt.observation_space, obs_space, "observation") or space_problem(
        rebuilt.action_space, act_space, "action"
    )
    if problem:
        raise ZooError(f"model does not fit {env_id}: {problem}", hint="check --env-id")
    stats = find_stats(model_file, env_id)
    normalizer = load_stats(stats, trust_pickle=trust_pickle) if stats else None
    return SB3Policy(rebuilt, normalizer, archive.algorithm, seed, obs_space)


#: Files a huggingface_sb3 repo may hold beside the model that evaluation needs (``zoo enjoy`` fetches them).
HUB_COMPANIONS = ("vec_normalize.pkl",)


def hub_companions(model_file: Path, env_id: str) -> dict[str, Path]:
    """What ``zoo push`` uploads beside the model, under huggingface_sb3's names."""
    from zoo.frameworks.sb3.normalize import find_stats

    stats = find_stats(model_file, env_id)
    return {"vec_normalize.pkl": stats} if stats is not None else {}
