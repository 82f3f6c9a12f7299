"""TorchRL adapter: TorchRL's checkpoints read without TorchRL, the actor rebuilt in plain torch.

TorchRL (0.14) saves module state dicts, never the modules: a unified ``torchrl.checkpoint`` (a directory or
a zip archive of JSON and raw tensor bytes, :mod:`zoo.frameworks.torchrl.files`), the legacy
``save_render_checkpoint`` payload, or the user's own ``torch.save(policy.state_dict())``. The modules are
described by the user once, in ``torchrl_policy.yaml`` (:mod:`zoo.frameworks.torchrl.config`): zoo checks the
weights' shapes against it (:mod:`zoo.frameworks.torchrl.arch`) and rebuilds the actor, the env's observation
normalization included (:mod:`zoo.frameworks.torchrl.network`). docs/frameworks/torchrl.md says what is read
and what is refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.artifacts.report import WARNING, RunReport, flag_torch_file
from zoo.artifacts.runs import Run, note_read
from zoo.artifacts.torchfile import TorchFileInfo, inspect_torch_file
from zoo.errors import LayoutMismatch, UsageError, ZooError
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
from zoo.frameworks.torchrl import config as _config
from zoo.frameworks.torchrl import discover as _discover
from zoo.frameworks.torchrl.arch import Architecture, action_size, architecture, config_problem
from zoo.frameworks.torchrl.config import CONFIG_FILE, ModelConfig
from zoo.frameworks.torchrl.files import (
    ENV_METADATA,
    MANIFEST,
    POLICY,
    Unified,
    is_archive,
    load_tensors,
    read_unified,
    unified_root,
)

if TYPE_CHECKING:
    from zoo.artifacts.scope import Spaces
    from zoo.policy import Policy
    from zoo.registry import Entry, Registry

#: The registry entry of each algorithm a model config names, and the head it acts with.
HEAD_OF = {"dqn": "qvalue", "ppo": "tanh_normal", "sac": "tanh_normal"}
_NOT_TORCHRL = "is this a TorchRL checkpoint?"
#: Legacy payloads zoo decodes statically to find their env id during discovery.
MAX_ENV_PROBE_BYTES = 64 << 20


@dataclass
class TorchRLCheckpoint(Checkpoint):
    """A TorchRL checkpoint as read: ``kind`` is ``unified``, ``render`` (save_render_checkpoint's legacy payload)
    or ``state_dict`` (a plain ``torch.save(policy.state_dict())``)."""

    kind: str = "state_dict"
    unified: Unified | None = None
    info: TorchFileInfo | None = None
    config: ModelConfig | None = None  # the torchrl_policy.yaml found beside it (None: none)

    def static_state(self) -> dict[str, Any]:
        """The policy's state dict as descriptions (each value has ``shape``): nothing loaded."""
        if self.unified is not None:
            return self.unified.policy
        content = self.info.content if self.info is not None else None
        if self.kind == "render" and isinstance(content, dict):
            content = content.get("model_state_dict")
        if not isinstance(content, dict):
            raise LayoutMismatch(f"{self.model_file.name} does not hold a state dict", _NOT_TORCHRL)
        return content

    def metadata(self) -> dict[str, Any]:
        """``environment_metadata`` (unified) or the legacy payload's top level, as read without loading."""
        if self.unified is not None:
            return self.unified.env_metadata
        content = self.info.content if self.info is not None else None
        return content if self.kind == "render" and isinstance(content, dict) else {}


@dataclass
class TorchRLView(PolicyView):
    """What the fit check and the builder read: the model config, the MLP, the actions it gives, and the
    observation normalizer's (loc, scale) as descriptions or tensors."""

    config: ModelConfig | None = None
    arch: Architecture | None = None
    n_actions: int = 0
    norm: tuple[Any, Any, bool] | None = None


def model_config_file(model_file: Path) -> Path | None:
    """The ``torchrl_policy.yaml`` that describes ``model_file``: beside it, else in the folders above a
    checkpoint directory (a rotation's root and the folder holding it)."""
    folder = unified_root(model_file) if model_file.name == MANIFEST else model_file.parent
    places = [folder] if model_file.name != MANIFEST else [folder, folder.parent, folder.parent.parent]
    for place in places:
        path = place / CONFIG_FILE
        note_read(path)
        if path.is_file():
            return path
    return None


def _kind_of(model_file: Path) -> str:
    if model_file.name == MANIFEST or is_archive(model_file):
        return "unified"
    return "torch"


def read_checkpoint(model_file: Path, config: Path | None) -> TorchRLCheckpoint:
    """``model_file`` verified without running it (a unified checkpoint's JSON and sizes; a torch file through
    zoo's static reader) and the model config read (``config``, else the one beside it)."""
    config_path = config or model_config_file(model_file)
    parsed = _config.read(config_path) if config_path is not None else None
    if _kind_of(model_file) == "unified":
        unified = read_unified(unified_root(model_file))
        size = (
            sum(p.stat().st_size for p in unified.root.rglob("*") if p.is_file())
            if not unified.archive
            else None
        )
        fmt = f"torchrl-checkpoint ({'archive' if unified.archive else 'directory'})"
        return TorchRLCheckpoint(
            model_file,
            fmt,
            size if size is not None else model_file.stat().st_size,
            kind="unified",
            unified=unified,
            config=parsed,
        )
    info = inspect_torch_file(model_file)
    content = info.content
    kind = "render" if isinstance(content, dict) and "model_state_dict" in content else "state_dict"
    return TorchRLCheckpoint(model_file, info.kind, info.size, kind=kind, info=info, config=parsed)


def _env_name(meta: dict[str, Any]) -> str | None:
    value = meta.get("env_name")
    return value if isinstance(value, str) and value else None


def checkpoint_env_id(model_file: Path) -> str | None:
    """The env id a checkpoint records (``environment_metadata``'s or the legacy payload's ``env_name``)."""
    note_read(model_file)
    try:
        if _kind_of(model_file) == "unified":
            return _env_name(read_unified(unified_root(model_file)).env_metadata)
        if model_file.stat().st_size > MAX_ENV_PROBE_BYTES:
            return None
        content = inspect_torch_file(model_file).content
    except (ZooError, OSError):
        return None
    return _env_name(content) if isinstance(content, dict) and "model_state_dict" in content else None


class TorchRLAdapter(Adapter):
    name = "torchrl"
    packages = ("torchrl", "tensordict")
    training_modules = {"torchrl": "torchrl", "tensordict": "tensordict", "hydra": "hydra-core"}
    #: sota-implementations' scripts are Hydra apps: fields are overrides of their config.
    training_command = (
        "python {script} env.env_name={env_id} collector.total_frames={total_timesteps} "
        "logger.backend=tensorboard checkpoint.path={output_dir}/ckpt"
    )
    training_script = "sota-implementations/dqn/dqn_cartpole.py"
    #: Hydra's working folder (``hydra.job.chdir: true``): ``outputs/{date}/{time}``.
    training_run_folder = "outputs/*/*"
    training_resume = (
        "sota-implementations/dqn/dqn_cartpole.py goes on from its checkpoint with checkpoint.resume=true "
        "(checkpoint.path naming it)"
    )
    #: Hydra's override of sota-implementations' top-level ``device`` (added by :meth:`training_invocation`).
    training_device_flag = "device="
    network_flags = {
        "logger.backend=wandb": NetworkFlag("metrics to Weights & Biases", "a W&B API key"),
    }
    train_return_tags = ("train/episode_reward", "train/reward")
    layout_hint = (
        "TorchRL: a torchrl.checkpoint (manifest.json + components/, or its zip archive) or a .pt beside "
        "torchrl_policy.yaml; CheckpointRotation's checkpoint-NNNNNNNNNNNN/"
    )
    hub = HubNaming(
        library_name="torchrl",
        display_name="TorchRL",
        tags=("torchrl",),
        run_files=(
            CONFIG_FILE,
            "*.pt",
            "*.pth",
            "*.ckpt",
            "*ckpt",
            MANIFEST,
            "components/*",
            "checkpoint-*/*",
        ),
    )
    takes_model_config = True

    def entry_problem(self, raw: dict) -> tuple[str, str] | None:
        return self.unused_fields(
            raw,
            ("model", "policy", "layout"),
            "the actor is rebuilt from the weights and torchrl_policy.yaml",
        )

    def training_invocation(self, fields: dict[str, Any]) -> str:
        """The filled command with the config's device as a Hydra override (``device=cuda:0``), not a flag."""
        import shlex

        command = self.training_command.format(**fields)
        if fields.get("device"):
            command += f" {self.training_device_flag}{shlex.quote(str(fields['device']))}"
        return command

    # ------------------------------------------------------------------ discovery
    def discover(self, root: Path) -> Iterator[Run]:
        return _discover.discover(root)

    def identify(self, run: Run) -> Run:
        """Env id and seed as the base resolves them, and the experiment from the model config's ``algorithm``
        when no name said it (TorchRL's files do not)."""
        run = super().identify(run)
        if run.exp_name is None and run.model_file is not None:
            with contextlib.suppress(ZooError):
                path = model_config_file(run.model_file)
                algorithm = _config.read(path).algorithm if path is not None else None
                run.exp_name = f"torchrl_{algorithm}" if algorithm else None
        return run

    def env_id(self, run: Run) -> str | None:
        return run.env_id or (checkpoint_env_id(run.model_file) if run.model_file else None)

    def env_id_problem(self, run: Run) -> str | None:
        """A checkpoint whose env metadata cannot be read: why (a broken file is the error to fix first)."""
        if run.model_file is None or _kind_of(run.model_file) != "unified":
            return None
        try:
            read_unified(unified_root(run.model_file))
        except ZooError as exc:
            return exc.message
        return None

    def inputs(self, run: Run) -> list[Path | None]:
        """The model file, the files of its policy and environment_metadata components, the model config."""
        model = run.model_file
        if model is None:
            return [run.events_file]
        found: list[Path | None] = [model]
        if model.name == MANIFEST:
            components = model.parent / "components"
            for folder in sorted(components.glob("*-*")) if components.is_dir() else []:
                if folder.name.split("-", 1)[-1] in (POLICY, ENV_METADATA):
                    found += sorted(p for p in folder.rglob("*") if p.is_file())
        found += [model_config_file(model), run.events_file]
        return found

    def checkpoints(self, run_dir: Path) -> list[SavedCheckpoint]:
        """``CheckpointRotation``'s ``checkpoint-NNNNNNNNNNNN/`` by step (each one's manifest stands for it)."""
        return [SavedCheckpoint(_discover.step_of(p), p) for p in _discover.rotated(run_dir)]

    def best_model_files(self, run_dir: Path, checkpoint: SavedCheckpoint) -> dict[str, Path]:
        """A rotated checkpoint's best copy is a directory checkpoint ``best_model/``: its manifest first, then its
        policy and environment_metadata components (what evaluating it reads; never the replay buffer)."""
        model = checkpoint.model_file
        if model.name != MANIFEST:
            return super().best_model_files(run_dir, checkpoint)
        files = {f"{BEST_MODEL}/{MANIFEST}": model}
        for path in self.inputs(Run(self.name, run_dir, model_file=model))[1:]:
            if path is not None and path.is_relative_to(model.parent):
                files[f"{BEST_MODEL}/{path.relative_to(model.parent).as_posix()}"] = path
        return files

    def hub_files(self, model_file: Path, env_id: str, workdir: Path) -> dict[str, Path]:
        """The model config, wherever it was found: ``zoo enjoy`` and TorchRL users read it beside the checkpoint."""
        path = model_config_file(model_file)
        return {CONFIG_FILE: path} if path is not None else {}

    # ------------------------------------------------------------------ reading
    def read(self, run: Run, entry: Entry | None) -> TorchRLCheckpoint:
        assert run.model_file is not None
        return read_checkpoint(run.model_file, None)

    def inspect(self, report: RunReport, registry: Registry) -> PolicyView | None:
        run = report.run
        assert run.model_file is not None
        checkpoint = self.read(run, None)
        report.details.update(size=checkpoint.size, format=checkpoint.format, checkpoint=checkpoint.kind)
        report.details["checkpoints"] = [
            p.name if p.name != MANIFEST else p.parent.name for p in (run.model_file, *run.other_model_files)
        ]
        report.details["step"] = _discover.step_of(run.model_file)
        if checkpoint.info is not None and not flag_torch_file(report, checkpoint.info, None, _NOT_TORCHRL):
            return None
        if checkpoint.unified is not None:
            report.details["components"] = checkpoint.unified.components
            report.details["versions"] = checkpoint.unified.versions
        state = checkpoint.static_state()
        arch = architecture(state)
        report.details["policy"] = {"keys": len(state), "sizes": list(arch.sizes)}
        if run.env_id is not None:
            report.details["env_id"] = run.env_id
        config = checkpoint.config
        if config is None:
            report.flag(
                WARNING,
                f"architecture unknown: TorchRL saves no module description and there is no {CONFIG_FILE}",
                f"write {CONFIG_FILE} beside the checkpoint, or pass --model-config (docs/frameworks/torchrl.md)",
            )
            return None
        name = run.exp_name or (f"torchrl_{config.algorithm}" if config.algorithm else None)
        if name is None:
            raise LayoutMismatch(
                f"{config.source} names no algorithm, and the run's names do not say it", "pass --exp-name"
            )
        entry = registry.get(name)
        report.details["algorithm"] = entry.algorithm
        view = self._view(checkpoint, entry, config, state, checkpoint.metadata(), loaded=False)
        report.details["policy"].update(
            head=config.head,
            activation=config.activation,
            config=config.source,
            observation_norm=None
            if view.norm is None
            else (
                "checkpoint vecnorm"
                if config.observation_norm and config.observation_norm.from_checkpoint
                else "model config"
            ),
        )
        return view

    def _view(
        self,
        checkpoint: TorchRLCheckpoint,
        entry: Entry,
        config: ModelConfig,
        state: dict[str, Any],
        meta: dict[str, Any],
        *,
        loaded: bool,
    ) -> TorchRLView:
        """The view of both paths; ``state`` and ``meta`` (the checkpoint's env metadata) hold descriptions
        (check) or tensors (load)."""
        head = HEAD_OF.get(entry.name.removeprefix("torchrl_"))
        if head is not None and head != config.head:
            raise LayoutMismatch(
                f"{config.source} says head {config.head}, but {entry.name} acts with {head}",
                f"set head: {head}, or pass the --exp-name of the algorithm that trained it",
            )
        arch = architecture(state)
        problem = config_problem(arch, config)
        if problem:
            raise LayoutMismatch(problem, f"correct {config.source} (see docs/frameworks/torchrl.md)")
        n_actions = action_size(arch, config, state)
        norm = self._norm(checkpoint, config, meta, loaded)
        said_by = f"a {config.head} head, as {config.source} says"
        kinds = SpaceKinds("Discrete" if config.head == "qvalue" else "Box", "vector", said_by=said_by)
        return TorchRLView(checkpoint, entry, kinds, config, arch, n_actions, norm, model=state)

    def _norm(
        self, checkpoint: TorchRLCheckpoint, config: ModelConfig, meta: dict[str, Any], loaded: bool
    ) -> tuple[Any, Any, bool] | None:
        """The ObservationNorm's (loc, scale, standard_normal): the model config's, or the checkpoint's frozen
        ``vecnorm``. A checkpoint that says its observations were normalized must be read with a config that
        says how: a policy fed raw observations would act, wrongly."""
        vecnorm = meta.get("vecnorm") if isinstance(meta.get("vecnorm"), dict) else None
        spec = config.observation_norm
        if spec is None:
            if meta.get("normalize_observation") is True and vecnorm is not None:
                raise LayoutMismatch(
                    f"the checkpoint's observations were normalized (normalize_observation, vecnorm), "
                    f"but {config.source} has no observation_norm",
                    "add observation_norm: checkpoint and observation_clip: [-10, 10] (sota-implementations' "
                    "ObservationNorm and ClipTransform)",
                )
            return None
        if not spec.from_checkpoint:
            return (spec.loc, spec.scale, spec.standard_normal) if not loaded else _tensors(spec)
        if vecnorm is None or not {"loc", "scale"} <= set(vecnorm):
            raise LayoutMismatch(
                f"{config.source} says observation_norm: checkpoint, but the checkpoint holds no vecnorm loc and scale",
                "give observation_norm: {loc: [...], scale: [...]} from your env's ObservationNorm",
            )
        loc, scale = vecnorm["loc"], vecnorm["scale"]
        if loaded:
            loc, scale = self._vecnorm_tensors(checkpoint, loc, scale)
        return loc, scale, True

    def _vecnorm_tensors(self, checkpoint: TorchRLCheckpoint, loc: Any, scale: Any) -> tuple[Any, Any]:
        if checkpoint.unified is not None:
            return load_tensors(checkpoint.unified.root, [loc, scale])
        return loc, scale  # already tensors: the loader's payload

    def env_id_unknown(self, run: Run, view: PolicyView) -> tuple[str, str]:
        return "env id unknown (the checkpoint records no env_name)", "pass --env-id"

    def misfit(self, view: PolicyView, env_id: str, spaces: Spaces | None) -> Misfit | None:
        assert isinstance(view, TorchRLView) and view.arch is not None and spaces is not None
        return Misfit.of(env_id, _fit_problem(view, spaces), None)

    def loaded(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> PolicyView:
        """The weights read as tensors: a unified checkpoint's raw bytes, or a torch file through
        ``torch.load(weights_only=True)`` (full unpickling only with ``--trust-pickle``)."""
        from zoo.artifacts.torchfile import load_checkpoint

        assert isinstance(checkpoint, TorchRLCheckpoint)
        if options.model_config is not None:
            if not options.model_config.is_file():
                raise UsageError(f"--model-config {options.model_config}: no such file")
            checkpoint.config = _config.read(options.model_config)
        config = checkpoint.config
        if config is None:
            raise LayoutMismatch(
                f"{checkpoint.model_file.name}: TorchRL saves no module description and there is no {CONFIG_FILE} "
                "beside it",
                f"pass --model-config PATH (a {CONFIG_FILE}, see docs/frameworks/torchrl.md)",
            )
        meta: dict[str, Any] = {}
        if checkpoint.unified is not None:
            state = load_tensors(checkpoint.unified.root, checkpoint.unified.policy)
            meta = checkpoint.unified.env_metadata
        else:
            assert checkpoint.info is not None
            payload = load_checkpoint(checkpoint.model_file, checkpoint.info, options.trust_pickle)
            state = payload
            if checkpoint.kind == "render" and isinstance(payload, dict):
                state, meta = payload.get("model_state_dict"), payload
        if not isinstance(state, dict):
            raise LayoutMismatch(f"{checkpoint.model_file.name} does not hold a state dict", _NOT_TORCHRL)
        return self._view(checkpoint, entry, config, state, meta, loaded=True)

    def build_policy(
        self, view: PolicyView, env_id: str, spaces: Spaces | None, options: LoadOptions
    ) -> Policy:
        import torch

        from zoo.frameworks.torchrl.network import build_actor
        from zoo.frameworks.torchrl.policy import TorchRLPolicy

        assert isinstance(view, TorchRLView) and view.config is not None and view.arch is not None
        assert spaces is not None
        config = view.config
        bounds = None
        if config.head == "tanh_normal":
            if config.low is not None and config.high is not None:
                bounds = (torch.tensor(config.low), torch.tensor(config.high))
            else:
                action = spaces[1]
                bounds = (torch.as_tensor(action.low).flatten(), torch.as_tensor(action.high).flatten())
        actor = build_actor(view.model, view.arch, config, view.n_actions, bounds, view.norm)
        return TorchRLPolicy(actor, spaces, options.device, options.seed)


def _tensors(spec: _config.ObservationNorm) -> tuple[Any, Any, bool]:
    import torch

    return torch.tensor(spec.loc), torch.tensor(spec.scale), spec.standard_normal


def _size(value: Any) -> int:
    """Elements of a space, a tensor (or its description) or a list of numbers."""
    shape = tuple(value.shape) if hasattr(value, "shape") else (len(value),)
    count = 1
    for d in shape:
        count *= int(d)
    return count


def _fit_problem(view: TorchRLView, spaces: tuple) -> str | None:
    """Why the actor does not fit the env's flat observation and its actions, or None."""
    observation, action = spaces
    arch, config = view.arch, view.config
    assert arch is not None and config is not None
    obs_dim = _size(observation)
    if obs_dim != arch.sizes[0]:
        return f"the policy reads {arch.sizes[0]} values, the env observes {tuple(observation.shape)}"
    if view.norm is not None:
        for name, value in (("loc", view.norm[0]), ("scale", view.norm[1])):
            if _size(value) not in (1, obs_dim):
                return f"the ObservationNorm's {name} holds {_size(value)} values, the env observes {obs_dim}"
    if config.head == "qvalue":
        if view.n_actions != int(action.n):
            return f"the Q-network scores {view.n_actions} actions, the env has {int(action.n)}"
        return None
    dims = _size(action)
    if view.n_actions != dims:
        return f"the TanhNormal gives {view.n_actions} actions, the env takes {tuple(action.shape)}"
    if config.low is not None and len(config.low) not in (1, dims):
        return f"the model config's low/high hold {len(config.low)} values, the env takes {dims} actions"
    return None


ADAPTER = TorchRLAdapter()
