"""skrl policy kinds beyond the Gaussian MLP: categorical, multivariate Gaussian, asymmetric actor-critic.

One session fixture trains three real skrl 2.x PPO runs through skrl's ``Runner`` (Isaac Lab's layout), as
examples/train_skrl.py's kinds of the same names:
``CategoricalMixin`` on CartPole-v1, ``MultivariateGaussianMixin`` on Pendulum-v1, and an asymmetric
actor-critic on Pendulum-v1 whose critic reads a privileged ``STATES`` vector (its own
``state_preprocessor``, of the observations' size) while the policy reads ``OBSERVATIONS``, unscaled.
zoo's returns are compared with skrl's own ``agent.act`` episode for episode.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from helpers import assert_exports_act_like_checkpoint, zoo
from skrl_helpers import loaded_agent, mlp, skrl_returns, train_isaac_lab_style, zoo_returns
from train_skrl import configure

from zoo.evaluator import single_cpu_thread

EPISODES, NUM_ENVS = 10, 4
NAMES = ("categorical", "multivariate", "asymmetric")  # examples/train_skrl.py's kinds
RUNS = {name: configure(name)[:2] for name in NAMES}  # name: (env id, config)


def _wrapper(name: str) -> type | None:
    return configure(name)[2]


@pytest.fixture(scope="session")
def skrl_kind_runs(tmp_path_factory):
    """``{name: (run dir, checkpoint)}`` for each of RUNS, trained by skrl (512 steps x 4 envs each)."""
    root = tmp_path_factory.mktemp("skrl-kinds")
    runs = {}
    with single_cpu_thread("cpu"):
        for i, (name, (env_id, cfg)) in enumerate(RUNS.items()):
            logs = root / "logs" / "skrl" / env_id
            runs[name] = train_isaac_lab_style(
                cfg, logs, f"2026-12-01_1{i}-00-00_ppo_torch", env_id, _wrapper(name)
            )
    return runs


def _reference(runs, name: str, scratch) -> list[float]:
    env_id, cfg = RUNS[name]
    agent = loaded_agent(cfg, runs[name][1], scratch, env_id, _wrapper(name))
    return skrl_returns(agent, env_id, EPISODES, NUM_ENVS, categorical=name == "categorical")


@pytest.mark.parametrize("name", list(RUNS))
def test_eval_matches_skrl_own_act_episode_for_episode(skrl_kind_runs, name, tmp_path):
    ours = zoo_returns(skrl_kind_runs[name][0], tmp_path / "eval.json", episodes=EPISODES, num_envs=NUM_ENVS)
    theirs = _reference(skrl_kind_runs, name, tmp_path / "skrl")
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)
    assert len(set(np.round(ours, 6))) > 1  # real, differing episodes


def test_check_reports_each_kind_and_the_critics_scaler_as_not_applied(skrl_kind_runs):
    reports = {
        r["run"]["path"]: r
        for r in zoo("check", skrl_kind_runs["categorical"][0].parents[2], "--json").json()
    }
    details = {name: reports[str(run)]["details"] for name, (run, _) in skrl_kind_runs.items()}
    assert all(reports[str(run)]["status"] == "ok" for run, _ in skrl_kind_runs.values())
    assert details["categorical"]["policy"]["kind"] == "categorical"
    assert details["categorical"]["policy"]["sizes"] == [4, 32, 32, 2]
    assert details["multivariate"]["policy"]["kind"] == "multivariate_gaussian"
    assert details["multivariate"]["policy"]["activations"] == "tanh"
    asymmetric = reports[str(skrl_kind_runs["asymmetric"][0])]
    assert (
        asymmetric["details"]["preprocessor"] is None
        and "state_preprocessor" in asymmetric["details"]["modules"]
    )
    assert any("critic's input), not applied" in note for note in asymmetric["notes"])


@pytest.mark.parametrize("name", list(RUNS))
def test_exports_act_like_the_checkpoint(skrl_kind_runs, name, tmp_path):
    sidecars = assert_exports_act_like_checkpoint(
        skrl_kind_runs[name][0], tmp_path, continuous=name != "categorical", episodes=6
    )
    meta = sidecars["onnx"]
    assert meta["framework"] == "skrl" and meta["is_recurrent"] is False
    if name == "categorical":
        assert meta["parity"]["exact"] is True and any("argmax" in step for step in meta["baked"])
    assert meta["normalization_baked"] is (name != "asymmetric")  # the critic's scaler is not the policy's


def test_stochastic_categorical_eval_samples_from_the_seeded_generator(skrl_kind_runs, tmp_path):
    run = skrl_kind_runs["categorical"][0]

    def stochastic(out):
        result = zoo("eval", run, "--quiet", "--stochastic", "-n", 6, "--seed", 1, "--out", tmp_path / out)
        assert result.exit_code == 0, result.stderr
        return [e["return"] for e in yaml.safe_load((tmp_path / out).read_text())["episodes"]]

    first, again = stochastic("a.json"), stochastic("b.json")
    greedy = zoo_returns(run, tmp_path / "greedy.json", "--seed", 1, episodes=6)
    assert first == again and first != greedy


def _with_policy(run, tmp_path, **changes):
    """A copy of ``run``'s agent.yaml with the policy section changed: a model config that lies."""
    cfg = yaml.safe_load((run / "params" / "agent.yaml").read_text())
    cfg["models"]["policy"].update(changes)
    path = tmp_path / "lying.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.parametrize(
    ("name", "changes", "message"),
    [
        (
            "categorical",
            {"class": "GaussianMixin"},
            "(a gaussian policy, as lying.yaml says) acts on a Box action space; CartPole-v1's is Discrete(2)",
        ),
        (
            "multivariate",
            {"class": "CategoricalMixin"},
            "(a categorical policy, as lying.yaml says) acts on a Discrete action space; Pendulum-v1's is Box(1,)",
        ),
        ("asymmetric", {"network": mlp("STATES")}, "the policy reads STATES (skrl 2.x's privileged state)"),
        (
            "categorical",
            {"network": mlp(layers=(64, 32))},
            "declares hidden layers [64, 32], the weights have [32, 32]",
        ),
    ],
)
def test_a_config_that_contradicts_the_run_is_one_error_line(
    skrl_kind_runs, name, changes, message, tmp_path
):
    config = _with_policy(skrl_kind_runs[name][0], tmp_path, **changes)
    result = zoo(
        "eval", skrl_kind_runs[name][0], "--quiet", "--model-config", config, "--out", tmp_path / "x.json"
    )
    assert result.exit_code != 0 and message in result.stderr, result.stderr
    assert (
        "Traceback" not in result.stderr
        and result.stderr.startswith("error: ")
        and len(result.stderr.splitlines()) == 2
    )
    assert not (tmp_path / "x.json").exists()
