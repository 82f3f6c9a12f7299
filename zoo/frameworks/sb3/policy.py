"""SB3 and sb3-contrib policies behind zoo's :class:`~zoo.policy.Policy` protocol.

Deterministic actions are exactly ``model.predict(obs, deterministic=True)``: ``BaseAlgorithm.
predict`` only forwards to ``policy.predict``, which transposes channel-last images, adds the
batch handling, clips Box actions (PPO/A2C/TRPO) or unscales squashed ones (SAC/TD3/DDPG/TQC/
CrossQ). The VecNormalize statistics, when the run has them, are applied first, as the VecEnv
wrapper did. MaskablePPO gets the env's action masks (``uses_action_masks``: the evaluator hands
them over) and passes them on as ``predict(..., action_masks=...)``; RecurrentPPO carries its LSTM
state between steps (:mod:`zoo.frameworks.sb3.recurrent`, a subclass).

Stochastic mode is the library's too: sampled actions for the actor-critic and SAC-like policies
(from a torch generator state kept by this object, so one seed gives one result), epsilon-greedy
with the saved ``exploration_rate`` for DQN and QR-DQN. ARS has no stochastic mode (its
``_predict`` ignores ``deterministic``), so both modes act the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from zoo.frameworks.sb3.build import Rebuilt
from zoo.frameworks.sb3.normalize import ObsNormalizer
from zoo.policy import ExportSpec

#: The algorithms whose stochastic mode is epsilon-greedy around the greedy action.
EPSILON_GREEDY = ("DQN", "QRDQN")


class SB3Policy:
    """A :class:`zoo.policy.Policy` over a rebuilt SB3 policy module."""

    is_recurrent = False

    def __init__(
        self,
        rebuilt: Rebuilt,
        normalizer: ObsNormalizer | None,
        algorithm: str | None,
        seed: int,
        observation_space: Any = None,
    ):
        import torch

        self.policy = rebuilt.policy
        # the env's raw space: an image the model saved channel-first may arrive channel-last
        self.observation_space = rebuilt.observation_space if observation_space is None else observation_space
        self.action_space = rebuilt.action_space
        self.normalizer = normalizer
        self.algorithm = algorithm
        self.uses_action_masks = algorithm == "MaskablePPO"
        self.epsilon = rebuilt.exploration_rate
        self._rng = np.random.default_rng(seed)
        self._torch_state = torch.Generator().manual_seed(seed).get_state()
        self._acting = False
        _watch_discrete_values(self)

    @contextmanager
    def _seeded(self) -> Iterator[None]:
        """torch's global generator (what SB3's distributions sample from) swapped for this policy's own."""
        import torch

        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self._torch_state)
            yield
            self._torch_state = torch.get_rng_state()

    def _predict(self, obs: Any, deterministic: bool, action_masks: np.ndarray | None) -> np.ndarray:
        masks = {} if action_masks is None else {"action_masks": action_masks}
        return self.policy.predict(obs, deterministic=deterministic, **masks)[0]

    def act(
        self,
        obs_batch: Any,
        state: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, Any]:
        self._acting = True
        try:
            return self._act(obs_batch, state, deterministic, action_masks)
        finally:
            self._acting = False

    def _act(
        self, obs_batch: Any, state: Any, deterministic: bool, action_masks: np.ndarray | None
    ) -> tuple[np.ndarray, Any]:
        obs = self.normalizer(obs_batch) if self.normalizer is not None else obs_batch
        if deterministic:
            return self._predict(obs, True, action_masks), state
        if self.algorithm in EPSILON_GREEDY:
            actions = self._predict(obs, True, action_masks)
            explore = self._rng.random(len(actions)) < self.epsilon
            return np.where(
                explore, self._rng.integers(self.action_space.n, size=len(actions)), actions
            ), state
        with self._seeded():
            return self._predict(obs, False, action_masks), state

    def reset(self, done_mask: np.ndarray) -> None:
        """Feed-forward policies carry no state between steps."""

    def export_spec(self) -> ExportSpec:
        """A CPU module computing ``act(obs, deterministic=True)``: see :mod:`zoo.frameworks.sb3.export`."""
        from zoo.frameworks.sb3.export import export_spec

        return export_spec(self.policy, self.observation_space, self.normalizer, self.algorithm)


#: The SB3 modules a discrete action is computed from, by the attribute SB3 keeps them under: DQN's Q-network,
#: QR-DQN's quantiles, and the action head (logits) of the actor-critic policies and ARS.
_DISCRETE_VALUES = (("q_net", "Q-values"), ("quantile_net", "quantiles"), ("action_net", "action logits"))


def _watch_discrete_values(sb3: SB3Policy) -> None:
    """Check the values a discrete action is taken from, where SB3 computes them inside ``predict``: a forward
    hook on that module, live only while ``sb3`` acts (an export traces a copy of the module, hooks and all,
    and must not be checked). Box actions need none: the rollout checks them."""
    from gymnasium import spaces

    from zoo.rollout_guard import require_finite

    if not isinstance(sb3.action_space, spaces.Discrete | spaces.MultiDiscrete | spaces.MultiBinary):
        return
    found = next(((name, what) for name, what in _DISCRETE_VALUES if hasattr(sb3.policy, name)), None)
    if found is None:
        return
    name, what = found

    def check(_module, _inputs, output) -> None:
        if sb3._acting:  # noqa: SLF001 - the flag this module's own policy sets
            require_finite(output, what)

    getattr(sb3.policy, name).register_forward_hook(check)
