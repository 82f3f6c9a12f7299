"""Batched tensor envs in plain torch, for the tests of zoo's tensor path (``--env-factory tensor_envs:...``).

``TorchPendulum`` is gymnasium's Pendulum-v1 (same dynamics, reward, bounds and 200-step limit) stepped for
a whole batch as torch tensors, in rsl_rl's ``VecEnv`` shape: a done env resets in the same step. The
others are the contract's failure cases and an env whose episodes are known in advance.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from tensordict import TensorDict


class TorchPendulum:
    """Pendulum-v1 for ``num_envs`` envs on ``device``; initial states drawn from a generator seeded by ``seed``."""

    max_speed, max_torque, dt, g, m, length = 8.0, 2.0, 0.05, 10.0, 1.0, 1.0
    max_episode_length = 200

    def __init__(self, num_envs: int, device: str, seed: int):
        self.num_envs, self.num_actions, self.device = num_envs, 1, torch.device(device)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.th = torch.zeros(num_envs, device=self.device)
        self.thdot = torch.zeros(num_envs, device=self.device)
        self.episode_length_buf = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        self.closed = False
        self._reset(torch.ones(num_envs, dtype=torch.bool, device=self.device))

    def _reset(self, mask):
        th = (torch.rand(self.num_envs, generator=self.generator, device=self.device) * 2 - 1) * math.pi
        thdot = torch.rand(self.num_envs, generator=self.generator, device=self.device) * 2 - 1
        self.th = torch.where(mask, th, self.th)
        self.thdot = torch.where(mask, thdot, self.thdot)
        self.episode_length_buf.masked_fill_(mask, 0)

    def get_observations(self):
        obs = torch.stack([torch.cos(self.th), torch.sin(self.th), self.thdot], dim=-1)
        return TensorDict({"policy": obs}, batch_size=[self.num_envs], device=self.device)

    def step(self, actions):
        u = actions.reshape(self.num_envs).clamp(-self.max_torque, self.max_torque)
        angle = ((self.th + math.pi) % (2 * math.pi)) - math.pi
        rewards = -(angle**2 + 0.1 * self.thdot**2 + 0.001 * u**2)
        thdot = (
            self.thdot
            + (3 * self.g / (2 * self.length) * torch.sin(self.th) + 3.0 / (self.m * self.length**2) * u)
            * self.dt
        )
        self.thdot = thdot.clamp(-self.max_speed, self.max_speed)
        self.th = self.th + self.thdot * self.dt
        self.episode_length_buf += 1
        time_outs = self.episode_length_buf >= self.max_episode_length
        self._reset(time_outs)
        return self.get_observations(), rewards, time_outs, {"time_outs": time_outs.float()}

    def close(self):
        self.closed = True


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
