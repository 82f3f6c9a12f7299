"""Train a small, real Stable-Baselines3 (or sb3-contrib) model and save it as SB3 saves one (``model.save``).

zoo's docs show its SB3 support on such files: a lone ``.zip`` somewhere (``models/``, ``hub/``), which zoo
reads without rl_zoo3's run folder around it. For rl_zoo3's layout (``logs/ppo/CartPole-v1_1/`` with its
``config.yml`` and ``args.yml``), run rl_zoo3's own trainer instead, for example
``python -m rl_zoo3.train --algo ppo --env CartPole-v1 -n 2048 -f logs --seed 1``.

    python examples/train_sb3.py ALGO ENV_ID [--steps 512] [--seed 1] [--out models/ALGO-ENV_ID.zip] [--normalize]

``ALGO`` is rl_zoo3's name: ``a2c``, ``ddpg``, ``dqn``, ``ppo``, ``sac``, ``td3`` (stable-baselines3) or
``ars``, ``crossq``, ``ppo_lstm`` (RecurrentPPO), ``ppo_mask`` (MaskablePPO: the env must give
``action_masks()``), ``qrdqn``, ``tqc``, ``trpo`` (sb3-contrib). The policy is ``MlpPolicy`` (``MlpLstmPolicy``
for ``ppo_lstm``) with SB3's defaults; a few hundred steps are far from solving any task, but the file is SB3's
own. ``--normalize`` trains behind SB3's ``VecNormalize`` and saves its statistics beside the zip as
``{stem}_vecnormalize.pkl``, the name zoo looks for first beside a model (and SB3's ``VecNormalize.load`` reads).
Seeded, on one torch thread. It needs the ``sb3`` extra (and ``sb3-contrib`` for its algorithms).
"""

from __future__ import annotations

import argparse
from pathlib import Path

ALGOS = {  # rl_zoo3's name: (module, class)
    "a2c": ("stable_baselines3", "A2C"),
    "ddpg": ("stable_baselines3", "DDPG"),
    "dqn": ("stable_baselines3", "DQN"),
    "ppo": ("stable_baselines3", "PPO"),
    "sac": ("stable_baselines3", "SAC"),
    "td3": ("stable_baselines3", "TD3"),
    "ars": ("sb3_contrib", "ARS"),
    "crossq": ("sb3_contrib", "CrossQ"),
    "ppo_lstm": ("sb3_contrib", "RecurrentPPO"),
    "ppo_mask": ("sb3_contrib", "MaskablePPO"),
    "qrdqn": ("sb3_contrib", "QRDQN"),
    "tqc": ("sb3_contrib", "TQC"),
    "trpo": ("sb3_contrib", "TRPO"),
}
#: Settings that let a few hundred steps train at all (the off-policy algorithms start learning after 100).
SHORT = {
    "dqn": {"learning_starts": 100},
    "qrdqn": {"learning_starts": 100},
    "sac": {"learning_starts": 100},
    "td3": {"learning_starts": 100},
    "ddpg": {"learning_starts": 100},
    "tqc": {"learning_starts": 100},
    "crossq": {"learning_starts": 100},
    "ppo": {"n_steps": 128},
    "ppo_lstm": {"n_steps": 128},
    "ppo_mask": {"n_steps": 128},
    "trpo": {"n_steps": 128},
}


def train(algo: str, env_id: str, steps: int, seed: int, out: Path, normalize: bool = False) -> Path:
    """Train ``algo`` on ``env_id`` for ``steps`` steps and ``model.save`` it to ``out`` (a ``.zip``); with
    ``normalize``, behind ``VecNormalize``, whose statistics go to ``{out stem}_vecnormalize.pkl``."""
    import importlib

    import torch

    module, name = ALGOS[algo]
    cls = getattr(importlib.import_module(module), name)
    torch.set_num_threads(1)
    policy = "MlpLstmPolicy" if algo == "ppo_lstm" else "MlpPolicy"
    env = env_id
    if normalize:
        from stable_baselines3.common.env_util import make_vec_env
        from stable_baselines3.common.vec_env import VecNormalize

        env = VecNormalize(make_vec_env(env_id, n_envs=1, seed=seed))
    model = cls(policy, env, seed=seed, device="cpu", **SHORT.get(algo, {}))
    model.learn(total_timesteps=steps)
    out.parent.mkdir(parents=True, exist_ok=True)
    model.save(out)
    if normalize:
        env.save(out.with_name(f"{out.stem}_vecnormalize.pkl"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algo", choices=sorted(ALGOS))
    parser.add_argument("env_id")
    parser.add_argument("--steps", type=int, default=512, help="training steps [512]")
    parser.add_argument("--seed", type=int, default=1, help="training seed [1]")
    parser.add_argument("--out", type=Path, help="the .zip to write [models/ALGO-ENV_ID.zip]")
    parser.add_argument("--normalize", action="store_true", help="train behind VecNormalize")
    cli = parser.parse_args()
    out = cli.out or Path("models") / f"{cli.algo}-{cli.env_id}.zip"
    if out.suffix != ".zip":
        parser.error(f"--out {out}: SB3 saves a .zip")
    print(f"{cli.algo}: {train(cli.algo, cli.env_id, cli.steps, cli.seed, out, cli.normalize)}")


if __name__ == "__main__":
    main()
