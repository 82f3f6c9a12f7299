"""The step counter every throughput benchmark wraps its sub-envs in, so rates count real env steps."""

from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium as gym

STEPS = {"count": 0}


class CountSteps(gym.Wrapper):
    """Counts every env step, whoever drives the env."""

    def step(self, action):
        STEPS["count"] += 1
        return self.env.step(action)


def counted(thunk: Callable) -> Callable:
    """An env thunk whose env counts its steps."""
    return lambda: CountSteps(thunk())


def rate(fn: Callable):
    """``(env steps per second, fn's result)`` of one call of ``fn``."""
    STEPS["count"] = 0
    start = time.perf_counter()
    result = fn()
    return STEPS["count"] / (time.perf_counter() - start), result
