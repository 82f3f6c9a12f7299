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
A low-level ``policy.pth`` (tianshou_mujoco_ppo.py) holds weights only: the policy is built as that example builds
it and the weights loaded into it.
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


def high_level(run_dir: str):
    """The high-level API's run: the pickled Algorithm's policy, and env_obs_rms.pkl when the run has one."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the env factory experiment.pkl names
    algorithm = torch.load(os.path.join(run_dir, "policy.pt"), map_location="cpu", weights_only=False)
    rms_path = os.path.join(run_dir, "env_obs_rms.pkl")
    rms = None
    if os.path.exists(rms_path):
        with open(rms_path, "rb") as fh:
            rms = pickle.load(fh)
    return algorithm.policy, rms


def low_level(run_dir: str, env_id: str):
    """A low-level mujoco_ppo.py run: its policy built as that example builds it (Net of Tanh layers, an unbounded
    ContinuousActorProbabilistic, action_scaling with the "clip" bound), the saved weights loaded into it."""
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic
    from torch.distributions import Independent, Normal

    checkpoint = torch.load(os.path.join(run_dir, "policy.pth"), map_location="cpu", weights_only=False)
    state = checkpoint["model"]
    prefix = "policy.actor.preprocess.model.model."
    layers = sorted(
        int(k[len(prefix) :].split(".")[0]) for k in state if k.startswith(prefix) and k.endswith("weight")
    )
    env = gym.make(env_id)
    net = Net(
        state_shape=env.observation_space.shape,
        hidden_sizes=[state[f"{prefix}{i}.weight"].shape[0] for i in layers],
        activation=torch.nn.Tanh,
    )
    actor = ContinuousActorProbabilistic(
        preprocess_net=net, action_shape=env.action_space.shape, unbounded=True
    )
    policy = ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=lambda loc_scale: Independent(Normal(*loc_scale), 1),
        action_scaling=True,
        action_bound_method="clip",
        action_space=env.action_space,
    )
    policy.load_state_dict(
        {k.removeprefix("policy."): v for k, v in state.items() if k.startswith("policy.")}
    )
    return policy, checkpoint["obs_rms"]


def main(run_dir: str, env_id: str, seed: int, episodes: int, out: str) -> None:
    if os.path.exists(os.path.join(run_dir, "policy.pt")):
        policy, rms = high_level(run_dir)
    else:
        policy, rms = low_level(run_dir, env_id)
    policy.eval()
    if hasattr(policy, "deterministic_eval"):
        policy.deterministic_eval = True
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
        "restore_error": restore_error(run_dir)
        if os.path.exists(os.path.join(run_dir, "policy.pt"))
        else None,
    }
    with open(out, "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
