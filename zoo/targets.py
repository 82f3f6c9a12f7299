"""From what a user names (a run dir, a model file, an exported file) to one model to load and evaluate.

:func:`resolve_target` picks the run, its registry entry, its env id and its model file;
:func:`plan_eval` fills every evaluation setting the caller left open from the registry entry;
:func:`load_target_policy` loads the target's policy safely. The public API (:mod:`zoo.api`) and so
the CLI are built on these three.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.artifacts.runs import Run, RunFilter
from zoo.checker import discover_runs, lone_file_run, named_model_file
from zoo.errors import UnsupportedError, UsageError, ZooError
from zoo.eval_settings import EvalSettings
from zoo.frameworks import Adapter, LoadOptions, get_adapter
from zoo.registry import Entry, Registry

if TYPE_CHECKING:
    from zoo.policy import Policy


@dataclass
class Target:
    """A resolved evaluation target: the run, its registry entry, env id and model file."""

    run: Run
    entry: Entry
    env_id: str
    model_file: Path | None  # None: nothing on disk, the user's policy class alone (class_target)
    exported: dict | None = None  # the sidecar, when the target is a file zoo export wrote
    #: A release's native model file, beside its framework-free form (:func:`release_target`); None otherwise.
    native: Target | None = None

    @property
    def adapter(self) -> Adapter:
        return get_adapter(self.entry.framework)

    @property
    def label(self) -> str:
        """What is evaluated, as ``zoo eval`` and eval.json's ``checkpoint`` name it: the model file, else the
        policy class (a class target's run is named by it)."""
        return str(self.model_file) if self.model_file is not None else str(self.run.run_name)


def resolve_target(
    path: Path,
    registry: Registry,
    *,
    exp_name: str | None = None,
    env_id: str | None = None,
    run_seed: int | None = None,
) -> Target:
    """One run from ``path``; ``exp_name``/``env_id``/``run_seed`` narrow a folder of runs and override
    what names say."""
    from zoo.exporter.runtime import is_exported
    from zoo.release.config import release_config

    path = Path(path)
    config = release_config(path)
    if config is not None:  # a release's framework-free form first: no pickle, no training framework
        return release_target(config, registry, env_id)
    if is_exported(path):
        return _exported_target(path, registry, env_id)
    runs = list(discover_runs([path], registry, RunFilter()))
    if len(runs) > 1:
        runs = [r for r in runs if RunFilter(exp_name, env_id, run_seed).matches(r)]
        if len(runs) != 1:
            found = "no run matches" if not runs else f"{len(runs)} runs match"
            raise ZooError(
                f"{found} under {path}",
                hint="give one run dir or model file, or narrow with "
                "--exp-name/--env-id/--run-seed (zoo check lists them)",
            )
    if not runs and path.is_file() and exp_name:
        runs = [lone_file_run(path, registry, exp_name)]
    if not runs:
        raise ZooError(
            f"no run or model file found at {path}", hint="give a run dir, or a model file with --exp-name"
        )
    return target_of_run(runs[0], registry, exp_name=exp_name, env_id=env_id, path=path)


def target_of_run(
    run: Run,
    registry: Registry,
    *,
    exp_name: str | None = None,
    env_id: str | None = None,
    path: Path | None = None,
) -> Target:
    """The target of one discovered run: its experiment (``exp_name`` overrides the name's), env id and model
    file. ``path`` is what the user named, for the messages (default: the run's folder)."""
    path = run.path if path is None else path
    why = f" ({run.name_problem})" if run.name_problem else ""
    name = exp_name or run.exp_name
    if name is None:
        raise ZooError(f"{path}: cannot tell the experiment{why}", hint="pass --exp-name")
    entry = registry.get(name)
    env = env_id or run.env_id  # as discovery resolved it: the name, else the run's own config
    if env is None:
        problem = get_adapter(run.framework).env_id_problem(run)
        if problem:
            raise ZooError(
                f"{path}: {problem}",
                hint="pass --env-id (a gymnasium id or one of zoo's tasks), or "
                "--env-id NAME --env-factory module:function for your own env",
            )
        raise ZooError(f"{path}: cannot tell the env id{why}", hint="pass --env-id (for example CartPole-v1)")
    model = named_model_file(run, entry, env) if exp_name is not None else run.model_file
    if model is None:
        raise ZooError(
            f"{run.path}: no model file",
            hint=f"expected {entry.model_filename(env_id=env)} (train with --save-model)",
        )
    return Target(dataclasses.replace(run, model_file=model), entry, env, model)


def class_target(
    registry: Registry, policy_class: str, *, exp_name: str | None = None, env_id: str | None = None
) -> Target:
    """A target with nothing on disk: the user's policy class (``--policy-class``) acting in ``env_id``.

    Its experiment is ``exp_name``, else the registry's one entry whose framework takes a policy class
    (:attr:`Adapter.takes_policy_class`); its run is the current folder, where eval.json and videos go."""
    if env_id is None:
        raise UsageError(
            f"--policy-class {policy_class}: no env for it to act in",
            hint="pass --env-id (for example --env-id Pendulum-v1)",
        )
    if exp_name is None:
        names = [e.name for e in registry.entries.values() if get_adapter(e.framework).takes_policy_class]
        if len(names) != 1:
            raise UsageError(
                f"--policy-class: {len(names)} registry entries take a policy class",
                hint=f"pass --exp-name ({', '.join(sorted(names)) or 'add one to the registry'})",
            )
        exp_name = names[0]
    entry = registry.get(exp_name)
    run = Run(
        framework=entry.framework, path=Path("."), run_name=policy_class, exp_name=entry.name, env_id=env_id
    )
    return Target(run, entry, env_id, None)


def release_target(config: Path, registry: Registry, env_id: str | None) -> Target:
    """A release's ``model.safetensors`` + ``config.json``: evaluated like an exported file, its config the
    sidecar."""
    from zoo.release.config import WEIGHTS_FILE, read_config

    target = _exported_target(config.with_name(WEIGHTS_FILE), registry, env_id, read_config(config))
    return dataclasses.replace(target, native=_native_beside(config.parent, registry, target))


def _native_beside(folder: Path, registry: Registry, release: Target) -> Target | None:
    """The release's native model file (what its framework saved), for what the framework-free form cannot do."""
    try:
        runs = [
            r
            for r in discover_runs([folder], registry, RunFilter())
            if r.model_file is not None and r.framework == release.entry.framework
        ]
        if len(runs) != 1:
            return None
        return target_of_run(runs[0], registry, exp_name=release.entry.name, env_id=release.env_id)
    except ZooError:
        return None


def _exported_target(path: Path, registry: Registry, env_id: str | None, meta: dict | None = None) -> Target:
    """An exported policy file: its sidecar (``meta``, read here unless given) names the experiment, the env
    and the env's wrappers."""
    from zoo.exporter.runtime import read_sidecar

    meta = read_sidecar(path) if meta is None else meta
    name = meta.get("exp_name")
    entry = registry.find(name) if name else None
    if entry is None:
        raise ZooError(
            f"{path}: exported from experiment {name!r}, which the registry does not know",
            hint="pass the --registry the model was exported with",
        )
    run = Run(framework=entry.framework, path=path, model_file=path, exp_name=name)
    return Target(run, entry, env_id or meta["task"], path, exported=meta)


@dataclass
class EvalPlan:
    """Every setting of one evaluation, resolved from the caller's choices and the registry defaults."""

    target: Target
    episodes: int
    num_envs: int
    seed: int
    deterministic: bool
    mode_source: str  # "flag", "registry", "exported file" or the framework's protocol (Adapter.eval_mode)
    device: str
    out_path: Path | None  # None: eval.json is not written (the caller keeps the result)
    video_dir: Path | None
    options: LoadOptions
    source: dict | None = None  # where the model came from (zoo enjoy), recorded in eval.json
    model_sha256: str | None = (
        None  # of the model file, hashed when planned (before anything reads it to load)
    )
    #: The rollout's bounds (:mod:`zoo.rollout_guard`): steps per episode (None: the env's own time limit, else the
    #: default cap) and seconds of rollout (None: the default budget).
    max_steps: int | None = None
    max_seconds: float | None = None

    @property
    def settings(self) -> dict:
        """The stochastic mode's parameters (epsilon / exploration noise), the user's code (env factory, policy
        class) and the bounds the user set (``max_steps``, ``max_seconds``), recorded in eval.json."""
        named = {
            "env_factory": self.options.env_factory,
            "policy_class": self.options.policy_class,
            "max_steps": self.max_steps,
            "max_seconds": self.max_seconds,
        }
        settings = {key: value for key, value in named.items() if value is not None}
        if self.options.engine != "torch":
            settings["engine"] = self.options.engine
        if self.deterministic:
            return settings
        eval_ = self.target.entry.eval
        return {**settings, **{k: v for k, v in eval_.items() if k in ("epsilon", "exploration_noise")}}

    @property
    def mode(self) -> str:
        return (
            "deterministic" if self.deterministic else f"stochastic ({self.target.entry.stochastic_mode()})"
        )


#: ``out`` value that means "the default place" (the run dir's eval.json), as opposed to None: not written.
DEFAULT_OUT = Path("<run dir>/eval.json")


def plan_eval(
    target: Target,
    settings: EvalSettings,
    load: LoadOptions | None = None,
    *,
    out: Path | None = DEFAULT_OUT,
    source: dict | None = None,
    video_dir: Path | None = None,
) -> EvalPlan:
    """Fill what ``settings`` leaves open from the registry entry; ``load`` says what may be loaded and run (its
    device and seed are the settings'). Outputs default to the run's folders (``video_dir`` overrides where
    ``capture_video`` records, else the adapter's layout decides)."""
    from zoo.artifacts.digest import sha256_file
    from zoo.atomic import check_writable
    from zoo.evaluator import resolve_device
    from zoo.rollout_guard import check_bounds
    from zoo.tensor_env import parse_factory

    load, unset = load or LoadOptions(), LoadOptions()
    if (load.device, load.seed) != (unset.device, unset.seed):
        raise UsageError(
            "an evaluation's device and seed are its EvalSettings', not its LoadOptions'",
            hint="set device= and seed= in EvalSettings",
        )
    deterministic, device, engine = settings.deterministic, settings.device, load.engine
    max_steps, max_seconds = settings.max_steps, settings.max_seconds
    check_bounds(max_steps, max_seconds)
    if is_release(target):
        target, deterministic, mode_source = release_or_native(
            target, deterministic, engine != "torch" or device.startswith("cuda")
        )
    else:
        mode_source = "flag"
    entry, run = target.entry, target.run
    if deterministic is None and target.exported is None:
        deterministic, mode_source = target.adapter.eval_mode(entry, target.env_id)
    if target.exported is not None:
        if deterministic is False and is_release(target):
            raise UsageError(
                f"{entry.name} is evaluated sampling ({mode_source}), but the release's framework-free "
                "form acts deterministically and no native model file lies beside it",
                hint="pass --deterministic, or get the release's native model file too",
            )
        if deterministic is False:
            raise UsageError("an exported policy only acts deterministically", hint="drop --stochastic")
        if load.policy_class is not None:
            raise UsageError("--policy-class: an exported file is its own policy", hint="drop --policy-class")
        if engine != "torch":
            raise UsageError("--engine: an exported file runs in its own runtime", hint="drop --engine")
        if device.startswith("cuda"):
            raise UnsupportedError(
                "zoo evaluates exported files on the CPU (onnxruntime's and TorchScript's CPU runtimes)",
                hint="drop --device cuda, or evaluate the checkpoint on the GPU",
            )
        deterministic, device = True, "cpu"
        mode_source = mode_source if is_release(target) else "exported file"
        default_out = target.model_file.with_name(target.model_file.name + ".eval.json")
    else:
        default_out = (run.path if run.path.is_dir() else run.path.parent) / "eval.json"
    out_path = default_out if out == DEFAULT_OUT else out
    if out_path is not None:
        check_writable(out_path, "--out")  # before the rollout, not after minutes of it
    options = dataclasses.replace(
        load,
        device=resolve_device(device),
        seed=settings.seed,
        env_factory=parse_factory(load.env_factory) if load.env_factory else None,
    )
    if engine not in ("torch", "onnxruntime"):
        raise UsageError(f"unknown engine {engine!r}", hint="use torch (exact) or onnxruntime")
    if engine != "torch" and not deterministic:
        raise UsageError(
            "--engine onnxruntime acts deterministically (the exported graph has no sampling)",
            hint="add --deterministic, or drop --engine",
        )
    if target.exported is None:
        target.adapter.check_options(options)
    episodes = settings.episodes or entry.eval["episodes"]
    if settings.capture_video:
        video_dir = (video_dir or target.adapter.video_dir(run, target.model_file)).absolute()
    else:
        video_dir = None
    return EvalPlan(
        target=target,
        episodes=episodes,
        num_envs=min(settings.num_envs, episodes),
        seed=settings.seed,
        deterministic=deterministic,
        mode_source=mode_source,
        device=options.device,
        out_path=out_path,
        video_dir=video_dir,
        options=options,
        source=source or _export_source(target.exported),
        model_sha256=sha256_file(target.model_file)
        if target.model_file and target.model_file.is_file()
        else None,
        max_steps=max_steps,
        max_seconds=None if max_seconds is None else float(max_seconds),
    )


def is_release(target: Target) -> bool:
    """``target`` is a release's ``model.safetensors`` + ``config.json``."""
    from zoo.release.config import FORMAT

    return target.exported is not None and target.exported.get("format") == FORMAT


def release_or_native(
    target: Target, deterministic: bool | None, needs_native: bool
) -> tuple[Target, bool | None, str]:
    """A release is evaluated through its framework-free form, which computes the deterministic action only. The
    native file beside it is taken instead when the evaluation samples (``deterministic`` False, or left open and
    the registry's protocol samples: CleanRL's epsilon-greedy) or ``needs_native`` (another engine, a GPU)."""
    if deterministic is None:
        deterministic, why = target.adapter.eval_mode(target.entry, target.env_id)
    else:
        why = "flag"
    if deterministic and not needs_native:
        return target, True, why
    if target.native is None:
        return target, deterministic, why  # plan_eval says what the framework-free form cannot do
    return target.native, deterministic, why


def _export_source(meta: dict | None) -> dict | None:
    """eval.json's record of which checkpoint an evaluated export came from."""
    if meta is None:
        return None
    return {
        "exported": {
            "format": meta["format"],
            "checkpoint": meta.get("checkpoint"),
            "exporter": meta.get("exporter", {}).get("name"),
            "file_sha256": meta["file_sha256"],
        }
    }


def load_target_policy(target: Target, options: LoadOptions) -> Policy:
    """The target's policy, loaded safely (refusals and bad files raise before any rollout)."""
    if target.exported is not None:
        from zoo.exporter.runtime import load_exported

        return load_exported(
            target.model_file, target.exported, target.entry, target.env_id, env_spec(target, options=options)
        )
    adapter = target.adapter
    adapter.check_options(options)
    checkpoint = adapter.read(target.run, target.entry)
    policy = adapter.load_policy(checkpoint, target.entry, target.env_id, options)
    if options.engine == "onnxruntime":
        from zoo.exporter.engine import onnxruntime_policy

        policy = onnxruntime_policy(policy, target, env_spec(target, options=options), options.seed)
    return policy


def env_spec(target: Target, video_dir: Path | None = None, options: LoadOptions | None = None):
    """The eval env of ``target``: the user's tensor env (``options.env_factory``), the adapter's, or the
    one an exported file's sidecar describes (``options.trusted_wrappers``: wrapper classes beyond the
    allowlist the user named)."""
    from zoo.env_wrappers import refuse_untrusted
    from zoo.envs import EnvSpec
    from zoo.tensor_env import TensorEnvSpec

    video = str(video_dir) if video_dir else None
    options = options or LoadOptions()
    if target.exported is not None:
        if options.env_factory or target.exported["env"].get("preset") == "tensor":
            recorded = {**target.exported["env"], "id": target.env_id}
            return TensorEnvSpec.from_json(recorded, options.env_factory, video)
        spec = EnvSpec.from_json({**target.exported["env"], "id": target.env_id}, options.trusted_wrappers)
        refuse_untrusted(spec.wrappers, options.trusted_wrappers, f"{target.model_file}'s sidecar")
        return dataclasses.replace(spec, video_dir=video)
    return target.adapter.eval_env(target.entry, target.env_id, options, target.model_file, video)
