"""MyoSuite: an SB3 PPO trained on a musculoskeletal env, evaluated by zoo exactly as SB3's own predict acts.

myosuite 3 pins gymnasium<1.3 and onnxruntime<1.21, so this module runs in its own venv (``.venv-myosuite``,
set up with ``[dev,sb3,myosuite]`` by ``python3 dev.py test``, which runs only this file there); the main
venv has no myosuite and leaves this file out (``--ignore``). Importing myosuite downloads nothing: its
models and meshes come from PyPI (the myo-sim package).

The run is laid out as ``python -m rl_zoo3.train --algo ppo --env myosuite:myoElbowPose1D6MRandom-v0``
writes it: folder and model named by huggingface_sb3's ``EnvironmentName`` (the ``myosuite:`` module
dropped), ``config.yml`` and ``args.yml`` (the full ``module:EnvId``) and ``vecnormalize.pkl`` in
``{env_name}/``. zoo is given the ``module:EnvId`` id, which it hands to ``gymnasium.make`` unchanged:
gymnasium imports ``myosuite`` (registering its envs) before it makes the env.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml

import zoo

pytestmark = [pytest.mark.myosuite, pytest.mark.trains]
pytest.importorskip("myosuite")

ENV_ID = "myosuite:myoElbowPose1D6MRandom-v0"
ENV_NAME = "myoElbowPose1D6MRandom-v0"  # huggingface_sb3's EnvironmentName: rl_zoo3's folder and file name
EPISODES, NUM_ENVS, SEED = 4, 2, 7
EPISODE_STEPS = 100  # the env's TimeLimit


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """``logs/ppo/myoElbowPose1D6MRandom-v0_1``: PPO behind VecNormalize, 256 steps on 2 envs."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    run = tmp_path_factory.mktemp("myosuite") / "logs" / "ppo" / f"{ENV_NAME}_1"
    params = run / ENV_NAME
    params.mkdir(parents=True)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        venv = VecNormalize(make_vec_env(ENV_ID, n_envs=2, seed=0), norm_reward=False)
        model = PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=2, seed=0, device="cpu")
        model.learn(256).save(run / f"{ENV_NAME}.zip")
        venv.save(params / "vecnormalize.pkl")
        venv.close()
    finally:
        torch.set_num_threads(threads)
    hyperparams = {
        "batch_size": 64,
        "n_envs": 2,
        "n_epochs": 2,
        "n_steps": 64,
        "n_timesteps": 256,
        "normalize": "{'norm_obs': True, 'norm_reward': False}",
        "policy": "MlpPolicy",
    }
    args = OrderedDict(
        [("algo", "ppo"), ("env", ENV_ID), ("env_kwargs", None), ("seed", 0), ("n_timesteps", 256)]
    )
    (params / "config.yml").write_text(yaml.dump(OrderedDict(sorted(hyperparams.items()))))  # as rl_zoo3 does
    (params / "args.yml").write_text(yaml.dump(args))
    return run


def _sb3(run: Path):
    """SB3's own load (the fixture wrote the file, so unpickling it is fine) and the run's VecNormalize."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    model = PPO.load(run / f"{ENV_NAME}.zip", device="cpu")
    norm = VecNormalize.load(
        str(run / ENV_NAME / "vecnormalize.pkl"), DummyVecEnv([lambda: gym.make(ENV_ID)])
    )
    norm.training = False
    return model, norm


def _observations(steps: int = 150) -> np.ndarray:
    """Raw observations of two seeded envs stepped with random actions: ``(2 * steps, 9)``."""
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(ENV_ID)] * 2)
    envs.action_space.seed(SEED)
    obs, _ = envs.reset(seed=SEED)
    seen = [obs]
    for _ in range(steps - 1):
        obs, *_ = envs.step(envs.action_space.sample())
        seen.append(obs)
    envs.close()
    return np.concatenate(seen)


def test_the_env_is_the_one_the_run_trained_on(run):
    env = gym.make(ENV_ID)
    try:
        assert env.observation_space.shape == (9,) and env.action_space.shape == (6,)
        assert env.spec.max_episode_steps == EPISODE_STEPS
    finally:
        env.close()
    (report,) = zoo.check([run])
    assert report.status == "ok", (report.reason, report.hint)
    assert report.details["normalization"]["file"].endswith(f"{ENV_NAME}/vecnormalize.pkl")


def test_deterministic_actions_are_sb3_predicts(run):
    model, norm = _sb3(run)
    policy = zoo.load_policy(run, env_id=ENV_ID, device="cpu")
    obs = _observations()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ours = np.asarray(policy.act(obs, deterministic=True)[0])
        theirs = model.predict(norm.normalize_obs(obs), deterministic=True)[0]
    finally:
        torch.set_num_threads(threads)
    assert ours.shape == theirs.shape == (len(obs), 6) and ours.dtype == theirs.dtype == np.float32
    assert float(np.abs(ours - theirs).max()) <= 1e-6
    assert (np.abs(theirs) < 1).any()  # not every action sits on a bound: the parity says something


def test_eval_writes_eval_json_and_matches_sb3_episode_for_episode(run):
    from zoo.envs import EnvSpec, make_vector_env
    from zoo.evaluator import rollout

    result = zoo.evaluate(
        run,
        settings=zoo.EvalSettings(
            episodes=EPISODES, num_envs=NUM_ENVS, seed=SEED, deterministic=True, device="cpu"
        ),
        env_id=ENV_ID,
    )
    data = json.loads((run / "eval.json").read_text())
    assert data["task"] == ENV_ID and data["framework"] == "sb3" and data["exp_name"] == "sb3_ppo"
    assert data["num_episodes"] == EPISODES and len(data["episodes"]) == EPISODES
    assert data["deterministic"] is True
    assert [e["length"] for e in data["episodes"]] == [EPISODE_STEPS] * EPISODES
    ours = [(e["env_index"], e["return"], e["length"]) for e in data["episodes"]]
    assert ours == [(e.env_index, e.return_, e.length) for e in result.episodes]

    model, norm = _sb3(run)

    class Shim:  # SB3's own predict, stepped through zoo's rollout on the same seeded envs
        is_recurrent = False

        def act(self, obs, state=None, deterministic=True):
            return model.predict(norm.normalize_obs(obs), deterministic=True)[0], state

    envs = make_vector_env(EnvSpec(ENV_ID), NUM_ENVS)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        theirs = [(e.env_index, e.return_, e.length) for e in rollout(Shim(), envs, EPISODES, SEED, True)]
    finally:
        torch.set_num_threads(threads)
        envs.close()
    assert ours == theirs


def test_zoo_eval_in_a_fresh_process_imports_myosuite_through_the_env_id(run, tmp_path):
    """No ``import myosuite`` but gymnasium's own, from ``module:EnvId``: what a user's ``zoo eval`` does."""
    out = tmp_path / "cli.eval.json"
    code = (
        "import sys; from zoo.cli import main; sys.argv[0] = 'zoo'; "
        "assert 'myosuite' not in sys.modules; main()"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "eval",
            str(run),
            "--env-id",
            ENV_ID,
            "-n",
            "2",
            "--num-envs",
            "2",
            "--deterministic",
            "--seed",
            str(SEED),
            "--device",
            "cpu",
            "--quiet",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, MUJOCO_GL="egl"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["task"] == ENV_ID and data["num_episodes"] == 2
    assert [e["length"] for e in data["episodes"]] == [EPISODE_STEPS] * 2


def test_the_run_names_its_env_module_and_env_module_flag_works(run, tmp_path):
    """rl_zoo3 keeps ``myosuite:`` in args.yml only: zoo reads it there, so the run evaluates with no --env-id; and
    ``--env-module myosuite`` with the bare id is the same env."""
    from helpers import zoo as cli

    plain = cli(
        "eval",
        run,
        "-n",
        "2",
        "--num-envs",
        "2",
        "--deterministic",
        "--seed",
        str(SEED),
        "--out",
        tmp_path / "plain.json",
    )
    assert plain.exit_code == 0, plain.stderr
    named = cli(
        "eval",
        run,
        "--env-id",
        ENV_NAME,
        "--env-module",
        "myosuite",
        "-n",
        "2",
        "--num-envs",
        "2",
        "--deterministic",
        "--seed",
        str(SEED),
        "--out",
        tmp_path / "named.json",
    )
    assert named.exit_code == 0, named.stderr
    first, second = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("plain", "named"))
    assert first["task"] == second["task"] == ENV_ID and first["episodes"] == second["episodes"]


def test_doctor_probes_the_myosuite_env_and_the_policy_fits(run):
    from helpers import zoo as cli

    result = cli("doctor", "--framework", "sb3", "--policy", run, "--probe-env", "--json")
    assert result.exit_code == 0, result.stdout
    found = {c["name"]: c for c in result.json()["checks"]}
    assert found["extra myosuite"]["status"] == found["module myosuite"]["status"] == "ok"
    assert found["spaces"]["message"] == f"{ENV_ID}: observation Box(9,) float32, action Box(6,) float32"
    assert found["fit"]["status"] == "ok"
