"""Push to ``zoo hub serve`` on 127.0.0.1 and enjoy it back, through the real ``zoo`` CLI and client.

The CLI runs as a subprocess so that huggingface_hub reads ``HF_ENDPOINT``, ``HF_HUB_DISABLE_XET``
and ``HF_HOME`` at import, exactly as it does for a user.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import EXAMPLES
from test_hub_server import hub_log

SENTINEL = "hf_SENTINELroundtrip0123456789abcdefghij"


@contextlib.contextmanager
def token_hub(tmp_path):
    """A hub on 127.0.0.1 that takes the SENTINEL token (user alice, org demo), stopped on exit; yields
    the server and its access log."""
    from zoo.hub_server.server import HubServer

    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{SENTINEL} alice demo\n")
    with hub_log() as log, HubServer(tmp_path / "hub-root", token_file=tokens).start() as server:
        yield server, log


@pytest.fixture
def hub(tmp_path):
    """A token-protected hub on 127.0.0.1 whose access log is kept, to prove no token reaches it."""
    with token_hub(tmp_path) as (server, log):
        yield server
    assert log.getvalue().count("\n") > 3 and SENTINEL not in log.getvalue()


def _zoo(
    *args, hub_url: str, home, token: str | None = SENTINEL, cwd=None, offline: bool = False
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "ZOO_ALLOW"))}
    env.update(HF_ENDPOINT=hub_url, HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1", HF_HOME=str(home))
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    if token:
        env["HF_TOKEN"] = token
    cmd = [sys.executable, "-m", "zoo", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_push_then_enjoy_round_trip(hub, tmp_path):
    run = tmp_path / "runs" / next(EXAMPLES.glob("CartPole-v1__dqn__*")).name
    shutil.copytree(next(EXAMPLES.glob("CartPole-v1__dqn__*")), run)
    repo = "demo/CartPole-v1-dqn-seed1"
    local = tmp_path / "local.json"
    pushed = _zoo(
        "push",
        run,
        "--repo-id",
        repo,
        "--yes",
        "--episodes",
        "8",
        "--stage-dir",
        tmp_path / "stage",
        hub_url=hub.url,
        home=tmp_path / "pusher",
    )
    assert pushed.returncode == 0, pushed.stderr
    assert "committed " in pushed.stdout and f"to {repo} @ main" in pushed.stdout

    fetched = _zoo(
        "enjoy",
        "--exp-name",
        "dqn",
        "--env-id",
        "CartPole-v1",
        "--run-seed",
        "1",
        "--hf-repository",
        repo,
        "--runs-dir",
        tmp_path / "none",
        "--allow-download",
        "--deterministic",
        "--episodes",
        "8",
        "--out",
        tmp_path / "remote.json",
        hub_url=hub.url,
        home=tmp_path / "fresh-cache",
    )
    assert fetched.returncode == 0, fetched.stderr
    assert f"model: downloaded from {repo} @ main, commit" in fetched.stderr
    local_eval = subprocess.run(
        [sys.executable, "-m", "zoo", "eval", run, "--deterministic", "-n", "8", "--quiet", "--out", local],
        capture_output=True,
        text=True,
    )
    assert local_eval.returncode == 0, local_eval.stderr
    remote = json.loads((tmp_path / "remote.json").read_text())
    assert remote["metrics"]["return_mean"] == json.loads(local.read_text())["metrics"]["return_mean"]
    assert remote["source"]["kind"] == "download" and remote["source"]["repo_id"] == repo

    env = dict(
        os.environ,
        HF_ENDPOINT=hub.url,
        HF_HUB_DISABLE_XET="1",
        HF_TOKEN=SENTINEL,
        HF_HOME=str(tmp_path / "card-home"),
    )
    code = f"import json; from huggingface_hub import ModelCard; print(json.dumps(ModelCard.load({repo!r}).data.to_dict()))"
    card = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert card.returncode == 0, card.stderr
    data = json.loads(card.stdout)
    assert data["library_name"] == "cleanrl" and "CartPole-v1" in data["tags"]
    metric = data["model-index"][0]["results"][0]["metrics"][0]
    pushed_eval = json.loads((tmp_path / "stage" / "eval.json").read_text())["metrics"]
    assert metric == {
        "type": "mean_reward",
        "name": "mean_reward",
        "value": f"{pushed_eval['return_mean']:.2f} +/- {pushed_eval['return_std']:.2f}",
    }

    hub.stop()  # a second enjoy runs from the cache with the server gone
    again = _zoo(
        "enjoy",
        "--exp-name",
        "dqn",
        "--env-id",
        "CartPole-v1",
        "--run-seed",
        "1",
        "--hf-repository",
        repo,
        "--runs-dir",
        tmp_path / "none",
        "--deterministic",
        "--episodes",
        "8",
        "--out",
        tmp_path / "cached.json",
        hub_url=hub.url,
        home=tmp_path / "fresh-cache",
    )
    assert again.returncode == 0, again.stderr
    assert "model: HF cache of" in again.stderr
    for proc in (pushed, fetched, again):
        assert SENTINEL not in proc.stdout + proc.stderr
    for path in (tmp_path / "stage").rglob("*"):
        assert path.is_dir() or SENTINEL.encode() not in path.read_bytes()


@pytest.fixture
def pushed_repo(hub, tmp_path):
    """The bundled dqn run pushed to the local hub as demo/CartPole-v1-dqn-seed1."""
    src = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
    run = tmp_path / "runs" / src.name
    shutil.copytree(src, run)
    result = _zoo(
        "push",
        run,
        "--repo-id",
        "demo/CartPole-v1-dqn-seed1",
        "--yes",
        "--episodes",
        "2",
        "--stage-dir",
        tmp_path / "stage",
        hub_url=hub.url,
        home=tmp_path / "pusher",
    )
    assert result.returncode == 0, result.stderr
    return "demo/CartPole-v1-dqn-seed1"


def test_a_relative_hf_home_names_one_absolute_file_downloaded_or_cached(hub, tmp_path, pushed_repo):
    """``HF_HOME=hf-home``: the download and the later cache hit are the same absolute path in eval.json, which
    holds wherever eval.json is read from."""
    sources = []
    for consent in (["--allow-download"], []):
        result = _zoo(
            "enjoy",
            "--exp-name",
            "dqn",
            "--env-id",
            "CartPole-v1",
            "--hf-repository",
            pushed_repo,
            "--runs-dir",
            "none",
            "--episodes",
            "1",
            "--out",
            "e.json",
            *consent,
            hub_url=hub.url,
            home="hf-home",
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stderr
        sources.append(json.loads((tmp_path / "e.json").read_text())["source"])
    assert [s["kind"] for s in sources] == ["download", "cache"]
    assert sources[0]["path"] == sources[1]["path"]
    assert Path(sources[1]["path"]).is_relative_to(tmp_path / "hf-home" / "hub")


def _enjoy(hub, tmp_path, *args, home="cache", token=SENTINEL):
    return _zoo(
        "enjoy",
        "--env-id",
        "CartPole-v1",
        "--run-seed",
        "1",
        "--runs-dir",
        tmp_path / "none",
        "--episodes",
        "2",
        "--out",
        tmp_path / "e.json",
        *args,
        hub_url=hub.url,
        home=tmp_path / home,
        token=token,
    )


def test_corrupted_download_is_caught_before_loading(hub, tmp_path, pushed_repo):
    from zoo.artifacts.digest import sha256_file

    model = tmp_path / "runs" / next(EXAMPLES.glob("CartPole-v1__dqn__*")).name / "dqn.cleanrl_model"
    digest = sha256_file(model)
    blob = tmp_path / "hub-root" / "blobs" / "sha256" / digest[:2] / digest[2:]
    data = bytearray(blob.read_bytes())
    data[-100] ^= 0xFF  # same size, different bytes: only a checksum notices
    blob.write_bytes(bytes(data))
    result = _enjoy(hub, tmp_path, "--exp-name", "dqn", "--hf-repository", pushed_repo, "--allow-download")
    assert result.returncode == 1, result.stderr
    assert f"does not match the hub's {digest}" in result.stderr and "deleted" in result.stderr
    assert not (tmp_path / "e.json").exists()
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.read_bytes() == bytes(data)]


def test_missing_file_is_remembered_and_not_asked_again_without_consent(hub, tmp_path, pushed_repo):
    first = _enjoy(hub, tmp_path, "--exp-name", "c51", "--hf-repository", pushed_repo, "--allow-download")
    assert first.returncode == 1 and f"{pushed_repo} @ main has no file c51.cleanrl_model" in first.stderr
    hub.stop()
    second = _enjoy(hub, tmp_path, "--exp-name", "c51", "--hf-repository", pushed_repo)
    assert second.returncode == 1 and "remembered from an earlier download" in second.stderr


def test_private_repo_and_clear_errors(hub, tmp_path):
    src = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
    run = tmp_path / "runs" / src.name
    shutil.copytree(src, run)
    pushed = _zoo(
        "push",
        run,
        "--hf-entity",
        "demo",
        "--private",
        "--yes",
        "--episodes",
        "2",
        "--stage-dir",
        tmp_path / "stage",
        hub_url=hub.url,
        home=tmp_path / "pusher",
    )
    assert pushed.returncode == 0, pushed.stderr
    anonymous = _enjoy(
        hub, tmp_path, "--exp-name", "dqn", "--hf-entity", "demo", "--allow-download", token=None
    )
    assert anonymous.returncode == 1
    assert (
        "repo demo/CartPole-v1-dqn-seed1 not found" in anonymous.stderr
        and "--hf-entity demo" in anonymous.stderr
    )
    owner = _enjoy(
        hub, tmp_path, "--exp-name", "dqn", "--hf-entity", "demo", "--allow-download", home="owner"
    )
    assert owner.returncode == 0, owner.stderr
    (
        run / "eval.json"
    ).unlink()  # a published push keeps its eval.json: a new evaluation gives the PR changes
    pr = _zoo(
        "push",
        run,
        "--hf-entity",
        "demo",
        "--yes",
        "--create-pr",
        "--commit-message",
        "more episodes",
        "--episodes",
        "3",
        "--stage-dir",
        tmp_path / "stage",
        "--json",
        hub_url=hub.url,
        home=tmp_path / "pusher",
    )
    assert pr.returncode == 0, pr.stderr
    assert json.loads(pr.stdout)["pr_url"].endswith("/discussions/1")
    revision = _enjoy(
        hub,
        tmp_path,
        "--exp-name",
        "dqn",
        "--hf-entity",
        "demo",
        "--revision",
        "v9",
        "--allow-download",
        home="rev",
    )
    assert revision.returncode == 1 and "revision 'v9' not found" in revision.stderr
    no_token_push = _zoo(
        "push",
        run,
        "--hf-entity",
        "demo",
        "--yes",
        "--stage-dir",
        tmp_path / "stage2",
        hub_url=hub.url,
        home=tmp_path / "pusher",
        token=None,
    )
    assert no_token_push.returncode == 1
    assert "wants a token to push to demo/CartPole-v1-dqn-seed1, and none is set" in no_token_push.stderr
    for proc in (anonymous, owner, revision, no_token_push):
        assert "Traceback" not in proc.stderr and SENTINEL not in proc.stdout + proc.stderr


def test_sb3_model_with_vecnormalize_round_trips_under_huggingface_sb3_names(hub, tmp_path):
    """rl_zoo3 layout in, huggingface_sb3 layout on the hub ({algo}-{env_id}.zip + vec_normalize.pkl), same scores out."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    run = tmp_path / "logs" / "ppo" / "Pendulum-v1_1"
    (run / "Pendulum-v1").mkdir(parents=True)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        venv = VecNormalize(make_vec_env("Pendulum-v1", n_envs=2, seed=0))
        PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=2, seed=0).learn(256).save(
            run / "Pendulum-v1.zip"
        )
        venv.save(run / "Pendulum-v1" / "vecnormalize.pkl")
    finally:
        torch.set_num_threads(threads)
    repo = "demo/ppo-Pendulum-v1"
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
        "--json",
        hub_url=hub.url,
        home=tmp_path / "pusher",
    )
    assert pushed.returncode == 0, pushed.stderr
    staged = {f["name"] for f in json.loads(pushed.stdout)["files"]}
    assert {"ppo-Pendulum-v1.zip", "vec_normalize.pkl", "Pendulum-v1.zip"} <= staged
    local = subprocess.run(
        [sys.executable, "-m", "zoo", "eval", run, "-n", "4", "--quiet", "--out", tmp_path / "local.json"],
        capture_output=True,
        text=True,
    )
    assert local.returncode == 0, local.stderr
    fetched = _zoo(
        "enjoy",
        "--exp-name",
        "sb3_ppo",
        "--env-id",
        "Pendulum-v1",
        "--hf-repository",
        repo,
        "--runs-dir",
        tmp_path / "none",
        "--allow-download",
        "--episodes",
        "4",
        "--out",
        tmp_path / "remote.json",
        hub_url=hub.url,
        home=tmp_path / "cache",
    )
    assert fetched.returncode == 0, fetched.stderr
    remote = json.loads((tmp_path / "remote.json").read_text())
    assert [e["return"] for e in remote["episodes"]] == [
        e["return"] for e in json.loads((tmp_path / "local.json").read_text())["episodes"]
    ]
