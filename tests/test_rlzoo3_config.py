"""rl_zoo3 run configs applied to the eval env, and SB3 Atari models, against rl_zoo3's own test env.

The fixtures train with ``python -m rl_zoo3.train`` itself, so ``config.yml`` / ``args.yml`` are the real
files (``OrderedDict`` tags and all): PPO ``CnnPolicy`` on Breakout behind ``AtariWrapper`` and 4 stacked
frames, and PPO on Pendulum behind two ``env_wrapper`` classes (one with kwargs),
``normalize`` given as a dict's source text, ``policy_kwargs`` text and ``--env-kwargs g:4.0``. The
reference is what ``rl_zoo3.enjoy`` does: ``create_test_env`` from ``get_saved_hyperparams`` (a
``DummyVecEnv``), ``{Algo}.load`` (the fixture made the file, so unpickling it is fine) and
``model.predict(obs, deterministic=True)``; its ``Monitor`` sits under the wrappers, so its episodes are
full games, scored unclipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.helpers import zoo

pytest.importorskip("rl_zoo3")
pytest.importorskip("ale_py")

BREAKOUT = "BreakoutNoFrameskip-v4"
PENDULUM = "Pendulum-v1"
PENDULUM_CONF = {
    PENDULUM: {
        "n_envs": 2,
        "n_timesteps": 512,
        "policy": "MlpPolicy",
        "n_steps": 128,
        "batch_size": 64,
        "n_epochs": 1,
        "normalize": "{'norm_obs': True, 'norm_reward': False}",
        "env_wrapper": [
            "sb3_contrib.common.wrappers.TimeFeatureWrapper",
            {"rl_zoo3.wrappers.HistoryWrapper": {"horizon": 2}},
        ],
        "policy_kwargs": "dict(net_arch=[32, 32], activation_fn=nn.ReLU)",
    }
}


def _clean_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "ZOO_"))}
    return env | {"HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HOME": str(home)}


def _train(work: Path, algo: str, env_id: str, *args: str) -> Path:
    """``python -m rl_zoo3.train`` in ``work``; the run folder ``logs/{algo}/{env_id}_1``."""
    work.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "rl_zoo3.train",
        "--algo",
        algo,
        "--env",
        env_id,
        "-f",
        "logs",
        "--seed",
        "3",
        "--num-threads",
        "1",
        "--eval-freq",
        "-1",
        *args,
    ]
    proc = subprocess.run(
        cmd, cwd=work, env=_clean_env(work / "home"), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = work / "logs" / algo / f"{env_id}_1"
    assert (run / env_id / "config.yml").is_file()
    return run


@pytest.fixture(scope="session")
def rlzoo_runs(tmp_path_factory) -> dict[str, Path]:
    """A Breakout CnnPolicy run and a Pendulum run with wrappers, frame stack, VecNormalize and env kwargs."""
    root = tmp_path_factory.mktemp("rlzoo")
    conf = root / "pendulum.yml"
    conf.write_text(yaml.safe_dump(PENDULUM_CONF))
    return {
        "atari": _train(
            root / "atari",
            "ppo",
            BREAKOUT,
            "-n",
            "256",
            "--hyperparams",
            "n_envs:2",
            "n_steps:64",
            "batch_size:64",
            "n_epochs:1",
        ),
        "pendulum": _train(root / "pendulum", "ppo", PENDULUM, "-conf", str(conf), "--env-kwargs", "g:4.0"),
    }


def rl_zoo3_returns(
    run: Path, env_id: str, episodes: int, num_envs: int, seed: int = 0, algo_class: str = "PPO"
) -> list[float]:
    """Episode returns of rl_zoo3's own test env and SB3's predict, in zoo's order (env by env)."""
    from rl_zoo3 import ALGOS, create_test_env, get_saved_hyperparams
    from stable_baselines3.common.vec_env import DummyVecEnv

    from zoo.evaluator import episode_quotas

    hyperparams, stats_path = get_saved_hyperparams(str(run / env_id), test_mode=True)
    args = yaml.load(
        (run / env_id / "args.yml").read_text(), Loader=yaml.UnsafeLoader
    )  # the fixture wrote it
    env = create_test_env(
        env_id,
        n_envs=num_envs,
        stats_path=stats_path,
        seed=seed,
        log_dir=None,
        should_render=False,
        hyperparams=hyperparams,
        env_kwargs=args["env_kwargs"] or {},
        vec_env_cls=DummyVecEnv,
    )
    algo = next(cls for cls in ALGOS.values() if cls.__name__ == algo_class)
    model = algo.load(run / f"{env_id}.zip", device="cpu")
    quotas = episode_quotas(episodes, num_envs)
    per_env: list[list[float]] = [[] for _ in range(num_envs)]
    obs = env.reset()
    while any(len(got) < want for got, want in zip(per_env, quotas, strict=True)):
        actions, _ = model.predict(obs, deterministic=True)
        obs, _, _, infos = env.step(actions)
        for i, info in enumerate(infos):
            if "episode" in info and len(per_env[i]) < quotas[i]:
                per_env[i].append(float(info["episode"]["r"]))
    env.close()
    return [r for got in per_env for r in got]


def zoo_returns(target: Path, episodes: int, num_envs: int) -> list[float]:
    import zoo as api

    # the reference acts with predict(obs, deterministic=True)
    settings = api.EvalSettings(
        episodes=episodes, num_envs=num_envs, seed=0, device="cpu", deterministic=True
    )
    result = api.evaluate(target, settings, out=None)
    return [e.return_ for e in result.episodes]


@pytest.fixture(scope="session")
def atari_reference(rlzoo_runs) -> list[float]:
    return rl_zoo3_returns(rlzoo_runs["atari"], BREAKOUT, episodes=4, num_envs=4)


# ----------------------------------------------------------------------------- Atari
def test_atari_cnn_policy_scores_full_games_like_rl_zoo3s_test_env(rlzoo_runs, atari_reference):
    assert zoo_returns(rlzoo_runs["atari"], 4, 4) == atari_reference


def test_atari_check_reports_the_wrapper_stack_it_applies(rlzoo_runs):
    result = zoo("check", rlzoo_runs["atari"], "--json")
    assert result.exit_code == 0, result.stderr
    (report,) = result.json()
    assert report["status"] == "ok", report
    config = report["details"]["run_config"]
    assert config["env_wrapper"] == [
        {"class": "stable_baselines3.common.atari_wrappers.AtariWrapper", "kwargs": {}}
    ]
    assert config["frame_stack"] == 4 and config["policy"] == "CnnPolicy"
    assert report["details"]["observation_space"].endswith("(4, 84, 84), uint8)")


def test_atari_models_sample_by_default_as_rl_zoo3_evaluates_them(rlzoo_runs):
    import zoo as api

    atari = api.plan(rlzoo_runs["atari"], out=None)
    assert (atari.deterministic, atari.mode_source) == (False, "rl_zoo3's Atari protocol")
    assert (
        api.plan(rlzoo_runs["atari"], settings=api.EvalSettings(deterministic=True), out=None).mode_source
        == "flag"
    )
    pendulum = api.plan(rlzoo_runs["pendulum"], out=None)
    assert (pendulum.deterministic, pendulum.mode_source) == (True, "registry")
    sampled = api.evaluate(atari)
    assert sampled.deterministic is False and sampled.num_episodes == 10


def test_an_atari_model_without_its_config_gets_rl_zoo3s_atari_defaults(
    rlzoo_runs, atari_reference, tmp_path
):
    lone = tmp_path / f"ppo-{BREAKOUT}.zip"
    lone.write_bytes((rlzoo_runs["atari"] / f"{BREAKOUT}.zip").read_bytes())
    assert zoo_returns(lone, 4, 4) == atari_reference
    (report,) = zoo("check", lone, "--json").json()
    assert report["details"]["run_config"]["file"].startswith("rl_zoo3's Atari defaults")


def test_atari_export_records_the_stack_and_scores_like_the_checkpoint(rlzoo_runs, atari_reference, tmp_path):
    import zoo as api

    out = tmp_path / "breakout.onnx"
    result = api.export(rlzoo_runs["atari"], out)
    wrappers = [w["class"] for w in result.meta["env"]["wrappers"]]
    assert wrappers == [
        "stable_baselines3.common.atari_wrappers.AtariWrapper",
        "zoo.env_wrappers.StackedFrames",
    ]
    assert any("AtariWrapper" in note for note in result.meta["left_to_caller"])
    assert zoo_returns(out, 4, 4) == atari_reference


# ----------------------------------------------------------------------------- wrappers, kwargs, VecNormalize
def test_wrappers_frame_stack_normalize_and_env_kwargs_match_rl_zoo3(rlzoo_runs):
    reference = rl_zoo3_returns(rlzoo_runs["pendulum"], PENDULUM, episodes=4, num_envs=2)
    assert zoo_returns(rlzoo_runs["pendulum"], 4, 2) == pytest.approx(
        reference, abs=1e-4
    )  # Monitor rounds to 1e-6


def test_the_env_kwargs_change_the_score_so_dropping_them_would_be_seen(rlzoo_runs, tmp_path):
    run = rlzoo_runs["pendulum"]
    applied = zoo_returns(run, 2, 2)
    copy = tmp_path / "run"
    subprocess.run(["cp", "-r", str(run), str(copy)], check=True)
    args = copy / PENDULUM / "args.yml"
    args.write_text(args.read_text().replace("g: 4.0", "g: 10.0"))
    assert zoo_returns(copy, 2, 2) != pytest.approx(applied, abs=1e-3)


def test_config_says_normalize_but_the_statistics_are_gone(rlzoo_runs, tmp_path):
    copy = tmp_path / "run"
    subprocess.run(["cp", "-r", str(rlzoo_runs["pendulum"]), str(copy)], check=True)
    (copy / PENDULUM / "vecnormalize.pkl").unlink()
    result = zoo("eval", copy, "--out", tmp_path / "eval.json")
    assert result.exit_code == 1
    assert "says the run trained behind VecNormalize" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "eval.json").exists()
    (report,) = zoo("check", copy, "--json").json()
    assert report["status"] == "error"


def test_check_shows_the_config_and_agrees_with_policy_kwargs(rlzoo_runs):
    (report,) = zoo("check", rlzoo_runs["pendulum"], "--json").json()
    assert report["status"] == "ok", report
    config = report["details"]["run_config"]
    assert [w["class"] for w in config["env_wrapper"]] == [
        "sb3_contrib.common.wrappers.TimeFeatureWrapper",
        "rl_zoo3.wrappers.HistoryWrapper",
    ]
    assert config["env_wrapper"][1]["kwargs"] == {"horizon": 2}
    assert config["frame_stack"] == 0 and config["env_kwargs"] == {"g": 4.0}
    assert config["normalize"] == {"norm_obs": True, "norm_reward": False}
    assert report["details"]["normalization"]["norm_obs"] is True  # status ok: no policy_kwargs warning


# ----------------------------------------------------------------------------- what is refused
def _with_config(run: Path, dest: Path, **changes) -> Path:
    """A copy of ``run`` whose config.yml has ``changes`` (written as rl_zoo3 writes it)."""
    from collections import OrderedDict

    subprocess.run(["cp", "-r", str(run), str(dest)], check=True)
    path = dest / PENDULUM / "config.yml"
    config = yaml.load(path.read_text(), Loader=yaml.UnsafeLoader)  # the fixture wrote it
    config.update(changes)
    path.write_text(yaml.dump(OrderedDict(config)))
    return dest


def test_a_wrapper_off_the_allowlist_is_refused_until_the_user_names_it(rlzoo_runs, tmp_path):
    # my_wrappers is examples/my_wrappers.py, importable here (conftest) as from a user's PYTHONPATH
    wrappers = [
        {"my_wrappers.Shift": {"by": 0.5}},
        "sb3_contrib.common.wrappers.TimeFeatureWrapper",
        {"rl_zoo3.wrappers.HistoryWrapper": {"horizon": 2}},
    ]
    run = _with_config(rlzoo_runs["pendulum"], tmp_path / "run", env_wrapper=wrappers)
    refused = zoo("eval", run, "-n", "2", "--out", tmp_path / "eval.json")
    assert refused.exit_code == 3
    assert "names the env wrapper my_wrappers.Shift, which is not on zoo's allowlist" in refused.stderr
    assert "--trust-wrapper my_wrappers.Shift" in refused.stderr and "Traceback" not in refused.stderr
    assert "my_wrappers" not in sys.modules  # refused before anything imported it
    (report,) = zoo("check", run, "--json").json()
    assert report["status"] == "error" and "my_wrappers.Shift" in report["reason"]

    trusted = zoo(
        "eval", run, "-n", "2", "--trust-wrapper", "my_wrappers.Shift", "--out", tmp_path / "eval.json"
    )
    assert trusted.exit_code == 0, trusted.stderr
    assert json.loads((tmp_path / "eval.json").read_text())["num_episodes"] == 2


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"normalize": "__import__('os').system('touch pwned')"}, "is not a literal zoo can read"),
        ({"frame_stack": "four"}, "frame_stack 'four' is not a number of frames"),
        ({"env_wrapper": [["a", "b"]]}, "is neither a class name nor"),
        ({"vec_env_wrapper": "stable_baselines3.common.vec_env.VecMonitor"}, "vec_env_wrapper"),
        ({"frame_stack": 2}, "stacked frames of VecNormalize-d observations"),
    ],
)
def test_config_values_zoo_cannot_apply_are_one_line(rlzoo_runs, tmp_path, changes, message):
    run = _with_config(rlzoo_runs["pendulum"], tmp_path / "run", **changes)
    result = zoo("eval", run, "-n", "2", "--out", tmp_path / "eval.json")
    assert result.exit_code != 0 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) <= 2
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_stacked_frames_are_sb3s_vecframestack_for_one_env():
    """Zeros before the first frame, newest last on the channel axis, reset at each episode."""
    import gymnasium as gym
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

    from zoo.env_wrappers import StackedFrames

    ours = StackedFrames(gym.make("CartPole-v1"), 3)
    theirs = VecFrameStack(DummyVecEnv([lambda: gym.make("CartPole-v1")]), 3)
    theirs.seed(5)
    obs, _ = ours.reset(seed=5)
    np.testing.assert_array_equal(obs, theirs.reset()[0])
    assert (obs[:8] == 0).all() and ours.observation_space == theirs.observation_space
    for _ in range(30):
        obs, _, terminated, truncated, _ = ours.step(1)
        their_obs, _, dones, infos = theirs.step(np.array([1]))
        if terminated or truncated:
            np.testing.assert_array_equal(obs, infos[0]["terminal_observation"])
            obs, _ = ours.reset()
        np.testing.assert_array_equal(obs, their_obs[0])


# ----------------------------------------------------------------------------- the sb3 org's hub layout
def _rl_zoo3_repo(run: Path, algo: str, env_id: str, folder: Path) -> Path:
    """The files rl_zoo3's ``package_to_hub`` uploads (rl_zoo3 2.9.2's own push cannot run here: it imports
    ``generate_metadata``, which huggingface_sb3 3.x no longer has): the model as ``{algo}-{env}.zip`` and
    unzipped beside it, ``config.yml`` and ``args.yml`` copied, ``env_kwargs.yml`` dumped,
    ``train_eval_metrics.zip`` of the monitor files, ``results.json`` and a card."""
    import shutil
    import zipfile

    name = f"{algo}-{env_id}"
    folder.mkdir(parents=True)
    shutil.copy(run / f"{env_id}.zip", folder / f"{name}.zip")
    with zipfile.ZipFile(folder / f"{name}.zip") as archive:
        archive.extractall(folder / name)
    for file in ("config.yml", "args.yml"):
        shutil.copy(run / env_id / file, folder / file)
    (folder / "env_kwargs.yml").write_text(yaml.dump({"render_mode": "rgb_array"}))
    with zipfile.ZipFile(folder / "train_eval_metrics.zip", "w") as archive:
        for monitor in run.glob("*.csv"):
            archive.write(monitor, arcname=monitor.name)
    (folder / "results.json").write_text(json.dumps({"mean_reward": 0.0, "std_reward": 0.0}))
    (folder / "README.md").write_text(f"---\nlibrary_name: stable-baselines3\n---\n# {name}\n")
    return folder


@pytest.fixture(scope="session")
def contrib_run(tmp_path_factory) -> Path:
    """QR-DQN (sb3-contrib) on CartPole, trained by rl_zoo3 for a few hundred steps."""
    return _train(
        tmp_path_factory.mktemp("qrdqn"),
        "qrdqn",
        "CartPole-v1",
        "-n",
        "300",
        "--hyperparams",
        "learning_starts:100",
        "train_freq:4",
    )


UPLOAD = """
import sys
from huggingface_hub import HfApi
api = HfApi(token="hf_dummy")
api.create_repo(sys.argv[1])
api.upload_folder(repo_id=sys.argv[1], folder_path=sys.argv[2])
"""


@pytest.mark.parametrize("kind", ["atari", "contrib"])
def test_enjoy_finds_the_sb3_orgs_rl_zoo3_repo_and_applies_its_config(
    rlzoo_runs, contrib_run, kind, tmp_path
):
    from zoo.hub_server.server import HubServer

    algo, exp_name, env_id, run, algo_class = {
        "atari": ("ppo", "sb3_ppo", BREAKOUT, rlzoo_runs["atari"], "PPO"),
        "contrib": ("qrdqn", "sb3_qrdqn", "CartPole-v1", contrib_run, "QRDQN"),
    }[kind]
    reference = rl_zoo3_returns(run, env_id, episodes=4, num_envs=4, algo_class=algo_class)
    repo, folder = f"sb3/{algo}-{env_id}", _rl_zoo3_repo(run, algo, env_id, tmp_path / "repo")
    server = HubServer(tmp_path / "hub-root").start()
    try:
        env = _clean_env(tmp_path / "home") | {"HF_ENDPOINT": server.url}
        subprocess.run([sys.executable, "-c", UPLOAD, repo, str(folder)], env=env, check=True, timeout=300)
        cmd = [
            sys.executable,
            "-m",
            "zoo",
            "enjoy",
            "--exp-name",
            exp_name,
            "--env-id",
            env_id,
            "--hf-entity",
            "sb3",
            "--allow-download",
            "-n",
            "4",
            "--num-envs",
            "4",
            "--seed",
            "0",
            "--device",
            "cpu",
            "--deterministic",
            "--json",
        ]
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert [e["return"] for e in result["episodes"]] == reference
    assert result["source"]["repo_id"] == repo
