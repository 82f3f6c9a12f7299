"""rsl_rl adapter (rsl-rl-lib, as used by Isaac Lab, mjlab and Genesis): runs, checkpoints, policies.

Runs are folders of ``model_{iter}.pt`` checkpoints written by ``OnPolicyRunner.save``, with the
runner config beside them (``params/agent.yaml`` or Genesis' ``cfgs.pkl``). The latest checkpoint is
the run's model. Checkpoints are read with ``torch.load(weights_only=True)`` after a static scan;
the actor is rebuilt as rsl_rl's own ``MLPModel``/``RNNModel`` from the weight shapes plus the
activation and rnn type the config names (see :mod:`.checkpoint`).
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.artifacts.report import WARNING, RunReport, flag_torch_file
from zoo.artifacts.runs import Run
from zoo.artifacts.torchfile import TorchFileInfo, inspect_torch_file
from zoo.errors import BrokenFile, LayoutMismatch, UnsupportedError, ZooError
from zoo.frameworks.base import (
    Adapter,
    Checkpoint,
    HubNaming,
    LoadOptions,
    Misfit,
    PolicyView,
    SavedCheckpoint,
)
from zoo.frameworks.kinds import SpaceKinds
from zoo.frameworks.rsl_rl import discover as _discover
from zoo.frameworks.rsl_rl.checkpoint import Architecture, architecture, state_problems
from zoo.frameworks.rsl_rl.config import AGENT_YAML, CFGS_PKL, ENV_YAML, RunConfig, read_run_config
from zoo.frameworks.rsl_rl.discover import iteration
from zoo.frameworks.rsl_rl.formats import PolicyWeights, policy_weights
from zoo.frameworks.rsl_rl.obs import ObsLayout, env_layout
from zoo.tensor_env import TensorEnvSpec, cfgs_json

if TYPE_CHECKING:
    from zoo.registry import Entry, Registry

_WEIGHTS_HINT = "is this checkpoint from the run its config describes?"
#: The runners' algorithms whose policy zoo knows: PPO's actor, Distillation's student.
_ALGORITHMS = ("PPO", "Distillation")
#: rsl_rl's actors output continuous actions (a Gaussian's mean); observations are a vector or a tensor env's groups.
ACTS_ON = SpaceKinds("Box")


@dataclass
class RslRlCheckpoint(Checkpoint):
    """A verified ``model_{iter}.pt``: the runner config beside it and the file's torch facts."""

    config: RunConfig | None = None
    info: TorchFileInfo | None = None


@dataclass(kw_only=True)
class RslRlView(PolicyView):
    """The actor's weights (described by check, loaded by the loader), the runner config and the actor's
    architecture read from both."""

    config: RunConfig
    weights: PolicyWeights
    arch: Architecture


def _run_dir(run: Run) -> Path:
    return run.path if run.path.is_dir() else run.path.parent


def _weights_problem(
    state: dict, arch: Architecture, layout: ObsLayout | None = None, env_id: str | None = None
) -> ZooError | None:
    """What ``load_state_dict(strict=True)`` would refuse, named the same way by check and load.

    A CNN actor is rebuilt for the env's image size, which sets its MLP's input: a misfit there is as
    likely the env's as the file's."""
    problems = state_problems(state, arch, layout)
    if not problems:
        return None
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    if arch.cnns:
        return LayoutMismatch(
            f"the weights do not fit the actor rebuilt for {env_id}'s images: {problems[0]}{more}",
            "check the env id and the config's cnn_cfg: the image size, strides and pooling set the MLP's input",
        )
    return BrokenFile(f"the weights do not fit the rebuilt actor: {problems[0]}{more}", _WEIGHTS_HINT)


def _fit(
    env_id: str, arch: Architecture, weights: PolicyWeights, config: RunConfig, spaces: tuple[Any, Any]
) -> ObsLayout | str:
    """How ``env_id``'s observations feed the policy, or why its spaces do not fit the policy (one line)."""
    from gymnasium.spaces import flatdim

    obs_space, action_space = spaces  # a Box of actions: the fit check refused any other kind (ACTS_ON)
    layout = env_layout(obs_space, arch, config.model(weights.role).obs_groups, weights.role, env_id)
    if isinstance(layout, str):
        return layout
    if flatdim(action_space) != arch.action_dim:
        return f"the actor outputs {arch.action_dim} continuous actions, {env_id} takes {action_space}"
    return layout


class RslRlAdapter(Adapter):
    name = "rsl_rl"
    packages = ("rsl-rl-lib",)
    training_modules = {"rsl_rl": "rsl-rl-lib"}
    training_command = (
        "python {script} --task {env_id} --num_envs {num_envs} --seed {seed} --max_iterations {iterations} "
        "--headless"
    )
    training_script = "scripts/reinforcement_learning/rsl_rl/train.py"
    training_device_flag = "--device"  # Isaac Lab's AppLauncher: "cuda:0" by default
    #: Isaac Lab's rsl_rl/train.py: ``logs/rsl_rl/{experiment_name}/{time stamp}``.
    training_run_folder = "logs/rsl_rl/*/*"
    training_resume = (
        "Isaac Lab's rsl_rl/train.py goes on from a checkpoint with --resume --load_run RUN_FOLDER_NAME "
        "--checkpoint model_ITERATION.pt added to the command, into a new run folder"
    )
    extra = "rsl"
    extra_modules = {"rsl": ("rsl_rl",)}
    train_return_tags = ("Train/mean_reward",)
    layout_hint = (
        "rsl_rl: logs/rsl_rl/{experiment}/{date_time}/model_{iter}.pt (params/agent.yaml or cfgs.pkl)"
    )
    takes_env_factory = True
    #: A hub repo of an rsl_rl run holds its checkpoints and its config: ``zoo enjoy`` fetches both.
    hub = HubNaming(
        library_name="rsl_rl",
        display_name="rsl_rl",
        tags=("rsl_rl",),
        card_template="default",
        run_files=("model_*.pt", CFGS_PKL, "params/*.yaml"),
    )

    def entry_problem(self, raw: dict) -> tuple[str, str] | None:
        """Everything an rsl_rl model needs is in its checkpoint and config, so entries carry no
        layout/model/policy; ``filename`` is a glob that must match ``model_{iter}.pt``."""
        if raw.get("format") != "torch-checkpoint":
            return "format", "rsl_rl runners write 'torch-checkpoint' files"
        if not fnmatch.fnmatch("model_100.pt", str(raw.get("filename"))):
            return "filename", "expected a pattern matching model_{iter}.pt, e.g. 'model_*.pt'"
        return self.unused_fields(
            raw, ("layout", "model", "policy"), "the checkpoint and its config say everything"
        )

    def discover(self, root: Path) -> Iterator[Run]:
        return _discover.discover(root)

    def inputs(self, run: Run) -> list[Path | None]:
        """The checkpoint and the run's config files."""
        run_dir = _run_dir(run)
        configs = [run_dir / AGENT_YAML, run_dir / ENV_YAML, run_dir / CFGS_PKL]
        return [run.model_file, *configs, run.events_file]

    def config_files(self, run: Run) -> list[Path]:
        """Isaac Lab's and mjlab's ``params/agent.yaml`` and ``params/env.yaml`` (``yaml.dump``s of the configs)."""
        return [p for p in (_run_dir(run) / AGENT_YAML, _run_dir(run) / ENV_YAML) if p.is_file()]

    def checkpoints(self, run_dir: Path) -> list[SavedCheckpoint]:
        """The run's ``model_{iter}.pt`` files by iteration (the config beside them is the run's, not theirs)."""
        return _discover.saved_checkpoints(run_dir)

    def env_id(self, run: Run) -> str | None:
        """The gymnasium id the run's env config names (``params/env.yaml``), or zoo's tensor task that a
        Genesis ``cfgs.pkl`` describes (``Genesis-Go2Walking-v0``), if any."""
        return run.env_id or read_run_config(_run_dir(run)).env_id

    def env_id_problem(self, run: Run) -> str | None:
        return read_run_config(_run_dir(run)).unknown_task

    def env_spec(
        self,
        entry: Entry,
        env_id: str,
        video_dir: str | None = None,
        *,
        model_file: Path | None = None,
        trusted_wrappers: frozenset[str] = frozenset(),
    ):
        """The entry's eval env; zoo's tensor task configured from the run's ``cfgs.pkl`` when that file
        describes this very task (else the task's defaults, as the example's ``get_cfgs()``)."""
        spec = super().env_spec(entry, env_id, video_dir)
        if not isinstance(spec, TensorEnvSpec) or model_file is None:
            return spec
        return _configured(spec, read_run_config(model_file.parent))

    def run_seed(self, run: Run) -> int | None:
        """The runner config's ``seed`` (Isaac Lab's run dirs are named by date, not seed)."""
        return run.seed if run.seed is not None else read_run_config(_run_dir(run)).seed

    def read(self, run: Run, entry: Entry | None) -> RslRlCheckpoint:
        assert run.model_file is not None  # discovery claims only folders holding a model_{iter}.pt
        config = read_run_config(_run_dir(run))
        info = inspect_torch_file(run.model_file)
        return RslRlCheckpoint(run.model_file, info.kind, info.size, config=config, info=info)

    def inspect(self, report: RunReport, registry: Registry) -> PolicyView | None:
        run = report.run
        entry = registry.find(run.exp_name or "")
        if entry is None:
            raise LayoutMismatch(
                f"unknown experiment {run.exp_name!r}", "add an rsl_rl entry to the registry"
            )
        report.details["algorithm"] = entry.algorithm
        assert run.model_file is not None
        report.details["iteration"] = iteration(run.model_file)
        report.details["other_checkpoints"] = len(run.other_model_files)
        checkpoint = self.read(run, entry)
        config, info = checkpoint.config, checkpoint.info
        assert config is not None and info is not None
        _describe_config(report, config)
        report.details.update(size=info.size, format=info.kind)
        if not flag_torch_file(report, info, not_torch_hint="is this an rsl_rl checkpoint?"):
            return None
        weights = policy_weights(info.content)
        arch = architecture(weights.state, config.model(weights.role))
        report.details.update(
            checkpoint=weights.layout,
            policy=weights.role,
            model=arch.summary(),
            recurrent=arch.rnn_type is not None,
        )
        env_id = run.env_id
        if self.warn_missing_extra(report, entry, env_id):
            return None
        # a CNN's MLP input depends on the image size: checked once the env is known
        problem = not arch.cnns and _weights_problem(weights.state, arch)
        if problem:
            raise problem
        spec = self.env_spec(entry, env_id) if env_id is not None else None
        if isinstance(spec, TensorEnvSpec):
            spec = _configured(spec, config)  # the config read above: cfgs.pkl is not read again
            source = "configured from cfgs.pkl" if spec.cfgs_json else "with the task's default config"
            report.details["task"] = f"{env_id}: zoo's definition, {source}"
        return RslRlView(checkpoint, entry, ACTS_ON, config=config, weights=weights, arch=arch)

    def env_id_unknown(self, run: Run, view: PolicyView) -> tuple[str, str]:
        assert isinstance(view, RslRlView)
        if view.config.unknown_task:
            return (
                view.config.unknown_task,
                "pass --env-id (a gymnasium id or one of zoo's tasks), "
                "or --env-factory module:function for your own env",
            )
        return "env id unknown (the env config names no gymnasium id)", "pass --env-id"

    def misfit(self, view: PolicyView, env_id: str, spaces: tuple | None) -> Misfit | None:
        """How the env's observations feed the actor (its groups, a CNN's images) and its action size."""
        assert isinstance(view, RslRlView)
        layout = _layout(view, env_id, spaces)
        return Misfit.of(env_id, layout, layout) if isinstance(layout, str) else None

    def checked(self, report: RunReport, view: PolicyView, env_id: str, spaces: tuple) -> None:
        """A CNN actor's weights, against the actor rebuilt for the env's image size."""
        assert isinstance(view, RslRlView)
        if view.arch.cnns:
            layout = _layout(view, env_id, spaces)
            assert not isinstance(layout, str)  # misfit said it fits
            problem = _weights_problem(view.weights.state, view.arch, layout, env_id)
            if problem:
                raise problem

    def loaded(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> PolicyView:
        from zoo.artifacts.torchfile import load_checkpoint

        assert isinstance(checkpoint, RslRlCheckpoint) and checkpoint.info and checkpoint.config
        config = checkpoint.config
        loaded = load_checkpoint(checkpoint.model_file, checkpoint.info, trust_pickle=options.trust_pickle)
        weights = policy_weights(loaded)
        arch = architecture(weights.state, config.model(weights.role))
        return RslRlView(checkpoint, entry, ACTS_ON, config=config, weights=weights, arch=arch)

    def build_policy(self, view: PolicyView, env_id: str, spaces: tuple | None, options: LoadOptions):
        """rsl_rl's own actor model, for the observation layout the fit check found."""
        from zoo.frameworks.rsl_rl.checkpoint import build_model
        from zoo.frameworks.rsl_rl.policy import RslRlPolicy

        assert isinstance(view, RslRlView) and view.entry is not None
        config, weights, arch = view.config, view.weights, view.arch
        model_file = view.checkpoint.model_file
        if spaces is None:  # a user's tensor env: the checkpoint says the spaces, the first step checks them
            spaces = _checkpoint_spaces(arch, config.model(weights.role).obs_groups)
        layout = _layout(view, env_id, spaces)
        assert not isinstance(layout, str)  # misfit said it fits
        if self.missing_extra(view.entry, env_id) == "rsl":
            raise UnsupportedError("rsl_rl models need the rsl extra", hint="pip install 'rl-zoo-hub[rsl]'")
        problem = _weights_problem(weights.state, arch, layout, env_id)
        if problem:
            # the same class, so the same exit code
            raise type(problem)(f"{model_file}: {problem.message}", hint=problem.hint)
        model = build_model(arch, layout, device=options.device)
        try:
            model.load_state_dict(weights.state, strict=True)
        except RuntimeError as exc:  # what state_problems does not model (a dtype torch cannot copy)
            raise BrokenFile(
                f"{model_file}: the weights do not load: {str(exc).strip().splitlines()[-1]}"
            ) from None
        return RslRlPolicy(
            model,
            *spaces,
            clip_actions=config.clip_actions,
            device=options.device,
            seed=options.seed,
            layout=layout,
        )


def _layout(view: RslRlView, env_id: str, spaces: tuple | None) -> ObsLayout | str:
    """:func:`_fit` of a view; a user's tensor env (no spaces) is taken to give what the checkpoint reads."""
    config, weights, arch = view.config, view.weights, view.arch
    if spaces is None:
        spaces = _checkpoint_spaces(arch, config.model(weights.role).obs_groups)
    return _fit(env_id, arch, weights, config, spaces)


def _configured(spec: TensorEnvSpec, config: RunConfig) -> TensorEnvSpec:
    """zoo's task configured from the run's ``cfgs.pkl`` when that file describes this very task."""
    if config.cfgs is None or config.env_id != spec.env_id:
        return spec
    return dataclasses.replace(spec, cfgs_json=cfgs_json(config.cfgs))


def _checkpoint_spaces(arch: Architecture, groups: list[str] | None) -> tuple[Any, Any]:
    """The spaces an MLP/RNN actor reads and writes: its one observation group (the config's, else
    ``policy``) as a Dict, its actions as an unbounded Box; what a user's tensor env must give."""
    import numpy as np
    from gymnasium.spaces import Box, Dict

    from zoo.frameworks.rsl_rl.obs import DEFAULT_GROUP

    names = groups or [DEFAULT_GROUP]
    if arch.cnns or len(names) != 1:
        raise UnsupportedError(
            f"--env-factory: the actor reads {len(names)} observation groups {names}"
            f"{' and images' if arch.cnns else ''}, whose sizes zoo cannot tell before the env is built",
            hint="evaluate it on one of zoo's tasks or a gymnasium env with --env-id",
        )
    obs = Dict({names[0]: Box(-np.inf, np.inf, (arch.obs_dim,), np.float32)})
    return obs, Box(-np.inf, np.inf, (arch.action_dim,), np.float32)


def _describe_config(report: RunReport, config: RunConfig) -> None:
    report.details["config"] = config.source
    if config.source is None:
        report.flag(
            WARNING,
            "no params/agent.yaml or cfgs.pkl beside the checkpoint",
            "activation assumed elu (rsl_rl's default)",
        )
    if config.algorithm and config.algorithm.rpartition(":")[2].rpartition(".")[2] not in _ALGORITHMS:
        report.flag(WARNING, f"algorithm {config.algorithm!r}: zoo evaluates the policy the checkpoint holds")
    if config.clip_actions is not None:
        report.details["clip_actions"] = config.clip_actions


ADAPTER = RslRlAdapter()
