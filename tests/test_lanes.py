"""Rollout lanes (zoo/lanes.py): a rollout split across forked processes gives the sequential loop's episodes.

Every policy kind the registry holds (each framework's MLPs, CNNs, recurrent and action-masked policies;
deterministic and sampled) is evaluated by ``zoo eval`` twice, whole and split into two lanes a few steps in
(mid-episode, recurrent state and generators as they are), and the two eval.json files must be equal apart
from their timing. The split is forced here: whether one pays is a matter of timing, which tests do not
measure (benchmarks/eval_throughput.py does).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from every_kind import COMMITTED, MORE, TRAINED, WRONG_KIND, committed_run, entry_name
from helpers import hang_guard, zoo

import zoo.lanes as lanes
from zoo.errors import RolloutError
from zoo.evaluator import rollout
from zoo.registry import load_registry

TIMING = ("wall_clock_seconds", "evaluated_at")
#: JAX started in this process (to write the flax files of the `untrained` fixture) warns at each fork; the
#: children never call it.
pytestmark = pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")


@pytest.fixture(autouse=True)
def _jax_unused(request, monkeypatch):
    """JAX started to write flax files (the `untrained` fixture) keeps every rollout whole in this process;
    only the JAX test's policy uses it."""
    if "jax" not in request.node.name:
        monkeypatch.setattr(lanes, "_runtime_loaded", lambda: False)


def _flax(case: str) -> bool:
    return load_registry().get(entry_name(case)).layout.get("kind") == "flax"


#: Every kind but the JAX scripts' (never split: test_a_jax_policy_is_never_split), the policy class (a user's
#: code) and the MLP-on-frames mismatch case; EnvPool's Atari is no SyncVectorEnv (never split either).
CASES = sorted(
    case
    for case in {**WRONG_KIND, **MORE}
    if case not in ("custom", "dqn:frames")
    and not _flax(case)
    and WRONG_KIND.get(case, ("",))[0] != "Breakout-v5"
)


@pytest.fixture
def splits(monkeypatch) -> list[int]:
    """Every rollout split into two lanes after :data:`zoo.lanes.PROBE_STEPS` steps, whatever its timing says
    (unless it asks for a number of lanes); the list gets the lane count of each split."""
    done: list[int] = []
    run_lanes = lanes.run_lanes

    def counted(whole, count, deadline):
        done.append(count)
        run_lanes(whole, count, deadline)

    monkeypatch.setattr(lanes, "lane_count", lambda requested, num_envs: requested or min(2, num_envs))
    monkeypatch.setattr(lanes, "probed", lambda lane, started, forced: lane.steps >= lanes.PROBE_STEPS)
    monkeypatch.setattr(
        lanes, "lanes_now", lambda lane, count, forced: count if lanes.splittable(lane) else 1
    )
    monkeypatch.setattr(lanes, "run_lanes", counted)
    return done


def _target(case: str, untrained, mismatch_runs, tmp_path: Path) -> tuple[Path, str, tuple]:
    """The model of ``case``, the env to evaluate it on and the flags it is read with."""
    env_id = {**WRONG_KIND, **MORE}[case][0]
    if case == "rl_games_ppo:discrete":  # a plain runs/ layout: the training yaml says the activations
        run, _ = committed_run(case)
        return run, env_id, ("--model-config", run.parent.parent / "cartpole.yaml")
    if case == "sb3_ppo_mask":  # its env must give action masks (examples/masked_env.py)
        import masked_env  # noqa: F401 - registers ZooSB3Masked-v0
        from sb3_contrib import MaskablePPO

        path = tmp_path / "ppo_mask-ZooSB3Masked-v0.zip"
        MaskablePPO("MlpPolicy", "ZooSB3Masked-v0", seed=0, device="cpu").save(path)
        return path, "ZooSB3Masked-v0", ("--exp-name", "sb3_ppo_mask", "--env-module", "masked_env")
    if case in COMMITTED:
        return (*committed_run(case)[:1], env_id, committed_run(case)[1])
    if case in TRAINED:
        return mismatch_runs[case][0], env_id, mismatch_runs[case][1]
    flags = ("--exp-name", entry_name(case)) if entry_name(case).startswith("sb3_") else ()
    return untrained[case], env_id, flags


def _eval_json(target: Path, env_id: str, mode: str, out: Path, *flags) -> dict:
    result = zoo(
        "eval", target, "--env-id", env_id, "-n", "4", "--num-envs", "2", "--max-steps", "40", "--seed", "3",
        mode, "--out", out, *flags,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr[-3000:]
    data = json.loads(out.read_text())
    return {k: v for k, v in data.items() if k not in TIMING}


@pytest.mark.filterwarnings(
    "ignore:os.fork\\(\\) was called:RuntimeWarning"
)  # JAX's; the children never call it
@pytest.mark.parametrize("mode", ["--deterministic", "--stochastic"])
@pytest.mark.parametrize("case", CASES)
def test_split_rollout_writes_the_sequential_eval_json(
    case, mode, untrained, mismatch_runs, splits, monkeypatch, tmp_path
):
    target, env_id, flags = _target(case, untrained, mismatch_runs, tmp_path)
    split = _eval_json(target, env_id, mode, tmp_path / "split.json", *flags)
    assert splits == [2], "the rollout was not split"
    monkeypatch.setattr(lanes, "lane_count", lambda requested, num_envs: 1)
    whole = _eval_json(target, env_id, mode, tmp_path / "whole.json", *flags)
    assert splits == [2]
    assert split == whole
    assert len(whole["episodes"]) == 4 and {e["env_index"] for e in whole["episodes"]} == {0, 1}


def test_a_jax_policy_is_never_split(untrained, splits, tmp_path):
    """JAX's runtime threads do not survive a fork: its policies stay in one process, with the same result."""
    if "dqn_jax" not in untrained:
        pytest.skip("needs jax and flax to write the JAX script's file: pip install 'rl-zoo-hub[jax]'")
    first = _eval_json(untrained["dqn_jax"], "CartPole-v1", "--deterministic", tmp_path / "a.json")
    assert splits == []
    again = _eval_json(untrained["dqn_jax"], "CartPole-v1", "--deterministic", tmp_path / "b.json")
    assert first == again


# ----------------------------------------------------------------------------- when a lane fails
class _Policy:
    """A CartPole policy (push right) that runs ``in_child`` in a lane process: a child is any process but the
    test's own."""

    is_recurrent = False

    def __init__(self, in_child):
        self.parent, self.in_child = os.getpid(), in_child

    def act(self, obs, state=None, deterministic=True):
        if os.getpid() != self.parent:
            self.in_child()
        return np.ones(len(obs), dtype=np.int64), state

    def reset(self, done_mask):
        pass


def _cartpoles(n: int = 4):
    return gym.vector.SyncVectorEnv(
        [lambda: gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1"))] * n
    )


def _kill_self():
    os.kill(os.getpid(), signal.SIGKILL)


def _raise():
    raise ValueError("the lane's policy broke")


def test_a_killed_lane_fails_the_rollout_in_one_line():
    with pytest.raises(RolloutError, match=r"lane process for envs 2-3 was killed by signal 9"):
        rollout(_Policy(_kill_self), _cartpoles(), 40, 0, True, lanes=2)


def test_a_lane_that_raises_fails_the_rollout_with_its_error_and_leaves_no_process():
    import multiprocessing

    with pytest.raises(RuntimeError, match="the lane's policy broke"):
        rollout(_Policy(_raise), _cartpoles(), 40, 0, True, lanes=2)
    assert multiprocessing.active_children() == []


def test_a_lane_that_hangs_runs_out_of_budget():
    with hang_guard(60), pytest.raises(RolloutError, match="--max-seconds 1"):
        rollout(_Policy(lambda: time.sleep(3600)), _cartpoles(), 40, 0, True, lanes=2, max_seconds=1)


class _Breaks(gym.Wrapper):
    """Env 3 raises at its 7th step (after the split, in the second lane)."""

    def __init__(self, env, index):
        super().__init__(env)
        self.index, self.steps = index, 0

    def step(self, action):
        self.steps += 1
        if self.index == 3 and self.steps == 7:
            raise OSError("the simulator's socket closed")
        return self.env.step(action)


def test_an_env_that_raises_in_a_lane_is_said_as_in_the_sequential_loop():
    said = []
    for split in (1, 2):
        envs = gym.vector.SyncVectorEnv(
            [
                lambda i=i: _Breaks(gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1")), i)
                for i in range(4)
            ]
        )
        with pytest.raises(RolloutError) as raised:
            rollout(_Policy(lambda: None), envs, 40, 0, True, lanes=split, who="the cartpoles")
        said.append((raised.value.message, raised.value.hint))
    assert said[0] == said[1]
    assert said[0][0] == "the cartpoles raised: OSError: the simulator's socket closed"
    assert "step(actions) at step 7" in said[0][1]


# ----------------------------------------------------------------------------- when a split pays
def _probed_lane(env_seconds: float, policy_seconds: float):
    """A CartPole rollout's lane after its probe steps, with the per-step times given."""
    from zoo.vector_rollout import Lane, Quotas

    envs = _cartpoles()
    obs, _ = envs.reset(seed=0)
    lane = Lane(_Policy(lambda: None), envs, obs, True, Quotas(8, 4, None), "the env")
    for _ in range(lanes.PROBE_STEPS):
        lane.step()
    lane.env_seconds, lane.policy_seconds = env_seconds * lane.steps, policy_seconds * lane.steps
    return lane


def test_a_split_happens_only_where_the_envs_cost_enough_and_cores_are_free(monkeypatch):
    monkeypatch.setattr(lanes, "runnable_tasks", lambda: 1)  # this process alone
    monkeypatch.setattr(lanes, "usable_cores", lambda: 2)
    assert lanes.lanes_now(_probed_lane(1e-3, 1e-4), 2, forced=False) == 2  # MuJoCo-like: the envs cost most
    assert lanes.lanes_now(_probed_lane(1e-4, 1e-3), 2, forced=False) == 1  # a big network on a cheap env
    assert lanes.lanes_now(_probed_lane(1e-4, 1e-5), 2, forced=False) == 1  # CartPole: too little to save
    monkeypatch.setattr(lanes, "runnable_tasks", lambda: 2)  # another process busy: no core to spare
    assert lanes.lanes_now(_probed_lane(1e-3, 1e-4), 2, forced=False) == 1
    assert lanes.lanes_now(_probed_lane(1e-3, 1e-4), 2, forced=True) == 2  # asked for: split anyway


def test_lanes_cover_the_envs_evenly_and_one_core_never_splits(monkeypatch):
    assert lanes.bounds(8, 2) == [(0, 4), (4, 8)]
    assert lanes.bounds(7, 3) == [(0, 3), (3, 5), (5, 7)]
    monkeypatch.setattr(lanes, "usable_cores", lambda: 1)
    assert lanes.lane_count(None, 8) == 1
    assert lanes.lane_count(4, 2) == 2


def test_what_cannot_be_split_is_not(monkeypatch):
    lane = _probed_lane(1e-3, 1e-4)
    assert lanes.splittable(lane)
    monkeypatch.setattr(lane.policy, "forks_safely", False, raising=False)
    assert not lanes.splittable(lane)
    whole = _probed_lane(1e-3, 1e-4)
    whole.envs = gym.vector.AsyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2)  # not a SyncVectorEnv
    try:
        assert not lanes.splittable(whole)
    finally:
        whole.envs.close()


def test_a_kept_env_split_in_one_evaluation_gives_the_next_its_fresh_episodes(splits, dqn_run):
    """``zoo watch`` and ``eval --all`` keep one env for many evaluations: a split leaves the children's copies
    behind and the parent's sub-envs mid-episode, and the next evaluation's seeded reset must not care."""
    from zoo.eval_session import EvalSession
    from zoo.registry import load_registry

    model = dqn_run / "dqn.cleanrl_model"
    kept = EvalSession(load_registry(), episodes=6, num_envs=4)
    split = [kept.evaluate(model)[1].episodes for _ in range(2)]
    assert splits == [2, 2]
    whole = EvalSession(load_registry(), episodes=6, num_envs=4, lanes=1).evaluate(model)[1].episodes
    assert splits == [2, 2]
    assert split[0] == split[1] == whole
    kept.close()
