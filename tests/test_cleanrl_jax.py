"""CleanRL's JAX runs end to end: zoo check, eval (episode for episode against the flax module itself),
export and enjoy, on files written by flax.serialization.to_bytes from the cleanrl wheel's own classes.

zoo reads these files with msgpack and numpy and serves them with torch ports; jax is only imported by
this test, to build the files and to run the flax module as the reference.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium
import msgpack
import numpy as np
import pytest
from helpers import zoo

jax = pytest.importorskip("jax", reason="needs jax and flax: pip install 'rl-zoo-hub[jax]'")
flax = pytest.importorskip("flax")
from test_cleanrl_flax_models import _scramble, _script_args, _wheel_classes  # noqa: E402 - after the skip

from zoo.envs import EnvSpec, make_vector_env  # noqa: E402
from zoo.evaluator import rollout  # noqa: E402

EPISODES = 6


def _save_dqn(run: Path, env_id: str = "CartPole-v1", seed: int = 1):
    """A dqn_jax run whose model is the wheel's QNetwork, saved as dqn_jax.py:263 does."""
    env = gymnasium.make(env_id)
    net = _wheel_classes("dqn_jax")["QNetwork"](action_dim=env.action_space.n)
    params = _scramble(
        net.init(jax.random.PRNGKey(0), np.zeros((1, *env.observation_space.shape))), seed=seed
    )
    run.mkdir(parents=True, exist_ok=True)
    (run / "dqn_jax.cleanrl_model").write_bytes(flax.serialization.to_bytes(params))
    return net, params


def _save_c51(run: Path):
    """A c51_jax run: ``{"model_weights": q_state.params, "args": vars(args)}`` (c51_jax.py:273-280)."""
    args = _script_args("c51_jax", [])
    net = _wheel_classes("c51_jax")["QNetwork"](action_dim=2, n_atoms=args["n_atoms"])
    params = _scramble(net.init(jax.random.PRNGKey(0), np.zeros((1, 4), np.float32)), seed=6)
    run.mkdir(parents=True, exist_ok=True)
    saved = {"model_weights": params, "args": args}
    (run / "c51_jax.cleanrl_model").write_bytes(flax.serialization.to_bytes(saved))
    atoms = jax.numpy.asarray(np.linspace(args["v_min"], args["v_max"], num=args["n_atoms"]))
    return lambda x: (net.apply(params, x) * atoms).sum(axis=-1)  # c51_jax_eval.py: Q from the pmfs


def _save_actor_critics(run: Path, script: str, critics: int, seed: int):
    """A td3 (``[actor, qf1, qf2]``) or ddpg (``[actor, qf1]``) JAX run on Pendulum, saved as the upstream
    scripts save it; returns the flax actor's act function, the reference."""
    env = gymnasium.make("Pendulum-v1")
    vector_act = gymnasium.vector.utils.batch_space(env.action_space, 1)  # the scripts' envs.action_space
    classes = _wheel_classes(script)
    actor = classes["Actor"](
        action_dim=1,
        action_scale=jax.numpy.array((vector_act.high - vector_act.low) / 2.0),
        action_bias=jax.numpy.array((vector_act.high + vector_act.low) / 2.0),
    )
    qf = classes["QNetwork"]()
    obs, act = np.zeros((1, 3), np.float32), vector_act.sample()
    keys = jax.random.split(jax.random.PRNGKey(seed), 1 + critics)
    saved = [_scramble(actor.init(keys[0], obs), seed + 1)]
    saved += [_scramble(qf.init(key, obs, act), seed + 2 + i) for i, key in enumerate(keys[1:])]
    run.mkdir(parents=True, exist_ok=True)
    (run / f"{script}.cleanrl_model").write_bytes(flax.serialization.to_bytes(saved))
    return lambda x: actor.apply(saved[0], x)


class FlaxPolicy:
    """The flax module itself behind zoo's Policy protocol: the reference for episode-for-episode returns."""

    is_recurrent = False

    def __init__(self, apply, observation_space, action_space, discrete: bool):
        self.apply, self.discrete = apply, discrete
        self.observation_space, self.action_space = observation_space, action_space

    def act(self, obs_batch, state=None, deterministic=True):
        out = np.asarray(self.apply(np.asarray(obs_batch, dtype=np.float32)))
        return (out.argmax(axis=1) if self.discrete else out), state

    def reset(self, done_mask):
        pass


def _reference_returns(
    policy, env_id: str, preset: str = "classic", episodes: int = EPISODES, num_envs: int = 3
) -> list[float]:
    envs = make_vector_env(EnvSpec(env_id, preset), num_envs)
    try:
        return [e.return_ for e in rollout(policy, envs, episodes, seed=4, deterministic=True)]
    finally:
        envs.close()


def _zoo_returns(run: Path, out: Path, episodes: int = EPISODES, num_envs: int = 3) -> list[float]:
    result = zoo(
        "eval",
        run,
        "--deterministic",
        "-n",
        episodes,
        "--num-envs",
        num_envs,
        "--seed",
        4,
        "-q",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.stderr
    return [e["return"] for e in json.loads(out.read_text())["episodes"]]


def test_dqn_jax_run_checks_ok_and_evaluates_like_the_flax_module(tmp_path):
    run = tmp_path / "runs" / "CartPole-v1__dqn_jax__1__1700000000"
    net, params = _save_dqn(run)
    report = zoo("check", run.parent, "--json").json()[0]
    assert report["status"] == "ok", report
    assert report["details"]["format"] == "flax-msgpack" and report["details"]["tensors"] == 6
    env = gymnasium.make("CartPole-v1")
    flax_policy = FlaxPolicy(lambda x: net.apply(params, x), env.observation_space, env.action_space, True)
    assert _zoo_returns(run, tmp_path / "eval.json") == _reference_returns(flax_policy, "CartPole-v1")


def test_non_finite_flax_params_are_an_error_naming_them(tmp_path):
    """The static reader's arrays are checked like a torch file's tensors (the c51 file's args are not)."""
    run = tmp_path / "runs" / "CartPole-v1__dqn_jax__1__1700000000"
    _, params = _save_dqn(run)
    params = jax.tree_util.tree_map(np.asarray, params)
    dense = params["params"]["Dense_2"]
    dense["kernel"] = np.full_like(dense["kernel"], np.nan)
    (run / "dqn_jax.cleanrl_model").write_bytes(flax.serialization.to_bytes(params))
    report = zoo("check", run, "--json").json()[0]
    size = dense["kernel"].size
    assert report["status"] == "error" and report["reason"] == (
        f"non-finite weights (NaN or Inf): params.Dense_2.kernel ({size} of {size})"
    ), report


def test_c51_jax_run_evaluates_like_the_flax_module(tmp_path):
    run = tmp_path / "runs" / "CartPole-v1__c51_jax__1__1700000000"
    q_values = _save_c51(run)
    assert zoo("check", run, "--json").json()[0]["status"] == "ok"
    env = gymnasium.make("CartPole-v1")
    flax_policy = FlaxPolicy(q_values, env.observation_space, env.action_space, True)
    assert _zoo_returns(run, tmp_path / "eval.json") == _reference_returns(flax_policy, "CartPole-v1")


@pytest.mark.parametrize(
    ("script", "critics", "seed"), [("td3_continuous_action_jax", 2, 2), ("ddpg_continuous_action_jax", 1, 3)]
)
def test_actor_critic_jax_runs_evaluate_like_the_flax_actor(tmp_path, script, critics, seed):
    run = tmp_path / "runs" / f"Pendulum-v1__{script}__1__1700000000"
    act = _save_actor_critics(run, script, critics=critics, seed=seed)
    assert zoo("check", run, "--json").json()[0]["status"] == "ok"
    env = gymnasium.make("Pendulum-v1")
    flax_policy = FlaxPolicy(act, env.observation_space, env.action_space, False)
    ours, theirs = _zoo_returns(run, tmp_path / "eval.json"), _reference_returns(flax_policy, "Pendulum-v1")
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)  # float32 actions agree to ~1e-6


def test_dqn_atari_jax_run_plays_breakout_like_the_flax_module(tmp_path):
    """The Atari port on CleanRL's wrapper stack (the atari preset), episode for episode."""
    run = tmp_path / "runs" / "BreakoutNoFrameskip-v4__dqn_atari_jax__1__1700000000"
    frames = gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    net = _wheel_classes("dqn_atari_jax")["QNetwork"](action_dim=4)
    params = _scramble(net.init(jax.random.PRNGKey(0), np.zeros((1, 4, 84, 84), np.float32)), seed=9)
    run.mkdir(parents=True)
    (run / "dqn_atari_jax.cleanrl_model").write_bytes(flax.serialization.to_bytes(params))
    assert zoo("check", run, "--json").json()[0]["status"] == "ok"
    flax_policy = FlaxPolicy(lambda x: net.apply(params, x), frames, gymnasium.spaces.Discrete(4), True)
    theirs = _reference_returns(flax_policy, "BreakoutNoFrameskip-v4", "atari", episodes=2, num_envs=2)
    assert _zoo_returns(run, tmp_path / "eval.json", episodes=2, num_envs=2) == theirs


@pytest.mark.parametrize("fmt", ["onnx", "torchscript"])
def test_jax_runs_export_with_parity(tmp_path, fmt):
    run = tmp_path / "runs" / "CartPole-v1__dqn_jax__1__1700000000"
    _save_dqn(run)
    out = tmp_path / f"dqn_jax.{'onnx' if fmt == 'onnx' else 'ts'}"
    result = zoo("export", run, "--out", out, "--json", "-q")
    assert result.exit_code == 0, result.stderr
    assert result.json()["parity"]["exact"] and out.is_file()


def test_loading_a_flax_file_does_not_import_jax(tmp_path):
    run = tmp_path / "runs" / "CartPole-v1__dqn_jax__1__1700000000"
    _save_dqn(run)
    code = (
        "import sys, numpy as np, zoo\n"
        f"p = zoo.load_policy({str(run)!r})\n"
        "p.act(np.zeros((2, 4), np.float32))\n"
        "print(sorted(m for m in ('jax', 'flax', 'jaxlib') if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=dict(os.environ)
    )
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("name", "write", "reason"),
    [
        (
            "not_flax",
            lambda p: p.write_bytes(msgpack.packb([1, 2, 3])),
            "hold a tree of params, this one holds a list",
        ),
        ("ext_42", lambda p: p.write_bytes(msgpack.packb({"params": msgpack.ExtType(42, b"x")})), "ext"),
        ("truncated", lambda p: p.write_bytes(p.read_bytes()[:100]), "msgpack data is cut short"),
        ("other_env", None, "shapes do not match dqn_jax on CartPole-v1"),
    ],
)
def test_bad_flax_files_are_one_clear_error(tmp_path, name, write, reason):
    run = tmp_path / "runs" / "CartPole-v1__dqn_jax__1__1700000000"
    if name == "other_env":
        src = tmp_path / "acrobot"
        _save_dqn(src, env_id="Acrobot-v1")  # 6 observations, 3 actions
        run.mkdir(parents=True)
        (run / "dqn_jax.cleanrl_model").write_bytes((src / "dqn_jax.cleanrl_model").read_bytes())
    else:
        _save_dqn(run)
        write(run / "dqn_jax.cleanrl_model")
    report = zoo("check", run, "--json").json()[0]
    assert report["status"] == "error" and reason in report["reason"], report
    assert "\n" not in report["reason"]
    result = zoo("eval", run, "-n", "1", "-q")
    assert result.exit_code == 1 and result.stderr.startswith("error: ") and "Traceback" not in result.stderr


def test_enjoy_fetches_a_jax_model_from_a_repo_laid_out_as_cleanrl_pushes_it(tmp_path):
    """cleanrl_utils/huggingface.py's push_to_hub: the model, the script, pyproject.toml, poetry.lock, the
    events file, replay.mp4, videos/ and README.md; CleanRL's repo name with the default entity cleanrl."""
    from zoo.hub_server.server import HubServer

    run = tmp_path / "runs" / "CartPole-v1__dqn_jax__1__1700000000"
    _save_dqn(run)
    repo_dir = tmp_path / "repo"
    repo_dir.mkdir()
    (repo_dir / "dqn_jax.cleanrl_model").write_bytes((run / "dqn_jax.cleanrl_model").read_bytes())
    for name, text in (
        ("dqn_jax.py", "# the training script\n"),
        ("pyproject.toml", "[tool.poetry]\n"),
        ("poetry.lock", "# lock\n"),
        ("README.md", "---\nlibrary_name: cleanrl\n---\n"),
        ("events.out.tfevents.1700000000.host", ""),
        ("replay.mp4", ""),
        ("videos/CartPole-v1__dqn_jax__1__1700000000-eval/rl-video-episode-0.mp4", ""),
    ):
        (repo_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (repo_dir / name).write_text(text)
    with HubServer(tmp_path / "hub").start() as hub:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "ZOO_ALLOW"))}
        env.update(
            HF_ENDPOINT=hub.url,
            HF_HUB_DISABLE_XET="1",
            HF_HUB_DISABLE_TELEMETRY="1",
            HF_HOME=str(tmp_path / "hf-home"),
        )
        upload = (
            "import sys; from huggingface_hub import HfApi; api = HfApi()\n"
            "api.create_repo('cleanrl/CartPole-v1-dqn_jax-seed1')\n"
            "api.upload_folder(repo_id='cleanrl/CartPole-v1-dqn_jax-seed1', folder_path=sys.argv[1])"
        )
        subprocess.run(
            [sys.executable, "-c", upload, str(repo_dir)], env=env, check=True, capture_output=True
        )
        cmd = [
            sys.executable,
            "-m",
            "zoo",
            "enjoy",
            "--exp-name",
            "dqn_jax",
            "--env-id",
            "CartPole-v1",
            "--run-seed",
            "1",
            "--runs-dir",
            str(tmp_path / "none"),
            "--allow-download",
            "--deterministic",
            "-n",
            str(EPISODES),
            "--num-envs",
            "3",
            "--seed",
            "4",
            "--out",
            str(tmp_path / "enjoy.json"),
        ]
        enjoyed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert enjoyed.returncode == 0, enjoyed.stderr
    assert "downloaded from cleanrl/CartPole-v1-dqn_jax-seed1 @ main" in enjoyed.stderr
    fetched = [e["return"] for e in json.loads((tmp_path / "enjoy.json").read_text())["episodes"]]
    assert fetched == _zoo_returns(run, tmp_path / "local.json")
