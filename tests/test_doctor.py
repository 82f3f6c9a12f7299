"""``zoo doctor``: what is installed, the ordered checks with their exit codes, the guardrail, the handoff,
and the promise of no side effects (no network, no file written, no pickle loaded, no env stepped)."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shlex
import shutil
import socket
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from helpers import EXAMPLES, zoo

DQN = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
CONFIG = {
    "framework": "sb3",
    "algorithm": "ppo",
    "env_id": "CartPole-v1",
    "seed": 1,
    "total_timesteps": 100_000,
    "num_envs": 8,
    "wall_time_minutes": 20,
    "output_dir": "runs/sb3",
    "checkpoint_every": 10_000,
    "eval": {"every": 10_000, "episodes": 10, "seed": 0},
}


def write_config(tmp_path: Path, **changes) -> Path:
    values = {**CONFIG, **changes}
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in values.items() if v is not None}))
    return path


def checks(result) -> dict[str, tuple[str, str]]:
    """``{check name: (status, message)}`` from ``--json`` output (the last of a repeated name wins)."""
    return {c["name"]: (c["status"], c["message"]) for c in result.json()["checks"]}


@pytest.fixture(scope="module")
def sb3_run(tmp_path_factory):
    """An rl_zoo3-layout PPO run on CartPole trained 256 steps behind VecNormalize: the zip and its statistics."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    run = tmp_path_factory.mktemp("sb3") / "logs" / "ppo" / "CartPole-v1_1"
    (run / "CartPole-v1").mkdir(parents=True)
    venv = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=0))
    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(256)
    model.save(run / "CartPole-v1.zip")
    venv.save(str(run / "CartPole-v1" / "vecnormalize.pkl"))
    return run


def test_doctor_alone_reports_versions_and_hub_settings_without_the_token():
    result = zoo(
        "doctor", "--json", env={"HF_TOKEN": "hf_secret_value_123", "HF_ENDPOINT": "http://127.0.0.1:9"}
    )
    assert result.exit_code == 0
    data = result.json()
    env = data["environment"]
    assert env["packages"]["torch"] == version("torch") and env["packages"]["gymnasium"] == version(
        "gymnasium"
    )
    import torch

    assert env["torch"]["cuda_available"] is torch.cuda.is_available()
    assert env["frameworks"]["sb3"]["stable-baselines3"] == version("stable-baselines3")
    assert env["extras"]["sb3"]["installed"] is True
    assert env["hub"]["endpoint"] == "http://127.0.0.1:9" and env["hub"]["token"].startswith(
        "set in HF_TOKEN"
    )
    assert "hf_secret_value_123" not in result.stdout + result.stderr
    assert data["authorizes_training"] is False
    table = zoo("doctor", env={"HF_TOKEN": "hf_secret_value_123"})
    assert "hf_secret_value_123" not in table.stdout + table.stderr and "set in HF_TOKEN" in table.stdout


def _site_without(tmp_path: Path, hidden: str, fake_version: str | None = None) -> Path:
    """A copy (symlinks) of this interpreter's site-packages without the distribution ``hidden`` (its module and its
    metadata), or, with ``fake_version``, with its module but metadata that says that version."""
    import sysconfig

    site = tmp_path / "site"
    site.mkdir()
    prefix = hidden.replace("-", "_")
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(f"{prefix}-") and (fake_version is not None or entry.name != prefix):
            (site / entry.name).symlink_to(entry)
    if fake_version is not None:
        info = site / f"{prefix}-{fake_version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {hidden}\nVersion: {fake_version}\n")
    return site


def _doctor_in(site: Path, *args: str) -> subprocess.CompletedProcess:
    """``zoo doctor`` in a fresh interpreter whose only site-packages is ``site`` (``-S``, then that folder)."""
    from helpers import REPO

    code = "import site, sys; site.addsitedir(sys.argv.pop(1)); sys.argv[0] = 'zoo'; from zoo.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-S", "-c", code, str(site), "doctor", *args],
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_framework_alone_checks_its_packages_and_reports_their_versions():
    """``zoo doctor --framework NAME``: the workflow's first question has an answer, in --json and in the table."""
    result = zoo("doctor", "--framework", "sb3", "--json")
    assert result.exit_code == 0, result.stdout
    (check,) = result.json()["checks"]
    assert check["name"] == "framework sb3" and check["status"] == "ok"
    assert check["details"]["versions"]["stable-baselines3"] == version("stable-baselines3")
    assert f"stable-baselines3 {version('stable-baselines3')}" in check["message"]
    assert "rl_zoo3, stable_baselines3 found" in check["message"]  # what loading and rl_zoo3.train import
    table = zoo("doctor", "--framework", "sb3", env={"COLUMNS": "200"}).stdout
    assert "framework sb3" in table and f"stable-baselines3 {version('stable-baselines3')}" in table
    cleanrl = zoo("doctor", "--framework", "cleanrl", "--json")
    assert cleanrl.exit_code == 0 and cleanrl.json()["checks"][0]["message"].startswith(
        "gymnasium, torch found"
    )


def test_a_framework_whose_package_is_not_installed_fails_with_its_install_line(tmp_path):
    """stable-baselines3 really absent (a fresh interpreter whose site-packages lacks it): exit 1 and zoo's extra."""
    result = _doctor_in(_site_without(tmp_path, "stable-baselines3"), "--framework", "sb3", "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    (check,) = json.loads(result.stdout)["checks"]
    assert check["status"] == "fail" and check["message"].startswith(
        "the sb3 extra is missing stable-baselines3"
    )
    assert check["hint"] == "pip install 'rl-zoo-hub[sb3]'"
    assert check["details"]["versions"]["stable-baselines3"] is None
    table = _doctor_in(tmp_path / "site", "--framework", "sb3")
    assert table.returncode == 1 and "hint: pip install 'rl-zoo-hub[sb3]'" in table.stdout


def test_a_framework_package_outside_zoos_range_fails(tmp_path):
    result = _doctor_in(_site_without(tmp_path, "stable-baselines3", "1.8.0"), "--framework", "sb3", "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    (check,) = json.loads(result.stdout)["checks"]
    assert check["message"] == "stable-baselines3 1.8.0 is outside zoo's stable-baselines3<3,>=2.3"


def test_an_extra_is_installed_only_when_import_would_find_all_of_it(monkeypatch):
    """gymnasium is there, its mujoco extra is not: ``import mujoco`` fails, so the mujoco extra is missing."""
    import sys

    monkeypatch.setitem(sys.modules, "mujoco", None)  # what a missing module is to the import system
    with pytest.raises(ImportError):
        import mujoco  # noqa: F401
    extras = zoo("doctor", "--json").json()["environment"]["extras"]
    assert extras["mujoco"] == {"installed": False, "missing": ["mujoco"]}
    assert extras["sb3"]["installed"] is True
    table = zoo("doctor", env={"COLUMNS": "200"}).stdout
    assert (
        next(line for line in table.splitlines() if "extra mujoco" in line).split("│")[2].strip()
        == "missing mujoco"
    )


def test_an_extra_counts_what_the_extras_it_asks_of_its_requirements_require():
    """``mujoco = ["gymnasium[mujoco]"]``: gymnasium's own mujoco extra brings the mujoco distribution."""
    from zoo.doctor.installed import extras

    mujoco = next(e for e in extras() if e.name == "mujoco")
    assert mujoco.requires[:2] == ["gymnasium", "mujoco"] and mujoco.installed


def test_a_cleanrl_config_needs_torch_gymnasium_and_the_envs_extra_not_a_cleanrl_package(
    tmp_path, monkeypatch
):
    """CleanRL users run its scripts from a clone: the config's plan and the policy checks both go through."""
    import zoo.doctor.checks as doctor_checks

    config = write_config(tmp_path, framework="cleanrl", algorithm="dqn", output_dir="runs")
    result = zoo("doctor", "--framework", "cleanrl", "--config", config, "--policy", DQN, "--json")
    assert result.exit_code == 0, result.stdout
    found = checks(result)
    assert found["module torch"][0] == found["module gymnasium"][0] == "ok"
    assert not [name for name in found if "cleanrl" in name] and found["content"][0] == "ok"
    mujoco = zoo(
        "doctor",
        "--framework",
        "cleanrl",
        "--config",
        write_config(
            tmp_path, framework="cleanrl", algorithm="td3_continuous_action", env_id="HalfCheetah-v4"
        ),
        "--json",
    )
    assert checks(mujoco)["extra mujoco"] == ("ok", "HalfCheetah-v4 needs the mujoco extra")
    real = doctor_checks.find_spec
    monkeypatch.setattr(doctor_checks, "find_spec", lambda name: None if name == "gymnasium" else real(name))
    missing = zoo("doctor", "--framework", "cleanrl", "--config", config, "--policy", DQN, "--json")
    assert missing.exit_code == 1 and checks(missing)["module gymnasium"] == (
        "fail",
        "no module named 'gymnasium' (cleanrl training imports it)",
    )
    assert checks(missing)["file"][0] == "not checked"


def test_a_loadable_policy_passes_and_the_env_is_created_and_reset_once_never_stepped(monkeypatch):
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv

    calls = {"init": 0, "reset": 0, "close": 0}
    real_init, real_reset, real_close = CartPoleEnv.__init__, CartPoleEnv.reset, CartPoleEnv.close

    def count(name, real):
        def wrapped(self, *args, **kwargs):
            calls[name] += 1
            return real(self, *args, **kwargs)

        return wrapped

    def no_step(self, action):
        raise AssertionError("doctor stepped the env")

    for name, real in (("init", real_init), ("reset", real_reset), ("close", real_close)):
        monkeypatch.setattr(CartPoleEnv, f"__{name}__" if name == "init" else name, count(name, real))
    monkeypatch.setattr(CartPoleEnv, "step", no_step)
    result = zoo("doctor", "--framework", "cleanrl", "--policy", DQN, "--probe-env", "--json")
    assert result.exit_code == 0, result.stdout
    found = checks(result)
    assert [c["name"] for c in result.json()["checks"]] == ["file", "content", "spaces", "fit"]
    assert found["spaces"] == ("ok", "CartPole-v1: observation Box(4,) float32, action Discrete(2)")
    assert calls == {"init": 1, "reset": 1, "close": 1}
    assert result.json()["env"]["max_episode_steps"] == 500


def test_without_probe_env_no_env_is_created(monkeypatch):
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv

    def no_env(self, *args, **kwargs):
        raise AssertionError("doctor created an env without --probe-env")

    monkeypatch.setattr(CartPoleEnv, "__init__", no_env)
    result = zoo("doctor", "--framework", "cleanrl", "--policy", DQN, "--json")
    assert result.exit_code == 0 and "spaces" not in checks(result)


def test_a_policy_for_another_env_is_its_own_diagnosis():
    result = zoo(
        "doctor", "--framework", "cleanrl", "--policy", DQN, "--probe-env", "--env-id", "Acrobot-v1", "--json"
    )
    assert result.exit_code == 1
    found = checks(result)
    assert found["content"][0] == "ok" and found["spaces"][0] == "ok"
    assert (
        found["fit"][0] == "fail"
        and "network.0.weight is (120, 4) in the file, the env needs (120, 6)" in found["fit"][1]
    )


def test_a_missing_package_is_reported_first_never_as_a_bad_file(tmp_path, monkeypatch):
    import zoo.doctor.checks as doctor_checks

    broken = tmp_path / "CartPole-v1.zip"
    broken.write_bytes(b"not a zip at all")
    real = doctor_checks.find_spec
    monkeypatch.setattr(
        doctor_checks, "find_spec", lambda name: None if name == "stable_baselines3" else real(name)
    )
    result = zoo("doctor", "--framework", "sb3", "--policy", broken, "--json")
    assert result.exit_code == 1
    found = checks(result)
    assert found["module stable_baselines3"] == (
        "fail",
        "no module named 'stable_baselines3' (zoo loads sb3 models with it)",
    )
    assert found["file"][0] == found["content"][0] == "not checked"


def test_missing_file_then_bad_content_each_have_their_own_message(tmp_path):
    missing = zoo("doctor", "--framework", "cleanrl", "--policy", tmp_path / "nope.cleanrl_model", "--json")
    assert missing.exit_code == 1 and checks(missing)["file"] == (
        "fail",
        f"{tmp_path / 'nope.cleanrl_model'}: no such file or folder",
    )
    run = tmp_path / DQN.name
    shutil.copytree(DQN, run)
    (run / "dqn.cleanrl_model").write_bytes((DQN / "dqn.cleanrl_model").read_bytes()[:200])  # cut short
    bad = zoo("doctor", "--framework", "cleanrl", "--policy", run, "--json")
    assert bad.exit_code == 1
    found = checks(bad)
    assert found["file"][0] == "ok" and found["content"][0] == "fail" and "truncated" in found["content"][1]


@pytest.mark.parametrize(
    ("changes", "flags", "code", "needle"),
    [
        ({}, [], 0, "bounded: 100,000 steps, 8 envs, 20 min, 1 run, launcher local"),
        (
            {"total_timesteps": 5_000_000},
            [],
            3,
            "total_timesteps: 5e+06 exceeds the guardrail's 1e+06 (raise it with --max-timesteps)",
        ),
        ({"total_timesteps": 5_000_000}, ["--max-timesteps", "5000000"], 0, "bounded: 5,000,000 steps"),
        ({"total_timesteps": -1}, [], 3, "total_timesteps: -1 leaves the run unbounded"),
        ({"wall_time_minutes": float("inf")}, [], 3, "wall_time_minutes: inf leaves the run unbounded"),
        ({"gpus": 4}, [], 3, "gpus: 4 exceeds the guardrail's 1"),
        (
            {"sweep": {"learning_rate": [1e-3, 3e-4], "seed": [1, 2]}},
            [],
            3,
            "runs (sweep): 4 exceeds the guardrail's 1",
        ),
        ({"sweep": {"learning_rate": [1e-3, 3e-4], "seed": [1, 2]}}, ["--max-runs", "4"], 0, "4 runs"),
        ({"hydra": {"mode": "MULTIRUN"}}, [], 3, "hydra.mode: MULTIRUN launches a sweep"),
        (
            {"defaults": ["_self_", {"override hydra/launcher": "submitit_slurm"}]},
            [],
            3,
            "selects a cluster launcher",
        ),
        ({"num_envs": "eight"}, [], 1, "num_envs: 'eight' is not an integer"),
        ({"total_timesteps": None}, [], 1, "total_timesteps: missing (expected an integer)"),
        ({"learning_rate": 0.1}, [], 1, "learning_rate: unknown field"),
        ({"framework": "cleanrl"}, [], 1, "framework: the config says cleanrl, --framework says sb3"),
    ],
)
def test_config_fields_types_and_guardrail(tmp_path, changes, flags, code, needle):
    result = zoo(
        "doctor", "--framework", "sb3", "--config", write_config(tmp_path, **changes), *flags, "--json"
    )
    assert result.exit_code == code, result.stdout
    messages = [c["message"] for c in result.json()["checks"]]
    assert any(needle in m for m in messages), messages


def test_a_cluster_launcher_is_over_the_guardrail_unless_allowed(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")  # a login node with Slurm
    config = write_config(tmp_path, launcher="slurm")
    refused = zoo("doctor", "--framework", "sb3", "--config", config, "--json")
    assert refused.exit_code == 3 and "launcher: slurm runs jobs on a cluster" in refused.stdout
    allowed = zoo("doctor", "--framework", "sb3", "--config", config, "--allow-launcher", "slurm", "--json")
    assert allowed.exit_code == 0 and checks(allowed)["program sbatch"][0] == "ok"


@pytest.mark.parametrize(
    "args",
    [
        ["--policy", str(DQN)],
        ["--framework", "cleanrl", "--probe-env"],
        ["--framework", "tf-agents"],
    ],
)
def test_usage_errors_exit_2(args):
    result = zoo("doctor", *args)
    assert result.exit_code == 2 and "Traceback" not in result.stderr


def test_doctor_has_no_side_effects(tmp_path, monkeypatch, sb3_run):
    """No network, no file written, no pickle loaded, nothing launched; only torch's weights-only loader
    (zoo's safe inspection, as ``zoo check``) reads the policy's tensors."""
    import torch

    home = tmp_path / "home"
    for var, sub in (("HOME", ""), ("ZOO_CACHE_DIR", "zoo"), ("HF_HOME", "hf"), ("XDG_CACHE_HOME", "cache")):
        monkeypatch.setenv(var, str(home / sub))
    home.mkdir()
    config = write_config(tmp_path)
    before = _tree(tmp_path) | _tree(sb3_run)

    def refuse(what):
        def refused(*args, **kwargs):
            raise AssertionError(f"doctor called {what}")

        return refused

    real_torch_load = torch.load

    def weights_only_load(*args, **kwargs):
        assert kwargs.get("weights_only") is True, "doctor asked torch for a full unpickle"
        return real_torch_load(*args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", refuse("socket.connect"))
    monkeypatch.setattr(socket, "create_connection", refuse("socket.create_connection"))
    monkeypatch.setattr(pickle, "load", refuse("pickle.load"))
    monkeypatch.setattr(pickle, "loads", refuse("pickle.loads"))
    monkeypatch.setattr(pickle, "Unpickler", refuse("pickle.Unpickler"))
    monkeypatch.setattr(subprocess, "Popen", refuse("subprocess.Popen"))
    monkeypatch.setattr(torch, "load", weights_only_load)
    monkeypatch.chdir(tmp_path)
    result = zoo(
        "doctor", "--framework", "sb3", "--policy", sb3_run, "--probe-env", "--config", config, "--json"
    )
    assert result.exit_code == 0, result.stdout
    assert _tree(tmp_path) | _tree(sb3_run) == before  # nothing written, nothing touched
    assert not any(home.rglob("*"))  # no cache, no token file, no HF folder made
    assert checks(result)["content"][0] == "ok"


def _tree(root: Path) -> set[tuple[str, int, int]]:
    return {(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_handoff_manifest_is_reproducible(tmp_path, sb3_run):
    config = write_config(tmp_path)
    handoff = tmp_path / "handoff"
    result = zoo(
        "doctor",
        "--framework",
        "sb3",
        "--policy",
        sb3_run,
        "--probe-env",
        "--config",
        config,
        "--episodes",
        "4",
        "--seed",
        "3",
        "--handoff",
        handoff,
    )
    assert result.exit_code == 0, result.stdout
    data = json.loads((handoff / "handoff.json").read_text())
    model = sb3_run / "CartPole-v1.zip"
    assert data["authorizes_training"] is False and data["doctor"]["exit_code"] == 0
    assert data["doctor"]["command"] == (
        f"zoo doctor --framework sb3 --policy {sb3_run} --config {config} --probe-env "
        f"--seed 3 --episodes 4 --handoff {handoff}"
    )
    assert data["artifact"]["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    stats = sb3_run / "CartPole-v1" / "vecnormalize.pkl"
    assert {"file": str(stats), "sha256": hashlib.sha256(stats.read_bytes()).hexdigest()} in data["artifact"][
        "companions"
    ]
    assert data["env"]["observation_space"].startswith("Box(") and data["env"]["max_episode_steps"] == 500
    assert data["eval_budget"] == {
        "seed": 3,
        "episodes": 4,
        "deterministic": True,
        "max_steps": 500,
        "render_mode": None,
        "out": str(sb3_run / "eval.json"),
    }
    assert f"torch=={version('torch')}" in data["dependency_lock"]
    assert data["training"]["stop_conditions"] == {"total_timesteps": 100_000, "wall_time_minutes": 20}
    assert data["side_effects"]["checkpoints"] == 10 and data["side_effects"]["network"] == "none"
    assert data["training"]["command"].startswith("timeout 20m nice -n 10 python -m rl_zoo3.train --algo ppo")
    markdown = (handoff / "HANDOFF.md").read_text()
    assert "This plan authorizes nothing" in markdown and data["commands"][0] in markdown
    # The eval command it hands over runs as written, and writes where the budget says.
    command = shlex.split(data["commands"][0])
    assert command[:2] == ["zoo", "eval"]
    ran = zoo(*command[1:])
    assert ran.exit_code == 0, ran.stderr
    assert json.loads((sb3_run / "eval.json").read_text())["num_episodes"] == 4
    os.remove(sb3_run / "eval.json")  # the module's run stays as trained for the other tests


def test_custom_policy_class_is_found_never_imported(tmp_path, monkeypatch):
    canary = tmp_path / "imported"
    (tmp_path / "my_policies.py").write_text(f"open({str(canary)!r}, 'w').close()\nclass Policy: ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    pendulum = ("--env-id", "Pendulum-v1")
    found = zoo(
        "doctor", "--framework", "custom", "--policy-class", "my_policies:Policy", *pendulum, "--json"
    )
    assert found.exit_code == 0 and checks(found)["module my_policies"][0] == "ok"
    assert not canary.exists()  # doctor runs no user code
    missing = zoo(
        "doctor", "--framework", "custom", "--policy-class", "not_installed_mod:Policy", *pendulum, "--json"
    )
    assert missing.exit_code == 1 and checks(missing)["module not_installed_mod"][0] == "fail"
    nowhere = zoo("doctor", "--framework", "custom", "--policy-class", "my_policies:Policy")
    assert nowhere.exit_code == 2 and nowhere.stderr.startswith(
        "error: --policy-class my_policies:Policy: no env for it to act in"
    )
    assert zoo("doctor", "--framework", "custom", "--policy-class", "no-colon").exit_code == 2
    assert zoo("doctor", "--framework", "sb3", "--policy-class", "my_policies:Policy").exit_code == 2


def test_a_pickled_policy_object_is_read_not_loaded(tmp_path):
    from helpers import Canary

    canary = tmp_path / "ran"
    path = tmp_path / "policy.pickle"
    path.write_bytes(pickle.dumps(Canary(canary)))
    result = zoo("doctor", "--framework", "custom", "--policy", path, "--env-id", "Pendulum-v1", "--json")
    assert not canary.exists()
    assert result.exit_code == 1 and checks(result)["content"][0] == "fail"
    assert "unsafe pickle" in checks(result)["content"][1]
