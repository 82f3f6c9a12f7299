"""rl_games 1.6.5's own deterministic inference on real observations, episode by episode.

    python rl_games_play.py CONFIG.yaml CHECKPOINT.pth ENV_ID OUT.json SEED [SEED ...]

The player is rl_games' own (``Runner.create_player()``: ``PpoPlayerContinuous`` / ``PpoPlayerDiscrete``), restored
with its own ``restore`` (``torch_ext.load_checkpoint``, which unpickles the file: this runs only on files this test
made). Its ``run()`` resets the env without a seed, so the episodes are driven here: one gymnasium env per seed,
``reset(seed=SEED)``, then ``player.get_action(player.obs_to_torch(obs), is_deterministic=True)`` each step until the
episode ends. OUT.json holds each episode's observations, actions, return and length.
"""

from __future__ import annotations

import json
import sys

import gymnasium as gym
import numpy as np
import rl_games_vecenv
import torch
import yaml
from rl_games.torch_runner import Runner


def main(config: str, checkpoint: str, env_id: str, out: str, seeds: list[int]) -> None:
    torch.set_num_threads(1)
    rl_games_vecenv.register()
    with open(config) as f:
        cfg = yaml.safe_load(f)
    runner = Runner()
    runner.load(cfg)
    player = runner.create_player()
    player.restore(checkpoint)
    player.has_batch_dimension = False
    episodes = []
    for seed in seeds:
        env = gym.make(env_id)
        obs, _ = env.reset(seed=seed)
        observations, actions, total, done = [], [], 0.0, False
        while not done:
            action = player.get_action(player.obs_to_torch(obs), is_deterministic=True)
            action = action.cpu().numpy()
            observations.append(np.asarray(obs, dtype=np.float32).tolist())
            actions.append(action.tolist())
            step_action = (
                int(action) if isinstance(env.action_space, gym.spaces.Discrete) else action.reshape(-1)
            )
            obs, reward, terminated, truncated, _ = env.step(step_action)
            total += float(reward)
            done = terminated or truncated
        env.close()
        episodes.append(
            {"seed": seed, "return": total, "length": len(actions), "obs": observations, "actions": actions}
        )
    with open(out, "w") as f:
        json.dump({"player": type(player).__name__, "episodes": episodes}, f)


if __name__ == "__main__":
    main(*sys.argv[1:5], [int(s) for s in sys.argv[5:]])
