"""Checkpoints of rsl-rl-lib 2.x and 3.x, written by those versions' own runners, read by zoo.

The runs in tests/data/rsl_rl_legacy were trained by rsl-rl-lib 2.2.4 (the version Genesis'
locomotion examples pin: ``cfgs.pkl`` beside the checkpoint, the runner's normalizer saved as
``obs_norm_state_dict`` outside the ``ActorCritic[Recurrent]`` weights) and 3.1.1 (Isaac Lab's layout:
the normalizer inside ``model_state_dict``, a log-std actor, and a ``StudentTeacher`` distilled from it),
by ``make_legacy_runs.py`` beside them, which also recorded the returns of each runner's own
``get_inference_policy()`` stepped by zoo's evaluator. zoo, with rsl-rl-lib 5.x, must reproduce them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import assert_exports_act_like_checkpoint, zoo
from test_rsl_rl import ENV_ID, zoo_returns

DATA = Path(__file__).parent / "data" / "rsl_rl_legacy"
REFERENCE = json.loads((DATA / "reference.json").read_text())
GENESIS_MLP, GENESIS_LSTM = "logs/pendulum-mlp-2.2.4", "logs/pendulum-lstm-2.2.4"
ISAAC_PPO = "logs/rsl_rl/pendulum_ppo_3.1.1/2025-06-01_12-00-00"
ISAAC_STUDENT = "logs/rsl_rl/pendulum_distill_3.1.1/2025-06-01_13-00-00"
#: What zoo check says of each: (checkpoint layout, policy, model).
EXPECTED = {
    GENESIS_MLP: (
        "model_state_dict (rsl-rl-lib < 4 ActorCritic)",
        "actor",
        "MLP 3-32-32-1 (elu, obs normalizer)",
    ),
    GENESIS_LSTM: (
        "model_state_dict (rsl-rl-lib < 4 ActorCritic)",
        "actor",
        "LSTM(3->16)x1 + MLP 16-32-32-1 (elu, obs normalizer)",
    ),
    ISAAC_PPO: (
        "model_state_dict (rsl-rl-lib < 4 ActorCritic)",
        "actor",
        "MLP 3-32-32-1 (elu, obs normalizer)",
    ),
    ISAAC_STUDENT: (
        "model_state_dict (rsl-rl-lib < 4 StudentTeacher)",
        "student",
        "MLP 3-32-32-1 (elu, obs normalizer)",
    ),
}


@pytest.fixture
def runs(tmp_path) -> Path:
    """A private copy of the committed runs: zoo eval writes eval.json into a run dir."""
    shutil.copytree(DATA / "logs", tmp_path / "logs")
    return tmp_path


def test_the_committed_runs_are_the_old_runners_files():
    assert set(REFERENCE) == set(EXPECTED)
    for name, ref in REFERENCE.items():
        checkpoint = torch.load(DATA / name / "model_1.pt", weights_only=True)
        assert sorted(checkpoint) == ref["checkpoint_keys"]
        assert ("obs_norm_state_dict" in checkpoint) is (
            ref["rsl_rl"] == "2.2.4"
        )  # 2.x: the runner's normalizer
        model_keys = set(checkpoint["model_state_dict"])
        assert ("student.0.weight" in model_keys and "teacher.0.weight" in model_keys) is (
            name == ISAAC_STUDENT
        )
    assert "log_std" in torch.load(DATA / ISAAC_PPO / "model_1.pt", weights_only=True)["model_state_dict"]


def test_check_reads_each_layout(runs):
    reports = {
        str(Path(r["run"]["path"]).relative_to(runs)): r for r in zoo("check", runs / "logs", "--json").json()
    }
    assert set(reports) == set(EXPECTED)
    for name, (layout, role, model) in EXPECTED.items():
        details = reports[name]["details"]
        assert (details["checkpoint"], details["policy"], details["model"]) == (layout, role, model), name
        assert reports[name]["run"]["seed"] == 7
    for name in (GENESIS_MLP, GENESIS_LSTM):  # cfgs.pkl names no gymnasium id
        assert reports[name]["status"] == "warning" and reports[name]["details"]["config"] == "cfgs.pkl"
    assert reports[ISAAC_PPO]["status"] == reports[ISAAC_STUDENT]["status"] == "ok"


@pytest.mark.parametrize("name", list(EXPECTED))
def test_eval_reproduces_the_old_runners_inference_policy(runs, name, tmp_path):
    ours = zoo_returns(runs / name, tmp_path / "eval.json", "--env-id", ENV_ID)
    # the reference returns were recorded on another CPU: torch's kernels round differently by instruction set
    # (2e-9 relative measured between two Xeons), so equal means equal to float rounding
    np.testing.assert_allclose(ours, REFERENCE[name]["returns"], rtol=1e-7, atol=0)


def test_an_old_student_exports_like_it_evaluates(runs, tmp_path):
    """Once renamed, an old policy is a 5.x model: one export (legacy names, distillation) stands for all."""
    sidecars = assert_exports_act_like_checkpoint(
        runs / ISAAC_STUDENT, tmp_path, continuous=True, episodes=4, num_envs=2
    )
    assert all(sidecar["parity"]["max_abs_diff"] <= 1e-5 for sidecar in sidecars.values())
