"""skrl adapter: recognise experiment dirs, inspect checkpoints, rebuild policies in plain torch.

skrl (2.x, and 1.x checkpoints) writes ``{experiment}/checkpoints/agent_{step}.pt``: a dict of
module state dicts (``policy``, ``value``, ``optimizer``, ``observation_preprocessor``, ...).
zoo loads it with ``torch.load(weights_only=True)`` and never imports skrl: the policy is an
MLP whose sizes come from the weights and whose activations come from ``params/agent.yaml``
(Isaac Lab) or a model config (:mod:`zoo.frameworks.skrl.config`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.artifacts.report import WARNING, RunReport, flag_torch_file
from zoo.artifacts.runs import Run
from zoo.artifacts.torchfile import TorchFileInfo, inspect_torch_file
from zoo.errors import LayoutMismatch, UnsupportedError, ZooError
from zoo.frameworks.base import Adapter, Checkpoint, HubNaming, LoadOptions, does_not_fit
from zoo.frameworks.skrl import discover as _discover
from zoo.frameworks.skrl.checkpoint import (
    companion_modules,
    linear_chain,
    load_modules,
    normalizer,
    shape_problems,
    split_agent,
    unused_keys,
)
from zoo.frameworks.skrl.config import RunConfig, run_config, scaler_spec
from zoo.frameworks.skrl.discover import parse_checkpoint, step_of

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
    train_return_tags = ("Reward / Total reward (mean)",)
    layout_hint = "skrl: {experiment}/checkpoints/agent_{step}.pt (params/agent.yaml beside checkpoints/)"
    hub = HubNaming(library_name="skrl", display_name="skrl", tags=("skrl",), card_template="default")
    takes_model_config = True

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
        return SkrlCheckpoint(run.model_file, files[""].kind, files[""].size, folder=folder,
                              config=run_config(folder), files=files)  # fmt: skip

    def describe(self, report: RunReport, registry: Registry) -> None:
        """Discovery only yields runs with a checkpoint, so ``run.model_file`` is always set."""
        run = report.run
        _describe_checkpoints(report, run)
        checkpoint = self.read(run, None)
        report.details.update(size=checkpoint.size, format=checkpoint.format)
        for info in checkpoint.files.values():
            if not flag_torch_file(report, info, info.path.name, _NOT_SKRL):
                return
        modules = checkpoint.static_modules()
        config = checkpoint.config
        assert config is not None
        report.details["modules"] = sorted(modules)
        name = _algorithm(run, config)
        entry = registry.find(name or "")
        report.details["algorithm"] = entry.algorithm if entry else None
        if name is None:
            report.flag(WARNING, "algorithm unknown (not in the dir name nor params/agent.yaml)",
                        "pass --exp-name (for example skrl_ppo) to zoo eval")  # fmt: skip
        elif entry is None:
            registry.get(name)  # the registry's "unknown experiment" error, with its suggestions
        layers = linear_chain(modules["policy"], config.policy)
        norm, note = normalizer(modules, layers[0].in_features)
        scaler_spec(config.agent, norm.key if norm else "observation_preprocessor", config.policy.source)
        _describe_policy(report, modules, layers, config, norm, note)
        env_id = self.env_id(run)
        if env_id is None:
            report.flag(WARNING, "env id unknown (not in the experiment names nor params/env.yaml)",
                        "pass --env-id to zoo eval")  # fmt: skip
            return
        report.details["env_id"] = env_id
        spaces = entry and self.env_spaces_or_warn(report, entry, env_id)
        if not spaces:
            return
        problems = shape_problems(modules, layers, spaces, config.policy.kind)
        if problems:
            raise LayoutMismatch(
                f"policy does not fit {env_id}: {problems[0]}", "check the env id of this run"
            )
        if config.policy.activations is None:
            report.flag(WARNING, "activation functions unknown: no params/agent.yaml beside checkpoints/",
                        "zoo eval needs --model-config PATH (see docs/frameworks/skrl.md)")  # fmt: skip

    def load_policy(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions):
        """``options.model_config`` (``--model-config``, else ``params/agent.yaml`` of the experiment)
        supplies what the weights do not say: activations and the output expression."""
        from zoo.envs import probe_spaces
        from zoo.frameworks.skrl.policy import SkrlPolicy, build_module

        assert isinstance(checkpoint, SkrlCheckpoint)
        config = (
            run_config(checkpoint.folder, options.model_config) if options.model_config else checkpoint.config
        )
        assert config is not None
        modules = load_modules(checkpoint.model_file, options.trust_pickle)
        layers = linear_chain(modules["policy"], config.policy)
        norm, _ = normalizer(modules, layers[0].in_features)
        spaces = probe_spaces(self.env_spec(entry, env_id))
        problems = shape_problems(modules, layers, spaces, config.policy.kind)
        if problems:
            raise does_not_fit(env_id, problems[0])
        unused = unused_keys(modules["policy"], layers, config.policy)
        if unused:
            raise _not_mlp(unused)
        scaler = scaler_spec(
            config.agent, norm.key if norm else "observation_preprocessor", config.policy.source
        )
        module = build_module(modules["policy"], layers, config.policy, norm, scaler)
        log_std = modules["policy"].get("log_std_parameter")
        return SkrlPolicy(module, config.policy, log_std, spaces[0], spaces[1], options.device, options.seed)


def _not_mlp(unused: list[str]) -> UnsupportedError:
    return UnsupportedError(f"policy holds tensors an MLP does not use: {', '.join(unused[:3])}",
                            hint="only feed-forward MLP policies are supported")  # fmt: skip


def _describe_checkpoints(report: RunReport, run: Run) -> None:
    files = [run.model_file, *run.other_model_files]
    report.details["checkpoint"] = run.model_file.name
    report.details["step"] = step_of(run.model_file)
    report.details["checkpoints"] = sorted({p.name for p in files})
    best = [p.name for p in files if (parse_checkpoint(p.name) or ("", ""))[1] is None]
    report.details["best"] = best[0] if best else None
    module = (parse_checkpoint(run.model_file.name) or ("agent",))[0]
    report.details["layout"] = "agent" if module == "agent" else "per-module"


def _describe_policy(report: RunReport, modules: dict, layers, config: RunConfig, norm, note) -> None:
    spec = config.policy
    report.details["policy"] = {
        "kind": spec.kind,
        "sizes": [layers[0].in_features, *(x.out_features for x in layers)],
        "activations": spec.activations, "output": spec.output_text, "config": spec.source,
    }  # fmt: skip
    report.details["preprocessor"] = (
        {"key": norm.key, "generation": norm.generation, "size": int(norm.state["running_mean"].shape[0])}
        if norm else None
    )  # fmt: skip
    if note:
        report.notes.append(note)
    unused = unused_keys(modules["policy"], layers, spec)
    if unused:
        raise _not_mlp(unused)


ADAPTER = SkrlAdapter()
