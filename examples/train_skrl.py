"""Train small, real skrl runs (skrl's ``Runner`` and ``SequentialTrainer``, PPO) in Isaac Lab's skrl layout.

zoo's docs show its skrl support on these runs, and the tests build their skrl configs with the same functions
(``tests/skrl_helpers.py`` and the skrl test modules import them from here). Each run is what Isaac Lab's skrl ``train.py`` leaves::

    {out}/skrl/{env_id}/{stamp}_ppo_torch/params/agent.yaml              # the Runner config
    {out}/skrl/{env_id}/{stamp}_ppo_torch/checkpoints/agent_{step}.pt    # every --timesteps / 4, and best_agent.pt
    {out}/skrl/{env_id}/{stamp}_ppo_torch/events.out.tfevents.*          # skrl's TensorBoard log

with ``kind`` one of ``gaussian`` (``GaussianMixin`` on Pendulum-v1), ``multivariate``
(``MultivariateGaussianMixin`` on Pendulum-v1), ``categorical`` (``CategoricalMixin`` on CartPole-v1),
``asymmetric`` (a Gaussian policy on Pendulum-v1 whose critic reads a privileged ``STATES`` vector through its own
``state_preprocessor``) or ``cnn`` (a shared CNN policy/value on ``PixelTarget-v0``, examples/pixel_target.py); the
observations go through a ``RunningStandardScaler`` (the asymmetric policy's do not). The env is a gymnasium vector
env of 4 behind skrl's ``GymnasiumWrapper``. ``gru`` and ``lstm`` are skrl ``PPO_RNN`` runs in skrl's own layout
instead, ``{out}/torch/{env_id}/{stamp}_PPO_RNN`` (examples/skrl_rnn.py).

Why: a thousand timesteps are far from solving either task, but the files are skrl's own, so ``zoo check``,
``eval`` and ``export`` have a true skrl checkpoint and config to read. Seeded (the config's seed 42) and on
one torch thread::

    python examples/train_skrl.py [gaussian|multivariate|categorical|asymmetric|cnn|gru|lstm] [--out logs]
                                  [--timesteps 1000] [--stamp 2026-11-30_10-00-00]

It needs the ``skrl`` extra; about 10 s per 1,000 timesteps on one CPU core.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path


def vec_env(env_id: str, num_envs: int = 4, wrapper: type | None = None):
    """A skrl-wrapped gymnasium vector env (``wrapper``: a subclass of skrl's ``GymnasiumWrapper``)."""
    import gymnasium as gym
    from skrl.envs.wrappers.torch.gymnasium_envs import GymnasiumWrapper

    return (wrapper or GymnasiumWrapper)(gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync"))


def runner_for(cfg: dict, env_id: str, wrapper: type | None = None):
    from skrl.utils.runner.torch import Runner

    return Runner(vec_env(env_id, wrapper=wrapper), copy.deepcopy(cfg))


def train_isaac_lab_style(cfg: dict, logs: Path, name: str, env_id: str, wrapper: type | None = None):
    """Train with skrl's ``Runner``, laid out like Isaac Lab's skrl ``train.py``: ``params/agent.yaml``
    beside ``checkpoints/``. Returns ``(run dir, the final checkpoint)``."""
    import yaml

    cfg = copy.deepcopy(cfg)
    cfg["agent"]["experiment"].update(directory=str(logs), experiment_name=name)
    run = logs / name
    (run / "params").mkdir(parents=True)
    (run / "params" / "agent.yaml").write_text(yaml.safe_dump(cfg))
    runner_for(cfg, env_id, wrapper).trainer.train()
    return run, run / "checkpoints" / f"agent_{cfg['trainer']['timesteps']}.pt"


def mlp(input_: str = "OBSERVATIONS", layers: tuple = (32, 32), activations: str = "elu") -> list[dict]:
    """A one-container instantiator network."""
    return [{"name": "net", "input": input_, "layers": list(layers), "activations": activations}]


def gaussian_policy(network: list[dict] | None = None, output: str = "ACTIONS") -> dict:
    """skrl's ``GaussianMixin`` policy as Isaac Lab's skrl configs write it (state-independent log std)."""
    return {
        "class": "GaussianMixin",
        "clip_actions": False,
        "clip_log_std": True,
        "min_log_std": -20.0,
        "max_log_std": 2.0,
        "initial_log_std": 0.0,
        "network": network or mlp(),
        "output": output,
    }


def ppo_cfg(
    policy: dict, *, value_network: list | None = None, timesteps: int = 512, separate: bool = True, **agent
) -> dict:
    """An skrl Runner config for PPO (what Isaac Lab dumps to params/agent.yaml), ``agent`` keys overridden."""
    value = {
        "class": "DeterministicMixin",
        "clip_actions": False,
        "network": value_network or mlp(),
        "output": "ONE",
    }
    return {
        "seed": 42,
        "models": {"separate": separate, "policy": policy, "value": value},
        "memory": {"class": "RandomMemory", "memory_size": -1},
        "agent": {
            "class": "PPO",
            "rollouts": 64,
            "learning_epochs": 4,
            "mini_batches": 2,
            "learning_rate": 1.0e-3,
            "observation_preprocessor": "RunningStandardScaler",
            "observation_preprocessor_kwargs": None,
            "value_preprocessor": "RunningStandardScaler",
            "value_preprocessor_kwargs": None,
            "experiment": {"write_interval": 64, "checkpoint_interval": timesteps},
            **agent,
        },
        "trainer": {
            "class": "SequentialTrainer",
            "timesteps": timesteps,
            "headless": True,
            "disable_progressbar": True,
            "close_environment_at_exit": False,
        },
    }


CATEGORICAL = {
    "class": "CategoricalMixin",
    "unnormalized_log_prob": True,
    "network": mlp(activations="relu"),
    "output": "ACTIONS",
}
MULTIVARIATE = {
    "class": "MultivariateGaussianMixin",
    "clip_actions": False,
    "clip_log_std": True,
    "min_log_std": -20.0,
    "max_log_std": 2.0,
    "initial_log_std": 0.0,
    "network": mlp(layers=(32,), activations="tanh"),
    "output": "2 * tanh(ACTIONS)",
}


def asymmetric_cfg(timesteps: int = 512) -> dict:
    """The asymmetric actor-critic: the critic reads the privileged STATES through its own scaler, the policy
    reads OBSERVATIONS unscaled."""
    policy = {**MULTIVARIATE, "class": "GaussianMixin", "network": mlp()}
    return ppo_cfg(
        policy,
        value_network=mlp("STATES"),
        timesteps=timesteps,
        observation_preprocessor=None,
        state_preprocessor="RunningStandardScaler",
        state_preprocessor_kwargs=None,
    )


#: Isaac Lab's skrl camera configs' shape: a ``features_extractor`` container permutes the NHWC images to NCHW and
#: runs ``conv2d`` layers and ``flatten``, a ``net`` container of linear layers follows; one shared policy/value.
CNN_NETWORK = [
    {
        "name": "features_extractor",
        "input": "permute(OBSERVATIONS, (0, 3, 1, 2))",
        "layers": [
            {"conv2d": {"out_channels": 8, "kernel_size": 3, "stride": 2, "padding": 0}},
            {"conv2d": {"out_channels": 8, "kernel_size": 3, "stride": 1, "padding": 1}},
            "flatten",
        ],
        "activations": "relu",
    },
    {"name": "net", "input": "features_extractor", "layers": [32], "activations": "elu"},
]
#: The kinds in Isaac Lab's layout: (env id, the Runner config for ``timesteps``).
KINDS = {
    "gaussian": ("Pendulum-v1", lambda t: ppo_cfg(gaussian_policy(output="2 * tanh(ACTIONS)"), timesteps=t)),
    "multivariate": ("Pendulum-v1", lambda t: ppo_cfg(MULTIVARIATE, timesteps=t)),
    "categorical": ("CartPole-v1", lambda t: ppo_cfg(CATEGORICAL, timesteps=t)),
    "asymmetric": ("Pendulum-v1", asymmetric_cfg),
    "cnn": (
        "PixelTarget-v0",
        lambda t: ppo_cfg(
            gaussian_policy(CNN_NETWORK), value_network=CNN_NETWORK, separate=False, timesteps=t
        ),
    ),
}
#: The kinds in skrl's own layout, ``PPO_RNN`` (examples/skrl_rnn.py).
RNN_KINDS = ("gru", "lstm")


def privileged_pendulum() -> type:
    """A skrl env wrapper: Pendulum-v1 with a state for the critic, the true angle, the velocity and its
    square (3 values, the size of the observations). Built on call: skrl is imported lazily."""
    import gymnasium
    import numpy as np
    import torch
    from skrl.envs.wrappers.torch.gymnasium_envs import GymnasiumWrapper

    class PrivilegedPendulum(GymnasiumWrapper):
        @property
        def state_space(self):
            return gymnasium.spaces.Box(-np.inf, np.inf, (3,), np.float32)

        def state(self):
            theta, velocity = np.array([env.unwrapped.state for env in self._env.envs]).T
            angle = (theta + np.pi) % (2 * np.pi) - np.pi
            return torch.tensor(np.stack([angle, velocity, velocity**2 / 8], axis=1), dtype=torch.float32)

    return PrivilegedPendulum


def configure(kind: str, timesteps: int = 512) -> tuple[str, dict, type | None]:
    """One Isaac Lab-style kind: its env id, its Runner config (a log every tenth of ``timesteps``, a checkpoint
    every quarter) and the skrl env wrapper it needs (None: skrl's)."""
    if kind == "cnn":
        import pixel_target  # noqa: F401 - registers the env; this folder is on the path when run as a script
    env_id, cfg = KINDS[kind]
    cfg = cfg(timesteps)
    cfg["agent"]["experiment"].update(
        write_interval=max(1, timesteps // 10), checkpoint_interval=max(1, timesteps // 4)
    )
    return env_id, cfg, privileged_pendulum() if kind == "asymmetric" else None


def main() -> None:
    import logging

    import torch
    from skrl import logger  # skrl sets its logger's level when imported: after that

    logger.setLevel(logging.WARNING)  # its INFO lines (the seed) go to stderr in colour

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=[*KINDS, *RNN_KINDS], nargs="?", default="gaussian")
    parser.add_argument("--out", type=Path, default=Path("logs"), help="logs folder to write into [logs]")
    parser.add_argument("--timesteps", type=int, default=1000, help="training timesteps (x 4 envs) [1000]")
    parser.add_argument(
        "--stamp", default=time.strftime("%Y-%m-%d_%H-%M-%S"), help="the run dir's date [now]"
    )
    cli = parser.parse_args()
    torch.set_num_threads(1)
    if cli.kind in RNN_KINDS:
        import skrl_rnn

        name = f"{cli.stamp}_PPO_RNN"
        if (cli.out / "torch" / skrl_rnn.RUNS[cli.kind][0] / name).exists():
            parser.error(f"{name} exists in {cli.out}: give another --stamp or --out")
        run, final = skrl_rnn.train(cli.kind, cli.out, name, cli.timesteps)
        print(f"{cli.kind}: {run} ({final.name})")
        return
    env_id, cfg, wrapper = configure(cli.kind, cli.timesteps)
    logs = cli.out / "skrl" / env_id
    if (logs / f"{cli.stamp}_ppo_torch").exists():
        parser.error(f"{logs / cli.stamp}_ppo_torch exists: give another --stamp or --out")
    run, final = train_isaac_lab_style(cfg, logs, f"{cli.stamp}_ppo_torch", env_id, wrapper)
    print(f"{cli.kind}: {run} ({final.name})")


if __name__ == "__main__":
    main()
