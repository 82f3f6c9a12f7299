"""The step counter every throughput benchmark wraps its sub-envs in, so rates count real env steps.

Counts live in shared memory, one slot per wrapped env: a rollout that forks lanes (``zoo.lanes``) steps an
env in a child process, and its steps must count too. One env is stepped by one process at a time, so a
slot needs no lock."""

from __future__ import annotations

import itertools
import multiprocessing
import time
from collections.abc import Callable

import gymnasium as gym

SLOTS = 1024
STRIDE = (
    8  # int64s per slot: one 64-byte cache line each, so processes counting side by side do not share one
)
_COUNTS = multiprocessing.RawArray("q", SLOTS * STRIDE)  # shared with forked children
_NEXT_SLOT = itertools.count()


class CountSteps(gym.Wrapper):
    """Counts every env step, whoever drives the env (in whichever process), in its own ``slot``."""

    def __init__(self, env, slot: int):
        super().__init__(env)
        self._slot = slot

    def step(self, action):
        _COUNTS[self._slot] += 1
        return self.env.step(action)


def counted(thunk: Callable) -> Callable:
    """An env thunk whose env counts its steps (its slot taken here, in the parent: an AsyncVectorEnv calls the
    thunk in a worker process)."""
    slot = next(_NEXT_SLOT) % SLOTS * STRIDE
    return lambda: CountSteps(thunk(), slot)


def steps() -> int:
    return sum(_COUNTS[::STRIDE])


def rate(fn: Callable):
    """``(env steps per second, fn's result)`` of one call of ``fn``."""
    before = steps()
    start = time.perf_counter()
    result = fn()
    return (steps() - before) / (time.perf_counter() - start), result
