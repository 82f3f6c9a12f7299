"""A release made by ``zoo push`` loads anywhere: pushed to ``zoo hub serve`` on 127.0.0.1, then evaluated by
``zoo enjoy`` in a process where no training framework can be imported, through ``model.safetensors`` +
``config.json``, with the very episodes the native file gives; and the card's "Use this model" snippets run.

One run per framework, trained here by the real library (the examples' trainers): CleanRL's DQN (bundled),
SB3's PPO behind VecNormalize (a ``model.save()`` zip with its statistics), skrl's PPO, rsl_rl's LSTM actor.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import EXAMPLES, base_install_env, episodes_of
from test_hub_roundtrip import SENTINEL, token_hub

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    with token_hub(tmp_path_factory.mktemp("hub")) as (server, _log):
        yield server


@pytest.fixture(scope="module")
def base_install(tmp_path_factory) -> dict:
    """The environment of a process in which the training frameworks cannot be imported (proven in
    tests/test_release_leaderboard.py)."""
    return base_install_env(tmp_path_factory.mktemp("base-install"))


def _train(*args: str) -> None:
    proc = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def _only(folder: Path, pattern: str) -> Path:
    (found,) = [p for p in folder.glob(pattern) if p.is_dir()]
    return found


#: name: (registry name, env id, enjoy flags); :func:`_make_run` trains the run
CASES = {
    "cleanrl": ("dqn", "CartPole-v1", ["--deterministic"]),
    "sb3": ("sb3_ppo", "Pendulum-v1", []),
    "skrl": ("skrl_ppo", "Pendulum-v1", []),
    "rsl_rl": ("rsl_ppo", "Pendulum-v1", []),
}


def _make_run(name: str, root: Path) -> Path:
    if name == "cleanrl":
        src = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
        shutil.copytree(src, root / "runs" / src.name)
        return root / "runs" / src.name
    if (
        name == "sb3"
    ):  # examples/train_sb3.py: model.save() behind VecNormalize, its statistics beside the zip
        from train_sb3 import train

        return train("ppo", "Pendulum-v1", 256, 0, root / "sb3" / "ppo-Pendulum-v1.zip", normalize=True)
    if name == "skrl":
        _train(
            str(REPO_ROOT / "examples" / "train_skrl.py"),
            "gaussian",
            "--out",
            str(root),
            "--timesteps",
            "200",
        )
        return _only(root / "skrl" / "Pendulum-v1", "*_ppo_torch")
    _train(
        str(REPO_ROOT / "examples" / "train_rsl_rl.py"),
        "--out",
        str(root),
        "--kinds",
        "lstm",
        "--checkpoints",
        "1",
        "--iterations",
        "1",
    )
    return _only(root / "rsl_rl" / "pendulum_lstm", "*")


def _hub_env(hub, home: Path, base: dict | None = None) -> dict:
    env = {k: v for k, v in (base or os.environ).items() if not k.startswith(("HF_", "ZOO_ALLOW"))}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HOME=str(home),
        HF_TOKEN=SENTINEL,
    )
    return env


def _zoo(*args, env: dict, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "zoo", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
    )


@pytest.mark.parametrize("name", list(CASES))
def test_a_release_evaluates_without_its_training_framework_episode_for_episode(
    name, hub, base_install, tmp_path
):
    exp_name, env_id, flags = CASES[name]
    run = _make_run(name, tmp_path)
    repo = f"demo/{env_id}-{exp_name}"
    pushed = _zoo(
        "push",
        run,
        "--repo-id",
        repo,
        "--exp-name",
        exp_name,
        "--env-id",
        env_id,
        "--yes",
        "--episodes",
        "2",
        "--json",
        "--stage-dir",
        tmp_path / "stage",
        env=_hub_env(hub, tmp_path / "pusher"),
    )
    assert pushed.returncode == 0, pushed.stderr[-3000:]
    staged = {f["name"] for f in json.loads(pushed.stdout)["files"]}
    assert {
        "agent.pt",
        "model.safetensors",
        "config.json",
        "policy.onnx",
        "policy.onnx.metadata.json",
    } <= staged

    enjoyed = _zoo(
        "enjoy",
        "--exp-name",
        exp_name,
        "--env-id",
        env_id,
        "--hf-repository",
        repo,
        "--allow-download",
        "--runs-dir",
        tmp_path / "none",
        "--episodes",
        "4",
        "--out",
        tmp_path / "remote.json",
        *flags,
        env=_hub_env(hub, tmp_path / "downloader", base_install),
        cwd=tmp_path,
    )
    assert enjoyed.returncode == 0, enjoyed.stderr[-3000:]
    remote = json.loads((tmp_path / "remote.json").read_text())
    assert Path(remote["checkpoint"]).name == "model.safetensors" and remote["source"]["kind"] == "download"
    fetched = {p.name for p in (tmp_path / "downloader").rglob("*") if p.is_file() and "snapshots" in p.parts}
    assert fetched == {
        "config.json",
        "model.safetensors",
    }  # nothing native, nothing pickled was even downloaded

    native = _zoo(
        "eval",
        run,
        "--exp-name",
        exp_name,
        "--env-id",
        env_id,
        "--deterministic",
        "--episodes",
        "4",
        "--quiet",
        "--out",
        tmp_path / "native.json",
        env=dict(os.environ),
    )
    assert native.returncode == 0, native.stderr[-3000:]
    assert episodes_of(tmp_path / "remote.json") == episodes_of(tmp_path / "native.json")


def _blocks(card: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", card, flags=re.S)


def test_the_card_says_what_each_file_is_for_and_its_snippets_run(hub, base_install, tmp_path):
    """The card's tags name the task, the env and the library; its torch-only snippet runs where zoo is not even
    installed, its safetensors snippet where no training framework is, its zoo enjoy command as written."""
    run = _make_run("cleanrl", tmp_path)
    repo = "demo/CartPole-v1-dqn-card"
    pushed = _zoo(
        "push",
        run,
        "--repo-id",
        repo,
        "--yes",
        "--episodes",
        "2",
        "--stage-dir",
        tmp_path / "stage",
        env=_hub_env(hub, tmp_path / "pusher"),
    )
    assert pushed.returncode == 0, pushed.stderr[-3000:]
    card = (tmp_path / "stage" / "README.md").read_text()
    header = card.split("---")[1]
    for tag in ("reinforcement-learning", "CartPole-v1", "cleanrl"):
        assert f"\n- {tag}\n" in header
    for name in ("agent.pt", "model.safetensors", "config.json", "policy.onnx"):
        assert re.search(rf"\| `{re.escape(name)}` \| [A-Za-z][^|]+\|", card), (
            name
        )  # a row saying what it is for

    torch_only, with_zoo = _blocks(card, "python")[:2]
    assert "import zoo" not in torch_only and "from zoo" not in torch_only
    no_zoo = tmp_path / "no-zoo"
    no_zoo.mkdir()
    (no_zoo / "zoo.py").write_text("raise ImportError('zoo is not installed here')\n")
    env = _hub_env(hub, tmp_path / "torch-only", dict(os.environ, PYTHONPATH=str(no_zoo)))
    ran = subprocess.run(
        [sys.executable, "-c", torch_only], capture_output=True, text=True, env=env, cwd=no_zoo, timeout=300
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert re.fullmatch(r"return \d+\.\d\d\n", ran.stdout)

    ran = subprocess.run(
        [sys.executable, "-c", with_zoo],
        capture_output=True,
        text=True,
        timeout=300,
        env=_hub_env(hub, tmp_path / "zoo-snippet", base_install),
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert float(ran.stdout.strip().splitlines()[-1]) > 0

    enjoy = next(
        line
        for block in _blocks(card, "bash")
        for line in block.splitlines()
        if line.startswith("zoo enjoy ")
    )
    argv = enjoy.split()[1:] + [
        "--episodes",
        "2",
        "--runs-dir",
        str(tmp_path / "none"),
        "--out",
        str(tmp_path / "e.json"),
    ]
    # the card's command samples as dqn's protocol does, which takes the native file: a full install runs it
    enjoyed = _zoo(*argv, env=_hub_env(hub, tmp_path / "enjoy-snippet"), cwd=tmp_path)
    assert enjoyed.returncode == 0, enjoyed.stderr[-3000:]
    assert json.loads((tmp_path / "e.json").read_text())["num_episodes"] == 2
