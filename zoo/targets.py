"""Turn ``zoo eval TARGET [--exp-name --env-id --seed]`` into one model file to load."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zoo.artifacts.runs import Run, RunFilter
from zoo.check import adapter, discover_runs
from zoo.errors import ZooError
from zoo.registry import Entry, Registry


@dataclass
class Target:
    """A resolved evaluation target: the run, its registry entry, env id and model file."""

    run: Run
    entry: Entry
    env_id: str
    model_file: Path

    @property
    def adapter(self):
        return adapter(self.entry.framework)


def resolve_target(path: Path, registry: Registry, *, exp_name: str | None = None, env_id: str | None = None,
                   seed: int | None = None) -> Target:  # fmt: skip
    """One run from ``path``; flags narrow a folder of runs and override what names say."""
    runs = list(discover_runs([path], registry, RunFilter()))
    if len(runs) > 1:
        runs = [r for r in runs if RunFilter(exp_name, env_id, seed).matches(r)]
        if len(runs) != 1:
            found = "no run matches" if not runs else f"{len(runs)} runs match"
            raise ZooError(f"{found} under {path}", hint="give one run dir or model file, or narrow with "
                           "--exp-name/--env-id/--seed (see zoo check)")  # fmt: skip
    if not runs and path.is_file() and exp_name:
        runs = [
            Run(framework=registry.get(exp_name).framework, path=path, model_file=path, exp_name=exp_name)
        ]
    if not runs:
        raise ZooError(f"no run or model file found at {path}",
                       hint="give a run dir, or a model file with --exp-name")  # fmt: skip
    run = runs[0]
    if run.name_problem and exp_name is None:
        raise ZooError(run.name_problem, hint="pass --exp-name and --env-id")
    name = exp_name or run.exp_name
    if name is None:
        raise ZooError(f"{path}: cannot tell the experiment", hint="pass --exp-name")
    entry = registry.get(name)
    env = env_id or run.env_id
    if env is None:
        raise ZooError(f"{path}: cannot tell the env id", hint="pass --env-id (for example CartPole-v1)")
    model = run.model_file
    if exp_name and (model is None or not model.name.startswith(exp_name)):
        named = [p for p in run.other_model_files if p.name == entry.model_filename()]
        model = named[0] if named else model
    if model is None:
        raise ZooError(
            f"{run.path}: no model file", hint=f"expected {entry.model_filename()} (train with --save-model)"
        )
    return Target(run, entry, env, model)
