"""Every registry entry against an env of the wrong kind: one error line naming both kinds, never an internal error.

A model for discrete actions evaluated on a continuous env (and the reverse; a CNN on vector observations,
an MLP on frames) must be refused by the adapter's fit check, before any model class is built for spaces it
was not written for, in every command: ``zoo check --env-id``, ``eval``, ``export``, ``enjoy``, ``watch``
and ``doctor --probe-env``. The models are written by the real libraries: CleanRL's layouts from zoo's model
classes (and CleanRL's own flax modules for the JAX scripts), Stable-Baselines3 and sb3-contrib's ``save``,
skrl's trainer, rsl_rl's runner.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from every_kind import COMMITTED, MORE, TRAINED, WRONG_KIND, committed_run, entry_name
from helpers import zoo

from zoo.registry import load_registry


def test_every_registry_entry_has_a_wrong_kind_case():
    assert sorted(WRONG_KIND) == sorted(load_registry().names())


# ----------------------------------------------------------------------------- what the user sees
def _one_error_line(result, needles: tuple[str, ...]) -> str:
    """The command failed with one ``error:`` line naming each needle, and no internal error or traceback."""
    assert result.exit_code == 1, (result.exit_code, result.stdout[-2000:], result.stderr[-2000:])
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]


def _check_row(target: Path, wrong: str, needles: tuple[str, ...], *flags: str) -> None:
    """``zoo check TARGET --env-id WRONG``: the run's one row is the error, on one line."""
    result = zoo("check", target, "--env-id", wrong, "--json", *flags)
    assert result.exit_code == 1, result.stderr
    (report,) = result.json()
    assert report["status"] == "error" and "\n" not in report["reason"], report
    for needle in needles:
        assert needle in report["reason"], (needle, report["reason"])


def _eval(target: Path, wrong: str, needles: tuple[str, ...], tmp_path: Path, *flags: str) -> str:
    out = tmp_path / "eval.json"
    line = _one_error_line(
        zoo("eval", target, "--env-id", wrong, "-n", "1", "--num-envs", "1", "--out", out, *flags), needles
    )
    assert not out.exists()
    return line


@pytest.mark.parametrize(
    "case", sorted(c for c in {**WRONG_KIND, **MORE} if c not in (*TRAINED, *COMMITTED) and c != "custom")
)
def test_check_and_eval_say_both_kinds(untrained, case, tmp_path):
    if case not in untrained:
        pytest.skip("needs jax and flax to write the JAX script's file: pip install 'rl-zoo-hub[jax]'")
    _env_id, wrong, needles = {**WRONG_KIND, **MORE}[case]
    flags = ("--exp-name", entry_name(case)) if entry_name(case).startswith("sb3_") else ()
    line = _eval(untrained[case], wrong, needles, tmp_path, *flags)
    assert line.startswith(f"error: {entry_name(case)} ")
    _check_row(untrained[case], wrong, needles, *flags)


@pytest.mark.parametrize("case", TRAINED)
def test_trained_runs_check_and_eval_say_both_kinds(mismatch_runs, case, tmp_path):
    _env_id, wrong, needles = {**WRONG_KIND, **MORE}[case]
    run, flags = mismatch_runs[case]
    _eval(run, wrong, needles, tmp_path, *flags)
    if "--model-config" not in flags:  # zoo check reads the architecture from params/agent.yaml only
        _check_row(run, wrong, needles, *flags)


@pytest.mark.parametrize("case", sorted(COMMITTED))
def test_committed_runs_check_and_eval_say_both_kinds(case, tmp_path):
    _env_id, wrong, needles = {**WRONG_KIND, **MORE}[case]
    run, flags = committed_run(case)
    line = _eval(run, wrong, needles, tmp_path, *flags)
    assert line.startswith(f"error: {entry_name(case)} ")
    _check_row(run, wrong, needles, *flags)


def test_a_policy_class_is_refused_by_its_first_actions(tmp_path):
    """A class has no kind zoo could read: the actions it gives on the wrong env are the one line."""
    _env_id, wrong, needles = WRONG_KIND["custom"]
    out = tmp_path / "eval.json"
    line = _one_error_line(
        zoo(
            "eval",
            "--policy-class",
            "custom_policies:OutOfBounds",
            "--env-id",
            wrong,
            "-n",
            "1",
            "--num-envs",
            "1",
            "--out",
            out,
        ),
        needles,
    )
    assert "OutOfBounds.act" in line and not out.exists()


# ----------------------------------------------------------------------------- every command, every framework
FRAMEWORK_CASES = ("dqn", "td3_continuous_action", "dqn_atari", "sb3_dqn", "sb3_sac")


@pytest.mark.parametrize("case", FRAMEWORK_CASES)
def test_export_doctor_and_watch_say_both_kinds(untrained, case, tmp_path):
    _env_id, wrong, needles = WRONG_KIND[case]
    target = untrained[case]
    framework = load_registry().get(case).framework
    out = tmp_path / "policy.onnx"
    _one_error_line(zoo("export", target, "--env-id", wrong, "--out", out), needles)
    assert not out.exists()
    doctor = zoo(
        "doctor", "--framework", framework, "--policy", target, "--probe-env", "--env-id", wrong, "--json"
    )
    assert doctor.exit_code == 1
    checks = {c["name"]: c for c in doctor.json()["checks"]}
    assert checks["spaces"]["status"] == "ok" and checks["fit"]["status"] == "fail", checks
    assert all(needle in checks["fit"]["message"] for needle in needles), checks["fit"]
    if framework == "cleanrl":  # zoo watch follows a run dir's checkpoints
        watched = zoo(
            "watch",
            target,
            "--env-id",
            wrong,
            "--idle",
            "0.2",
            "--poll",
            "0.05",
            "--nice",
            "0",
            "--max-cpu",
            "0",
            "-n",
            "1",
            "--num-envs",
            "1",
        )
        _one_error_line(watched, needles)
        assert not (target / "evals.jsonl").exists() or not (target / "evals.jsonl").read_text().strip()


@pytest.mark.parametrize("case", ["dqn", "td3_continuous_action"])
def test_enjoy_of_a_run_published_for_another_kind_of_env(untrained, case, tmp_path):
    """A run named for the other env that holds this model (a mistaken or hostile upload): enjoy refuses it."""
    import shutil

    env_id, wrong, needles = WRONG_KIND[case]
    runs = tmp_path / "runs"
    shutil.copytree(untrained[case], runs / untrained[case].name.replace(env_id, wrong))
    enjoyed = zoo(
        "enjoy",
        "--exp-name",
        case,
        "--env-id",
        wrong,
        "--runs-dir",
        runs,
        "-n",
        "1",
        "--num-envs",
        "1",
        "--out",
        tmp_path / "eval.json",
    )
    _one_error_line(enjoyed, needles)
    assert not (tmp_path / "eval.json").exists()


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.trains) for c in ("rsl_ppo", "skrl_ppo")]
    + ["torchrl_dqn", "torchrl_ppo"],
)
def test_export_and_doctor_of_trained_runs_say_both_kinds(request, case, tmp_path):
    """Trained here (rsl_rl, skrl: ``mismatch_runs``, which trains) or committed (TorchRL)."""
    _env_id, wrong, needles = WRONG_KIND[case]
    run, flags = committed_run(case) if case in COMMITTED else request.getfixturevalue("mismatch_runs")[case]
    _one_error_line(zoo("export", run, "--env-id", wrong, "--out", tmp_path / "policy.onnx", *flags), needles)
    doctor = zoo(
        "doctor",
        "--framework",
        load_registry().get(case).framework,
        "--policy",
        run,
        "--probe-env",
        "--env-id",
        wrong,
        "--json",
        *flags,
    )
    checks = {c["name"]: c for c in doctor.json()["checks"]}
    assert doctor.exit_code == 1 and checks["fit"]["status"] == "fail", checks
    assert all(needle in checks["fit"]["message"] for needle in needles), checks["fit"]


def test_an_exported_file_says_both_kinds(untrained, tmp_path):
    """``zoo eval policy.onnx --env-id WRONG``: the sidecar's action kind against the env's."""
    out = tmp_path / "policy.onnx"
    assert zoo("export", untrained["dqn"], "--out", out, "-q").exit_code == 0
    _one_error_line(
        zoo("eval", out, "--env-id", "Pendulum-v1", "-n", "1", "--num-envs", "1"),
        ("policy.onnx (exported dqn) acts on a Discrete action space", "Pendulum-v1's is Box(1,)"),
    )
