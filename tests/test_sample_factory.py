"""Sample Factory adapter: real Sample Factory 2.1.1 runs, read by zoo without Sample Factory, compared with its own
inference.

Sample Factory pins numpy<2, gymnasium<1.0 and huggingface_hub<1.0, so it trains in its own venv (dev.py's
``.venv-trainers-numpy1``): tests/trainers/sample_factory_runs.py trains with its documented gym entry
(``sf_examples.train_gym_env``) CartPole-v1 with the default GRU core, a 2-layer LSTM, no core and separate actor and
critic weights, and Pendulum-v1 registered the same way; then runs Sample Factory's own deterministic inference
(``create_actor_critic`` + ``load_state_dict`` + ``argmax_actions`` with the rnn state, as
``enjoy --eval_deterministic=True``) from ``reset(seed)`` of seeds 0-2, recording its observations, actions and
episodes. zoo's actions on those observations must be Sample Factory's
(max |diff| 0 on every step), and ``zoo eval`` on 3 envs seeded 0-2 must give its episodes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import Canary, assert_exports_act_like_checkpoint, episodes_of, zoo
from trainer_venvs import run_trainer

SCRIPT = "sample_factory_runs.py"
SEEDS = ("0", "1", "2")
#: experiment -> env id (config.json's env is the gym id: registered so by sf_examples.train_gym_env)
EXPERIMENTS = {
    "cartpole_gru": "CartPole-v1",
    "cartpole_mlp": "CartPole-v1",
    "cartpole_lstm": "CartPole-v1",  # rnn_type lstm, rnn_num_layers 2
    "cartpole_separate": "CartPole-v1",  # actor_critic_share_weights false
    "pendulum": "Pendulum-v1",
}
DATA_RUN = Path(__file__).parent / "data" / "trainer_runs" / "sample_factory" / "train_dir" / "cartpole_gru"


@pytest.fixture(scope="session")
def sf_runs(tmp_path_factory) -> Path:
    """``train_dir`` of the five experiments, each with Sample Factory's reference for its latest checkpoint (and
    the GRU run's for its best one)."""
    root = tmp_path_factory.mktemp("sample_factory")
    run_trainer("sample_factory", SCRIPT, "train-and-reference", "train_dir", *SEEDS, cwd=root)
    return root / "train_dir"


def _reference(train_dir: Path, exp: str, kind: str = "latest") -> dict:
    return json.loads((train_dir / exp / f"sf_reference_{kind}.json").read_text())


def _eval(target: Path, out: Path, *args: str) -> list[tuple[float, int]]:
    result = zoo(
        "eval",
        target,
        "--deterministic",
        "-n",
        "3",
        "--num-envs",
        "3",
        "--seed",
        "0",
        "-q",
        "--out",
        out,
        *args,
    )
    assert result.exit_code == 0, result.stderr
    return episodes_of(out)


def test_check_recognizes_the_experiments(sf_runs):
    reports = {Path(r["run"]["path"]).name: r for r in zoo("check", sf_runs, "--json").json()}
    assert sorted(reports) == sorted(EXPERIMENTS)
    for exp, env_id in EXPERIMENTS.items():
        report = reports[exp]
        assert report["status"] == "ok", report
        d = report["details"]
        assert (
            d["algorithm"] == "APPO"
            and report["run"]["exp_name"] == "sf_appo"
            and report["run"]["env_id"] == env_id
        )
        assert (
            d["checkpoint"] == _reference(sf_runs, exp)["checkpoint"]
        )  # enjoy's --load_checkpoint_kind latest
        assert d["checkpoint"].startswith("checkpoint_") and d["best"].startswith("best_")
        assert d["policy_dir"] == "checkpoint_p0" and report["run"]["seed"] == 1
    gru = reports["cartpole_gru"]["details"]
    assert gru["recurrent"] is True and gru["core"] == "GRU x1 (hidden 32)"
    assert gru["model"] == "4 -> mlp [32, 32] elu -> GRU x1 (32) -> head 2"
    assert reports["cartpole_mlp"]["details"]["recurrent"] is False
    assert reports["cartpole_lstm"]["details"]["model"] == "4 -> mlp [32, 32] elu -> LSTM x2 (32) -> head 2"
    assert reports["pendulum"]["details"]["model"] == "3 -> mlp [32, 32] elu -> head 2"
    assert (
        reports["cartpole_separate"]["details"]["model"] == "4 -> mlp [32, 32] elu -> head 2"
    )  # the actor's


def test_sample_factorys_own_loader_fails_on_its_files_zoo_reads_them(sf_runs):
    """Once a best exists, best_performance is an np.float64: Learner.load_checkpoint (torch.load with torch 2.13's
    weights_only default) refuses every later file. zoo's loader allowlists numpy's scalar and dtype only."""
    import torch

    from zoo.artifacts.torchfile import inspect_torch_file, load_checkpoint

    for exp in EXPERIMENTS:
        assert _reference(sf_runs, exp)["sf_load_checkpoint_ok"] is False
        path = sf_runs / exp / "checkpoint_p0" / _reference(sf_runs, exp)["checkpoint"]
        with pytest.raises(Exception, match="numpy.core.multiarray.scalar"):
            torch.load(path, weights_only=True)
        loaded = load_checkpoint(path, inspect_torch_file(path))
        assert isinstance(loaded["best_performance"], np.floating) and "model" in loaded


@pytest.mark.parametrize("exp", list(EXPERIMENTS))
def test_actions_are_sample_factorys_on_its_own_observations(sf_runs, exp):
    from zoo.api import load_policy

    recorded = np.load(sf_runs / exp / "sf_reference_latest.npz")
    policy = load_policy(sf_runs / exp)
    assert policy.is_recurrent is (exp in ("cartpole_gru", "cartpole_lstm"))
    steps, worst = 0, 0.0
    for i in range(len(SEEDS)):
        policy.reset(np.ones(1, dtype=bool))  # a new episode: Sample Factory starts it from zero states
        for obs, action in zip(recorded[f"obs_{i}"], recorded[f"actions_{i}"], strict=True):
            mine, _ = policy.act(obs[None], None, True)
            worst = max(worst, float(np.max(np.abs(mine[0].astype(np.float64) - action))))
            steps += 1
    assert steps >= 3 and worst == 0.0, (exp, steps, worst)


@pytest.mark.parametrize("exp", list(EXPERIMENTS))
def test_eval_gives_sample_factorys_episodes(sf_runs, exp, tmp_path):
    """CartPole: the very episodes. Pendulum: the same actions (above), but gymnasium 0.29's Pendulum (Sample
    Factory's venv) and 1.4's (zoo's) round the dynamics differently in the last bits: returns to 1e-6 relative."""
    expected = [(e["return"], e["length"]) for e in _reference(sf_runs, exp)["episodes"]]
    got = _eval(sf_runs / exp, tmp_path / "eval.json")
    if EXPERIMENTS[exp] == "CartPole-v1":
        assert got == expected
    else:
        assert [n for _, n in got] == [n for _, n in expected]
        np.testing.assert_allclose([r for r, _ in got], [r for r, _ in expected], rtol=1e-6)


def test_stochastic_eval_samples_from_the_seeded_generator(sf_runs, tmp_path):
    """--stochastic samples Sample Factory's training distribution: the same seed gives the same episodes."""
    args = ("--stochastic", "-n", "4", "--num-envs", "2", "--seed", "5", "-q")
    for name in ("a.json", "b.json"):
        result = zoo("eval", sf_runs / "cartpole_gru", *args, "--out", tmp_path / name)
        assert result.exit_code == 0, result.stderr
    assert episodes_of(tmp_path / "a.json") == episodes_of(tmp_path / "b.json")
    assert json.loads((tmp_path / "a.json").read_text())["deterministic"] is False


def test_the_best_checkpoint_is_evaluated_by_naming_it(sf_runs, tmp_path):
    """enjoy's --load_checkpoint_kind best is zoo's TARGET naming the best_*.pth file."""
    reference = _reference(sf_runs, "cartpole_gru", "best")
    best = sf_runs / "cartpole_gru" / "checkpoint_p0" / reference["checkpoint"]
    assert best.name.startswith("best_")
    assert _eval(best, tmp_path / "best.json") == [(e["return"], e["length"]) for e in reference["episodes"]]
    assert json.loads((tmp_path / "best.json").read_text())["checkpoint"].endswith(best.name)


@pytest.mark.parametrize("exp", ["cartpole_gru", "cartpole_lstm", "pendulum"])
def test_exports_act_like_the_checkpoint(sf_runs, exp, tmp_path):
    sidecars = assert_exports_act_like_checkpoint(
        sf_runs / exp, tmp_path, continuous=exp == "pendulum", episodes=4, num_envs=2
    )
    for meta in sidecars.values():
        assert meta["framework"] == "sample_factory" and meta["normalization_baked"] is True
        assert meta["normalization"] == {
            "kind": "sample_factory_running_mean_std",
            "formula": "clamp((x - mean) * (1 / sqrt(var + eps)), -clip, clip)",
            "eps": 1e-5,
            "clip": 5.0,
        }
        assert meta["is_recurrent"] is (exp != "pendulum")


def test_watch_follows_the_checkpoints_and_reads_its_best_copy_back(sf_runs, tmp_path):
    from zoo.frameworks import get_adapter

    adapter = get_adapter("sample_factory")
    run = tmp_path / "cartpole_gru"
    shutil.copytree(sf_runs / "cartpole_gru", run)
    saved = adapter.checkpoints(run)
    names = sorted(p.name for p in (run / "checkpoint_p0").glob("checkpoint_*.pth"))
    assert [c.model_file.name for c in saved] == names and len(saved) == 2  # Sample Factory keeps 2
    assert [c.step for c in saved] == sorted(c.step for c in saved) and all(c.step for c in saved)
    copies = adapter.best_model_files(run, saved[0])
    for name, source in copies.items():
        shutil.copy(source, run / name)
    (found,) = adapter.discover(run / "best_model.pth")
    assert found.model_file == run / "best_model.pth" and found.path == run
    (whole,) = adapter.discover(run)
    assert whole.model_file.name == names[-1]  # the copy is never taken for the latest checkpoint


def test_push_stages_sample_factorys_layout_and_both_loaders_read_it_back(sf_runs, tmp_path, monkeypatch):
    from test_hub_roundtrip import SENTINEL, _zoo, token_hub

    run = tmp_path / "train_dir" / "cartpole_gru"
    shutil.copytree(sf_runs / "cartpole_gru", run)
    for name in (
        "sf_reference_latest.json",
        "sf_reference_latest.npz",
        "sf_reference_best.json",
        "sf_reference_best.npz",
    ):
        (run / name).unlink()
    repo = "demo/CartPole-v1-sf_appo-seed1"
    stage = tmp_path / "stage"
    with token_hub(tmp_path) as (server, _log):
        pushed = _zoo("push", run, "--repo-id", repo, "--yes", "--episodes", "3", "--stage-dir", stage,
                      hub_url=server.url, home=tmp_path / "pusher")  # fmt: skip
        assert pushed.returncode == 0, pushed.stderr
        staged = {p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file()}
        assert {"config.json", "README.md", "eval.json"} <= staged
        assert {f"checkpoint_p0/{p.name}" for p in (run / "checkpoint_p0").iterdir()} <= staged
        assert "model.safetensors" not in staged  # its config.json would take Sample Factory's
        assert {
            "agent.pt",
            "policy.onnx",
            "policy.onnx.metadata.json",
        } <= staged  # usable without Sample Factory
        assert json.loads((stage / "config.json").read_text())["encoder_mlp_layers"] == [
            32,
            32,
        ]  # Sample Factory's
        card = (stage / "README.md").read_text()
        assert "library_name: sample-factory" in card and "- sample-factory" in card
        fetched = _zoo("enjoy", "--exp-name", "sf_appo", "--env-id", "CartPole-v1", "--run-seed", "1",
                       "--hf-repository", repo, "--runs-dir", tmp_path / "none", "--allow-download", "--episodes", "3",
                       "--out", tmp_path / "remote.json", hub_url=server.url, home=tmp_path / "fresh")  # fmt: skip
        assert fetched.returncode == 0, fetched.stderr
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")  # git must fail, never ask
        monkeypatch.setenv("HF_TOKEN", SENTINEL)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "sf-home"))
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        (tmp_path / "sf").mkdir()
        out = run_trainer(
            "sample_factory", SCRIPT, "hub", server.url, repo, "train_dir", "CartPole-v1", cwd=tmp_path / "sf"
        )
    remote = json.loads((tmp_path / "remote.json").read_text())
    assert remote["source"]["kind"] == "download" and remote["checkpoint"].endswith(
        _reference(sf_runs, "cartpole_gru")["checkpoint"]
    )
    pushed_eval = json.loads((stage / "eval.json").read_text())
    assert [e["return"] for e in remote["episodes"]] == [e["return"] for e in pushed_eval["episodes"]]
    fetched_by_sf, episodes = (json.loads(line) for line in out.strip().splitlines()[-2:])
    # Sample Factory's load_from_hub clones with git (huggingface_hub's deprecated Repository, which needs git-lfs):
    # what it said is recorded, not asserted (docs/frameworks/sample_factory.md); snapshot_download lays out the same
    assert isinstance(fetched_by_sf["load_from_hf"], str)
    assert (
        "config.json" in fetched_by_sf["files"]
        and "checkpoint_p0/" + remote["checkpoint"].rsplit("/", 1)[-1] in fetched_by_sf["files"]
    )
    reference = _reference(sf_runs, "cartpole_gru")
    assert episodes == reference["episodes"]  # Sample Factory's enjoy path on the download: its own episodes


# ----------------------------------------------------------------------------- refused
def _copy(sf_runs: Path, tmp_path: Path, exp: str = "cartpole_gru") -> Path:
    run = tmp_path / "train_dir" / exp
    shutil.copytree(sf_runs / exp, run)
    return run


def _one_line_failure(result, needle: str, code: int | None = None) -> None:
    assert result.exit_code != 0 and (code is None or result.exit_code == code), result.stderr
    assert needle in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_truncated_checkpoint_is_an_error_line(sf_runs, tmp_path):
    run = _copy(sf_runs, tmp_path)
    latest = sorted((run / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    latest.write_bytes(latest.read_bytes()[: latest.stat().st_size // 2])
    (report,) = zoo("check", run, "--json").json()
    assert report["status"] == "error" and "\n" not in report["reason"]
    _one_line_failure(
        zoo("eval", run, "-n", "1", "--num-envs", "1", "-q", "--out", tmp_path / "x.json"), "error:"
    )


def test_a_planted_pickle_global_is_refused_and_never_runs(sf_runs, tmp_path):
    import torch

    run = _copy(sf_runs, tmp_path)
    canary = tmp_path / "canary"
    latest = sorted((run / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    content = torch.load(latest, weights_only=False)  # the test's own file
    content["curr_lr"] = Canary(canary)
    torch.save(content, latest)
    (report,) = zoo("check", run, "--json").json()
    assert report["status"] == "error" and "unsafe pickle" in report["reason"]
    _one_line_failure(zoo("eval", run, "-q", "--out", tmp_path / "eval.json"), "unsafe pickle", 3)
    assert not canary.exists() and not (tmp_path / "eval.json").exists()


def test_a_config_string_that_would_be_code_is_never_run(sf_runs, tmp_path):
    run = _copy(sf_runs, tmp_path)
    canary = tmp_path / "canary"
    config = json.loads((run / "config.json").read_text())
    config["nonlinearity"] = f"__import__('os').system('touch {canary}')"
    (run / "config.json").write_text(json.dumps(config))
    (report,) = zoo("check", run, "--json").json()
    assert (
        report["status"] == "error"
        and "nonlinearity" in report["reason"]
        and "is not one of elu" in report["reason"]
    )
    _one_line_failure(zoo("eval", run, "-q", "--out", tmp_path / "x.json"), "is not one of elu, relu, tanh")
    assert not canary.exists()


def test_an_env_name_that_is_no_gym_id_asks_for_env_id(sf_runs, tmp_path):
    run = _copy(sf_runs, tmp_path)
    config = json.loads((run / "config.json").read_text())
    config["env"] = "doom_health_gathering_supreme"
    (run / "config.json").write_text(json.dumps(config))
    (report,) = zoo("check", run, "--json").json()
    assert (
        report["status"] == "warning"
        and "is a Sample Factory env name, not a gymnasium id" in report["reason"]
    )
    _one_line_failure(zoo("eval", run, "-q", "--out", tmp_path / "x.json"), "pass --env-id")
    assert _eval(run, tmp_path / "ok.json", "--env-id", "CartPole-v1")  # with the id named, it evaluates


def test_a_config_that_contradicts_the_weights_is_refused_by_name(sf_runs, tmp_path):
    run = _copy(sf_runs, tmp_path)
    config = json.loads((run / "config.json").read_text())
    config["actor_critic_share_weights"] = False
    (run / "config.json").write_text(json.dumps(config))
    (report,) = zoo("check", run, "--json").json()
    assert report["status"] == "error"
    assert "config.json says actor_critic_share_weights false, the weights are shared" in report["reason"]
    config.update(actor_critic_share_weights=True, use_rnn=False)
    (run / "config.json").write_text(json.dumps(config))
    (report,) = zoo("check", run, "--json").json()
    assert (
        report["status"] == "error" and "use_rnn false, the weights hold a recurrent core" in report["reason"]
    )


def test_discovery_claims_only_sample_factory_experiments(sf_runs, tmp_path):
    from zoo.frameworks import framework_names, get_adapter

    lone = tmp_path / "other" / "run"
    lone.mkdir(parents=True)
    (lone / "config.json").write_text("{}")  # a config.json alone is anybody's
    (lone / "checkpoint_p0").mkdir()
    (lone / "checkpoint_p0" / "model.pth").write_bytes(b"")
    assert list(get_adapter("sample_factory").discover(tmp_path / "other")) == []
    for name in framework_names():
        if name != "sample_factory":
            assert not list(get_adapter(name).discover(sf_runs)), name


def test_the_committed_run_is_read_as_the_docs_show(tmp_path):
    """tests/data/trainer_runs/sample_factory: what docs/frameworks/sample_factory.md runs zoo on."""
    (report,) = zoo("check", DATA_RUN, "--json").json()
    assert report["status"] == "ok" and report["details"]["recurrent"] is True
    # reward/reward from .summary/0/ (a run this short writes it only when a summary falls after 10 episodes)
    assert report["details"]["train_return"]["step"] == 2944
