"""An env factory for ``zoo eval --env-factory tensor_pendulum:make_env`` (docs/tensor-envs.md): a batched tensor env.

``TorchPendulum`` is gymnasium's Pendulum-v1 (the same dynamics, reward, bounds and 200-step limit) stepped for a
whole batch as torch tensors on one device, in rsl_rl's ``VecEnv`` shape, the contract of ``zoo.tensor_env``: the
observations as a mapping of groups (``policy``), and a done env reset within the same step. A policy trained on
gymnasium's Pendulum-v1 (``examples/train_rsl_rl.py``) plays it as it plays gymnasium's; zoo's tests use it too
(``tests/tensor_envs.py``). Put this folder on the path to name it::

    PYTHONPATH=examples zoo eval logs/rsl_rl/pendulum_mlp/2026-11-30_10-00-00 --env-factory tensor_pendulum:make_env
"""

from __future__ import annotations

import math

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


def make_env(num_envs: int, device: str, seed: int) -> TorchPendulum:
    """What ``--env-factory`` calls: ``num_envs`` envs on ``device``, their first states drawn with ``seed``."""
    return TorchPendulum(num_envs, device, seed)
