"""``PixelTarget-v0``: steer a dot to the centre of a 12x12 RGB image, for skrl's CNN policies.

No cheap image env ships with gymnasium's classic set (rendering to pixels needs pygame and is slow), so this one
draws its own image: the dot red, its row green, float32 in [0, 1] as Isaac Lab's camera tasks give them (skrl's
model instantiator initializes lazy layers with a sample of the observation space, which a uint8 space breaks).
``examples/train_skrl.py cnn`` trains on it and the tests use it too (``tests/test_skrl_cnn.py``). Importing this
module registers the env, so gymnasium's ``module:EnvId`` form names it, with this folder on the path::

    PYTHONPATH=examples zoo eval logs/skrl/PixelTarget-v0/... --env-id pixel_target:PixelTarget-v0
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

ENV_ID, SIZE = "PixelTarget-v0", 12


class PixelTarget(gym.Env):
    """Steer a dot to the image centre: the dot is drawn red, its row green, on a 12x12 RGB image."""

    observation_space = gym.spaces.Box(0.0, 1.0, (SIZE, SIZE, 3), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = self.np_random.uniform(-1.0, 1.0, 2)
        return self._image(), {}

    def step(self, action):
        self.position = np.clip(self.position + 0.25 * np.clip(action, -1.0, 1.0), -1.0, 1.0)
        distance = float(np.linalg.norm(self.position))
        return self._image(), -distance, distance < 0.15, False, {}

    def _image(self) -> np.ndarray:
        image = np.zeros((SIZE, SIZE, 3), np.float32)
        row, col = np.round((self.position + 1.0) / 2.0 * (SIZE - 1)).astype(int)
        image[row, :, 1] = 0.4
        image[row, col, 0] = 1.0
        return image


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=PixelTarget, max_episode_steps=25)
