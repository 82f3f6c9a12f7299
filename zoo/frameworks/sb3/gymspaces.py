"""Spaces of SB3 < 2.0 files, pickled from OpenAI Gym classes, rebuilt from ``data``'s JSON summary.

SB3 1.x pickled ``gym.spaces.*`` objects; SB3 2.x itself only loads them with gym and shimmy
installed. zoo never imports gym for them: beside each pickle, SB3 writes the type name and the
space's first-level attributes (``n``, ``_shape``, ``dtype``, ``low``/``high`` as printed
arrays), enough to rebuild the gymnasium equivalent of Discrete, MultiDiscrete, MultiBinary and
Box spaces. A Box whose bounds were printed in numpy's summarized form (``...``, over 1000
values) is rebuilt only for images (uint8, 0..255); Dict and Tuple spaces are not rebuilt.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

_GYM_TYPE = re.compile(r"^<class 'gym\.spaces\.[\w.]+\.(\w+)'>$")


def is_gym_space(value: Any) -> bool:
    return isinstance(value, dict) and bool(_GYM_TYPE.match(str(value.get(":type:", ""))))


def _array(text: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if not isinstance(text, str):
        return np.broadcast_to(np.asarray(text, dtype=dtype), shape).copy()
    if "..." in text:
        raise ValueError("bounds were printed in summarized form")
    flat = np.array(text.replace("[", " ").replace("]", " ").split(), dtype=np.float64)
    return (flat if flat.size == 1 else flat.reshape(shape)).astype(dtype)


def _box(value: dict, shape: tuple[int, ...]):
    from gymnasium.spaces import Box

    dtype = np.dtype(value["dtype"])
    try:
        low, high = _array(value["low"], shape, dtype), _array(value["high"], shape, dtype)
    except ValueError:
        if dtype != np.uint8:
            raise
        low, high = np.zeros(shape, dtype), np.full(shape, 255, dtype)
    return Box(low=low, high=high, shape=shape, dtype=dtype)


def space_from_summary(value: dict) -> Any:
    """The gymnasium space SB3's JSON summary of a gym space describes; ValueError when it cannot."""
    from gymnasium import spaces

    kind = _GYM_TYPE.match(str(value.get(":type:", "")))[1]
    shape = tuple(int(d) for d in (value.get("_shape") or value.get("shape") or ()))
    try:
        if kind == "Discrete":
            return spaces.Discrete(int(value["n"]), start=int(value.get("start", 0)))
        if kind == "MultiBinary":
            return spaces.MultiBinary(list(shape) if len(shape) > 1 else int(value["n"]))
        if kind == "MultiDiscrete":
            return spaces.MultiDiscrete(_array(value["nvec"], shape, np.dtype(np.int64)))
        if kind == "Box":
            return _box(value, shape)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"gym {kind} summary does not describe a space: {exc}") from None
    raise ValueError(f"gym {kind} spaces are not rebuilt from the summary")
