"""Pendulum-v1 in the gym<0.26 API that deprl 0.3.2's vendored tonic speaks (imported by the run's config header).

deprl 0.3.2 cannot train on any env of gym 0.26 or gymnasium as they are: tonic builds envs with ``gym.make`` and
calls ``_max_episode_steps`` (gym 0.26 refuses a private attribute: ``AttributeError: accessing private attribute
'_max_episode_steps' is prohibited``), expects ``reset() -> obs`` and ``step() -> (obs, reward, done, info)``,
and deprl's trainer reads the muscle states DEP acts on from ``env.unwrapped.sim.data.actuator_length`` and
``actuator_force`` (MuJoCo's ``MjData`` fields) and its test loop ``sim.model.na``. MyoSuite 3 registers its envs in gymnasium, which old ``gym.make``
does not see. This module re-registers ``Pendulum-v1`` in old gym as gym 0.26's own ``PendulumEnv`` (same dynamics,
same seeding) behind that old API, its one actuator's "length" the pole angle and its "force" the last torque.
deprl's own trainer, agent, logger and loader then run unchanged.
"""

from __future__ import annotations

from types import SimpleNamespace

import gym
import numpy as np
from gym.envs.classic_control.pendulum import PendulumEnv

ENV_ID = "Pendulum-v1"
MAX_EPISODE_STEPS = 200


class OldApiPendulum(gym.Env):
    """gym 0.26's ``PendulumEnv`` with ``seed()``, ``reset() -> obs`` and a 4-tuple ``step``."""

    metadata = {"render_modes": []}

    def __init__(self) -> None:
        self.env = PendulumEnv()
        self.observation_space = self.env.observation_space
        self.action_space = self.env.action_space
        self.max_episode_steps = MAX_EPISODE_STEPS
        self._seed: int | None = None
        self._torque = np.zeros(1)
        data = SimpleNamespace(actuator_length=np.zeros(1), actuator_force=np.zeros(1))
        self.sim = SimpleNamespace(data=data, model=SimpleNamespace(na=0))  # na: no muscle activations

    def seed(self, seed: int | None = None) -> list[int | None]:
        """tonic seeds each env once before its first reset: that reset takes the seed, later ones go on."""
        self._seed = seed
        return [seed]

    def _muscles(self) -> None:
        self.sim.data.actuator_length = np.array([self.env.state[0]], dtype=np.float64)
        self.sim.data.actuator_force = self._torque.astype(np.float64)

    def reset(self, **kwargs):  # type: ignore[override]
        obs, _ = self.env.reset(seed=self._seed)
        self._seed = None
        self._torque = np.zeros(1)
        self._muscles()
        return obs

    def step(self, action):  # type: ignore[override]
        obs, reward, terminated, _truncated, info = self.env.step(action)
        self._torque = np.clip(np.asarray(action, dtype=np.float64), -2.0, 2.0).reshape(1)
        self._muscles()
        return obs, reward, terminated, info


gym.envs.registration.registry.pop(ENV_ID, None)
gym.register(
    id=ENV_ID,
    entry_point=OldApiPendulum,
    max_episode_steps=MAX_EPISODE_STEPS,
    disable_env_checker=True,
    order_enforce=False,
)
