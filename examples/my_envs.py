"""Two envs with no time limit, in CartPole's spaces, for docs/eval.md's bounds (``PYTHONPATH=examples``).

- ``Endless-v0``: its episodes never end, so only ``--max-steps`` (or ``--max-seconds``) stops a rollout.
- ``Diverging-v0``: raises on its 1000th step, as a simulation that blows up does: zoo names the env as the cause.

Importing the module registers both: ``zoo eval RUN --env-id my_envs:Endless-v0`` imports it first.
"""

import gymnasium as gym
import numpy as np


class Endless(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(4, np.float32), 1.0, False, False, {}


class Diverging(Endless):
    def step(self, action):
        if self.t == 999:
            raise ValueError("the simulation diverged")
        return super().step(action)


gym.register("Endless-v0", entry_point="my_envs:Endless")
gym.register("Diverging-v0", entry_point="my_envs:Diverging")
