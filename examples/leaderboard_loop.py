"""Score an ``agent.pt`` the way the Hugging Face Open RL Leaderboard does: torch, numpy and gymnasium only.

A user who downloads a release needs no zoo and no training framework to check what the leaderboard will
say of it::

    python examples/leaderboard_loop.py agent.pt CartPole-v1 [--episodes 50] [--seed 0] [--json]
    python examples/leaderboard_loop.py agent.pt BreakoutNoFrameskip-v4   # needs ale-py

or from Python, ``evaluate("agent.pt", "CartPole-v1", episodes=50, seed=0)`` -> ``[(return, length), ...]``.

What this follows. The leaderboard's evaluator is ``src/evaluation.py`` of the Hugging Face Space
``open-rl-leaderboard/leaderboard`` (later ``open-rl-leaderboard/backend``); its about page states the
contract: a public model repo holding ``agent.pt``, tagged ``reinforcement-learning`` and with the env id,
scored on 50 episodes, Atari as ``*NoFrameskip-v4`` behind the standard preprocessing. Its loop builds
``gym.vector.SyncVectorEnv([make(env_id) for _ in range(1)])``, calls ``envs.reset()``, then until 50
episodes have ended steps ``envs.step(agent(torch.tensor(observations)).numpy())`` (one env: a batch of one
raw observation in the env's dtype, the actions' first row stepped; the parts of it read for this script show
no ``torch.no_grad()`` around the call, and none is added here: an agent whose actions require grad fails
``.numpy()``) and reads each episode's return from
``RecordEpisodeStatistics``, the first wrapper over ``gym.make``. For Atari ids its ``make`` adds, in order,
no-op reset (up to 30), max-and-skip 4, episodic life, fire reset (when the game has FIRE), reward clipping,
84x84 resize, grayscale and a stack of 4 frames: CleanRL's Atari stack, which zoo's ``atari`` preset also
builds. The score is therefore the raw, unclipped return of a full game (all lives), and an episode's length
counts ALE frames (4 per agent step), because ``RecordEpisodeStatistics`` sits under the frame skip.

Here, one env is stepped without the vector wrapper, with the same calls in the same order: the one
autoreset of a vector env is an ``env.reset()``, which, after a lost life, ``EpisodicLife`` turns into a
no-op step that goes on with the game. Two additions, both of which the leaderboard's loop lacks:

- ``--seed S`` seeds the first reset (``reset(seed=S)``; later resets go on from that seed, as a vector env's
  autoresets do), so a score can be reproduced and compared episode for episode with ``zoo eval --num-envs 1
  --seed S``. The leaderboard passes no seed.
- A recurrent ``agent.pt`` (one with a ``reset()`` method: zoo's keeps its state inside) is reset at every
  env reset, as zoo's evaluator resets a recurrent policy's state. The leaderboard calls nothing but
  ``forward``, so there such an agent carries its state from one episode into the next.

Gymnasium has the frame skip, resize, grayscale and frame stack wrappers (used below); neither gymnasium nor
ale-py has no-op reset, episodic life or fire reset, so those three are written here as
Stable-Baselines3's ``atari_wrappers`` (the leaderboard's and CleanRL's source) define them. Reward clipping
is left out: it changes neither the actions nor the unclipped score.
"""

from __future__ import annotations

import argparse
import json

import gymnasium as gym
import numpy as np
import torch

#: Episodes the leaderboard scores an agent on.
NUM_EPISODES = 50


class NoopReset(gym.Wrapper):
    """On reset, 1 to ``noop_max`` NOOP steps (drawn from the env's own generator)."""

    def __init__(self, env: gym.Env, noop_max: int = 30):
        super().__init__(env)
        self.noop_max = noop_max

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        for _ in range(self.unwrapped.np_random.integers(1, self.noop_max + 1)):
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info


class EpisodicLife(gym.Wrapper):
    """A lost life ends the episode (``terminated``); the reset after it goes on with the game (one NOOP)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.lives = 0
        self.game_over = True

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = terminated or truncated
        lives = self.unwrapped.ale.lives()
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs):
        if self.game_over:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        self.lives = self.unwrapped.ale.lives()
        return obs, info


class FireReset(gym.Wrapper):
    """On reset, FIRE then action 2, for the games that wait for FIRE to start."""

    def reset(self, **kwargs):
        self.env.reset(**kwargs)
        for action in (1, 2):
            obs, _, terminated, truncated, _ = self.env.step(action)
            if terminated or truncated:
                self.env.reset(**kwargs)
        return obs, {}


def is_atari(env_id: str) -> bool:
    return env_id.endswith("NoFrameskip-v4")


def make_env(env_id: str) -> gym.Env:
    """``gym.make(env_id)`` under the leaderboard's wrappers: episode statistics first, then Atari's stack."""
    if is_atari(env_id):
        import ale_py

        gym.register_envs(ale_py)
    env = gym.wrappers.RecordEpisodeStatistics(gym.make(env_id))
    if is_atari(env_id):
        env = NoopReset(env, noop_max=30)
        env = gym.wrappers.MaxAndSkipObservation(env, skip=4)
        env = EpisodicLife(env)
        if "FIRE" in env.unwrapped.get_action_meanings():
            env = FireReset(env)
        env = gym.wrappers.ResizeObservation(env, (84, 84))
        env = gym.wrappers.GrayscaleObservation(env)
        env = gym.wrappers.FrameStackObservation(env, 4)
    return env


def evaluate(
    agent_path: str,
    env_id: str,
    episodes: int = NUM_EPISODES,
    seed: int | None = None,
    max_steps: int = 10_000_000,
) -> list[tuple[float, int]]:
    """``(return, length)`` of each of ``episodes`` episodes of ``agent_path`` on ``env_id``, in order.

    ``seed`` seeds the first reset; ``max_steps`` bounds the agent steps in all (an agent that never ends an
    episode stops the loop with an error instead of hanging)."""
    agent = torch.jit.load(agent_path)
    recurrent = hasattr(agent, "reset")
    env = make_env(env_id)
    results: list[tuple[float, int]] = []
    try:
        obs, _ = env.reset(seed=seed)
        if recurrent:
            agent.reset()
        for _ in range(max_steps):
            action = agent(torch.tensor(np.array([obs]))).numpy()[0]  # the leaderboard's call, as it is
            obs, _, terminated, truncated, info = env.step(action)
            if not (terminated or truncated):
                continue
            if "episode" in info:  # a whole game: a lost life alone ends no episode here
                results.append((float(info["episode"]["r"]), int(info["episode"]["l"])))
                if len(results) == episodes:
                    return results
            obs, _ = env.reset()
            if recurrent:
                agent.reset()
    finally:
        env.close()
    raise RuntimeError(f"{len(results)} of {episodes} episodes ended within {max_steps} steps")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agent", help="the agent.pt (TorchScript)")
    parser.add_argument("env_id", help="the gymnasium env id (Atari: *NoFrameskip-v4)")
    parser.add_argument("--episodes", type=int, default=NUM_EPISODES, help=f"episodes [{NUM_EPISODES}]")
    parser.add_argument("--seed", type=int, help="seed of the first reset [none, as the leaderboard]")
    parser.add_argument("--json", action="store_true", help="print the episodes as JSON")
    cli = parser.parse_args()
    results = evaluate(cli.agent, cli.env_id, cli.episodes, cli.seed)
    if cli.json:
        print(json.dumps([{"return": r, "length": n} for r, n in results]))
        return
    for i, (r, n) in enumerate(results):
        print(f"episode {i}: return {r:.2f}, length {n}")
    returns = [r for r, _ in results]
    print(f"mean return {np.mean(returns):.2f} +/- {np.std(returns):.2f} over {len(results)} episodes")


if __name__ == "__main__":
    main()
