"""Real skrl 2.x training for the skrl adapter's tests, and skrl's own ``agent.act`` as the reference.

Every run the tests evaluate is written by skrl itself (``Runner`` + ``SequentialTrainer``, or a
``PPO_RNN`` agent with models in skrl's documented RNN pattern); zoo's returns are compared with the
returns of :class:`SkrlActShim`, skrl's agent loaded from the same checkpoint, episode for episode.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml
from helpers import zoo

from zoo.envs import EnvSpec
from zoo.evaluator import evaluate, single_cpu_thread


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
    cfg = copy.deepcopy(cfg)
    cfg["agent"]["experiment"].update(directory=str(logs), experiment_name=name)
    run = logs / name
    (run / "params").mkdir(parents=True)
    (run / "params" / "agent.yaml").write_text(yaml.safe_dump(cfg))
    runner_for(cfg, env_id, wrapper).trainer.train()
    return run, run / "checkpoints" / f"agent_{cfg['trainer']['timesteps']}.pt"


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
        result = evaluate(shim, EnvSpec(env_id), episodes=episodes, num_envs=num_envs, seed=0, deterministic=True,
                          checkpoint="skrl", exp_name="skrl_ppo", framework="skrl", device="cpu")  # fmt: skip
    return [e.return_ for e in result.episodes]


def zoo_returns(target, out: Path, *args, episodes: int = 10, num_envs: int = 8, env=None) -> list[float]:
    """``zoo eval --deterministic`` (seed 0) returns, after checking eval.json names skrl."""
    result = zoo("eval", target, "--quiet", "--deterministic", "--device", "cpu", "--out", out,
                 "-n", episodes, "--num-envs", num_envs, "--seed", 0, *args, env=env)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["framework"] == "skrl" and data["num_episodes"] == episodes
    return [e["return"] for e in data["episodes"]]


def mlp(input_: str = "OBSERVATIONS", layers: tuple = (32, 32), activations: str = "elu") -> list[dict]:
    """A one-container instantiator network."""
    return [{"name": "net", "input": input_, "layers": list(layers), "activations": activations}]


def gaussian_policy(network: list[dict] | None = None, output: str = "ACTIONS") -> dict:
    """skrl's ``GaussianMixin`` policy as Isaac Lab's skrl configs write it (state-independent log std)."""
    return {"class": "GaussianMixin", "clip_actions": False, "clip_log_std": True, "min_log_std": -20.0,
            "max_log_std": 2.0, "initial_log_std": 0.0, "network": network or mlp(), "output": output}  # fmt: skip


def ppo_cfg(policy: dict, *, value_network: list | None = None, timesteps: int = 512, separate: bool = True,
            **agent) -> dict:  # fmt: skip
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
            "class": "PPO", "rollouts": 64, "learning_epochs": 4, "mini_batches": 2, "learning_rate": 1.0e-3,
            "observation_preprocessor": "RunningStandardScaler", "observation_preprocessor_kwargs": None,
            "value_preprocessor": "RunningStandardScaler", "value_preprocessor_kwargs": None,
            "experiment": {"write_interval": 64, "checkpoint_interval": timesteps}, **agent,
        },
        "trainer": {"class": "SequentialTrainer", "timesteps": timesteps, "headless": True,
                    "disable_progressbar": True, "close_environment_at_exit": False},
    }  # fmt: skip
