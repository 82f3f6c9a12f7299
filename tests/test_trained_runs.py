"""Runs produced by real training code (examples/train_examples.py), a few hundred steps each.

Every layout the registry knows is exercised on a file that an actual training loop wrote next to
its TensorBoard events: ``zoo check`` recognises the run and reads its logged return, and ``zoo
eval`` loads the weights and rolls them out.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from helpers import REPO, zoo


@pytest.fixture(scope="module")
def train_examples():
    spec = importlib.util.spec_from_file_location("train_examples", REPO / "examples" / "train_examples.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_examples"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("train_examples", None)


@pytest.fixture(scope="module")
def trained_runs(train_examples, tmp_path_factory):
    import torch

    out = tmp_path_factory.mktemp("trained") / "runs"
    out.mkdir()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        m = train_examples
        short = {"total_timesteps": 400, "learning_starts": 100, "eval_frequency": 200, "eval_episodes": 2}
        m.train_dqn(m.DQNArgs(**short), out)
        m.train_c51(m.C51Args(**short), out)
        m.train_td3(m.TD3Args(**short), out)
    finally:
        torch.set_num_threads(threads)
    return out


def test_check_recognises_every_trained_layout(trained_runs):
    result = zoo("check", trained_runs, "--json")
    assert result.exit_code == 0, result.stderr
    reports = {r["run"]["exp_name"]: r for r in result.json()}
    assert set(reports) == {"dqn", "c51", "td3_continuous_action"}
    for report in reports.values():
        assert report["status"] == "ok", report
        assert report["details"]["weights_only"] is True
        assert "train_return" in report["details"], report
    assert reports["c51"]["details"]["model_kwargs"] == {"n_atoms": 101, "v_min": -100.0, "v_max": 100.0}
    assert reports["td3_continuous_action"]["details"]["tensors"] == 8 + 6 + 6


def test_eval_runs_each_trained_model(trained_runs, tmp_path):
    for run in sorted(p for p in trained_runs.iterdir() if p.is_dir()):
        out = tmp_path / f"{run.name}.json"
        result = zoo("eval", run, "-n", "2", "--num-envs", "2", "--quiet", "--out", out)
        assert result.exit_code == 0, (run.name, result.stderr)
        data = json.loads(out.read_text())
        assert data["exp_name"] == run.name.split("__")[1] and len(data["episodes"]) == 2
