"""Envs that test the evaluator's bounds and its honesty (tests/test_rollout_bounds.py), importable as
``rollout_envs`` (conftest puts tests/ on sys.path), in CartPole's spaces so that a CartPole model acts in them.

gymnasium envs registered on import, none with a time limit (``max_episode_steps`` unset): one that never
ends, one whose step never returns, one whose rewards turn NaN, and ones that raise in ``step``, ``reset`` or their constructor; and batched tensor envs
(``--env-factory rollout_envs:...``) for the same cases on the tensor path.
"""

from __future__ import annotations

import contextlib
import time

import gymnasium as gym
import numpy as np
import torch


class Endless(gym.Env):
    """Never terminates or truncates; pays 1 a step."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(4, np.float32), {}

    def step(self, action):
        return np.zeros(4, np.float32), 1.0, False, False, {}


class Counted(Endless):
    """Endless, counting its steps in ``t`` (from 0 at each reset), for the envs that misbehave on a given step."""

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self.t += 1
        return super().step(action)


class NaNReward(Counted):
    """Episodes of 5 steps; the third step pays NaN."""

    def step(self, action):
        self.t += 1
        return np.zeros(4, np.float32), float("nan") if self.t == 3 else 1.0, self.t >= 5, False, {}


class RaisesInStep(Counted):
    """Raises on its third step."""

    def step(self, action):
        if self.t == 2:
            raise ValueError("boom in step")
        return super().step(action)


class HangsInStep(Counted):
    """Its third step never returns (a loop in Python, as a user's env with a bug would)."""

    def step(self, action):
        while self.t == 2:
            with contextlib.suppress(Exception):  # a user's blanket except: the budget must get through it
                time.sleep(0.05)
        return super().step(action)


class RaisesInReset(Endless):
    def reset(self, *, seed=None, options=None):
        raise RuntimeError("boom in reset")


class RaisesInInit(Endless):
    def __init__(self):
        raise KeyError("boom in __init__")


gym.register("ZooEndless-v0", entry_point="rollout_envs:Endless")
gym.register("ZooNaNReward-v0", entry_point="rollout_envs:NaNReward")
gym.register("ZooRaisesInStep-v0", entry_point="rollout_envs:RaisesInStep")
gym.register("ZooHangsInStep-v0", entry_point="rollout_envs:HangsInStep")
gym.register("ZooRaisesInReset-v0", entry_point="rollout_envs:RaisesInReset")
gym.register("ZooRaisesInInit-v0", entry_point="rollout_envs:RaisesInInit")


class TensorEndless:
    """A batched tensor env with no ``max_episode_length`` whose episodes never end; pays 1 a step."""

    num_actions = 1

    def __init__(self, num_envs: int, device: str, seed: int):
        self.num_envs, self.device = num_envs, torch.device(device)

    def get_observations(self):
        return {"policy": torch.zeros(self.num_envs, 3, device=self.device)}

    def step(self, actions):
        zeros = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        return self.get_observations(), torch.ones(self.num_envs, device=self.device), zeros, {}


class TensorRaisesInStep(TensorEndless):
    def step(self, actions):
        raise ValueError("boom in tensor step")


def make_tensor_endless(num_envs: int, device: str, seed: int) -> TensorEndless:
    return TensorEndless(num_envs, device, seed)


def make_tensor_raising(num_envs: int, device: str, seed: int) -> TensorRaisesInStep:
    return TensorRaisesInStep(num_envs, device, seed)


def make_raising_factory(num_envs: int, device: str, seed: int):
    raise OSError("boom in the factory")
