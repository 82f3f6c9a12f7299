"""skrl checkpoint contents: the modules, the observation scaler of either generation, the MLP.

One set of functions serves ``zoo check`` (static :class:`~zoo.artifacts.pickles.TensorInfo`
leaves, no torch) and ``zoo eval`` (real tensors), like the CleanRL adapter.

Observation normalization moved in skrl 2.0: 1.x agents saved it as ``state_preprocessor``
(skrl 1.x called observations "states"); 2.x saves ``observation_preprocessor`` and keeps
``state_preprocessor`` for the privileged state of asymmetric actor-critics. A 2.x key wins;
a lone ``state_preprocessor`` is the observation scaler only when its size is the policy's input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.errors import BrokenFile, ZooError
from zoo.frameworks.skrl.config import PolicySpec
from zoo.frameworks.skrl.discover import companion, parse_checkpoint

SCALER_KEYS = ("running_mean", "running_variance", "current_count")


def is_state_dict(obj: Any) -> bool:
    return isinstance(obj, Mapping) and bool(obj) and all(hasattr(v, "shape") for v in obj.values())


@dataclass
class Linear:
    """One affine layer of the policy, in forward order."""

    prefix: str
    in_features: int
    out_features: int
    bias: bool


@dataclass
class Normalizer:
    """Which scaler normalizes observations, and from which skrl generation's key."""

    key: str  # observation_preprocessor | state_preprocessor
    generation: str
    state: Mapping


def split_agent(obj: Any, path: Path) -> dict[str, Any]:
    """``{module: state}`` of a whole-agent file (``agent_*.pt``); a per-module file is ``{module: obj}``."""
    parsed = parse_checkpoint(path.name)
    module = parsed[0] if parsed else "agent"
    if module != "agent":
        if not is_state_dict(obj):
            raise BrokenFile(f"{path.name}: expected the {module} state dict, found {type(obj).__name__}")
        return {module: obj}
    if not isinstance(obj, Mapping) or not all(isinstance(k, str) for k in obj):
        raise ZooError(f"{path.name}: not an skrl agent checkpoint (expected a dict of module state dicts)",
                       hint="is this file from skrl's Agent.write_checkpoint / Agent.save?")  # fmt: skip
    if not is_state_dict(obj.get("policy")):
        raise ZooError(f"{path.name}: no 'policy' module (modules: {', '.join(sorted(obj)) or 'none'})",
                       hint="zoo evaluates agents with a policy model (PPO, A2C, SAC, TD3, ...)")  # fmt: skip
    return dict(obj)


def linear_chain(policy: Mapping, spec: PolicySpec) -> list[Linear]:
    """The policy's affine layers in forward order (state-dict order is module registration order).

    A shared model (``models.separate: false``) holds the value head too: its ``value_layer``
    is not on the policy's path.
    """
    names = list(policy)
    skip_value = any(n.startswith("policy_layer.") for n in names)
    layers = []
    for name in names:
        if not name.endswith(".weight") or len(policy[name].shape) != 2:
            continue
        prefix = name[: -len(".weight")]
        if skip_value and prefix == "value_layer":
            continue
        out_f, in_f = policy[name].shape
        layers.append(Linear(prefix, int(in_f), int(out_f), f"{prefix}.bias" in policy))
    if not layers:
        raise ZooError("the policy holds no linear layer", hint="only MLP policies are supported")
    for prev, nxt in zip(layers, layers[1:], strict=False):
        if prev.out_features != nxt.in_features:
            raise ZooError(f"policy layers do not chain: {prev.prefix} gives {prev.out_features}, "
                           f"{nxt.prefix} takes {nxt.in_features}",
                           hint="only feed-forward MLP policies are supported")  # fmt: skip
    hidden = [layer.out_features for layer in layers[:-1]]
    if spec.layers is not None and spec.layers != hidden:
        raise ZooError(f"{spec.source} declares hidden layers {spec.layers}, the weights have {hidden}",
                       hint="is the config from this run?")  # fmt: skip
    return layers


def unused_keys(policy: Mapping, layers: list[Linear], spec: PolicySpec) -> list[str]:
    """Keys the rebuilt policy would not use (a sign of an architecture zoo cannot rebuild)."""
    used = {f"{layer.prefix}.{p}" for layer in layers for p in ("weight", "bias")}
    allowed = used | {"log_std_parameter"}
    if spec.shared or any(k.startswith("policy_layer.") for k in policy):
        allowed |= {"value_layer.weight", "value_layer.bias"}
    return [k for k in policy if k not in allowed]


def shape_problems(modules: Mapping, layers: list[Linear], spaces: tuple, kind: str) -> list[str]:
    """Lines for each way the policy does not fit the env's spaces."""
    import numpy as np

    obs_space, act_space = spaces
    obs_dim, act_dim = int(np.prod(obs_space.shape)), int(np.prod(act_space.shape or (1,)))
    problems = []
    if layers[0].in_features != obs_dim:
        problems.append(f"policy takes {layers[0].in_features} inputs, the env observes {obs_dim}")
    if layers[-1].out_features != act_dim:
        problems.append(f"policy gives {layers[-1].out_features} actions, the env takes {act_dim}")
    log_std = modules["policy"].get("log_std_parameter")
    if kind == "gaussian" and log_std is not None and tuple(log_std.shape) != (act_dim,):
        problems.append(f"log_std_parameter is {tuple(log_std.shape)}, the env needs ({act_dim},)")
    return problems


def normalizer(modules: Mapping, in_features: int) -> tuple[Normalizer | None, str | None]:
    """The observation scaler and a note when a present scaler is not applied to observations."""
    for key, generation in (("observation_preprocessor", "skrl 2.x"), ("state_preprocessor", "skrl 1.x")):
        state = modules.get(key)
        if state is None:
            continue
        if not is_state_dict(state) or any(k not in state for k in SCALER_KEYS):
            raise BrokenFile(f"{key} is not a RunningStandardScaler state ({', '.join(SCALER_KEYS)})")
        size = tuple(state["running_mean"].shape)
        if size != (in_features,):
            if key == "state_preprocessor":
                return None, f"state_preprocessor of size {size} is the skrl 2.x state scaler, not applied"
            raise BrokenFile(f"{key} has size {size}, the policy takes {in_features} inputs")
        return Normalizer(key, generation, state), None
    return None, None


def companion_modules(model_file: Path) -> dict[str, Path]:
    """Per-module layout: the scaler files beside ``policy_{tag}.pt`` that exist."""
    parsed = parse_checkpoint(model_file.name)
    if not parsed or parsed[0] != "policy":
        return {}
    found = {}
    for key in ("observation_preprocessor", "state_preprocessor"):
        path = companion(model_file, key)
        if path.is_file():
            found[key] = path
    return found


def load_file(path: Path, trust_pickle: bool = False) -> Any:
    """Static scan first, then ``torch.load(weights_only=True)``; full unpickling only when trusted."""
    from zoo.artifacts.torchfile import inspect_torch_file, load_checkpoint

    return load_checkpoint(path, inspect_torch_file(path), trust_pickle=trust_pickle)


def load_modules(model_file: Path, trust_pickle: bool = False) -> dict[str, Any]:
    """Every module the checkpoint (and, per-module layout, its scaler files) holds."""
    modules = split_agent(load_file(model_file, trust_pickle), model_file)
    for key, path in companion_modules(model_file).items():
        modules[key] = load_file(path, trust_pickle)
    return modules
