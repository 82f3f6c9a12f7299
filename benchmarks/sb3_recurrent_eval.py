"""RecurrentPPO eval throughput: zoo's rollout loop against SB3's ``evaluate_policy``, side by side.

One RecurrentPPO model (``MlpLstmPolicy``, sb3-contrib's defaults: one LSTM of 256 units for the
actor and one for the critic) is trained briefly and saved with its own ``save``; then, in one run,
interleaved round by round so that machine noise hits every variant alike:

  zoo          ``zoo.load_policy`` (the safe rebuild) stepped by ``zoo.evaluator.rollout`` on a
               gymnasium SyncVectorEnv of N envs, one torch thread: what ``zoo eval --num-envs N`` runs;
  sb3          ``RecurrentPPO.load`` + SB3's ``evaluate_policy`` (which carries ``state`` and
               ``episode_start``) on a DummyVecEnv of the same N envs and episodes, torch's default
               thread count: what an SB3 user runs;
  sb3 1 thread the same with one torch thread, zoo's setting: the loops alone compared.

Every sub-env is wrapped in the same step counter, so the rates count real env steps (zoo's
autoreset steps, which reset an env instead of stepping it, are not counted). Both score the same
episodes (zoo acts as ``model.predict`` does): the mean returns are printed. Target: zoo >= 2x sb3.

    python benchmarks/sb3_recurrent_eval.py [--env CartPole-v1] [--episodes 200] [--num-envs 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from stepcount import counted, rate

import zoo
from zoo.envs import EnvSpec, env_factory
from zoo.evaluator import rollout, single_cpu_thread


def train(env_id: str, folder: Path) -> Path:
    from sb3_contrib import RecurrentPPO

    path = folder / f"ppo_lstm-{env_id}.zip"
    with single_cpu_thread("cpu"):
        model = RecurrentPPO("MlpLstmPolicy", env_id, n_steps=128, batch_size=128, n_epochs=2, seed=0)
        model.learn(1024).save(path)
    return path


def zoo_eval(model_file: Path, env_id: str, num_envs: int, episodes: int) -> tuple[float, list[float]]:
    policy = zoo.load_policy(model_file, env_id=env_id)
    spec = EnvSpec(env_id)
    envs = gym.vector.SyncVectorEnv([counted(env_factory(spec, i)) for i in range(num_envs)])
    try:
        with single_cpu_thread("cpu"):
            return rate(
                lambda: [e.return_ for e in rollout(policy, envs, episodes, seed=0, deterministic=True)]
            )
    finally:
        envs.close()


def sb3_eval(model_file: Path, env_id: str, num_envs: int, episodes: int) -> tuple[float, list[float]]:
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    model = RecurrentPPO.load(model_file, device="cpu")
    venv = DummyVecEnv([counted(lambda: Monitor(gym.make(env_id))) for _ in range(num_envs)])
    venv.seed(0)
    try:
        return rate(
            lambda: evaluate_policy(model, venv, episodes, deterministic=True, return_episode_rewards=True)[0]
        )
    finally:
        venv.close()


def sb3_one_thread(model_file: Path, env_id: str, num_envs: int, episodes: int) -> tuple[float, list[float]]:
    with single_cpu_thread("cpu"):
        return sb3_eval(model_file, env_id, num_envs, episodes)


VARIANTS = {"zoo": zoo_eval, "sb3": sb3_eval, "sb3 1 thread": sb3_one_thread}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="Evaluation environment is not wrapped")
    print(
        f"torch {torch.__version__}, gymnasium {gym.__version__}, default threads {torch.get_num_threads()}, "
        f"{args.num_envs} envs, {args.episodes} episodes"
    )
    rates: dict[str, list[float]] = {name: [] for name in VARIANTS}
    returns: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        model_file = train(args.env, Path(tmp))
        for run in VARIANTS.values():  # warm-up: imports, first forward passes
            run(model_file, args.env, args.num_envs, args.num_envs)
        for _ in range(args.rounds):
            for name, run in VARIANTS.items():
                steps_per_s, returns[name] = run(model_file, args.env, args.num_envs, args.episodes)
                rates[name].append(steps_per_s)
    median = {name: statistics.median(values) for name, values in rates.items()}
    print(f"\nRecurrentPPO on {args.env} (env steps per second, median of {args.rounds} rounds)")
    for name in VARIANTS:
        ratio = "" if name == "zoo" else f"   zoo / {name} = {median['zoo'] / median[name]:.2f}"
        print(f"  {name:13s}: {median[name]:9,.0f}   mean return {np.mean(returns[name]):8.2f}{ratio}")
    print("  target: zoo / sb3 >= 2")


if __name__ == "__main__":
    main()
