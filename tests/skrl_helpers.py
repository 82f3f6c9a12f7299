"""Real skrl 2.x training for the skrl adapter's tests, and skrl's own ``agent.act`` as the reference.

Every run the tests evaluate is written by skrl itself (``Runner`` + ``SequentialTrainer``, or a
``PPO_RNN`` agent with models in skrl's documented RNN pattern); zoo's returns are compared with the
returns of :class:`SkrlActShim`, skrl's agent loaded from the same checkpoint, episode for episode.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

from helpers import REPO, zoo

from zoo.envs import EnvSpec
from zoo.evaluator import evaluate, single_cpu_thread

# skrl configs and Isaac Lab-style training, one definition with the docs' examples/train_skrl.py
sys.path.insert(0, str(REPO / "examples"))
from train_skrl import (  # noqa: E402, F401
    CATEGORICAL,
    MULTIVARIATE,
    gaussian_policy,
    mlp,
    ppo_cfg,
    runner_for,
    train_isaac_lab_style,
    vec_env,
)


def loaded_agent(cfg: dict, checkpoint: Path, scratch: Path, env_id: str, wrapper: type | None = None):
    """skrl's own agent from ``cfg`` with ``checkpoint`` loaded (trusted: the fixture wrote it); it writes
    nothing into the runs under test."""
    cfg = copy.deepcopy(cfg)
    cfg["agent"]["experiment"].update(directory=str(scratch), write_interval=0, checkpoint_interval=0)
    agent = runner_for(cfg, env_id, wrapper).agent
    agent.load(str(checkpoint))
    agent.enable_training_mode(False)
    return agent


class SkrlActShim:
    """skrl's inference path as a zoo Policy: ``agent.act`` (its preprocessors included), then the action
    skrl's trainer takes in eval: ``mean_actions`` (Gaussian and deterministic mixins), or, for
    ``CategoricalMixin`` (which has none), the argmax of the logits skrl's act computed.

    ``PPO_RNN``: the state ``act`` returns is carried to the next step and zeroed for finished envs,
    which is what ``PPO_RNN.record_transition`` does after every step.
    """

    def __init__(self, agent, observation_space, action_space, categorical: bool = False):
        self.agent, self.observation_space, self.action_space = agent, observation_space, action_space
        self.categorical = categorical
        self.is_recurrent = bool(getattr(agent, "_rnn", False))

    def act(self, obs_batch, state=None, deterministic=True):
        import torch

        with torch.no_grad():
            obs = torch.as_tensor(obs_batch, dtype=torch.float32).reshape(len(obs_batch), -1)
            actions, outputs = self.agent.act(obs, None, timestep=0, timesteps=1)
            if self.is_recurrent:
                self.agent._rnn_initial_states["policy"] = self.agent._rnn_final_states["policy"]
        if self.categorical:
            return outputs["net_output"].argmax(dim=-1).numpy(), state
        return outputs.get("mean_actions", actions).numpy(), state

    def reset(self, done_mask):
        for rnn_state in self.agent._rnn_initial_states["policy"]:
            rnn_state[:, done_mask] = 0


def skrl_returns(agent, env_id: str, episodes: int, num_envs: int, categorical: bool = False) -> list[float]:
    """Episode returns of skrl's own agent, in zoo's evaluator (seed 0, deterministic)."""
    import gymnasium as gym

    env = gym.make(env_id)
    shim = SkrlActShim(agent, env.observation_space, env.action_space, categorical)
    env.close()
    with single_cpu_thread("cpu"):  # training and reference rollouts: the machine is shared
        result = evaluate(
            shim,
            EnvSpec(env_id),
            episodes=episodes,
            num_envs=num_envs,
            seed=0,
            deterministic=True,
            checkpoint="skrl",
            exp_name="skrl_ppo",
            framework="skrl",
            device="cpu",
        )
    return [e.return_ for e in result.episodes]


def zoo_returns(target, out: Path, *args, episodes: int = 10, num_envs: int = 8, env=None) -> list[float]:
    """``zoo eval --deterministic`` (seed 0) returns, after checking eval.json names skrl."""
    result = zoo(
        "eval",
        target,
        "--quiet",
        "--deterministic",
        "--device",
        "cpu",
        "--out",
        out,
        "-n",
        episodes,
        "--num-envs",
        num_envs,
        "--seed",
        0,
        *args,
        env=env,
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["framework"] == "skrl" and data["num_episodes"] == episodes
    return [e["return"] for e in data["episodes"]]
