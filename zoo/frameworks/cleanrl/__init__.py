"""CleanRL adapter: recognise runs, inspect checkpoints, build policies.

CleanRL's training scripts write ``runs/{run_name}/{exp_name}.cleanrl_model`` in
one of three layouts (a state dict, ``{"model_weights", "args"}``, or a tuple of
state dicts); the registry says which. Models are the classes in
:mod:`zoo.frameworks.cleanrl.models`, key-for-key compatible with the scripts.
"""

from __future__ import annotations

from pathlib import Path

from zoo.artifacts.report import ERROR, WARNING, RunReport, flag_torch_file
from zoo.artifacts.runs import Run
from zoo.artifacts.torchfile import inspect_torch_file, load_checkpoint
from zoo.envs import env_spec_for as env_spec
from zoo.envs import extras_for_env, missing_modules_for_extras, probe_spaces
from zoo.errors import ZooError
from zoo.frameworks.cleanrl.checkpoint import (
    LayoutMismatch,
    build_model,
    expected_shapes,
    shape_problems,
    split_parts,
)
from zoo.frameworks.cleanrl.discover import discover
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

#: What CleanRL's scripts log as the return of each finished training episode.
TRAIN_RETURN_TAG = "charts/episodic_return"

LAYOUTS = ("state_dict", "dict", "tuple")
HEADS = ("q_values", "c51", "gaussian", "deterministic_actor")

_SHAPES_CACHE: dict[tuple, dict[str, tuple]] = {}


def entry_problem(raw: dict) -> tuple[str, str] | None:
    """``(field, problem)`` for the first CleanRL-specific field of a registry entry that is wrong."""
    layout = raw.get("layout")
    if not isinstance(layout, dict):
        return "layout", "missing"
    if layout.get("kind") not in LAYOUTS:
        return "layout.kind", f"{layout.get('kind', '<missing>')!r} is not one of {', '.join(LAYOUTS)}"
    parts = layout.get("parts")
    if not isinstance(parts, list) or not parts or not all(isinstance(p, str) for p in parts):
        return "layout.parts", "expected a non-empty list of part names"
    if layout["kind"] != "tuple" and len(parts) != 1:
        return "layout.parts", f"layout {layout['kind']!r} holds exactly one part"
    if layout["kind"] == "dict":
        for key in ("weights_key", "args_key"):
            if not isinstance(layout.get(key), str):
                return f"layout.{key}", "required for layout kind 'dict'"
    model = raw.get("model")
    if not isinstance(model, dict):
        return "model", "missing"
    for part in parts:
        if not isinstance(model.get(part), str) or ":" not in model[part]:
            return f"model.{part}", "expected 'module.path:ClassName'"
    policy = raw.get("policy")
    if not isinstance(policy, dict):
        return "policy", "missing"
    if policy.get("part") not in parts:
        return "policy.part", f"must name one of the layout parts {parts}"
    if policy.get("head") not in HEADS:
        return "policy.head", f"{policy.get('head', '<missing>')!r} is not one of {', '.join(HEADS)}"
    return None


def inputs(run: Run) -> list[Path | None]:
    """The files ``inspect_run``'s verdict is read from: ``zoo check`` remembers it while they are unchanged."""
    return [run.model_file, *run.other_model_files, run.events_file]


def needed_extras(entry: Entry, env_id: str) -> list[str]:
    return sorted(set(entry.extras) | set(extras_for_env(env_id)))


def inspect_run(run: Run, registry: Registry) -> RunReport:
    """Everything ``zoo check`` says about one CleanRL run, without executing any file."""
    report = RunReport(run)
    if run.name_problem and run.model_file is None:
        report.flag(ERROR, run.name_problem, "pass --exp-name and --env-id, or rename the run dir")
        return report
    entry = registry.find(run.exp_name or "")
    if entry is None:
        try:
            registry.get(run.exp_name or "")
        except ZooError as exc:
            report.flag(ERROR, f"unknown experiment {run.exp_name!r}", exc.hint)
        return report
    report.details["algorithm"] = entry.algorithm
    if run.model_file is None:
        if run.other_model_files:
            names = ", ".join(p.name for p in run.other_model_files)
            report.flag(ERROR, f"exp_name mismatch: run is {run.exp_name!r}, model file is {names}",
                        "rename the file or pass --exp-name")  # fmt: skip
        else:
            report.flag(ERROR, "missing model: no .cleanrl_model in the run dir", "train with --save-model")
        return report
    info = inspect_torch_file(run.model_file)
    if info.kind not in ("missing", "unreadable"):
        report.details.update(size=info.size, format=info.kind)
    if not flag_torch_file(report, info, not_torch_hint="is this a CleanRL model file?"):
        return report
    try:
        parts, kwargs = split_parts(entry, info.content)
    except LayoutMismatch as exc:
        report.flag(ERROR, exc.message, exc.hint)
        return report
    report.details["tensors"] = sum(len(sd) for sd in parts.values())
    if kwargs:
        report.details["model_kwargs"] = kwargs
    if run.env_id is None:
        report.flag(WARNING, f"env id unknown ({run.name_problem or 'the file is not in a run dir'})",
                    "pass --env-id to zoo eval")  # fmt: skip
        return report
    missing = missing_modules_for_extras(needed_extras(entry, run.env_id))
    if missing:
        report.flag(WARNING, f"missing optional extra {missing[0]!r} to evaluate it",
                    f"pip install 'rl-zoo-hub[{missing[0]}]'")  # fmt: skip
        return report
    _compare_shapes(report, entry, run.env_id, parts, kwargs)
    return report


def _compare_shapes(report: RunReport, entry: Entry, env_id: str, parts: dict, kwargs: dict) -> bool:
    """Flag the first key/shape that differs from the registry's model class; True when all fit."""
    try:
        spaces = probe_spaces(env_spec(entry, env_id))
    except ZooError as exc:
        report.flag(WARNING, f"cannot build env to compare shapes: {exc.message}", exc.hint)
        return False
    for part, state in parts.items():
        key = (entry.name, part, env_id, tuple(sorted(kwargs.items())))
        if key not in _SHAPES_CACHE:
            _SHAPES_CACHE[key] = expected_shapes(entry, part, spaces, kwargs)
        problems = shape_problems(state, _SHAPES_CACHE[key])
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            where = f" in {part}" if len(parts) > 1 else ""
            report.flag(ERROR, f"shapes do not match {entry.name} on {env_id}{where}: {problems[0]}{more}",
                        "check the env id and exp_name of this run")  # fmt: skip
            return False
    return True


def load_policy(model_file: Path, entry: Entry, env_id: str, *, device: str, seed: int,
                trust_pickle: bool = False):  # fmt: skip
    """A ready :class:`~zoo.frameworks.cleanrl.policy.CleanRLPolicy` for ``env_id``."""
    from zoo.frameworks.cleanrl.policy import CleanRLPolicy

    info = inspect_torch_file(model_file)
    checkpoint = load_checkpoint(model_file, info, trust_pickle=trust_pickle)
    parts, kwargs = split_parts(entry, checkpoint)
    spaces = probe_spaces(env_spec(entry, env_id))
    part = entry.policy["part"]
    problems = shape_problems(parts[part], expected_shapes(entry, part, spaces, kwargs))
    if problems:
        raise ZooError(f"model does not fit {env_id}: {problems[0]}",
                       hint="check --env-id and --exp-name")  # fmt: skip
    module = build_model(entry, part, spaces, kwargs, device=device)
    module.load_state_dict(parts[part])
    return CleanRLPolicy(module, entry.policy["head"], spaces[0], spaces[1], entry.eval, device, seed)
