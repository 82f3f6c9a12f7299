"""Genesis training runs as the examples' ``*_train.py`` scripts (v0.4.5) make them, on zoo's task definitions:
``examples/train_genesis.py`` (one definition, the docs run it too), and skrl on zoo's Go2 task."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from train_genesis import train_go2, train_hover  # noqa: E402


def train_go2_run(log_root: Path, num_envs: int = 8, iterations: int = 2, seed: int = 1) -> Path:
    """A go2_train.py run (``log_root/logs/go2-walking``: cfgs.pkl, model_0.pt, model_{iterations-1}.pt, events)."""
    return train_go2(Path(log_root) / "logs", num_envs, iterations, seed)


def train_hover_run(log_root: Path, num_envs: int = 8, iterations: int = 2, seed: int = 1) -> Path:
    """A hover_train.py run (``log_root/logs/drone-hovering``), the same way."""
    return train_hover(Path(log_root) / "logs", num_envs, iterations, seed)


def skrl_wrapper(env):
    """zoo's Go2 task (rsl_rl's VecEnv shape) behind skrl's ``Wrapper``, as a user trains skrl on a Genesis
    task (Genesis ships no skrl examples): the ``policy`` group is skrl's observation, a done env resets in
    the same step (terminated = done and not a time-out)."""
    from gymnasium.spaces import Box
    from skrl.envs.wrappers.torch.base import Wrapper

    class GenesisSkrl(Wrapper):
        @property
        def observation_space(self):
            return Box(-float("inf"), float("inf"), (45,))

        @property
        def action_space(self):
            return Box(-1.0, 1.0, (12,))

        def reset(self):
            return self._env.reset()["policy"], {}

        def step(self, actions):
            obs, rewards, dones, extras = self._env.step(actions)
            time_outs = extras["time_outs"].bool()
            terminated = dones & ~time_outs
            return obs["policy"], rewards.view(-1, 1), terminated.view(-1, 1), time_outs.view(-1, 1), {}

        def state(self):
            return None

        def render(self, *args, **kwargs):
            return None

        def close(self):
            self._env.close()

    return GenesisSkrl(env)


def train_skrl_go2_run(log_root: Path, num_envs: int = 8, timesteps: int = 48, seed: int = 1) -> Path:
    """skrl's PPO (``Runner`` + ``SequentialTrainer``) on zoo's Go2 task, in Isaac Lab's skrl layout
    (``params/agent.yaml`` beside ``checkpoints/agent_{timesteps}.pt``); returns the experiment dir."""
    import yaml
    from skrl.utils.runner.torch import Runner
    from skrl_helpers import gaussian_policy, mlp, ppo_cfg

    from zoo.tasks.genesis.go2 import DEFAULT_CFGS, Go2Walking

    cfg = ppo_cfg(gaussian_policy(mlp(layers=(64, 64))), timesteps=timesteps, rollouts=24)
    cfg["seed"] = seed
    logs = Path(log_root) / "logs" / "skrl" / "go2"
    cfg["agent"]["experiment"].update(directory=str(logs), experiment_name="2026-12-01_10-00-00_ppo_torch")
    run = logs / "2026-12-01_10-00-00_ppo_torch"
    (run / "params").mkdir(parents=True)
    (run / "params" / "agent.yaml").write_text(yaml.safe_dump(cfg))
    env = Go2Walking(num_envs=num_envs, device="cpu", seed=seed, cfgs=copy.deepcopy(DEFAULT_CFGS))
    Runner(skrl_wrapper(env), copy.deepcopy(cfg)).trainer.train()
    env.close()
    return run
