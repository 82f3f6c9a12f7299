"""Tianshou adapter: the runs Tianshou 2.x's high-level API persists, read as data and rebuilt in plain torch.

A run is ``<persistence_base_dir>/<Algo>Experiment_<YYYYMMDD-HHMMSS>/exp_seed=<seed>/`` with ``experiment.pkl``
(the experiment's config: the env id), ``policy.pt`` (``torch.save`` of the whole ``Algorithm`` object) and, for
an obs-normalizing env factory, ``env_obs_rms.pkl`` (a pickled ``RunningMeanStd``). All three name Tianshou's
classes, so ``torch.load(weights_only=True)`` refuses them and Tianshou's own restore fails under torch >= 2.6
(its ``torch.load`` has no ``weights_only=False``). zoo reads them without Tianshou and without running them
(:mod:`zoo.frameworks.tianshou.objects`), takes the acting network out of the records
(:mod:`zoo.frameworks.tianshou.model`) and rebuilds it in plain torch (:mod:`zoo.frameworks.tianshou.policy`).

The low-level mujoco examples save ``{task}/{algo}/{seed}/{yymmdd-HHMMSS}/policy.pth``, the algorithm's state
dict and the ``RunningMeanStd``, read the same way; their activation is in the user's script only, so loading
one takes ``--model-config``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.artifacts.report import WARNING, RunReport
from zoo.artifacts.runs import Run, note_read
from zoo.errors import BrokenFile, LayoutMismatch, RefusedError, UsageError
from zoo.frameworks.base import (
    BEST_MODEL,
    Adapter,
    Checkpoint,
    HubNaming,
    LoadOptions,
    Misfit,
    NetworkFlag,
    PolicyView,
    SavedCheckpoint,
)
from zoo.frameworks.kinds import SpaceKinds
from zoo.frameworks.tianshou import discover as _discover
from zoo.frameworks.tianshou.discover import EXPERIMENT, obs_rms_file
from zoo.frameworks.tianshou.model import Actor, ObsNorm, short

if TYPE_CHECKING:
    from zoo.frameworks.tianshou.objects import Loaded
    from zoo.registry import Entry, Registry

_DOCS = "see docs/frameworks/tianshou.md"


@dataclass
class Experiment:
    """What ``experiment.pkl`` says that zoo uses: the env id, the seed, whether the env normalizes observations."""

    env_id: str | None
    seed: int | None
    obs_norm: bool | None
    env_factory: str | None
    name: str | None


@dataclass
class TianshouCheckpoint(Checkpoint):
    """A verified ``policy.pt``: its records, the acting network, the normalizer and the experiment's facts."""

    loaded: Loaded | None = None
    actor: Actor | None = None
    low_level: bool = False  # a low-level example's policy.pth: weights and obs_rms, no architecture
    norm: ObsNorm | None = None
    norm_file: Path | None = None
    experiment: Experiment | None = None


def read_experiment(path: Path) -> Experiment:
    """``experiment.pkl`` read as data (the env factory may be the user's own class: it is a name here)."""
    from zoo.frameworks.tianshou.objects import ANY_SAFE_NAME, Numpy, Record, read_pickle

    root = read_pickle(path, ANY_SAFE_NAME).root
    if not isinstance(root, Record) or not root.qualname.endswith(".Experiment"):
        raise BrokenFile(f"{path}: not a Tianshou Experiment (it holds a {short(root)})")
    config, factory = root.get("config"), root.get("env_factory")
    task = factory.get("task") if isinstance(factory, Record) else None
    seed = config.get("seed") if isinstance(config, Record) else None
    obs_norm = factory.get("obs_norm") if isinstance(factory, Record) else None
    name = root.get("name")
    return Experiment(
        task if isinstance(task, str) else None,
        _seed(Numpy(path).number(seed)) if seed is not None else None,
        obs_norm if isinstance(obs_norm, bool) else None,
        factory.qualname if isinstance(factory, Record) else None,
        name if isinstance(name, str) else None,
    )


def _seed(value: float | int) -> int | None:
    """An experiment's seed: an integer, or None for anything else a damaged file holds."""
    return int(value) if isinstance(value, int) or (isinstance(value, float) and value.is_integer()) else None


def read_obs_rms(path: Path) -> ObsNorm:
    """``env_obs_rms.pkl`` (Tianshou's ``RunningMeanStd``) as the statistics its ``norm`` applies."""
    from zoo.frameworks.tianshou.objects import read_pickle

    return obs_norm_of(read_pickle(path).root, path)


def obs_norm_of(root: object, path: Path) -> ObsNorm:
    """A ``RunningMeanStd`` record (``env_obs_rms.pkl``, a low-level ``policy.pth``'s ``obs_rms``) as statistics."""
    import numpy as np

    from zoo.frameworks.tianshou.objects import Numpy, Record, is_record

    if not is_record(root, "tianshou.utils.statistics.RunningMeanStd") or not isinstance(root, Record):
        raise BrokenFile(f"{path}: not a Tianshou RunningMeanStd (it holds a {short(root)})")
    arrays = Numpy(path)
    mean, var = arrays.array(root.get("mean")), arrays.array(root.get("var"))
    eps, clip = arrays.number(root.get("eps")), root.get("clip_max")
    if mean.shape != var.shape or mean.ndim != 1:
        raise BrokenFile(f"{path}: mean {mean.shape} and var {var.shape} are not one vector shape")
    if clip is not None and not isinstance(clip, int | float):
        clip = arrays.number(clip)
    if not all(np.isfinite(x) for x in (eps, clip or 0.0)):
        raise BrokenFile(f"{path}: eps {eps!r} or clip_max {clip!r} is not a finite number")
    return ObsNorm(mean, var, float(eps), float(clip) if clip else None)


def _experiment_of(run_dir: Path) -> Experiment | None:
    path = run_dir / EXPERIMENT
    note_read(path)
    return read_experiment(path) if path.is_file() else None


def _exp_name(run: Run, actor: Actor | None) -> str | None:
    if run.exp_name:
        return run.exp_name
    return f"tianshou_{actor.algorithm.lower()}" if actor is not None else None


def _verify(model: Path) -> None:
    """The archive checked as torch's reader would (CRCs, bounds), before its ``data.pkl`` is read as data."""
    from zoo.artifacts.torchfile import inspect_torch_file

    info = inspect_torch_file(model)
    if info.kind == "unreadable":
        raise BrokenFile(f"cannot read {model}: {info.problem}")
    if info.kind in ("missing", "empty", "not-torch", "truncated") or info.problem:
        raise BrokenFile(f"{model}: {info.problem or info.kind}", hint="re-save or re-download the file")
    if info.kind != "torch-zip":
        raise BrokenFile(f"{model}: a {info.kind} file, not the zip archive torch.save writes")


class TianshouAdapter(Adapter):
    name = "tianshou"
    packages = ("tianshou",)
    training_modules = {"tianshou": "tianshou[eval,argparse]", "gymnasium": "gymnasium"}
    #: Tianshou's examples (``examples/discrete/discrete_dqn_hl.py``, ``examples/mujoco/mujoco_ppo_hl.py``) run
    #: through sensai's ``run_cli``: ``--task`` and ``--persistence_base_dir`` are their parameters.
    training_command = "python {script} --task {env_id} --persistence_base_dir {output_dir}"
    training_script = "examples/mujoco/mujoco_ppo_hl.py"
    training_device_flag = None  # the examples' ExperimentConfig picks the device itself
    training_run_folder = "{output_dir}/{env_id}/*Experiment_*/exp_seed=*"
    training_resume = None  # the high-level API starts a new experiment folder; it does not resume a run
    network_flags = {
        "--logger_type wandb": NetworkFlag("metrics to Weights & Biases", "a W&B API key"),
    }
    train_return_tags = ("train/returns_stat/mean", "test/returns_stat/mean")
    layout_hint = (
        "Tianshou: {persistence_base_dir}/{Algo}Experiment_{YYYYMMDD-HHMMSS}/exp_seed={seed}/"
        "{experiment.pkl, policy.pt[, env_obs_rms.pkl]}"
    )
    #: A low-level example's ``policy.pth`` holds weights only: its activation comes from ``--model-config``.
    takes_model_config = True
    hub = HubNaming(
        library_name="tianshou",
        display_name="Tianshou",
        tags=("tianshou",),
        run_files=(EXPERIMENT, _discover.POLICY, _discover.OBS_RMS),
    )

    def entry_problem(self, raw: dict) -> tuple[str, str] | None:
        """Tianshou entries name no model class: the network is read from ``policy.pt``."""
        layout = raw.get("layout", {"kind": "experiment"})
        if not isinstance(layout, dict) or layout.get("kind") != "experiment":
            return (
                "layout.kind",
                "tianshou entries use layout {kind: experiment} (the high-level API's folder)",
            )
        return self.unused_fields(raw, ("model", "policy"), "the network is read from policy.pt")

    def discover(self, root: Path) -> Iterator[Run]:
        return _discover.discover(root)

    def inputs(self, run: Run) -> list[Path | None]:
        folder = run.path if run.path.is_dir() else run.path.parent
        model = run.model_file
        return [model, folder / EXPERIMENT, obs_rms_file(model) if model else None, run.events_file]

    def companion_files(self, run: Run) -> list[Path]:
        """``experiment.pkl`` and the normalizer statistics: what evaluating ``policy.pt`` reads besides it."""
        model = run.model_file
        folder = run.path if run.path.is_dir() else run.path.parent
        found = [folder / EXPERIMENT, obs_rms_file(model) if model else None]
        return [p for p in found if p is not None and p.is_file()]

    def checkpoints(self, run_dir: Path) -> list[SavedCheckpoint]:
        return _discover.saved_checkpoints(run_dir)

    def best_model_files(self, run_dir: Path, checkpoint: SavedCheckpoint) -> dict[str, Path]:
        """``best_model.pt`` and ``best_model_obs_rms.pkl``, the names discovery reads back as a model of the run."""
        if checkpoint.model_file.name == _discover.LOW_LEVEL:
            return {_discover.BEST_LOW_LEVEL: checkpoint.model_file}
        files = {_discover.BEST_FILE: checkpoint.model_file}
        if "obs_rms" in checkpoint.companions:
            files[f"{BEST_MODEL}_obs_rms.pkl"] = checkpoint.companions["obs_rms"]
        return files

    def env_id(self, run: Run) -> str | None:
        """``experiment.pkl``'s env factory ``task``."""
        if run.env_id:
            return run.env_id
        experiment = _experiment_of(run.path if run.path.is_dir() else run.path.parent)
        return experiment.env_id if experiment else None

    def run_seed(self, run: Run) -> int | None:
        """The ``exp_seed=`` folder name, else ``experiment.pkl``'s ``ExperimentConfig.seed``."""
        if run.seed is not None:
            return run.seed
        experiment = _experiment_of(run.path if run.path.is_dir() else run.path.parent)
        return experiment.seed if experiment else None

    def env_id_unknown(self, run: Run, view: PolicyView) -> tuple[str, str]:
        return "env id unknown (experiment.pkl names no task)", "pass --env-id"

    def read(self, run: Run, entry: Entry | None) -> TianshouCheckpoint:
        """``policy.pt`` verified, then read as data; the normalizer and the experiment beside it."""
        from zoo.frameworks.tianshou.model import actor_of
        from zoo.frameworks.tianshou.objects import Numpy, read_torch_object

        model = run.model_file
        assert model is not None
        _verify(model)
        loaded = read_torch_object(model)
        if model.suffix == ".pth":
            return _read_low_level(run, model, loaded)
        actor = actor_of(loaded.root, Numpy(model))
        folder = model.parent
        experiment = read_experiment(folder / EXPERIMENT) if (folder / EXPERIMENT).is_file() else None
        norm_file = obs_rms_file(model)
        norm = read_obs_rms(norm_file) if norm_file.is_file() else None
        if norm is None and experiment is not None and experiment.obs_norm:
            raise BrokenFile(
                f"{norm_file} is missing: the run's env factory normalizes observations, so the policy "
                "acts on normalized ones",
                hint="copy env_obs_rms.pkl, saved with policy.pt, beside it",
            )
        return TianshouCheckpoint(
            model,
            "torch-zip (pickled Tianshou Algorithm)",
            model.stat().st_size,
            loaded=loaded,
            actor=actor,
            norm=norm,
            norm_file=norm_file if norm is not None else None,
            experiment=experiment,
        )

    def inspect(self, report: RunReport, registry: Registry) -> PolicyView | None:
        run = report.run
        assert run.model_file is not None
        report.details["checkpoint"] = run.model_file.name
        report.details["checkpoints"] = sorted({p.name for p in [run.model_file, *run.other_model_files]})
        report.details["step"] = _discover.epoch_of(run.model_file)
        checkpoint = self.read(run, None)
        report.details.update(size=checkpoint.size, format=checkpoint.format)
        actor = checkpoint.actor
        assert actor is not None
        name = _exp_name(run, actor)
        entry = registry.find(name or "")
        if entry is None:
            registry.get(name or "")  # the registry's "unknown experiment" error, with its suggestions
        assert entry is not None
        if entry.algorithm != actor.algorithm:
            raise LayoutMismatch(
                f"policy.pt holds a {actor.algorithm} algorithm, not {entry.algorithm} ({entry.name})",
                hint=f"pass --exp-name tianshou_{actor.algorithm.lower()}",
            )
        report.details["algorithm"] = entry.algorithm
        _describe(report, checkpoint)
        if actor.head != "argmax" and not actor.deterministic_eval and not checkpoint.low_level:
            report.notes.append(
                "Tianshou's own evaluation samples actions (deterministic_eval is False in this policy); "
                "zoo eval --deterministic takes the distribution's mode"
            )
        return PolicyView(checkpoint, entry, _kinds(actor), model=actor)

    def checked(self, report: RunReport, view: PolicyView, env_id: str, spaces: tuple) -> None:
        checkpoint = view.checkpoint
        if isinstance(checkpoint, TianshouCheckpoint) and checkpoint.low_level:
            report.flag(
                WARNING,
                "activation functions unknown: a low-level policy.pth holds weights only",
                "zoo eval needs --model-config PATH (see docs/frameworks/tianshou.md)",
            )

    def misfit(self, view: PolicyView, env_id: str, spaces: tuple | None) -> Misfit | None:
        """The policy's recorded spaces and its network's sizes against the env's."""
        actor = view.model
        assert isinstance(actor, Actor) and spaces is not None
        checkpoint = view.checkpoint
        assert isinstance(checkpoint, TianshouCheckpoint)
        return Misfit.of(env_id, _shape_problem(actor, checkpoint.norm, spaces))

    def loaded(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> PolicyView:
        """The same reading as ``zoo check``'s (nothing in these files needs trust: nothing in them runs)."""
        assert isinstance(checkpoint, TianshouCheckpoint) and checkpoint.actor is not None
        if checkpoint.low_level:
            return _low_level_view(checkpoint, entry, options)
        if options.model_config is not None:
            raise UsageError(
                "--model-config is not used by Tianshou's high-level runs (policy.pt states the architecture)",
                hint="drop --model-config",
            )
        if entry.algorithm != checkpoint.actor.algorithm:
            raise UsageError(
                f"{checkpoint.model_file} holds a {checkpoint.actor.algorithm} algorithm, not {entry.algorithm}",
                hint=f"pass --exp-name tianshou_{checkpoint.actor.algorithm.lower()}",
            )
        return PolicyView(checkpoint, entry, _kinds(checkpoint.actor), model=checkpoint.actor)

    def build_policy(self, view: PolicyView, env_id: str, spaces: tuple | None, options: LoadOptions) -> Any:
        from zoo.frameworks.tianshou.policy import TianshouPolicy, build_actor

        checkpoint = view.checkpoint
        assert isinstance(checkpoint, TianshouCheckpoint) and checkpoint.loaded is not None
        actor = view.model
        assert isinstance(actor, Actor) and spaces is not None
        loaded = checkpoint.loaded
        weights = {key: loaded.array(info) for key, info in actor.tensors.items()}
        _finite(weights, checkpoint.model_file)
        if checkpoint.low_level:  # the example's policy scales to the env's action space, as Tianshou's does
            from zoo.frameworks.tianshou.model import Space

            act = spaces[1]
            actor.action = Space("Box", tuple(act.shape), low=act.low, high=act.high)
        module = build_actor(actor, weights, checkpoint.norm)
        sigma, epsilon = _exploration(loaded, actor, checkpoint.low_level)
        return TianshouPolicy(
            module, actor, spaces[0], spaces[1], options.device, options.seed, sigma, epsilon
        )


def _kinds(actor: Actor) -> SpaceKinds:
    said = f"a {actor.policy_class} of {actor.algorithm}, as policy.pt says"
    return SpaceKinds("Discrete" if actor.head == "argmax" else "Box", "vector", said_by=said)


def _shape_problem(actor: Actor, norm: ObsNorm | None, spaces: tuple) -> str | None:
    import numpy as np

    obs_space, act_space = spaces
    obs_dim = int(np.prod(obs_space.shape))
    sizes = actor.sizes()
    if sizes and sizes[0] != obs_dim:
        return f"the network reads {sizes[0]} observation values, the env gives {obs_dim}"
    if norm is not None and norm.mean.shape[0] != obs_dim:
        return f"env_obs_rms.pkl normalizes {norm.mean.shape[0]} observation values, the env gives {obs_dim}"
    if actor.head == "argmax":
        if sizes and sizes[-1] != int(act_space.n):
            return f"the network scores {sizes[-1]} actions, the env has {act_space.n}"
    elif sizes and sizes[-1] != int(np.prod(act_space.shape)):
        return f"the network gives {sizes[-1]} action values, the env takes {int(np.prod(act_space.shape))}"
    recorded = actor.action
    if recorded is not None and recorded.kind == "Box" and actor.scaling:
        if recorded.low is None or recorded.high is None or recorded.low.shape != tuple(act_space.shape):
            return "the policy's recorded action space differs from the env's"
        if not (
            np.array_equal(recorded.low, act_space.low) and np.array_equal(recorded.high, act_space.high)
        ):
            return (
                f"the policy scales actions to [{recorded.low.tolist()}, {recorded.high.tolist()}], the env's "
                f"bounds are [{act_space.low.tolist()}, {act_space.high.tolist()}]"
            )
    return None


def _finite(weights: dict, path: Path) -> None:
    import numpy as np

    bad = [key for key, values in weights.items() if not np.isfinite(values).all()]
    if bad:
        raise RefusedError(
            f"{path}: weights hold NaN or Inf ({', '.join(bad[:3])})", hint="re-train or re-save"
        )


def _exploration(loaded: Loaded, actor: Actor, low_level: bool) -> tuple[Any, float]:
    """``(sigma parameter of a Gaussian actor, eps_inference of a DQN policy)`` for stochastic mode."""
    from zoo.artifacts.weights_only import TensorInfo
    from zoo.frameworks.tianshou.model import child
    from zoo.frameworks.tianshou.objects import Numpy, Record

    if low_level:
        info = loaded.root["model"].get("policy.actor.sigma_param")
        return (loaded.array(info).reshape(-1) if isinstance(info, TensorInfo) else None), 0.0
    policy = child(loaded.root, "policy")
    assert isinstance(policy, Record)
    epsilon = policy.get("eps_inference") or 0.0
    epsilon = float(Numpy(loaded.path).number(epsilon))
    sigma = None
    if actor.head == "gaussian":
        params = child(policy, "actor").get("_parameters") or {}
        info = params.get("sigma_param")
        sigma = loaded.array(info).reshape(-1) if isinstance(info, TensorInfo) else None
    return sigma, epsilon


def _read_low_level(run: Run, model: Path, loaded: Loaded) -> TianshouCheckpoint:
    """A low-level mujoco example's ``policy.pth``: ``{"model": state dict, "obs_rms": RunningMeanStd}``."""
    from zoo.frameworks.tianshou.model import low_level_actor

    root = loaded.root
    state = root.get("model") if isinstance(root, dict) else None
    if not isinstance(state, dict):
        raise BrokenFile(
            f"{model}: not a Tianshou example's policy.pth (a dict with the algorithm's state dict under 'model')",
            hint=_DOCS,
        )
    algorithm = (run.exp_name or "tianshou_ppo").removeprefix("tianshou_").upper()
    actor = low_level_actor(state, None, algorithm)
    norm = obs_norm_of(root["obs_rms"], model) if root.get("obs_rms") is not None else None
    return TianshouCheckpoint(
        model,
        "torch-zip (state dict and RunningMeanStd)",
        model.stat().st_size,
        loaded=loaded,
        actor=actor,
        norm=norm,
        norm_file=model if norm is not None else None,
        low_level=True,
    )


def _low_level_view(checkpoint: TianshouCheckpoint, entry: Entry, options: LoadOptions) -> PolicyView:
    """The low-level actor with the activation and action mapping ``--model-config`` states."""
    from zoo.errors import UnsupportedError
    from zoo.frameworks.tianshou.model import low_level_actor, read_model_config

    if options.model_config is None:
        raise UnsupportedError(
            f"{checkpoint.model_file}: its activation functions are unknown (a low-level policy.pth holds weights only)",
            hint="pass --model-config PATH, e.g. a file saying 'activation: Tanh' for Tianshou's mujoco examples "
            "(see docs/frameworks/tianshou.md)",
        )
    assert checkpoint.loaded is not None and checkpoint.actor is not None
    config = read_model_config(options.model_config)
    actor = low_level_actor(checkpoint.loaded.root["model"], config, checkpoint.actor.algorithm)
    return PolicyView(checkpoint, entry, _kinds(actor), model=actor)


def _describe(report: RunReport, checkpoint: TianshouCheckpoint) -> None:
    actor = checkpoint.actor
    assert actor is not None
    activations = sorted(set(actor.activations()))
    report.details["policy"] = {
        "class": actor.policy_class,
        "head": actor.head,
        "sizes": actor.sizes(),
        "activations": (activations[0] or None) if len(activations) == 1 else activations,
    }
    if checkpoint.low_level:  # the rest is what --model-config says; the file holds none of it
        report.details["layout"] = "low-level example (policy.pth)"
    elif actor.policy_class != "DiscreteQLearningPolicy":
        report.details["policy"]["deterministic_eval"] = actor.deterministic_eval
    if actor.head == "gaussian" and not checkpoint.low_level:
        report.details["policy"].update(
            unbounded=actor.unbounded,
            max_action=actor.max_action,
            action_bound_method=actor.bound_method,
            action_scaling=actor.scaling,
        )
    norm = checkpoint.norm
    report.details["obs_rms"] = (
        {
            "file": checkpoint.norm_file.name if checkpoint.norm_file else None,
            "size": int(norm.mean.shape[0]),
            "clip_max": norm.clip_max,
        }
        if norm is not None
        else None
    )
    experiment = checkpoint.experiment
    if experiment is None and not checkpoint.low_level:
        report.flag(WARNING, f"no {EXPERIMENT} beside {checkpoint.model_file.name}", "pass --env-id")
    elif experiment is not None:
        report.details["experiment"] = {"name": experiment.name, "env_factory": experiment.env_factory}
    if report.run.env_id is not None:
        report.details["env_id"] = report.run.env_id


ADAPTER = TianshouAdapter()
