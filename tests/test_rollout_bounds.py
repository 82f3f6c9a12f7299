"""The evaluator's rollouts are bounded and honest (zoo.rollout_guard): NaN is never a score, every JSON zoo
writes is strict, an episode runs at most --max-steps steps and an evaluation at most --max-seconds, and an env
that raises is named as the cause, on the gymnasium path and on the tensor path.

The envs are in tests/rollout_envs.py (registered with gymnasium on import, none with a time limit).
"""

from __future__ import annotations

import dataclasses
import json
import math
import signal
import zipfile
from pathlib import Path

import pytest
import rollout_envs
import torch
from helpers import EXAMPLES, hang_guard, save_model, zoo

import zoo as zoo_api
from zoo.errors import RolloutError, ZooError
from zoo.rollout_guard import Deadline
from zoo.tensor_rollout import tensor_rollout

TRAINED_DQN = next(EXAMPLES.glob("CartPole-v1__dqn__*")) / "dqn.cleanrl_model"


def _one_error(result) -> str:
    """The one error line of a failed command (its hint may follow), after checking nothing else was said."""
    lines = [line for line in result.stderr.splitlines() if not line.startswith("note:")]
    assert result.exit_code == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    assert (
        lines[0].startswith("error: ")
        and len(lines) <= 2
        and all(line.startswith("hint: ") for line in lines[1:])
    ), result.stderr
    return lines[0]


def _strict(text: str):
    """json.loads that refuses NaN and Infinity, as JSON.parse and every strict parser do."""

    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


# ----------------------------------------------------------------------------- NaN is not a score
def _fill_state(state: dict, value: float) -> dict:
    return {k: v.fill_(value) if torch.is_floating_point(v) else v for k, v in state.items()}


def _nan_cleanrl(path: Path, exp_name: str, env_id: str, value: float) -> Path:
    """A model saved by zoo's CleanRL model classes, then every float weight in the file set to ``value``."""
    save_model(path, exp_name, env_id)
    saved = torch.load(path, weights_only=True)
    parts = saved if isinstance(saved, tuple) else (saved,)
    filled = tuple(_fill_state(dict(part), value) for part in parts)
    torch.save(filled if isinstance(saved, tuple) else filled[0], path)
    return path


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_nan_cleanrl_q_network_fails_the_eval_in_one_line(tmp_path, value):
    model = _nan_cleanrl(tmp_path / "dqn.cleanrl_model", "dqn", "CartPole-v1", value)
    out = tmp_path / "eval.json"
    result = zoo("eval", model, "--exp-name", "dqn", "--env-id", "CartPole-v1", "-n", "2", "--out", out, "-q")
    error = _one_error(result)
    assert "the policy's Q-values are not finite (NaN or infinity) for env 0 and 1 more" in error, error
    assert not out.exists()


def test_a_nan_continuous_cleanrl_policy_fails_before_the_env_gets_its_actions(tmp_path):
    model = _nan_cleanrl(tmp_path / "td3.cleanrl_model", "td3_continuous_action", "Pendulum-v1", math.nan)
    out = tmp_path / "eval.json"
    result = zoo(
        "eval",
        model,
        "--exp-name",
        "td3_continuous_action",
        "--env-id",
        "Pendulum-v1",
        "-n",
        "2",
        "--out",
        out,
        "-q",
    )
    assert "the policy's actions are not finite" in _one_error(result)
    assert not out.exists()


def _nan_sb3(path: Path, algorithm: str) -> Path:
    """An SB3 model saved by SB3, then every float tensor of its policy.pth in the zip set to NaN."""
    import io

    import stable_baselines3

    path.parent.mkdir(parents=True, exist_ok=True)
    getattr(stable_baselines3, algorithm)("MlpPolicy", "CartPole-v1", seed=0).save(path)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    state = torch.load(io.BytesIO(members["policy.pth"]), weights_only=True)
    buffer = io.BytesIO()
    torch.save(_fill_state(state, math.nan), buffer)
    members["policy.pth"] = buffer.getvalue()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize(("algorithm", "what"), [("PPO", "action logits"), ("DQN", "Q-values")])
def test_a_nan_sb3_model_fails_the_eval_in_one_line(tmp_path, algorithm, what):
    model = _nan_sb3(tmp_path / f"{algorithm}.zip", algorithm)
    out = tmp_path / "eval.json"
    result = zoo("eval", model, "--env-id", "CartPole-v1", "-n", "2", "--out", out, "-q")
    assert f"the policy's {what} are not finite" in _one_error(result)
    assert not out.exists()


def test_the_sb3_check_does_not_change_the_actions_of_a_sound_model(tmp_path):
    """The hook watching SB3's Q-values is inert for finite values: same episodes as before it existed would give,
    and as SB3's own predict gives (compared by test_sb3's parity tests); here, the same result twice."""
    import stable_baselines3

    path = tmp_path / "DQN.zip"
    stable_baselines3.DQN("MlpPolicy", "CartPole-v1", seed=0).save(path)
    first = zoo_api.evaluate(
        path, settings=zoo_api.EvalSettings(episodes=2, deterministic=True), env_id="CartPole-v1", out=None
    )
    again = zoo_api.evaluate(
        path, settings=zoo_api.EvalSettings(episodes=2, deterministic=True), env_id="CartPole-v1", out=None
    )
    assert [e.return_ for e in first.episodes] == [e.return_ for e in again.episodes]


def test_non_finite_rewards_fail_the_eval(tmp_path):
    out = tmp_path / "eval.json"
    result = zoo(
        "eval", TRAINED_DQN, "--exp-name", "dqn", "--env-id", "ZooNaNReward-v0", "-n", "2", "--out", out, "-q"
    )
    assert "2 of 2 episodes returned a non-finite total (env 0: nan)" in _one_error(result)
    assert not out.exists()


def test_eval_json_and_json_output_are_strict_json(tmp_path):
    out = tmp_path / "eval.json"
    result = zoo(
        "eval",
        TRAINED_DQN,
        "--exp-name",
        "dqn",
        "--env-id",
        "CartPole-v1",
        "-n",
        "2",
        "--num-envs",
        "2",
        "--out",
        out,
        "--json",
        "-q",
    )
    assert result.exit_code == 0, result.stderr
    data = _strict(out.read_text())
    assert _strict(result.stdout) == data
    assert [e["truncated"] for e in data["episodes"]] == [False, False]


def test_the_json_writers_refuse_nan_with_one_line_and_write_nothing(tmp_path):
    from zoo.atomic import write_json_atomic
    from zoo.strict_json import dumps

    with pytest.raises(ZooError, match=r"metrics.return_mean \(nan\) is not a finite number"):
        write_json_atomic(tmp_path / "eval.json", {"metrics": {"return_mean": math.nan}})
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ZooError, match=r"episodes\[1\].return \(inf\)"):
        dumps({"episodes": [{"return": 1.0}, {"return": math.inf}]}, what="x")


def test_nan_actions_fail_the_tensor_rollout():
    class NaNPolicy:
        is_recurrent = False
        from gymnasium.spaces import Box

        observation_space = Box(-1.0, 1.0, (3,))

        def act_tensor(self, obs, state, deterministic):
            return torch.full((next(iter(obs.values())).shape[0], 1), math.nan), state

    with pytest.raises(RolloutError, match="the policy's actions are not finite .* by step 16"):
        tensor_rollout(
            NaNPolicy(), rollout_envs.TensorEndless(2, "cpu", 0), 2, True, "endless", max_steps=100
        )


@pytest.fixture(scope="module")
def pendulum_runs(tmp_path_factory):
    """An rsl_rl run on Pendulum-v1 (trained by rsl_rl's runner, as test_rsl_rl trains it)."""
    from test_rsl_rl import _train

    from zoo.evaluator import single_cpu_thread

    with single_cpu_thread("cpu"):
        return {"mlp": _train(tmp_path_factory.mktemp("bounds-rsl"), None)}


def test_a_nan_rsl_rl_model_fails_on_the_tensor_path(pendulum_runs, tmp_path):
    import shutil

    run = shutil.copytree(pendulum_runs["mlp"].run_dir, tmp_path / "run")
    model = run / pendulum_runs["mlp"].model.name  # the newest checkpoint: what zoo eval RUN picks
    saved = torch.load(model, weights_only=False)
    key = "actor_state_dict" if "actor_state_dict" in saved else "model_state_dict"  # rsl_rl 4+, or older
    saved[key] = _fill_state(saved[key], math.nan)
    torch.save(saved, model)
    out = tmp_path / "eval.json"
    result = zoo(
        "eval",
        run,
        "--env-id",
        "Pendulum-v1",
        "--env-factory",
        "tensor_envs:make_pendulum",
        "-n",
        "2",
        "--num-envs",
        "2",
        "--device",
        "cpu",
        "--out",
        out,
        "-q",
    )
    assert "the policy's actions are not finite (NaN or infinity) by step 16" in _one_error(result)
    assert not out.exists()


# ----------------------------------------------------------------------------- bounded rollouts
def test_an_env_without_a_time_limit_is_bounded_by_max_steps(tmp_path):
    out = tmp_path / "eval.json"
    with hang_guard(300):
        result = zoo(
            "eval",
            TRAINED_DQN,
            "--exp-name",
            "dqn",
            "--env-id",
            "ZooEndless-v0",
            "-n",
            "3",
            "--num-envs",
            "2",
            "--max-steps",
            "25",
            "--out",
            out,
            "-q",
        )
    assert result.exit_code == 0, result.stderr
    data = _strict(out.read_text())
    assert [(e["length"], e["return"], e["truncated"]) for e in data["episodes"]] == [(25, 25.0, True)] * 3
    assert data["settings"]["max_steps"] == 25 and "max_seconds" not in data["settings"]


def test_a_policy_class_on_an_env_without_a_limit_is_bounded(tmp_path):
    out = tmp_path / "eval.json"
    with hang_guard(300):
        result = zoo(
            "eval",
            "--policy-class",
            "custom_policies:SpacesAct",
            "--env-id",
            "ZooEndless-v0",
            "-n",
            "2",
            "--num-envs",
            "2",
            "--max-steps",
            "9",
            "--out",
            out,
            "-q",
        )
    assert result.exit_code == 0, result.stderr
    episodes = _strict(out.read_text())["episodes"]
    assert [(e["length"], e["truncated"]) for e in episodes] == [(9, True), (9, True)]


def test_without_max_steps_an_env_without_a_limit_gets_the_default_cap(tmp_path, monkeypatch):
    import zoo.rollout_guard

    monkeypatch.setattr(
        zoo.rollout_guard, "DEFAULT_MAX_STEPS", 40
    )  # the cap's rule, at a size a test can run
    with hang_guard(300):
        result = zoo_api.evaluate(
            TRAINED_DQN,
            settings=zoo_api.EvalSettings(episodes=2, num_envs=2),
            exp_name="dqn",
            env_id="ZooEndless-v0",
            out=tmp_path / "eval.json",
        )
    assert [(e.length, e.truncated) for e in result.episodes] == [(40, True), (40, True)]
    assert "max_steps" not in _strict((tmp_path / "eval.json").read_text())["settings"]


def test_the_env_s_own_limit_is_the_default_and_is_never_wrapped():
    import gymnasium as gym

    from zoo.envs import step_bound
    from zoo.step_bound import StepBound

    env = gym.make("CartPole-v1")
    assert step_bound(env, None) is env and step_bound(env, 500) is env and step_bound(env, 10_000) is env
    assert isinstance(step_bound(env, 100), StepBound)
    endless = gym.make("ZooEndless-v0")
    assert isinstance(step_bound(endless, None), StepBound)
    env.close()
    endless.close()


def test_bounds_that_are_not_hit_change_no_episode():
    where = {"exp_name": "dqn", "env_id": "CartPole-v1", "out": None}
    settings = zoo_api.EvalSettings(episodes=4, num_envs=2)
    plain = zoo_api.evaluate(TRAINED_DQN, settings, **where)
    bounded = zoo_api.evaluate(
        TRAINED_DQN, dataclasses.replace(settings, max_steps=501, max_seconds=3000), **where
    )
    assert [(e.env_index, e.return_, e.length) for e in plain.episodes] == [
        (e.env_index, e.return_, e.length) for e in bounded.episodes
    ]
    assert not any(e.truncated for e in bounded.episodes)
    assert bounded.settings == {**plain.settings, "max_steps": 501, "max_seconds": 3000.0}


def test_a_budget_that_no_episode_can_meet_fails_in_one_line(tmp_path):
    out = tmp_path / "eval.json"
    with hang_guard(300):
        result = zoo(
            "eval",
            TRAINED_DQN,
            "--exp-name",
            "dqn",
            "--env-id",
            "ZooEndless-v0",
            "--max-steps",
            "1000000000",
            "--max-seconds",
            "1",
            "-n",
            "2",
            "--out",
            out,
            "-q",
        )
    error = _one_error(result)
    assert "no episode finished within the --max-seconds 1 budget" in error
    assert "raise --max-seconds" in result.stderr and not out.exists()


def test_a_step_that_never_returns_is_interrupted_past_the_budget(tmp_path):
    """The budget is looked at between steps; a step that hangs is interrupted STUCK_GRACE after it, in one
    line, and an alarm the caller had armed (here hang_guard's, later) still fires afterwards."""

    out = tmp_path / "eval.json"
    with hang_guard(300):
        result = zoo(
            "eval",
            TRAINED_DQN,
            "--exp-name",
            "dqn",
            "--env-id",
            "ZooHangsInStep-v0",
            "--max-seconds",
            "1",
            "-n",
            "2",
            "--num-envs",
            "1",
            "--out",
            out,
            "-q",
        )
        left, _ = signal.getitimer(signal.ITIMER_REAL)
    error = _one_error(result)
    assert "a step did not return within the --max-seconds 1 budget" in error and not out.exists()
    assert "py-spy dump" in result.stderr
    assert 0 < left < 300  # the caller's own alarm (hang_guard's 300 s) was re-armed with what it had left


def test_a_budget_that_runs_out_midway_says_how_many_episodes_finished():
    error = Deadline(5).error(finished=3, episodes=10, steps=100)
    assert error.message == "the --max-seconds 5 budget ran out with 3 of 10 episodes finished"
    assert "raise --max-seconds, or ask for fewer --episodes" in error.hint


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--max-steps", "0"), ("--max-seconds", "0"), ("--max-seconds", "nan"), ("--max-seconds", "inf")],
)
def test_bounds_that_bound_nothing_are_usage_errors(flag, value):
    result = zoo("eval", TRAINED_DQN, flag, value, "-q")
    assert result.exit_code == 2 and flag in result.stderr


def test_the_python_api_refuses_the_same_bounds():
    with pytest.raises(ZooError, match="--max-steps 0"):
        zoo_api.plan(TRAINED_DQN, settings=zoo_api.EvalSettings(max_steps=0))
    with pytest.raises(ZooError, match="--max-seconds nan"):
        zoo_api.plan(TRAINED_DQN, settings=zoo_api.EvalSettings(max_seconds=math.nan))


def test_the_tensor_path_cuts_an_episode_at_max_steps_and_counts_the_env_s_next_one():
    from tensor_envs import Counting
    from test_tensor_rollout import ZeroPolicy

    # env i's episodes last 3 + i steps: envs 2 and 3 are cut at 4, then the env's own end of that episode is
    # waited for, and the next episode counted from its first step
    episodes = tensor_rollout(ZeroPolicy(), Counting(4, "cpu", 0), 8, True, "counting", max_steps=4)
    assert [(e.env_index, e.length, e.return_, e.truncated) for e in episodes] == [
        (0, 3, 3.0, False),
        (0, 3, 3.0, False),
        (1, 4, 4.0, False),
        (1, 4, 4.0, False),
        (2, 4, 4.0, True),
        (2, 4, 4.0, True),
        (3, 4, 4.0, True),
        (3, 4, 4.0, True),
    ]


def test_a_tensor_env_without_a_limit_gives_one_cut_episode_per_env_or_says_why_not():
    from test_tensor_rollout import ZeroPolicy

    with hang_guard(300):
        episodes = tensor_rollout(
            ZeroPolicy(), rollout_envs.TensorEndless(2, "cpu", 0), 2, True, "endless", max_steps=7
        )
        assert [(e.length, e.return_, e.truncated) for e in episodes] == [(7, 7.0, True)] * 2
        with pytest.raises(ZooError, match="the env did not end the episodes --max-steps 7 cut"):
            tensor_rollout(
                ZeroPolicy(), rollout_envs.TensorEndless(2, "cpu", 0), 4, True, "endless", max_steps=7
            )


def test_the_tensor_path_keeps_the_wall_time_budget():
    from test_tensor_rollout import ZeroPolicy

    with (
        hang_guard(300),
        pytest.raises(RolloutError, match="no episode finished within the --max-seconds 0.5"),
    ):
        tensor_rollout(
            ZeroPolicy(),
            rollout_envs.TensorEndless(2, "cpu", 0),
            2,
            True,
            "endless",
            max_steps=10**9,
            max_seconds=0.5,
        )


def test_the_cli_bounds_a_tensor_env_without_a_limit(pendulum_runs, tmp_path):
    out = tmp_path / "eval.json"
    with hang_guard(300):
        result = zoo(
            "eval",
            pendulum_runs["mlp"].run_dir,
            "--env-id",
            "Pendulum-v1",
            "--env-factory",
            "rollout_envs:make_tensor_endless",
            "-n",
            "2",
            "--num-envs",
            "2",
            "--max-steps",
            "30",
            "--device",
            "cpu",
            "--out",
            out,
            "-q",
        )
    assert result.exit_code == 0, result.stderr
    data = _strict(out.read_text())
    assert [(e["length"], e["truncated"]) for e in data["episodes"]] == [(30, True), (30, True)]


# ----------------------------------------------------------------------------- the env named as the cause
@pytest.mark.parametrize(
    ("env_id", "said", "where"),
    [
        ("ZooRaisesInStep-v0", "raised: ValueError: boom in step", "zoo called step(actions) at step 3"),
        ("ZooRaisesInReset-v0", "raised: RuntimeError: boom in reset", "zoo called reset(seed=0)"),
        (
            "ZooRaisesInInit-v0",
            "raised: KeyError: 'boom in __init__'",
            "zoo called its constructor (gym.make)",
        ),
    ],
)
def test_an_env_that_raises_is_named_in_one_line(tmp_path, env_id, said, where):
    out = tmp_path / "eval.json"
    result = zoo("eval", TRAINED_DQN, "--exp-name", "dqn", "--env-id", env_id, "-n", "2", "--out", out, "-q")
    error = _one_error(result)
    name = env_id.removeprefix("Zoo").removesuffix("-v0")
    assert error == f"error: the env {env_id} (rollout_envs:{name}) {said}", error
    hint = result.stderr.splitlines()[-1]
    assert hint.startswith("hint: rollout_envs.py:") and hint.endswith(where), hint
    assert not out.exists()


@pytest.mark.parametrize(
    ("factory", "said"),
    [
        ("rollout_envs:make_tensor_raising", "raised: ValueError: boom in tensor step"),
        ("rollout_envs:make_raising_factory", "raised: OSError: boom in the factory"),
    ],
)
def test_a_tensor_env_or_factory_that_raises_is_named_in_one_line(pendulum_runs, tmp_path, factory, said):
    result = zoo(
        "eval",
        pendulum_runs["mlp"].run_dir,
        "--env-id",
        "Pendulum-v1",
        "--env-factory",
        factory,
        "-n",
        "2",
        "--num-envs",
        "2",
        "--device",
        "cpu",
        "--out",
        tmp_path / "eval.json",
        "-q",
    )
    assert _one_error(result) == f"error: the env (--env-factory {factory}) {said}"
    assert not (tmp_path / "eval.json").exists()


# ----------------------------------------------------------------------------- sweeps, watch, the hub
def _runs(root: Path, count: int) -> Path:
    import shutil

    for seed in range(1, count + 1):
        run = root / "runs" / f"ZooEndless-v0__dqn__{seed}__1700000000"
        run.mkdir(parents=True)
        shutil.copy(TRAINED_DQN, run / "dqn.cleanrl_model")
    return root / "runs"


def test_a_sweep_carries_the_bounds_and_resumes_whatever_the_budget(tmp_path):
    runs = _runs(tmp_path, 2)
    with hang_guard(300):
        first = zoo("eval", runs, "--all", "--max-steps", "20", "-n", "2", "--num-envs", "2", "--json", "-q")
        assert first.exit_code == 0, first.stderr
        assert [r["status"] for r in _strict(first.stdout)["runs"]] == ["evaluated", "evaluated"]
        for eval_json in runs.glob("*/eval.json"):
            data = _strict(eval_json.read_text())
            assert data["settings"]["max_steps"] == 20 and all(e["truncated"] for e in data["episodes"])
        budget = zoo(
            "eval",
            runs,
            "--all",
            "--max-steps",
            "20",
            "--max-seconds",
            "900",
            "-n",
            "2",
            "--num-envs",
            "2",
            "--json",
            "-q",
        )
        assert [r["status"] for r in _strict(budget.stdout)["runs"]] == ["skipped", "skipped"]
        longer = zoo("eval", runs, "--all", "--max-steps", "30", "-n", "2", "--num-envs", "2", "--json", "-q")
        assert [r["status"] for r in _strict(longer.stdout)["runs"]] == ["evaluated", "evaluated"]


def test_enjoy_bounds_a_model_on_an_env_without_a_limit(tmp_path):
    runs = _runs(tmp_path, 1)
    out = tmp_path / "enjoyed.json"
    with hang_guard(300):
        result = zoo(
            "enjoy",
            "--exp-name",
            "dqn",
            "--env-id",
            "ZooEndless-v0",
            "--runs-dir",
            runs,
            "--max-steps",
            "12",
            "--max-seconds",
            "600",
            "-n",
            "2",
            "--num-envs",
            "2",
            "--out",
            out,
            "-q",
        )
    assert result.exit_code == 0, result.stderr
    data = _strict(out.read_text())
    assert [(e["length"], e["truncated"]) for e in data["episodes"]] == [(12, True), (12, True)]
    assert data["settings"]["max_steps"] == 12 and data["settings"]["max_seconds"] == 600.0


def test_leaderboard_eval_carries_the_bounds_and_refuses_them_without_eval(tmp_path):
    runs = _runs(tmp_path, 1)
    refused = zoo("leaderboard", runs, "--max-steps", "20")
    assert refused.exit_code == 2 and "--max-steps" in refused.stderr
    with hang_guard(300):
        board = zoo(
            "leaderboard", runs, "--eval", "--max-steps", "20", "-n", "2", "--num-envs", "2", "--json"
        )
    assert board.exit_code == 0, board.stderr
    assert _strict(board.stdout)["rows"][0]["mean"] == 20.0


def test_watch_carries_the_bounds(tmp_path):
    run = _runs(tmp_path, 1) / "ZooEndless-v0__dqn__1__1700000000"
    with hang_guard(300):
        result = zoo_api.watch(
            run, idle=0.3, poll=0.05, nice=0, max_cpu=None, episodes=2, num_envs=2, max_steps=15
        )
    assert [line["metrics"]["length_mean"] for line in result.evaluations] == [15.0]
    lines = (run / "evals.jsonl").read_text().splitlines()
    assert [_strict(line)["metrics"]["return_mean"] for line in lines] == [15.0]


def test_watch_records_a_failed_rollout_at_once_without_retrying(tmp_path):
    run = _runs(tmp_path, 1) / "ZooEndless-v0__dqn__1__1700000000"
    with hang_guard(300):
        result = zoo_api.watch(
            run,
            idle=0.3,
            poll=0.05,
            nice=0,
            max_cpu=None,
            episodes=2,
            num_envs=2,
            max_steps=10**9,
            max_seconds=0.5,
        )
    (line,) = result.evaluations
    assert line["status"] == "failed" and line["attempts"] == 1 and "--max-seconds 0.5" in line["error"]


def test_the_hub_reevaluation_passes_the_step_bound_and_a_budget_under_its_timeout(monkeypatch, tmp_path):
    import subprocess
    from types import SimpleNamespace

    from zoo.hub_server import reevaluate

    data = json.dumps({"task": "CartPole-v1", "exp_name": "dqn", "settings": {"max_steps": 200}}).encode()
    hub = SimpleNamespace(storage=SimpleNamespace(read_blob=lambda _entry: data))
    commit = SimpleNamespace(files={"eval.json": SimpleNamespace(size=len(data))})
    args = reevaluate.evaluation_args(hub, "org/repo", commit)
    assert args[args.index("--max-steps") + 1] == "200"

    called = []

    class Finished:
        pid, returncode = 0, 1

        def __init__(self, cmd, **_):
            called.append(cmd)

        def communicate(self, timeout=None):
            return "", "error: stopped here\n"

    monkeypatch.setattr(subprocess, "Popen", Finished)
    server = SimpleNamespace(storage=SimpleNamespace(root=tmp_path))
    status, reason, _ = reevaluate.Reevaluator(server, timeout=100.0)._run(
        args, tmp_path, tmp_path / "eval.json"
    )
    (cmd,) = called
    assert cmd[cmd.index("--max-seconds") + 1] == "80" and status == "failed" and "stopped here" in reason
