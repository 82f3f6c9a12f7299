"""Tianshou adapter: runs Tianshou 2.0.1's high-level API wrote, read by zoo without Tianshou, compared with
Tianshou's own inference.

The session fixture trains in the trainer venv (dev.py's ``TRAINER_VENVS``) with tests/trainers/tianshou_train.py:
DQN on CartPole-v1 and PPO on Pendulum-v1 (obs-normalized, ``policy_epoch_<N>.pt`` per epoch), laid out as
Tianshou persists them; and with the low-level example tests/trainers/tianshou_mujoco_ppo.py (``policy.pth``). tests/trainers/tianshou_reference.py then records Tianshou's own ``compute_action``
(``deterministic_eval = True``) on the observations of seeded episodes, and its episode returns.
"""

from __future__ import annotations

import json
import pickle
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from helpers import Canary, assert_exports_act_like_checkpoint, episodes_of, zoo
from trainer_venvs import run_trainer

SEED = 3  # zoo eval --seed SEED --num-envs EPISODES: sub-env i resets with SEED + i, as the reference does
EPISODES = 4
DATA = Path(__file__).resolve().parent / "data" / "trainer_runs" / "tianshou"


@pytest.fixture(scope="session")
def tianshou_runs(tmp_path_factory):
    """``{"dqn": run dir, "ppo": run dir, "root": the persistence base}``, trained by Tianshou itself."""
    root = tmp_path_factory.mktemp("tianshou")
    for algo in ("dqn", "ppo"):
        run_trainer("tianshou", "tianshou_train.py", algo, root / "log", cwd=root)
    run_trainer(
        "tianshou", "tianshou_mujoco_ppo.py", "--task", "Pendulum-v1", "--persistence_base_dir", root / "ll",
        "--epoch", "1", "--epoch_num_steps", "512", "--collection_step_num_env_steps", "256",
        "--update_step_num_repetitions", "1", "--num_training_envs", "2", "--num_test_envs", "2",
        "--buffer_size", "256", "--hidden_sizes", "[32, 32]", "--device", "cpu", cwd=root,
    )  # fmt: skip
    dqn = next((root / "log" / "CartPole-v1").glob("DQNExperiment_*/exp_seed=42"))
    ppo = next((root / "log" / "Pendulum-v1").glob("PPOExperiment_*/exp_seed=42"))
    low = next((root / "ll" / "Pendulum-v1" / "ppo" / "0").glob("*-*"))
    config = (
        root / "mujoco_ppo.yaml"
    )  # what mujoco_ppo.py builds: Net(activation=nn.Tanh), the defaults for the rest
    config.write_text("activation: Tanh\n")
    return {"root": root / "log", "dqn": dqn, "ppo": ppo, "ll": low, "ll_config": config}


@pytest.fixture(scope="session")
def tianshou_reference(tianshou_runs):
    """Tianshou's own actions and episodes per run (tests/trainers/tianshou_reference.py)."""
    found = {}
    for key, env_id in (("dqn", "CartPole-v1"), ("ppo", "Pendulum-v1"), ("ll", "Pendulum-v1")):
        out = tianshou_runs["root"].parent / f"reference_{key}.json"
        run = tianshou_runs[key]
        run_trainer("tianshou", "tianshou_reference.py", run, env_id, SEED, EPISODES, out, cwd=run)
        found[key] = json.loads(out.read_text())
    return found


def _reports(path, *args) -> list[dict]:
    return zoo("check", path, "--json", *args).json()


def _copy(run: Path, dst: Path) -> Path:
    """A private copy of ``run`` as ``dst/<Exp>/exp_seed=42`` (the folder names discovery reads)."""
    target = dst / run.parent.name / run.name
    shutil.copytree(run, target)
    return target


def test_check_recognizes_both_runs_with_algorithm_env_and_checkpoints(tianshou_runs):
    reports = {r["details"]["algorithm"]: r for r in _reports(tianshou_runs["root"])}
    dqn, ppo = reports["DQN"], reports["PPO"]
    assert dqn["status"] == "ok" and ppo["status"] == "ok", (dqn["reason"], ppo["reason"])
    assert dqn["run"]["env_id"] == "CartPole-v1" and ppo["run"]["env_id"] == "Pendulum-v1"
    assert dqn["run"]["exp_name"] == "tianshou_dqn" and ppo["run"]["seed"] == 42
    assert dqn["details"]["checkpoint"] == "policy.pt" and dqn["details"]["policy"]["sizes"] == [4, 32, 32, 2]
    assert dqn["details"]["policy"]["activations"] == "ReLU" and dqn["details"]["obs_rms"] is None
    assert ppo["details"]["checkpoints"] == ["policy.pt", "policy_epoch_1.pt", "policy_epoch_2.pt"]
    assert ppo["details"]["policy"]["activations"] == "Tanh"
    assert ppo["details"]["policy"]["action_bound_method"] == "clip"
    assert ppo["details"]["obs_rms"] == {"file": "env_obs_rms.pkl", "size": 3, "clip_max": 10.0}
    assert "value" in ppo["details"]["train_return"]


def test_actions_equal_tianshou_compute_action_on_its_observations(tianshou_runs, tianshou_reference):
    from zoo import api

    for key, atol in (("dqn", 0.0), ("ppo", 1e-5), ("ll", 1e-5)):
        ref = tianshou_reference[key]
        obs = np.asarray(ref["observations"], dtype=np.float32)
        config = tianshou_runs["ll_config"] if key == "ll" else None
        policy = api.load_policy(tianshou_runs[key], model_config=config)
        actions, _ = policy.act(obs, deterministic=True)
        expected = np.asarray(ref["actions"]).reshape(actions.shape)
        assert len(obs) > 30
        diff = np.abs(actions.astype(np.float64) - expected).max()
        assert diff <= atol, (key, diff)
        if key == "dqn":
            assert actions.dtype == np.int64 and len(set(actions.tolist())) == 2  # both actions chosen
        # one observation at a time, as compute_action acts: the same torch kernels, the same bits
        single = np.concatenate([policy.act(o[None], deterministic=True)[0] for o in obs[:300]])
        assert np.array_equal(single.reshape(expected[:300].shape), expected[:300].astype(single.dtype)), key


def test_eval_gives_tianshou_own_deterministic_episodes(tianshou_runs, tianshou_reference, tmp_path):
    for key in ("dqn", "ppo", "ll"):
        out = tmp_path / f"{key}.json"
        config = ("--model-config", tianshou_runs["ll_config"]) if key == "ll" else ()
        result = zoo(
            "eval", tianshou_runs[key], "--deterministic", "-n", EPISODES, "--num-envs", EPISODES,
            "--seed", SEED, "-q", "--out", out, *config,
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
        got = episodes_of(out)
        want = [(e["return"], e["length"]) for e in tianshou_reference[key]["episodes"]]
        assert [n for _, n in got] == [n for _, n in want]
        if key == "dqn":
            assert got == want
        else:  # torch's batch-1 and batch-4 matmuls may round an action 1 ulp apart: returns agree to 1e-6
            np.testing.assert_allclose([r for r, _ in got], [r for r, _ in want], rtol=1e-6)


def test_tianshou_own_restore_fails_under_this_torch(tianshou_reference):
    """What the docs say: Experiment.from_directory + create_experiment_world cannot load policy.pt."""
    for key, cls in (("dqn", "dqn.DQN"), ("ppo", "ppo.PPO")):
        assert (
            f"Unsupported global: GLOBAL tianshou.algorithm.modelfree.{cls}"
            in tianshou_reference[key]["restore_error"]
        )


@pytest.mark.parametrize("key", ["dqn", "ppo"])
def test_exports_bake_the_normalizer_and_act_like_the_checkpoint(tianshou_runs, key, tmp_path):
    sidecars = assert_exports_act_like_checkpoint(
        tianshou_runs[key], tmp_path, continuous=key == "ppo", episodes=4, num_envs=4
    )
    normalization = sidecars["onnx"]["normalization"]
    if key == "ppo":
        assert normalization["kind"] == "tianshou_running_mean_std" and normalization["clip_max"] == 10.0
    else:
        assert normalization is None


def test_low_level_policy_pth_needs_a_model_config_and_then_exports(tianshou_runs, tmp_path):
    run, config = tianshou_runs["ll"], tianshou_runs["ll_config"]
    (report,) = _reports(run)
    assert report["status"] == "warning" and "activation functions unknown" in report["reason"]
    assert report["run"]["env_id"] == "Pendulum-v1" and report["run"]["exp_name"] == "tianshou_ppo"
    assert report["run"]["seed"] == 0 and report["details"]["obs_rms"]["size"] == 3
    _one_line_error(zoo("eval", run, "-q", "-n", "1"), "activation functions are unknown", "--model-config")
    bad = tmp_path / "bad.yaml"
    bad.write_text("activation: \"__import__('os').system('true')\"\n")
    _one_line_error(zoo("eval", run, "-q", "-n", "1", "--model-config", bad), "is not one of ReLU")
    hl = zoo("eval", tianshou_runs["dqn"], "-q", "-n", "1", "--model-config", config)
    _one_line_error(hl, "policy.pt states the architecture")
    assert_exports_act_like_checkpoint(
        run, tmp_path, "--model-config", str(config), continuous=True, episodes=4
    )


def test_stochastic_mode_samples_reproducibly(tmp_path):
    """Tianshou's own eval mode samples Normal(mu, exp(sigma)); zoo's is seeded: same seed, same episodes."""
    run = DATA / "Pendulum-v1"
    outs = []
    for name, mode, seed in (
        ("a", "--stochastic", "1"),
        ("b", "--stochastic", "1"),
        ("c", "--deterministic", "1"),
    ):
        result = zoo("eval", run, mode, "-n", "2", "--seed", seed, "-q", "--out", tmp_path / f"{name}.json")
        assert result.exit_code == 0, result.stderr
        outs.append(episodes_of(tmp_path / f"{name}.json"))
    assert outs[0] == outs[1] != outs[2]


def test_push_to_a_local_hub_and_enjoy_it_back(tianshou_runs, tmp_path):
    from test_hub_roundtrip import _zoo, token_hub

    run = _copy(tianshou_runs["ppo"], tmp_path / "runs")
    repo = "demo/Pendulum-v1-tianshou-PPO-seed42"
    with token_hub(tmp_path) as (hub, _log):
        pushed = _zoo(
            "push", run, "--repo-id", repo, "--yes", "--episodes", "2", "--stage-dir", tmp_path / "stage",
            hub_url=hub.url, home=tmp_path / "pusher",
        )  # fmt: skip
        assert pushed.returncode == 0, pushed.stderr
        assert "library_name: tianshou" in (tmp_path / "stage" / "README.md").read_text()
        fetched = _zoo(
            "enjoy", "--exp-name", "tianshou_ppo", "--env-id", "Pendulum-v1", "--run-seed", "42",
            "--hf-repository", repo, "--runs-dir", tmp_path / "none", "--allow-download", "--deterministic",
            "-n", "2", "--num-envs", "2", "--seed", str(SEED), "--out", tmp_path / "remote.json",
            hub_url=hub.url, home=tmp_path / "fresh-cache",
        )  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr
    assert f"downloaded from {repo}" in fetched.stderr
    local = zoo(
        "eval", run, "--deterministic", "-n", "2", "--num-envs", "2", "--seed", SEED, "-q",
        "--out", tmp_path / "local.json",
    )  # fmt: skip
    assert local.exit_code == 0, local.stderr
    assert episodes_of(tmp_path / "remote.json") == episodes_of(tmp_path / "local.json")


def test_watch_hook_lists_the_epoch_checkpoints_then_the_best(tianshou_runs, tmp_path):
    from zoo.frameworks import get_adapter

    adapter = get_adapter("tianshou")
    run = tianshou_runs["ppo"]
    found = adapter.checkpoints(run)
    assert [(c.step, c.model_file.name) for c in found] == [
        (1, "policy_epoch_1.pt"),
        (2, "policy_epoch_2.pt"),
        (None, "policy.pt"),
    ]
    assert all(c.companions == {"obs_rms": run / "env_obs_rms.pkl"} for c in found)
    copy = _copy(run, tmp_path / "runs")
    for name, source in adapter.best_model_files(copy, adapter.checkpoints(copy)[0]).items():
        shutil.copy(source, copy / name)  # what zoo watch keeps of the best checkpoint
    assert sorted(p.name for p in copy.glob("best_model*")) == ["best_model.pt", "best_model_obs_rms.pkl"]
    assert [c.model_file.name for c in adapter.checkpoints(copy)][-1] == "policy.pt"
    best = zoo("eval", copy / "best_model.pt", "-n", "1", "-q", "--out", tmp_path / "best.json")
    epoch = zoo("eval", copy / "policy_epoch_1.pt", "-n", "1", "-q", "--out", tmp_path / "epoch.json")
    assert best.exit_code == 0 and epoch.exit_code == 0, best.stderr + epoch.stderr
    assert episodes_of(tmp_path / "best.json") == episodes_of(tmp_path / "epoch.json")


def _one_line_error(result, *words: str, code: int | None = None) -> None:
    assert result.exit_code != 0 and "Traceback" not in result.stderr, result.stderr
    if code is not None:
        assert result.exit_code == code, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


def test_truncated_policy_is_one_error_line(tianshou_runs, tmp_path):
    run = _copy(tianshou_runs["dqn"], tmp_path / "runs")
    data = (run / "policy.pt").read_bytes()
    (run / "policy.pt").write_bytes(data[: len(data) // 2])
    report = _reports(run)[0]
    assert report["status"] == "error" and "zip archive" in report["reason"]
    _one_line_error(zoo("eval", run, "-q", "-n", "1"), "policy.pt")


class Stranger:
    """A class of no library zoo reads: its module is not on the reader's allowlist."""


def test_pickle_globals_outside_the_allowlist_are_refused_and_never_run(tianshou_runs, tmp_path):
    import torch

    canary = tmp_path / "canary"
    run = _copy(tianshou_runs["ppo"], tmp_path / "runs")
    torch.save({"policy": Canary(canary)}, run / "policy.pt")
    report = _reports(run)[0]
    assert (
        report["status"] == "error" and "unsafe pickle" in report["reason"] and "system" in report["reason"]
    )
    _one_line_error(zoo("eval", run, "-q", "-n", "1"), "unsafe pickle", code=3)

    torch.save(Stranger(), run / "policy.pt")
    result = zoo("eval", run, "-q", "-n", "1")
    _one_line_error(result, "test_tianshou.Stranger", "not one of Tianshou's classes", code=3)

    shutil.copy(tianshou_runs["ppo"] / "policy.pt", run / "policy.pt")
    (run / "env_obs_rms.pkl").write_bytes(pickle.dumps(Canary(canary), protocol=4))
    _one_line_error(zoo("eval", run, "-q", "-n", "1"), "env_obs_rms.pkl", "unsafe pickle", code=3)
    (run / "env_obs_rms.pkl").unlink()
    _one_line_error(zoo("eval", run, "-q", "-n", "1"), "env_obs_rms.pkl is missing")

    (run / "experiment.pkl").write_bytes(pickle.dumps(Canary(canary), protocol=4))
    assert _reports(run)[0]["status"] == "error"
    assert not canary.exists()


def _fake_tianshou_class(module: str, name: str, monkeypatch) -> type:
    """A class pickled under Tianshou's module path (the test has no Tianshou): only its name reaches the file."""
    parts = module.split(".")
    for i in range(1, len(parts)):  # pickle imports the module path: its parents must exist too
        parent = ".".join(parts[:i])
        if parent not in sys.modules:
            monkeypatch.setitem(sys.modules, parent, types.ModuleType(parent))
    mod = sys.modules.get(module) or types.ModuleType(module)
    cls = type(name, (), {"__module__": module, "__qualname__": name})
    setattr(mod, name, cls)
    monkeypatch.setitem(sys.modules, module, mod)
    return cls


def test_a_task_string_that_is_code_is_a_name_never_run(tianshou_runs, tmp_path, monkeypatch):
    """experiment.pkl's env id is data: a task that reads as Python is an unknown env, and nothing runs."""
    canary = tmp_path / "canary"
    experiment = _fake_tianshou_class("tianshou.highlevel.experiment", "Experiment", monkeypatch)
    factory = _fake_tianshou_class("tianshou.highlevel.env", "EnvFactoryRegistered", monkeypatch)
    made = experiment()
    made.env_factory = factory()
    made.env_factory.task = f"__import__('os').system('touch {canary}')"
    run = _copy(tianshou_runs["dqn"], tmp_path / "runs")
    (run / "experiment.pkl").write_bytes(pickle.dumps(made, protocol=4))
    report = _reports(run)[0]
    assert report["run"]["env_id"] == made.env_factory.task and report["status"] != "ok"
    result = zoo("eval", run, "-q", "-n", "1")
    _one_line_error(result)
    assert not canary.exists()


def test_the_committed_runs_check_and_evaluate_like_trained_ones(tmp_path):
    reports = sorted((r["details"]["algorithm"], r["status"]) for r in _reports(DATA))
    assert reports == [("DQN", "ok"), ("PPO", "ok"), ("PPO", "warning")]  # the low-level run needs its config
    low = next((DATA / "mujoco").glob("Pendulum-v1/ppo/0/*"))
    config = DATA / "mujoco_ppo.yaml"
    for target, flags in ((DATA / "Pendulum-v1", ()), (low, ("--model-config", config))):
        result = zoo("eval", target, "-n", "2", "-q", "--out", tmp_path / "e.json", *flags)
        assert result.exit_code == 0, result.stderr
