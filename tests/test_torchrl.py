"""TorchRL adapter: runs TorchRL itself wrote, checked and evaluated by zoo, compared with TorchRL's own inference.

The session fixture trains TorchRL 0.14.1 in its trainer venv (tests/trainers/torchrl_train.py: DQN on
CartPole-v1 saving ``torchrl.checkpoint``s, a ``CheckpointRotation`` and the final archive; PPO on Pendulum-v1
saving ``save_render_checkpoint``'s payload with its frozen VecNorm statistics, and the plain state dict), then
records TorchRL's own deterministic actions and episodes (tests/trainers/torchrl_reference.py: the modules rebuilt
as training built them, ``set_exploration_type(ExplorationType.DETERMINISTIC)``, one gymnasium episode per seed).
zoo reads the files without TorchRL; its actions and episodes must be TorchRL's.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from helpers import Canary, assert_exports_act_like_checkpoint, zoo
from trainer_venvs import run_trainer

SEEDS = (0, 1, 2, 3)
DQN_CONFIG = "algorithm: dqn\nhead: qvalue\nnum_cells: [120, 84]\nactivation: relu\n"
PPO_CONFIG = (
    "algorithm: ppo\nhead: tanh_normal\nnum_cells: [64, 64]\nactivation: tanh\ntanh_loc: false\n"
    "observation_norm: checkpoint\nobservation_clip: [-10, 10]\n"
)
#: sota-implementations/sac's actor: MLP(ReLU) -> NormalParamExtractor -> TanhNormal (no observation transform).
SAC_CONFIG = "algorithm: sac\nhead: tanh_normal\nnum_cells: [64, 64]\nactivation: relu\n"
DATA = Path(__file__).parent / "data" / "trainer_runs" / "torchrl"


@pytest.fixture(scope="session")
def torchrl_runs(tmp_path_factory):
    """``{root, dqn, ppo, plain, ref_dqn, ref_ppo}``: TorchRL's runs (with the users' model configs) and TorchRL's
    own episodes on seeds 0-3 of the final DQN rotation checkpoint and the PPO render checkpoint."""
    root = tmp_path_factory.mktemp("torchrl")
    for algo in ("dqn", "ppo", "sac"):
        run_trainer("torchrl", "torchrl_train.py", algo, root / algo, cwd=root)
    (root / "dqn" / "torchrl_policy.yaml").write_text(DQN_CONFIG)
    (root / "ppo" / "torchrl_policy.yaml").write_text(PPO_CONFIG)
    (root / "sac" / "torchrl_policy.yaml").write_text(SAC_CONFIG)
    shutil.move(root / "ppo" / "unified", root / "ppo_unified")  # a run of its own
    (root / "ppo_unified" / "torchrl_policy.yaml").write_text(PPO_CONFIG)
    final = root / "dqn" / "checkpoints" / "checkpoint-000000000400"
    refs = {}
    for algo, checkpoint in (
        ("dqn", final),
        ("ppo", root / "ppo" / "ppo_ckpt.pt"),
        ("sac", root / "sac" / "sac_ckpt"),
    ):
        out = root / f"ref_{algo}.json"
        run_trainer("torchrl", "torchrl_reference.py", algo, checkpoint, out, *SEEDS, cwd=root)
        refs[algo] = json.loads(out.read_text())
    return {
        "root": root,
        "dqn": root / "dqn",
        "rotation": root / "dqn" / "checkpoints",
        "ppo": root / "ppo",
        "plain": root / "ppo" / "plain" / "policy_state_dict.pt",
        "ref_dqn": refs["dqn"],
        "ref_ppo": refs["ppo"],
        "sac": root / "sac",
        "ref_sac": refs["sac"],
    }


def _check(path, *args) -> dict[str, dict]:
    result = zoo("check", path, "--json", *args)
    return {str(Path(r["run"]["path"]).relative_to(path)): r for r in result.json()}


def _eval(target, out: Path, *args, num_envs: int = len(SEEDS), episodes: int = len(SEEDS)) -> list[tuple]:
    result = zoo(
        "eval",
        target,
        "--deterministic",
        "-q",
        "-n",
        episodes,
        "--num-envs",
        num_envs,
        "--seed",
        0,
        "--out",
        out,
        *args,
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["framework"] == "torchrl"
    return [(e["return"], e["length"]) for e in data["episodes"]]


def _reference(ref: dict) -> list[tuple]:
    return [(e["return"], e["length"]) for e in ref["episodes"]]


def _policy(target: Path, *, model_config: Path | None = None, env_id: str | None = None, exp_name=None):
    from zoo.frameworks import get_adapter
    from zoo.frameworks.base import LoadOptions
    from zoo.registry import load_registry

    adapter = get_adapter("torchrl")
    if target.is_file() and exp_name:
        from zoo.artifacts.runs import Run

        run = Run("torchrl", target, model_file=target, exp_name=exp_name)
    else:
        run = adapter.identify(next(iter(adapter.discover(target))))
    entry = load_registry().get(exp_name or run.exp_name)
    options = LoadOptions(model_config=model_config)
    return adapter.load_policy(adapter.read(run, entry), entry, env_id or run.env_id, options)


def test_check_reads_each_layout_with_its_algorithm_env_and_checkpoint(torchrl_runs):
    reports = _check(torchrl_runs["root"])
    assert sorted(reports) == ["dqn", "dqn/checkpoints", "ppo", "ppo_unified", "sac"], reports
    assert reports["sac"]["status"] == "ok" and reports["sac"]["details"]["algorithm"] == "SAC"
    archive, rotation, ppo = reports["dqn"], reports["dqn/checkpoints"], reports["ppo"]
    for report in (archive, rotation, ppo):
        assert report["status"] == "ok", report
    assert archive["details"]["format"] == "torchrl-checkpoint (archive)"
    assert archive["run"]["exp_name"] == "torchrl_dqn" and archive["details"]["algorithm"] == "DQN"
    assert archive["run"]["env_id"] == "CartPole-v1" and archive["details"]["policy"]["sizes"] == [
        4,
        120,
        84,
        2,
    ]
    assert "replay_buffer" not in archive["details"]["components"]
    assert (
        rotation["details"]["format"] == "torchrl-checkpoint (directory)"
        and rotation["details"]["step"] == 400
    )
    assert rotation["details"]["checkpoints"] == [
        "checkpoint-000000000400",
        "checkpoint-000000000200",
        "checkpoint-000000000300",
    ]
    assert ppo["details"]["checkpoint"] == "render" and ppo["run"]["env_id"] == "Pendulum-v1"
    assert ppo["details"]["algorithm"] == "PPO" and ppo["details"]["policy"]["sizes"] == [3, 64, 64, 1]
    assert ppo["details"]["policy"]["observation_norm"] == "checkpoint vecnorm"


def test_actions_are_torchrl_own_on_real_observations(torchrl_runs):
    """DQN: the same argmax on every observation. PPO: bit for bit one observation at a time (TorchRL's reference
    runs batch 1); a batch of 800 rounds the matmul otherwise, within 1e-5 (measured 2.4e-7)."""
    for algo, target in (
        ("dqn", torchrl_runs["rotation"]),
        ("ppo", torchrl_runs["ppo"]),
        ("sac", torchrl_runs["sac"]),
    ):
        ref = torchrl_runs[f"ref_{algo}"]
        obs = np.asarray(ref["observations"], dtype=np.float32)
        expected = np.asarray(ref["actions"])
        assert len(obs) > 30
        policy = _policy(target)
        batched = policy.act(obs)[0].reshape(expected.shape)
        one_by_one = np.concatenate([policy.act(o[None])[0] for o in obs]).reshape(expected.shape)
        assert np.abs(one_by_one - expected).max() == 0, algo
        assert np.abs(batched - expected).max() <= (0 if algo == "dqn" else 1e-5), algo


def test_eval_episodes_are_torchrl_own(torchrl_runs, tmp_path):
    """Seeds 0-3, env i seeded with i: DQN's returns exactly; PPO's exactly on one env (batch 1), and to float
    rounding on four (the batched matmul, see above)."""
    assert _eval(torchrl_runs["rotation"], tmp_path / "rot.json") == _reference(torchrl_runs["ref_dqn"])
    assert _eval(torchrl_runs["dqn"] / "dqn_ckpt", tmp_path / "archive.json") == _reference(
        torchrl_runs["ref_dqn"]
    )
    ppo_ref = _reference(torchrl_runs["ref_ppo"])
    got = _eval(torchrl_runs["ppo"], tmp_path / "ppo.json")
    assert [length for _, length in got] == [length for _, length in ppo_ref]
    np.testing.assert_allclose([r for r, _ in got], [r for r, _ in ppo_ref], rtol=1e-6)
    assert _eval(torchrl_runs["ppo"], tmp_path / "one.json", num_envs=1, episodes=1) == ppo_ref[:1]
    sac_ref = _reference(torchrl_runs["ref_sac"])
    assert _eval(torchrl_runs["sac"], tmp_path / "sac.json", num_envs=1, episodes=1) == sac_ref[:1]
    assert np.std([r for r, _ in ppo_ref]) > 0


def test_a_unified_render_checkpoint_gives_the_same_episodes(torchrl_runs, tmp_path):
    """``save_render_checkpoint(format="archive")`` (TorchRL 0.15's default): vecnorm's tensors in the
    environment_metadata state dict, read from their raw bytes."""
    unified = torchrl_runs["root"] / "ppo_unified"
    assert _check(unified)["."]["details"]["format"] == "torchrl-checkpoint (archive)"
    assert (
        _eval(unified, tmp_path / "u.json", num_envs=1, episodes=1) == _reference(torchrl_runs["ref_ppo"])[:1]
    )


def test_stochastic_mode_samples_the_tanh_normal_and_refuses_what_it_cannot_sample(torchrl_runs, tmp_path):
    """PPO's AddStateIndependentNormalScale: seeded samples (the same twice, another return than the mean's);
    SAC's NormalParamExtractor maps its scale with a function the checkpoint does not name: refused, one line."""
    runs = [
        zoo(
            "eval",
            torchrl_runs["ppo"],
            "--stochastic",
            "-q",
            "-n",
            1,
            "--num-envs",
            1,
            "--out",
            tmp_path / f"{i}.json",
        )
        for i in (0, 1)
    ]
    assert all(r.exit_code == 0 for r in runs), runs[0].stderr
    sampled = [json.loads((tmp_path / f"{i}.json").read_text())["episodes"][0]["return"] for i in (0, 1)]
    assert sampled[0] == sampled[1] != _reference(torchrl_runs["ref_ppo"])[0][0]
    refused = zoo("eval", torchrl_runs["sac"], "--stochastic", "-q", "-n", 1, "--num-envs", 1)
    _one_line_error(refused, "zoo samples TanhNormal actions only with AddStateIndependentNormalScale")


def test_a_plain_state_dict_takes_the_model_config(torchrl_runs, tmp_path):
    """``torch.save(actor.state_dict())`` says nothing but the weights: --exp-name, --env-id and a model config
    with the ObservationNorm's loc and scale (here the render checkpoint's, as the user's env had them)."""
    import torch

    plain = torchrl_runs["plain"]
    failed = zoo("eval", plain, "-q", "--exp-name", "torchrl_ppo", "--env-id", "Pendulum-v1")
    assert failed.exit_code == 1 and "TorchRL saves no module description" in failed.stderr
    assert "Traceback" not in failed.stderr
    vecnorm = torch.load(torchrl_runs["ppo"] / "ppo_ckpt.pt", weights_only=True)["vecnorm"]
    config = tmp_path / "plain.yaml"
    config.write_text(
        PPO_CONFIG.replace(
            "observation_norm: checkpoint",
            f"observation_norm: {{loc: {vecnorm['loc'].tolist()}, scale: {vecnorm['scale'].tolist()}}}",
        )
    )
    args = ("--exp-name", "torchrl_ppo", "--env-id", "Pendulum-v1", "--model-config", config)
    got = _eval(plain, tmp_path / "plain.json", *args, num_envs=1, episodes=1)
    assert got == _reference(torchrl_runs["ref_ppo"])[:1]


def test_exports_bake_the_observation_norm_and_act_like_the_checkpoint(torchrl_runs, tmp_path):
    sidecars = assert_exports_act_like_checkpoint(
        torchrl_runs["ppo"], tmp_path / "ppo", continuous=True, episodes=4
    )
    for meta in sidecars.values():
        assert meta["framework"] == "torchrl" and meta["normalization"]["kind"] == "torchrl_observation_norm"
        assert meta["normalization"]["clip"] == [-10.0, 10.0]
    (tmp_path / "dqn").mkdir()
    assert_exports_act_like_checkpoint(
        torchrl_runs["rotation"], tmp_path / "dqn", continuous=False, episodes=4
    )


def test_push_then_enjoy_gives_the_same_episodes(torchrl_runs, tmp_path):
    from test_hub_roundtrip import _zoo, token_hub

    run = tmp_path / "ppo"
    shutil.copytree(torchrl_runs["ppo"], run, ignore=shutil.ignore_patterns("plain"))
    repo = "demo/Pendulum-v1-torchrl-ppo"
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
        assert {"ppo_ckpt.pt", "torchrl_policy.yaml"} <= {p.name for p in (tmp_path / "stage").iterdir()}
        fetched = _zoo(
            "enjoy",
            "--exp-name",
            "torchrl_ppo",
            "--env-id",
            "Pendulum-v1",
            "--hf-repository",
            repo,
            "--runs-dir",
            tmp_path / "none",
            "--allow-download",
            "--deterministic",
            "--episodes",
            "2",
            "--num-envs",
            "1",
            "--out",
            tmp_path / "remote.json",
            hub_url=server.url,
            home=tmp_path / "fresh-cache",
        )
    assert fetched.returncode == 0, fetched.stderr
    remote = [e["return"] for e in json.loads((tmp_path / "remote.json").read_text())["episodes"]]
    local = _eval(run, tmp_path / "local.json", num_envs=1, episodes=2)
    assert remote == [r for r, _ in local]


def test_watch_sees_the_rotation_in_step_order(torchrl_runs):
    from zoo.frameworks import get_adapter

    found = get_adapter("torchrl").checkpoints(torchrl_runs["rotation"])
    assert [c.step for c in found] == [200, 300, 400]
    assert all(c.model_file.name == "manifest.json" for c in found)


def test_zoo_watch_keeps_the_best_rotated_checkpoint_as_a_directory_checkpoint(tmp_path):
    """The best copy is ``best_model/`` (manifest, policy, environment_metadata): read back as a model of the run,
    never as its latest checkpoint."""
    rotation = tmp_path / "dqn" / "checkpoints"
    shutil.copytree(DATA / "dqn", tmp_path / "dqn")
    watched = zoo(
        "watch",
        rotation,
        "--until",
        "400",
        "-n",
        "2",
        "--num-envs",
        "2",
        "--poll",
        "0.1",
        "--nice",
        "0",
        "--max-cpu",
        "0",
    )
    assert watched.exit_code == 0, watched.stderr
    assert "best_model/manifest.json" in watched.stdout + watched.stderr
    (report,) = zoo("check", rotation, "--json").json()
    assert report["status"] == "ok" and report["details"]["step"] == 400
    assert report["details"]["checkpoints"][-1] == "best_model"
    assert not list((rotation / "best_model" / "components").glob("*-optimizer"))
    _eval(rotation / "best_model" / "manifest.json", tmp_path / "best.json", episodes=2, num_envs=2)


def test_committed_run_checks_ok_and_evaluates():
    reports = _check(DATA)
    assert sorted(reports) == ["dqn/checkpoints", "ppo"] and all(
        r["status"] == "ok" for r in reports.values()
    )


# ----------------------------------------------------------------------------- refused
def _one_line_error(result, needle: str, code: int = 1) -> None:
    assert result.exit_code == code, (result.exit_code, result.stderr)
    assert needle in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_a_truncated_archive_and_a_short_tensor_file_are_one_line(torchrl_runs, tmp_path):
    run = tmp_path / "dqn"
    shutil.copytree(torchrl_runs["dqn"], run, ignore=shutil.ignore_patterns("checkpoints"))
    data = (run / "dqn_ckpt").read_bytes()
    (run / "dqn_ckpt").write_bytes(data[: len(data) // 2])
    result = zoo("eval", run / "dqn_ckpt", "-q", "--exp-name", "torchrl_dqn", "--env-id", "CartPole-v1")
    assert result.exit_code != 0 and "Traceback" not in result.stderr, result.stderr
    rot = tmp_path / "rot"
    shutil.copytree(torchrl_runs["rotation"] / "checkpoint-000000000400", rot / "checkpoint-000000000400")
    shutil.copy(torchrl_runs["dqn"] / "torchrl_policy.yaml", rot)
    tensor = next(
        (rot / "checkpoint-000000000400" / "components").glob("*-policy/state/tensor_00000000.memmap")
    )
    tensor.write_bytes(tensor.read_bytes()[:-4])
    report = _check(rot)["."]
    assert report["status"] == "error" and "its dtype and shape say 1920" in report["reason"], report
    _one_line_error(
        zoo("eval", rot, "-q"), "its dtype and shape say 1920"
    )  # the env id cannot be read either
    _one_line_error(zoo("eval", rot, "-q", "--env-id", "CartPole-v1"), "its dtype and shape say 1920")


def test_a_pickle_in_a_legacy_checkpoint_is_refused_and_never_runs(torchrl_runs, tmp_path):
    import torch

    run = tmp_path / "ppo"
    run.mkdir()
    shutil.copy(torchrl_runs["ppo"] / "torchrl_policy.yaml", run)
    payload = torch.load(torchrl_runs["ppo"] / "ppo_ckpt.pt", weights_only=True)
    canary = tmp_path / "canary"
    payload["metrics"] = Canary(canary)
    torch.save(payload, run / "ppo_ckpt.pt")
    report = _check(run)["."]
    assert report["status"] == "error" and "unsafe pickle" in report["reason"]
    _one_line_error(zoo("eval", run, "-q", "--env-id", "Pendulum-v1"), "unsafe pickle", 3)
    assert not canary.exists()


def test_the_replay_buffer_pickle_is_never_opened(torchrl_runs, tmp_path):
    """A unified checkpoint's only pickle is the replay buffer's prefetch.pkl: zoo reads the policy's JSON and raw
    bytes and never opens it, whatever it holds."""
    import pickle

    run = tmp_path / "dqn"
    shutil.copytree(torchrl_runs["dqn"], run, ignore=shutil.ignore_patterns("checkpoints"))
    canary = tmp_path / "canary"
    with zipfile.ZipFile(run / "dqn_ckpt", "a") as zf:
        zf.writestr("components/0009-replay_buffer/prefetch.pkl", pickle.dumps(Canary(canary)))
    assert _eval(run, tmp_path / "e.json") == _reference(torchrl_runs["ref_dqn"])
    assert not canary.exists()


def test_model_configs_that_would_be_code_or_contradict_the_weights_are_refused(torchrl_runs, tmp_path):
    run = tmp_path / "ppo"
    shutil.copytree(torchrl_runs["ppo"], run, ignore=shutil.ignore_patterns("plain"))
    config = run / "torchrl_policy.yaml"
    cases = {
        PPO_CONFIG.replace(
            "tanh\ntanh_loc", "__import__('os').system('touch x')\ntanh_loc"
        ): "is not one of tanh",
        "!!python/object/apply:os.system ['touch x']\n": "torchrl_policy.yaml",
        PPO_CONFIG.replace("[64, 64]", "[32, 32]"): "declares num_cells [32, 32], the weights have [64, 64]",
        PPO_CONFIG.replace(
            "head: tanh_normal", "head: qvalue"
        ): "tanh_loc/low/high belong to head tanh_normal",
        DQN_CONFIG: "says head qvalue, but torchrl_ppo acts with tanh_normal",
        PPO_CONFIG.replace("observation_norm: checkpoint\n", ""): "observations were normalized",
        PPO_CONFIG + "distribution: Normal\n": "distribution is not a field",
    }
    for text, needle in cases.items():
        config.write_text(text)
        result = zoo("eval", run, "-q", "--exp-name", "torchrl_ppo", "--env-id", "Pendulum-v1")
        _one_line_error(result, needle)
    assert not (tmp_path / "x").exists() and not Path("x").exists()


def test_a_manifest_that_points_outside_the_checkpoint_is_refused(torchrl_runs, tmp_path):
    rot = tmp_path / "rot"
    checkpoint = rot / "checkpoint-000000000400"
    shutil.copytree(torchrl_runs["rotation"] / "checkpoint-000000000400", checkpoint)
    shutil.copy(torchrl_runs["dqn"] / "torchrl_policy.yaml", rot)
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    manifest["components"]["policy"]["path"] = "../../../etc"
    (checkpoint / "manifest.json").write_text(json.dumps(manifest))
    _one_line_error(zoo("eval", rot, "-q", "--env-id", "CartPole-v1"), "has a bad path")


def test_discovery_leaves_other_frameworks_files_alone(torchrl_runs, tmp_path):
    from zoo.frameworks import get_adapter

    rsl = tmp_path / "logs" / "rsl_rl" / "run"
    rsl.mkdir(parents=True)
    shutil.copy(torchrl_runs["plain"], rsl / "model_100.pt")
    assert list(get_adapter("torchrl").discover(tmp_path)) == []


def test_the_other_refusals_the_docs_list_are_one_line_each(torchrl_runs, tmp_path):
    import torch

    sac = tmp_path / "sac"
    shutil.copytree(torchrl_runs["sac"], sac)
    (sac / "torchrl_policy.yaml").write_text(SAC_CONFIG + "observation_norm: checkpoint\n")
    _one_line_error(
        zoo("eval", sac, "-q"), "says observation_norm: checkpoint, but the checkpoint holds no vecnorm"
    )

    ppo = tmp_path / "ppo"
    shutil.copytree(torchrl_runs["ppo"], ppo, ignore=shutil.ignore_patterns("plain"))
    (ppo / "torchrl_policy.yaml").write_text(DQN_CONFIG.replace("[120, 84]", "[64, 64]"))
    _one_line_error(
        zoo("eval", ppo, "-q"),
        "says head qvalue, but the policy holds module.0.module.1.state_independent_scale",
    )

    plain = tmp_path / "plain.pt"
    state = torch.load(torchrl_runs["plain"], weights_only=True)
    state["module.0.module.1.extra_gain"] = torch.ones(1)
    torch.save(state, plain)
    args = (
        "--exp-name",
        "torchrl_ppo",
        "--env-id",
        "Pendulum-v1",
        "--model-config",
        torchrl_runs["sac"] / "torchrl_policy.yaml",
    )
    _one_line_error(
        zoo("eval", plain, "-q", *args),
        "tensors zoo's rebuilt MLP does not use: module.0.module.1.extra_gain",
    )

    rot = tmp_path / "rot"
    shutil.copytree(torchrl_runs["rotation"] / "checkpoint-000000000400", rot / "checkpoint-000000000400")
    shutil.copy(torchrl_runs["dqn"] / "torchrl_policy.yaml", rot)
    manifest_file = rot / "checkpoint-000000000400" / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["format_version"] = 2
    manifest_file.write_text(json.dumps(manifest))
    _one_line_error(zoo("eval", rot, "-q", "--env-id", "CartPole-v1"), "format_version 2 (zoo reads 1)")
