"""rsl_rl Distillation: zoo evaluates and exports the student, never the teacher.

A PPO teacher is trained (2 iterations, real ``OnPolicyRunner``) on a privileged observation group,
Pendulum's observation plus the true angle, which a deployed robot would not have. rsl_rl's
``DistillationRunner`` then loads it as the teacher and distills an MLP and a GRU student that see only
the ``policy`` group (2 iterations each), as examples/train_rsl_rl.py's ``teacher`` and ``student`` runs are
trained. Their checkpoints hold ``student_state_dict`` and ``teacher_state_dict``; zoo must rebuild the
student from the ``student:`` config and match ``runner.get_inference_policy()`` (the student) episode for
episode on plain Pendulum-v1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import POLICY_TERM, assert_exports_act_like_checkpoint, zoo
from test_rsl_rl import ENV_ID, rsl_rl_returns, zoo_returns
from train_rsl_rl import PrivilegedVecEnv, configure, student_cfg, train


class Distilled:
    def __init__(self, run_dir: Path, runner, model: Path):
        self.run_dir, self.runner, self.model = run_dir, runner, model


@pytest.fixture(scope="module")
def rsl_distilled(tmp_path_factory) -> dict[str, Distilled]:
    """examples/train_rsl_rl.py's teacher, and an MLP and a GRU student distilled from it (2 iterations each)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("rsl_distill") / "logs" / "rsl_rl"
    try:
        _, (teacher,) = train(
            root / "pendulum_teacher" / "2026-12-01_09-00-00", *configure("teacher"), checkpoints=1
        )
        runs = {}
        for kind in ("mlp", "gru"):
            cfg = student_cfg(kind if kind != "mlp" else None)
            run_dir = root / f"pendulum_student_{kind}" / "2026-12-01_10-00-00"
            env = PrivilegedVecEnv(ENV_ID, 8, seed=cfg["seed"])
            runner, (model,) = train(run_dir, cfg, env, checkpoints=1, teacher=teacher)
            runs[kind] = Distilled(run_dir, runner, model)
        yield runs
    finally:
        torch.set_num_threads(threads)


def test_check_reads_the_student_and_leaves_the_teacher(rsl_distilled):
    reports = zoo("check", rsl_distilled["mlp"].run_dir.parents[1], "--json").json()
    by_run = {Path(r["run"]["path"]).parent.name: r for r in reports}
    assert by_run["pendulum_teacher"]["details"]["model"] == "MLP 4-32-32-1 (elu, obs normalizer)"
    models = {
        "mlp": "MLP 3-32-32-1 (elu, obs normalizer)",
        "gru": "GRU(3->16)x2 + MLP 16-32-32-1 (elu, obs normalizer)",
    }
    for kind, model in models.items():
        report = by_run[f"pendulum_student_{kind}"]
        assert report["status"] == "ok" and not any("algorithm" in note for note in report["notes"])
        details = report["details"]
        assert details["checkpoint"] == "student_state_dict" and details["policy"] == "student"
        assert details["algorithm"] == "PPO" and details["model"] == model  # the registry entry's algorithm
    # the teacher read the privileged group: a zoo loading it would not fit Pendulum's 3 observations
    assert (
        by_run["pendulum_teacher"]["status"] == "error" and "gives 3" in by_run["pendulum_teacher"]["reason"]
    )


@pytest.mark.parametrize("kind", ["mlp", "gru"])
def test_eval_matches_the_runners_inference_policy_the_student(rsl_distilled, kind, tmp_path):
    run = rsl_distilled[kind]
    ours = zoo_returns(run.run_dir, tmp_path / "eval.json")
    theirs = rsl_rl_returns(run.runner)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=0)
    assert len(set(np.round(ours, 6))) > 1
    assert run.runner.get_inference_policy() is run.runner.alg.student  # the student is what rsl_rl deploys


@pytest.mark.parametrize("kind", ["mlp", "gru"])
def test_exports_the_student_and_score_like_the_checkpoint(rsl_distilled, kind, tmp_path):
    sidecars = assert_exports_act_like_checkpoint(
        rsl_distilled[kind].run_dir, tmp_path, continuous=True, episodes=4, num_envs=2
    )
    for sidecar in sidecars.values():
        assert sidecar["obs_groups"] == {
            "policy": {"start": 0, "dim": 3, "shape": [3], "terms": [POLICY_TERM]}
        }
        assert sidecar["parity"]["max_abs_diff"] <= 1e-5 and sidecar["is_recurrent"] is (kind == "gru")
