"""skrl ``PPO_RNN`` policies (GRU and LSTM): real training, parity with skrl's act, state resets, export.

skrl's recurrent models are classes a user writes; :func:`rnn_models` writes them as skrl's docs
do (``docs/source/snippets/gaussian_model.py``, "GRU"/"LSTM" sequential, in skrl 2.x's names): the
GRU/LSTM reads the (scaled) observations, an ``nn.Sequential`` MLP its output, the state carried in
``inputs["rnn"]``. Two runs: a categorical GRU policy on CartPole-v1 (episodes end at different
steps, so per-env resets matter) and a Gaussian LSTM policy on Pendulum-v1. Such runs have no
``params/agent.yaml``; zoo reads their architecture from the model config a user writes.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from helpers import assert_exports_act_like_checkpoint, zoo
from skrl_helpers import mlp, skrl_returns, vec_env, zoo_returns

from zoo.evaluator import single_cpu_thread

EPISODES, NUM_ENVS, HIDDEN, SEQUENCE = 6, 4, 16, 8
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
            skrl_models.Model.__init__(self, observation_space=observation_space, action_space=action_space,
                                       device=device)  # fmt: skip
            mixin.__init__(self)
            self.num_envs, self.num_layers, self.hidden_size, self.sequence_length = (
                num_envs,
                1,
                HIDDEN,
                SEQUENCE,
            )
            core = nn.LSTM if is_lstm else nn.GRU
            setattr(self, rnn_type, core(input_size=self.num_observations, hidden_size=HIDDEN, num_layers=1,
                                         batch_first=True))  # fmt: skip
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
                states = [s.view(self.num_layers, -1, self.sequence_length, s.shape[-1])[:, :, 0, :].contiguous()
                          for s in states]  # fmt: skip
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
            skrl_models.Model.__init__(self, observation_space=observation_space, action_space=action_space,
                                       device=device)  # fmt: skip
            skrl_models.DeterministicMixin.__init__(self)
            self.net = nn.Sequential(nn.Linear(self.num_observations, 32), nn.ReLU(), nn.Linear(32, 1))

        def compute(self, inputs, role=""):
            return self.net(inputs["observations"]), {}

    return Policy, Value


def _agent(rnn_type: str, env, directory, name: str = "", timesteps: int = 0):
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
    cfg = PPO_CFG(rollouts=64, learning_epochs=2, mini_batches=2, learning_rate=1e-3,
                  observation_preprocessor=RunningStandardScaler,
                  observation_preprocessor_kwargs={"size": env.observation_space, "device": env.device},
                  experiment={"directory": str(directory), "experiment_name": name, "write_interval": 0,
                              "checkpoint_interval": timesteps})  # fmt: skip
    return PPO_RNN(models=models, memory=RandomMemory(memory_size=64, num_envs=env.num_envs, device=env.device),
                   observation_space=env.observation_space, action_space=env.action_space, device=env.device, cfg=cfg)  # fmt: skip


def _model_config(rnn_type: str, **changes) -> dict:
    """What the user writes for zoo: the policy's class, its RNN, the MLP after it and the output."""
    _, mixin, output = RUNS[rnn_type]
    return {"class": mixin, "rnn": {"class": rnn_type.upper(), "num_layers": 1, "hidden_size": HIDDEN},
            "network": mlp(layers=(32,), activations="relu"), "output": output, **changes}  # fmt: skip


@pytest.fixture(scope="session")
def skrl_rnn_runs(tmp_path_factory):
    """``{rnn type: (run dir, checkpoint, model config)}``: skrl's default layout, 512 steps x 4 envs each."""
    from skrl.trainers.torch import SequentialTrainer, SequentialTrainerCfg
    from skrl.utils import set_seed

    root = tmp_path_factory.mktemp("skrl-rnn")
    runs = {}
    with single_cpu_thread("cpu"):
        for rnn_type, (env_id, _, _) in RUNS.items():
            set_seed(42)
            env = vec_env(env_id, NUM_ENVS)
            name = "26-12-01_10-00-00-000000_PPO_RNN"
            agent = _agent(rnn_type, env, root / "runs" / "torch" / env_id, name, timesteps=512)
            cfg = SequentialTrainerCfg(timesteps=512, headless=True, disable_progressbar=True,
                                       close_environment_at_exit=False)  # fmt: skip
            SequentialTrainer(env=env, agents=agent, cfg=cfg).train()
            run = root / "runs" / "torch" / env_id / name
            config = root / f"{env_id}-{rnn_type}.yaml"
            config.write_text(yaml.safe_dump(_model_config(rnn_type)))
            runs[rnn_type] = (run, run / "checkpoints" / "agent_512.pt", config)
    return runs


def _skrl_reference(rnn_type: str, checkpoint, scratch) -> list[float]:
    env_id = RUNS[rnn_type][0]
    with single_cpu_thread("cpu"):
        agent = _agent(rnn_type, vec_env(env_id, NUM_ENVS), scratch)
        agent.init()  # what the trainer calls first: sets up the RNN states (zeros, one per env)
        agent.load(str(checkpoint))
        agent.enable_training_mode(False)
    return skrl_returns(agent, env_id, EPISODES, NUM_ENVS, categorical=rnn_type == "gru")


def _zoo(runs, rnn_type: str, out) -> list[float]:
    run, _, config = runs[rnn_type]
    return zoo_returns(run, out, "--model-config", config, episodes=EPISODES, num_envs=NUM_ENVS)


@pytest.mark.parametrize("rnn_type", list(RUNS))
def test_eval_matches_skrl_own_act_episode_for_episode(skrl_rnn_runs, rnn_type, tmp_path):
    ours = _zoo(skrl_rnn_runs, rnn_type, tmp_path / "eval.json")
    theirs = _skrl_reference(rnn_type, skrl_rnn_runs[rnn_type][1], tmp_path / "skrl")
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)
    assert len(set(np.round(ours, 6))) > 1  # real, differing episodes


def test_dropping_the_state_reset_breaks_parity(skrl_rnn_runs, tmp_path, monkeypatch):
    """Envs 0 and 1 play a second episode: without the reset it starts from the last episode's state.

    The LSTM's continuous Pendulum returns show any change of state (CartPole's argmax may not).
    """
    from zoo.frameworks.skrl.policy import SkrlPolicy

    theirs = _skrl_reference("lstm", skrl_rnn_runs["lstm"][1], tmp_path / "skrl")
    assert _zoo(skrl_rnn_runs, "lstm", tmp_path / "eval.json") == pytest.approx(theirs, abs=1e-5)
    monkeypatch.setattr(SkrlPolicy, "reset", lambda self, done_mask: None)
    stale = _zoo(skrl_rnn_runs, "lstm", tmp_path / "stale.json")
    first, second = [0, 2, 4, 5], [1, 3]  # eval.json lists env 0's episodes, then env 1's, ...
    assert np.take(stale, first) == pytest.approx(np.take(theirs, first), abs=1e-5)  # no reset before them
    assert np.abs(np.take(stale, second) - np.take(theirs, second)).min() > 1e-2


def test_check_reports_the_recurrent_core_and_asks_for_a_model_config(skrl_rnn_runs):
    for rnn_type, (run, _, _) in skrl_rnn_runs.items():
        report = zoo("check", run, "--json").json()[0]
        assert report["status"] == "warning" and "--model-config" in report["hint"], report
        policy = report["details"]["policy"]
        assert policy["rnn"] == {"type": rnn_type, "num_layers": 1, "hidden_size": HIDDEN}
        assert report["run"]["exp_name"] == "skrl_ppo_rnn" and report["details"]["algorithm"] == "PPO_RNN"


@pytest.mark.parametrize("rnn_type", list(RUNS))
def test_exports_carry_the_state_explicitly_and_act_like_the_checkpoint(skrl_rnn_runs, rnn_type, tmp_path):
    run, _, config = skrl_rnn_runs[rnn_type]
    sidecars = assert_exports_act_like_checkpoint(run, tmp_path, "--model-config", str(config), num_envs=3,
                                                  continuous=rnn_type == "lstm", episodes=EPISODES)  # fmt: skip
    meta = sidecars["onnx"]
    assert meta["is_recurrent"] is True and meta["parity"]["steps"] == 64
    recurrent = meta["recurrent"]
    assert (
        recurrent["rnn_type"] == rnn_type
        and recurrent["num_layers"] == 1
        and recurrent["hidden_dim"] == HIDDEN
    )
    expected = ["obs", "h_in", "c_in"] if rnn_type == "lstm" else ["obs", "h_in"]
    assert recurrent["inputs"] == expected
    assert any("zero the state" in note for note in meta["left_to_caller"])


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"rnn": None}, "the policy holds a GRU (gru.*), but"),
        ({"rnn": {"class": "LSTM"}}, "declares a LSTM of 1 layer(s) x 16, the weights hold a GRU of 1 x 16"),
        ({"rnn": {"class": "GRU", "hidden_size": 64}}, "declares a GRU of 1 layer(s) x 64"),
        ({"rnn": {"class": "RNN"}}, "rnn class 'RNN' is not supported (GRU, LSTM)"),
    ],
)
def test_a_model_config_that_contradicts_the_recurrent_weights_is_one_error_line(skrl_rnn_runs, changes, message,
                                                                                 tmp_path):  # fmt: skip
    run = skrl_rnn_runs["gru"][0]
    config = tmp_path / "lying.yaml"
    config.write_text(
        yaml.safe_dump({k: v for k, v in _model_config("gru", **changes).items() if v is not None})
    )
    result = zoo("eval", run, "--quiet", "--model-config", config, "--out", tmp_path / "x.json")
    assert result.exit_code != 0 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 2
