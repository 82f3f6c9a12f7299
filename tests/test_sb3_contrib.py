"""sb3-contrib models: read without unpickling code, evaluated exactly as the library's own eval loop.

Every model is trained for a few hundred steps by the real sb3-contrib and saved with its own
``save``. The library side of each parity check is ``{Algo}.load`` + SB3's ``evaluate_policy``
(sb3-contrib's own for MaskablePPO, with the env's action masks) on a DummyVecEnv of the same
seeded envs: that loop carries RecurrentPPO's ``state`` and ``episode_start`` itself, so zoo's
recurrent state handling is compared with the library's, not with a copy of it. Returns are
compared as Monitor reports them (rounded to 6 decimals), lengths exactly, env by env.
"""

from __future__ import annotations

import base64
import json
import pickle
from pathlib import Path

import masked_env  # noqa: F401  (examples/masked_env.py: registers ZooSB3Masked-v0 and ZooSB3Unmasked-v0)
import numpy as np
import pytest
import torch
from helpers import assert_exports_act_like_checkpoint, zoo
from test_sb3 import EPISODES, NUM_ENVS, SEED, _check, _rewrite, _same, _zoo_episodes

import zoo as zoo_api
from zoo.envs import EnvSpec, make_vector_env
from zoo.evaluator import rollout, single_cpu_thread

#: (file in the fixture tree, algorithm, env id, continuous actions)
MODELS = [
    ("hub/qrdqn-CartPole-v1.zip", "QRDQN", "CartPole-v1", False),
    ("logs/tqc/Pendulum-v1_1/Pendulum-v1.zip", "TQC", "Pendulum-v1", True),
    ("hub/trpo-CartPole-v1.zip", "TRPO", "CartPole-v1", False),
    ("hub/ars-Pendulum-v1.zip", "ARS", "Pendulum-v1", True),  # ARS's LinearPolicy
    ("ars_mlp/CartPole-v1.zip", "ARS", "CartPole-v1", False),  # ARS's MlpPolicy, a neutral name
    ("hub/crossq-Pendulum-v1.zip", "CrossQ", "Pendulum-v1", True),
    ("logs/ppo_lstm/CartPole-v1_1/CartPole-v1.zip", "RecurrentPPO", "CartPole-v1", False),
    ("shared_lstm/ppo_lstm-CartPole-v1.zip", "RecurrentPPO", "CartPole-v1", False),  # one LSTM, 2 layers
    ("hub/ppo_lstm-Pendulum-v1.zip", "RecurrentPPO", "Pendulum-v1", True),
    ("hub/ppo_mask-ZooSB3Masked-v0.zip", "MaskablePPO", "ZooSB3Masked-v0", False),
]
IDS = [relpath for relpath, *_ in MODELS]
LSTM = "logs/ppo_lstm/CartPole-v1_1/CartPole-v1.zip"
MASKED = "hub/ppo_mask-ZooSB3Masked-v0.zip"


@pytest.fixture(scope="session")
def contrib_models(tmp_path_factory):
    """Real sb3-contrib models, trained briefly, in the layouts users have (hub names, rl_zoo3, lone zips)."""
    from sb3_contrib import ARS, QRDQN, TQC, TRPO, CrossQ, MaskablePPO, RecurrentPPO

    root = tmp_path_factory.mktemp("sb3_contrib")
    for relpath in IDS:
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)  # SB3's save warns when it has to
    off_policy = {"learning_starts": 100, "batch_size": 64, "seed": 0}
    on_policy = {"n_steps": 64, "batch_size": 64, "n_epochs": 2, "seed": 0}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        QRDQN("MlpPolicy", "CartPole-v1", **off_policy).learn(300).save(root / IDS[0])
        TQC("MlpPolicy", "Pendulum-v1", **off_policy).learn(150).save(root / IDS[1])
        TRPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64, seed=0).learn(128).save(root / IDS[2])
        ARS("LinearPolicy", "Pendulum-v1", n_delta=2, seed=0).learn(800).save(root / IDS[3])
        ARS("MlpPolicy", "CartPole-v1", n_delta=2, seed=0).learn(200).save(root / IDS[4])
        CrossQ("MlpPolicy", "Pendulum-v1", **off_policy).learn(150).save(root / IDS[5])
        RecurrentPPO("MlpLstmPolicy", "CartPole-v1", **on_policy).learn(256).save(root / IDS[6])
        shared = {
            "shared_lstm": True,
            "enable_critic_lstm": False,
            "n_lstm_layers": 2,
            "lstm_hidden_size": 32,
        }
        RecurrentPPO("MlpLstmPolicy", "CartPole-v1", policy_kwargs=shared, **on_policy).learn(128).save(
            root / IDS[7]
        )
        RecurrentPPO("MlpLstmPolicy", "Pendulum-v1", **on_policy).learn(128).save(root / IDS[8])
        MaskablePPO("MlpPolicy", "ZooSB3Masked-v0", **on_policy).learn(256).save(root / IDS[9])
    finally:
        torch.set_num_threads(threads)
    return root


def _library_episodes(model_file: Path, algo: str, env_id: str, use_masking: bool = True):
    """The library's own load + ``evaluate_policy`` on a seeded DummyVecEnv: (env index, return, length)."""
    import sb3_contrib
    from stable_baselines3.common.env_util import make_vec_env

    if algo == "MaskablePPO":
        from sb3_contrib.common.maskable.evaluation import evaluate_policy

        options = {"use_masking": use_masking}
    else:
        from stable_baselines3.common.evaluation import evaluate_policy

        options = {}
    model = getattr(sb3_contrib, algo).load(model_file, device="cpu")
    venv = make_vec_env(env_id, n_envs=NUM_ENVS, seed=SEED)
    found = []

    def record(local: dict, _globals: dict) -> None:
        if local["done"]:
            episode = local["info"]["episode"]
            found.append((int(local["i"]), float(episode["r"]), int(episode["l"])))

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        evaluate_policy(model, venv, EPISODES, deterministic=True, callback=record, **options)
    finally:
        torch.set_num_threads(threads)
        venv.close()
    return sorted(found, key=lambda episode: episode[0])  # stable: each env's episodes in their order


def _rounded(episodes):
    """Returns as Monitor reports them (``round(r, 6)``)."""
    return [(i, round(r, 6), length) for i, r, length in episodes]


def _zoo_rollout(policy, env_id: str):
    """zoo's rollout with a policy object (as ``zoo eval`` builds it, perhaps altered by a test)."""
    envs = make_vector_env(EnvSpec(env_id), NUM_ENVS)
    try:
        with single_cpu_thread("cpu"):
            return [(e.env_index, e.return_, e.length) for e in rollout(policy, envs, EPISODES, SEED, True)]
    finally:
        envs.close()


# ----------------------------------------------------------------------------- check
def test_check_names_every_algorithm_from_the_zip_and_its_layout(contrib_models):
    reports = {
        str(Path(r["run"]["model_file"]).relative_to(contrib_models)): r
        for r in zoo("check", contrib_models, "--json").json()
    }
    assert set(reports) == set(IDS)
    policy_classes = {
        "QRDQN": "sb3_contrib.qrdqn.policies.QRDQNPolicy",
        "TQC": "sb3_contrib.tqc.policies.TQCPolicy",
        "TRPO": "stable_baselines3.common.policies.ActorCriticPolicy",
        "CrossQ": "sb3_contrib.crossq.policies.CrossQPolicy",
        "RecurrentPPO": "sb3_contrib.common.recurrent.policies.RecurrentActorCriticPolicy",
        "MaskablePPO": "sb3_contrib.common.maskable.policies.MaskableActorCriticPolicy",
    }
    names = {"RecurrentPPO": "ppo_lstm", "MaskablePPO": "ppo_mask"}
    for relpath, algo, env_id, _ in MODELS:
        r = reports[relpath]
        assert r["status"] == "ok" and r["reason"] == "ready to evaluate", r
        assert r["run"]["exp_name"] == f"sb3_{names.get(algo, algo.lower())}" and r["run"]["env_id"] == env_id
        assert r["details"]["algorithm"] == algo
        if algo in policy_classes:
            assert r["details"]["policy_class"] == policy_classes[algo]
    assert reports[IDS[3]]["details"]["policy_class"] == "sb3_contrib.ars.policies.ARSLinearPolicy"
    assert reports[IDS[4]]["details"]["policy_class"] == "sb3_contrib.ars.policies.ARSPolicy"
    assert reports[LSTM]["run"]["run_name"] == "CartPole-v1_1"


# ----------------------------------------------------------------------------- eval parity
@pytest.mark.parametrize(("relpath", "algo", "env_id", "continuous"), MODELS, ids=IDS)
def test_eval_matches_the_library_episode_for_episode(contrib_models, relpath, algo, env_id, continuous):
    data, ours = _zoo_episodes(contrib_models / relpath)
    theirs = _library_episodes(contrib_models / relpath, algo, env_id)
    assert len(theirs) == EPISODES and _rounded(ours) == theirs
    assert data["task"] == env_id and data["exp_name"].startswith("sb3_")


@pytest.mark.parametrize(
    "broken", ["never reset", "reset every step"], ids=["state kept across episodes", "no state at all"]
)
def test_recurrent_parity_needs_both_the_carried_state_and_its_reset(contrib_models, broken):
    """The parity above is not luck: a policy that drops the reset, or the state, scores differently.

    On Pendulum (continuous actions, 200-step episodes) any change of the state moves the actions."""
    policy = zoo_api.load_policy(contrib_models / IDS[8])
    if broken == "never reset":
        policy.reset = lambda done_mask: None
    else:
        act = policy.act

        def forgetful(obs, state=None, deterministic=True):
            policy.reset(np.ones(len(obs), dtype=bool))
            return act(obs, state, deterministic)

        policy.act = forgetful
    theirs = _library_episodes(contrib_models / IDS[8], "RecurrentPPO", "Pendulum-v1")
    assert _rounded(_zoo_rollout(policy, "Pendulum-v1")) != theirs


def test_maskable_parity_needs_the_env_masks(contrib_models):
    model = contrib_models / MASKED
    masked = _library_episodes(model, "MaskablePPO", "ZooSB3Masked-v0")
    unmasked = _library_episodes(model, "MaskablePPO", "ZooSB3Masked-v0", use_masking=False)
    assert masked != unmasked  # the masks change what this model does
    policy = zoo_api.load_policy(model)
    assert policy.uses_action_masks and _rounded(_zoo_rollout(policy, "ZooSB3Masked-v0")) == masked
    policy.uses_action_masks = False  # the evaluator then hands over no masks
    assert _rounded(_zoo_rollout(policy, "ZooSB3Masked-v0")) == unmasked


@pytest.mark.parametrize(
    "relpath", [IDS[0], IDS[1], LSTM, MASKED], ids=["QRDQN", "TQC", "RecurrentPPO", "MaskablePPO"]
)
def test_stochastic_eval_is_seeded(contrib_models, relpath):
    """Epsilon-greedy (QR-DQN) or sampled (the rest) from the policy's own seeded generators."""
    target = contrib_models / relpath
    runs = [
        zoo(
            "eval",
            target,
            "--quiet",
            "--json",
            "-n",
            "4",
            "--stochastic",
            "--seed",
            "1",
            "--out",
            target.parent / "s.json",
        )
        for _ in range(2)
    ]
    assert runs[0].exit_code == 0, runs[0].stderr
    first, again = ([(e["return"], e["length"]) for e in r.json()["episodes"]] for r in runs)
    assert runs[0].json()["deterministic"] is False and first == again
    _, deterministic = _zoo_episodes(target, episodes=4)
    assert [(r, length) for _, r, length in deterministic] != first


# ----------------------------------------------------------------------------- export
#: Every model but MaskablePPO's (its file takes no mask, see below) and the default-sized CartPole LSTM
#: (the Pendulum one has the same LSTM; each recurrent export is the slow one).
EXPORTED = [model for model in MODELS if model[0] not in (LSTM, MASKED)]


@pytest.mark.parametrize(("relpath", "algo", "env_id", "continuous"), EXPORTED, ids=[m[0] for m in EXPORTED])
def test_exports_score_like_the_checkpoint_episode_for_episode(
    contrib_models, tmp_path, relpath, algo, env_id, continuous
):
    sidecars = assert_exports_act_like_checkpoint(
        contrib_models / relpath, tmp_path, episodes=4, num_envs=2, continuous=continuous
    )
    for meta in sidecars.values():
        assert meta["framework"] == "sb3" and meta["task"] == env_id
        assert meta["is_recurrent"] is (algo == "RecurrentPPO")
    if algo == "RecurrentPPO":
        recurrent = sidecars["onnx"]["recurrent"]
        layers, hidden = (2, 32) if relpath.startswith("shared") else (1, 256)
        assert (recurrent["rnn_type"], recurrent["rnn_num_layers"], recurrent["rnn_hidden_dim"]) == (
            "lstm",
            layers,
            hidden,
        )
        assert recurrent["inputs"] == ["obs", "h_in", "c_in"]
        assert sidecars["onnx"]["baked"][0] == f"actor LSTM x{layers} (hidden {hidden})"
        assert any("episode starts" in line for line in sidecars["onnx"]["left_to_caller"])


def test_recurrent_export_module_steps_like_the_library(contrib_models):
    """The exported core, fed its own states back, gives ``model.predict(obs, state, episode_start)``."""
    from sb3_contrib import RecurrentPPO

    model = RecurrentPPO.load(contrib_models / IDS[8], device="cpu")
    spec = zoo_api.load_policy(contrib_models / IDS[8]).export_spec()
    rng = np.random.default_rng(0)
    state, h, c = None, torch.zeros(1, 16, 256), torch.zeros(1, 16, 256)
    for step in range(5):
        obs = rng.uniform(-1, 1, (16, 3)).astype(np.float32)
        starts = np.full(16, step == 0)
        want, state = model.predict(obs, state=state, episode_start=starts, deterministic=True)
        with torch.no_grad():
            got, h, c = spec.module(torch.from_numpy(obs), h, c)
        _same(got.numpy(), want, 1e-6)
        np.testing.assert_allclose(h.numpy(), state[0], atol=1e-6)


def test_maskable_export_takes_no_mask_and_says_so(contrib_models, tmp_path):
    """The file is MaskablePPO's ``predict(obs)`` without masks; the sidecar leaves the masks to the caller."""
    from sb3_contrib import MaskablePPO

    target = contrib_models / MASKED
    model = MaskablePPO.load(target, device="cpu")
    obs = np.arange(6)
    want = model.predict(obs, deterministic=True)[0]
    for suffix in (".ts", ".onnx"):
        out = tmp_path / f"policy{suffix}"
        result = zoo("export", target, "--out", out, "-q")
        assert result.exit_code == 0, result.stderr
        meta = json.loads((tmp_path / f"policy{suffix}.metadata.json").read_text())
        assert any(line.startswith("action masks are not applied") for line in meta["left_to_caller"])
        exported = zoo_api.load_policy(out)
        assert np.array_equal(exported.act(obs)[0], want)


# ----------------------------------------------------------------------------- refusals
def test_an_env_without_masks_is_one_error_line(contrib_models):
    result = zoo("eval", contrib_models / MASKED, "--quiet", "--env-id", "ZooSB3Unmasked-v0", "-n", "2")
    assert result.exit_code == 1 and result.stderr.count("error:") == 1 and "Traceback" not in result.stderr
    assert "the policy acts on action masks, but the env has no action_masks() method" in result.stderr


def test_wrong_exp_name_names_rl_zoo3s_entry(contrib_models):
    result = zoo("eval", contrib_models / LSTM, "--quiet", "--exp-name", "sb3_ppo")
    assert result.exit_code == 1 and "holds an SB3 RecurrentPPO model, sb3_ppo is PPO" in result.stderr
    assert "--exp-name sb3_ppo_lstm" in result.stderr and "Traceback" not in result.stderr


def test_without_sb3_contrib_check_warns_and_eval_stops(contrib_models, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sb3_contrib" else find_spec(name, *a)
    )
    report = _check(contrib_models / IDS[0])
    assert (
        report["status"] == "warning"
        and report["reason"] == "QRDQN models need sb3-contrib, which is not installed"
    )
    assert "rl-zoo-hub[sb3]" in report["hint"]
    result = zoo("eval", contrib_models / IDS[0], "--quiet", "-n", "1")
    assert result.exit_code != 0 and result.stderr.count("error:") == 1 and "Traceback" not in result.stderr
    assert "QRDQN models need sb3-contrib" in result.stderr


def test_a_contrib_class_off_the_allowlist_is_refused(contrib_models, tmp_path):
    """Only sb3-contrib's policy classes are allowed: a layer class in ``policy_class`` is refused, unbuilt."""
    from sb3_contrib.common.torch_layers import BatchRenorm1d

    def plant(data):
        data["policy_class"][":serialized:"] = base64.b64encode(pickle.dumps(BatchRenorm1d)).decode()

    planted = _rewrite(contrib_models / IDS[5], tmp_path / "crossq-Pendulum-v1.zip", plant)
    report = _check(planted)
    assert report["status"] == "error" and "sb3_contrib.common.torch_layers.BatchRenorm1d" in report["reason"]
    result = zoo("eval", planted, "--quiet", "-n", "1")
    assert result.exit_code == 3 and result.stderr.count("error:") == 1 and "Traceback" not in result.stderr


def test_what_sb3_contrib_saves_passes_the_checks_for_downloaders(contrib_models):
    """Every algorithm's real save: every ``:serialized:`` value is on the allowlist (ARS's pickled weights
    tensor included, its storage verified as weights-only), and the state dicts are the algorithm's."""
    import zipfile

    from zoo.frameworks.sb3.archive import read_archive
    from zoo.frameworks.sb3.own_load import VARIABLES, findings, state_dicts

    for relpath in IDS:
        archive = read_archive(contrib_models / relpath)
        assert findings(archive) == [], relpath
        saved = {
            n.removesuffix(".pth") for n in zipfile.ZipFile(archive.path).namelist() if n.endswith(".pth")
        }
        assert state_dicts(archive) == saved - {v.removesuffix(".pth") for v in VARIABLES}, relpath
    ars = read_archive(contrib_models / "hub/ars-Pendulum-v1.zip")
    assert "torch.storage" in base64.b64decode(ars.data["weights"][":serialized:"]).decode("latin-1")


def test_a_weights_tensor_whose_storage_runs_code_is_an_error_and_ars_load_runs_it(contrib_models, tmp_path):
    """ARS pickles its weights tensor; the storage inside is unpickled by torch.load(weights_only=False)."""
    import contextlib
    import io

    import cloudpickle
    from helpers import Canary
    from sb3_contrib import ARS

    canary = tmp_path / "canary"
    legacy = io.BytesIO()  # the format a storage pickles itself in, holding code instead of a storage
    torch.save(Canary(canary), legacy, _use_new_zipfile_serialization=False)

    class Storage:  # what a torch storage pickles to
        def __reduce__(self):
            return torch.storage._load_from_bytes, (legacy.getvalue(),)

    payload = base64.b64encode(cloudpickle.dumps(Storage())).decode()
    planted = _rewrite(
        contrib_models / "hub/ars-Pendulum-v1.zip",
        tmp_path / "hub" / "ars-Pendulum-v1.zip",
        lambda data: data["weights"].update({":serialized:": payload}),
    )
    report = _check(planted)
    assert report["status"] == "error" and report["reason"] == (
        "ars-Pendulum-v1.zip: data['weights'] holds a tensor that torch.load(weights_only=False) reads from a "
        "file zoo cannot verify (posix.system)"
    ), report
    assert not canary.exists()
    with contextlib.suppress(Exception):  # whatever ARS makes of the value, the code has run by then
        ARS.load(planted)
    assert canary.exists()
