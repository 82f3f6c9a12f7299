"""Turn ``zoo eval TARGET [--exp-name --env-id --seed]`` into one model file to load."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zoo.artifacts.runs import Run, RunFilter
from zoo.check import adapter, discover_runs
from zoo.errors import EXIT_USAGE, ZooError
from zoo.registry import Entry, Registry


@dataclass
class Target:
    """A resolved evaluation target: the run, its registry entry, env id and model file."""

    run: Run
    entry: Entry
    env_id: str
    model_file: Path
    exported: dict | None = None  # the sidecar, when the target is a file zoo export wrote

    @property
    def adapter(self):
        if self.exported is not None:
            from zoo.export.runtime import ExportedFileAdapter

            return ExportedFileAdapter(self.exported)
        return adapter(self.entry.framework)


def _configured_env_id(run: Run) -> str | None:
    """An env id the run's own config names (read safely by its adapter), when its path does not say."""
    reader = getattr(adapter(run.framework), "run_env_id", None)
    return reader(run) if reader else None


def resolve_target(path: Path, registry: Registry, *, exp_name: str | None = None, env_id: str | None = None,
                   seed: int | None = None) -> Target:  # fmt: skip
    """One run from ``path``; flags narrow a folder of runs and override what names say."""
    from zoo.export.runtime import is_exported

    if is_exported(path):
        return _exported_target(path, registry, env_id)
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
    why = f" ({run.name_problem})" if run.name_problem else ""
    name = exp_name or run.exp_name
    if name is None:
        raise ZooError(f"{path}: cannot tell the experiment{why}", hint="pass --exp-name")
    entry = registry.get(name)
    env = env_id or run.env_id or _configured_env_id(run)
    if env is None:
        raise ZooError(f"{path}: cannot tell the env id{why}", hint="pass --env-id (for example CartPole-v1)")
    model = run.model_file
    if exp_name and (model is None or not model.name.startswith(exp_name)):
        named = [p for p in run.other_model_files if p.name == entry.model_filename(env_id=env)]
        model = named[0] if named else model
    if model is None:
        raise ZooError(
            f"{run.path}: no model file",
            hint=f"expected {entry.model_filename(env_id=env)} (train with --save-model)",
        )
    return Target(run, entry, env, model)


def _exported_target(path: Path, registry: Registry, env_id: str | None) -> Target:
    """An exported policy file: its sidecar names the experiment, the env and the env's wrappers."""
    from zoo.export.runtime import read_sidecar

    meta = read_sidecar(path)
    name = meta.get("exp_name")
    entry = registry.find(name) if name else None
    if entry is None:
        raise ZooError(f"{path}: exported from experiment {name!r}, which the registry does not know",
                       hint="pass the --registry the model was exported with")  # fmt: skip
    run = Run(framework=entry.framework, path=path, model_file=path, exp_name=name)
    return Target(run, entry, env_id or meta["task"], path, exported=meta)


@dataclass
class EvalPlan:
    """Every setting of one evaluation, resolved from the flags and the registry defaults."""

    target: Target
    episodes: int
    num_envs: int
    seed: int
    deterministic: bool
    mode_source: str  # "flag", "registry" or "exported file"
    device: str
    out_path: Path
    video_dir: Path | None
    trust_pickle: bool
    source: dict | None = None  # where the model came from (zoo enjoy), recorded in eval.json
    model_config: Path | None = None  # architecture the checkpoint does not state (skrl without params/)

    @property
    def settings(self) -> dict:
        """The stochastic mode's parameters (epsilon / exploration noise), recorded in eval.json."""
        if self.deterministic:
            return {}
        return {k: v for k, v in self.target.entry.eval.items() if k in ("epsilon", "exploration_noise")}

    @property
    def mode(self) -> str:
        return (
            "deterministic" if self.deterministic else f"stochastic ({self.target.entry.stochastic_mode()})"
        )


def plan_eval(target: Target, *, episodes: int | None, num_envs: int, seed: int, deterministic: bool | None,
              device: str, out_path: Path | None, capture_video: bool, trust_pickle: bool,
              model_config: Path | None = None) -> EvalPlan:  # fmt: skip
    """Fill what the flags leave open from the registry entry; outputs default to the run's folders."""
    from zoo.atomic import check_writable
    from zoo.evaluate import resolve_device

    entry, run = target.entry, target.run
    mode_source = "registry" if deterministic is None else "flag"
    if target.exported is not None:
        if deterministic is False:
            raise ZooError("an exported policy only acts deterministically", hint="drop --stochastic",
                           exit_code=EXIT_USAGE)  # fmt: skip
        deterministic, device, mode_source = True, "cpu", "exported file"
        out_path = out_path or target.model_file.with_name(target.model_file.name + ".eval.json")
    episodes = episodes or entry.eval["episodes"]
    run_dir = run.path if run.path.is_dir() else run.path.parent
    if run.path.is_dir() and run.run_name:
        video_dir = run.path.parent.parent / "videos" / f"{run.run_name}-eval"
    else:
        video_dir = Path("videos") / f"{target.model_file.stem}-eval"
    out_path = out_path or run_dir / "eval.json"
    check_writable(out_path, "--out")  # before the rollout, not after minutes of it
    return EvalPlan(
        target=target, episodes=episodes, num_envs=min(num_envs, episodes), seed=seed,
        deterministic=entry.eval["deterministic"] if deterministic is None else deterministic,
        mode_source=mode_source, device=resolve_device(device),
        out_path=out_path, video_dir=video_dir if capture_video else None,
        trust_pickle=trust_pickle, model_config=model_config, source=_export_source(target.exported),
    )  # fmt: skip


def _export_source(meta: dict | None) -> dict | None:
    """eval.json's record of which checkpoint an evaluated export came from."""
    if meta is None:
        return None
    return {"exported": {"format": meta["format"], "checkpoint": meta.get("checkpoint"),
                         "exporter": meta.get("exporter", {}).get("name"), "file_sha256": meta["file_sha256"]}}  # fmt: skip


def load_plan_policy(plan: EvalPlan):
    """The target's policy, loaded safely (refusals and bad files raise before any rollout)."""
    target = plan.target
    extra = {"model_config": plan.model_config} if plan.model_config else {}
    return target.adapter.load_policy(target.model_file, target.entry, target.env_id, device=plan.device,
                                      seed=plan.seed, trust_pickle=plan.trust_pickle, **extra)  # fmt: skip


def run_eval(plan: EvalPlan, policy, on_episode=None):
    """Roll ``policy`` out as planned and write eval.json atomically; returns the EvalResult."""
    from zoo.atomic import write_json_atomic
    from zoo.evaluate import evaluate

    target = plan.target
    spec = target.adapter.env_spec(target.entry, target.env_id,
                                   video_dir=str(plan.video_dir) if plan.video_dir else None)  # fmt: skip
    result = evaluate(policy, spec, episodes=plan.episodes, num_envs=plan.num_envs, seed=plan.seed,
                      deterministic=plan.deterministic, checkpoint=str(target.model_file),
                      exp_name=target.entry.name, framework=target.entry.framework, device=plan.device,
                      settings=plan.settings, source=plan.source, on_episode=on_episode)  # fmt: skip
    write_json_atomic(plan.out_path, result.to_json())
    return result
