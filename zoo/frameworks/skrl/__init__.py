"""skrl adapter: recognise experiment dirs, inspect checkpoints, rebuild policies in plain torch.

skrl (2.x, and 1.x checkpoints) writes ``{experiment}/checkpoints/agent_{step}.pt``: a dict of
module state dicts (``policy``, ``value``, ``optimizer``, ``observation_preprocessor``, ...).
zoo loads it with ``torch.load(weights_only=True)`` and never imports skrl: the policy is an
MLP whose sizes come from the weights and whose activations come from ``params/agent.yaml``
(Isaac Lab) or a model config (:mod:`zoo.frameworks.skrl.config`).
"""

from __future__ import annotations

from pathlib import Path

from zoo.artifacts.report import ERROR, WARNING, RunReport, flag_torch_file
from zoo.artifacts.runs import Run
from zoo.artifacts.torchfile import inspect_torch_file
from zoo.envs import env_spec_for as env_spec
from zoo.envs import extras_for_env, missing_modules_for_extras, probe_spaces
from zoo.errors import ZooError
from zoo.frameworks.skrl.checkpoint import (
    companion_modules,
    linear_chain,
    load_modules,
    normalizer,
    shape_problems,
    split_agent,
    unused_keys,
)
from zoo.frameworks.skrl.config import RunConfig, run_config, scaler_spec
from zoo.frameworks.skrl.discover import discover, parse_checkpoint, step_of
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

#: What skrl's trainers write to TensorBoard as the mean training episode return.
TRAIN_RETURN_TAG = "Reward / Total reward (mean)"


def entry_problem(raw: dict) -> tuple[str, str] | None:
    """skrl entries need no model class (the policy is rebuilt from weights and config); ``layout``
    names the checkpoint layout for ``zoo registry list``."""
    layout = raw.get("layout", {"kind": "agent"})
    if not isinstance(layout, dict) or layout.get("kind") != "agent":
        return "layout.kind", "skrl entries use layout {kind: agent} (skrl's write_checkpoint dict)"
    for key in ("model", "policy"):
        if raw.get(key):
            return key, "not used by skrl entries (the policy is rebuilt from the checkpoint and its config)"
    return None


def experiment_dir(run: Run) -> Path | None:
    return run.path if run.path.is_dir() else None


def env_id_from_params(folder: Path | None) -> str | None:
    """``id`` of ``params/env.yaml`` when it is a gymnasium ``EnvSpec`` dump (Isaac Lab's env cfg has none)."""
    from zoo.frameworks.skrl.config import read_yaml

    path = folder / "params" / "env.yaml" if folder else None
    if path is None or not path.is_file():
        return None
    try:
        doc = read_yaml(path)
    except ZooError:
        return None
    value = doc.get("id") if isinstance(doc, dict) else None
    return value if isinstance(value, str) else None


def inputs(run: Run) -> list[Path | None]:
    """The files ``inspect_run``'s verdict is read from: checkpoints, scaler files and the YAML configs."""
    folder = experiment_dir(run)
    configs = [folder / "params" / name for name in ("agent.yaml", "env.yaml")] if folder else []
    model = run.model_file
    companions = list(companion_modules(model).values()) if model else []
    return [model, *run.other_model_files, *companions, *configs, run.events_file]


def _static_modules(report: RunReport, model_file: Path) -> dict | None:
    """The modules as tensor descriptions (no torch), or None after flagging why not."""
    info = inspect_torch_file(model_file)
    report.details.update(size=info.size, format=info.kind)
    if not flag_torch_file(report, info, model_file.name, "is this an skrl checkpoint?"):
        return None
    try:
        modules = split_agent(info.content, model_file)
    except ZooError as exc:
        report.flag(ERROR, exc.message, exc.hint)
        return None
    for key, path in companion_modules(model_file).items():
        extra = inspect_torch_file(path)
        if not flag_torch_file(report, extra, path.name, "is this an skrl checkpoint?"):
            return None
        modules[key] = extra.content
    return modules


def _algorithm(run: Run, config: RunConfig) -> str | None:
    if run.exp_name:
        return run.exp_name
    return f"skrl_{config.algorithm}" if config.algorithm else None


def _describe_checkpoints(report: RunReport, run: Run) -> None:
    files = [run.model_file, *run.other_model_files]
    report.details["checkpoint"] = run.model_file.name
    report.details["step"] = step_of(run.model_file)
    report.details["checkpoints"] = sorted({p.name for p in files})
    best = [p.name for p in files if (parse_checkpoint(p.name) or ("", ""))[1] is None]
    report.details["best"] = best[0] if best else None
    module = (parse_checkpoint(run.model_file.name) or ("agent",))[0]
    report.details["layout"] = "agent" if module == "agent" else "per-module"


def inspect_run(run: Run, registry: Registry) -> RunReport:
    """Everything ``zoo check`` says about one skrl experiment, without executing any file.

    Discovery only yields runs with a checkpoint, so ``run.model_file`` is always set.
    """
    report = RunReport(run)
    folder = experiment_dir(run)
    _describe_checkpoints(report, run)
    try:
        config = run_config(folder)
    except ZooError as exc:
        report.flag(ERROR, exc.message, exc.hint)
        config = None
    modules = _static_modules(report, run.model_file)
    if modules is None or config is None:
        return report
    report.details["modules"] = sorted(modules)
    name = _algorithm(run, config)
    entry = registry.find(name or "")
    report.details["algorithm"] = entry.algorithm if entry else None
    if name is None:
        report.flag(WARNING, "algorithm unknown (not in the dir name nor params/agent.yaml)",
                    "pass --exp-name (for example skrl_ppo) to zoo eval")  # fmt: skip
    elif entry is None:
        try:
            registry.get(name)
        except ZooError as exc:
            report.flag(ERROR, f"unknown experiment {name!r}", exc.hint)
        return report
    try:
        layers = linear_chain(modules["policy"], config.policy)
        norm, note = normalizer(modules, layers[0].in_features)
        scaler_spec(config.agent, norm.key if norm else "observation_preprocessor", config.policy.source)
    except ZooError as exc:
        report.flag(ERROR, exc.message, exc.hint)
        return report
    _describe_policy(report, modules, layers, config, norm, note)
    env_id = run.env_id or env_id_from_params(folder)
    if env_id is None:
        report.flag(WARNING, "env id unknown (not in the experiment names nor params/env.yaml)",
                    "pass --env-id to zoo eval")  # fmt: skip
        return report
    report.details["env_id"] = env_id
    fits = entry is not None and _fits_env(report, entry, env_id, modules, layers, config)
    if fits and config.policy.activations is None:
        report.flag(WARNING, "activation functions unknown: no params/agent.yaml beside checkpoints/",
                        "zoo eval needs --model-config PATH (see docs/frameworks/skrl.md)")  # fmt: skip
    return report


def _describe_policy(report: RunReport, modules: dict, layers, config: RunConfig, norm, note) -> None:
    spec = config.policy
    report.details["policy"] = {
        "kind": spec.kind,
        "sizes": [layers[0].in_features, *(x.out_features for x in layers)],
        "activations": spec.activations, "output": spec.output_text, "config": spec.source,
    }  # fmt: skip
    report.details["preprocessor"] = (
        {"key": norm.key, "generation": norm.generation, "size": int(norm.state["running_mean"].shape[0])}
        if norm else None
    )  # fmt: skip
    if note:
        report.notes.append(note)
    unused = unused_keys(modules["policy"], layers, spec)
    if unused:
        report.flag(ERROR, f"policy holds tensors an MLP does not use: {', '.join(unused[:3])}",
                    "only feed-forward MLP policies are supported")  # fmt: skip


def _fits_env(report: RunReport, entry: Entry, env_id: str, modules, layers, config: RunConfig) -> bool:
    missing = missing_modules_for_extras(sorted(set(entry.extras) | set(extras_for_env(env_id))))
    if missing:
        report.flag(WARNING, f"missing optional extra {missing[0]!r} to evaluate it",
                    f"pip install 'rl-zoo-hub[{missing[0]}]'")  # fmt: skip
        return False
    try:
        spaces = probe_spaces(env_spec(entry, env_id))
    except ZooError as exc:
        report.flag(WARNING, f"cannot build env to compare shapes: {exc.message}", exc.hint)
        return False
    problems = shape_problems(modules, layers, spaces, config.policy.kind)
    if problems:
        report.flag(ERROR, f"policy does not fit {env_id}: {problems[0]}", "check the env id of this run")
        return False
    return True


def load_policy(model_file: Path, entry: Entry, env_id: str, *, device: str, seed: int,
                trust_pickle: bool = False, model_config: str | Path | None = None):  # fmt: skip
    """A ready :class:`~zoo.frameworks.skrl.policy.SkrlPolicy` for ``env_id``.

    ``model_config`` (``zoo eval --model-config``, else ``params/agent.yaml`` of the
    experiment) supplies what the weights do not say: activations and the output expression.
    """
    from zoo.frameworks.skrl.policy import SkrlPolicy, build_module

    folder = model_file.parent.parent if model_file.parent.name == "checkpoints" else None
    config = run_config(folder, model_config)
    modules = load_modules(model_file, trust_pickle)
    layers = linear_chain(modules["policy"], config.policy)
    norm, _ = normalizer(modules, layers[0].in_features)
    spaces = probe_spaces(env_spec(entry, env_id))
    problems = shape_problems(modules, layers, spaces, config.policy.kind)
    if problems:
        raise ZooError(f"model does not fit {env_id}: {problems[0]}", hint="check --env-id")
    unused = unused_keys(modules["policy"], layers, config.policy)
    if unused:
        raise ZooError(f"policy holds tensors an MLP does not use: {', '.join(unused[:3])}",
                       hint="only feed-forward MLP policies are supported")  # fmt: skip
    scaler = scaler_spec(config.agent, norm.key if norm else "observation_preprocessor", config.policy.source)
    module = build_module(modules["policy"], layers, config.policy, norm, scaler)
    log_std = modules["policy"].get("log_std_parameter")
    return SkrlPolicy(module, config.policy, log_std, spaces[0], spaces[1], device, seed)
