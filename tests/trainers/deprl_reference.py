"""deprl's own deterministic inference on a run: ``deprl.load(path + "/", env)`` and ``agent(obs)`` (its
``test_step``, the Gaussian head's ``loc``), on a batch of one observation as deprl's own test loop
(``custom_test_environment.test_mujoco``) steps its one test env.

Usage: ``deprl_reference.py RUN OUT.json EPISODES SEED``. The env is the one the run's config builds with deprl
(``deprl.environments.Gym('Pendulum-v1', scaled_actions=True)``: tonic's ActionRescaler maps [-1, 1] to the
action bounds). Like zoo's evaluator with one env, the first reset takes SEED and later ones go on from it;
episodes end at termination or after the env's 200 steps. Writes every observation, deprl's action on it, the
action the env receives and each episode's return and length.
"""

from __future__ import annotations

import json
import sys

import deprl
import deprl_oldgym  # noqa: F401  (what the run's config header imports: the env must exist before load)
import numpy as np
import torch


def main() -> None:
    run, out, episodes, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(1)
    env = deprl.environments.Gym("Pendulum-v1", scaled_actions=True)
    agent = deprl.load(run.rstrip("/") + "/", env)  # deprl 0.3.2 needs the trailing slash
    env.seed(seed)
    observations, actions, env_actions, results = [], [], [], []
    for _ in range(episodes):
        obs, total, length, done = env.reset(), 0.0, 0, False
        while not done and length < env.max_episode_steps:
            action = agent(np.asarray(obs, np.float32)[None])[0]  # a batch of one, as deprl's test loop steps
            observations.append(np.asarray(obs, np.float32).tolist())
            actions.append(np.asarray(action, np.float64).tolist())
            sent = env.action(action)
            env_actions.append(np.asarray(sent, np.float64).tolist())
            obs, reward, done, _ = env.step(action)
            total += float(reward)
            length += 1
        results.append({"return": total, "length": length})
    data = {"observations": observations, "actions": actions, "env_actions": env_actions, "episodes": results}
    with open(out, "w") as fh:
        json.dump(data, fh)


if __name__ == "__main__":
    main()
