"""``zoo doctor --handoff``: the training command on the config's device, the real watch command, an eval command
for every kind of policy, the runbook (monitoring, cancellation, recovery, cleanup, unresolved gaps) and the
trainer's network flags named and never passed. The commands are run as written where a test can run them."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers import hang_guard, zoo

CONFIG = {
    "algorithm": "ppo",
    "env_id": "CartPole-v1",
    "seed": 1,
    "total_timesteps": 50_000,
    "num_envs": 1,
    "wall_time_minutes": 15,
    "output_dir": "logs",
}
SECTIONS = ("monitoring", "cancellation", "recovery", "cleanup")


def handoff(tmp_path: Path, framework: str, *flags: str, **changes) -> dict:
    """The handoff.json of ``zoo doctor --framework FRAMEWORK --config`` a config with ``changes``."""
    config = tmp_path / "experiment.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "framework": framework, **changes}))
    folder = tmp_path / "plan"
    zoo("doctor", "--framework", framework, "--config", config, *flags, "--handoff", folder)
    return json.loads((folder / "handoff.json").read_text())


@pytest.mark.parametrize(
    ("framework", "changes", "inner"),
    [
        ("sb3", {"device": "cpu"}, "python -m rl_zoo3.train --algo ppo .* --device cpu$"),
        (
            "skrl",
            {"device": "cuda:1"},
            "python scripts/reinforcement_learning/skrl/train.py .* --device cuda:1$",
        ),
        (
            "rsl_rl",
            {"device": "cpu"},
            "python scripts/reinforcement_learning/rsl_rl/train.py .* --device cpu$",
        ),
        (
            "cleanrl",
            {"algorithm": "dqn", "device": "cpu"},
            "python cleanrl/dqn.py .* --save-model --no-cuda$",
        ),
        (
            "cleanrl",
            {"algorithm": "dqn", "device": "cuda:1"},
            "env CUDA_VISIBLE_DEVICES=1 python cleanrl/dqn.py .* --save-model --cuda$",
        ),
        (
            "cleanrl",
            {"algorithm": "dqn_jax", "device": "cpu"},
            "env JAX_PLATFORMS=cpu python cleanrl/dqn_jax.py .*model$",
        ),
        ("sb3", {}, "python -m rl_zoo3.train .*n_envs:1$"),  # no device: the trainer's default
    ],
)
def test_the_training_command_runs_on_the_configs_device(tmp_path, framework, changes, inner):
    command = handoff(tmp_path, framework, **changes)["training"]["command"]
    assert re.fullmatch(f"timeout 15m nice -n 10 {inner}", command), command


def test_the_sb3_command_passes_only_flags_rl_zoo3_train_takes(tmp_path):
    """Every flag of the command, device included, is one rl_zoo3.train's own parser lists."""
    command = handoff(tmp_path, "sb3", device="cpu")["training"]["command"]
    listed = subprocess.run(
        [sys.executable, "-m", "rl_zoo3.train", "--help"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    words = shlex.split(command)
    flags = [word for word in words[words.index("rl_zoo3.train") + 1 :] if word.startswith("-")]
    assert "--device" in flags
    assert [flag for flag in flags if not re.search(rf"(^|[\s,]){re.escape(flag)}\b", listed)] == []


@pytest.mark.parametrize(
    ("framework", "made", "newest"),
    [
        (
            "sb3",
            ["logs/ppo/CartPole-v1_1", "logs/ppo/CartPole-v1_2", "logs/ppo/Acrobot-v1_3"],
            "logs/ppo/CartPole-v1_2",
        ),
        (
            "cleanrl",
            [
                "runs/CartPole-v1__dqn__1__1700000000",
                "runs/CartPole-v1__dqn__1__1700000100",
                "runs/Other__dqn__1__9",
            ],
            "runs/CartPole-v1__dqn__1__1700000100",
        ),
    ],
)
def test_the_watch_command_names_the_newest_run_folder_the_trainer_made(tmp_path, framework, made, newest):
    """No placeholder: the command finds the folder the trainer named with its counter or time stamp."""
    data = handoff(tmp_path, framework, algorithm="ppo" if framework == "sb3" else "dqn")
    watch = data["training"]["watch_command"]
    assert "RUN_DIR" not in watch and watch in data["commands"] and watch in data["monitoring"]["commands"]
    for age, folder in enumerate(made):  # made in this order, the newest last but one
        (tmp_path / folder).mkdir(parents=True)
        os.utime(tmp_path / folder, (1_700_000_000 + age, 1_700_000_000 + age))
    os.utime(tmp_path / made[-1], (1_600_000_000, 1_600_000_000))
    printed = subprocess.run(
        ["bash", "-c", "printf '%s\\n' " + watch.removeprefix("zoo watch ")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert printed[0] == newest and printed[1:3] == ["--every", "1"]


def test_a_policy_class_alone_gets_an_eval_command_that_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = zoo(
        "doctor",
        "--framework",
        "custom",
        "--policy-class",
        "custom_policies:SpacesAct",
        "--env-id",
        "Pendulum-v1",
        "--episodes",
        "2",
        "--handoff",
        "plan",
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    data = json.loads((tmp_path / "plan" / "handoff.json").read_text())
    (command,) = data["commands"]
    assert command.startswith("zoo eval --policy-class custom_policies:SpacesAct --exp-name ")
    assert "--env-id Pendulum-v1 --episodes 2 --seed 0" in command and command.endswith("--out eval.json")
    assert any("custom_policies:SpacesAct builds and acts" in gap for gap in data["unresolved_gaps"])
    ran = zoo(*shlex.split(command)[1:])
    assert ran.exit_code == 0, ran.stderr
    assert json.loads((tmp_path / "eval.json").read_text())["num_episodes"] == 2


def test_the_handoff_has_its_runbook_and_names_the_gaps_it_could_not_close(tmp_path):
    import torch

    data = handoff(
        tmp_path,
        "cleanrl",
        "--policy",
        str(tmp_path / "missing.cleanrl_model"),
        algorithm="dqn",
        device="cuda",
    )
    for key in SECTIONS:
        assert data[key]["notes"], key
    assert data["cancellation"]["commands"][0].startswith("kill -TERM -- -")
    assert "CleanRL's scripts cannot resume" in data["recovery"]["notes"][0]
    assert "runs/CartPole-v1__*__1__*" in data["cleanup"]["notes"][0]
    gaps = data["unresolved_gaps"]
    assert f"file: {tmp_path / 'missing.cleanrl_model'}: no such file or folder" in gaps
    assert any(gap.startswith("the training script cleanrl/dqn.py: not checked") for gap in gaps)
    assert any("spaces" in gap and "--probe-env" in gap for gap in gaps)
    assert any(gap.startswith("the GPU path (device cuda") for gap in gaps) is (not torch.cuda.is_available())
    page = (tmp_path / "plan" / "HANDOFF.md").read_text()
    for title in ("Monitoring", "Cancellation", "Recovery", "Cleanup", "Unresolved gaps"):
        assert f"\n## {title}\n" in page
    assert all(f"- {gap}" in page for gap in gaps)


def test_cleanrls_network_flags_are_named_and_never_passed(tmp_path):
    """--track and --upload-model: said in side_effects with what each sends and needs, absent from the command."""
    data = handoff(tmp_path, "cleanrl", algorithm="dqn")
    effects, command = data["side_effects"], data["training"]["command"]
    assert "--track would send metrics to Weights & Biases" in effects["network"]
    assert "--upload-model would send the model and videos to the Hugging Face Hub" in effects["network"]
    assert "needs its own consent" in effects["network"]
    assert "--track would need a W&B API key" in effects["credentials"]
    assert "--upload-model would need a Hub write token" in effects["credentials"]
    assert "--track" not in command and "--upload-model" not in command
    assert handoff(tmp_path, "sb3")["side_effects"]["network"] == "none"


def test_a_slurm_plan_is_followed_and_cancelled_by_its_job_name(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    data = handoff(tmp_path, "sb3", "--allow-launcher", "slurm", launcher="slurm")
    job = data["training"]["job_name"]
    assert job == "zoo-sb3-ppo-CartPole-v1-1"
    assert data["training"]["command"].startswith(f"sbatch --job-name={job} --time=15 ")
    assert f"squeue --name {job}" in data["monitoring"]["commands"]
    assert data["cancellation"]["commands"] == [f"scancel --name {job}"]


def test_the_cancellation_command_stops_the_run_and_its_workers(tmp_path):
    """The training command and then the cancellation command, each run as written: a stand-in for CleanRL's
    dqn.py that starts a worker is stopped with it (timeout leads their process group)."""
    data = handoff(tmp_path, "cleanrl", algorithm="dqn", device="cpu")
    script = tmp_path / "cleanrl" / "dqn.py"
    script.parent.mkdir()
    script.write_text(
        "import os, subprocess, sys, time\n"
        "worker = subprocess.Popen(['sleep', '600'])\n"
        "open('pids.tmp', 'w').write(f'{os.getpid()} {worker.pid}')\n"
        "os.rename('pids.tmp', 'pids')\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.Popen(["bash", "-c", data["training"]["command"]], cwd=tmp_path, env=env)
    with hang_guard(120):
        while not (tmp_path / "pids").exists():
            assert run.poll() is None, "the training command ended by itself"
            time.sleep(0.1)
        trainer, worker = map(int, (tmp_path / "pids").read_text().split())
        (cancel,) = data["cancellation"]["commands"]
        subprocess.run(["bash", "-c", cancel], cwd=tmp_path, env=env, check=True)
        run.wait()
        while _alive(worker):
            time.sleep(0.1)
    assert not _alive(trainer)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie left for an init that does not reap is not running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")
