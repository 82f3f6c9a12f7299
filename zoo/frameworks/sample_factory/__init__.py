"""Sample Factory adapter (2.x): experiments, checkpoints and policies, without importing Sample Factory.

An experiment is ``train_dir/<experiment>/`` with Sample Factory's ``config.json`` and
``checkpoint_p<policy>/checkpoint_*.pth`` (and ``best_*.pth``); see :mod:`.discover`. The checkpoint is verified
without running it and loaded with ``torch.load(weights_only=True)`` (numpy's scalar and dtype allowlisted, for the
``np.float64`` ``best_performance`` Sample Factory saves once a best exists); the actor is rebuilt in plain torch from
the weights and config.json (:mod:`.checkpoint`, :mod:`.policy`), acting as Sample Factory's own
``enjoy --eval_deterministic=True``.

Sample Factory cannot share zoo's venv (it pins numpy<2, gymnasium<1.0 and huggingface_hub<1.0), and zoo needs none
of it: no extra.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.artifacts.report import WARNING, RunReport, flag_torch_file
from zoo.artifacts.runs import Run
from zoo.artifacts.torchfile import TorchFileInfo, inspect_torch_file
from zoo.errors import LayoutMismatch, ZooError
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
from zoo.frameworks.sample_factory import discover as _discover
from zoo.frameworks.sample_factory.checkpoint import Architecture, architecture, model_state
from zoo.frameworks.sample_factory.config import SfConfig, env_of, read_config

if TYPE_CHECKING:
    from zoo.registry import Entry, Registry

#: A gymnasium id (``CartPole-v1``, ``ALE/Pong-v5``): Sample Factory's env name is one when the env was registered
#: under its gym id, as ``sf_examples.train_gym_env`` does. Its own families (``doom_*``, ``atari_*``,
#: ``mujoco_*``, ``dmlab_*``, ...) wrap their envs their own way: zoo does not map them.
GYM_ID = re.compile(r"^(?:[A-Za-z0-9_.-]+/)?[A-Za-z][A-Za-z0-9_.:-]*-v\d+$")
_NOT_SF = "is this a Sample Factory checkpoint?"


@dataclass
class SfCheckpoint(Checkpoint):
    """A verified checkpoint of an experiment: its config.json and the file's torch facts."""

    config: SfConfig | None = None
    info: TorchFileInfo | None = None


@dataclass(kw_only=True)
class SfView(PolicyView):
    """The actor's weights (``model``), config.json and the architecture read from both."""

    config: SfConfig
    arch: Architecture


def _config_path(run: Run) -> Path:
    return run.path / _discover.CONFIG


def gym_id(name: str | None) -> str | None:
    return name if name and GYM_ID.match(name) else None


def _action_kind(arch: Architecture, config: SfConfig) -> SpaceKinds:
    """What the head says: a learned log-std or an odd number of outputs settles it; otherwise the env it was
    trained on (config.json's, when it is a gymnasium id) does."""
    if arch.learned_stddev:
        return SpaceKinds("Box", said_by="a learned log-std in its action head")
    if arch.head_out % 2:
        return SpaceKinds("Discrete", said_by=f"{arch.head_out} logits in its action head")
    trained_on = gym_id(config.env)
    if trained_on is None:
        return SpaceKinds()
    try:
        import gymnasium as gym

        env = gym.make(trained_on)
        space = env.action_space
        env.close()
    except Exception:  # noqa: BLE001 - an env zoo cannot make here: the shapes decide
        return SpaceKinds()
    return SpaceKinds(type(space).__name__, said_by=f"trained on {trained_on}, as config.json says")


def _misfit(arch: Architecture, env_id: str, spaces: tuple | None) -> str | None:
    """Why ``env_id``'s spaces do not fit the actor's sizes (one line), or None."""
    if spaces is None:
        return None
    from gymnasium import spaces as gs

    obs, act = spaces
    if not isinstance(obs, gs.Box) or len(obs.shape) != 1:
        return f"the actor reads a vector of {arch.obs_dim}, {env_id}'s observations are {obs}"
    if obs.shape[0] != arch.obs_dim:
        return f"the actor reads {arch.obs_dim} observations, {env_id} gives {obs.shape[0]}"
    if isinstance(act, gs.Discrete):
        if arch.learned_stddev or arch.head_out != act.n:
            return f"the actor has {arch.head_out} action outputs, {env_id} has {act.n} discrete actions"
        return None
    if isinstance(act, gs.Box) and len(act.shape) == 1:
        wanted = act.shape[0] if arch.learned_stddev else 2 * act.shape[0]
        if arch.head_out != wanted:
            return f"the actor's head gives {arch.head_out} outputs, {env_id}'s {act.shape[0]} actions need {wanted}"
        return None
    return f"zoo rebuilds Discrete and 1-D Box actions, {env_id}'s are {act}"


class SampleFactoryAdapter(Adapter):
    name = "sample_factory"
    packages = ("sample-factory",)
    training_modules = {"sample_factory": "sample-factory", "sf_examples": "sample-factory"}
    #: sf_examples/train_gym_env.py's documented command (it registers CartPole-v1; register other gym ids the same
    #: way in your own script). The experiment folder is named after the env and seed.
    training_command = (
        "python -m sf_examples.train_gym_env --algo=APPO --env={env_id} --seed={seed} "
        "--num_envs_per_worker={num_envs} --train_for_env_steps={total_timesteps} --train_dir={output_dir} "
        "--experiment={env_id}_sf_appo_seed{seed}"
    )
    training_device_flag = "--device"  # gpu | cpu (Sample Factory's choices): see training_invocation
    training_run_folder = "{output_dir}/{env_id}_sf_appo_seed{seed}"
    training_resume = (
        "Sample Factory resumes from the experiment's latest checkpoint_p0/checkpoint_*.pth when the same command "
        "runs again (--restart_behavior=resume, its default; raise --train_for_env_steps to train further)"
    )
    network_flags = {
        "--with_wandb": NetworkFlag("metrics to Weights & Biases", "a W&B API key"),
        "--push_to_hub": NetworkFlag(
            "the experiment folder to the Hugging Face Hub (enjoy's flag, with --hf_repository)",
            "a Hub write token",
        ),
    }
    train_return_tags = ("reward/reward",)
    layout_hint = (
        "Sample Factory: train_dir/{experiment}/config.json with "
        "checkpoint_p0/checkpoint_{train_step:09d}_{env_steps}.pth (and best_*.pth)"
    )
    #: Sample Factory's push_to_hub uploads the experiment folder as the repo root, and its load_from_hub clones it
    #: into train_dir/<repo name>: zoo push stages the same layout, and zoo enjoy fetches config.json with the
    #: checkpoints. The release's safetensors form would take the root's config.json, which Sample Factory's enjoy
    #: reads: it is left out (agent.pt and policy.onnx are staged).
    hub = HubNaming(
        library_name="sample-factory",
        display_name="Sample Factory",
        tags=("deep-reinforcement-learning", "reinforcement-learning", "sample-factory"),
        run_files=(_discover.CONFIG, "checkpoint_p*/*.pth"),
        loader_files=(_discover.CONFIG,),
    )

    def training_invocation(self, fields: dict[str, Any]) -> str:
        """Sample Factory's ``--device`` takes ``gpu`` or ``cpu`` (a GPU by index is ``CUDA_VISIBLE_DEVICES``)."""
        command = self.training_command.format(**fields)
        device = fields.get("device")
        if not device:
            return command
        kind, _, index = str(device).partition(":")
        command += f" --device={'cpu' if kind == 'cpu' else 'gpu'}"
        return f"env CUDA_VISIBLE_DEVICES={shlex.quote(index)} {command}" if index else command

    def entry_problem(self, raw: dict) -> tuple[str, str] | None:
        """Everything is in the checkpoint and config.json: no layout/model/policy; ``filename`` must match the
        Learner's ``checkpoint_*.pth``."""
        if raw.get("format") != "torch-checkpoint":
            return "format", "Sample Factory's Learner writes 'torch-checkpoint' files"
        if not _fnmatch("checkpoint_000000025_3200.pth", str(raw.get("filename"))):
            return "filename", "expected a pattern matching checkpoint_{train_step:09d}_{env_steps}.pth"
        return self.unused_fields(
            raw, ("layout", "model", "policy"), "the checkpoint and config.json say everything"
        )

    def discover(self, root: Path) -> Iterator[Run]:
        return _discover.discover(root)

    def inputs(self, run: Run) -> list[Path | None]:
        return [run.model_file, _config_path(run), run.events_file]

    def checkpoints(self, run_dir: Path) -> list[SavedCheckpoint]:
        """Policy 0's ``checkpoint_*.pth`` by name (Sample Factory keeps the last two); never ``best_*``."""
        return _discover.saved_checkpoints(run_dir)

    def env_id(self, run: Run) -> str | None:
        """config.json's ``env`` when it is a gymnasium id (sf_examples.train_gym_env registers gym ids as is)."""
        return run.env_id or gym_id(env_of(_config_path(run))[0])

    def env_id_problem(self, run: Run) -> str | None:
        env, _ = env_of(_config_path(run))
        if env and not gym_id(env):
            return (
                f"config.json's env {env!r} is a Sample Factory env name, not a gymnasium id "
                "(zoo maps only envs registered under their gym id, as sf_examples.train_gym_env does)"
            )
        return None

    def run_seed(self, run: Run) -> int | None:
        return run.seed if run.seed is not None else env_of(_config_path(run))[1]

    def read(self, run: Run, entry: Entry | None) -> SfCheckpoint:
        assert run.model_file is not None  # discovery claims only experiments with a checkpoint
        config = read_config(_config_path(run))
        info = inspect_torch_file(run.model_file)
        return SfCheckpoint(run.model_file, info.kind, info.size, config=config, info=info)

    def inspect(self, report: RunReport, registry: Registry) -> PolicyView | None:
        run = report.run
        entry = registry.find(run.exp_name or "")
        if entry is None:
            raise LayoutMismatch(
                f"unknown experiment {run.exp_name!r}", "add a sample_factory entry to the registry"
            )
        report.details["algorithm"] = entry.algorithm
        assert run.model_file is not None
        _describe_files(report, run)
        checkpoint = self.read(run, entry)
        config, info = checkpoint.config, checkpoint.info
        assert config is not None and info is not None
        _describe_config(report, config)
        report.details.update(size=info.size, format=info.kind)
        if not flag_torch_file(report, info, not_torch_hint=_NOT_SF):
            return None
        state = model_state(info.content, run.model_file.name)
        arch = architecture(state, config)
        report.details.update(
            model=arch.summary(), recurrent=arch.rnn_type is not None, head=arch.action_text()
        )
        return SfView(checkpoint, entry, _action_kind(arch, config), config=config, arch=arch, model=state)

    def env_id_unknown(self, run: Run, view: PolicyView) -> tuple[str, str]:
        problem = self.env_id_problem(run)
        return (problem or "env id unknown (config.json names no env)"), "pass --env-id (a gymnasium id)"

    def misfit(self, view: PolicyView, env_id: str, spaces: tuple | None) -> Misfit | None:
        assert isinstance(view, SfView)
        return Misfit.of(env_id, _misfit(view.arch, env_id, spaces))

    def loaded(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> PolicyView:
        from zoo.artifacts.torchfile import load_checkpoint

        assert isinstance(checkpoint, SfCheckpoint) and checkpoint.info and checkpoint.config
        config = checkpoint.config
        content = load_checkpoint(checkpoint.model_file, checkpoint.info, trust_pickle=options.trust_pickle)
        state = model_state(content, checkpoint.model_file.name)
        arch = architecture(state, config)
        return SfView(checkpoint, entry, _action_kind(arch, config), config=config, arch=arch, model=state)

    def build_policy(self, view: PolicyView, env_id: str, spaces: tuple | None, options: LoadOptions):
        """Sample Factory's actor, rebuilt in plain torch (Sample Factory is not imported)."""
        from zoo.frameworks.sample_factory.policy import SfActor, SfPolicy

        assert isinstance(view, SfView) and spaces is not None
        try:
            actor = SfActor(view.arch, view.config, view.model)
        except RuntimeError as exc:  # what the shape check does not model (a dtype torch cannot copy)
            first = str(exc).strip().splitlines()[-1]
            raise ZooError(f"{view.checkpoint.model_file}: the weights do not load: {first}") from None
        observation_space, action_space = spaces
        return SfPolicy(actor, observation_space, action_space, device=options.device, seed=options.seed)

    def card_context(self, entry: Entry, run: Run) -> dict[str, Any]:
        try:
            command = read_config(_config_path(run)).command_line
        except ZooError:
            command = None
        return {"training_command": command} if command else {}


def _fnmatch(name: str, pattern: str) -> bool:
    import fnmatch

    return fnmatch.fnmatch(name, pattern)


def _describe_files(report: RunReport, run: Run) -> None:
    assert run.model_file is not None
    files = [run.model_file, *run.other_model_files]
    report.details["checkpoint"] = run.model_file.name
    report.details["env_steps"] = _discover.env_steps(run.model_file)
    report.details["policy_dir"] = run.model_file.parent.name if run.model_file.parent != run.path else None
    report.details["checkpoints"] = sorted(p.name for p in files if _discover.CHECKPOINT.match(p.name))
    best = [p.name for p in files if _discover.BEST.match(p.name)]
    report.details["best"] = best[-1] if best else None


def _describe_config(report: RunReport, config: SfConfig) -> None:
    report.details["config"] = config.source.name
    report.details["sf_env"] = config.env
    report.details["core"] = config.core_text()
    report.details["normalize_input"] = config.normalize_input
    if config.algo not in (None, "APPO"):
        report.flag(
            WARNING, f"config.json's algo {config.algo!r}: zoo evaluates the actor the checkpoint holds"
        )
    if config.env_frameskip != 1 or config.env_framestack != 1:
        report.flag(
            WARNING,
            f"config.json sets env_frameskip {config.env_frameskip} / env_framestack {config.env_framestack}: "
            "Sample Factory's own env wrappers, which zoo's eval env does not add",
        )


ADAPTER = SampleFactoryAdapter()
