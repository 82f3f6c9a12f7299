"""The evaluator's tensor path on batched torch envs (``--env-factory``), without a simulator.

rsl_rl policies trained on gymnasium's Pendulum-v1 are evaluated on ``tensor_envs.TorchPendulum``, the
same task as a batched torch env; the bookkeeping is checked on an env whose episodes are known.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from helpers import zoo as run_zoo
from test_rsl_rl import _train

import zoo
from zoo.errors import ZooError
from zoo.evaluator import single_cpu_thread
from zoo.tensor_env import TensorEnvSpec
from zoo.tensor_rollout import HostBridge, tensor_rollout

FACTORY = "tensor_envs:make_pendulum"
DEVICE = os.environ.get("ZOO_TEST_DEVICE", "cpu")  # benchmarks/gpu_check.sh runs these on cuda
REPO_TESTS = Path(__file__).resolve().parent  # where tensor_envs is importable for a subprocess


@pytest.fixture(scope="module")
def pendulum_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tensor-rsl")
    with single_cpu_thread("cpu"):
        return {kind: _train(root, None if kind == "mlp" else kind) for kind in ("mlp", "lstm")}


class ZeroPolicy:
    """Acts 0 everywhere: the bookkeeping tests need no network."""

    is_recurrent = False

    from gymnasium.spaces import Box

    observation_space = Box(-1.0, 1.0, (3,))

    def act_tensor(self, obs, state, deterministic):
        return torch.zeros(next(iter(obs.values())).shape[0], 1), state


def test_quotas_returns_lengths_and_success_are_counted_per_env_on_the_device():
    from tensor_envs import Counting

    env = Counting(4, "cpu", 0)
    episodes = tensor_rollout(ZeroPolicy(), env, episodes=10, deterministic=True, where="counting")
    # quotas [3, 3, 2, 2], in env order; env i's episodes last 3 + i steps and pay 1 a step
    assert [e.env_index for e in episodes] == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]
    assert [e.length for e in episodes] == [3 + e.env_index for e in episodes]
    assert [e.return_ for e in episodes] == [float(3 + e.env_index) for e in episodes]
    assert [e.success for e in episodes] == [e.env_index % 2 == 0 for e in episodes]


def test_no_tensor_leaves_the_device_during_the_rollout(pendulum_runs, monkeypatch):
    """Inside the loop every host copy raises; the results cross once, after every quota is filled."""
    import zoo.tensor_rollout as tr

    policy = zoo.load_policy(
        pendulum_runs["lstm"].model, env_id="Pendulum-v1", env_factory=FACTORY, device=DEVICE
    )
    env = TorchPendulum_(4)
    copies: list[str] = []

    def trap(name):
        def refuse(self, *args, **kwargs):
            copies.append(name)
            raise AssertionError(f"Tensor.{name}() inside the rollout loop")

        return refuse

    originals = {name: getattr(torch.Tensor, name) for name in ("cpu", "numpy", "tolist", "__array__")}
    finished = tr._episodes

    def after_the_loop(*args):
        for name, fn in originals.items():
            monkeypatch.setattr(torch.Tensor, name, fn)
        return finished(*args)

    monkeypatch.setattr(tr, "_episodes", after_the_loop)
    for name in originals:
        monkeypatch.setattr(torch.Tensor, name, trap(name))
    episodes = tensor_rollout(policy, env, episodes=6, deterministic=True, where="pendulum")
    assert copies == [] and len(episodes) == 6
    assert all(e.length == 200 for e in episodes)  # Pendulum only times out


def TorchPendulum_(num_envs: int, seed: int = 0):
    from tensor_envs import TorchPendulum

    return TorchPendulum(num_envs, DEVICE, seed)


@pytest.mark.parametrize("kind", ["mlp", "lstm"])
def test_device_actions_equal_the_host_policys_actions_episode_for_episode(pendulum_runs, kind):
    """act_tensor (on the device) and act (numpy, bridged through the host) give the same episodes,
    recurrent state resets included."""
    policy = zoo.load_policy(
        pendulum_runs[kind].model, env_id="Pendulum-v1", env_factory=FACTORY, device=DEVICE
    )
    on_device = tensor_rollout(policy, TorchPendulum_(3, seed=5), 6, True, "pendulum")
    policy = zoo.load_policy(
        pendulum_runs[kind].model, env_id="Pendulum-v1", env_factory=FACTORY, device=DEVICE
    )
    bridged = tensor_rollout(HostBridge(policy, DEVICE), TorchPendulum_(3, seed=5), 6, True, "pendulum")
    assert [e.return_ for e in on_device] == pytest.approx([e.return_ for e in bridged], rel=1e-6)


def test_same_seed_same_episodes_and_eval_json_records_the_factory(pendulum_runs, tmp_path):
    run = pendulum_runs["mlp"]
    a = zoo.evaluate(
        run.run_dir,
        settings=zoo.EvalSettings(episodes=4, num_envs=2, seed=3, device=DEVICE),
        load=zoo.LoadOptions(env_factory=FACTORY),
        env_id="Pendulum-v1",
        out=tmp_path / "a.json",
    )
    b = zoo.evaluate(
        run.run_dir,
        settings=zoo.EvalSettings(episodes=4, num_envs=2, seed=3, device=DEVICE),
        load=zoo.LoadOptions(env_factory=FACTORY),
        env_id="Pendulum-v1",
        out=None,
    )
    c = zoo.evaluate(
        run.run_dir,
        settings=zoo.EvalSettings(episodes=4, num_envs=2, seed=4, device=DEVICE),
        load=zoo.LoadOptions(env_factory=FACTORY),
        env_id="Pendulum-v1",
        out=None,
    )
    returns = [e.return_ for e in a.episodes]
    assert returns == [e.return_ for e in b.episodes] and returns != [e.return_ for e in c.episodes]
    data = json.loads((tmp_path / "a.json").read_text())
    assert data["settings"] == {"env_factory": FACTORY} and data["num_envs"] == 2
    assert len(data["episodes"]) == 4 and data["metrics"]["length_mean"] == 200


def test_cli_says_user_code_runs_and_evaluates_on_the_factory_env(pendulum_runs, tmp_path):
    out = tmp_path / "eval.json"
    result = run_zoo(
        "eval",
        pendulum_runs["mlp"].run_dir,
        "--env-id",
        "Pendulum-v1",
        "--env-factory",
        FACTORY,
        "--episodes",
        "2",
        "--num-envs",
        "2",
        "--device",
        DEVICE,
        "--out",
        out,
        "--quiet",
    )
    assert result.exit_code == 0, result.stderr
    assert f"running your code: --env-factory {FACTORY}" in result.stderr
    assert json.loads(out.read_text())["settings"]["env_factory"] == FACTORY


@pytest.mark.parametrize(
    ("factory", "exit_code", "message"),
    [
        ("tensor_envs", 2, "expected module:function"),
        ("no_such_module_here:make", 2, "cannot import 'no_such_module_here'"),
        ("tensor_envs:nothing", 2, "has no 'nothing'"),
        ("tensor_envs:NOT_CALLABLE", 2, "int is not callable"),
        ("tensor_envs:make_not_an_env", 1, "returned a ndarray without num_envs"),
        ("tensor_envs:make_too_few", 1, "built 1 envs, 2 were asked for"),
        ("tensor_envs:make_numpy_obs", 1, "observation 'policy' is a numpy.ndarray, not a torch tensor"),
        ("tensor_envs:make_elsewhere_rewards", 1, "step() rewards is on meta, the env on cpu"),
        ("tensor_envs:make_four_values", 1, "observation 'policy' has 4 values per env, the policy reads 3"),
    ],
)
def test_a_broken_env_factory_is_one_line_with_the_fix(pendulum_runs, tmp_path, factory, exit_code, message):
    result = run_zoo(
        "eval",
        pendulum_runs["mlp"].run_dir,
        "--env-id",
        "Pendulum-v1",
        "--env-factory",
        factory,
        "--episodes",
        "2",
        "--num-envs",
        "2",
        "--device",
        "cpu",
        "--out",
        tmp_path / "e.json",
    )
    assert result.exit_code == exit_code, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "e.json").exists()


def test_an_env_that_never_ends_its_episodes_is_stopped_with_a_reason():
    class Endless:
        num_envs, num_actions, device, max_episode_length = 2, 1, "cpu", 5

        def get_observations(self):
            return torch.zeros(2, 3)

        def step(self, actions):
            return torch.zeros(2, 3), torch.zeros(2), torch.zeros(2, dtype=torch.bool), {}

    with pytest.raises(ZooError, match="still running after"):
        tensor_rollout(ZeroPolicy(), Endless(), 2, True, "endless")


def test_spec_of_a_user_env_names_no_terms_and_no_spaces():
    spec = TensorEnvSpec("MyTask-v0", factory=FACTORY)
    assert spec.where == f"--env-factory {FACTORY}" and spec.spaces() is None and spec.obs_terms() == {}
    assert spec.to_json() == {"id": "MyTask-v0", "preset": "tensor", "factory": FACTORY}


def test_a_framework_whose_spaces_come_from_a_gymnasium_env_refuses_an_env_factory(dqn_run, tmp_path):
    """A CleanRL policy is built for the spaces of its gymnasium env: a user's env, unbuilt, has none yet."""
    result = run_zoo("eval", dqn_run, "--env-factory", FACTORY, "--out", tmp_path / "e.json")
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: --env-factory: cleanrl policies take their spaces from a gymnasium env, and zoo does "
        "not build a user's env before the rollout"
    ]
    assert not (tmp_path / "e.json").exists()


def test_push_then_enjoy_an_rsl_rl_run_fetches_its_config_and_evaluates_it(pendulum_runs, tmp_path):
    """A hub repo of an rsl_rl run holds a run: enjoy fetches the checkpoints and params/ as one folder,
    and the fetched run evaluates as the local one does (here on the tensor env)."""
    import shutil

    from test_hub_roundtrip import _zoo, token_hub

    with token_hub(tmp_path) as (server, _log):
        run = tmp_path / "logs" / "pendulum_lstm"
        shutil.copytree(pendulum_runs["lstm"].run_dir, run)
        repo = "demo/Pendulum-v1-rsl_ppo-seed7"
        pushed = _zoo(
            "push",
            run,
            "--repo-id",
            repo,
            "--yes",
            "--episodes",
            "2",
            "--env-id",
            "Pendulum-v1",
            "--stage-dir",
            tmp_path / "stage",
            hub_url=server.url,
            home=tmp_path / "pusher",
        )
        assert pushed.returncode == 0, pushed.stderr
        staged = {
            p.relative_to(tmp_path / "stage").as_posix()
            for p in (tmp_path / "stage").rglob("*")
            if p.is_file()
        }
        latest, earlier = pendulum_runs["lstm"].model.name, pendulum_runs["lstm"].earlier.name
        assert {latest, earlier, "params/agent.yaml", "eval.json", "README.md"} <= staged
        args = (
            "--exp-name",
            "rsl_ppo",
            "--env-id",
            "Pendulum-v1",
            "--run-seed",
            "7",
            "--hf-repository",
            repo,
            "--runs-dir",
            tmp_path / "none",
            "--episodes",
            "4",
            "--num-envs",
            "2",
            "--device",
            "cpu",
            "--env-factory",
            FACTORY,
        )
        env_home = tmp_path / "fresh-cache"
        refused = _zoo("enjoy", *args, "--out", tmp_path / "no.json", hub_url=server.url, home=env_home)
        assert refused.returncode != 0 and "--allow-download" in refused.stderr
        fetched = _zoo(
            "enjoy",
            *args,
            "--allow-download",
            "--out",
            tmp_path / "remote.json",
            hub_url=server.url,
            home=env_home,
            cwd=REPO_TESTS,
        )
        assert fetched.returncode == 0, fetched.stderr
        assert f"model: downloaded from {repo} @ main" in fetched.stderr
        remote = json.loads((tmp_path / "remote.json").read_text())
        assert remote["checkpoint"].endswith(latest) and remote["source"]["kind"] == "download"
    again = _zoo(
        "enjoy", *args, "--out", tmp_path / "cached.json", hub_url=server.url, home=env_home, cwd=REPO_TESTS
    )
    assert again.returncode == 0, again.stderr
    assert "model: HF cache of" in again.stderr
    local = zoo.evaluate(
        run,
        settings=zoo.EvalSettings(episodes=4, num_envs=2, device="cpu"),
        load=zoo.LoadOptions(env_factory=FACTORY),
        env_id="Pendulum-v1",
        out=None,
    )
    for data in (remote, json.loads((tmp_path / "cached.json").read_text())):
        assert [e["return"] for e in data["episodes"]] == [e.return_ for e in local.episodes]


@pytest.fixture(scope="module")
def skrl_pendulum(tmp_path_factory):
    """skrl's own PPO (Runner + SequentialTrainer) on gymnasium's Pendulum-v1, Isaac Lab's skrl layout."""
    from skrl_helpers import gaussian_policy, ppo_cfg, train_isaac_lab_style

    logs = tmp_path_factory.mktemp("tensor-skrl") / "logs" / "skrl" / "pendulum"
    with single_cpu_thread("cpu"):
        run, _ = train_isaac_lab_style(
            ppo_cfg(gaussian_policy(), timesteps=256), logs, "2026-12-01_10-00-00_ppo_torch", "Pendulum-v1"
        )
    return run


def test_skrl_policy_acts_on_the_device_as_on_the_host(skrl_pendulum):
    policy = zoo.load_policy(skrl_pendulum, env_id="Pendulum-v1", env_factory=FACTORY, device=DEVICE)
    on_device = tensor_rollout(policy, TorchPendulum_(3, seed=2), 6, True, "pendulum")
    bridged = tensor_rollout(HostBridge(policy, DEVICE), TorchPendulum_(3, seed=2), 6, True, "pendulum")
    assert [e.return_ for e in on_device] == pytest.approx([e.return_ for e in bridged], rel=1e-6)
    assert all(e.length == 200 for e in on_device)


def test_push_then_enjoy_an_skrl_experiment_on_a_tensor_env(skrl_pendulum, tmp_path):
    """An skrl repo holds the experiment (checkpoints/ and params/): enjoy fetches it as one and
    evaluates its latest checkpoint on the device, as the local run evaluates."""
    import shutil

    from test_hub_roundtrip import _zoo, token_hub

    run = tmp_path / "logs" / skrl_pendulum.name
    shutil.copytree(skrl_pendulum, run)
    repo = "demo/Pendulum-v1-PPO"
    with token_hub(tmp_path) as (server, _log):
        pushed = _zoo(
            "push",
            run,
            "--repo-id",
            repo,
            "--yes",
            "--episodes",
            "2",
            "--env-id",
            "Pendulum-v1",
            "--stage-dir",
            tmp_path / "stage",
            hub_url=server.url,
            home=tmp_path / "pusher",
        )
        assert pushed.returncode == 0, pushed.stderr
        fetched = _zoo(
            "enjoy",
            "--exp-name",
            "skrl_ppo",
            "--env-id",
            "Pendulum-v1",
            "--hf-repository",
            repo,
            "--runs-dir",
            tmp_path / "none",
            "--allow-download",
            "--episodes",
            "4",
            "--num-envs",
            "2",
            "--device",
            "cpu",
            "--env-factory",
            FACTORY,
            "--out",
            tmp_path / "remote.json",
            hub_url=server.url,
            home=tmp_path / "fresh",
            cwd=REPO_TESTS,
        )
    assert fetched.returncode == 0, fetched.stderr
    remote = json.loads((tmp_path / "remote.json").read_text())
    assert remote["framework"] == "skrl" and remote["checkpoint"].endswith("agent_256.pt")
    local = zoo.evaluate(
        run,
        settings=zoo.EvalSettings(episodes=4, num_envs=2, device="cpu"),
        load=zoo.LoadOptions(env_factory=FACTORY),
        env_id="Pendulum-v1",
        out=None,
    )
    assert [e["return"] for e in remote["episodes"]] == [e.return_ for e in local.episodes]
