"""rl_games adapter (rl-games 1.6.5, as Isaac Lab's fourth training workflow uses it): runs, checkpoints, policies.

rl_games' A2C/PPO agents save ``nn/{name}.pth`` (the best) and ``nn/last_{name}_ep_{E}_rew_{r}.pth``: a dict
``{model, epoch, frame, optimizer, last_mean_rewards, env_state}`` whose ``last_mean_rewards`` is a numpy scalar,
so ``torch.load(weights_only=True)`` refuses it unless numpy's scalar and dtype are allowlisted: zoo's loader does
exactly that (:data:`zoo.artifacts.torchfile.NUMPY_GLOBALS`), after its static verification. rl_games itself is
never imported: the actor is rebuilt in plain torch from the weights' shapes (:mod:`.network`) and the
activations the config names: Isaac Lab's ``params/agent.yaml``, else the user's training yaml
(``--model-config``; plain rl_games writes no config). See docs/frameworks/rl_games.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.artifacts.report import WARNING, RunReport, flag_torch_file
from zoo.artifacts.runs import Run
from zoo.artifacts.torchfile import TorchFileInfo, inspect_torch_file
from zoo.errors import LayoutMismatch, UnsupportedError, UsageError
from zoo.frameworks.base import (
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
from zoo.frameworks.rl_games import discover as _discover
from zoo.frameworks.rl_games.config import AGENT_YAML, ENV_YAML, RunConfig, run_config
from zoo.frameworks.rl_games.layout import Architecture, architecture, model_state

if TYPE_CHECKING:
    from zoo.policy import Policy
    from zoo.registry import Entry, Registry

_NOT_RL_GAMES = "is this an rl_games checkpoint (nn/*.pth)?"
_NEEDS_CONFIG = (
    "the activations are not in the weights: pass --model-config with the rl_games yaml it was trained with "
    "(see docs/frameworks/rl_games.md)"
)


@dataclass
class RlGamesCheckpoint(Checkpoint):
    """A verified ``nn/*.pth``: its run folder, the config that says what the weights do not, the torch facts."""

    run_dir: Path | None = None
    config: RunConfig = field(default_factory=RunConfig)
    info: TorchFileInfo | None = None


@dataclass(kw_only=True)
class RlGamesView(PolicyView):
    """The actor's weights (``model``: the checkpoint's ``model`` dict, prefix stripped), the config, the
    architecture read from both."""

    config: RunConfig
    arch: Architecture


def _run_dir(run: Run) -> Path:
    if run.path.is_dir():
        return run.path
    parent = run.path.parent
    return parent.parent if parent.name == _discover.NN else parent


def _kinds(arch: Architecture) -> SpaceKinds:
    said_by = f"a {'logits' if arch.discrete else 'mu'} head, as the weights say"
    return SpaceKinds("Discrete" if arch.discrete else "Box", "vector", said_by=said_by)


def _fit(arch: Architecture, env_id: str, spaces: tuple[Any, Any]) -> str | None:
    from gymnasium.spaces import Discrete, flatdim

    obs_space, action_space = spaces
    if flatdim(obs_space) != arch.obs_dim:
        return f"the actor reads {arch.obs_dim} observations, {env_id} gives {obs_space}"
    if isinstance(action_space, Discrete):
        if int(action_space.n) != arch.actions:
            return f"the actor has {arch.actions} logits, {env_id} takes {action_space}"
    elif flatdim(action_space) != arch.actions:
        return f"the actor outputs {arch.actions} continuous actions, {env_id} takes {action_space}"
    return None


def _config_problem(config: RunConfig) -> UnsupportedError | None:
    problem = config.unsupported()
    if problem is None:
        return None
    return UnsupportedError(
        f"{config.source}: {problem} is not one zoo rebuilds",
        hint="zoo rebuilds rl_games' MLP actor_critic (see docs/frameworks/rl_games.md)",
    )


class RlGamesAdapter(Adapter):
    name = "rl_games"
    packages = ("rl-games",)
    training_modules = {"rl_games": "rl-games"}
    training_command = (
        "python {script} --task {env_id} --num_envs {num_envs} --seed {seed} --max_iterations {iterations} "
        "--headless"
    )
    training_script = "scripts/reinforcement_learning/rl_games/train.py"
    training_device_flag = "--device"  # Isaac Lab's AppLauncher
    #: Isaac Lab's rl_games/train.py: ``logs/rl_games/{config.name}/{%Y-%m-%d_%H-%M-%S}``.
    training_run_folder = "logs/rl_games/*/*"
    training_resume = (
        "Isaac Lab's rl_games/train.py goes on from a checkpoint with --checkpoint RUN_FOLDER/nn/NAME.pth added to "
        "the command, into a new run folder"
    )
    #: Isaac Lab's rl_games/train.py: ``--track`` starts ``wandb.init(sync_tensorboard=True, save_code=True)`` with
    #: the env and agent configs (``--wandb-entity`` is then required).
    network_flags = {
        "--track": NetworkFlag(
            "metrics, the env and agent configs and the code to Weights & Biases", "a W&B API key"
        )
    }
    train_return_tags = ("rewards/step",)
    layout_hint = (
        "rl_games: runs/{name}_{dd-HH-MM-SS}/nn/{name}.pth, or Isaac Lab's "
        "logs/rl_games/{name}/{date_time}/nn/{name}.pth with params/agent.yaml"
    )
    #: A hub repo of an rl_games run holds its checkpoints and its config: ``zoo enjoy`` fetches both.
    hub = HubNaming(
        library_name="rl_games",
        display_name="rl_games",
        tags=("rl_games",),
        run_files=("nn/*.pth", "params/*.yaml"),
    )
    takes_model_config = True

    def entry_problem(self, raw: dict[str, Any]) -> tuple[str, str] | None:
        """rl_games entries name no model class (the actor is rebuilt from the weights and the config)."""
        if raw.get("format") != "torch-checkpoint":
            return "format", "rl_games agents save 'torch-checkpoint' files"
        if not str(raw.get("filename", "")).endswith(".pth"):
            return "filename", "expected a pattern of rl_games' nn/*.pth files, e.g. '*.pth'"
        return self.unused_fields(
            raw, ("layout", "model", "policy"), "the checkpoint and its config say everything"
        )

    def discover(self, root: Path) -> Iterator[Run]:
        return _discover.discover(root)

    def inputs(self, run: Run) -> list[Path | None]:
        """The checkpoint and Isaac Lab's params/*.yaml."""
        run_dir = _run_dir(run)
        return [run.model_file, run_dir / AGENT_YAML, run_dir / ENV_YAML, run.events_file]

    def config_files(self, run: Run) -> list[Path]:
        """Isaac Lab's ``params/agent.yaml`` and ``params/env.yaml`` (``yaml.dump``s users load back)."""
        return [p for p in (_run_dir(run) / AGENT_YAML, _run_dir(run) / ENV_YAML) if p.is_file()]

    def checkpoints(self, run_dir: Path) -> list[SavedCheckpoint]:
        """``nn/last_{name}_ep_{E}_rew_{r}.pth`` (and the final ``frame`` one) by counter; never the best
        ``{name}.pth``, which rl_games saves over in place."""
        return _discover.saved_checkpoints(run_dir)

    def env_id(self, run: Run) -> str | None:
        """The gymnasium id ``params/agent.yaml`` names (``config.env_config.name`` or ``config.env_name``)."""
        return run.env_id or run_config(_run_dir(run)).env_id

    def run_seed(self, run: Run) -> int | None:
        """``params.seed`` of ``params/agent.yaml`` (Isaac Lab names run folders by date)."""
        return run.seed if run.seed is not None else run_config(_run_dir(run)).seed

    def read(self, run: Run, entry: Entry | None) -> RlGamesCheckpoint:
        assert run.model_file is not None  # discovery claims only folders holding an nn/*.pth
        run_dir = _run_dir(run)
        info = inspect_torch_file(run.model_file)
        return RlGamesCheckpoint(
            run.model_file, info.kind, info.size, run_dir=run_dir, config=run_config(run_dir), info=info
        )

    def inspect(self, report: RunReport, registry: Registry) -> PolicyView | None:
        run = report.run
        entry, checkpoint = self.read_entry(report, registry, run.exp_name or _discover.DEFAULT_EXP_NAME)
        assert isinstance(checkpoint, RlGamesCheckpoint) and checkpoint.info is not None and run.model_file
        report.details["checkpoint"] = run.model_file.name
        report.details["checkpoints"] = sorted(p.name for p in [run.model_file, *run.other_model_files])
        config = checkpoint.config
        report.details["config"] = config.source
        if not flag_torch_file(report, checkpoint.info, not_torch_hint=_NOT_RL_GAMES):
            return None
        content = checkpoint.info.content
        state, compiled = model_state(content)
        arch = architecture(state, compiled)
        assert isinstance(content, dict)
        for key in ("epoch", "frame"):
            if isinstance(content.get(key), int):
                report.details[key] = content[key]
        report.details.update(
            agent=config.algo,
            model=arch.summary(),
            torch_compile=compiled,
            normalize_input=arch.normalize_input,
        )
        problem = _config_problem(config)
        if problem:
            raise problem
        if not config.known:
            report.flag(WARNING, "activation unknown: no params/agent.yaml beside nn/", _NEEDS_CONFIG)
        elif config.activation is None:
            report.flag(WARNING, f"{config.source} names no network.mlp.activation", _NEEDS_CONFIG)
        if run.env_id is not None:
            report.details["env_id"] = run.env_id
        return RlGamesView(checkpoint, entry, _kinds(arch), config=config, arch=arch, model=state)

    def env_id_unknown(self, run: Run, view: PolicyView) -> tuple[str, str]:
        return (
            "env id unknown (plain rl_games writes no config; Isaac Lab's agent.yaml names rlgpu)",
            "pass --env-id",
        )

    def misfit(self, view: PolicyView, env_id: str, spaces: tuple[Any, Any] | None) -> Misfit | None:
        assert (
            isinstance(view, RlGamesView) and spaces is not None
        )  # no --env-factory (takes_env_factory False)
        return Misfit.of(env_id, _fit(view.arch, env_id, spaces))

    def loaded(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> PolicyView:
        """The weights through zoo's weights-only loader; ``--model-config`` (the training yaml) replaces the
        run's ``params/agent.yaml``."""
        from zoo.artifacts.torchfile import load_checkpoint

        assert isinstance(checkpoint, RlGamesCheckpoint) and checkpoint.info is not None
        config = checkpoint.config
        if options.model_config is not None:
            config = run_config(checkpoint.run_dir or checkpoint.model_file.parent, options.model_config)
        problem = _config_problem(config)
        if problem:
            raise problem
        state, compiled = model_state(
            load_checkpoint(checkpoint.model_file, checkpoint.info, trust_pickle=options.trust_pickle)
        )
        arch = architecture(state, compiled)
        return RlGamesView(checkpoint, entry, _kinds(arch), config=config, arch=arch, model=state)

    def build_policy(
        self, view: PolicyView, env_id: str, spaces: tuple[Any, Any] | None, options: LoadOptions
    ) -> Policy:
        """The actor rebuilt in plain torch (rl_games is not imported), weights loaded strictly."""
        import numpy as np

        from zoo.frameworks.rl_games.layout import NET
        from zoo.frameworks.rl_games.network import RlGamesActor
        from zoo.frameworks.rl_games.policy import RlGamesPolicy

        assert isinstance(view, RlGamesView) and spaces is not None
        config, arch, state = view.config, view.arch, view.model
        if config.activation is None:
            where = "no params/agent.yaml beside nn/" if not config.known else f"{config.source} names none"
            raise UsageError(f"the actor's activation is unknown ({where})", hint=_NEEDS_CONFIG)
        obs_space, action_space = spaces
        bounds = None
        if not arch.discrete and config.clip_actions:
            clip = config.env_clip_actions
            low, high = (-clip, clip) if clip is not None else (action_space.low, action_space.high)
            shape = action_space.shape
            bounds = (
                np.broadcast_to(low, shape).astype(np.float32),
                np.broadcast_to(high, shape).astype(np.float32),
            )
            if not (np.isfinite(bounds[0]).all() and np.isfinite(bounds[1]).all()):
                raise UnsupportedError(
                    f"{env_id}'s action space {action_space} is unbounded: rl_games' player rescales "
                    "clamp(mu, -1, 1) to the bounds",
                    hint="set clip_actions: False in the config given with --model-config",
                )
        actor = RlGamesActor(
            arch,
            config.activation,
            config.mu_activation,
            clip_observations=config.env_clip_observations,
            bounds=bounds,
        )
        try:
            actor.load(state)
        except (RuntimeError, KeyError) as exc:
            raise LayoutMismatch(
                f"{view.checkpoint.model_file}: the weights do not load: {str(exc).strip().splitlines()[0]}"
            ) from None
        sigma = {k.removeprefix(NET): v for k, v in state.items() if k.startswith(f"{NET}sigma")}
        return RlGamesPolicy(
            actor,
            sigma,
            config.sigma_activation,
            obs_space,
            action_space,
            options.device,
            options.seed,
        )


ADAPTER = RlGamesAdapter()
