"""skrl ``PPO_RNN`` policies (GRU and LSTM): real training, parity with skrl's act, state resets, export.

skrl's recurrent models are classes a user writes; examples/skrl_rnn.py writes them as skrl's docs
do, and trains the runs the docs show the same way. Two runs: a categorical GRU policy on CartPole-v1
(episodes end at different steps, so per-env resets matter) and a Gaussian LSTM policy on Pendulum-v1. Such runs have no
``params/agent.yaml``; zoo reads their architecture from the model config a user writes.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from helpers import assert_exports_act_like_checkpoint, zoo
from skrl_helpers import mlp, skrl_returns, vec_env, zoo_returns
from skrl_rnn import HIDDEN, RUNS, ppo_rnn_agent, train

from zoo.evaluator import single_cpu_thread

EPISODES, NUM_ENVS = 6, 4


def _model_config(rnn_type: str, **changes) -> dict:
    """What the user writes for zoo: the policy's class, its RNN, the MLP after it and the output."""
    _, mixin, output = RUNS[rnn_type]
    return {
        "class": mixin,
        "rnn": {"class": rnn_type.upper(), "num_layers": 1, "hidden_size": HIDDEN},
        "network": mlp(layers=(32,), activations="relu"),
        "output": output,
        **changes,
    }


@pytest.fixture(scope="session")
def skrl_rnn_runs(tmp_path_factory):
    """``{rnn type: (run dir, checkpoint, model config)}``: skrl's default layout, 512 steps x 4 envs each."""
    root = tmp_path_factory.mktemp("skrl-rnn")
    runs = {}
    with single_cpu_thread("cpu"):
        for rnn_type, (env_id, _, _) in RUNS.items():
            run, checkpoint = train(
                rnn_type, root / "runs", "26-12-01_10-00-00-000000_PPO_RNN", num_envs=NUM_ENVS
            )
            config = root / f"{env_id}-{rnn_type}.yaml"
            config.write_text(yaml.safe_dump(_model_config(rnn_type)))
            runs[rnn_type] = (run, checkpoint, config)
    return runs


def _skrl_reference(rnn_type: str, checkpoint, scratch) -> list[float]:
    env_id = RUNS[rnn_type][0]
    with single_cpu_thread("cpu"):
        agent = ppo_rnn_agent(rnn_type, vec_env(env_id, NUM_ENVS), scratch)
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
    sidecars = assert_exports_act_like_checkpoint(
        run,
        tmp_path,
        "--model-config",
        str(config),
        num_envs=3,
        continuous=rnn_type == "lstm",
        episodes=EPISODES,
    )
    meta = sidecars["onnx"]
    assert meta["is_recurrent"] is True and meta["parity"]["steps"] == 64
    recurrent = meta["recurrent"]
    assert (
        recurrent["rnn_type"] == rnn_type
        and recurrent["rnn_num_layers"] == 1
        and recurrent["rnn_hidden_dim"] == HIDDEN
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
def test_a_model_config_that_contradicts_the_recurrent_weights_is_one_error_line(
    skrl_rnn_runs, changes, message, tmp_path
):
    run = skrl_rnn_runs["gru"][0]
    config = tmp_path / "lying.yaml"
    config.write_text(
        yaml.safe_dump({k: v for k, v in _model_config("gru", **changes).items() if v is not None})
    )
    result = zoo("eval", run, "--quiet", "--model-config", config, "--out", tmp_path / "x.json")
    assert result.exit_code != 0 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 2
