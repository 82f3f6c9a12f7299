"""``zoo eval --engine onnxruntime``: the policy exported in memory, proven on the run's own observations
before it is used, recorded in eval.json; the default engine stays torch and exact."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import EXAMPLES, save_model, zoo

import zoo as zoo_api
from zoo.errors import ZooError


@pytest.fixture
def runs(tmp_path):
    for src in EXAMPLES.iterdir():
        if src.is_dir():
            shutil.copytree(src, tmp_path / "runs" / src.name, ignore=shutil.ignore_patterns("eval.json"))
    return tmp_path / "runs"


def _run(runs, prefix: str):
    return next(runs.glob(f"{prefix}__*"))


def test_discrete_actions_give_the_torch_episodes_and_eval_json_says_which_engine(runs, tmp_path):
    dqn = _run(runs, "CartPole-v1__dqn")
    torch_json, ort_json = tmp_path / "torch.json", tmp_path / "ort.json"
    zoo_api.evaluate(dqn, settings=zoo_api.EvalSettings(episodes=6, deterministic=True), out=torch_json)
    result = zoo("eval", dqn, "-n", "6", "--deterministic", "--engine", "onnxruntime", "--out", ort_json)
    assert result.exit_code == 0 and "engine onnxruntime" in result.stderr
    ort, exact = json.loads(ort_json.read_text()), json.loads(torch_json.read_text())
    assert ort["episodes"] == exact["episodes"]
    assert ort["settings"]["engine"] == "onnxruntime"
    parity = ort["settings"]["engine_parity"]
    assert parity["exact"] and parity["max_abs_diff"] == 0.0 and parity["observations"] == 128 * 8
    assert "engine" not in exact["settings"]  # the default engine leaves eval.json as it was


def test_continuous_actions_are_within_the_exporters_tolerance_and_say_so(runs):
    td3 = _run(runs, "Pendulum-v1__td3_continuous_action")
    result = zoo_api.evaluate(
        td3,
        settings=zoo_api.EvalSettings(episodes=4, deterministic=True),
        load=zoo_api.LoadOptions(engine="onnxruntime"),
        out=None,
    )
    parity = result.settings["engine_parity"]
    assert 0 <= parity["max_abs_diff"] <= parity["tolerance"] == 1e-5
    exact = zoo_api.evaluate(td3, settings=zoo_api.EvalSettings(episodes=4, deterministic=True), out=None)
    assert [e.length for e in result.episodes] == [e.length for e in exact.episodes]
    assert result.metrics["return_mean"] == pytest.approx(exact.metrics["return_mean"], rel=1e-6)


def test_an_engine_that_does_not_act_like_the_policy_is_refused(runs, tmp_path, monkeypatch):
    """An exporter that wrote another network (here: an untrained dqn) must not reach a single episode."""
    import zoo.exporter as exporter

    dqn = _run(runs, "CartPole-v1__dqn")
    other = save_model(tmp_path / "other" / "dqn.cleanrl_model", "dqn", "CartPole-v1", seed=7)
    wrong = zoo_api.load_policy(other, exp_name="dqn", env_id="CartPole-v1")
    real_export = exporter.export_policy
    monkeypatch.setattr(exporter, "export_policy", lambda policy, **kw: real_export(wrong, **kw))
    with pytest.raises(ZooError, match="does not act like the torch policy"):
        zoo_api.evaluate(
            dqn,
            settings=zoo_api.EvalSettings(episodes=4, deterministic=True),
            load=zoo_api.LoadOptions(engine="onnxruntime"),
            out=tmp_path / "e.json",
        )
    assert not (tmp_path / "e.json").exists()


def test_the_engine_is_refused_where_it_cannot_be_proven(runs, tmp_path):
    dqn = _run(runs, "CartPole-v1__dqn")
    result = zoo("eval", dqn, "--engine", "onnxruntime")  # dqn's registry mode is epsilon-greedy
    assert result.exit_code == 2 and "acts deterministically" in result.stderr
    exported = tmp_path / "dqn.onnx"
    assert zoo("export", dqn, "--out", exported, "-q").exit_code == 0
    result = zoo("eval", exported, "--engine", "onnxruntime")
    assert result.exit_code == 2 and "runs in its own runtime" in result.stderr


def test_a_sweep_with_the_engine_resumes(runs):
    first = zoo_api.evaluate_all(
        runs,
        settings=zoo_api.EvalSettings(episodes=3, deterministic=True),
        load=zoo_api.LoadOptions(engine="onnxruntime"),
        exp_name="dqn",
    )
    assert [o.status for o in first.outcomes] == ["evaluated"]
    again = zoo_api.evaluate_all(
        runs,
        settings=zoo_api.EvalSettings(episodes=3, deterministic=True),
        load=zoo_api.LoadOptions(engine="onnxruntime"),
        exp_name="dqn",
    )
    assert [o.status for o in again.outcomes] == ["skipped"]
    torch = zoo_api.evaluate_all(
        runs, settings=zoo_api.EvalSettings(episodes=3, deterministic=True), exp_name="dqn"
    )
    assert [o.status for o in torch.outcomes] == ["evaluated"]  # another engine, another evaluation
