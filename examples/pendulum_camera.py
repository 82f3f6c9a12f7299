"""``PendulumCamera-v0``: gymnasium's Pendulum-v1 seen through a 12x12 camera, for rsl_rl's CNN actors.

gymnasium ships no continuous-control env with image observations that needs no simulator, so this one draws
the rod from Pendulum's angle into a ``(1, 12, 12)`` float32 image and gives it beside two 1-D groups,
``velocity`` (the angular velocity) and ``height`` (the cosine of the angle), as a Dict observation: the groups
an rsl_rl ``CNNModel`` actor reads by name. ``examples/train_rsl_rl.py --kinds camera`` trains on it, and the
tests use it too (``tests/test_rsl_rl_cnn.py``). Importing this module registers the env, so gymnasium's
``module:EnvId`` form names it, with this folder on the path::

    PYTHONPATH=examples zoo eval logs/rsl_rl/pendulum_camera --env-id pendulum_camera:PendulumCamera-v0
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

ENV_ID = "PendulumCamera-v0"
SIZE = 12


class PendulumCamera(gym.ObservationWrapper):
    """Pendulum-v1 observed as a camera image of the rod plus its angular velocity and height."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.observation_space = gym.spaces.Dict(
            {
                "camera": gym.spaces.Box(0.0, 1.0, (1, SIZE, SIZE), np.float32),
                "velocity": gym.spaces.Box(-8.0, 8.0, (1,), np.float32),
                "height": gym.spaces.Box(-1.0, 1.0, (1,), np.float32),
            }
        )

    def observation(self, obs):
        cos, sin, velocity = obs
        image = np.zeros((1, SIZE, SIZE), np.float32)
        for r in np.linspace(0.0, SIZE / 2 - 1, 12):
            image[0, int(SIZE / 2 - r * cos), int(SIZE / 2 + r * sin)] = 1.0
        return {
            "camera": image,
            "velocity": np.array([velocity], np.float32),
            "height": np.array([cos], np.float32),
        }


if ENV_ID not in gym.registry:
    gym.register(
        ENV_ID, entry_point=lambda **kw: PendulumCamera(gym.make("Pendulum-v1", **kw)), max_episode_steps=200
    )
