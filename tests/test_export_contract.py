"""The deployment contract of an exported policy (DESIGN section 5), item by item.

- a golden sidecar per policy kind (MLP, recurrent, goal-conditioned Dict; the term-structured task's is in
  tests/test_genesis_eval.py), each checked key by key (tests/export_contract.py);
- goal-conditioned observations laid out as observation, achieved_goal, desired_goal: a deployment that slices
  the flat input by that order alone acts like the checkpoint;
- observation terms' scale and clip applied inside the file: it takes raw observations;
- readers take the forms zoo wrote before (alphabetical Dict layout, ``{low, high}``, ``num_layers``): files
  exported before (tests/data/exported_before/, made by zoo at b47236e) keep evaluating.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import test_sb3  # noqa: F401 - registers ZooSB3Goal-v0, the goal-conditioned env
from export_contract import assert_golden, problems
from helpers import EXAMPLES, assert_exports_act_like_checkpoint, episodes_of, zoo

BEFORE = Path(__file__).resolve().parent / "data" / "exported_before"
TD3 = next(p for p in EXAMPLES.iterdir() if "td3_continuous_action" in p.name)
GOAL_ORDER = ("observation", "achieved_goal", "desired_goal")


def _export(target: Path, out: Path, *args: str) -> dict:
    done = zoo("export", target, "--out", out, "-q", *args)
    assert done.exit_code == 0, done.stderr
    return json.loads(out.with_name(out.name + ".metadata.json").read_text())


@pytest.mark.parametrize(
    ("kind", "target"),
    [
        ("mlp", TD3),
        ("recurrent", BEFORE / "ppo_lstm-Pendulum-v1.zip"),
        ("goal", BEFORE / "sac-ZooSB3Goal-v0.zip"),
    ],
)
def test_golden_sidecar_of_each_kind_follows_the_contract_key_by_key(kind, target, tmp_path):
    for suffix in (".onnx", ".ts"):
        meta = _export(target, tmp_path / f"policy{suffix}")
        meta["checkpoint"] = target.name  # where it was exported from: this checkout's path
        assert_golden(meta, f"{kind}{suffix}")


def test_the_contract_checker_finds_each_departure():
    """The checker the golden tests rely on is not blind: each pre-contract form is a finding."""
    meta = json.loads((BEFORE / "ppo_lstm-Pendulum-v1.onnx.metadata.json").read_text())
    found = " ".join(problems(meta))
    for departure in (
        "keys: missing ['obs_terms_baked']",
        "terms cover 0 of 3",
        "not [low, high]",
        "num_layers",
    ):
        assert departure in found, found
    goal = json.loads((BEFORE / "sac-ZooSB3Goal-v0.onnx.metadata.json").read_text())
    assert any("action_range" in p for p in problems(goal))


def _deploy(onnx_file: Path, obs: dict) -> np.ndarray:
    """A robot-side integration written to the contract alone: no zoo, no sidecar layout read, the goal keys
    concatenated in the contract's order."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    flat = np.concatenate([np.asarray(obs[key], np.float32).reshape(1, -1) for key in GOAL_ORDER], axis=1)
    return session.run(["actions"], {"obs": flat})[0][0]


@pytest.fixture(scope="module")
def goal_runs(tmp_path_factory):
    """SAC + HER (the exported-before checkpoint) and sb3-contrib's TQC + HER, trained briefly here."""
    import torch
    from sb3_contrib import TQC
    from stable_baselines3 import HerReplayBuffer

    root = tmp_path_factory.mktemp("goal")
    shutil.copy(BEFORE / "sac-ZooSB3Goal-v0.zip", root / "sac-ZooSB3Goal-v0.zip")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        her = {"replay_buffer_class": HerReplayBuffer, "replay_buffer_kwargs": {"n_sampled_goal": 2}}
        tqc = TQC("MultiInputPolicy", "ZooSB3Goal-v0", learning_starts=64, seed=0, **her)
        tqc.learn(150).save(root / "tqc-ZooSB3Goal-v0.zip")
    finally:
        torch.set_num_threads(threads)
    return root


@pytest.mark.parametrize(
    ("name", "algo"), [("sac-ZooSB3Goal-v0.zip", "SAC"), ("tqc-ZooSB3Goal-v0.zip", "TQC")]
)
def test_goal_conditioned_export_deploys_by_the_contract_order_alone(goal_runs, name, algo, tmp_path):
    import gymnasium as gym
    import sb3_contrib
    import stable_baselines3

    meta = _export(goal_runs / name, tmp_path / "policy.onnx")
    assert [(k, g["start"], g["dim"]) for k, g in meta["obs_groups"].items()] == [
        ("observation", 0, 2),
        ("achieved_goal", 2, 2),
        ("desired_goal", 4, 2),
    ]
    env = gym.make("ZooSB3Goal-v0")
    library = stable_baselines3 if algo == "SAC" else sb3_contrib
    model = getattr(library, algo).load(goal_runs / name, env=env, device="cpu")  # HER's buffer needs the env
    returns = {"deployed": [], "checkpoint": []}
    for who in returns:
        for seed in range(3):
            obs, _ = env.reset(seed=seed)
            total, done = 0.0, False
            while not done:
                if who == "deployed":
                    action = _deploy(tmp_path / "policy.onnx", obs)
                    np.testing.assert_allclose(action, model.predict(obs, deterministic=True)[0], atol=1e-5)
                else:
                    action = model.predict(obs, deterministic=True)[0]
                obs, reward, terminated, truncated, _ = env.step(action)
                total, done = total + reward, terminated or truncated
            returns[who].append(total)
    np.testing.assert_allclose(returns["deployed"], returns["checkpoint"], rtol=1e-5)


def test_goal_conditioned_export_evaluates_like_the_checkpoint_in_every_form(goal_runs, tmp_path):
    """zoo eval of the exported files (ONNX, TorchScript) and of the release forms equals the checkpoint's."""
    sidecars = assert_exports_act_like_checkpoint(
        goal_runs / "sac-ZooSB3Goal-v0.zip", tmp_path, continuous=True
    )
    assert all(list(meta["obs_groups"]) == list(GOAL_ORDER) for meta in sidecars.values())


@pytest.mark.parametrize("name", ["sac-ZooSB3Goal-v0", "ppo_lstm-Pendulum-v1"])
@pytest.mark.parametrize("suffix", [".onnx", ".ts"])
def test_files_exported_before_keep_evaluating_by_their_own_sidecar(name, suffix, tmp_path):
    """Alphabetical goal keys, ``{low, high}`` and ``num_layers``/``hidden_dim``: read as written, the same
    episodes as the checkpoint they came from."""
    common = ("-n", "4", "--num-envs", "2", "--seed", "3", "-q")
    ref = zoo("eval", BEFORE / f"{name}.zip", "--deterministic", *common, "--out", tmp_path / "ref.json")
    old = zoo("eval", BEFORE / f"{name}{suffix}", *common, "--out", tmp_path / "old.json")
    assert ref.exit_code == 0 and old.exit_code == 0, ref.stderr + old.stderr
    np.testing.assert_allclose(
        [r for r, _ in episodes_of(tmp_path / "old.json")],
        [r for r, _ in episodes_of(tmp_path / "ref.json")],
        rtol=1e-5,
    )
    assert [n for _, n in episodes_of(tmp_path / "old.json")] == [
        n for _, n in episodes_of(tmp_path / "ref.json")
    ]


def test_observation_terms_are_applied_inside_the_file(tmp_path):
    """A task's terms (here declared for Pendulum's cos, sin and velocity): the file takes raw values and acts as
    the policy does on ``clip(raw * scale)``; the sidecar lists them and says so; parity was proven on raw input."""
    import onnxruntime as ort

    import zoo as api
    from zoo.exporter import export_policy
    from zoo.tensor_env import terms_of

    target = api.resolve(TD3)
    policy = api.load_policy(target)
    terms = {"obs": terms_of(("cos_sin", 2, (2.0, 3.0), 1.5), ("velocity", 1, 0.1, None))}
    facts = {"task": "Pendulum-v1", "env": {"id": "Pendulum-v1"}, "framework": "cleanrl"}
    result = export_policy(
        policy, target=facts, preset_notes=[], fmt="onnx", out=tmp_path / "p.onnx", obs_terms=terms
    )
    group = result.meta["obs_groups"]["obs"]
    assert [(t["name"], t["start"], t["dim"], t["scale"], t["clip"]) for t in group["terms"]] == [
        ("cos_sin", 0, 2, [2.0, 3.0], 1.5),
        ("velocity", 2, 1, 0.1, None),
    ]
    assert result.meta["obs_terms_baked"] is True and result.meta["baked"][0].startswith(
        "observation terms first"
    )
    assert result.meta["parity"]["max_abs_diff"] <= 1e-5
    raw = np.random.default_rng(0).normal(0, 2, size=(64, 3)).astype(np.float32)
    task_obs = raw * np.array([2.0, 3.0, 0.1], np.float32)
    task_obs[:, :2] = np.clip(task_obs[:, :2], -1.5, 1.5)
    session = ort.InferenceSession(str(tmp_path / "p.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(["actions"], {"obs": raw})[0]
    np.testing.assert_allclose(got, policy.act(task_obs, None, True)[0], atol=1e-5)
    again = session.run(["actions"], {"obs": raw})[0]
    assert np.array_equal(got, again)  # no observation noise: the same raw input, the same actions


def test_readers_take_the_contract_forms_and_the_earlier_ones():
    from zoo.errors import BrokenFile
    from zoo.exporter.obs import key_order
    from zoo.exporter.sidecar import contract_range, read_range, rnn_sizes

    assert contract_range(np.full(3, -1.0), np.full(3, 1.0)) == [-1.0, 1.0]
    assert contract_range(np.array([-1.0, -2.0]), np.array([1.0, 1.0])) == [[-1.0, -2.0], 1.0]
    assert contract_range(np.array([-np.inf]), np.array([np.inf])) == [None, None]
    assert read_range({"low": [-2.0, -2.0], "high": [2.0, 2.0]}) == read_range([-2.0, 2.0]) == [-2.0, 2.0]
    assert read_range({"low": 0, "high": 4}) == [0, 4] and read_range("[-1, 1]") is None
    assert rnn_sizes({"num_layers": 2, "hidden_dim": 16}) == rnn_sizes(
        {"rnn_num_layers": 2, "rnn_hidden_dim": 16}
    )
    for hostile in (
        {"rnn_num_layers": 10**9, "rnn_hidden_dim": 16},
        {"rnn_num_layers": 1, "rnn_hidden_dim": "16"},
        {},
    ):
        with pytest.raises(BrokenFile):
            rnn_sizes(hostile)
    assert key_order(["achieved_goal", "desired_goal", "extra", "observation"]) == [*GOAL_ORDER, "extra"]
    assert key_order(["b", "a"]) == ["b", "a"]  # any other Dict: the space's own order (gymnasium's: sorted)


def test_a_sidecar_whose_terms_or_size_are_hostile_is_one_clear_error(tmp_path):
    out = tmp_path / "p.onnx"
    meta = _export(TD3, out)
    side = out.with_name("p.onnx.metadata.json")
    meta["obs_groups"]["obs"]["terms"][0]["scale"] = [1.0] * 7  # 7 scales for 3 values
    side.write_text(json.dumps(meta))
    bad = zoo("eval", out, "-n", "1", "-q")
    assert bad.exit_code == 1 and "observation terms do not fit" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) <= 2 and "Traceback" not in bad.stderr
    side.write_text(json.dumps(meta) + " " * (17 << 20))
    huge = zoo("eval", out, "-n", "1", "-q")
    assert huge.exit_code == 1 and "not reading it" in huge.stderr


def test_a_release_described_in_the_earlier_keys_keeps_evaluating(tmp_path):
    """A recurrent release whose config.json says ``num_layers``/``hidden_dim``/``state_shape`` and ``{low, high}``
    (as every release before the contract's keys did) plays the same episodes as one in the contract's keys."""
    from zoo import api
    from zoo.release.forms import forms_for_target

    new = tmp_path / "new"
    forms_for_target(api.resolve(BEFORE / "ppo_lstm-Pendulum-v1.zip"), new)
    old = tmp_path / "old"
    shutil.copytree(new, old)
    config = json.loads((old / "config.json").read_text())
    rec = config["recurrent"]
    layers, hidden = rec.pop("rnn_num_layers"), rec.pop("rnn_hidden_dim")
    rec.pop("state_shapes")
    rec.update(num_layers=layers, hidden_dim=hidden, state_shape=[layers, "batch", hidden])
    config["action_range"] = {"low": [-2.0], "high": [2.0]}
    (old / "config.json").write_text(json.dumps(config))
    common = ("--deterministic", "-n", "3", "--num-envs", "2", "--seed", "1", "-q")
    for folder in (new, old):
        done = zoo("eval", folder, *common, "--out", tmp_path / f"{folder.name}.json")
        assert done.exit_code == 0, done.stderr
    assert episodes_of(tmp_path / "old.json") == episodes_of(tmp_path / "new.json")
