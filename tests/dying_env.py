"""A test env whose reset ends its process at once: a Ray worker that dies mid-sweep."""

import os

import gymnasium as gym
from gymnasium.envs.classic_control import CartPoleEnv


class DyingCartPole(CartPoleEnv):
    def reset(self, *, seed=None, options=None):
        os._exit(1)


gym.register("Dying-v1", entry_point=DyingCartPole, max_episode_steps=500)
