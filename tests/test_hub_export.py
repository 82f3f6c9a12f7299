"""``zoo export ORG/REPO``: a release pushed to ``zoo hub serve`` on 127.0.0.1, exported straight from the hub.

The CLI runs as a subprocess (huggingface_hub reads ``HF_ENDPOINT`` and ``HF_HOME`` at import), against the
token-protected hub of :mod:`test_hub_roundtrip`. What is exported from the hub must act exactly as the export
of the run that was pushed; what the hub serves tampered with is refused before anything is loaded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import EXAMPLES, zoo
from test_hub_roundtrip import SENTINEL, _zoo, token_hub

REPO = "demo/CartPole-v1-dqn-seed1"


@pytest.fixture
def hub(tmp_path):
    """The hub and its access log (``zoo.hub`` records every request)."""
    with token_hub(tmp_path) as (server, log):
        yield server, log


@pytest.fixture
def run(hub, tmp_path) -> Path:
    """The bundled dqn run (trained by CleanRL's dqn.py), pushed to the hub as ``REPO``."""
    src = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
    run = tmp_path / "runs" / src.name
    shutil.copytree(src, run)
    pushed = _zoo(
        "push",
        run,
        "--repo-id",
        REPO,
        "--yes",
        "--episodes",
        "2",
        "--stage-dir",
        tmp_path / "stage",
        hub_url=hub[0].url,
        home=tmp_path / "pusher",
    )
    assert pushed.returncode == 0, pushed.stderr
    return run


def _upload(hub_url: str, repo_id: str, folder: Path, tmp_path: Path) -> None:
    """``folder`` uploaded as ``repo_id`` by huggingface_hub itself (not zoo push), in one commit."""
    upload = (
        "import sys; from huggingface_hub import HfApi; api = HfApi(); api.create_repo(sys.argv[1]); "
        "api.upload_folder(repo_id=sys.argv[1], folder_path=sys.argv[2])"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(
        HF_ENDPOINT=hub_url, HF_TOKEN=SENTINEL, HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp_path / "uploader")
    )
    pushed = subprocess.run(
        [sys.executable, "-c", upload, repo_id, folder], env=env, capture_output=True, text=True, timeout=300
    )
    assert pushed.returncode == 0, pushed.stderr


def _actions(path: Path, obs: np.ndarray) -> np.ndarray:
    """What an exported file does with ``obs``, loaded as a deployment loads it."""
    if path.suffix == ".onnx":
        import onnxruntime as ort

        return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
            ["actions"], {"obs": obs}
        )[0]
    import torch

    return torch.jit.load(str(path))(torch.as_tensor(obs)).numpy()


def _observations(env_id: str, n: int = 512) -> np.ndarray:
    import gymnasium as gym

    env = gym.make(env_id)
    env.observation_space.seed(0)
    obs = np.stack([env.observation_space.sample() for _ in range(n)]).astype(np.float32)
    env.close()
    return np.clip(obs, -10, 10)  # CartPole's unbounded velocities: values a policy sees


def test_export_from_the_hub_acts_exactly_as_the_export_of_the_run_pushed(hub, run, tmp_path):
    from zoo.artifacts.digest import sha256_file

    server, log = hub
    local = zoo("export", run, "--out", tmp_path / "local.onnx", "-q")
    assert local.exit_code == 0, local.stderr

    before = log.getvalue()
    refused = _zoo("export", REPO, "--out", tmp_path / "hub.onnx", hub_url=server.url, home=tmp_path / "hf")
    assert refused.returncode == 3, refused.stderr
    assert (
        f"zoo would download README.md of {REPO} at revision main to learn what the repo holds, then the model "
        f"file it names ({server.url})"
    ) in refused.stderr and "pass --allow-download" in refused.stderr
    assert log.getvalue() == before, "without consent, not one request reaches the hub"
    assert not (tmp_path / "hub.onnx").exists()

    fetched = _zoo(
        "export",
        REPO,
        "--allow-download",
        "--out",
        tmp_path / "hub.onnx",
        hub_url=server.url,
        home=tmp_path / "hf",
    )
    assert fetched.returncode == 0, fetched.stderr
    assert f"downloading README.md of {REPO} @ main from {server.url}" in fetched.stderr
    assert f"model: downloaded from {REPO} @ main, commit" in fetched.stderr
    assert "parity: exact match on 257 observations" in fetched.stderr
    meta = json.loads((tmp_path / "hub.onnx.metadata.json").read_text())
    assert (meta["exp_name"], meta["task"], meta["framework"]) == ("dqn", "CartPole-v1", "cleanrl")
    assert (
        meta["parity"]["exact"] and meta["source"]["kind"] == "download" and meta["source"]["repo_id"] == REPO
    )
    assert meta["source"]["revision"] == "main" and len(meta["source"]["commit"]) == 40
    checkpoint = Path(meta["checkpoint"])
    assert checkpoint.is_relative_to(tmp_path / "hf" / "hub") and meta["source"]["path"] == meta["checkpoint"]
    assert sha256_file(checkpoint) == sha256_file(run / "dqn.cleanrl_model")
    obs = _observations("CartPole-v1")
    expected = _actions(tmp_path / "local.onnx", obs)
    assert np.array_equal(_actions(tmp_path / "hub.onnx", obs), expected)

    server.stop()  # the cache first: with the hub gone, and offline, the cached release exports again
    cached = _zoo(
        "export",
        REPO,
        "--format",
        "torchscript",
        "--out",
        tmp_path / "hub.ts",
        hub_url=server.url,
        home=tmp_path / "hf",
        offline=True,
    )
    assert cached.returncode == 0, cached.stderr
    assert f"model: HF cache of {REPO} @ main, commit {meta['source']['commit'][:12]}" in cached.stderr
    assert "downloading" not in cached.stderr
    assert json.loads((tmp_path / "hub.ts.metadata.json").read_text())["source"]["kind"] == "cache"
    assert np.array_equal(_actions(tmp_path / "hub.ts", obs), expected)
    for proc in (refused, fetched, cached):
        assert SENTINEL not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", ["dqn.cleanrl_model", "README.md"])
def test_a_file_the_hub_serves_tampered_with_is_refused_and_nothing_is_written(hub, run, tmp_path, name):
    """Same size, other bytes: the checksum the hub reported for the file (sha256 for the LFS model, the git
    blob sha1 for the card) no longer matches, so the download is deleted before it is read."""
    from zoo.artifacts.digest import sha256_file

    source = run / name if name != "README.md" else tmp_path / "stage" / "README.md"
    digest = sha256_file(source)
    blob = tmp_path / "hub-root" / "blobs" / "sha256" / digest[:2] / digest[2:]
    data = bytearray(blob.read_bytes())
    data[-10] ^= 0x01
    blob.write_bytes(bytes(data))
    result = _zoo(
        "export",
        REPO,
        "--allow-download",
        "--out",
        tmp_path / "hub.onnx",
        hub_url=hub[0].url,
        home=tmp_path / "hf",
    )
    assert result.returncode == 1, result.stderr
    assert f"{name}: " in result.stderr and "does not match the hub's" in result.stderr
    assert "the download was deleted" in result.stderr and "Traceback" not in result.stderr
    assert not list(tmp_path.glob("hub.onnx*")) and not list(tmp_path.glob(".hub.onnx.*"))
    assert not [p for p in (tmp_path / "hf").rglob("*") if p.is_file() and p.read_bytes() == bytes(data)]


def test_an_unknown_repo_is_one_line(hub, tmp_path):
    result = _zoo(
        "export",
        "demo/no-such-repo",
        "--allow-download",
        "--out",
        tmp_path / "x.onnx",
        hub_url=hub[0].url,
        home=tmp_path / "hf",
        token=None,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines()[-2:] == [
        f"error: repo demo/no-such-repo not found on {hub[0].url}",
        "hint: check the repo id (ORG/NAME), or set HF_TOKEN if it is private",
    ]
    assert not (tmp_path / "x.onnx").exists()


def test_a_card_over_the_bound_is_never_downloaded(hub, tmp_path):
    from zoo.hub.fetch import MAX_CARD_BYTES

    folder = tmp_path / "big-card"
    folder.mkdir()
    size = (folder / "README.md").write_text("---\nlibrary_name: cleanrl\n---\n" + "x" * MAX_CARD_BYTES)
    _upload(hub[0].url, "demo/big-card", folder, tmp_path)
    result = _zoo(
        "export",
        "demo/big-card",
        "--allow-download",
        "--out",
        tmp_path / "x.onnx",
        hub_url=hub[0].url,
        home=tmp_path / "hf",
    )
    assert result.returncode == 1
    assert result.stderr.splitlines()[-2:] == [
        f"error: README.md of demo/big-card is {size:,} bytes, over the 1 MiB a model card may take; "
        "not downloading it",
        "hint: say what the repo holds with --exp-name and --env-id",
    ]
    assert not list((tmp_path / "hf").rglob("README.md"))


def test_the_card_names_the_experiment_and_env_and_never_a_module_to_import(dqn_run, tmp_path):
    """zoo's own card (staged by a dry-run push) names both; cut from it, its enjoy command leaves CleanRL's four DQN
    entries to choose from (no guess), and an env id in gymnasium's ``module:Name`` form is not taken (gymnasium
    would import the module: a card must not choose code to run)."""
    from zoo.hub.repo_target import read_card
    from zoo.registry import load_registry

    staged = zoo("push", dqn_run, "--hf-entity", "me", "--episodes", "2", "--stage-dir", tmp_path / "stage")
    assert staged.exit_code == 0, staged.stderr
    card, registry = (tmp_path / "stage" / "README.md").read_text(), load_registry()
    assert read_card(card, registry) == ("dqn", "CartPole-v1")
    no_enjoy = "\n".join(line for line in card.splitlines() if "zoo enjoy" not in line)
    assert read_card(no_enjoy, registry) == (None, "CartPole-v1")
    hostile = card.replace("name: CartPole-v1", "name: antigravity:CartPole-v1")
    assert read_card(hostile, registry) == ("dqn", None)


@pytest.fixture
def sb3_run(tmp_path) -> Path:
    """A repo folder as huggingface_sb3's ``package_to_hub`` lays it out: ``ppo-Pendulum-v1.zip`` and
    ``vec_normalize.pkl`` from a PPO trained with VecNormalize (256 steps), and the card huggingface_sb3 writes."""
    pytest.importorskip("huggingface_sb3")  # rl_zoo3's dependency (the rlzoo3 extra)
    import torch
    from huggingface_sb3.push_to_hub import _generate_model_card
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    folder = tmp_path / "sb3-release"
    folder.mkdir()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        venv = VecNormalize(make_vec_env("Pendulum-v1", n_envs=2, seed=0))
        PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=2, seed=0).learn(256).save(
            folder / "ppo-Pendulum-v1.zip"
        )
        venv.save(folder / "vec_normalize.pkl")
    finally:
        torch.set_num_threads(threads)
    _generate_model_card("PPO", "Pendulum-v1", -1200.0, 100.0).save(folder / "README.md")
    return folder


def test_a_huggingface_sb3_release_exports_by_its_card_with_its_normalizer(hub, sb3_run, tmp_path):
    """No --exp-name: the card of huggingface_sb3 says stable-baselines3 and PPO, which is sb3_ppo; its
    vec_normalize.pkl comes from the same commit and is baked in, as it is when the folder is exported locally."""
    server = hub[0]
    _upload(server.url, "demo/ppo-Pendulum-v1", sb3_run, tmp_path)
    local = zoo("export", sb3_run, "--out", tmp_path / "local.onnx", "-q")
    assert local.exit_code == 0, local.stderr
    fetched = _zoo(
        "export",
        "demo/ppo-Pendulum-v1",
        "--allow-download",
        "--out",
        tmp_path / "hub.onnx",
        hub_url=server.url,
        home=tmp_path / "hf",
    )
    assert fetched.returncode == 0, fetched.stderr
    assert "downloading ppo-Pendulum-v1.zip of demo/ppo-Pendulum-v1" in fetched.stderr
    meta = json.loads((tmp_path / "hub.onnx.metadata.json").read_text())
    assert (meta["exp_name"], meta["task"]) == ("sb3_ppo", "Pendulum-v1")
    assert meta["normalization_baked"] and meta["normalization"]["kind"] == "sb3_vecnormalize"
    assert (
        meta["normalization"]
        == json.loads((tmp_path / "local.onnx.metadata.json").read_text())["normalization"]
    )
    obs = _observations("Pendulum-v1")
    assert np.array_equal(_actions(tmp_path / "hub.onnx", obs), _actions(tmp_path / "local.onnx", obs))
