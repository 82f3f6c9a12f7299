"""A user's own env wrapper, off zoo's allowlist: zoo runs it only when told to (``--trust-wrapper my_wrappers.Shift``).

docs/frameworks/sb3.md names it in an rl_zoo3 run's ``config.yml``; tests/test_rlzoo3_config.py does the same.
"""

from __future__ import annotations

import gymnasium as gym


class Shift(gym.ObservationWrapper):
    """Adds a constant to every observation: user code zoo must not run unless told to."""

    def __init__(self, env, by=0.0):
        super().__init__(env)
        self.by = by

    def observation(self, obs):
        return obs + self.by
