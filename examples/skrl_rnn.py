"""skrl ``PPO_RNN`` runs (GRU and LSTM policies) in skrl's own layout, as skrl's docs write recurrent models.

skrl's recurrent models are classes a user writes; :func:`rnn_models` writes them as skrl's docs do
(``docs/source/snippets/gaussian_model.py``, "GRU"/"LSTM" sequential, in skrl 2.x's names): the GRU/LSTM reads the
(scaled) observations, an ``nn.Sequential`` MLP its output, the state carried in ``inputs["rnn"]``. ``gru`` is a
categorical policy on CartPole-v1 (episodes end at different steps, so per-env resets matter), ``lstm`` a Gaussian
one on Pendulum-v1. skrl's ``SequentialTrainer`` writes them where skrl's agents write by default::

    {out}/torch/{env_id}/{name}/checkpoints/agent_{timesteps}.pt

with no ``params/agent.yaml``: no instantiator config describes such a class, so zoo reads their architecture from
a model config the user writes (docs/frameworks/skrl.md). ``examples/train_skrl.py gru|lstm`` trains them, and
``tests/test_skrl_rnn.py`` imports this module.
"""

from __future__ import annotations

from pathlib import Path

HIDDEN, SEQUENCE = 16, 8
RUNS = {  # rnn type: (env id, policy mixin, output expression)
    "gru": ("CartPole-v1", "CategoricalMixin", "ACTIONS"),
    "lstm": ("Pendulum-v1", "GaussianMixin", "2 * tanh(ACTIONS)"),
}


def rnn_models(rnn_type: str, mixin_name: str, output: str):
    """``(Policy, Value)`` classes in skrl's documented RNN pattern (the value is a plain MLP)."""
    import torch
    from skrl.models import torch as skrl_models
    from torch import nn

    mixin = getattr(skrl_models, mixin_name)
    is_lstm = rnn_type == "lstm"

    class Policy(mixin, skrl_models.Model):
        def __init__(self, observation_space, action_space, device, num_envs):
            skrl_models.Model.__init__(
                self, observation_space=observation_space, action_space=action_space, device=device
            )
            mixin.__init__(self)
            self.num_envs, self.num_layers, self.hidden_size, self.sequence_length = (
                num_envs,
                1,
                HIDDEN,
                SEQUENCE,
            )
            core = nn.LSTM if is_lstm else nn.GRU
            setattr(
                self,
                rnn_type,
                core(input_size=self.num_observations, hidden_size=HIDDEN, num_layers=1, batch_first=True),
            )
            self.net = nn.Sequential(nn.Linear(HIDDEN, 32), nn.ReLU(), nn.Linear(32, self.num_actions))
            if mixin_name == "GaussianMixin":
                self.log_std_parameter = nn.Parameter(torch.zeros(self.num_actions))

        def get_specification(self):
            size = (self.num_layers, self.num_envs, self.hidden_size)
            return {"rnn": {"sequence_length": self.sequence_length, "sizes": [size] * (2 if is_lstm else 1)}}

        def _rnn(self, x, states):
            rnn = getattr(self, rnn_type)
            if is_lstm:
                out, (h, c) = rnn(x, (states[0], states[1]))
                return out, [h, c]
            out, h = rnn(x, states[0])
            return out, [h]

        def compute(self, inputs, role=""):
            observations = inputs["observations"]
            states = inputs["rnn"]
            if self.training:  # sequences of the memory, the state zeroed where an episode ended inside one
                rnn_input = observations.view(-1, self.sequence_length, observations.shape[-1])
                states = [
                    s.view(self.num_layers, -1, self.sequence_length, s.shape[-1])[:, :, 0, :].contiguous()
                    for s in states
                ]
                terminated = inputs.get("terminated")
                if terminated is not None and torch.any(terminated):
                    outputs = []
                    terminated = terminated.view(-1, self.sequence_length)
                    ends = (terminated[:, :-1].any(dim=0).nonzero(as_tuple=True)[0] + 1).tolist()
                    indexes = [0, *ends, self.sequence_length]
                    for i0, i1 in zip(indexes[:-1], indexes[1:], strict=True):
                        out, states = self._rnn(rnn_input[:, i0:i1, :], states)
                        for s in states:
                            s[:, terminated[:, i1 - 1], :] = 0
                        outputs.append(out)
                    rnn_output = torch.cat(outputs, dim=1)
                else:
                    rnn_output, states = self._rnn(rnn_input, states)
            else:  # rollout: one step per env
                rnn_output, states = self._rnn(observations.view(-1, 1, observations.shape[-1]), states)
            x = self.net(torch.flatten(rnn_output, start_dim=0, end_dim=1))
            if output == "2 * tanh(ACTIONS)":
                x = 2 * torch.tanh(x)
            extra = {"rnn": states}
            if mixin_name == "GaussianMixin":
                extra["log_std"] = self.log_std_parameter
            return x, extra

    class Value(skrl_models.DeterministicMixin, skrl_models.Model):
        def __init__(self, observation_space, action_space, device, num_envs):
            skrl_models.Model.__init__(
                self, observation_space=observation_space, action_space=action_space, device=device
            )
            skrl_models.DeterministicMixin.__init__(self)
            self.net = nn.Sequential(nn.Linear(self.num_observations, 32), nn.ReLU(), nn.Linear(32, 1))

        def compute(self, inputs, role=""):
            return self.net(inputs["observations"]), {}

    return Policy, Value


def ppo_rnn_agent(rnn_type: str, env, directory, name: str = "", timesteps: int = 0):
    """A ``PPO_RNN`` agent of :func:`rnn_models` on ``env`` (skrl-wrapped), writing into ``directory/name``
    a checkpoint every ``timesteps`` (none when 0)."""
    from skrl.agents.torch.ppo import PPO_CFG, PPO_RNN
    from skrl.memories.torch import RandomMemory
    from skrl.resources.preprocessors.torch import RunningStandardScaler

    env_id, mixin, output = RUNS[rnn_type]
    policy, value = rnn_models(rnn_type, mixin, output)
    spaces = (env.observation_space, env.action_space)
    models = {
        "policy": policy(*spaces, env.device, env.num_envs),
        "value": value(*spaces, env.device, env.num_envs),
    }
    cfg = PPO_CFG(
        rollouts=64,
        learning_epochs=2,
        mini_batches=2,
        learning_rate=1e-3,
        observation_preprocessor=RunningStandardScaler,
        observation_preprocessor_kwargs={"size": env.observation_space, "device": env.device},
        experiment={
            "directory": str(directory),
            "experiment_name": name,
            "write_interval": 0,
            "checkpoint_interval": timesteps,
        },
    )
    return PPO_RNN(
        models=models,
        memory=RandomMemory(memory_size=64, num_envs=env.num_envs, device=env.device),
        observation_space=env.observation_space,
        action_space=env.action_space,
        device=env.device,
        cfg=cfg,
    )


def train(rnn_type: str, out: Path, name: str, timesteps: int = 512, num_envs: int = 4) -> tuple[Path, Path]:
    """Train one ``PPO_RNN`` run into ``out/torch/{env_id}/{name}`` (seed 42). Returns ``(run dir, checkpoint)``."""
    from skrl.trainers.torch import SequentialTrainer, SequentialTrainerCfg
    from skrl.utils import set_seed
    from train_skrl import vec_env

    env_id = RUNS[rnn_type][0]
    set_seed(42)
    env = vec_env(env_id, num_envs)
    agent = ppo_rnn_agent(rnn_type, env, out / "torch" / env_id, name, timesteps=timesteps)
    cfg = SequentialTrainerCfg(
        timesteps=timesteps, headless=True, disable_progressbar=True, close_environment_at_exit=False
    )
    SequentialTrainer(env=env, agents=agent, cfg=cfg).train()
    run = out / "torch" / env_id / name
    return run, run / "checkpoints" / f"agent_{timesteps}.pt"
