"""skrl checkpoint contents: the modules and the observation scaler of either generation.

One set of functions serves ``zoo check`` (static :class:`~zoo.artifacts.pickles.TensorInfo`
leaves, no torch) and ``zoo eval`` (real tensors), like the CleanRL adapter.

Observation normalization moved in skrl 2.0: 1.x agents saved it as ``state_preprocessor``
(skrl 1.x called observations "states"); 2.x saves ``observation_preprocessor`` and keeps
``state_preprocessor`` for the privileged state of asymmetric actor-critics. A 2.x key wins;
a lone ``state_preprocessor`` is the observation scaler only when the config is not a 2.x one
and its size is the policy's input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.errors import BrokenFile, ZooError
from zoo.frameworks.skrl.config import GENERATION_1, GENERATION_2
from zoo.frameworks.skrl.discover import companion, parse_checkpoint

SCALER_KEYS = ("running_mean", "running_variance", "current_count")


def is_state_dict(obj: Any) -> bool:
    return isinstance(obj, Mapping) and bool(obj) and all(hasattr(v, "shape") for v in obj.values())


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
        raise ZooError(
            f"{path.name}: not an skrl agent checkpoint (expected a dict of module state dicts)",
            hint="is this file from skrl's Agent.write_checkpoint / Agent.save?",
        )
    if not is_state_dict(obj.get("policy")):
        raise ZooError(
            f"{path.name}: no 'policy' module (modules: {', '.join(sorted(obj)) or 'none'})",
            hint="zoo evaluates agents with a policy model (PPO, A2C, SAC, TD3, ...)",
        )
    return dict(obj)


def normalizer(
    modules: Mapping, in_features: int | None, generation: str | None
) -> tuple[Normalizer | None, str | None]:
    """The observation scaler and a note when a present scaler is not applied to observations.

    ``generation`` is what the config says (:func:`~zoo.frameworks.skrl.config.config_generation`):
    in a skrl 2.x run, ``state_preprocessor`` scales the critic's privileged state, whatever its size.
    ``in_features`` is None for conv policies: their scaler is compared with the env's observations.
    """
    for key, found_in in (("observation_preprocessor", GENERATION_2), ("state_preprocessor", GENERATION_1)):
        state = modules.get(key)
        if state is None:
            continue
        if not is_state_dict(state) or any(k not in state for k in SCALER_KEYS):
            raise BrokenFile(f"{key} is not a RunningStandardScaler state ({', '.join(SCALER_KEYS)})")
        size = tuple(state["running_mean"].shape)
        fits = in_features is None or size == (in_features,)
        if key == "state_preprocessor" and (generation == GENERATION_2 or not fits):
            return (
                None,
                f"state_preprocessor of size {size} is the skrl 2.x state scaler (the critic's input), not applied",
            )
        if not fits:
            raise BrokenFile(f"{key} has size {size}, the policy takes {in_features} inputs")
        return Normalizer(key, found_in, state), None
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
