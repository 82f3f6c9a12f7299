"""No connection without consent: check, eval, enjoy and export (no --allow-download) and push (no --yes)."""

from __future__ import annotations

import json
import shutil
import socket

import pytest
from helpers import EXAMPLES, zoo


@pytest.fixture
def no_network(monkeypatch):
    """Record (and block) every attempt to open an internet socket connection in this process."""
    attempts: list[tuple] = []
    real_connect = socket.socket.connect

    def guarded(self, address, *args):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError(f"network blocked by test: {address}")
        return real_connect(self, address, *args)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(socket.socket, "connect_ex", lambda self, address: attempts.append(address) or 111)
    monkeypatch.setattr(
        socket,
        "create_connection",
        lambda address, *a, **k: attempts.append(address) or guarded(socket.socket(), address),
    )
    return attempts


@pytest.fixture
def runs(tmp_path):
    shutil.copytree(EXAMPLES, tmp_path / "runs")
    return tmp_path / "runs"


def test_check_eval_enjoy_push_open_no_connection(no_network, runs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("ZOO_ALLOW_NETWORK", raising=False)
    dqn = next(runs.glob("CartPole-v1__dqn__*"))
    assert zoo("check", runs).exit_code == 0
    assert zoo("eval", dqn, "-n", "2", "--quiet").exit_code == 0
    refused = zoo("enjoy", "--exp-name", "c51", "--env-id", "Acrobot-v1", "--runs-dir", runs)
    assert refused.exit_code == 3
    assert "cleanrl/Acrobot-v1-c51-seed1" in refused.stderr and "c51.cleanrl_model" in refused.stderr
    assert "revision main" in refused.stderr and "--allow-download" in refused.stderr
    local = zoo(
        "enjoy", "--exp-name", "dqn", "--env-id", "CartPole-v1", "--runs-dir", runs, "--episodes", "2"
    )
    assert local.exit_code == 0 and "model: local run" in local.stderr
    pushed = zoo("push", dqn, "--hf-entity", "me", "--stage-dir", tmp_path / "stage")
    assert pushed.exit_code == 0 and "dry run" in pushed.stdout and "pass --allow-download" in pushed.stdout
    assert no_network == []


def test_offline_wins_over_consent(no_network, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    result = zoo(
        "enjoy",
        "--exp-name",
        "dqn",
        "--env-id",
        "CartPole-v1",
        "--runs-dir",
        tmp_path,
        "--allow-download",
        env={"HF_HUB_OFFLINE": "1"},
    )
    assert (
        result.exit_code == 1 and "HF_HUB_OFFLINE=1" in result.stderr and "not in the cache" in result.stderr
    )
    assert no_network == []


def test_session_consent_variable_is_consent(no_network, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    result = zoo(
        "enjoy",
        "--exp-name",
        "dqn",
        "--env-id",
        "CartPole-v1",
        "--runs-dir",
        tmp_path,
        env={"ZOO_ALLOW_NETWORK": "1", "HF_HUB_OFFLINE": "0"},
    )
    # consent given, so zoo tried the hub (and the guard stopped it): one clear line, exit 1
    assert result.exit_code == 1 and "cannot reach" in result.stderr
    assert no_network, "with consent, zoo should have tried to connect"
    # and while the client retried, the user saw which host it waited for
    first, *rest = result.stderr.splitlines()
    assert first == (
        "downloading dqn.cleanrl_model of cleanrl/CartPole-v1-dqn-seed1 @ main from "
        "https://huggingface.co ..."
    ) and rest[0].startswith("error: cannot reach")


def test_export_of_a_hub_repo_says_what_it_would_fetch_and_offline_wins(no_network, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("ZOO_ALLOW_NETWORK", raising=False)
    repo = "demo/CartPole-v1-dqn-seed1"
    card = zoo("export", repo, "--out", "f.onnx")
    assert card.exit_code == 3
    assert (
        f"zoo would download README.md of {repo} at revision main to learn what the repo holds, then the model "
        "file it names"
    ) in card.stderr and "pass --allow-download" in card.stderr
    # what the repo holds is said: the card is not needed, and the refusal names the model file
    named = zoo(
        "export", repo, "--exp-name", "dqn", "--env-id", "CartPole-v1", "--revision", "v2", "--out", "f.onnx"
    )
    assert named.exit_code == 3
    assert f"zoo would download dqn.cleanrl_model from {repo} at revision v2" in named.stderr
    offline = zoo("export", repo, "--allow-download", "--out", "f.onnx", env={"HF_HUB_OFFLINE": "1"})
    assert offline.exit_code == 1
    assert f"offline (HF_HUB_OFFLINE=1) and README.md of {repo} @ main is not in the cache" in offline.stderr
    assert no_network == [] and not list(tmp_path.glob("*.onnx*"))


def test_a_local_path_wins_over_the_repo_id_it_spells(no_network, runs, tmp_path, monkeypatch):
    """``runs/CartPole-v1__dqn__1__1796029650`` is also a valid repo id; the folder of that name is exported."""
    monkeypatch.chdir(tmp_path)
    dqn = next(runs.glob("CartPole-v1__dqn__*")).relative_to(tmp_path)
    result = zoo("export", dqn, "--out", "dqn.onnx", "--allow-download")
    assert result.exit_code == 0, result.stderr
    meta = json.loads((tmp_path / "dqn.onnx.metadata.json").read_text())
    assert meta["checkpoint"] == f"{dqn}/dqn.cleanrl_model" and "source" not in meta
    assert no_network == []
    neither = zoo("export", "runs/no/such-run", "--out", "x.onnx")
    assert neither.exit_code == 2 and neither.stderr.startswith(
        "error: runs/no/such-run is neither an existing path nor a hub repo id (ORG/NAME)"
    )
