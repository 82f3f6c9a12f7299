"""Two gymnasium envs for MaskablePPO, registered on import: ``ZooSB3Masked-v0`` gives ``action_masks()``,
``ZooSB3Unmasked-v0`` has the same spaces and does not.

gymnasium's ``module:env_id`` form imports this module, so with ``examples/`` on ``PYTHONPATH``
``--env-id masked_env:ZooSB3Masked-v0`` names the env (docs/frameworks/sb3.md; tests/test_sb3_contrib.py).
"""

from __future__ import annotations

import gymnasium as gym
from sb3_contrib.common.envs import InvalidActionEnvDiscrete
from stable_baselines3.common.envs import IdentityEnv


class MaskedEnv(InvalidActionEnvDiscrete):
    """sb3-contrib's masked identity env (6 actions, 3 of them invalid each step), drawing its state
    and invalid actions from the env's own seeded generator: the original draws from numpy's global
    one, which two vector envs call in different orders, so no two loops would see the same masks."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, render_mode=None):
        super().__init__(dim=6, ep_length=16, n_invalid_actions=3)
        self.render_mode = render_mode

    def _choose_next_state(self) -> None:
        self.state = int(self.np_random.integers(6))
        others = [a for a in range(6) if a != self.state]
        self.invalid_actions = self.np_random.choice(others, self.n_invalid_actions, replace=False).tolist()


class UnmaskedEnv(IdentityEnv):
    """The same spaces as :class:`MaskedEnv`, but no ``action_masks()``."""

    def __init__(self, render_mode=None):
        super().__init__(dim=6, ep_length=16)


gym.register("ZooSB3Masked-v0", entry_point=MaskedEnv)
gym.register("ZooSB3Unmasked-v0", entry_point=UnmaskedEnv)
