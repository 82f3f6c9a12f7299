"""Policies of your own, for ``zoo eval --policy-class my_policies:CLASS`` (docs/frameworks/custom.md).

Put this folder on the path to name them (``PYTHONPATH=examples``): zoo imports a ``--policy-class`` module
from ``sys.path``, as Python does, and never from the current folder by itself.

- :class:`SwingUp` (Pendulum-v1) and :class:`Balance` (CartPole-v1): the two constructors zoo calls,
  ``Class(observation_space, action_space)`` and ``Class(env, seed)``, and two of the action methods it
  calls, ``act(batch)`` and MJRL's ``get_action(one observation)``.
- :class:`Scaled`: a class whose ``load(path)`` reads the file given as ``TARGET``.
- :class:`Unscaled`: a policy whose actions leave the env's bounds, which zoo refuses before the first step.
- :class:`GaussianSwingUp`: SwingUp as MJRL pickles a policy (``examples/untrusted_files.py pickles`` writes
  one to ``policy.pickle``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


class SwingUp:
    """Pendulum-v1: pump energy until the pole is near the top, then hold it there with a PD torque."""

    def __init__(self, observation_space, action_space):
        self.low, self.high = action_space.low, action_space.high

    def act(self, obs):  # a batch of observations (cos, sin, angular velocity) -> a batch of torques
        cos, sin, speed = obs[:, 0], obs[:, 1], obs[:, 2]
        energy = 0.5 * speed**2 + 15.0 * cos  # 15 at rest at the top
        pump = 2.0 * np.sign(speed * (15.0 - energy) + 1e-6)
        hold = -(10.0 * np.arctan2(sin, cos) + 2.0 * speed)
        return np.clip(np.where(cos > 0.85, hold, pump)[:, None], self.low, self.high)


class Balance:
    """CartPole-v1: push the cart under the falling pole."""

    def __init__(self, env, seed):
        self.n = env.action_space.n

    def get_action(self, obs):  # one observation -> (action, info), MJRL's contract
        return int(obs[2] + 0.5 * obs[3] > 0), {}


class Scaled(SwingUp):
    """SwingUp with its torque multiplied by a gain that ``load`` reads from a JSON file (``{"gain": 0.5}``)."""

    gain = 1.0

    def load(self, path):  # zoo calls it with TARGET's path
        self.gain = json.loads(Path(path).read_text())["gain"]

    def act(self, obs):
        return np.clip(self.gain * super().act(obs), self.low, self.high)


class Unscaled(SwingUp):
    """SwingUp written for an env that takes tenths of a newton-metre: on Pendulum-v1 its actions are 10x out."""

    def act(self, obs):
        return 10.0 * super().act(obs)


class GaussianSwingUp:
    """SwingUp as MJRL writes a policy: get_action(one observation) -> [sampled action, info]."""

    def __init__(self, action_space):
        self.swing = SwingUp(None, action_space)
        self.log_std = np.full(1, -1.5, dtype=np.float32)

    def get_action(self, obs):
        mean = self.swing.act(obs[None])[0]
        noise = np.exp(self.log_std) * np.random.randn(*mean.shape)
        sampled = np.clip(mean + noise, self.swing.low, self.swing.high)
        return [sampled, {"mean": mean, "log_std": self.log_std, "evaluation": mean}]
