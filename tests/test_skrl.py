"""skrl adapter: real skrl 2.x training runs, checked and evaluated by zoo, compared with skrl's own act.

The session fixture trains skrl PPO (with a ``RunningStandardScaler`` observation preprocessor) on
Pendulum-v1 through skrl's ``Runner`` and ``SequentialTrainer``, laid out like Isaac Lab's skrl
``train.py``: ``logs/skrl/{directory}/{time}_ppo_torch/{checkpoints,params/agent.yaml}``.
Other layouts are made by examples/skrl_layouts.py, as the docs make them: skrl's own ``write_checkpoint``
with ``store_separately``; skrl 1.x cannot be installed next to 2.x, so the 1.x checkpoint layout is
the real 2.x checkpoint with its ``observation_preprocessor`` key renamed to 1.x's ``state_preprocessor``.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers import POLICY_TERM, Canary, assert_exports_act_like_checkpoint, zoo
from skrl_helpers import loaded_agent, runner_for, skrl_returns, zoo_returns
from skrl_layouts import bare, v1, write_modules
from train_skrl import configure

TIMESTEPS = 1000
RUN = "2026-11-30_10-00-00_ppo_torch"
SHARED = "2026-11-30_12-00-00_ppo_torch"


def _copy_params(src: Path, dst: Path) -> None:
    shutil.copytree(src / "params", dst / "params")


@pytest.fixture(scope="session")
def skrl_runs(tmp_path_factory):
    """Real skrl experiment dirs: trained (2.x), renamed 1.x layout, per-module files, no config."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        root = tmp_path_factory.mktemp("skrl")
        logs = root / "logs" / "skrl" / "Pendulum-v1"
        cfg = configure("gaussian", TIMESTEPS)[1]  # examples/train_skrl.py's, as the docs train it
        cfg["agent"]["experiment"].update(directory=str(logs), experiment_name=RUN)
        runner = runner_for(cfg, "Pendulum-v1")
        run = logs / RUN
        (run / "params").mkdir(parents=True)  # Isaac Lab's train.py: dump_yaml(params/agent.yaml, agent_cfg)
        (run / "params" / "agent.yaml").write_text(yaml.safe_dump(cfg))
        runner.trainer.train()
        final = run / "checkpoints" / f"agent_{TIMESTEPS}.pt"

        v1_run = logs / f"{RUN}_v1"  # the 1.x layout: observation scaler saved as state_preprocessor
        v1_run.mkdir()
        v1(run, v1_run)

        separate = logs / "2026-11-30_11-00-00_ppo_torch"  # skrl's per-module writer
        _copy_params(run, separate)
        write_modules(runner.agent, separate, TIMESTEPS)

        shared_cfg = copy.deepcopy(cfg)  # Isaac Lab's default: one model for policy and value
        shared_cfg["models"]["separate"] = False
        shared_cfg["trainer"]["timesteps"] = 500
        shared_cfg["agent"]["experiment"]["experiment_name"] = SHARED
        (logs / SHARED / "params").mkdir(parents=True)
        (logs / SHARED / "params" / "agent.yaml").write_text(yaml.safe_dump(shared_cfg))
        runner_for(shared_cfg, "Pendulum-v1").trainer.train()

        bare_run = root / "runs" / "torch" / "25-11-30_10-00-00-000000_PPO"  # skrl's name, no agent.yaml
        bare_run.mkdir(parents=True)
        bare(run, bare_run)
        model_config = root / "pendulum_policy.yaml"
        model_config.write_text(yaml.safe_dump(cfg["models"]["policy"]))
        return {
            "root": root,
            "logs": logs,
            "run": run,
            "v1": v1_run,
            "separate": separate,
            "bare": bare_run,
            "final": final,
            "cfg": cfg,
            "shared_cfg": shared_cfg,
            "model_config": model_config,
        }
    finally:
        torch.set_num_threads(threads)


def _skrl_returns(cfg: dict, checkpoint: Path, scratch: Path) -> list[float]:
    """Episode returns of skrl's own agent loaded from ``checkpoint``, 10 episodes on 8 envs (zoo's defaults)."""
    return skrl_returns(loaded_agent(cfg, checkpoint, scratch, "Pendulum-v1"), "Pendulum-v1", 10, 8)


@pytest.fixture(scope="session")
def skrl_reference(skrl_runs):
    return _skrl_returns(skrl_runs["cfg"], skrl_runs["final"], skrl_runs["root"] / "reference")


def _eval_returns(target, out: Path, *args, env=None) -> list[float]:
    returns = zoo_returns(target, out, *args, env=env)
    assert json.loads(out.read_text())["task"] == "Pendulum-v1"
    return returns


def _check(path, *args):
    return {Path(r["run"]["path"]).name: r for r in zoo("check", path, "--json", *args).json()}


def test_check_reports_algorithm_modules_preprocessor_and_step(skrl_runs):
    reports = _check(skrl_runs["root"])
    main = reports[RUN]
    assert main["status"] == "ok", main
    d = main["details"]
    assert d["algorithm"] == "PPO" and main["run"]["exp_name"] == "skrl_ppo"
    assert (
        d["checkpoint"] == f"agent_{TIMESTEPS}.pt" and d["step"] == TIMESTEPS and d["best"] == "best_agent.pt"
    )
    assert {"agent_250.pt", "agent_500.pt", "best_agent.pt"} <= set(d["checkpoints"])
    assert {"policy", "value", "optimizer", "observation_preprocessor"} <= set(d["modules"])
    assert d["preprocessor"] == {"key": "observation_preprocessor", "generation": "skrl 2.x", "size": 3}
    assert d["policy"]["sizes"] == [3, 32, 32, 1] and d["policy"]["activations"] == "elu"
    assert d["policy"]["output"] == "2 * tanh(ACTIONS)" and d["env_id"] == "Pendulum-v1"
    assert "value" in d["train_return"] and main["run"]["env_id"] == "Pendulum-v1"
    assert reports[f"{RUN}_v1"]["details"]["preprocessor"]["generation"] == "skrl 1.x"
    assert reports["2026-11-30_11-00-00_ppo_torch"]["details"]["layout"] == "per-module"
    assert reports["2026-11-30_11-00-00_ppo_torch"]["details"]["checkpoint"] == f"policy_{TIMESTEPS}.pt"
    assert reports[SHARED]["status"] == "ok" and reports[SHARED]["details"]["policy"]["sizes"] == [
        3,
        32,
        32,
        1,
    ]
    bare = reports["25-11-30_10-00-00-000000_PPO"]
    assert bare["status"] == "warning" and "activation functions unknown" in bare["reason"]
    assert bare["details"]["env_id"] == "Pendulum-v1"  # from params/env.yaml (a gymnasium EnvSpec dump)


def test_eval_matches_skrl_own_act_episode_for_episode(skrl_runs, skrl_reference, tmp_path):
    returns = _eval_returns(skrl_runs["run"], tmp_path / "eval.json")
    assert returns == skrl_reference
    assert np.std(returns) > 0  # real, varied episodes, not a constant


def test_shared_policy_value_model_matches_skrl(skrl_runs, tmp_path):
    shared = skrl_runs["logs"] / SHARED
    reference = _skrl_returns(skrl_runs["shared_cfg"], shared / "checkpoints" / "agent_500.pt", tmp_path)
    assert _eval_returns(shared, tmp_path / "eval.json") == reference


def test_old_generation_and_per_module_checkpoints_give_the_same_returns(skrl_runs, skrl_reference, tmp_path):
    assert _eval_returns(skrl_runs["v1"], tmp_path / "v1.json") == skrl_reference
    assert _eval_returns(skrl_runs["separate"], tmp_path / "sep.json") == skrl_reference


def test_eval_without_agent_config_needs_a_model_config(skrl_runs, skrl_reference, tmp_path):
    bare = skrl_runs["bare"]
    failed = zoo("eval", bare, "--quiet", "--env-id", "Pendulum-v1", "--out", tmp_path / "x.json")
    assert failed.exit_code == 1 and "activation functions are unknown" in failed.stderr
    assert "Traceback" not in failed.stderr
    returns = _eval_returns(
        bare, tmp_path / "bare.json", "--env-id", "Pendulum-v1", "--model-config", skrl_runs["model_config"]
    )
    assert returns == skrl_reference


def test_eval_takes_the_env_id_check_reports_from_params_env_yaml(skrl_runs, tmp_path):
    """The bare run's name says no env; check and eval both read it from params/env.yaml."""
    bare = skrl_runs["bare"]
    assert _check(bare)[bare.name]["details"]["env_id"] == "Pendulum-v1"
    returns = _eval_returns(bare, tmp_path / "bare.json", "--model-config", skrl_runs["model_config"])
    assert len(returns) == 10  # _eval_returns checked the task: Pendulum-v1


def test_model_config_that_contradicts_the_weights_is_one_error_line(skrl_runs, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"layers": [64, 64], "activations": "relu"}))
    result = zoo(
        "eval",
        skrl_runs["bare"],
        "--quiet",
        "--env-id",
        "Pendulum-v1",
        "--out",
        tmp_path / "x.json",
        "--model-config",
        bad,
    )
    assert (
        result.exit_code == 1
        and "declares hidden layers [64, 64], the weights have [32, 32]" in result.stderr
    )
    bad.write_text(yaml.safe_dump({"activations": "__import__('os').system('true')"}))
    result = zoo("eval", skrl_runs["bare"], "--quiet", "--env-id", "Pendulum-v1", "--model-config", bad)
    assert result.exit_code == 1 and "is not one of elu" in result.stderr


def test_planted_pickle_in_a_checkpoint_is_refused_and_never_runs(skrl_runs, tmp_path):
    import torch

    run = tmp_path / "logs" / "skrl" / "Pendulum-v1" / RUN
    _copy_params(skrl_runs["run"], run)
    (run / "checkpoints").mkdir()
    canary = tmp_path / "canary"
    modules = torch.load(skrl_runs["final"], weights_only=True)
    modules["observation_preprocessor"]["payload"] = Canary(canary)
    torch.save(modules, run / "checkpoints" / "agent_2000.pt")
    report = _check(run)[RUN]
    assert report["status"] == "error" and "unsafe pickle" in report["reason"]
    assert report["details"]["dangerous_globals"] == ["posix.system"]
    result = zoo("eval", run, "--quiet", "--out", tmp_path / "eval.json")
    assert result.exit_code == 3 and "unsafe pickle" in result.stderr
    assert not canary.exists() and not (tmp_path / "eval.json").exists()


def test_a_python_tag_in_params_yaml_is_an_error_naming_the_key(skrl_runs, tmp_path):
    run = tmp_path / "logs" / "skrl" / "Pendulum-v1" / RUN
    shutil.copytree(skrl_runs["run"], run)
    with (run / "params" / "env.yaml").open("w") as fh:
        fh.write(
            "sim:\n  dt: !!python/tuple [0.01]\nevents: {reset: !!python/object/new:subprocess.Popen [[ls]]}\n"
        )
    report = _check(run)[RUN]
    assert report["status"] == "error" and report["reason"] == (
        "params/env.yaml: events.reset is tagged !!python/object/new:subprocess.Popen (line 3): a YAML loader "
        "that builds Python tags, such as rl_zoo3's yaml.UnsafeLoader, builds a subprocess.Popen object "
        "(running its class's code)"
    ), report


def test_discovery_leaves_other_frameworks_alone(skrl_runs, tmp_path):
    from zoo.frameworks import get_adapter

    discover = get_adapter("skrl").discover

    rsl = tmp_path / "logs" / "rsl_rl" / "anymal" / "2026-11-30_10-00-00"
    rsl.mkdir(parents=True)
    shutil.copy(skrl_runs["final"], rsl / "model_100.pt")  # rsl_rl's name, in the run dir itself
    (rsl / "checkpoints").mkdir()
    shutil.copy(skrl_runs["final"], rsl / "checkpoints" / "model_200.pt")
    cleanrl = tmp_path / "runs" / "Pendulum-v1__ppo_continuous_action__1__1700000000"
    cleanrl.mkdir(parents=True)
    (cleanrl / "ppo_continuous_action.cleanrl_model").write_bytes(b"")
    assert list(discover(tmp_path)) == []
    found = list(discover(skrl_runs["run"] / "checkpoints" / "best_agent.pt"))
    assert found[0].model_file.name == "best_agent.pt" and found[0].path == skrl_runs["run"]


def test_exports_bake_the_scaler_and_score_like_the_checkpoint(skrl_runs, tmp_path):
    sidecars = assert_exports_act_like_checkpoint(skrl_runs["run"], tmp_path, continuous=True, episodes=6)
    for meta in sidecars.values():
        assert meta["framework"] == "skrl" and meta["normalization_baked"] is True
        assert meta["normalization"]["kind"] == "skrl_running_standard_scaler"
        assert meta["normalization"]["clip_threshold"] == 5.0 and meta["normalization"]["epsilon"] == 1e-8
        assert meta["obs_groups"] == {"policy": {"start": 0, "dim": 3, "shape": [3], "terms": [POLICY_TERM]}}
        assert any("unclipped" in note for note in meta["left_to_caller"])


def test_export_of_a_run_without_config_takes_the_model_config(skrl_runs, tmp_path):
    args = ("--env-id", "Pendulum-v1", "--model-config", str(skrl_runs["model_config"]))
    assert_exports_act_like_checkpoint(skrl_runs["bare"], tmp_path, *args, continuous=True, episodes=4)


def test_export_that_loses_the_scaler_is_refused_and_leaves_nothing(skrl_runs, tmp_path, monkeypatch):
    from zoo.frameworks.skrl.policy import SkrlPolicy

    real = SkrlPolicy.export_spec

    def without_scaler(self):  # a test double of the export wrapper whose normalizer went missing
        spec = real(self)
        spec.module.network.normalize = lambda x: x
        return spec

    monkeypatch.setattr(SkrlPolicy, "export_spec", without_scaler)
    for suffix in (".onnx", ".ts"):
        result = zoo("export", skrl_runs["run"], "--out", tmp_path / f"policy{suffix}")
        assert result.exit_code == 1 and "parity check failed" in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == []
