"""zoo's exported TorchScript policy stepped in deprl's own env, in the trainer venv (gym 0.26, numpy 1.26).

Usage: ``deprl_exported_episodes.py POLICY.ts OUT.json EPISODES SEED``. The env is built as deprl_reference.py
builds it (``deprl.environments.Gym('Pendulum-v1', scaled_actions=True)``), seeded the same way. The exported
module already rescales its actions to the env's bounds, so it steps the env under tonic's ActionRescaler
(``env.unwrapped``'s wrapper chain without it: the rescaler's own ``env``). Writes each episode's return and length.
"""

from __future__ import annotations

import json
import sys

import deprl
import deprl_oldgym  # noqa: F401  (the env the run's config header registers)
import numpy as np
import torch


def main() -> None:
    policy_path, out, episodes, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(1)
    policy = torch.jit.load(policy_path)
    env = deprl.environments.Gym("Pendulum-v1", scaled_actions=True)
    inner = env.env  # below tonic's ActionRescaler: zoo's actions are already in the env's bounds
    env.seed(seed)
    results = []
    for _ in range(episodes):
        obs, total, length, done = env.reset(), 0.0, 0, False
        while not done and length < env.max_episode_steps:
            with torch.no_grad():
                action = policy(torch.as_tensor(np.asarray(obs, np.float32)[None])).numpy()[0]
            obs, reward, done, _ = inner.step(action)
            total += float(reward)
            length += 1
        results.append({"return": total, "length": length})
    with open(out, "w") as fh:
        json.dump({"episodes": results}, fh)


if __name__ == "__main__":
    main()
