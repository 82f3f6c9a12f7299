"""A Genesis rsl_rl run, as go2_train.py writes it, through zoo check / eval / export / push / enjoy.

The run (conftest's ``go2_run``) is trained with rsl_rl's ``OnPolicyRunner`` on zoo's Go2 walking task
(Genesis' CPU backend, 8 envs, 2 iterations): ``logs/go2-walking/cfgs.pkl`` + ``model_0.pt`` + ``model_1.pt``.
Set ``ZOO_TEST_DEVICE=cuda`` to run the same tests on a GPU (benchmarks/gpu_check.sh does).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil

import pytest
from export_contract import assert_golden
from helpers import zoo

pytestmark = pytest.mark.genesis

DEVICE = os.environ.get("ZOO_TEST_DEVICE", "cpu")
TASK = "Genesis-Go2Walking-v0"


def _eval(target, out, *args):
    return zoo(
        "eval",
        target,
        "--episodes",
        "4",
        "--num-envs",
        "2",
        "--seed",
        "3",
        "--device",
        DEVICE,
        "--out",
        out,
        "--quiet",
        *args,
    )


def test_check_recognizes_a_genesis_run_and_names_its_task(go2_run):
    report = zoo("check", go2_run.parent, "--json", "--no-cache").json()[0]
    assert report["status"] == "ok", report
    assert report["run"]["env_id"] == TASK and report["run"]["path"] == str(go2_run)
    assert report["details"]["task"] == f"{TASK}: zoo's definition, configured from cfgs.pkl"
    assert report["details"]["config"] == "cfgs.pkl" and report["details"]["iteration"] == 1


@pytest.fixture(scope="session")
def short_run(go2_run, tmp_path_factory):
    """The run with 1-second episodes in its cfgs.pkl (51 steps): a user's shorter task, still Go2 walking."""
    from zoo.tasks.cfgs import read_cfgs

    run = tmp_path_factory.mktemp("short") / "logs" / "go2-short"
    shutil.copytree(go2_run, run)
    cfgs = read_cfgs(run / "cfgs.pkl")
    cfgs[0]["episode_length_s"] = 1.0
    (run / "cfgs.pkl").write_bytes(pickle.dumps(cfgs))
    return run


def test_eval_rolls_out_on_the_device_and_same_seed_same_episodes(short_run, tmp_path):
    first = _eval(short_run, tmp_path / "a.json", "--capture-video")
    assert first.exit_code == 0, first.stderr
    a = json.loads((tmp_path / "a.json").read_text())
    assert a["task"] == TASK and a["framework"] == "rsl_rl" and a["device"] == DEVICE
    assert len(a["episodes"]) == 4 and [e["env_index"] for e in a["episodes"]] == [0, 0, 1, 1]
    assert all(1 <= e["length"] <= 51 for e in a["episodes"])  # the run's cfgs.pkl sets the time limit
    # the camera renders env 0: a replay, or one warning saying why not (never a failed eval)
    assert a["videos"] or any("video capture" in w for w in first.stderr.splitlines()), first.stderr
    for video in a["videos"]:
        assert os.path.getsize(video) > 0
    again = _eval(short_run, tmp_path / "b.json")
    assert again.exit_code == 0, again.stderr
    b = json.loads((tmp_path / "b.json").read_text())
    assert [(e["return"], e["length"]) for e in a["episodes"]] == [
        (e["return"], e["length"]) for e in b["episodes"]
    ]


def test_export_records_the_tasks_observation_terms_and_the_file_acts_like_the_checkpoint(
    short_run, tmp_path
):
    out = tmp_path / "policy.onnx"
    exported = zoo("export", short_run, "--out", out, "--quiet")
    assert exported.exit_code == 0, exported.stderr
    meta = json.loads(out.with_name("policy.onnx.metadata.json").read_text())
    assert meta["task"] == TASK and {k: meta["env"][k] for k in ("id", "preset")} == {
        "id": TASK,
        "preset": "tensor",
    }
    assert (
        meta["env"]["cfgs"][0]["episode_length_s"] == 1.0
    )  # the run's config: the file evaluates on the same task
    terms = meta["obs_groups"]["policy"]["terms"]
    assert [t["name"] for t in terms] == [
        "base_ang_vel",
        "projected_gravity",
        "commands",
        "dof_pos",
        "dof_vel",
        "actions",
    ]
    assert [(t["start"], t["dim"]) for t in terms] == [(0, 3), (3, 3), (6, 3), (9, 12), (21, 12), (33, 12)]
    assert terms[0]["scale"] == 0.25 and terms[2]["scale"] == [2.0, 2.0, 0.25] and terms[4]["scale"] == 0.05
    meta["checkpoint"] = "model_1.pt"  # where it was exported from: this machine's temp folder
    assert_golden(meta, "terms.onnx")
    # forward(raw_obs) is the whole contract: the file on raw values acts as the checkpoint on the task's terms
    import numpy as np
    import onnxruntime as ort

    import zoo as api

    raw = np.random.default_rng(0).normal(0, 3, size=(32, 45)).astype(np.float32)
    scale = np.concatenate([np.broadcast_to(np.asarray(t["scale"], np.float32), t["dim"]) for t in terms])
    policy = api.load_policy(short_run)
    want = policy.act({"policy": raw * scale}, None, True)[0]
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(["actions"], {"obs": raw})[0], want, atol=1e-5)
    assert any(
        "joint targets = 0.25 * action + default joint angles, applied one step late" in note
        for note in meta["left_to_caller"]
    )
    checkpoint = _eval(short_run, tmp_path / "ckpt.json", "--device", "cpu")
    from_file = zoo(
        "eval",
        out,
        "--episodes",
        "4",
        "--num-envs",
        "2",
        "--seed",
        "3",
        "--out",
        tmp_path / "f.json",
        "--quiet",
    )
    assert checkpoint.exit_code == 0 and from_file.exit_code == 0, checkpoint.stderr + from_file.stderr
    lengths = [
        [e["length"] for e in json.loads((tmp_path / n).read_text())["episodes"]]
        for n in ("ckpt.json", "f.json")
    ]
    assert lengths[0] == lengths[1]


@pytest.mark.slow
def test_push_then_enjoy_a_genesis_run_on_the_local_hub(short_run, tmp_path):
    """The repo holds what enjoy needs to rebuild the run elsewhere: checkpoints, cfgs.pkl (its 1-second episodes
    too), eval.json, card."""
    from test_hub_roundtrip import _zoo, token_hub

    run = tmp_path / "logs" / "go2-walking"
    shutil.copytree(short_run, run)
    repo = "demo/Genesis-Go2Walking-v0-rsl_ppo-seed1"
    with token_hub(tmp_path) as (server, _log):
        pushed = _zoo(
            "push",
            run,
            "--repo-id",
            repo,
            "--yes",
            "--episodes",
            "2",
            "--stage-dir",
            tmp_path / "stage",
            hub_url=server.url,
            home=tmp_path / "pusher",
        )
        assert pushed.returncode == 0, pushed.stderr
        staged = {p.name for p in (tmp_path / "stage").iterdir()}
        assert {"cfgs.pkl", "model_0.pt", "model_1.pt", "eval.json", "README.md"} <= staged
        card = (tmp_path / "stage" / "README.md").read_text()
        assert TASK in card and "rsl_rl" in card
        fetched = _zoo(
            "enjoy",
            "--exp-name",
            "rsl_ppo",
            "--env-id",
            TASK,
            "--run-seed",
            "1",
            "--hf-repository",
            repo,
            "--runs-dir",
            tmp_path / "none",
            "--allow-download",
            "--episodes",
            "2",
            "--num-envs",
            "2",
            "--device",
            DEVICE,
            "--out",
            tmp_path / "remote.json",
            hub_url=server.url,
            home=tmp_path / "fresh",
        )
    assert fetched.returncode == 0, fetched.stderr
    remote = json.loads((tmp_path / "remote.json").read_text())
    # deterministic on the CPU: the release's framework-free form (model.safetensors) is what enjoy fetched
    assert remote["task"] == TASK and remote["checkpoint"].endswith(
        "model.safetensors" if DEVICE == "cpu" else "model_1.pt"
    )
    assert remote["source"]["kind"] == "download" and remote["device"] == DEVICE
    assert all(e["length"] <= 51 for e in remote["episodes"])  # the downloaded cfgs.pkl set the time limit
    pushed_eval = json.loads((tmp_path / "stage" / "eval.json").read_text())
    if DEVICE == "cpu":  # the push's own evaluation ran on the CPU with seed 0, as this one
        assert [e["return"] for e in remote["episodes"]] == [e["return"] for e in pushed_eval["episodes"]]


def test_without_the_genesis_extra_check_warns_and_eval_says_what_to_install(go2_run, tmp_path, monkeypatch):
    import importlib.util

    from zoo.tasks import genesis as zoo_genesis

    real = importlib.util.find_spec

    def without_genesis(name, *args):
        return None if name == "genesis" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_genesis)
    monkeypatch.setattr(zoo_genesis, "find_spec", without_genesis)
    report = zoo("check", go2_run, "--json", "--no-cache").json()[0]
    assert report["status"] == "warning" and "missing optional extra 'genesis'" in report["reason"]
    result = _eval(go2_run, tmp_path / "e.json")
    assert result.exit_code != 0 and "Traceback" not in result.stderr
    assert "pip install 'rl-zoo-hub[genesis]'" in result.stderr and not (tmp_path / "e.json").exists()


@pytest.fixture(scope="session")
def skrl_go2_run(tmp_path_factory):
    from genesis_helpers import train_skrl_go2_run

    return train_skrl_go2_run(tmp_path_factory.mktemp("skrl-genesis"))


@pytest.mark.slow
def test_an_skrl_policy_trained_on_the_task_evaluates_on_it(skrl_go2_run, tmp_path):
    result = zoo(
        "eval",
        skrl_go2_run,
        "--env-id",
        TASK,
        "--episodes",
        "2",
        "--num-envs",
        "2",
        "--device",
        DEVICE,
        "--out",
        tmp_path / "e.json",
        "--quiet",
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads((tmp_path / "e.json").read_text())
    assert data["framework"] == "skrl" and data["task"] == TASK and len(data["episodes"]) == 2
    assert data["checkpoint"].endswith("agent_48.pt") and all(
        1 <= e["length"] <= 1001 for e in data["episodes"]
    )


def test_device_cuda_without_cuda_is_one_line_before_genesis_starts(go2_run, tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = zoo("eval", go2_run, "--device", "cuda", "--episodes", "2", "--out", tmp_path / "e.json")
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.exit_code != 0 and errors == [
        "error: --device cuda asked for, but no CUDA device is available"
    ]
    assert "hint: use --device cpu" in result.stderr and not (tmp_path / "e.json").exists()


def test_a_watch_keeps_one_scene_and_each_checkpoint_scores_as_a_fresh_eval(short_run, monkeypatch):
    """zoo watch's session builds the Go2 scene once and reseeds it per checkpoint: every evaluation gives the
    episodes a fresh ``zoo eval`` of that checkpoint gives, bit for bit, also after another checkpoint ran."""
    import zoo
    from zoo.eval_session import EvalSession
    from zoo.registry import load_registry
    from zoo.tasks.genesis.go2 import Go2Walking

    fresh = {
        name: zoo.evaluate(
            short_run / name,
            settings=zoo.EvalSettings(episodes=4, num_envs=2, seed=3, deterministic=True, device=DEVICE),
            out=None,
        ).episodes
        for name in ("model_0.pt", "model_1.pt")
    }
    built = []
    real_build = Go2Walking._build_scene
    monkeypatch.setattr(
        Go2Walking, "_build_scene", lambda self, gs: (built.append(1), real_build(self, gs))[1]
    )
    session = EvalSession(load_registry(), episodes=4, num_envs=2, seed=3, device=DEVICE)
    try:
        kept = [
            session.evaluate(short_run / name)[1].episodes
            for name in ("model_0.pt", "model_1.pt", "model_0.pt")
        ]
    finally:
        session.close()
    assert len(built) == 1  # one scene for three evaluations
    assert kept == [fresh["model_0.pt"], fresh["model_1.pt"], fresh["model_0.pt"]]
    assert (
        fresh["model_0.pt"] != fresh["model_1.pt"]
    )  # two policies, two results: the comparison says something
