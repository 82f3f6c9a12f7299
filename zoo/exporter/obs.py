"""The exported input layout: raw observations as one float32 tensor, Dict observations flattened.

A Dict observation becomes one ``(batch, obs_dim)`` vector, its keys in the observation space's
order (gymnasium sorts a Dict's keys), each key's raw values flattened in C order. Raw means what
the env returns: a ``Discrete`` key is its index (one value, not one-hot), an image key its pixel
values. ``obs_groups`` records where each key starts and how long it is, so a deployment can build
the vector without zoo. Everything else keeps its own shape: ``(batch, *observation_space.shape)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _raw_shape(space) -> tuple[int, ...]:
    return tuple(int(n) for n in space.shape) if space.shape is not None else ()


def obs_layout(space, name: str = "obs") -> tuple[tuple[int, ...], dict[str, dict]]:
    """``(obs_shape, obs_groups)`` of the exported input for an observation space."""
    from gymnasium import spaces

    if not isinstance(space, spaces.Dict):
        shape = _raw_shape(space)
        return shape, {name: {"start": 0, "dim": int(np.prod(shape, dtype=np.int64)), "shape": list(shape)}}
    groups, start = {}, 0
    for key, sub in space.spaces.items():
        if isinstance(sub, spaces.Dict | spaces.Tuple):
            from zoo.errors import ZooError

            raise ZooError(
                f"observation key {key!r} is a nested {type(sub).__name__}, which zoo cannot flatten"
            )
        shape = _raw_shape(sub)
        dim = int(np.prod(shape, dtype=np.int64))
        groups[key] = {"start": start, "dim": dim, "shape": list(shape)}
        start += dim
    return (start,), groups


def flatten_obs(obs: Any, obs_groups: dict[str, dict]) -> np.ndarray:
    """A batch of raw env observations as the exported module's float32 input."""
    if not isinstance(obs, dict):
        return np.asarray(obs, dtype=np.float32)
    batch = len(next(iter(obs.values())))
    return np.concatenate(
        [np.asarray(obs[key], dtype=np.float32).reshape(batch, -1) for key in obs_groups], axis=1
    )


def unflatten_obs(x, obs_groups: dict[str, dict]) -> dict:
    """Inside an exported module: the flat input back into ``{key: (batch, *shape)}`` tensors."""
    return {
        key: x[:, g["start"] : g["start"] + g["dim"]].reshape([-1, *g["shape"]])
        for key, g in obs_groups.items()
    }
