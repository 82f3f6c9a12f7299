"""DEP-RL adapter: deprl's run folders read without deprl, the actor rebuilt in plain torch.

deprl (0.3.2, with its vendored tonic) writes ``<working_dir>/<name>/config.yaml`` and
``checkpoints/step_<N>.pt`` (:mod:`zoo.frameworks.deprl.discover`). zoo verifies the step file with its static
torch reader and loads it with ``torch.load(weights_only=True)`` (a plain state dict: nothing beyond torch's own
allowlist is needed); it reads ``config.yaml`` as data, never running the Python source deprl keeps in it
(:mod:`zoo.frameworks.deprl.config`); it never opens ``obs_norm.pt``, the optimizer or replay files (the actor
does not use them). The policy is deprl's ``test_step``: ``tanh(loc)`` on the raw observation, rescaled to the
action bounds as tonic's ActionRescaler does (:mod:`zoo.frameworks.deprl.actor`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.artifacts.report import WARNING, RunReport, flag_torch_file
from zoo.artifacts.runs import Run, note_read
from zoo.artifacts.torchfile import TorchFileInfo, inspect_torch_file
from zoo.errors import LayoutMismatch, ZooError
from zoo.frameworks.base import (
    Adapter,
    Checkpoint,
    HubNaming,
    LoadOptions,
    Misfit,
    PolicyView,
    SavedCheckpoint,
)
from zoo.frameworks.deprl import discover as _discover
from zoo.frameworks.deprl.actor import ActorLayout, actor_layout
from zoo.frameworks.deprl.config import CONFIG, DEFAULT_HIDDEN, RunConfig, read_config
from zoo.frameworks.kinds import SpaceKinds

if TYPE_CHECKING:
    from zoo.artifacts.scope import Spaces
    from zoo.policy import Policy
    from zoo.registry import Entry, Registry

_NOT_DEPRL = "is this deprl's checkpoints/step_<N>.pt?"


#: deprl's actor gives a Box action from a vector observation.
KINDS = SpaceKinds("Box", "vector")


@dataclass
class DeprlCheckpoint(Checkpoint):
    """``step_<N>.pt`` as zoo's torch reader found it, and the run's ``config.yaml`` read as data."""

    info: TorchFileInfo | None = None
    config: RunConfig | None = None
    #: Why the run's own config.yaml cannot be taken: ``zoo check`` reports it; a load with ``--model-config``
    #: reads that file instead.
    config_error: ZooError | None = None

    def run_config(self, model_config: Path | None) -> RunConfig:
        """``--model-config`` when given, else the run's own config (its error raised here)."""
        if model_config is not None:
            return read_config(model_config)
        if self.config_error is not None:
            raise self.config_error
        assert self.config is not None
        return self.config


@dataclass
class DeprlView(PolicyView):
    """What the fit check and the builder read: the actor's sizes, the config (``model``: the state dict)."""

    layout: ActorLayout | None = None
    config: RunConfig | None = None


def run_dir(run: Run) -> Path:
    """The run folder (``config.yaml`` beside ``checkpoints/``) of a run or of a model file given alone."""
    if run.path.is_dir():
        return run.path
    model = run.model_file or run.path
    return model.parent.parent if model.parent.name == _discover.CHECKPOINTS else model.parent


def _check_width(layout: ActorLayout, config: RunConfig) -> None:
    """``mpo_args.hidden_size`` (deprl's 256 when absent) against the weights: a config of another run is refused."""
    said = config.hidden_size or DEFAULT_HIDDEN
    if set(layout.hidden) != {said}:
        raise LayoutMismatch(
            f"{CONFIG} says hidden_size {said}, the checkpoint's actor has hidden layers {list(layout.hidden)}",
            "is this config.yaml the checkpoint's own? (--model-config PATH names another one)",
        )


class DeprlAdapter(Adapter):
    name = "deprl"
    packages = ("deprl",)
    #: deprl 0.3.2 and its vendored tonic import gym, which deprl does not declare (numpy<2: a venv of its own).
    training_modules = {"deprl": "deprl", "gym": "gym"}
    #: deprl 0.3.2's launcher reads a JSON config from its last argument (the upstream README's YAML is 0.4's).
    training_command = "python -m deprl.main {config}"
    training_script = "deprl.main"
    #: ``{working_dir}/{tonic.name}/``: no time stamp (deprl resumes a run found there).
    training_run_folder = "{output_dir}/*"
    training_resume = (
        "python -m deprl.main with the same config goes on from the run's latest checkpoints/step_<N>.pt "
        "(it needs the full_save files: time.pt, the optimizers and the replay buffer)"
    )
    train_return_tags = ("train/episode_score/mean",)  # a column of deprl's log.csv (deprl writes no events)
    layout_hint = "DEP-RL: {working_dir}/{name}/config.yaml with checkpoints/step_{N}.pt"
    #: A hub repo of a DEP-RL run holds its config and step files: ``zoo enjoy`` fetches both and reads a run.
    hub = HubNaming(
        library_name="deprl",
        display_name="DEP-RL",
        tags=("deprl", "dep-rl", "tonic"),
        run_files=(CONFIG, "checkpoints/step_*.pt"),
    )
    takes_model_config = True

    def entry_problem(self, raw: dict[str, Any]) -> tuple[str, str] | None:
        return self.unused_fields(
            raw, ("model", "policy"), "the actor is rebuilt from the checkpoint and its config.yaml"
        )

    def discover(self, root: Path) -> Iterator[Run]:
        return _discover.discover(root)

    def inputs(self, run: Run) -> list[Path | None]:
        """The step file and ``config.yaml`` (never ``obs_norm.pt``: the actor does not read it)."""
        return [run.model_file, *run.other_model_files, run_dir(run) / CONFIG, run.events_file]

    def config_files(self, run: Run) -> list[Path]:
        """``config.yaml``: deprl loads it with ``yaml.FullLoader`` and runs its strings."""
        path = run_dir(run) / CONFIG
        return [path] if path.is_file() else []

    def checkpoints(self, run_dir: Path) -> list[SavedCheckpoint]:
        return _discover.saved_checkpoints(run_dir)

    def env_id(self, run: Run) -> str | None:
        """The id inside ``tonic.environment`` (``deprl.environments.Gym('<id>', ...)``), parsed as data."""
        path = run_dir(run) / CONFIG
        note_read(path)
        return run.env_id or (read_config(path).env_id if path.is_file() else None)

    def env_id_problem(self, run: Run) -> str | None:
        """The one-line reason ``config.yaml`` names no env id zoo can take (it is never run)."""
        path = run_dir(run) / CONFIG
        if not path.is_file():
            return f"no {CONFIG} beside checkpoints/ (it names the env)"
        try:
            read_config(path)
        except ZooError as exc:
            return exc.message
        return None

    def run_seed(self, run: Run) -> int | None:
        path = run_dir(run) / CONFIG
        return run.seed if run.seed is not None or not path.is_file() else read_config(path).seed

    def read(self, run: Run, entry: Entry | None) -> DeprlCheckpoint:
        assert run.model_file is not None
        info = inspect_torch_file(run.model_file)
        checkpoint = DeprlCheckpoint(run.model_file, info.kind, info.size, info=info)
        try:
            checkpoint.config = read_config(run_dir(run) / CONFIG)
        except ZooError as exc:
            checkpoint.config_error = exc
        return checkpoint

    def inspect(self, report: RunReport, registry: Registry) -> PolicyView | None:
        run = report.run
        assert run.exp_name is not None and run.model_file is not None
        report.details["checkpoint"] = run.model_file.name
        report.details["step"] = _discover.step_of(run.model_file)
        report.details["checkpoints"] = sorted(p.name for p in [run.model_file, *run.other_model_files])
        entry, checkpoint = self.read_entry(report, registry, run.exp_name)
        assert isinstance(checkpoint, DeprlCheckpoint) and checkpoint.info
        config = checkpoint.run_config(None)
        if not flag_torch_file(report, checkpoint.info, not_torch_hint=_NOT_DEPRL):
            return None
        layout = actor_layout(checkpoint.info.content)
        _check_width(layout, config)
        report.details.update(
            actor={"sizes": list(layout.sizes), "activation": "relu", "output": "tanh(loc)"},
            scaled_actions=config.scaled_actions,
            dep_exploration=config.dep,
            config_env_id=config.env_id,
        )
        _flag_env_settings(report, config)
        return DeprlView(checkpoint, entry, KINDS, layout, config)

    def env_id_unknown(self, run: Run, view: PolicyView) -> tuple[str, str]:
        return f"env id unknown ({CONFIG}'s tonic.environment names none)", "pass --env-id"

    def loaded(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> PolicyView:
        """The state dict with ``weights_only=True``; ``--model-config`` names a config.yaml to read instead."""
        from zoo.artifacts.torchfile import load_checkpoint

        assert isinstance(checkpoint, DeprlCheckpoint) and checkpoint.info is not None
        config = checkpoint.run_config(options.model_config)
        state = load_checkpoint(checkpoint.model_file, checkpoint.info, trust_pickle=options.trust_pickle)
        layout = actor_layout(state)
        _check_width(layout, config)
        return DeprlView(checkpoint, entry, KINDS, layout, config, model=state)

    def misfit(self, view: PolicyView, env_id: str, spaces: Spaces | None) -> Misfit | None:
        assert isinstance(view, DeprlView) and view.layout is not None and view.config is not None
        assert spaces is not None
        problem = _fit_problem(view.layout, view.config, spaces)
        return Misfit.of(env_id, problem, f"actor does not fit {env_id}: {problem}")

    def build_policy(
        self, view: PolicyView, env_id: str, spaces: Spaces | None, options: LoadOptions
    ) -> Policy:
        from zoo.frameworks.deprl.actor import build_actor
        from zoo.frameworks.deprl.policy import DeprlPolicy

        assert isinstance(view, DeprlView) and view.layout is not None and view.config is not None
        assert spaces is not None
        observation_space, action_space = spaces
        bounds = (action_space.low, action_space.high) if view.config.scaled_actions else (None, None)
        actor = build_actor(view.model, view.layout, *bounds)
        return DeprlPolicy(actor, observation_space, action_space, options.device, options.seed)


def _flag_env_settings(report: RunReport, config: RunConfig) -> None:
    """What deprl did to the env that zoo's eval env does not do: said, never done."""
    if config.make_kwargs:
        report.flag(
            WARNING,
            f"deprl made the env with gym.make keywords {sorted(config.make_kwargs)}; zoo's eval env is made "
            "without them",
            "compare with deprl's own evaluation before trusting the scores",
        )
    if config.env_args:
        report.flag(
            WARNING,
            f"deprl set env attributes {sorted(config.env_args)} (env_args); zoo's eval env does not",
            "compare with deprl's own evaluation before trusting the scores",
        )


def _fit_problem(layout: ActorLayout, config: RunConfig, spaces: Spaces) -> str | None:
    """Why the actor does not fit the env's ``(observation_space, action_space)``, or None."""
    import numpy as np

    observation, action = spaces
    if len(observation.shape) != 1 or observation.shape[0] != layout.observations:
        return f"the actor reads {layout.observations} values, the env observes {observation.shape}"
    if tuple(action.shape) != (layout.actions,):
        return f"the actor gives {layout.actions} actions, the env takes {action.shape}"
    if config.scaled_actions and not (np.isfinite(action.low).all() and np.isfinite(action.high).all()):
        return "scaled_actions=True rescales to the action bounds, and the env's are not finite"
    return None


ADAPTER = DeprlAdapter()
