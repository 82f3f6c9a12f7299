"""Stable-Baselines3 models: recognised, inspected and evaluated exactly as SB3's own predict.

Every model here is trained for a few hundred steps by the real SB3 and saved with its own
``save``; the SB3 side of each parity check loads it with SB3's own ``load`` and steps the same
seeded envs through :func:`zoo.evaluator.rollout`, so returns must match episode for episode.
"""

from __future__ import annotations

import base64
import json
import pickle
import shutil
import zipfile
from collections import OrderedDict
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from helpers import Canary, assert_exports_act_like_checkpoint, holding_little, make_run, zoo

from zoo.envs import EnvSpec, make_vector_env
from zoo.evaluator import rollout

EPISODES, NUM_ENVS, SEED = 6, 3, 7


class _Env(gym.Env):
    """SB3's make_vec_env asks for rgb_array rendering; these envs accept it."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, render_mode=None):
        self.render_mode = render_mode

    def render(self):
        return np.zeros((8, 8, 3), dtype=np.uint8)


class _DictEnv(_Env):
    """Reach a target chosen by a discrete mode: Dict observation (Box + Discrete), Box action."""

    observation_space = gym.spaces.Dict(
        {"pos": gym.spaces.Box(-10, 10, (2,), np.float32), "mode": gym.spaces.Discrete(3)}
    )
    action_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    _TARGETS = np.array([[3, 3], [-3, 3], [0, -3]], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-5, 5, 2).astype(np.float32)
        self.mode, self.t = int(self.np_random.integers(3)), 0
        return self._obs(), {}

    def _obs(self):
        return {"pos": self.pos.copy(), "mode": self.mode}

    def step(self, action):
        self.pos = np.clip(self.pos + np.clip(action, -1, 1), -10, 10).astype(np.float32)
        self.t += 1
        distance = float(np.linalg.norm(self.pos - self._TARGETS[self.mode]))
        return self._obs(), -distance, distance < 0.5, self.t >= 25, {}


gym.register("ZooSB3Dict-v0", entry_point=_DictEnv)


class _ImageEnv(_Env):
    """Steer a bright column to the centre: channel-last uint8 images (SB3 transposes them for CnnPolicy)."""

    observation_space = gym.spaces.Box(0, 255, (36, 36, 3), np.uint8)
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = int(self.np_random.integers(36)), 0
        return self._obs(), {}

    def _obs(self):
        obs = np.zeros((36, 36, 3), np.uint8)
        obs[:, self.x, :] = 255
        return obs

    def step(self, action):
        self.x, self.t = int(np.clip(self.x + int(action) - 1, 0, 35)), self.t + 1
        return self._obs(), -abs(self.x - 18.0), self.x == 18, self.t >= 30, {}


gym.register("ZooSB3Image-v0", entry_point=_ImageEnv)


class _GridEnv(_Env):
    """Walk to a corner of a 5x5 grid: MultiDiscrete observation (SB3 one-hot encodes it), Discrete action."""

    observation_space = gym.spaces.MultiDiscrete([5, 5])
    action_space = gym.spaces.Discrete(4)
    _MOVES = ((0, 1), (1, 0), (0, -1), (-1, 0))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cell, self.t = self.np_random.integers(0, 5, 2), 0
        return self.cell.copy(), {}

    def step(self, action):
        self.cell = np.clip(self.cell + self._MOVES[int(action)], 0, 4)
        self.t += 1
        done = bool((self.cell == 4).all())
        return self.cell.copy(), float(done) - 0.1, done, self.t >= 20, {}


gym.register("ZooSB3Grid-v0", entry_point=_GridEnv)


class _GoalEnv(_Env):
    """Reach a goal, goal-conditioned (observation/achieved_goal/desired_goal) as HER needs."""

    _box = gym.spaces.Box(-5, 5, (2,), np.float32)
    observation_space = gym.spaces.Dict({"observation": _box, "achieved_goal": _box, "desired_goal": _box})
    action_space = gym.spaces.Box(-1, 1, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.t = np.zeros(2, np.float32), 0
        self.goal = self.np_random.uniform(-3, 3, 2).astype(np.float32)
        return self._obs(), {}

    def _obs(self):
        return {
            "observation": self.pos.copy(),
            "achieved_goal": self.pos.copy(),
            "desired_goal": self.goal.copy(),
        }

    def compute_reward(self, achieved_goal, desired_goal, info):
        return -np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)

    def step(self, action):
        self.pos = np.clip(self.pos + 0.3 * np.clip(action, -1, 1), -5, 5).astype(np.float32)
        self.t += 1
        reward = float(self.compute_reward(self.pos, self.goal, {}))
        return self._obs(), reward, reward > -0.3, self.t >= 30, {"is_success": reward > -0.3}


gym.register("ZooSB3Goal-v0", entry_point=_GoalEnv)


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """Real SB3 models, trained briefly, in the layouts users have (hub names, rl_zoo3, lone zips)."""
    from stable_baselines3 import A2C, DDPG, DQN, PPO, SAC, TD3, HerReplayBuffer
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    root = tmp_path_factory.mktemp("sb3")
    folders = (
        "hub",
        "lone",
        "logs/ppo/Pendulum-v1_1/Pendulum-v1",
        "dict",
        "custom",
        "image",
        "grid",
        "goal",
        "a2c",
        "td3",
        "ddpg",
    )
    for folder in folders:
        (root / folder).mkdir(parents=True)  # SB3's save warns when it has to create them
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ppo = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, n_epochs=2, seed=0)
        ppo.learn(128).save(root / "hub" / "ppo-CartPole-v1.zip")
        dqn = DQN("MlpPolicy", "CartPole-v1", learning_starts=50, train_freq=4, seed=0)
        dqn.learn(300).save(root / "lone" / "DQN.zip")
        sac = SAC("MlpPolicy", "Pendulum-v1", learning_starts=100, seed=0)
        sac.learn(200).save(root / "hub" / "sac-Pendulum-v1.zip")

        zoo_run = root / "logs" / "ppo" / "Pendulum-v1_1"  # rl_zoo3: model + Pendulum-v1/vecnormalize.pkl
        venv = VecNormalize(make_vec_env("Pendulum-v1", n_envs=2, seed=0))
        PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=2, seed=0).learn(256).save(
            zoo_run / "Pendulum-v1.zip"
        )
        venv.save(zoo_run / "Pendulum-v1" / "vecnormalize.pkl")

        dict_dir = root / "dict"  # a lone zip, env id from rl_zoo3's args.yml, stats as vec_normalize.pkl
        venv = VecNormalize(make_vec_env("ZooSB3Dict-v0", n_envs=2, seed=0), norm_obs_keys=["pos"])
        PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, n_epochs=2, seed=0).learn(128).save(
            dict_dir / "model.zip"
        )
        venv.save(dict_dir / "vec_normalize.pkl")
        args = OrderedDict([("algo", "ppo"), ("env", "ZooSB3Dict-v0"), ("seed", 0)])
        (dict_dir / "args.yml").write_text(__import__("yaml").dump(args))  # as rl_zoo3's train.py writes it

        # neutral names: only the zip's data tells these algorithms apart (TD3 and DDPG share TD3Policy)
        A2C("MlpPolicy", "CartPole-v1", n_steps=8, seed=0).learn(64).save(root / "a2c" / "CartPole-v1.zip")
        for algo in (TD3, DDPG):
            model = algo("MlpPolicy", "Pendulum-v1", learning_starts=50, seed=0)
            model.learn(100).save(root / algo.__name__.lower() / "Pendulum-v1.zip")
        grid = PPO("MlpPolicy", "ZooSB3Grid-v0", n_steps=64, batch_size=32, n_epochs=1, seed=0)
        grid.learn(64).save(root / "grid" / "ppo-ZooSB3Grid-v0.zip")
        her = SAC(
            "MultiInputPolicy",
            "ZooSB3Goal-v0",
            replay_buffer_class=HerReplayBuffer,
            replay_buffer_kwargs={"n_sampled_goal": 2},
            learning_starts=64,
            seed=0,
        )
        her.learn(200).save(root / "goal" / "sac-ZooSB3Goal-v0.zip")
        cnn = PPO("CnnPolicy", "ZooSB3Image-v0", n_steps=64, batch_size=32, n_epochs=1, seed=0)
        cnn.learn(64).save(root / "image" / "ppo-ZooSB3Image-v0.zip")
        hardtanh = PPO(
            "MlpPolicy", "CartPole-v1", n_steps=64, seed=0, policy_kwargs={"activation_fn": torch.nn.Hardtanh}
        )
        hardtanh.save(root / "custom" / "ppo-CartPole-v1.zip")  # benign, but not on zoo's allowlist
    finally:
        torch.set_num_threads(threads)
    return root


def _rewrite(src: Path, dst: Path, edit_data=None, version: str | None = None) -> Path:
    """Copy an SB3 zip, editing its data JSON (as another SB3 version or an attacker would)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            raw = zin.read(name)
            if name == "data" and edit_data:
                data = json.loads(raw)
                edit_data(data)
                raw = json.dumps(data, indent=4).encode()
            elif name == "_stable_baselines3_version" and version:
                raw = version.encode()
            zout.writestr(name, raw)
    return dst


def _sb3_episodes(model_file: Path, algo: str, env_id: str, stats: Path | None = None):
    """SB3's own load + predict(deterministic=True) through zoo's rollout on the same seeded envs."""
    import stable_baselines3
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    model = getattr(stable_baselines3, algo).load(model_file, device="cpu")
    norm = VecNormalize.load(str(stats), DummyVecEnv([lambda: gym.make(env_id)])) if stats else None

    class Shim:
        is_recurrent = False

        def act(self, obs, state=None, deterministic=True):
            obs = norm.normalize_obs(obs) if norm is not None else obs
            return model.predict(obs, deterministic=True)[0], state

    envs = make_vector_env(EnvSpec(env_id), NUM_ENVS)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return [(e.env_index, e.return_, e.length) for e in rollout(Shim(), envs, EPISODES, SEED, True)]
    finally:
        torch.set_num_threads(threads)
        envs.close()


def _zoo_episodes(target: Path, *args: str, episodes: int = EPISODES):
    """``zoo eval --json``: eval.json and its episodes as (env index, return, length)."""
    result = zoo(
        "eval",
        target,
        "--quiet",
        "--json",
        "-n",
        str(episodes),
        "--num-envs",
        str(NUM_ENVS),
        "--seed",
        str(SEED),
        "--device",
        "cpu",
        "--out",
        target.parent / "zoo-eval.json",
        *args,
    )
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["framework"] == "sb3" and data["deterministic"] is True
    return data, [(e["env_index"], e["return"], e["length"]) for e in data["episodes"]]


def _check(target: Path, *args: str) -> dict:
    result = zoo("check", target, "--json", *args)
    (report,) = result.json()
    return report


# ----------------------------------------------------------------------------- check
def test_check_reports_algorithm_policy_spaces_versions_and_stats(models):
    import stable_baselines3

    reports = {
        str(Path(r["run"]["model_file"]).relative_to(models)): r
        for r in zoo("check", models, "--json").json()
    }
    pendulum, box1, box2 = "Pendulum-v1", "Box(-2.0, 2.0, (1,), float32)", "Box(-1.0, 1.0, (2,), float32)"
    expected = {  # file -> (exp_name, policy class, env id, action space)
        "hub/ppo-CartPole-v1.zip": (
            "sb3_ppo",
            "common.policies.ActorCriticPolicy",
            "CartPole-v1",
            "Discrete(2)",
        ),
        "lone/DQN.zip": ("sb3_dqn", "dqn.policies.DQNPolicy", None, "Discrete(2)"),
        "hub/sac-Pendulum-v1.zip": ("sb3_sac", "sac.policies.SACPolicy", pendulum, box1),
        "logs/ppo/Pendulum-v1_1/Pendulum-v1.zip": (
            "sb3_ppo",
            "common.policies.ActorCriticPolicy",
            pendulum,
            box1,
        ),
        "dict/model.zip": ("sb3_ppo", "common.policies.MultiInputActorCriticPolicy", "ZooSB3Dict-v0", box2),
        "image/ppo-ZooSB3Image-v0.zip": (
            "sb3_ppo",
            "common.policies.ActorCriticCnnPolicy",
            "ZooSB3Image-v0",
            "Discrete(3)",
        ),
        "grid/ppo-ZooSB3Grid-v0.zip": (
            "sb3_ppo",
            "common.policies.ActorCriticPolicy",
            "ZooSB3Grid-v0",
            "Discrete(4)",
        ),
        "goal/sac-ZooSB3Goal-v0.zip": ("sb3_sac", "sac.policies.MultiInputPolicy", "ZooSB3Goal-v0", box2),
        "a2c/CartPole-v1.zip": ("sb3_a2c", "common.policies.ActorCriticPolicy", "CartPole-v1", "Discrete(2)"),
        "td3/Pendulum-v1.zip": ("sb3_td3", "td3.policies.TD3Policy", pendulum, box1),
        "ddpg/Pendulum-v1.zip": ("sb3_ddpg", "td3.policies.TD3Policy", pendulum, box1),
    }
    assert set(reports) == set(expected) | {"custom/ppo-CartPole-v1.zip"}
    for name, (exp_name, policy, env_id, action_space) in expected.items():
        r = reports[name]
        assert (
            r["run"]["framework"] == "sb3"
            and r["run"]["exp_name"] == exp_name
            and r["run"]["env_id"] == env_id
        )
        d = r["details"]
        assert d["algorithm"] == exp_name.removeprefix("sb3_").upper()
        assert d["policy_class"] == f"stable_baselines3.{policy}" and d["action_space"] == action_space
        assert d["sb3_saved"] == d["sb3_installed"] == stable_baselines3.__version__
        assert d["num_timesteps"] > 0 and d["format"] == "sb3-zip"
        assert d["saved_with"]["Stable-Baselines3"] == stable_baselines3.__version__
        if env_id is None:
            assert r["status"] == "warning" and "env id unknown" in r["reason"] and "--env-id" in r["hint"]
        else:
            assert r["status"] == "ok" and r["reason"] == "ready to evaluate", r
    zoo_run = reports["logs/ppo/Pendulum-v1_1/Pendulum-v1.zip"]
    assert zoo_run["run"]["run_name"] == "Pendulum-v1_1"
    assert zoo_run["details"]["normalization"]["file"].endswith("Pendulum-v1/vecnormalize.pkl")
    dict_obs = reports["dict/model.zip"]["details"]
    assert dict_obs["normalization"]["keys"] == ["pos"]
    assert "Dict('mode': Discrete(3), 'pos': Box" in dict_obs["observation_space"]
    assert reports["hub/ppo-CartPole-v1.zip"]["details"]["normalization"] is None
    image = reports["image/ppo-ZooSB3Image-v0.zip"]["details"]
    assert image["observation_space"] == "Box(0, 255, (3, 36, 36), uint8)"  # saved channel-first


def test_what_sb3_saves_passes_the_checks_for_downloaders(models):
    """Every real save (each algorithm, Dict, image and goal observations, HER, custom policy kwargs): every
    ``:serialized:`` value is on the allowlist, and the state dicts are exactly the ones SB3's load wants."""
    from zoo.frameworks.sb3.archive import read_archive
    from zoo.frameworks.sb3.own_load import VARIABLES, findings, state_dicts

    zips = sorted(models.rglob("*.zip"))
    assert len(zips) == 12
    for path in zips:
        archive = read_archive(path)
        saved = {n.removesuffix(".pth") for n in zipfile.ZipFile(path).namelist() if n.endswith(".pth")}
        assert state_dicts(archive) == saved - {v.removesuffix(".pth") for v in VARIABLES}, path
        if path.parent.name != "custom":
            assert findings(archive) == [], path
    (hardtanh,) = findings(read_archive(models / "custom" / "ppo-CartPole-v1.zip"))  # harmless, but unlisted
    assert hardtanh.message == (
        "ppo-CartPole-v1.zip: data['policy_kwargs'] names torch.nn.modules.activation.Hardtanh, which SB3's load "
        "would import and zoo cannot check"
    )
    assert not hardtanh.strippable and "cannot be stripped" in hardtanh.hint


def test_cleanrl_runs_and_other_zips_are_not_sb3_runs(models, tmp_path):
    make_run(tmp_path, "CartPole-v1", "dqn")
    with zipfile.ZipFile(tmp_path / "runs" / "data.zip", "w") as zf:
        zf.writestr("notes.txt", "not a model")
    (tmp_path / "runs" / "ppo-CartPole-v1.zip").write_bytes(
        (models / "hub" / "ppo-CartPole-v1.zip").read_bytes()
    )
    reports = zoo("check", tmp_path / "runs", "--json").json()
    assert sorted((r["run"]["framework"], r["run"]["exp_name"]) for r in reports) == [
        ("cleanrl", "dqn"),
        ("sb3", "sb3_ppo"),
    ]
    alone = zoo("check", tmp_path / "runs" / "data.zip", "--json")
    assert alone.exit_code == 0 and alone.json()[0]["status"] == "warning"
    assert "not a Stable-Baselines3 model" in alone.json()[0]["reason"]
    refused = zoo("eval", tmp_path / "runs" / "data.zip", "--quiet")
    assert refused.exit_code == 1 and "not a Stable-Baselines3 model" in refused.stderr


def test_rl_zoo3_run_dir_is_one_run_with_the_final_model_first(models, tmp_path):
    import shutil

    run = shutil.copytree(
        models / "logs" / "ppo" / "Pendulum-v1_1", tmp_path / "logs" / "ppo" / "Pendulum-v1_3"
    )
    for name in ("best_model.zip", "rl_model_100_steps.zip", "rl_model_2000_steps.zip"):
        shutil.copy(run / "Pendulum-v1.zip", run / name)
    shutil.copy(run / "Pendulum-v1" / "vecnormalize.pkl", run / "rl_model_vecnormalize_2000_steps.pkl")
    picks = []
    for remove in ("Pendulum-v1.zip", "best_model.zip", "rl_model_2000_steps.zip"):
        (report,) = zoo("check", tmp_path / "logs", "--json").json()
        assert report["status"] == "ok" and report["run"]["run_name"] == "Pendulum-v1_3"
        stats = Path(report["details"]["normalization"]["file"])
        picks.append((Path(report["run"]["model_file"]).name, f"{stats.parent.name}/{stats.name}"))
        (run / remove).unlink()
    assert picks == [  # the final model first; a checkpoint's own statistics with it
        ("Pendulum-v1.zip", "Pendulum-v1/vecnormalize.pkl"),
        ("best_model.zip", "Pendulum-v1/vecnormalize.pkl"),
        ("rl_model_2000_steps.zip", "Pendulum-v1_3/rl_model_vecnormalize_2000_steps.pkl"),
    ]


# ----------------------------------------------------------------------------- eval parity
@pytest.mark.parametrize(
    ("relpath", "algo", "env_id", "stats"),
    [
        ("hub/ppo-CartPole-v1.zip", "PPO", "CartPole-v1", None),
        ("lone/DQN.zip", "DQN", "CartPole-v1", None),
        ("hub/sac-Pendulum-v1.zip", "SAC", "Pendulum-v1", None),
        (
            "logs/ppo/Pendulum-v1_1",
            "PPO",
            "Pendulum-v1",
            "logs/ppo/Pendulum-v1_1/Pendulum-v1/vecnormalize.pkl",
        ),
        ("dict/model.zip", "PPO", "ZooSB3Dict-v0", "dict/vec_normalize.pkl"),
        ("image/ppo-ZooSB3Image-v0.zip", "PPO", "ZooSB3Image-v0", None),
        ("grid/ppo-ZooSB3Grid-v0.zip", "PPO", "ZooSB3Grid-v0", None),
        ("a2c/CartPole-v1.zip", "A2C", "CartPole-v1", None),
        ("td3/Pendulum-v1.zip", "TD3", "Pendulum-v1", None),
        ("ddpg/Pendulum-v1.zip", "DDPG", "Pendulum-v1", None),
    ],
)
def test_eval_matches_sb3_predict_episode_for_episode(models, relpath, algo, env_id, stats):
    target = models / relpath
    args = ("--env-id", env_id) if relpath.startswith("lone") else ()
    data, ours = _zoo_episodes(target, *args)
    model_file = target / "Pendulum-v1.zip" if target.is_dir() else target
    theirs = _sb3_episodes(model_file, algo, env_id, models / stats if stats else None)
    assert ours == theirs
    assert data["task"] == env_id and data["num_episodes"] == EPISODES
    if stats:  # the statistics matter: without them SB3's own predict scores differently
        assert _sb3_episodes(model_file, algo, env_id) != theirs


def test_eval_is_deterministic_by_registry_default_and_seeded_when_stochastic(models):
    target = models / "hub" / "sac-Pendulum-v1.zip"
    first = zoo(
        "eval", target, "--quiet", "--json", "-n", "3", "--stochastic", "--out", target.parent / "s.json"
    )
    again = zoo(
        "eval", target, "--quiet", "--json", "-n", "3", "--stochastic", "--out", target.parent / "s.json"
    )
    assert first.exit_code == 0, first.stderr
    assert first.json()["deterministic"] is False
    assert [e["return"] for e in first.json()["episodes"]] == [e["return"] for e in again.json()["episodes"]]
    _, deterministic = _zoo_episodes(target, episodes=3)
    assert [r for _, r, _ in deterministic] != [e["return"] for e in first.json()["episodes"]]


def test_wrong_env_or_algorithm_is_one_clear_error(models):
    dqn = models / "lone" / "DQN.zip"
    wrong_env = zoo("eval", dqn, "--quiet", "--env-id", "Pendulum-v1")
    assert (
        wrong_env.exit_code == 1
        and "sb3_dqn acts on a Discrete action space; Pendulum-v1's is Box(1,)" in wrong_env.stderr
    )
    wrong_algo = zoo("eval", dqn, "--quiet", "--env-id", "CartPole-v1", "--exp-name", "sb3_ppo")
    assert wrong_algo.exit_code == 1 and "holds an SB3 DQN model" in wrong_algo.stderr
    unknown = zoo("eval", dqn, "--quiet")
    assert unknown.exit_code == 1 and "--env-id" in unknown.stderr


# ----------------------------------------------------------------------------- export
EXPORTED = [  # (model file, algorithm, env id, what the module does last): every action and obs type here
    ("hub/ppo-CartPole-v1.zip", "PPO", "CartPole-v1", "argmax over action logits"),
    ("lone/DQN.zip", "DQN", "CartPole-v1", "argmax over Q-values"),
    ("a2c/CartPole-v1.zip", "A2C", "CartPole-v1", "argmax over action logits"),
    ("hub/sac-Pendulum-v1.zip", "SAC", "Pendulum-v1", "tanh squash rescaled to action bounds [-2.0, 2.0]"),
    ("td3/Pendulum-v1.zip", "TD3", "Pendulum-v1", "tanh squash rescaled to action bounds [-2.0, 2.0]"),
    ("ddpg/Pendulum-v1.zip", "DDPG", "Pendulum-v1", "tanh squash rescaled to action bounds [-2.0, 2.0]"),
    ("logs/ppo/Pendulum-v1_1/Pendulum-v1.zip", "PPO", "Pendulum-v1", "clip to action bounds [-2.0, 2.0]"),
    ("dict/model.zip", "PPO", "ZooSB3Dict-v0", "clip to action bounds [-1.0, 1.0]"),
    ("image/ppo-ZooSB3Image-v0.zip", "PPO", "ZooSB3Image-v0", "argmax over action logits"),
    ("grid/ppo-ZooSB3Grid-v0.zip", "PPO", "ZooSB3Grid-v0", "argmax over action logits"),
]


def _sb3_policy(models: Path, relpath: str, algo: str, env_id: str):
    import zoo

    return zoo.load_policy(models / relpath, exp_name=f"sb3_{algo.lower()}", env_id=env_id)


def _raw_obs(policy, n: int = 256):
    """A seeded batch of raw observations, as the env would give them (images channel-last, uint8)."""
    from gymnasium.vector.utils import batch_space

    space = batch_space(policy.observation_space, n)
    space.seed(SEED)
    return space.sample()


def _same(got, want: np.ndarray, tol: float) -> float:
    """Max abs difference; discrete actions must be equal, continuous ones within ``tol``."""
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    diff = float(np.abs(got.astype(np.float64) - want).max())
    assert diff == 0.0 if want.dtype.kind in "iu" else diff <= tol, diff
    return diff


def _onnx_session(module, example: torch.Tensor, path: Path):
    """Legacy ONNX export at opset 17, loaded in onnxruntime (the dynamo path is tested through the CLI)."""
    import contextlib
    import io
    import warnings

    import onnxruntime

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (example,),
            str(path),
            dynamo=False,
            input_names=["obs"],
            output_names=["actions"],
            dynamic_axes={"obs": {0: "batch"}, "actions": {0: "batch"}},
            opset_version=17,
        )
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize(("relpath", "algo", "env_id", "last"), EXPORTED, ids=[e[0] for e in EXPORTED])
def test_export_module_is_act_eager_traced_and_in_onnxruntime(models, tmp_path, relpath, algo, env_id, last):
    import warnings

    from torch.distributions import Distribution

    from zoo.exporter.obs import flatten_obs, obs_layout

    policy = _sb3_policy(models, relpath, algo, env_id)
    spec = policy.export_spec()
    assert (spec.obs_shape, spec.obs_groups) == obs_layout(policy.observation_space)
    assert spec.baked[-1] == last and spec.recurrent is None
    assert spec.left_to_caller == (["pass raw pixel values 0..255 as float32"] if "Image" in env_id else [])
    module = spec.module
    assert not module.training and {t.device.type for t in module.state_dict().values()} == {"cpu"}
    obs = _raw_obs(policy)
    want = policy.act(obs, deterministic=True)[0]
    x = torch.as_tensor(flatten_obs(obs, spec.obs_groups))
    assert tuple(x.shape) == (256, *spec.obs_shape)
    validate = Distribution._validate_args
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        eager = module(x).numpy()
        traced = torch.jit.trace(module, x[:2])
        at_256, at_1 = traced(x).numpy(), traced(x[:1]).numpy()
    assert Distribution._validate_args == validate  # switched off for the call only
    assert not [
        w for w in caught if issubclass(w.category, torch.jit.TracerWarning)
    ]  # no data-dependent flow
    diffs = {"eager": _same(eager, want, 1e-6), "traced": _same(at_256, want, 1e-6)}
    _same(at_1, want[:1], 1e-6)
    session = _onnx_session(module, x[:2], tmp_path / "legacy.onnx")
    diffs["onnx"] = _same(session.run(None, {"obs": x.numpy()})[0], want, 1e-5)
    _same(session.run(None, {"obs": x[:1].numpy()})[0], want[:1], 1e-5)


@pytest.mark.parametrize(
    ("relpath", "env_id", "keys"),
    [
        ("logs/ppo/Pendulum-v1_1/Pendulum-v1.zip", "Pendulum-v1", None),
        ("dict/model.zip", "ZooSB3Dict-v0", ["pos"]),
    ],
)
def test_export_bakes_vecnormalize(models, relpath, env_id, keys):
    from zoo.exporter.obs import flatten_obs

    policy = _sb3_policy(models, relpath, "PPO", env_id)
    spec = policy.export_spec()
    assert spec.normalization == {
        "kind": "sb3_vecnormalize",
        "keys": keys,
        "epsilon": 1e-8,
        "clip_obs": 10.0,
        "formula": "clip((x - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)",
    }
    assert spec.baked[0].startswith("VecNormalize observation normalization")
    obs = _raw_obs(policy)
    x = torch.as_tensor(flatten_obs(obs, spec.obs_groups))
    policy.normalizer = None  # the same policy without its statistics
    bare = policy.export_spec()
    assert bare.normalization is None and not any("VecNormalize" in line for line in bare.baked)
    with torch.no_grad():
        normalized, raw = spec.module(x).numpy(), bare.module(x).numpy()
    assert np.array_equal(raw, policy.act(obs)[0])
    assert (normalized != raw).any(axis=1).mean() > 0.9  # almost every action moves


# ----------------------------------------------------------------------------- old SB3 files
def test_sb3_1x_data_layout_still_loads(models, tmp_path):
    """SB3 1.x wrote net_arch as [dict(pi, vf)] and cloudpickled lr_schedule/clip_range as functions."""
    import cloudpickle
    from stable_baselines3 import PPO

    src = tmp_path / "ppo-CartPole-v1.zip"
    PPO(
        "MlpPolicy", "CartPole-v1", n_steps=64, seed=1, policy_kwargs={"net_arch": {"pi": [32], "vf": [16]}}
    ).save(src)

    def as_1x(data):
        data["policy_kwargs"] = {"net_arch": [{"pi": [32], "vf": [16]}]}
        for key in ("lr_schedule", "clip_range"):  # 1.x: constant_fn's closure, pickled by value
            data[key] = {
                ":type:": "<class 'function'>",
                ":serialized:": base64.b64encode(cloudpickle.dumps(lambda _: 3e-4)).decode(),
            }

    old = _rewrite(src, tmp_path / "old" / "ppo-CartPole-v1.zip", as_1x, version="1.6.2")
    report = _check(old)
    # zoo reads it, but the closures are bytecode SB3's own load rebuilds: code for whoever downloads it
    assert report["status"] == "error" and "--strip-unsafe" in report["hint"], report
    for key in ("clip_range", "lr_schedule"):
        said = [report["reason"], *report["notes"]]
        assert any(f"data['{key}'] is a function pickled by value" in line for line in said), said
    assert report["details"]["sb3_saved"] == "1.6.2" and "net_arch" in report["details"]["compat"][0]
    _, ours = _zoo_episodes(old)
    assert ours == _sb3_episodes(src, "PPO", "CartPole-v1")


def _gym_era(space, module: str):
    """SB3's data entry for ``space`` as OpenAI Gym 0.21 defined it (SB3 1.x pickled gym spaces).

    gym is not installed, so the class lives in a stand-in module for the time of the pickling;
    the JSON summary beside the pickle is what SB3's own ``data_to_json`` writes for it.
    """
    import sys
    import types

    from stable_baselines3.common.save_util import data_to_json

    name = type(space).__name__
    fake = types.ModuleType(module)
    cls = type(name, (), {"__module__": module})
    fake.__dict__[name] = cls
    old = cls.__new__(cls)
    attrs = {"Box": ("dtype", "_shape", "low", "high", "bounded_below", "bounded_above"), "Discrete": ("n",)}
    old.__dict__.update({k: getattr(space, k.lstrip("_") if k == "_shape" else k) for k in attrs[name]})
    old.__dict__.update(_shape=tuple(space.shape), dtype=space.dtype, _np_random=None)
    if name == "Discrete":
        old.n = int(space.n)
    parents = {p: types.ModuleType(p) for p in ("gym", "gym.spaces")}
    sys.modules.update({**parents, module: fake})
    try:
        return json.loads(data_to_json({"space": old}))["space"]
    finally:
        for stand_in in (*parents, module):
            del sys.modules[stand_in]


def test_sb3_1x_gym_spaces_are_rebuilt_from_the_json_summary(models, tmp_path):
    src = models / "hub" / "sac-Pendulum-v1.zip"
    env = gym.make("Pendulum-v1")

    def as_gym(data):
        data["observation_space"] = _gym_era(env.observation_space, "gym.spaces.box")
        data["action_space"] = _gym_era(env.action_space, "gym.spaces.box")

    old = _rewrite(src, tmp_path / "sac-Pendulum-v1.zip", as_gym, version="1.5.0")
    assert "gym.spaces.box" in base64.b64decode(
        json.loads(zipfile.ZipFile(old).read("data"))["action_space"][":serialized:"]
    ).decode("latin-1")
    report = _check(old)
    assert report["status"] == "ok", report
    assert any("OpenAI Gym space rebuilt" in note for note in report["details"]["compat"])
    assert report["details"]["action_space"] == "Box(-2.0, 2.0, (1,), float32)"
    _, ours = _zoo_episodes(old)
    assert ours == _sb3_episodes(src, "SAC", "Pendulum-v1")


def test_gym_discrete_summary_gives_the_same_space():
    from zoo.frameworks.sb3.gymspaces import space_from_summary

    assert space_from_summary(_gym_era(gym.spaces.Discrete(5), "gym.spaces.discrete")) == gym.spaces.Discrete(
        5
    )
    box = gym.make("CartPole-v1").observation_space
    assert space_from_summary(_gym_era(box, "gym.spaces.box")) == box


# ----------------------------------------------------------------------------- refusals
def _planted(models, tmp_path, key: str) -> tuple[Path, Path]:
    """A copy of the PPO zip whose ``data[key]`` holds a pickled canary; ``(zip, canary path)``."""
    canary = tmp_path / "canary"
    payload = base64.b64encode(pickle.dumps(Canary(canary), protocol=4)).decode()

    def plant(data):
        data[key][":serialized:"] = payload

    planted = _rewrite(models / "hub" / "ppo-CartPole-v1.zip", tmp_path / key / "ppo-CartPole-v1.zip", plant)
    return planted, canary


def test_malicious_data_is_refused_and_never_runs(models, tmp_path):
    bad, canary = _planted(models, tmp_path, "observation_space")
    report = _check(bad)
    assert (
        report["status"] == "error"
        and "system" in report["reason"]
        and "observation_space" in report["reason"]
    )
    result = zoo("eval", bad, "--quiet")
    assert result.exit_code == 3 and "unsafe pickle in data['observation_space']" in result.stderr
    assert "loading would call posix.system" in result.stderr
    assert "--trust-pickle" not in result.stderr  # never the hint for a file that runs code
    assert not canary.exists() and not (bad.parent / "eval.json").exists()


def test_code_in_a_value_zoo_never_decodes_is_an_error_and_never_runs_in_zoo(models, tmp_path):
    """zoo never decodes lr_schedule, so it evaluates the zip and the canary stays away; SB3's own load
    decodes every value and runs it: ``zoo check`` names it as code, for whoever downloads the zip."""
    from stable_baselines3 import PPO

    planted, canary = _planted(models, tmp_path, "lr_schedule")
    report = _check(planted)
    assert report["status"] == "error" and report["reason"] == (
        "ppo-CartPole-v1.zip: data['lr_schedule'] is an unsafe pickle: SB3's load would call posix.system"
    )
    assert "--strip-unsafe" in report["hint"] and report["details"]["algorithm"] == "PPO"
    _, ours = _zoo_episodes(planted)
    assert ours == _sb3_episodes(models / "hub" / "ppo-CartPole-v1.zip", "PPO", "CartPole-v1")
    assert not canary.exists()
    PPO.load(planted)  # the attack zoo check names is real: SB3's load runs it
    assert canary.exists()


def _without(src: Path, dst: Path, member: str, content: bytes | None = None) -> Path:
    """A copy of an SB3 zip with ``member`` left out (or replaced by ``content``)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            if item.filename != member:
                zout.writestr(item, zin.read(item))
            elif content is not None:
                zout.writestr(item, content)
    return dst


@pytest.mark.parametrize(
    ("relpath", "member", "content", "said"),
    [
        (
            "hub/ppo-CartPole-v1.zip",
            "policy.optimizer.pth",
            None,
            "policy.optimizer.pth is missing: SB3's PPO.load fails without it",
        ),
        (
            "hub/sac-Pendulum-v1.zip",
            "critic.optimizer.pth",
            b"not a torch file",
            "critic.optimizer.pth does not load with torch.load(weights_only=True), so SB3's load fails: not a torch",
        ),
        (
            "hub/ppo-CartPole-v1.zip",
            "pytorch_variables.pth",
            b"PK\x03\x04 cut short",
            "pytorch_variables.pth does not load with torch.load(weights_only=True)",
        ),
        ("hub/sac-Pendulum-v1.zip", "pytorch_variables.pth", None, None),  # SB3 keeps a fresh ent_coef
    ],
)
def test_members_sb3_cannot_load_are_warnings_and_sb3_agrees(
    models, tmp_path, relpath, member, content, said
):
    import stable_baselines3

    src = models / relpath
    damaged = _without(src, tmp_path / "hub" / src.name, member, content)
    report = _check(damaged)
    algo = getattr(stable_baselines3, report["details"]["algorithm"])
    if said is None:
        assert report["status"] == "ok", report
        algo.load(damaged)
        return
    assert report["status"] == "warning" and report["reason"].startswith(f"{src.name}: {said}"), report
    assert "zoo evaluates it" in report["hint"]
    with pytest.raises(Exception):  # noqa: B017 - SB3 fails in its own ways (KeyError, UnpicklingError)
        algo.load(damaged)
    _zoo_episodes(damaged, episodes=1)  # zoo reads the policy all the same


def test_nan_weights_are_an_error_naming_the_tensor(models, tmp_path):
    from stable_baselines3 import PPO

    model = PPO.load(models / "hub" / "ppo-CartPole-v1.zip", device="cpu")
    with torch.no_grad():
        model.policy.action_net.weight.fill_(float("nan"))
        model.policy.value_net.bias.fill_(float("inf"))
    (tmp_path / "hub").mkdir()
    model.save(tmp_path / "hub" / "ppo-CartPole-v1.zip")
    report = _check(tmp_path / "hub" / "ppo-CartPole-v1.zip")
    assert report["status"] == "error" and report["reason"] == (
        "policy.pth: non-finite weights (NaN or Inf): action_net.weight (128 of 128), value_net.bias (1 of 1)"
    ), report
    assert report["details"]["non_finite"] == [
        {"tensor": "policy.pth: action_net.weight", "non_finite": 128, "values": 128},
        {"tensor": "policy.pth: value_net.bias", "non_finite": 1, "values": 1},
    ]


def test_a_corrupt_model_where_a_run_expects_one_is_that_runs_error_row(models, tmp_path):
    """Cut short under a hub name, or without policy.pth in an rl_zoo3 run dir: an error row each, so that
    ``--json`` prints JSON; a folder with no run at all prints an empty list, the error on stderr."""
    hub = tmp_path / "tree" / "hub" / "ppo-CartPole-v1.zip"
    hub.parent.mkdir(parents=True)
    hub.write_bytes((models / "hub" / "ppo-CartPole-v1.zip").read_bytes()[:5000])
    zoo_run = tmp_path / "tree" / "logs" / "ppo" / "Pendulum-v1_1"
    shutil.copytree(models / "logs" / "ppo" / "Pendulum-v1_1", zoo_run)
    _without(
        models / "logs" / "ppo" / "Pendulum-v1_1" / "Pendulum-v1.zip",
        zoo_run / "Pendulum-v1.zip",
        "policy.pth",
    )
    result = zoo("check", tmp_path / "tree", "--json")
    assert result.exit_code == 1 and result.stderr == ""
    rows = {Path(r["run"]["model_file"]).name: r for r in result.json()}
    assert set(rows) == {"ppo-CartPole-v1.zip", "Pendulum-v1.zip"}
    assert rows["ppo-CartPole-v1.zip"]["status"] == "error"
    assert "cut short or corrupt" in rows["ppo-CartPole-v1.zip"]["reason"]
    assert (
        rows["Pendulum-v1.zip"]["status"] == "error"
        and "the zip has no policy.pth" in rows["Pendulum-v1.zip"]["reason"]
    )
    alone = zoo("check", hub, "--json")  # named on the command line: the same row, and eval's same words
    assert alone.exit_code == 1 and "cut short or corrupt" in alone.json()[0]["reason"]
    evaluated = zoo("eval", hub, "-n", "1")
    assert evaluated.exit_code == 1 and "cut short or corrupt" in evaluated.stderr
    assert "--exp-name" not in evaluated.stderr
    (tmp_path / "empty").mkdir()
    empty = zoo("check", tmp_path / "empty", "--json")
    assert empty.exit_code == 1 and empty.json() == [] and "no runs found" in empty.stderr


def test_a_dtype_state_numpy_never_writes_is_refused_without_a_traceback(models, tmp_path):
    """A bool dtype told it holds object references (its flags): numpy would fail freeing the array, in a
    traceback it can only print beside the verdict; the restricted unpickler refuses the state instead."""
    import pickletools
    import sys

    run = tmp_path / "logs" / "ppo" / "Pendulum-v1_1"
    shutil.copytree(models / "logs" / "ppo" / "Pendulum-v1_1", run)
    stats = run / "Pendulum-v1" / "vecnormalize.pkl"
    data = bytearray(stats.read_bytes())
    ops = list(pickletools.genops(bytes(data)))
    at = next(i for i, (op, arg, _) in enumerate(ops) if arg == "b1")
    flags = next(
        pos for op, arg, pos in ops[at:] if op.name == "BININT1" and arg == 0
    )  # (3, '|', ..., -1, -1, 0)
    data[flags + 1] = 1
    stats.write_bytes(bytes(data))
    printed = []
    hook, sys.unraisablehook = sys.unraisablehook, printed.append
    try:
        result = zoo("check", run, "--json", "--no-cache")
        import gc

        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert printed == [] and result.stderr == "" and "Traceback" not in result.stdout
    (report,) = result.json()
    assert report["status"] == "error" and "numpy dtype state" in report["reason"], report


def test_malicious_vecnormalize_is_refused_and_never_runs(models, tmp_path):
    canary = tmp_path / "canary"
    run = tmp_path / "logs" / "ppo" / "Pendulum-v1_2"
    (run / "Pendulum-v1").mkdir(parents=True)
    (run / "Pendulum-v1.zip").write_bytes((models / "logs/ppo/Pendulum-v1_1/Pendulum-v1.zip").read_bytes())
    (run / "Pendulum-v1" / "vecnormalize.pkl").write_bytes(pickle.dumps(Canary(canary), protocol=4))
    report = _check(run)
    assert report["status"] == "error" and report["reason"].startswith(
        "Pendulum-v1/vecnormalize.pkl: unsafe pickle"
    )
    assert "system" in report["reason"]
    result = zoo("eval", run, "--quiet")
    assert (
        result.exit_code == 3
        and "vecnormalize.pkl: unsafe pickle, loading it would call posix.system" in (result.stderr)
    )
    assert "runs code" in result.stderr and "trust" not in result.stderr  # the same words as zoo check
    assert not canary.exists() and not (run / "eval.json").exists()


def test_trust_pickle_falls_back_to_sb3_load(models):
    target = models / "custom" / "ppo-CartPole-v1.zip"
    report = _check(target)
    assert report["status"] == "error" and "torch.nn.modules.activation.Hardtanh" in report["reason"]
    assert "--trust-pickle" not in (report["hint"] or "") and "trust" not in (report["hint"] or "")
    refused = zoo("eval", target, "--quiet")
    assert refused.exit_code == 3 and "Hardtanh" in refused.stderr and "--trust-pickle" not in refused.stderr
    _, ours = _zoo_episodes(target, "--trust-pickle")
    assert ours == _sb3_episodes(target, "PPO", "CartPole-v1")


@pytest.mark.parametrize(
    "relpath, env_id",
    [
        ("hub/ppo-CartPole-v1.zip", "CartPole-v1"),
        ("lone/DQN.zip", "CartPole-v1"),
        ("a2c/CartPole-v1.zip", "CartPole-v1"),
        ("hub/sac-Pendulum-v1.zip", "Pendulum-v1"),
        ("td3/Pendulum-v1.zip", "Pendulum-v1"),
        ("ddpg/Pendulum-v1.zip", "Pendulum-v1"),
        ("logs/ppo/Pendulum-v1_1", "Pendulum-v1"),
        ("dict/model.zip", "ZooSB3Dict-v0"),
        ("image/ppo-ZooSB3Image-v0.zip", "ZooSB3Image-v0"),
        ("grid/ppo-ZooSB3Grid-v0.zip", "ZooSB3Grid-v0"),
        ("goal/sac-ZooSB3Goal-v0.zip", "ZooSB3Goal-v0"),
    ],
)
def test_exports_score_like_the_checkpoint_episode_for_episode(models, relpath, env_id, tmp_path):
    args = ("--env-id", env_id) if relpath.startswith("lone") else ()
    sidecars = assert_exports_act_like_checkpoint(
        models / relpath,
        tmp_path,
        *args,
        episodes=4,
        num_envs=2,
        continuous=env_id in ("Pendulum-v1", "ZooSB3Dict-v0", "ZooSB3Goal-v0"),
    )
    meta = sidecars["onnx"]
    assert meta["framework"] == "sb3" and meta["task"] == env_id
    assert meta["normalization_baked"] is relpath.startswith(("logs", "dict"))
    if relpath.startswith("dict"):  # keys in the space's (sorted) order, raw values, Discrete as one index
        groups = meta["obs_groups"]
        assert list(groups) == sorted(groups) and groups[list(groups)[0]]["start"] == 0
        assert meta["obs_dim"] == sum(g["dim"] for g in groups.values())
        assert meta["normalization"]["keys"] == ["pos"]
    if relpath.startswith("goal"):  # HER's goal-conditioned Dict: the contract's order, each a slice of obs
        assert [(k, g["start"], g["dim"], g["shape"]) for k, g in meta["obs_groups"].items()] == [
            ("observation", 0, 2, [2]),
            ("achieved_goal", 2, 2, [2]),
            ("desired_goal", 4, 2, [2]),
        ]
    if relpath == "hub/ppo-CartPole-v1.zip":
        # torch's dynamo exporter writes an opset-18 ReduceLogSumExp (from torch.distributions.Categorical)
        # into an opset-17 file, which the ONNX checker rejects: auto falls back to legacy and says why.
        assert meta["exporter"]["name"] == "legacy"
        assert "ReduceLogSumExp" in meta["exporter"]["passed_over"]["dynamo"]


def test_a_zip_bomb_and_a_sparse_8_gib_statistics_file_are_refused_before_they_are_read(models, tmp_path):
    """Bounds are checked before anything is inflated or read whole: one line, and the check's peak of
    Python memory stays far below the 512 MiB the bomb inflates to (the 8 GiB file could not be held at
    all). Memory, not time: a timed assertion fails on a loaded CI machine, and reading would show here."""

    source = models / "logs" / "ppo" / "Pendulum-v1_1"
    run = tmp_path / "logs" / "ppo" / "Pendulum-v1_1"
    shutil.copytree(source, run)
    with (
        zipfile.ZipFile(source / "Pendulum-v1.zip") as zin,
        zipfile.ZipFile(run / "Pendulum-v1.zip", "w", zipfile.ZIP_DEFLATED) as zout,
    ):
        for item in zin.infolist():
            if item.filename != "data":
                zout.writestr(item, zin.read(item))
        with zout.open("data", "w", force_zip64=True) as fh:  # 512 MiB of zeros, 0.5 MiB on disk
            for _ in range(512):
                fh.write(b"\0" * (1 << 20))
    report = holding_little(lambda: _check(run))  # the inspection runs in this process
    assert report["status"] == "error" and "data inflates to 512 MiB" in report["reason"] and report["hint"]

    shutil.rmtree(run)
    shutil.copytree(source, run)
    stats = run / "Pendulum-v1" / "vecnormalize.pkl"
    with stats.open("r+b") as fh:
        fh.truncate(8 << 30)  # sparse: 8 GiB long, no disk used
    report = holding_little(lambda: _check(run))  # the inspection runs in this process
    assert report["status"] == "error" and "8 GiB, over zoo's 256 MiB bound" in report["reason"]
    result = zoo("eval", run, "--quiet", "-n", "1")
    assert result.exit_code == 1 and result.stderr.count("error:") == 1 and "Traceback" not in result.stderr


def test_push_card_uses_the_hub_name_of_stable_baselines3(models, tmp_path):
    from huggingface_hub import ModelCard

    run = tmp_path / "logs" / "ppo" / "Pendulum-v1_1"
    shutil.copytree(models / "logs" / "ppo" / "Pendulum-v1_1", run)
    result = zoo(
        "push", run, "--repo-id", "me/ppo-Pendulum-v1", "--episodes", "2", "--stage-dir", tmp_path / "s"
    )
    assert result.exit_code == 0, result.stderr
    card = ModelCard.load(tmp_path / "s" / "README.md")
    assert card.data.library_name == "stable-baselines3"  # what the Hub and huggingface_sb3 use, not "sb3"
    assert {"stable-baselines3", "Pendulum-v1", "reinforcement-learning"} <= set(card.data.tags)
    assert "made with Stable-Baselines3" in card.text and "made with sb3" not in card.text
    listed = zoo(
        "push", run, "--repo-id", "me/ppo-Pendulum-v1", "--json", "--stage-dir", tmp_path / "s"
    ).json()
    what = {f["name"]: f["what"] for f in listed["files"]}
    assert what["Pendulum-v1.zip"] == "the model weights"
    assert what["vec_normalize.pkl"] == "for Stable-Baselines3's own hub tools"


def test_push_refuses_code_for_downloaders_and_strip_unsafe_publishes_what_sb3_and_rl_zoo3_load(
    models, tmp_path
):
    """An rl_zoo3 run whose zip hides a pickle in lr_schedule and whose config.yml hides an os.system tag:
    SB3's load and rl_zoo3's YAML loading run both (the canary proves it), so the push is refused in one
    line; --strip-unsafe stages copies that SB3's own load and rl_zoo3's own loader take, running nothing."""
    import yaml
    from rl_zoo3.utils import get_saved_hyperparams
    from stable_baselines3 import PPO

    canary = tmp_path / "canary"
    source = models / "logs" / "ppo" / "Pendulum-v1_1"
    run = tmp_path / "logs" / "ppo" / "Pendulum-v1_1"
    shutil.copytree(source, run)
    payload = base64.b64encode(pickle.dumps(Canary(canary), protocol=4)).decode()
    _rewrite(
        source / "Pendulum-v1.zip",
        run / "Pendulum-v1.zip",
        lambda data: data["lr_schedule"].update({":serialized:": payload}),
    )
    config = OrderedDict(
        [("n_timesteps", 256), ("normalize", True), ("policy", "MlpPolicy"), ("env_wrapper", "X")]
    )
    tagged = f"    - !!python/object/apply:os.system\n      - touch {canary}"
    (run / "Pendulum-v1" / "config.yml").write_text(
        yaml.dump(config).replace("    - X", tagged)
    )  # rl_zoo3's dump
    args = OrderedDict([("algo", "ppo"), ("env", "Pendulum-v1"), ("env_kwargs", None), ("seed", 0)])
    (run / "Pendulum-v1" / "args.yml").write_text(yaml.dump(args))

    stage = tmp_path / "stage"
    refused = zoo("push", run, "--repo-id", "me/ppo-Pendulum-v1", "-n", "2", "--stage-dir", stage)
    assert refused.exit_code == 3 and refused.stderr.count("error:") == 1 and not stage.exists()
    assert (
        "refusing to push: Pendulum-v1.zip: data['lr_schedule'] is an unsafe pickle: SB3's load would call "
        "posix.system (and 1 more)" in " ".join(refused.stderr.split())
    )
    assert "--strip-unsafe" in refused.stderr and "Traceback" not in refused.stderr

    pushed = zoo(
        "push",
        run,
        "--repo-id",
        "me/ppo-Pendulum-v1",
        "-n",
        "2",
        "--stage-dir",
        stage,
        "--strip-unsafe",
        "--json",
    )
    assert pushed.exit_code == 0, pushed.stderr
    listed = pushed.json()
    assert listed["stripped"] == {
        "Pendulum-v1.zip": ["data['lr_schedule']"],
        "ppo-Pendulum-v1.zip": ["data['lr_schedule']"],
        "Pendulum-v1/config.yml": ["env_wrapper"],
        "config.yml": ["env_wrapper"],
    }
    what = {f["name"]: f["what"] for f in listed["files"]}
    assert what["ppo-Pendulum-v1.zip"].endswith("stripped of data['lr_schedule']")
    assert not canary.exists()  # zoo evaluated the run for the card and staged it: nothing ran

    staged = PPO.load(stage / "ppo-Pendulum-v1.zip", device="cpu")  # SB3's own load of the published zip
    original = PPO.load(source / "Pendulum-v1.zip", device="cpu")
    obs = np.random.default_rng(0).standard_normal((16, 3)).astype(np.float32)
    assert np.array_equal(
        staged.predict(obs, deterministic=True)[0], original.predict(obs, deterministic=True)[0]
    )
    hyperparams, _ = get_saved_hyperparams(str(stage), norm_reward=False, test_mode=True)  # rl_zoo3's loader
    assert (
        "env_wrapper" not in hyperparams and hyperparams["policy"] == "MlpPolicy" and hyperparams["normalize"]
    )
    assert yaml.load((stage / "args.yml").read_text(), Loader=yaml.UnsafeLoader)["env"] == "Pendulum-v1"
    assert not canary.exists()

    get_saved_hyperparams(str(run / "Pendulum-v1"), norm_reward=False, test_mode=True)  # the attacks are real
    assert canary.exists()
    canary.unlink()
    PPO.load(run / "Pendulum-v1.zip")
    assert canary.exists()


def test_a_gsde_policy_exports_and_releases_like_its_checkpoint(tmp_path):
    """gSDE keeps tensors computed from log_std in its distribution (non-leaf, which a deep copy refuses): the export
    (and the release's forms) of a gSDE PPO act like the checkpoint all the same."""
    import torch
    from stable_baselines3 import PPO

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        PPO("MlpPolicy", "Pendulum-v1", use_sde=True, n_steps=64, batch_size=64, n_epochs=1, seed=0).learn(
            64
        ).save(tmp_path / "ppo-Pendulum-v1.zip")
    finally:
        torch.set_num_threads(threads)
    assert_exports_act_like_checkpoint(
        tmp_path / "ppo-Pendulum-v1.zip", tmp_path, episodes=2, num_envs=2, continuous=True
    )
