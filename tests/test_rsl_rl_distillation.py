"""rsl_rl Distillation: zoo evaluates and exports the student, never the teacher.

A PPO teacher is trained (2 iterations, real ``OnPolicyRunner``) on a privileged observation group,
Pendulum's observation plus the true angle, which a deployed robot would not have. rsl_rl's
``DistillationRunner`` then loads it as the teacher and distills an MLP and a GRU student that see only
the ``policy`` group (2 iterations each). Their checkpoints hold ``student_state_dict`` and
``teacher_state_dict``; zoo must rebuild the student from the ``student:`` config and match
``runner.get_inference_policy()`` (the student) episode for episode on plain Pendulum-v1.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from helpers import GymVecEnv, assert_exports_act_like_checkpoint, rsl_rl_train_cfg, zoo
from test_rsl_rl import ENV_ID, rsl_rl_returns, zoo_returns

PRIVILEGED = {"actor": ["privileged"], "critic": ["privileged"]}


class PrivilegedVecEnv(GymVecEnv):
    """Pendulum with a ``privileged`` group beside ``policy``: the observation and the true angle."""

    def _tensordict(self, obs):
        from tensordict import TensorDict

        angle = [[float(env.unwrapped.state[0])] for env in self.envs.envs]
        obs = torch.as_tensor(obs, dtype=torch.float32)
        privileged = torch.cat([obs, torch.tensor(angle, dtype=torch.float32)], dim=-1)
        return TensorDict({"policy": obs, "privileged": privileged}, batch_size=[self.num_envs])


class Distilled:
    def __init__(self, run_dir: Path, runner, model: Path):
        self.run_dir, self.runner, self.model = run_dir, runner, model


def _train(runner_class, cfg: dict, run_dir: Path, teacher: Path | None = None):
    env = PrivilegedVecEnv(ENV_ID, 8, seed=cfg["seed"])
    (run_dir / "params").mkdir(parents=True)
    (run_dir / "params" / "agent.yaml").write_text(yaml.dump(cfg, sort_keys=False))
    (run_dir / "params" / "env.yaml").write_text(yaml.dump(env.cfg, sort_keys=False))
    torch.manual_seed(cfg["seed"])
    runner = runner_class(env, copy.deepcopy(cfg), log_dir=None, device="cpu")
    if teacher is not None:
        runner.load(str(teacher))  # an actor_state_dict: rsl_rl loads it as the teacher only
    runner.learn(2)
    model = run_dir / f"model_{runner.current_learning_iteration}.pt"
    runner.save(str(model))
    env.envs.close()
    return runner, model


@pytest.fixture(scope="module")
def rsl_distilled(tmp_path_factory) -> dict[str, Distilled]:
    from rsl_rl.runners import DistillationRunner, OnPolicyRunner

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("rsl_distill") / "logs" / "rsl_rl"
    try:
        teacher_cfg = {**rsl_rl_train_cfg(None), "obs_groups": PRIVILEGED}
        _, teacher = _train(OnPolicyRunner, teacher_cfg, root / "pendulum_teacher" / "2026-12-01_09-00-00")
        runs = {}
        for kind in ("mlp", "gru"):
            student = {**rsl_rl_train_cfg(kind if kind != "mlp" else None)["actor"]}
            cfg = {"seed": 7, "num_steps_per_env": 32, "save_interval": 50, "clip_actions": None,
                   "obs_groups": {"student": ["policy"], "teacher": ["privileged"]},
                   "algorithm": {"class_name": "Distillation", "num_learning_epochs": 2, "gradient_length": 16,
                                 "learning_rate": 1e-3},
                   "student": student, "teacher": teacher_cfg["actor"]}  # fmt: skip
            run_dir = root / f"pendulum_student_{kind}" / "2026-12-01_10-00-00"
            runs[kind] = Distilled(run_dir, *_train(DistillationRunner, cfg, run_dir, teacher))
        yield runs
    finally:
        torch.set_num_threads(threads)


def test_check_reads_the_student_and_leaves_the_teacher(rsl_distilled):
    reports = zoo("check", rsl_distilled["mlp"].run_dir.parents[1], "--json").json()
    by_run = {Path(r["run"]["path"]).parent.name: r for r in reports}
    assert by_run["pendulum_teacher"]["details"]["model"] == "MLP 4-32-32-1 (elu, obs normalizer)"
    models = {"mlp": "MLP 3-32-32-1 (elu, obs normalizer)",
              "gru": "GRU(3->16)x2 + MLP 16-32-32-1 (elu, obs normalizer)"}  # fmt: skip
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
    sidecars = assert_exports_act_like_checkpoint(rsl_distilled[kind].run_dir, tmp_path, continuous=True, episodes=4,
                                                  num_envs=2)  # fmt: skip
    for sidecar in sidecars.values():
        assert sidecar["obs_groups"] == {"policy": {"start": 0, "dim": 3, "shape": [3]}}
        assert sidecar["parity"]["max_abs_diff"] <= 1e-5 and sidecar["is_recurrent"] is (kind == "gru")
