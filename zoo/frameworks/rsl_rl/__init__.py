"""rsl_rl adapter (rsl-rl-lib, as used by Isaac Lab, mjlab and Genesis): runs, checkpoints, policies.

Runs are folders of ``model_{iter}.pt`` checkpoints written by ``OnPolicyRunner.save``, with the
runner config beside them (``params/agent.yaml`` or Genesis' ``cfgs.pkl``). The latest checkpoint is
the run's model. Checkpoints are read with ``torch.load(weights_only=True)`` after a static scan;
the actor is rebuilt as rsl_rl's own ``MLPModel``/``RNNModel`` from the weight shapes plus the
activation and rnn type the config names (see :mod:`.checkpoint`).
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

from zoo.artifacts.report import ERROR, WARNING, RunReport, flag_torch_file
from zoo.artifacts.runs import Run
from zoo.artifacts.torchfile import inspect_torch_file, load_checkpoint
from zoo.envs import env_spec_for as env_spec
from zoo.envs import extras_for_env, missing_modules_for_extras
from zoo.errors import BrokenFile, ZooError
from zoo.frameworks.rsl_rl.checkpoint import (
    Architecture,
    LayoutMismatch,
    actor_state,
    architecture,
    state_problems,
)
from zoo.frameworks.rsl_rl.config import AGENT_YAML, CFGS_PKL, ENV_YAML, RunConfig, read_run_config
from zoo.frameworks.rsl_rl.discover import discover, iteration
from zoo.registry import Entry, Registry

__all__ = ["discover", "inspect_run", "inputs", "load_policy", "env_spec", "entry_problem", "run_env_id",
           "TRAIN_RETURN_TAG"]  # fmt: skip

#: What rsl_rl's runner logs to TensorBoard as the mean training episode return.
TRAIN_RETURN_TAG = "Train/mean_reward"


def entry_problem(raw: dict) -> tuple[str, str] | None:
    """``(field, problem)`` for the first rsl_rl-specific field that is wrong.

    Everything an rsl_rl model needs is in its checkpoint and config, so entries carry no
    layout/model/policy; ``filename`` is a glob that must match ``model_{iter}.pt``.
    """
    if raw.get("format") != "torch-checkpoint":
        return "format", "rsl_rl runners write 'torch-checkpoint' files"
    if not fnmatch.fnmatch("model_100.pt", str(raw.get("filename"))):
        return "filename", "expected a pattern matching model_{iter}.pt, e.g. 'model_*.pt'"
    for key in ("layout", "model", "policy"):
        if raw.get(key):
            return key, "not used by rsl_rl entries (the checkpoint and its config say everything)"
    return None


def inputs(run: Run) -> list[Path | None]:
    """The files ``inspect_run``'s verdict is read from: the checkpoint and the run's config files."""
    run_dir = run.path if run.path.is_dir() else run.path.parent
    configs = [run_dir / AGENT_YAML, run_dir / ENV_YAML, run_dir / CFGS_PKL]
    return [run.model_file, *configs, run.events_file]


def run_env_id(run: Run) -> str | None:
    """The gymnasium id the run's env config names (``params/env.yaml`` / ``cfgs.pkl``), if any."""
    run_dir = run.path if run.path.is_dir() else run.path.parent
    return read_run_config(run_dir).env_id


def _model_architecture(state: dict, config: RunConfig) -> Architecture:
    return architecture(state, config.activation, config.rnn_type, config.distribution)


def _describe_config(report: RunReport, config: RunConfig) -> None:
    report.details["config"] = config.source
    if config.source is None:
        report.flag(WARNING, "no params/agent.yaml or cfgs.pkl beside the checkpoint",
                    "activation assumed elu (rsl_rl's default)")  # fmt: skip
    if config.algorithm and config.algorithm.rpartition(":")[2].rpartition(".")[2] != "PPO":
        report.flag(WARNING, f"algorithm {config.algorithm!r}: zoo evaluates the PPO actor of the checkpoint")
    if config.clip_actions is not None:
        report.details["clip_actions"] = config.clip_actions
    if config.seed is not None:
        report.run.seed = config.seed
    report.run.env_id = report.run.env_id or config.env_id


def inspect_run(run: Run, registry: Registry) -> RunReport:
    """Everything ``zoo check`` says about one rsl_rl run, without executing any file."""
    report = RunReport(run)
    entry = registry.find(run.exp_name or "")
    if entry is None:
        report.flag(ERROR, f"unknown experiment {run.exp_name!r}", "add an rsl_rl entry to the registry")
        return report
    report.details["algorithm"] = entry.algorithm
    assert run.model_file is not None  # discovery claims only folders holding a model_{iter}.pt
    report.details["iteration"] = iteration(run.model_file)
    report.details["other_checkpoints"] = len(run.other_model_files)
    run_dir = run.path if run.path.is_dir() else run.path.parent
    try:
        config = read_run_config(run_dir)
    except ZooError as exc:
        report.flag(ERROR, exc.message, exc.hint or "do not load this run's config")
        return report
    _describe_config(report, config)
    info = inspect_torch_file(run.model_file)
    report.details.update(size=info.size, format=info.kind)
    if not flag_torch_file(report, info, not_torch_hint="is this an rsl_rl checkpoint?"):
        return report
    try:
        state, layout = actor_state(info.content)
        arch = _model_architecture(state, config)
    except LayoutMismatch as exc:
        report.flag(ERROR, exc.message, exc.hint)
        return report
    report.details.update(checkpoint=layout, model=arch.summary(), recurrent=arch.rnn_type is not None)
    _compare_env(report, entry, arch, state)
    return report


def _compare_env(report: RunReport, entry: Entry, arch: Architecture, state: dict) -> None:
    """Flag weights the rebuilt actor would not take, and an env whose spaces do not fit it."""
    env_id = report.run.env_id
    extras = sorted(set(entry.extras) | set(extras_for_env(env_id or "")))
    missing = missing_modules_for_extras(extras)
    if missing:
        report.flag(WARNING, f"missing optional extra {missing[0]!r} to evaluate it",
                    f"pip install 'rl-zoo-hub[{missing[0]}]'")  # fmt: skip
        return
    try:
        problems = state_problems(state, arch)
    except LayoutMismatch as exc:
        report.flag(ERROR, exc.message, exc.hint)
        return
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        report.flag(ERROR, f"the weights do not fit the rebuilt actor: {problems[0]}{more}",
                    "is this checkpoint from the run its config describes?")  # fmt: skip
        return
    if env_id is None:
        report.flag(WARNING, "env id unknown (the env config names no gymnasium id)",
                    "pass --env-id to zoo eval")  # fmt: skip
        return
    try:
        problem = _space_problem(entry, env_id, arch)
    except ZooError as exc:
        report.flag(WARNING, f"cannot build env to compare shapes: {exc.message}", exc.hint)
        return
    if problem:
        report.flag(ERROR, problem, "check the env id of this run")


def _space_problem(entry: Entry, env_id: str, arch: Architecture) -> str | None:
    from gymnasium.spaces import Box, flatdim

    from zoo.envs import probe_spaces

    obs_space, action_space = probe_spaces(env_spec(entry, env_id))
    if flatdim(obs_space) != arch.obs_dim:
        return f"the actor takes {arch.obs_dim} observations, {env_id} gives {flatdim(obs_space)}"
    if not isinstance(action_space, Box) or flatdim(action_space) != arch.action_dim:
        return f"the actor outputs {arch.action_dim} continuous actions, {env_id} takes {action_space}"
    return None


def load_policy(model_file: Path, entry: Entry, env_id: str, *, device: str, seed: int,
                trust_pickle: bool = False):  # fmt: skip
    """A ready :class:`~zoo.frameworks.rsl_rl.policy.RslRlPolicy` for ``env_id``."""
    from zoo.envs import probe_spaces
    from zoo.frameworks.rsl_rl.checkpoint import build_model
    from zoo.frameworks.rsl_rl.policy import RslRlPolicy

    config = read_run_config(model_file.parent)
    checkpoint = load_checkpoint(model_file, inspect_torch_file(model_file), trust_pickle=trust_pickle)
    state, _ = actor_state(checkpoint)
    arch = _model_architecture(state, config)
    problem = _space_problem(entry, env_id, arch)
    if problem:
        raise ZooError(f"model does not fit {env_id}: {problem}", hint="check --env-id")
    _require_rsl_rl()
    problems = state_problems(state, arch)  # what load_state_dict would refuse, named as zoo check names it
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise BrokenFile(f"{model_file}: the weights do not fit the rebuilt actor: {problems[0]}{more}",
                         hint="is this checkpoint from the run its config describes?")  # fmt: skip
    model = build_model(arch, device=device)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:  # what state_problems does not model (a dtype torch cannot copy)
        raise BrokenFile(
            f"{model_file}: the weights do not load: {str(exc).strip().splitlines()[-1]}"
        ) from None
    obs_space, action_space = probe_spaces(env_spec(entry, env_id))
    return RslRlPolicy(
        model, obs_space, action_space, clip_actions=config.clip_actions, device=device, seed=seed
    )


def _require_rsl_rl() -> None:
    from importlib.util import find_spec

    if find_spec("rsl_rl") is None or find_spec("tensordict") is None:
        raise ZooError("rsl_rl models need the rsl extra", hint="pip install 'rl-zoo-hub[rsl]'")
