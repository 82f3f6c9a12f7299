"""rl_games adapter: real rl-games 1.6.5 runs, checked, evaluated and exported by zoo, compared with rl_games' player.

rl_games cannot share zoo's venv (it pins psutil<6 and pulls pygame-ce beside pygame), so it trains in the trainer
venv (dev.py's TRAINER_VENVS): tests/trainers/rl_games_train.py runs rl_games' own ``Runner`` for a few epochs on
Pendulum-v1 (Isaac Lab's layout, ``params/agent.yaml``) and CartPole-v1 (rl_games' plain layout, the training yaml
given as ``--model-config``), and tests/trainers/rl_games_play.py steps rl_games' own player
(``get_action(obs, is_deterministic=True)``) through seeded episodes, recording its observations and actions.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_exports_act_like_checkpoint, episodes_of, write_malicious, zoo
from trainer_venvs import run_trainer

from zoo.frameworks import get_adapter

STAMP = "2026-12-06_09-00-00"
SEEDS = (0, 1, 2)


@pytest.fixture(scope="session")
def rl_games_runs(tmp_path_factory) -> dict[str, Path]:
    """The two runs rl_games' Runner wrote: ``pendulum`` (Isaac Lab layout) and ``cartpole`` (plain), plus
    ``cartpole.yaml``, the training yaml of the plain run."""
    out = tmp_path_factory.mktemp("rl_games")
    run_trainer("rl_games", "rl_games_train.py", out, STAMP, cwd=out)
    (cartpole,) = (out / "runs").glob("cartpole_*")
    return {
        "root": out,
        "pendulum": out / "logs" / "rl_games" / "pendulum" / STAMP,
        "cartpole": cartpole,
        "cartpole_yaml": out / "cartpole.yaml",
    }


@pytest.fixture(scope="session")
def rl_games_reference(rl_games_runs) -> dict[str, dict]:
    """rl_games' player on each run's best checkpoint, episodes of seeds 0, 1, 2."""
    found = {}
    for name, config, env_id in (
        ("pendulum", rl_games_runs["pendulum"] / "params" / "agent.yaml", "Pendulum-v1"),
        ("cartpole", rl_games_runs["cartpole_yaml"], "CartPole-v1"),
    ):
        out = rl_games_runs["root"] / f"{name}.player.json"
        checkpoint = rl_games_runs[name] / "nn" / f"{name}.pth"
        run_trainer(
            "rl_games", "rl_games_play.py", config, checkpoint, env_id, out, *SEEDS, cwd=rl_games_runs["root"]
        )
        found[name] = json.loads(out.read_text())
    return found


def _cartpole_args(runs) -> tuple[str, ...]:
    return ("--env-id", "CartPole-v1", "--model-config", str(runs["cartpole_yaml"]))


def _args(runs, name: str) -> tuple[str, ...]:
    return _cartpole_args(runs) if name == "cartpole" else ()


def test_check_recognizes_both_layouts(rl_games_runs):
    reports = {Path(r["run"]["path"]).name: r for r in zoo("check", rl_games_runs["root"], "--json").json()}
    pendulum = reports[STAMP]
    assert pendulum["status"] == "ok", pendulum
    d = pendulum["details"]
    assert pendulum["run"]["exp_name"] == "rl_games_ppo" and d["algorithm"] == "PPO"
    assert pendulum["run"]["env_id"] == "Pendulum-v1" and pendulum["run"]["seed"] == 1
    assert d["checkpoint"] == "pendulum.pth" and d["agent"] == "a2c_continuous"
    assert d["model"] == "MLP 3-32-32-1 (mu + fixed log-std, obs normalizer)"
    assert d["torch_compile"] is True and d["normalize_input"] is True and d["epoch"] >= 3
    assert d["config"] == "params/agent.yaml" and "train_return" in d
    assert any(name.startswith("last_pendulum_ep_") for name in d["checkpoints"])
    cartpole = reports[rl_games_runs["cartpole"].name]
    assert cartpole["status"] == "warning" and "activation unknown" in cartpole["reason"], cartpole
    assert cartpole["details"]["model"] == "MLP 4-32-32-2 (logits, obs normalizer)"
    assert cartpole["details"]["torch_compile"] is False  # trained with torch_compile: False, keys unprefixed


def test_actions_equal_rl_games_player_on_its_own_observations(rl_games_runs, rl_games_reference):
    """Row by row (the player acts on one observation at a time) the actions are equal bit for bit, discrete
    and continuous; a batch of them differs by BLAS rounding only (<= 1e-5)."""
    from zoo.api import load_policy

    for name, kwargs in (
        ("pendulum", {}),
        ("cartpole", {"env_id": "CartPole-v1", "model_config": rl_games_runs["cartpole_yaml"]}),
    ):
        policy = load_policy(rl_games_runs[name], **kwargs)
        episodes = rl_games_reference[name]["episodes"]
        assert rl_games_reference[name]["player"] == (
            "PpoPlayerContinuous" if name == "pendulum" else "PpoPlayerDiscrete"
        )
        obs = np.concatenate([np.asarray(e["obs"], np.float32) for e in episodes])
        lib = np.concatenate([np.asarray(e["actions"]).reshape(len(e["obs"]), -1) for e in episodes])
        rows = np.concatenate([policy.act(o[None], deterministic=True)[0].reshape(1, -1) for o in obs])
        assert len(obs) > 300 and np.abs(rows - lib).max() == 0, name
        batch = policy.act(obs, deterministic=True)[0].reshape(len(obs), -1)
        assert np.abs(batch - lib).max() <= (0 if name == "cartpole" else 1e-5), name


@pytest.mark.parametrize("name", ["pendulum", "cartpole"])
def test_eval_deterministic_matches_the_player_episode_for_episode(
    rl_games_runs, rl_games_reference, name, tmp_path
):
    """One env per seed, as the player steps them: the same returns and lengths, bit for bit. (With several envs
    in one batch, Pendulum's actions differ from the player's one-row ones by BLAS rounding, ~1e-7.)"""
    expected = [(e["return"], e["length"]) for e in rl_games_reference[name]["episodes"]]
    got = []
    for seed in SEEDS:
        out = tmp_path / f"eval{seed}.json"
        args = ("-n", "1", "--num-envs", "1", "--seed", seed, "--deterministic", "-q", "--out", out)
        result = zoo("eval", rl_games_runs[name], *_args(rl_games_runs, name), *args)
        assert result.exit_code == 0, result.stderr
        got += episodes_of(out)
    assert got == expected


@pytest.mark.parametrize("name", ["pendulum", "cartpole"])
def test_export_torchscript_and_onnx_act_like_the_checkpoint(rl_games_runs, name, tmp_path):
    sidecars = assert_exports_act_like_checkpoint(
        rl_games_runs[name], tmp_path, *_args(rl_games_runs, name), continuous=name == "pendulum"
    )
    baked = sidecars["onnx"]["baked"]
    assert "RunningMeanStd observation normalization" in baked
    if name == "pendulum":
        assert sidecars["onnx"]["normalization"]["kind"] == "rl_games_running_mean_std"
        assert any("rescaled to the action bounds [[-2.0], [2.0]]" in b for b in baked)
    else:
        assert "argmax of the logits (int64)" in baked


def test_push_then_enjoy_from_a_hub_on_localhost(rl_games_runs, tmp_path):
    """The run's nn/*.pth and params/agent.yaml go to the repo; enjoy fetches them back as a run."""
    from test_hub_roundtrip import _zoo, token_hub

    repo = "demo/Pendulum-v1-rl_games_ppo-seed1"
    stage = tmp_path / "stage"
    with token_hub(tmp_path) as (hub, _log):
        pushed = _zoo(
            "push", rl_games_runs["pendulum"], "--repo-id", repo, "--yes", "--episodes", "2", "--stage-dir", stage,
            hub_url=hub.url, home=tmp_path / "pusher",
        )  # fmt: skip
        assert pushed.returncode == 0, pushed.stderr
        assert (stage / "nn" / "pendulum.pth").is_file() and (stage / "params" / "agent.yaml").is_file()
        remote = tmp_path / "remote.json"
        fetched = _zoo(
            "enjoy", "--exp-name", "rl_games_ppo", "--env-id", "Pendulum-v1", "--run-seed", "1",
            "--hf-repository", repo, "--runs-dir", tmp_path / "none", "--allow-download", "--deterministic",
            "-n", "3", "--num-envs", "3", "--seed", "0", "--out", remote,
            hub_url=hub.url, home=tmp_path / "fresh-cache",
        )  # fmt: skip
        assert fetched.returncode == 0, fetched.stderr
    local = tmp_path / "local.json"
    args = ("-n", "3", "--num-envs", "3", "--seed", "0", "--deterministic", "-q", "--out", local)
    assert zoo("eval", rl_games_runs["pendulum"], *args).exit_code == 0
    assert episodes_of(remote) == episodes_of(local)


def test_watch_follows_the_checkpoint_series_never_the_best(rl_games_runs, tmp_path):
    adapter = get_adapter("rl_games")
    for name in ("pendulum", "cartpole"):
        saved = adapter.checkpoints(rl_games_runs[name])
        names = [c.model_file.name for c in saved]
        assert names and all(n.startswith(f"last_{name}_ep_") for n in names), names
        steps = [c.step for c in saved]
        assert steps == sorted(steps) and all(
            f"_ep_{step}_" in n for step, n in zip(steps, names, strict=True)
        )
        assert f"{name}.pth" not in names
    run = _copy(rl_games_runs["pendulum"], tmp_path / "logs" / "rl_games" / "pendulum" / STAMP)
    last = adapter.checkpoints(run)[-1].step
    watched = zoo(
        "watch",
        run,
        "--until",
        last,
        "-n",
        "1",
        "--num-envs",
        "1",
        "--poll",
        "0.2",
        "--nice",
        "0",
        "--max-cpu",
        "0",
    )
    assert watched.exit_code == 0, watched.stderr
    lines = [json.loads(line) for line in (run / "evals.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [c.step for c in adapter.checkpoints(run)]
    assert all(line["framework"] == "rl_games" and line["status"] == "ok" for line in lines)
    best = zoo("eval", run / "best_model.pth", "-n", "1", "-q", "--out", tmp_path / "best.json")
    assert best.exit_code == 0, best.stderr  # the copy reads back as a model of the run


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _one_line_error(result, exit_codes=None) -> str:
    assert result.exit_code != 0 and result.stderr.startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    if exit_codes:
        assert result.exit_code in exit_codes
    return result.stderr


def test_truncated_checkpoint_is_one_line_error(rl_games_runs, tmp_path):
    run = _copy(rl_games_runs["pendulum"], tmp_path / "logs" / "rl_games" / "pendulum" / STAMP)
    model = run / "nn" / "pendulum.pth"
    model.write_bytes(model.read_bytes()[:5000])
    _one_line_error(zoo("eval", run, "-n", "1", "-q"))
    report = zoo("check", run, "--json").json()[0]
    assert report["status"] == "error", report


def test_pickle_global_outside_the_allowlist_is_refused_unrun(rl_games_runs, tmp_path):
    run = _copy(rl_games_runs["pendulum"], tmp_path / "logs" / "rl_games" / "pendulum" / STAMP)
    canary = tmp_path / "canary"
    write_malicious(run / "nn" / "pendulum.pth", canary)
    stderr = _one_line_error(zoo("eval", run, "-n", "1", "-q"))
    assert "unsafe pickle" in stderr and ("os.system" in stderr or "posix.system" in stderr)
    report = zoo("check", run, "--json").json()[0]
    assert report["status"] == "error" and not canary.exists()


def test_a_python_tag_in_agent_yaml_is_never_run(rl_games_runs, tmp_path):
    run = _copy(rl_games_runs["pendulum"], tmp_path / "logs" / "rl_games" / "pendulum" / STAMP)
    canary = tmp_path / "canary"
    with (run / "params" / "agent.yaml").open("a") as fh:
        fh.write(f"hook: !!python/object/apply:os.system [touch {canary}]\n")
    report = zoo("check", run, "--json").json()[0]
    assert (
        report["status"] == "error" and "hook is tagged !!python/object/apply:os.system" in report["reason"]
    )
    assert zoo("eval", run, "-n", "1", "-q", "--out", tmp_path / "e.json").exit_code == 0  # the tag is data
    assert not canary.exists()


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda p: p["network"].update(rnn={"name": "lstm", "units": 64}), "a network with an rnn section"),
        (lambda p: p["network"]["mlp"].update(d2rl=True), "a D2RL MLP"),
        (lambda p: p["network"]["mlp"].update(activation="leaky_relu"), "activation 'leaky_relu'"),
        (lambda p: p["network"].update(name="resnet_actor"), "network 'resnet_actor'"),
    ],
)
def test_configs_zoo_does_not_rebuild_are_refused(rl_games_runs, tmp_path, edit, words):
    import yaml

    params = yaml.safe_load(rl_games_runs["cartpole_yaml"].read_text())
    edit(params["params"])
    config = tmp_path / "cartpole.yaml"
    config.write_text(yaml.safe_dump(params))
    stderr = _one_line_error(
        zoo(
            "eval",
            rl_games_runs["cartpole"],
            "--env-id",
            "CartPole-v1",
            "--model-config",
            config,
            "-n",
            "1",
            "-q",
        )
    )
    assert words in stderr and "is not one zoo rebuilds" in stderr


def test_plain_run_without_its_yaml_or_with_another_file(rl_games_runs, tmp_path):
    run = rl_games_runs["cartpole"]
    stderr = _one_line_error(zoo("eval", run, "--env-id", "CartPole-v1", "-n", "1", "-q"))
    assert "activation is unknown" in stderr and "--model-config" in stderr
    other = tmp_path / "other.yaml"
    other.write_text("env: CartPole-v1\n")
    stderr = _one_line_error(zoo("eval", run, "--env-id", "CartPole-v1", "--model-config", other, "-n", "1"))
    assert "not an rl_games config" in stderr
    stderr = _one_line_error(zoo("eval", run, "--env-id", "Pendulum-v1", *_cartpole_args(rl_games_runs)[2:]))
    assert "Discrete" in stderr or "does not fit" in stderr


def test_committed_runs_check_as_the_docs_show():
    """tests/data/trainer_runs/rl_games (the docs page's runs): the Isaac Lab run ok, the plain run a warning."""
    data = Path(__file__).parent / "data" / "trainer_runs" / "rl_games"
    reports = {Path(r["run"]["path"]).parent.name: r for r in zoo("check", data, "--json").json()}
    assert reports["pendulum"]["status"] == "ok" and reports["runs"]["status"] == "warning", reports
    assert reports["pendulum"]["details"]["torch_compile"] is True
    assert reports["runs"]["details"]["torch_compile"] is False


def test_isaac_lab_wrapper_clips_are_applied(rl_games_runs, tmp_path):
    """Isaac Lab's RlGamesVecEnvWrapper reports Box(-clip_actions, clip_actions) (the player rescales to it) and
    clamps observations to +-clip_observations (``params.env``): with clip_actions 1.0 the actions are exactly
    half of those rescaled to Pendulum's +-2; a huge clip_observations changes nothing."""
    import yaml

    from zoo.api import load_policy

    run = _copy(rl_games_runs["pendulum"], tmp_path / "logs" / "rl_games" / "pendulum" / STAMP)
    agent = run / "params" / "agent.yaml"
    params = yaml.safe_load(agent.read_text())
    params["params"]["env"] = {"clip_observations": 1e6, "clip_actions": 1.0}
    agent.write_text(yaml.dump(params, default_flow_style=False, sort_keys=False))
    obs = np.random.default_rng(0).uniform(-8, 8, (64, 3)).astype(np.float32)
    wide = load_policy(rl_games_runs["pendulum"]).act(obs)[0]
    clipped = load_policy(run).act(obs)[0]
    assert np.abs(clipped).max() <= 1.0 and np.array_equal(clipped, wide / 2)
