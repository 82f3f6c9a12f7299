"""skrl adapter: recognise experiment dirs, inspect checkpoints, rebuild policies in plain torch.

skrl (2.x, and 1.x checkpoints) writes ``{experiment}/checkpoints/agent_{step}.pt``: a dict of
module state dicts (``policy``, ``value``, ``optimizer``, ``observation_preprocessor``, ...).
zoo loads it with ``torch.load(weights_only=True)`` and never imports skrl: the policy (an MLP,
a CNN or a GRU/LSTM in front of an MLP; Gaussian, multivariate Gaussian, categorical or
deterministic) is rebuilt from the weights' shapes and what ``params/agent.yaml`` (Isaac Lab) or
a model config says (:mod:`zoo.frameworks.skrl.config`, :mod:`zoo.frameworks.skrl.architecture`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.artifacts.report import WARNING, RunReport, flag_torch_file
from zoo.artifacts.runs import Run, note_read
from zoo.artifacts.torchfile import TorchFileInfo, inspect_torch_file
from zoo.errors import UnsupportedError, ZooError
from zoo.frameworks.base import (
    BEST_MODEL,
    Adapter,
    Checkpoint,
    HubNaming,
    LoadOptions,
    Misfit,
    PolicyView,
    SavedCheckpoint,
)
from zoo.frameworks.kinds import SpaceKinds
from zoo.frameworks.skrl import discover as _discover
from zoo.frameworks.skrl.architecture import Architecture, architecture, shape_problems, unused_keys
from zoo.frameworks.skrl.checkpoint import (
    Normalizer,
    companion_modules,
    load_modules,
    normalizer,
    split_agent,
)
from zoo.frameworks.skrl.config import GENERATION_2, RunConfig, check_policy_input, run_config, scaler_spec
from zoo.frameworks.skrl.discover import acting_files, parse_checkpoint, step_of

if TYPE_CHECKING:
    from zoo.registry import Entry, Registry

_NOT_SKRL = "is this an skrl checkpoint?"


@dataclass
class SkrlCheckpoint(Checkpoint):
    """A verified skrl checkpoint: its experiment's config and each file's torch facts."""

    folder: Path | None = None  # the experiment dir (``checkpoints/``'s parent), when there is one
    config: RunConfig | None = None
    files: dict[str, TorchFileInfo] = field(default_factory=dict)  # "" the checkpoint, else a scaler module

    def static_modules(self) -> dict[str, Any]:
        """The modules as tensor descriptions (no torch): what check compares and load expects."""
        modules = split_agent(self.files[""].content, self.model_file)
        modules.update({key: info.content for key, info in self.files.items() if key})
        return modules


@dataclass
class SkrlView(PolicyView):
    """The policy's weights (``model``: described by check, loaded by the loader), the config that says the rest,
    and the architecture and observation scaler read from both."""

    config: RunConfig | None = None
    arch: Architecture | None = None
    norm: Normalizer | None = None
    kind: str | None = None  # the policy class the config names (None: check without a config)


def experiment_dir(run: Run) -> Path | None:
    """The experiment folder a run's checkpoint belongs to (one rule for check and load)."""
    if run.path.is_dir():
        return run.path
    model = run.model_file
    return model.parent.parent if model is not None and model.parent.name == "checkpoints" else None


def env_id_from_params(folder: Path | None) -> str | None:
    """``id`` of ``params/env.yaml`` when it is a gymnasium ``EnvSpec`` dump (Isaac Lab's env cfg has none)."""
    from zoo.frameworks.skrl.config import read_yaml

    path = folder / "params" / "env.yaml" if folder else None
    if path is not None:
        note_read(path)  # discovery's memo depends on it
    if path is None or not path.is_file():
        return None
    try:
        doc = read_yaml(path)
    except ZooError:
        return None
    value = doc.get("id") if isinstance(doc, dict) else None
    return value if isinstance(value, str) else None


def _algorithm(run: Run, config: RunConfig) -> str | None:
    if run.exp_name:
        return run.exp_name
    return f"skrl_{config.algorithm}" if config.algorithm else None


class SkrlAdapter(Adapter):
    name = "skrl"
    packages = ("skrl",)
    training_modules = {"skrl": "skrl"}
    #: zoo reads skrl files without skrl (no ``extra``): entries name the skrl extra for its tests and training.
    extra_modules = {"skrl": ("skrl",)}
    training_command = (
        "python {script} --task {env_id} --num_envs {num_envs} --seed {seed} --max_iterations {iterations} "
        "--headless"
    )
    training_script = "scripts/reinforcement_learning/skrl/train.py"
    training_device_flag = "--device"  # Isaac Lab's AppLauncher: "cuda:0" by default
    #: Isaac Lab's skrl/train.py: ``logs/skrl/{experiment directory}/{time stamp}_{algorithm}_{ml framework}``.
    training_run_folder = "logs/skrl/*/*"
    training_resume = (
        "Isaac Lab's skrl/train.py goes on from a checkpoint with --checkpoint RUN/checkpoints/agent_STEPS.pt added "
        "to the command, into a new run folder"
    )
    train_return_tags = ("Reward / Total reward (mean)",)
    layout_hint = "skrl: {experiment}/checkpoints/agent_{step}.pt (params/agent.yaml beside checkpoints/)"
    #: A hub repo of an skrl experiment holds its checkpoints and params/: ``zoo enjoy`` fetches both.
    hub = HubNaming(
        library_name="skrl",
        display_name="skrl",
        tags=("skrl",),
        card_template="default",
        run_files=("checkpoints/*.pt", "params/*.yaml"),
    )
    takes_model_config = True
    takes_env_factory = True

    def entry_problem(self, raw: dict) -> tuple[str, str] | None:
        """skrl entries need no model class (the policy is rebuilt from weights and config); ``layout``
        names the checkpoint layout for ``zoo registry list``."""
        layout = raw.get("layout", {"kind": "agent"})
        if not isinstance(layout, dict) or layout.get("kind") != "agent":
            return "layout.kind", "skrl entries use layout {kind: agent} (skrl's write_checkpoint dict)"
        return self.unused_fields(
            raw, ("model", "policy"), "the policy is rebuilt from the checkpoint and its config"
        )

    def discover(self, root: Path) -> Iterator[Run]:
        return _discover.discover(root)

    def inputs(self, run: Run) -> list[Path | None]:
        """Checkpoints, scaler files and the YAML configs."""
        folder = experiment_dir(run)
        configs = [folder / "params" / name for name in ("agent.yaml", "env.yaml")] if folder else []
        model = run.model_file
        companions = list(companion_modules(model).values()) if model else []
        return [model, *run.other_model_files, *companions, *configs, run.events_file]

    def config_files(self, run: Run) -> list[Path]:
        """Isaac Lab's ``params/agent.yaml`` and ``params/env.yaml`` (``yaml.dump``s that users load back)."""
        folder = experiment_dir(run)
        return (
            [p for p in (folder / "params" / n for n in ("agent.yaml", "env.yaml")) if p.is_file()]
            if folder
            else []
        )

    def checkpoints(self, run_dir: Path) -> list[SavedCheckpoint]:
        """``checkpoints/agent_{step}.pt`` (per-module: ``policy_{step}.pt`` with its scaler files) by step.
        skrl's own ``best_*.pt``, its best by training reward saved over in place, is not one of them."""
        folder = run_dir / "checkpoints"
        found = []
        for name in acting_files(_discover.checkpoint_names(folder)):
            _, tag = parse_checkpoint(name) or ("", None)
            if tag is not None:
                path = folder / name
                found.append(SavedCheckpoint(step_of(path), path, companion_modules(path)))
        return sorted(found, key=lambda c: (c.step is None, c.step or 0, c.model_file.name))

    def best_model_files(self, run_dir: Path, checkpoint: SavedCheckpoint) -> dict[str, Path]:
        """``best_model.pt`` for a whole-agent file; ``best_model_policy.pt`` and ``best_model_{module}.pt``
        for per-module files, the names :func:`~zoo.frameworks.skrl.discover.parse_checkpoint` reads back."""
        module, _ = parse_checkpoint(checkpoint.model_file.name) or ("agent", None)
        model = f"{BEST_MODEL}.pt" if module == "agent" else f"{BEST_MODEL}_{module}.pt"
        return {
            model: checkpoint.model_file,
            **{f"{BEST_MODEL}_{key}.pt": path for key, path in checkpoint.companions.items()},
        }

    def env_id(self, run: Run) -> str | None:
        """From the experiment's names, else ``params/env.yaml``."""
        return run.env_id or env_id_from_params(experiment_dir(run))

    def read(self, run: Run, entry: Entry | None) -> SkrlCheckpoint:
        assert run.model_file is not None
        folder = experiment_dir(run)
        files = {"": inspect_torch_file(run.model_file)}
        files.update(
            {key: inspect_torch_file(path) for key, path in companion_modules(run.model_file).items()}
        )
        return SkrlCheckpoint(
            run.model_file,
            files[""].kind,
            files[""].size,
            folder=folder,
            config=run_config(folder),
            files=files,
        )

    def inspect(self, report: RunReport, registry: Registry) -> PolicyView | None:
        """Discovery only yields runs with a checkpoint, so ``run.model_file`` is always set."""
        run = report.run
        _describe_checkpoints(report, run)
        checkpoint = self.read(run, None)
        report.details.update(size=checkpoint.size, format=checkpoint.format)
        for info in checkpoint.files.values():
            if not flag_torch_file(report, info, info.path.name, _NOT_SKRL):
                return None
        modules = checkpoint.static_modules()
        config = checkpoint.config
        assert config is not None
        report.details["modules"] = sorted(modules)
        name = _algorithm(run, config)
        entry = registry.find(name or "")
        report.details["algorithm"] = entry.algorithm if entry else None
        if name is None:
            report.flag(
                WARNING,
                "algorithm unknown (not in the dir name nor params/agent.yaml)",
                "pass --exp-name (for example skrl_ppo)",
            )
        elif entry is None:
            registry.get(name)  # the registry's "unknown experiment" error, with its suggestions
        arch = architecture(modules["policy"], config.policy, strict=False)
        norm, note = _observation_scaler(modules, arch, config)
        _describe_policy(report, modules, arch, config, norm, note)
        if run.env_id is not None:
            report.details["env_id"] = run.env_id
        kind = config.policy.kind if config.policy.known else None
        kinds = _space_kinds(config)
        return SkrlView(checkpoint, entry, kinds, config, arch, norm, kind, model=modules["policy"])

    def env_id_unknown(self, run: Run, view: PolicyView) -> tuple[str, str]:
        return "env id unknown (not in the experiment names nor params/env.yaml)", "pass --env-id"

    def misfit(self, view: PolicyView, env_id: str, spaces: tuple | None) -> Misfit | None:
        """The policy's input, output and scaler sizes against the spaces it reads and writes (a tensor env's
        ``policy`` group; the checkpoint's own sizes for a user's tensor env)."""
        assert isinstance(view, SkrlView) and view.config is not None and view.arch is not None
        spaces = _policy_spaces(spaces, view.arch, view.config.policy.kind)
        problem = next(iter(shape_problems(view.model, view.arch, spaces, view.kind, view.norm)), None)
        return Misfit.of(env_id, problem, f"policy does not fit {env_id}: {problem}")

    def checked(self, report: RunReport, view: PolicyView, env_id: str, spaces: tuple) -> None:
        assert isinstance(view, SkrlView) and view.config is not None
        if not view.config.policy.known:
            report.flag(
                WARNING,
                "activation functions unknown: no params/agent.yaml beside checkpoints/",
                "zoo eval needs --model-config PATH (see docs/frameworks/skrl.md)",
            )

    def loaded(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> PolicyView:
        """``options.model_config`` (``--model-config``, else ``params/agent.yaml`` of the experiment)
        supplies what the weights do not say: the policy class, activations, conv strides and padding,
        the recurrent core and the output expression."""
        assert isinstance(checkpoint, SkrlCheckpoint)
        config = (
            run_config(checkpoint.folder, options.model_config) if options.model_config else checkpoint.config
        )
        assert config is not None
        modules = load_modules(checkpoint.model_file, options.trust_pickle)
        arch = architecture(modules["policy"], config.policy)
        norm, _ = _observation_scaler(modules, arch, config)
        kinds, kind = _space_kinds(config), config.policy.kind
        return SkrlView(checkpoint, entry, kinds, config, arch, norm, kind, model=modules["policy"])

    def build_policy(self, view: PolicyView, env_id: str, spaces: tuple | None, options: LoadOptions):
        """The network rebuilt in plain torch from the weights and the config (skrl is not imported)."""
        from zoo.frameworks.skrl.modules import build_network
        from zoo.frameworks.skrl.policy import SkrlPolicy

        assert isinstance(view, SkrlView) and view.config is not None and view.arch is not None
        config, arch, policy_state, norm = view.config, view.arch, view.model, view.norm
        spaces = _policy_spaces(spaces, arch, config.policy.kind)
        unused = unused_keys(policy_state, arch, config.policy)
        if unused:
            raise _not_rebuildable(unused)
        network = build_network(
            policy_state, arch, config.policy, norm, _scaler(config, norm), tuple(spaces[0].shape)
        )
        return SkrlPolicy(
            network,
            config.policy,
            policy_state.get("log_std_parameter"),
            *spaces,
            options.device,
            options.seed,
        )


def _space_kinds(config: RunConfig) -> SpaceKinds:
    """The actions the policy gives, as its config says (categorical: discrete, the other classes: a Box);
    without a config, the shapes decide. Observations: a vector or a tensor env's groups, either way."""
    spec = config.policy
    if not spec.known:
        return SpaceKinds()
    said_by = f"a {spec.kind} policy, as {Path(spec.source).name} says"
    return SpaceKinds("Discrete" if spec.kind == "categorical" else "Box", said_by=said_by)


def _policy_spaces(spaces: tuple | None, arch: Architecture, kind: str) -> tuple:
    """The Box spaces the policy reads and writes. A tensor env's observation groups are a Dict: skrl's
    wrappers hand the model the ``policy`` group. A user's tensor env (``--env-factory``) is not built
    before the rollout: a flat continuous policy's checkpoint says the sizes, the first step checks them."""
    import numpy as np
    from gymnasium.spaces import Box, Dict

    from zoo.tensor_env import DEFAULT_GROUP

    if spaces is None:
        if arch.flat_input is None or kind == "categorical":
            raise UnsupportedError(
                "--env-factory: zoo reads a user's tensor env's sizes from flat continuous skrl "
                "policies only",
                hint="evaluate it on one of zoo's tasks or with --env-id",
            )
        actions = arch.weighted[-1].out_size
        return Box(-np.inf, np.inf, (arch.flat_input,), np.float32), Box(
            -np.inf, np.inf, (actions,), np.float32
        )
    obs, act = spaces
    if isinstance(obs, Dict) and DEFAULT_GROUP in obs.spaces:
        obs = obs[DEFAULT_GROUP]
    return obs, act


def _observation_scaler(
    modules: dict, arch: Architecture, config: RunConfig
) -> tuple[Normalizer | None, str | None]:
    """The scaler applied to observations (and a note on one that is not), after refusing a policy that
    reads skrl 2.x's privileged state: the config says the generation, else a 2.x scaler key does."""
    generation = config.generation or (GENERATION_2 if "observation_preprocessor" in modules else None)
    check_policy_input(config.policy, generation)
    norm, note = normalizer(modules, arch.flat_input, generation)
    _scaler(config, norm)  # its settings are checked by zoo check too
    return norm, note


def _scaler(config: RunConfig, norm: Normalizer | None):
    return scaler_spec(config.agent, norm.key if norm else "observation_preprocessor", config.policy.source)


def _not_rebuildable(unused: list[str]) -> UnsupportedError:
    return UnsupportedError(
        f"policy holds tensors zoo's rebuilt network does not use: {', '.join(unused[:3])}",
        hint="zoo rebuilds MLP, CNN and GRU/LSTM policies (see docs/frameworks/skrl.md)",
    )


def _describe_checkpoints(report: RunReport, run: Run) -> None:
    files = [run.model_file, *run.other_model_files]
    report.details["checkpoint"] = run.model_file.name
    report.details["step"] = step_of(run.model_file)
    report.details["checkpoints"] = sorted({p.name for p in files})
    best = [p.name for p in files if (parse_checkpoint(p.name) or ("", ""))[1] is None]
    report.details["best"] = best[0] if best else None
    module = (parse_checkpoint(run.model_file.name) or ("agent",))[0]
    report.details["layout"] = "agent" if module == "agent" else "per-module"


def _activations(arch: Architecture) -> list[str | None] | str | None:
    """The hidden layers' activations: one name when they share it (None: unknown, no config)."""
    names = [layer.activation for layer in arch.weighted[:-1]]
    return names[0] if len(set(names)) == 1 else names


def _describe_policy(
    report: RunReport,
    modules: dict,
    arch: Architecture,
    config: RunConfig,
    norm: Normalizer | None,
    note: str | None,
) -> None:
    spec = config.policy
    rnn = arch.rnn
    report.details["policy"] = {
        "kind": spec.kind if spec.known else None,
        "sizes": arch.sizes(),
        "layers": [layer.kind for layer in arch.layers],
        "rnn": {"type": rnn.rnn_type, "num_layers": rnn.num_layers, "hidden_size": rnn.hidden_size}
        if rnn
        else None,
        "activations": _activations(arch),
        "output": spec.output_text if spec.known else None,
        "config": spec.source,
    }
    report.details["preprocessor"] = (
        {"key": norm.key, "generation": norm.generation, "size": int(norm.state["running_mean"].shape[0])}
        if norm
        else None
    )
    if note:
        report.notes.append(note)
    unused = unused_keys(modules["policy"], arch, spec)
    if unused:
        raise _not_rebuildable(unused)


ADAPTER = SkrlAdapter()
