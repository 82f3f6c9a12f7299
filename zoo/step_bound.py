"""zoo's step bound on a gymnasium env: an episode that reaches ``max_steps`` steps ends as a truncation.

What gymnasium's ``TimeLimit`` does, plus one info key (:data:`zoo.rollout_guard.CUT_INFO`) on the step that
cut the episode, so that the evaluator records it as cut by the bound (``"truncated": true``) and not ended by
the env. It sits directly under ``RecordEpisodeStatistics`` (:func:`zoo.envs.step_bound`), which then records
the cut episode like any other.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from zoo.rollout_guard import CUT_INFO


class StepBound(gym.Wrapper):
    """Truncate an episode after ``max_steps`` steps unless the env ended it by then."""

    def __init__(self, env: gym.Env, max_steps: int):
        super().__init__(env)
        self.max_steps, self.steps = int(max_steps), 0

    def reset(self, **kwargs: Any):
        self.steps = 0
        return self.env.reset(**kwargs)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.steps >= self.max_steps and not (terminated or truncated):
            truncated, info = True, {**info, CUT_INFO: True}
        return obs, reward, terminated, truncated, info
