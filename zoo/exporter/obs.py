"""The exported input layout: raw observations as one float32 tensor, Dict observations flattened.

A Dict observation becomes one ``(batch, obs_dim)`` vector, each key's raw values flattened in C order.
The keys come in the deployment contract's order (DESIGN section 5): a goal-conditioned observation
(gymnasium-robotics' ``GoalEnv``, what SB3's HER trains on) as ``observation``, ``achieved_goal``,
``desired_goal``; any other key after those, in the observation space's order (gymnasium sorts a Dict's
keys). Raw means what the env returns: a ``Discrete`` key is its index (one value, not one-hot), an image
key its pixel values. ``obs_groups`` records where each key starts and how long it is, so a deployment can
build the vector without zoo. Everything else keeps its own shape: ``(batch, *observation_space.shape)``.

Readers take the layout from a file's own ``obs_groups`` (each group's ``start``), never from this order:
a file exported before the contract's order (alphabetical keys) keeps its layout and keeps working.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The goal-conditioned keys, in the order the contract lays them out.
GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")


def _raw_shape(space) -> tuple[int, ...]:
    return tuple(int(n) for n in space.shape) if space.shape is not None else ()


def key_order(keys) -> list[str]:
    """A Dict observation's keys in the contract's order: the goal-conditioned ones first, the rest as given."""
    keys = list(keys)
    goal = [key for key in GOAL_KEYS if key in keys]
    return goal + [key for key in keys if key not in goal]


def obs_layout(space, name: str = "obs") -> tuple[tuple[int, ...], dict[str, dict]]:
    """``(obs_shape, obs_groups)`` of the exported input for an observation space."""
    from gymnasium import spaces

    if not isinstance(space, spaces.Dict):
        shape = _raw_shape(space)
        return shape, {name: {"start": 0, "dim": int(np.prod(shape, dtype=np.int64)), "shape": list(shape)}}
    groups, start = {}, 0
    for key in key_order(space.spaces):
        sub = space.spaces[key]
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


def input_order(obs_groups: dict[str, dict]) -> list[str]:
    """The groups' names in the order the flat input holds them (by ``start``, whatever order a file lists them)."""
    return sorted(obs_groups, key=lambda name: obs_groups[name]["start"])


def flatten_obs(obs: Any, obs_groups: dict[str, dict]) -> np.ndarray:
    """A batch of raw env observations as the exported module's float32 input."""
    if not isinstance(obs, dict):
        return np.asarray(obs, dtype=np.float32)
    batch = len(next(iter(obs.values())))
    return np.concatenate(
        [np.asarray(obs[key], dtype=np.float32).reshape(batch, -1) for key in input_order(obs_groups)],
        axis=1,
    )


def unflatten_obs(x, obs_groups: dict[str, dict]) -> dict:
    """The flat input back into ``{key: (batch, *shape)}`` (torch tensors inside an exported module, numpy
    arrays too)."""
    return {
        key: x[:, g["start"] : g["start"] + g["dim"]].reshape([-1, *g["shape"]])
        for key, g in obs_groups.items()
    }
