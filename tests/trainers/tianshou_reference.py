"""Tianshou's own deterministic inference on a high-level API run (run in the trainer venv, no zoo).

``python tianshou_reference.py RUN_DIR ENV_ID SEED EPISODES OUT_JSON`` writes, for episodes i = 0..EPISODES-1 on
``gymnasium.make(ENV_ID)`` reset with seed SEED + i (what zoo's evaluator gives sub-env i with ``--seed SEED
--num-envs EPISODES``): each episode's return and length, every raw observation, and Tianshou's action for it;
then the observations of random-action rollouts with the same seeds (states the policy's own episodes do not
reach), with Tianshou's action for each.

The actions are Tianshou's: ``policy.compute_action`` (forward, then ``map_action``) on the observation normalized
by the run's ``RunningMeanStd.norm`` (``env_obs_rms.pkl``, what the run's ``VectorEnvNormObs`` applies), with
``deterministic_eval = True`` (Tianshou's default is False: its evaluation samples) and the policy in eval mode.

Tianshou's own restore (``Experiment.from_directory(...).create_experiment_world()``, whose ``PolicyPersistence``
calls ``torch.load`` without ``weights_only``) fails under torch >= 2.6: the error is written as ``restore_error``.
The reference therefore loads the object it trusts (written by tianshou_train.py) with ``weights_only=False``.
"""

from __future__ import annotations

import json
import os
import pickle
import sys

import gymnasium as gym
import numpy as np
import torch

torch.set_num_threads(1)


def restore_error(run_dir: str) -> str | None:
    from tianshou.highlevel.experiment import Experiment

    try:
        experiment = Experiment.from_directory(run_dir, restore_policy=True)
        experiment.config.train = False
        experiment.config.watch = False
        experiment.config.persistence_enabled = False
        experiment.create_experiment_world(raise_error_on_dirname_collision=False)
    except Exception as exc:  # noqa: BLE001 - the failure is what is recorded
        lines = [line for line in str(exc).splitlines() if "Unsupported global" in line]
        return (lines or [f"{type(exc).__name__}: {exc}"])[0].strip()
    return None


def main(run_dir: str, env_id: str, seed: int, episodes: int, out: str) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the env factory experiment.pkl names
    algorithm = torch.load(os.path.join(run_dir, "policy.pt"), map_location="cpu", weights_only=False)
    policy = algorithm.policy
    policy.eval()
    if hasattr(policy, "deterministic_eval"):
        policy.deterministic_eval = True
    rms_path = os.path.join(run_dir, "env_obs_rms.pkl")
    rms = None
    if os.path.exists(rms_path):
        with open(rms_path, "rb") as fh:
            rms = pickle.load(fh)
    found = []
    observations, actions = [], []
    with torch.no_grad():
        for i in range(episodes):
            env = gym.make(env_id)
            obs, _ = env.reset(seed=seed + i)
            total, length = 0.0, 0
            while True:
                seen = rms.norm(obs) if rms is not None else obs
                act = policy.compute_action(seen)
                observations.append(np.asarray(obs, dtype=np.float32).tolist())
                actions.append(np.asarray(act).tolist())
                obs, reward, terminated, truncated, _ = env.step(act)
                total += float(reward)
                length += 1
                if terminated or truncated:
                    break
            env.close()
            found.append({"return": total, "length": length})
        # observations off the policy's own path: random-action rollouts with the same seeds, Tianshou's action on each
        for i in range(episodes):
            env = gym.make(env_id)
            obs, _ = env.reset(seed=seed + i)
            env.action_space.seed(seed + i)
            for _ in range(50):
                seen = rms.norm(obs) if rms is not None else obs
                observations.append(np.asarray(obs, dtype=np.float32).tolist())
                actions.append(np.asarray(policy.compute_action(seen)).tolist())
                obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
                if terminated or truncated:
                    break
            env.close()
    result = {
        "episodes": found,
        "observations": observations,
        "actions": actions,
        "restore_error": restore_error(run_dir),
    }
    with open(out, "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
