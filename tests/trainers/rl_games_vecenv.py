"""rl_games 1.6.5 without Ray: an in-process vecenv, registered the way Isaac Lab registers its own ``rlgpu``.

rl_games' gym entries (``CartPole-v1``, ``openai_gym``, ...) all use its ``RAY`` vecenv, and Ray is not one of its
dependencies; ``RayWorker`` is a plain class that ``RayVecEnv`` wraps with ``ray.remote``, so it steps in-process here.
Runs in the trainer venv (rl_games imported), never in zoo's.
"""

from __future__ import annotations

import numpy as np
from rl_games.common import env_configurations, vecenv
from rl_games.common.ivecenv import IVecEnv
from rl_games.common.vecenv import RayWorker

#: rl_games' env name of the in-process gym envs (``env_config: {name: <gymnasium id>}`` picks the env).
ENV_NAME = "gym_local"


class LocalVecEnv(IVecEnv):
    """``num_actors`` gym envs stepped in this process; the first reset is seeded ``seed + i``."""

    def __init__(self, config_name: str, num_actors: int, **kwargs):
        self._seed = kwargs.pop("seed", None)
        self.workers = [RayWorker(config_name, dict(kwargs)) for _ in range(num_actors)]

    def step(self, actions):
        obs, rew, done, info = zip(
            *[w.step(a) for a, w in zip(actions, self.workers, strict=True)], strict=True
        )
        return np.stack(obs), np.stack(rew), np.stack(done), list(info)

    def reset(self):
        if self._seed is not None:
            seed, self._seed = self._seed, None
            return np.stack([w._obs_to_fp32(w.env.reset(seed=seed + i)) for i, w in enumerate(self.workers)])
        return np.stack([w.reset() for w in self.workers])

    def get_number_of_agents(self):
        return 1

    def get_env_info(self):
        return self.workers[0].get_env_info()


def register() -> None:
    vecenv.register("LOCAL", lambda config_name, num_actors, **kw: LocalVecEnv(config_name, num_actors, **kw))
    env_configurations.register(
        ENV_NAME,
        {"vecenv_type": "LOCAL", "env_creator": lambda **kw: env_configurations.create_default_gym_env(**kw)},
    )
