"""Genesis training runs as the examples' ``*_train.py`` scripts (v0.4.5) make them, on zoo's task definitions.

go2_train.py and hover_train.py pickle ``[env_cfg, obs_cfg, reward_cfg, command_cfg, train_cfg]`` to
``logs/<exp_name>/cfgs.pkl`` before building the env, then train with rsl_rl's ``OnPolicyRunner``
(``init_at_random_ep_len=True``). With ``save_interval`` 100 and fewer iterations than that, rsl-rl-lib
5.5.1 writes ``model_0.pt`` (iteration 0) and the final ``model_{iterations - 1}.pt``. Genesis is
initialised by zoo (no seed: its kernel cache is keyed by the seed); the training seed is applied to
torch, numpy and random as ``gs.init(seed=...)`` would.
"""

from __future__ import annotations

import copy
import pickle
import shutil
from pathlib import Path


def _train(task_cls, default_cfgs: list[dict], exp_name: str, log_root: Path, num_envs: int, iterations: int,
           seed: int) -> Path:  # fmt: skip
    from rsl_rl.runners import OnPolicyRunner

    from zoo.tasks.genesis import import_genesis

    log_dir = Path(log_root) / "logs" / exp_name
    if log_dir.exists():
        shutil.rmtree(log_dir)
    log_dir.mkdir(parents=True)
    cfgs = copy.deepcopy(default_cfgs)
    with open(log_dir / "cfgs.pkl", "wb") as f:
        pickle.dump(cfgs, f)
    import_genesis().utils.set_random_seed(seed)
    env = task_cls(num_envs=num_envs, device="cpu", seed=seed, cfgs=cfgs)
    runner = OnPolicyRunner(env, copy.deepcopy(cfgs[4]), str(log_dir), device="cpu")
    runner.learn(num_learning_iterations=iterations, init_at_random_ep_len=True)
    env.close()
    return log_dir


def train_go2_run(log_root: Path, num_envs: int = 8, iterations: int = 2, seed: int = 1) -> Path:
    """A go2_train.py run (``logs/go2-walking``: cfgs.pkl, model_0.pt, model_{iterations-1}.pt, events)."""
    from zoo.tasks.genesis.go2 import DEFAULT_CFGS, Go2Walking

    return _train(Go2Walking, DEFAULT_CFGS, "go2-walking", log_root, num_envs, iterations, seed)


def train_hover_run(log_root: Path, num_envs: int = 8, iterations: int = 2, seed: int = 1) -> Path:
    """A hover_train.py run (``logs/drone-hovering``), the same way."""
    from zoo.tasks.genesis.hover import DEFAULT_CFGS, DroneHover

    return _train(DroneHover, DEFAULT_CFGS, "drone-hovering", log_root, num_envs, iterations, seed)


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
