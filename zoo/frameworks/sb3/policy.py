"""An SB3 policy behind zoo's :class:`~zoo.policy.Policy` protocol.

Deterministic actions are exactly ``model.predict(obs, deterministic=True)``: ``BaseAlgorithm.
predict`` only forwards to ``policy.predict``, which transposes channel-last images, adds the
batch handling, clips Box actions (PPO/A2C) or unscales squashed ones (SAC/TD3/DDPG). The
VecNormalize statistics, when the run has them, are applied first, as the VecEnv wrapper did.

Stochastic mode is SB3's too: sampled actions for PPO/A2C/SAC (from a torch generator state
kept by this object, so one seed gives one result) and epsilon-greedy with the saved
``exploration_rate`` for DQN.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zoo.frameworks.sb3.build import Rebuilt
from zoo.frameworks.sb3.normalize import ObsNormalizer
from zoo.policy import ExportSpec


class SB3Policy:
    """A :class:`zoo.policy.Policy` over a rebuilt SB3 policy module."""

    is_recurrent = False

    def __init__(self, rebuilt: Rebuilt, normalizer: ObsNormalizer | None, algorithm: str | None, seed: int,
                 observation_space: Any = None):  # fmt: skip
        import torch

        self.policy = rebuilt.policy
        # the env's raw space: an image the model saved channel-first may arrive channel-last
        self.observation_space = rebuilt.observation_space if observation_space is None else observation_space
        self.action_space = rebuilt.action_space
        self.normalizer = normalizer
        self.algorithm = algorithm
        self.epsilon = rebuilt.exploration_rate
        self._rng = np.random.default_rng(seed)
        self._torch_state = torch.Generator().manual_seed(seed).get_state()

    def _sampled(self, obs: Any) -> np.ndarray:
        import torch

        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self._torch_state)
            actions, _ = self.policy.predict(obs, deterministic=False)
            self._torch_state = torch.get_rng_state()
        return actions

    def act(self, obs_batch: Any, state: Any = None, deterministic: bool = True) -> tuple[np.ndarray, Any]:
        obs = self.normalizer(obs_batch) if self.normalizer is not None else obs_batch
        if deterministic:
            actions, _ = self.policy.predict(obs, deterministic=True)
            return actions, state
        if self.algorithm != "DQN":
            return self._sampled(obs), state
        actions, _ = self.policy.predict(obs, deterministic=True)
        explore = self._rng.random(len(actions)) < self.epsilon
        return np.where(explore, self._rng.integers(self.action_space.n, size=len(actions)), actions), state

    def reset(self, done_mask: np.ndarray) -> None:
        """Feed-forward policies carry no state between steps."""

    def export_spec(self) -> ExportSpec:
        """A CPU module computing ``act(obs, deterministic=True)``: see :mod:`zoo.frameworks.sb3.export`."""
        from zoo.frameworks.sb3.export import export_spec

        return export_spec(self.policy, self.observation_space, self.normalizer)
