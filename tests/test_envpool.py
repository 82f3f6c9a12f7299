"""The ``envpool`` preset: zoo's rebuild of EnvPool's Atari env, and CleanRL's ppo_atari_envpool_xla_jax_scan.

Against real EnvPool (``envpool==1.2.5``, the ``envpool`` test extra; skipped, saying so, where it cannot
be imported): zoo's env, as the preset builds it, must give EnvPool's observations, rewards, lives and
done flags frame for frame on seeded episodes of a fixed (seeded random) policy, made as CleanRL's script
makes its envs (``envpool.make(env_id, env_type="gym", episodic_life=True, reward_clip=True, seed=seed)``);
and zoo's full-game episode returns must equal what CleanRL's eval loop
(cleanrl_utils/evals/ppo_envpool_jax_eval.py:58-79: sum ``infos["reward"]`` until ``infos["terminated"]``)
computes on EnvPool for the same actions.

Without EnvPool: the no-op generator against libstdc++ (values printed by g++ 12), the ids, the missing-
extra error, and a whole run end to end: the PPO agent built with the cleanrl 1.2.0 wheel's own flax
classes, saved as the script saves it, then ``zoo check``, ``zoo eval`` (returns equal to rolling out the
flax agent itself on zoo's env) ``zoo export`` with parity, and the one-line error where ale-py is missing.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers import zoo

from zoo.envpool_atari import EnvPoolAtari, StdNoopRng, envpool_task, is_envpool_id
from zoo.envs import EnvSpec, env_factory, extras_for_env, make_vector_env

try:
    import envpool

    ENVPOOL_MISSING = None
except ImportError as exc:
    ENVPOOL_MISSING = f"envpool not importable ({exc}): pip install 'rl-zoo-hub[envpool]'"

needs_envpool = pytest.mark.skipif(ENVPOOL_MISSING is not None, reason=ENVPOOL_MISSING or "")

PPO = "ppo_atari_envpool_xla_jax_scan"


def _actions(n: int, seed: int) -> Iterator[int]:
    """The fixed policy: seeded uniform random actions."""
    rng = np.random.default_rng(seed)
    while True:
        yield int(rng.integers(n))


def _envpool(env_id: str, seed: int):
    """The env as CleanRL's script makes it (one env; everything else EnvPool's defaults)."""
    return envpool.make(env_id, env_type="gym", num_envs=1, episodic_life=True, reward_clip=True, seed=seed)


# ----------------------------------------------------------------------------- no envpool needed
def test_noop_draws_match_libstdcxx():
    rng = StdNoopRng(5489)  # std::mt19937's default seed: the standard fixes its 10000th output
    assert [rng.raw() for _ in range(10000)][-1] == 4123659995
    # std::uniform_int_distribution<>(0, 29)(std::mt19937(seed)), eight draws, from g++ 12.2 (libstdc++)
    expected = {
        0: [16, 17, 21, 25, 18, 25, 16, 25],
        1: [12, 29, 21, 27, 0, 3, 9, 29],
        7: [2, 6, 23, 9, 13, 29, 21, 13],
        42: [11, 23, 28, 5, 21, 23, 17, 17],
        123456789: [15, 29, 16, 0, 15, 21, 21, 4],
    }
    for seed, draws in expected.items():
        rng = StdNoopRng(seed)
        assert [rng.below(30) for _ in draws] == draws, seed
    rng = StdNoopRng(3)  # other ranges, one generator (the rejection branch needs a large n)
    assert [rng.below(n) for n in (1, 2, 3, 7, 30, 1000, 65537)] == [0, 0, 2, 5, 8, 121, 33478]


def test_envpool_ids():
    assert is_envpool_id("Breakout-v5") and not is_envpool_id("ALE/Breakout-v5")
    assert not is_envpool_id("BreakoutNoFrameskip-v4") and not is_envpool_id("CartPole-v1")
    assert envpool_task("MontezumaRevenge-v5") == "montezuma_revenge"
    assert envpool_task("Breakout-v5") == "breakout"
    assert extras_for_env("Breakout-v5") == ["atari"] and extras_for_env("SpaceInvaders-v5") == ["atari"]
    assert extras_for_env("Ant-v5") == ["mujoco"] and extras_for_env("CartPole-v1") == []
    with pytest.raises(ValueError, match="no ROM"):
        EnvPoolAtari("NoSuchGame-v5")


def test_preset_env_is_unclipped_full_games():
    env = env_factory(EnvSpec("Breakout-v5", "envpool"), 0)()
    assert env.observation_space.shape == (4, 84, 84) and env.action_space.n == 4
    env.reset(seed=3)
    actions, lives_lost, total = _actions(4, 0), 0, 0.0
    while True:
        _, reward, terminated, truncated, info = env.step(next(actions))
        total += reward
        lives_lost += bool(info.get("life_loss"))
        if terminated or truncated:
            break
    assert terminated and info["terminated"] and info["lives"] == 0
    assert lives_lost == 4  # the episode ran through all five lives
    assert info["episode"]["r"] == total


# ----------------------------------------------------------------------------- against EnvPool
@needs_envpool
@pytest.mark.parametrize(
    ("env_id", "seed", "steps"), [("Breakout-v5", 1, 1500), ("Breakout-v5", 7, 800), ("Pong-v5", 2, 1800)]
)
def test_matches_envpool_frame_for_frame(env_id, seed, steps):
    pool, env = _envpool(env_id, seed), env_factory(EnvSpec(env_id, "envpool"), 0)()
    obs_p, _ = pool.reset()
    obs_z, _ = env.reset(seed=seed)
    assert np.array_equal(obs_p[0], obs_z)
    actions, games, rewards = _actions(env.action_space.n, seed), 0, 0
    for t in range(steps):
        a = next(actions)
        obs_p, rew_p, term_p, trunc_p, info_p = pool.step(np.array([a]))
        obs_z, rew_z, term_z, trunc_z, info_z = env.step(a)
        at = f"{env_id} seed {seed} step {t}"
        assert np.array_equal(obs_p[0], obs_z), at
        assert rew_z == info_p["reward"][0] and rew_p[0] == np.sign(rew_z), at  # zoo: the raw reward
        assert info_z["lives"] == info_p["lives"][0], at
        assert term_z == bool(info_p["terminated"][0]) and not trunc_z and not trunc_p[0], at  # game over
        assert bool(term_p[0]) == (term_z or bool(info_z.get("life_loss"))), at  # EnvPool: each life loss
        rewards += rew_z != 0
        if term_z:
            games += 1
            obs_p, *_ = pool.step(np.array([0]))  # EnvPool's auto-reset step; zoo's vector env resets
            obs_z, _ = env.reset()
            assert np.array_equal(obs_p[0], obs_z), f"{at} (reset)"
    assert games >= 1 and rewards >= 3  # the episodes went through game overs and scoring


@needs_envpool
def test_full_game_returns_match_cleanrl_eval_loop():
    env_id, seed, games = "Breakout-v5", 3, 3
    # ppo_envpool_jax_eval.py:58-79 on EnvPool (1.2.5's gym API returns five values, 0.6.x four)
    pool, actions, theirs = _envpool(env_id, seed), _actions(4, 11), []
    for _ in range(games):
        episodic_return, terminated = 0.0, False
        pool.reset()
        while not terminated:
            *_, infos = pool.step(np.array([next(actions)]))
            episodic_return += infos["reward"][0]
            terminated = sum(infos["terminated"]) == 1
        theirs.append(episodic_return)
    # zoo's vector env as zoo's evaluator drives it; its auto-reset step takes no action from the policy
    envs, actions = make_vector_env(EnvSpec(env_id, "envpool"), 1), _actions(4, 11)
    ours, autoreset = [], False
    envs.reset(seed=seed)
    while len(ours) < games:
        _, _, _, _, info = envs.step(np.array([0 if autoreset else next(actions)]))
        autoreset = False
        if info.get("_episode", [False])[0]:
            ours.append(float(info["episode"]["r"][0]))
            autoreset = True
    envs.close()
    assert ours == theirs and sum(theirs) > 0


# ----------------------------------------------------------------------------- a whole run, end to end
@pytest.fixture
def ppo_run(tmp_path):
    """``runs/Breakout-v5__ppo...__1__1700000000`` with a random-weights agent saved as the script saves it;
    (run folder, the flax agent's logits as a function of a float32 obs batch)."""
    pytest.importorskip("flax", reason="jax/flax not importable (pip install 'rl-zoo-hub[jax]')")
    import flax.serialization
    import jax
    from test_cleanrl_flax_models import _scramble, _script_args, _wheel_classes

    classes = _wheel_classes(PPO)
    network, actor, critic = classes["Network"](), classes["Actor"](action_dim=4), classes["Critic"]()
    key, network_key, actor_key, critic_key = jax.random.split(jax.random.PRNGKey(1), 4)
    sample = np.zeros((1, 4, 84, 84), np.float32)
    network_params = _scramble(network.init(network_key, sample), seed=6)
    hidden = network.apply(network_params, sample)
    actor_params = _scramble(actor.init(actor_key, hidden), seed=7)
    critic_params = _scramble(critic.init(critic_key, hidden), seed=8)
    args = _script_args(PPO, ["--env-id", "Breakout-v5"])
    run = tmp_path / "runs" / f"Breakout-v5__{PPO}__1__1700000000"
    run.mkdir(parents=True)
    # ppo_atari_envpool_xla_jax_scan.py:477-491: to_bytes([vars(args), [network, actor, critic]])
    payload = [args, [network_params, actor_params, critic_params]]
    (run / f"{PPO}.cleanrl_model").write_bytes(flax.serialization.to_bytes(payload))

    def logits(obs: np.ndarray) -> np.ndarray:
        return np.asarray(actor.apply(actor_params, network.apply(network_params, obs)))

    return run, logits


def _flax_returns(logits, episodes: int, seed: int) -> list[tuple[float, int]]:
    """The flax agent itself (argmax of its logits) on zoo's envpool env, one env, seeded like zoo eval."""
    envs = make_vector_env(EnvSpec("Breakout-v5", "envpool"), 1)
    obs, _ = envs.reset(seed=seed)
    found = []
    while len(found) < episodes:
        obs, _, _, _, info = envs.step(logits(obs.astype(np.float32)).argmax(axis=1))
        if info.get("_episode", [False])[0]:
            found.append((float(info["episode"]["r"][0]), int(info["episode"]["l"][0])))
    envs.close()
    return found


def test_ppo_envpool_run_checks_evaluates_and_exports(ppo_run, tmp_path, monkeypatch):
    run, logits = ppo_run
    report = zoo("check", run, "--json").json()[0]
    assert report["status"] == "ok", report
    out = tmp_path / "eval.json"
    result = zoo("eval", run, "-n", 2, "--deterministic", "--num-envs", 1, "--seed", 5, "-q", "--out", out)
    assert result.exit_code == 0, result.stderr
    ours = [(e["return"], e["length"]) for e in json.loads(out.read_text())["episodes"]]
    assert ours == _flax_returns(logits, 2, seed=5)
    if importlib.util.find_spec("moviepy") is not None:  # the video extra: one mp4 per full game
        video_out = tmp_path / "video-eval.json"
        result = zoo("eval", run, "-n", 1, "--capture-video", "--seed", 5, "-q", "--out", video_out)
        assert result.exit_code == 0, result.stderr
        (video,) = json.loads(video_out.read_text())["videos"]
        assert video.endswith(".mp4") and Path(video).stat().st_size > 0
    exported = tmp_path / "agent.onnx"
    result = zoo("export", run, "--out", exported, "--json", "-q")
    assert result.exit_code == 0, result.stderr
    assert result.json()["parity"]["exact"] and exported.is_file()
    # without ale-py (the atari extra): one line naming the pip command, exit 1
    monkeypatch.setitem(sys.modules, "ale_py", None)  # `import ale_py` raises ImportError
    result = zoo("eval", run, "-n", 1, "-q")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1, result.stderr
    assert "pip install 'rl-zoo-hub[atari]'" in lines[0], result.stderr
