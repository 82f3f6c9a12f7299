"""Batched tensor envs in plain torch, for the tests of zoo's tensor path (``--env-factory tensor_envs:...``).

``TorchPendulum`` is gymnasium's Pendulum-v1 stepped for a whole batch as torch tensors, the docs' example
factory (``examples/tensor_pendulum.py``, one definition). The others are the contract's failure cases and an
env whose episodes are known in advance.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from tensor_pendulum import TorchPendulum  # noqa: E402


class Counting:
    """Env ``i``'s episodes last ``3 + i`` steps and pay 1 per step; even envs succeed. Observations are zeros."""

    def __init__(self, num_envs: int, device: str, seed: int):
        self.num_envs, self.num_actions, self.device = num_envs, 1, torch.device(device)
        self.lengths = torch.arange(num_envs, device=self.device) + 3
        self.t = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        self.max_episode_length = int(self.lengths.max())

    def get_observations(self):
        return {"policy": torch.zeros(self.num_envs, 3, device=self.device)}

    def step(self, actions):
        self.t += 1
        dones = self.t >= self.lengths
        self.t.masked_fill_(dones, 0)
        success = (torch.arange(self.num_envs, device=self.device) % 2 == 0) & dones
        ones = torch.ones(self.num_envs, device=self.device)
        return self.get_observations(), ones, dones, {"time_outs": dones.float(), "is_success": success}


def make_pendulum(num_envs: int, device: str, seed: int) -> TorchPendulum:
    return TorchPendulum(num_envs, device, seed)


def make_counting(num_envs: int, device: str, seed: int) -> Counting:
    return Counting(num_envs, device, seed)


class _NumpyObs(TorchPendulum):
    def get_observations(self):
        return {"policy": super().get_observations()["policy"].numpy()}


def make_numpy_obs(num_envs: int, device: str, seed: int) -> TorchPendulum:
    """The mistake of an env ported from gymnasium: numpy observations."""
    return _NumpyObs(num_envs, device, seed)


class _ElsewhereRewards(TorchPendulum):
    def step(self, actions):
        obs, rewards, dones, extras = super().step(actions)
        return obs, rewards.to("meta"), dones, extras


def make_elsewhere_rewards(num_envs: int, device: str, seed: int) -> TorchPendulum:
    """Rewards on another device than the env's (``meta`` stands in for a second GPU)."""
    return _ElsewhereRewards(num_envs, device, seed)


def make_too_few(num_envs: int, device: str, seed: int) -> TorchPendulum:
    return TorchPendulum(max(1, num_envs - 1), device, seed)


def make_not_an_env(num_envs: int, device: str, seed: int):
    return np.zeros((num_envs, 3))


NOT_CALLABLE = 3


class _FourValues(TorchPendulum):
    def get_observations(self):
        obs = super().get_observations()["policy"]
        return {"policy": torch.cat([obs, obs[:, :1]], dim=-1)}


def make_four_values(num_envs: int, device: str, seed: int) -> TorchPendulum:
    """Another task's observations: 4 values where the policy reads 3."""
    return _FourValues(num_envs, device, seed)
