"""skrl adapter: real skrl 2.x training runs, checked and evaluated by zoo, compared with skrl's own act.

The session fixture trains skrl PPO (with a ``RunningStandardScaler`` observation preprocessor) on
Pendulum-v1 through skrl's ``Runner`` and ``SequentialTrainer``, laid out like Isaac Lab's skrl
``train.py``: ``logs/skrl/{directory}/{time}_ppo_torch/{checkpoints,params/agent.yaml}``.
Other layouts are written by skrl itself from the trained agent: ``write_checkpoint`` with
``store_separately``. skrl 1.x cannot be installed next to 2.x, so the 1.x checkpoint layout is
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
from helpers import Canary, assert_exports_act_like_checkpoint, zoo
from skrl_helpers import loaded_agent, runner_for, skrl_returns, zoo_returns

TIMESTEPS = 1000
RUN = "2026-11-30_10-00-00_ppo_torch"
SHARED = "2026-11-30_12-00-00_ppo_torch"
AGENT_CFG = """
seed: 42
models:
  separate: true
  policy:
    class: GaussianMixin
    clip_actions: false
    clip_log_std: true
    min_log_std: -20.0
    max_log_std: 2.0
    initial_log_std: 0.0
    network:
      - name: net
        input: OBSERVATIONS
        layers: [32, 32]
        activations: elu
    output: 2 * tanh(ACTIONS)
  value:
    class: DeterministicMixin
    clip_actions: false
    network:
      - name: net
        input: OBSERVATIONS
        layers: [32, 32]
        activations: elu
    output: ONE
memory:
  class: RandomMemory
  memory_size: -1
agent:
  class: PPO
  rollouts: 64
  learning_epochs: 4
  mini_batches: 2
  learning_rate: 1.0e-03
  observation_preprocessor: RunningStandardScaler
  observation_preprocessor_kwargs: null
  value_preprocessor: RunningStandardScaler
  value_preprocessor_kwargs: null
  experiment:
    write_interval: 100
    checkpoint_interval: 250
trainer:
  class: SequentialTrainer
  timesteps: 1000
  headless: true
  disable_progressbar: true
  close_environment_at_exit: false
"""


def _as_skrl_1(cfg: dict) -> dict:
    """The same config in skrl 1.x's words: observations are "states", their scaler state_preprocessor."""
    cfg = copy.deepcopy(cfg)
    for model in cfg["models"].values():
        if isinstance(model, dict):
            for container in model.get("network", []):
                container["input"] = "STATES"
    for suffix in ("", "_kwargs"):
        cfg["agent"][f"state_preprocessor{suffix}"] = cfg["agent"].pop(f"observation_preprocessor{suffix}")
    return cfg


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
        cfg = yaml.safe_load(AGENT_CFG)
        cfg["agent"]["experiment"].update(directory=str(logs), experiment_name=RUN)
        runner = runner_for(cfg, "Pendulum-v1")
        run = logs / RUN
        (run / "params").mkdir(parents=True)  # Isaac Lab's train.py: dump_yaml(params/agent.yaml, agent_cfg)
        (run / "params" / "agent.yaml").write_text(yaml.safe_dump(cfg))
        runner.trainer.train()
        final = run / "checkpoints" / f"agent_{TIMESTEPS}.pt"

        v1 = logs / f"{RUN}_v1"  # the 1.x layout: observation scaler saved as state_preprocessor
        (v1 / "params").mkdir(parents=True)
        (v1 / "params" / "agent.yaml").write_text(yaml.safe_dump(_as_skrl_1(cfg)))
        modules = torch.load(final, weights_only=True)
        modules["state_preprocessor"] = modules.pop("observation_preprocessor")
        (v1 / "checkpoints").mkdir()
        torch.save(modules, v1 / "checkpoints" / final.name)

        separate = logs / "2026-11-30_11-00-00_ppo_torch"  # skrl's own per-module writer
        _copy_params(run, separate)
        (separate / "checkpoints").mkdir()
        agent = runner.agent
        agent.experiment_dir = str(separate)
        agent.cfg.experiment.store_separately = True
        agent.checkpoint_best_modules["saved"] = True
        agent.write_checkpoint(timestep=TIMESTEPS, timesteps=TIMESTEPS)

        shared_cfg = copy.deepcopy(cfg)  # Isaac Lab's default: one model for policy and value
        shared_cfg["models"]["separate"] = False
        shared_cfg["trainer"]["timesteps"] = 500
        shared_cfg["agent"]["experiment"]["experiment_name"] = SHARED
        (logs / SHARED / "params").mkdir(parents=True)
        (logs / SHARED / "params" / "agent.yaml").write_text(yaml.safe_dump(shared_cfg))
        runner_for(shared_cfg, "Pendulum-v1").trainer.train()

        bare = root / "runs" / "torch" / "25-11-30_10-00-00-000000_PPO"  # skrl's default name, no agent.yaml
        (bare / "checkpoints").mkdir(parents=True)
        shutil.copy(final, bare / "checkpoints" / final.name)
        (bare / "params").mkdir()
        spec = json.loads(__import__("gymnasium").spec("Pendulum-v1").to_json())
        (bare / "params" / "env.yaml").write_text(yaml.safe_dump(spec))
        model_config = root / "pendulum_policy.yaml"
        model_config.write_text(yaml.safe_dump(cfg["models"]["policy"]))
        return {"root": root, "logs": logs, "run": run, "v1": v1, "separate": separate, "bare": bare,
                "final": final, "cfg": cfg, "shared_cfg": shared_cfg, "model_config": model_config}  # fmt: skip
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
    returns = _eval_returns(bare, tmp_path / "bare.json", "--env-id", "Pendulum-v1",
                            "--model-config", skrl_runs["model_config"])  # fmt: skip
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
    result = zoo("eval", skrl_runs["bare"], "--quiet", "--env-id", "Pendulum-v1", "--out", tmp_path / "x.json",
                 "--model-config", bad)  # fmt: skip
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
        assert meta["obs_groups"] == {"policy": {"start": 0, "dim": 3, "shape": [3]}}
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
