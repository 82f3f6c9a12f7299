"""``zoo eval``: seeded vectorized rollouts, per-env quotas, eval.json, and refusals."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from helpers import EXAMPLES, make_run, save_model, write_malicious, zoo

from zoo.envs import EnvSpec, make_vector_env
from zoo.evaluator import episode_quotas, rollout


class _SuccessEnv(gym.Env):
    """CartPole-shaped env whose episodes end after 3-7 steps, successful on even lengths."""

    observation_space = gym.spaces.Box(-1, 1, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.horizon = 0, int(self.np_random.integers(3, 8))
        return self.observation_space.sample().astype(np.float32) * 0, {}

    def step(self, action):
        self.t += 1
        done = self.t >= self.horizon
        info = {"is_success": self.t % 2 == 0} if done else {}
        return np.zeros(4, np.float32), 1.0, done, False, info


gym.register("ZooTestSuccess-v0", entry_point=_SuccessEnv)


def _eval(target, *args):
    return zoo("eval", target, "--quiet", *args)


def test_episode_quotas_add_up_and_spread_evenly():
    assert episode_quotas(10, 4).tolist() == [3, 3, 2, 2]
    assert episode_quotas(3, 8).tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    assert episode_quotas(16, 8).sum() == 16


def test_rollout_counts_episodes_per_env_quota(tmp_path):
    import zoo

    model = save_model(tmp_path / "dqn.cleanrl_model", "dqn", "CartPole-v1")
    policy = zoo.load_policy(model, exp_name="dqn", env_id="ZooTestSuccess-v0")
    envs = make_vector_env(EnvSpec("ZooTestSuccess-v0"), 4)
    episodes = rollout(policy, envs, 10, seed=0, deterministic=True)
    envs.close()
    counts = np.bincount([e.env_index for e in episodes], minlength=4)
    assert counts.tolist() == [3, 3, 2, 2]
    assert all(e.success == (e.length % 2 == 0) for e in episodes)


def test_eval_json_contract_and_success_rate(tmp_path):
    model = save_model(tmp_path / "m" / "dqn.cleanrl_model", "dqn", "CartPole-v1")
    out = tmp_path / "eval.json"
    result = _eval(
        model,
        "--exp-name",
        "dqn",
        "--env-id",
        "ZooTestSuccess-v0",
        "-n",
        "12",
        "--num-envs",
        "4",
        "--deterministic",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert (
        data["task"] == "ZooTestSuccess-v0" and data["exp_name"] == "dqn" and data["framework"] == "cleanrl"
    )
    assert (data["num_episodes"], data["num_envs"], data["seed"], data["deterministic"]) == (12, 4, 0, True)
    assert len(data["episodes"]) == 12 and data["device"] == "cpu" and data["zoo_version"]
    lengths = [e["length"] for e in data["episodes"]]
    assert data["metrics"]["length_mean"] == pytest.approx(np.mean(lengths))
    assert data["metrics"]["success_rate"] == pytest.approx(np.mean([n % 2 == 0 for n in lengths]))
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]


def test_success_rate_is_null_when_env_never_reports_it(tmp_path):
    run = make_run(tmp_path, "CartPole-v1", "dqn")
    assert _eval(run, "-n", "4").exit_code == 0
    data = json.loads((run / "eval.json").read_text())
    assert data["metrics"]["success_rate"] is None and all(e["success"] is None for e in data["episodes"])


@pytest.mark.parametrize("mode", ["--deterministic", "--stochastic"])
def test_same_seed_same_result_bit_for_bit(tmp_path, mode):
    run = make_run(tmp_path, "Pendulum-v1", "td3_continuous_action")
    outs = []
    for name in ("a.json", "b.json"):
        assert _eval(run, "-n", "3", "--num-envs", "2", mode, "--out", tmp_path / name).exit_code == 0
        outs.append(json.loads((tmp_path / name).read_text()))
    assert outs[0]["episodes"] == outs[1]["episodes"] and outs[0]["metrics"] == outs[1]["metrics"]
    other = tmp_path / "c.json"
    assert _eval(run, "-n", "3", "--num-envs", "2", mode, "--seed", "7", "--out", other).exit_code == 0
    assert json.loads(other.read_text())["episodes"] != outs[0]["episodes"]


def test_stochastic_mode_follows_the_registry(tmp_path):
    run = make_run(tmp_path, "Pendulum-v1", "td3_continuous_action")
    det, sto = tmp_path / "det.json", tmp_path / "sto.json"
    _eval(run, "-n", "2", "--deterministic", "--out", det)
    result = zoo("eval", run, "-n", "2", "--out", sto)  # registry default: exploration noise 0.1
    assert "stochastic (noise 0.1) (registry)" in result.stderr
    assert json.loads(sto.read_text())["settings"] == {"exploration_noise": 0.1}
    assert json.loads(det.read_text())["episodes"] != json.loads(sto.read_text())["episodes"]


def test_ppo_gaussian_policy_with_online_obs_normalization(tmp_path):
    run = make_run(tmp_path, "Pendulum-v1", "ppo_continuous_action")
    assert _eval(run, "-n", "2", "--num-envs", "2").exit_code == 0
    assert len(json.loads((run / "eval.json").read_text())["episodes"]) == 2


def test_c51_reads_its_atoms_from_the_saved_args(tmp_path):
    run = make_run(tmp_path, "CartPole-v1", "c51")
    assert _eval(run, "-n", "2", "--deterministic").exit_code == 0


def test_bundled_cartpole_examples_score_at_least_195(tmp_path):
    runs = sorted(EXAMPLES.glob("CartPole-v1__*"))
    assert {r.name.split("__")[1] for r in runs} == {"dqn", "c51"}
    for run in runs:
        out = tmp_path / f"{run.name}.json"
        result = _eval(run, "-n", "20", "--deterministic", "--out", out)
        assert result.exit_code == 0, result.stderr
        assert json.loads(out.read_text())["metrics"]["return_mean"] >= 195, run.name


def test_unsafe_pickle_is_refused_unless_trusted_and_never_runs(tmp_path):
    canary = tmp_path / "canary"
    run = tmp_path / "runs" / "CartPole-v1__dqn__1__1700000000"
    write_malicious(run / "dqn.cleanrl_model", canary)
    result = _eval(run, "-n", "1")
    assert result.exit_code == 3
    assert "unsafe pickle" in result.stderr and "posix.system" in result.stderr
    assert "--trust-pickle" not in result.stderr  # never the hint for a file that runs code
    assert not canary.exists() and not (run / "eval.json").exists()


def test_numpy_values_load_safely_and_unknown_globals_need_trust(tmp_path):
    """numpy arrays and scalars are on zoo's allowlist (torch's weights-only loader takes them when told);
    a global outside it is refused without a hint to run it, and loads only with --trust-pickle."""
    import argparse

    import torch
    from helpers import spaces

    from zoo.frameworks.cleanrl.checkpoint import build_model
    from zoo.registry import load_registry

    run = tmp_path / "runs" / "CartPole-v1__c51__1__1700000000"
    run.mkdir(parents=True)
    weights = build_model(load_registry().get("c51"), "q_network", spaces("CartPole-v1"), {}).state_dict()
    args = {
        "n_atoms": 101,
        "v_min": -100,
        "v_max": 100,
        "seed_array": np.arange(3),
        "gamma": np.float64(0.99),
    }
    torch.save({"model_weights": weights, "args": args}, run / "c51.cleanrl_model")
    assert _eval(run, "-n", "1").exit_code == 0

    torch.save(
        {"model_weights": weights, "args": {**args, "ns": argparse.Namespace(seed=1)}},
        run / "c51.cleanrl_model",
    )
    refused = _eval(run, "-n", "1")
    assert refused.exit_code == 3 and "holds argparse.Namespace, which zoo cannot check" in refused.stderr
    assert "--trust-pickle" not in refused.stderr
    trusted = _eval(run, "-n", "1", "--trust-pickle")
    assert trusted.exit_code == 0, trusted.stderr


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("truncated", "zip archive is cut short"),
        ("not_torch", "not a torch file"),
        ("empty_dir", "no model file"),
        ("bad_name", "is not a run dir env_id__exp_name__seed__time"),
        ("wrong_env", "model does not fit Acrobot-v1"),
        ("cuda", "no CUDA device"),
    ],
)
def test_bad_input_gets_one_clear_line_and_exit_1(tmp_path, setup, message):
    runs = tmp_path / "runs"
    run = runs / "CartPole-v1__dqn__1__1700000000"
    args: list = ["-n", "1"]
    if setup == "truncated":
        good = save_model(run / "dqn.cleanrl_model", "dqn", "CartPole-v1").read_bytes()
        (run / "dqn.cleanrl_model").write_bytes(good[:500])
    elif setup == "not_torch":
        run.mkdir(parents=True)
        (run / "dqn.cleanrl_model").write_text("# notes, not weights")
    elif setup == "empty_dir":
        run.mkdir(parents=True)
        (run / "events.out.tfevents.1.host").write_bytes(b"")
    elif setup == "bad_name":
        run = runs / "my-run"
        save_model(run / "dqn.cleanrl_model", "dqn", "CartPole-v1")
    elif setup == "wrong_env":
        save_model(run / "dqn.cleanrl_model", "dqn", "CartPole-v1")
        args += ["--env-id", "Acrobot-v1"]
    elif setup == "cuda":
        save_model(run / "dqn.cleanrl_model", "dqn", "CartPole-v1")
        import torch

        if torch.cuda.is_available():
            pytest.fail("this case checks the no-GPU error; run it on a CPU machine")
        args += ["--device", "cuda"]
    result = _eval(run, *args)
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (run / "eval.json").exists()


def test_capture_video_never_fails_the_eval(tmp_path):
    run = make_run(tmp_path, "CartPole-v1", "dqn")
    result = zoo("eval", run, "-n", "2", "--num-envs", "1", "--capture-video")
    assert result.exit_code == 0, result.stderr
    videos = list((tmp_path / "videos" / f"{run.name}-eval").glob("*.mp4"))
    assert videos or "warning: video" in result.stderr


def test_mujoco_and_atari_envs_evaluate(tmp_path):
    cheetah = make_run(tmp_path, "HalfCheetah-v5", "td3_continuous_action")
    assert _eval(cheetah, "-n", "1", "--deterministic").exit_code == 0
    assert json.loads((cheetah / "eval.json").read_text())["episodes"][0]["length"] == 1000
    import torch

    from zoo.frameworks.cleanrl.checkpoint import build_model
    from zoo.registry import load_registry

    breakout = tmp_path / "runs" / "BreakoutNoFrameskip-v4__dqn_atari__1__1700000000"
    breakout.mkdir(parents=True)
    spaces = (gym.spaces.Box(0, 255, (4, 84, 84), np.uint8), gym.spaces.Discrete(4))
    torch.save(
        build_model(load_registry().get("dqn_atari"), "q_network", spaces, {}).state_dict(),
        breakout / "dqn_atari.cleanrl_model",
    )
    result = _eval(breakout, "-n", "1", "--num-envs", "1")
    assert result.exit_code == 0, result.stderr
    episode = json.loads((breakout / "eval.json").read_text())["episodes"][0]
    assert episode["length"] > 0 and episode["return"] >= 0


@pytest.mark.parametrize(
    ("where", "code"), [("/proc/zoo-eval.json", 1), ("file.json/eval.json", 1), ("folder", 2)]
)
def test_an_unwritable_out_fails_before_the_rollout(tmp_path, where, code, monkeypatch):
    """``--out`` is checked before any episode runs: the rollout never starts, so it cannot be lost."""
    import zoo.evaluator

    run = make_run(tmp_path, "CartPole-v1", "dqn")
    (tmp_path / "file.json").write_text("{}")
    (tmp_path / "folder").mkdir()
    out = Path(where) if where.startswith("/") else tmp_path / where
    monkeypatch.setattr(
        zoo.evaluator, "evaluate", lambda *a, **k: pytest.fail("rolled out before checking --out")
    )
    result = _eval(run, "-n", "1", "--out", out)
    assert result.exit_code == code and result.stderr.lower().count("error:") == 1, result.stderr
    assert "--out" in result.stderr and "Traceback" not in result.stderr
    assert (tmp_path / "file.json").read_text() == "{}"
