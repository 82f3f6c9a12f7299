"""DEP-RL adapter: a run trained by deprl 0.3.2's own launcher, checked, evaluated and exported by zoo without deprl,
compared with deprl's own deterministic inference (``deprl.load(path + "/", env)(obs)``).

deprl runs in its trainer venv (gym 0.26, numpy 1.26: dev.py's TRAINER_VENVS). It cannot train on any env there
as published (tests/trainers/deprl_oldgym.py says why); the run's config header imports that module, which
serves gym's own Pendulum-v1 in the old API tonic speaks. Everything else is deprl's: ``python -m deprl.main``,
DEP exploration switching with MPO, its logger's layout, its loader.

Pendulum's step rounds differently under numpy 1 and numpy 2 (numpy 1 promotes ``3.0 * float32`` to float64):
fed deprl's very actions, gymnasium 1.4's Pendulum drifts from gym 0.26's by one float32 ulp of an observation
at step 13. So zoo's episodes on gymnasium equal deprl's to 1e-6 relative, and zoo's exported policy stepped
in deprl's own env (the trainer venv) gives deprl's episodes bit for bit.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import Canary, assert_exports_act_like_checkpoint, episodes_of, zoo
from test_hub_roundtrip import SENTINEL, _zoo, token_hub
from trainer_venvs import run_trainer

NAME = "Pendulum-v1_dep"
STEPS, SAVE = 1000, 500
EPISODES = 3


@pytest.fixture(scope="session")
def deprl_run(tmp_path_factory):
    """deprl's run (``runs/Pendulum-v1_dep``) and deprl's own deterministic episodes on it (seed 0)."""
    root = tmp_path_factory.mktemp("deprl")
    run_trainer("deprl", "deprl_train.py", "runs", NAME, STEPS, SAVE, cwd=root)
    run = root / "runs" / NAME
    reference = root / "reference.json"
    run_trainer("deprl", "deprl_reference.py", run, reference, EPISODES, 0, cwd=root)
    return {"root": root, "run": run, "reference": json.loads(reference.read_text())}


def _copy(src: Path, dst: Path, *, skip_buffers: bool = True) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("buffer_*.pt") if skip_buffers else None)
    return dst


def _check(path, *args) -> dict:
    reports = zoo("check", path, "--json", *args).json()
    assert len(reports) == 1, reports
    return reports[0]


def _error_line(result, code: int | None = None) -> str:
    assert result.exit_code != 0 and "Traceback" not in result.stderr, result.stderr
    if code is not None:
        assert result.exit_code == code, result.stderr
    return result.stderr


def test_check_recognizes_deprl_own_run(deprl_run):
    report = _check(deprl_run["run"])
    assert report["status"] == "ok", report
    run, d = report["run"], report["details"]
    assert (run["framework"], run["exp_name"], run["env_id"], run["seed"]) == (
        "deprl",
        "deprl_mpo",
        "Pendulum-v1",
        0,
    )
    assert d["algorithm"] == "MPO" and d["checkpoint"] == f"step_{STEPS}.pt" and d["step"] == STEPS
    assert d["checkpoints"] == [f"step_{STEPS}.pt", f"step_{SAVE}.pt"] and d["weights_only"] is True
    assert d["actor"] == {"sizes": [3, 32, 32, 1], "activation": "relu", "output": "tanh(loc)"}
    assert d["scaled_actions"] is True and d["dep_exploration"] is True
    # deprl wrote its full_save files (obs_norm.pt needs numpy globals zoo never has to allow: it is not read)
    assert (deprl_run["run"] / "checkpoints" / "obs_norm.pt").is_file()


def test_actions_equal_deprl_own_on_its_observations(deprl_run):
    from zoo import api

    ref = deprl_run["reference"]
    obs = np.asarray(ref["observations"], np.float32)
    policy = api.load_policy(deprl_run["run"])
    actions, _ = policy.act(obs, None, True)
    diff = np.abs(actions - np.asarray(ref["env_actions"], np.float32)).max()
    assert len(obs) == 600 and diff <= 1e-5, diff
    one_by_one = np.concatenate([policy.act(o[None], None, True)[0] for o in obs[:50]])
    assert np.array_equal(
        one_by_one, np.asarray(ref["env_actions"][:50], np.float32)
    )  # bit for bit, batch of one


def test_eval_episodes_equal_deprl_own(deprl_run, tmp_path):
    out = tmp_path / "eval.json"
    args = ("--deterministic", "-n", EPISODES, "--num-envs", 1, "--seed", 0, "--quiet", "--out", out)
    result = zoo("eval", deprl_run["run"], *args)
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["framework"] == "deprl" and data["task"] == "Pendulum-v1"
    ours = episodes_of(out)
    theirs = [(e["return"], e["length"]) for e in deprl_run["reference"]["episodes"]]
    assert [n for _, n in ours] == [n for _, n in theirs] == [200] * EPISODES
    np.testing.assert_allclose([r for r, _ in ours], [r for r, _ in theirs], rtol=1e-6)
    assert len({round(r, 3) for r, _ in ours}) == EPISODES  # real, varied episodes

    policy = tmp_path / "policy.ts"
    assert zoo("export", deprl_run["run"], "--out", policy, "-q").exit_code == 0
    stepped = tmp_path / "exported.json"
    run_trainer("deprl", "deprl_exported_episodes.py", policy, stepped, EPISODES, 0, cwd=tmp_path)
    assert json.loads(stepped.read_text())["episodes"] == deprl_run["reference"]["episodes"]  # bit for bit


def test_exports_act_like_the_checkpoint(deprl_run, tmp_path):
    sidecars = assert_exports_act_like_checkpoint(deprl_run["run"], tmp_path, continuous=True, episodes=4)
    for meta in sidecars.values():
        assert meta["framework"] == "deprl" and meta["normalization"] is None
        assert any("ActionRescaler" in step for step in meta["baked"])
        assert any("raw observation" in note for note in meta["left_to_caller"])


def test_watch_lists_the_step_files_in_order(deprl_run):
    from zoo.frameworks import get_adapter

    found = get_adapter("deprl").checkpoints(deprl_run["run"])
    assert [(c.step, c.model_file.name) for c in found] == [
        (SAVE, f"step_{SAVE}.pt"),
        (STEPS, f"step_{STEPS}.pt"),
    ]


def test_push_then_enjoy_from_a_local_hub(deprl_run, tmp_path):
    run = _copy(deprl_run["run"], tmp_path / "runs" / NAME)
    repo = "demo/Pendulum-v1-deprl-MPO-seed0"
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
        fetched = _zoo(
            "enjoy",
            "--exp-name",
            "deprl_mpo",
            "--env-id",
            "Pendulum-v1",
            "--run-seed",
            "0",
            "--hf-repository",
            repo,
            "--runs-dir",
            tmp_path / "none",
            "--allow-download",
            "--deterministic",
            "--episodes",
            "2",
            "--out",
            tmp_path / "remote.json",
            hub_url=server.url,
            home=tmp_path / "fresh-cache",
            token=SENTINEL,
        )
        assert fetched.returncode == 0, fetched.stderr
    card = (tmp_path / "stage" / "README.md").read_text()
    assert "library_name: deprl" in card and "- deprl" in card
    local = zoo("eval", run, "--deterministic", "-n", "2", "--quiet", "--out", tmp_path / "local.json")
    assert local.exit_code == 0, local.stderr
    assert episodes_of(tmp_path / "remote.json") == episodes_of(tmp_path / "local.json")
    assert json.loads((tmp_path / "remote.json").read_text())["source"]["repo_id"] == repo


def test_a_baseline_folder_is_read_like_a_run(deprl_run, tmp_path):
    """``deprl.load_baseline`` leaves config.yaml and checkpoints/step_<N>.pt only (no log.csv, time.pt)."""
    baseline = tmp_path / "baselines_DEPRL" / "pendulum_20260101" / "pendulum"
    (baseline / "checkpoints").mkdir(parents=True)
    shutil.copy(deprl_run["run"] / "config.yaml", baseline)
    shutil.copy(deprl_run["run"] / "checkpoints" / f"step_{STEPS}.pt", baseline / "checkpoints")
    report = _check(tmp_path / "baselines_DEPRL")
    assert report["status"] == "ok" and report["run"]["path"] == str(baseline), report
    given = _check(baseline / "checkpoints" / f"step_{STEPS}.pt")
    assert given["status"] == "ok" and given["details"]["checkpoint"] == f"step_{STEPS}.pt"


def test_a_myosuite_run_is_recognized_without_myosuite(deprl_run, tmp_path):
    """The env id of a MyoSuite run comes from its config string; evaluating it needs MyoSuite's own venv."""
    run = _hostile_run(deprl_run, tmp_path)
    _set_environment(
        run, "deprl.environments.Gym('myoLegWalk-v0', scaled_actions=False, reset_type='random')"
    )
    report = _check(run)
    assert report["run"]["env_id"] == "myoLegWalk-v0" and report["details"]["scaled_actions"] is False
    assert report["status"] == "warning" and "gym.make keywords ['reset_type']" in report["reason"], report
    assert any("myosuite" in note for note in report["notes"]), report


def test_discovery_claims_nothing_of_other_layouts(deprl_run, tmp_path):
    from zoo.frameworks import get_adapter

    discover = get_adapter("deprl").discover
    step = deprl_run["run"] / "checkpoints" / f"step_{STEPS}.pt"
    (tmp_path / "no_config" / "checkpoints").mkdir(parents=True)
    shutil.copy(step, tmp_path / "no_config" / "checkpoints")  # no config.yaml: not deprl's layout
    (tmp_path / "loose").mkdir()
    shutil.copy(step, tmp_path / "loose" / "step_1.pt")  # a step file outside checkpoints/
    (tmp_path / "loose" / "config.yaml").write_text("tonic: {}\n")
    assert list(discover(tmp_path)) == [] and list(discover(tmp_path / "loose" / "step_1.pt")) == []


# ----------------------------------------------------------------------------- refused input
def _hostile_run(deprl_run, tmp_path: Path) -> Path:
    run = tmp_path / "runs" / NAME
    (run / "checkpoints").mkdir(parents=True)
    shutil.copy(deprl_run["run"] / "config.yaml", run)
    shutil.copy(deprl_run["run"] / "checkpoints" / f"step_{STEPS}.pt", run / "checkpoints")
    return run


def _set_environment(run: Path, text: str) -> None:
    import yaml

    config = yaml.safe_load((run / "config.yaml").read_text())
    config["tonic"]["environment"] = text
    (run / "config.yaml").write_text(yaml.safe_dump(config))


def test_a_truncated_step_file_is_one_error(deprl_run, tmp_path):
    run = _hostile_run(deprl_run, tmp_path)
    step = run / "checkpoints" / f"step_{STEPS}.pt"
    step.write_bytes(step.read_bytes()[:5000])
    report = _check(run)
    assert report["status"] == "error", report
    stderr = _error_line(zoo("eval", run, "--quiet", "--out", tmp_path / "e.json"))
    assert str(step.name) in stderr and len(stderr.strip().splitlines()) <= 2


def test_a_planted_pickle_in_a_step_file_never_runs(deprl_run, tmp_path):
    run = _hostile_run(deprl_run, tmp_path)
    canary = tmp_path / "canary"
    state = torch.load(run / "checkpoints" / f"step_{STEPS}.pt", weights_only=True)
    state["observation_normalizer._mean"] = Canary(canary)
    torch.save(state, run / "checkpoints" / f"step_{STEPS + 1}.pt")
    report = _check(run)
    assert report["status"] == "error" and "unsafe pickle" in report["reason"], report
    assert report["details"]["dangerous_globals"] == ["posix.system"]
    stderr = _error_line(zoo("eval", run, "--quiet", "--out", tmp_path / "e.json"), code=3)
    assert "unsafe pickle" in stderr and not canary.exists()


def test_an_actor_deprl_does_not_write_is_refused_not_guessed(deprl_run, tmp_path):
    run = _hostile_run(deprl_run, tmp_path)
    step = run / "checkpoints" / f"step_{STEPS}.pt"
    state = torch.load(step, weights_only=True)
    state["actor.encoder.observation_normalizer._mean"] = torch.zeros(3)  # an actor that would normalize
    torch.save(state, step)
    report = _check(run)
    assert report["status"] == "error" and "actor.encoder.observation_normalizer._mean" in report["reason"]
    del state["actor.encoder.observation_normalizer._mean"], state["actor.head.scale_layer.0.weight"]
    torch.save(state, step)
    assert "no tensor actor.head.scale_layer.0.weight" in _check(run)["reason"]


def test_code_in_the_config_strings_is_never_run(deprl_run, tmp_path):
    run = _hostile_run(deprl_run, tmp_path)
    canary = tmp_path / "canary"
    code = f"__import__('os').system('touch {canary}')"
    import yaml

    config = yaml.safe_load((run / "config.yaml").read_text())
    config["tonic"]["header"] = code  # deprl exec()s the header
    config["tonic"]["agent"] = code  # and eval()s the agent
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    assert _check(run)["status"] == "ok"  # zoo reads neither
    _set_environment(run, f"deprl.environments.Gym({code}, scaled_actions=True)")
    report = _check(run)
    assert report["status"] == "error" and "is not a literal" in report["reason"], report
    stderr = _error_line(zoo("eval", run, "--quiet", "--out", tmp_path / "e.json"))
    assert "tonic.environment" in stderr and "is not a literal" in stderr and "--env-id" in stderr
    _set_environment(run, code)
    assert "not a call of tonic's Gym builder" in _check(run)["reason"]
    assert not canary.exists()


@pytest.mark.parametrize(
    ("environment", "reason"),
    [
        (
            "deprl.environments.ControlSuite('walker-walk')",
            "builds its env with deprl.environments.ControlSuite",
        ),
        ("deprl.environments.Gym('Pendulum-v1', time_feature=True)", "time_feature=True"),
        ("deprl.environments.Gym('Pendulum-v1', scaled_actions='yes')", "not True or False"),
        ("deprl.environments.Gym('Pendulum-v1', **kw)", "**keywords"),
        ("deprl.environments.Gym(" + "(" * 200 + "1" + ")" * 200 + ")", "not a call zoo can parse"),
        ("deprl.environments.Gym(1, scaled_actions=True)", "names no env id"),
        ("x" * 3000, "characters"),
    ],
)
def test_environments_zoo_cannot_take_are_one_line_errors(deprl_run, tmp_path, environment, reason):
    run = _hostile_run(deprl_run, tmp_path)
    _set_environment(run, environment)
    report = _check(run)
    assert report["status"] == "error" and reason in report["reason"], report


def test_a_python_tag_and_a_wrong_width_in_config_yaml_are_refused(deprl_run, tmp_path):
    run = _hostile_run(deprl_run, tmp_path)
    text = (run / "config.yaml").read_text()
    (run / "config.yaml").write_text(text.replace("hidden_size: 32", "hidden_size: 64"))
    report = _check(run)
    assert report["status"] == "error" and "hidden_size 64" in report["reason"], report
    (run / "config.yaml").write_text(text + "extra: !!python/object/apply:os.system ['true']\n")
    assert _check(run)["status"] == "error"


def test_model_config_names_a_config_to_read_instead(deprl_run, tmp_path):
    run = _hostile_run(deprl_run, tmp_path)
    good = tmp_path / "config.yaml"
    shutil.copy(run / "config.yaml", good)
    _set_environment(run, "deprl.environments.Gym(make_env(), scaled_actions=True)")
    out = tmp_path / "e.json"
    args = ("--env-id", "Pendulum-v1", "--model-config", good, "-n", "1", "--quiet", "--out", out)
    assert "is not a literal" in _error_line(zoo("eval", run, *args[:2], "-n", "1", "--quiet"))
    result = zoo("eval", run, *args)  # the config named instead of the run's own
    assert result.exit_code == 0, result.stderr
    same = zoo("eval", deprl_run["run"], *args[4:-1], tmp_path / "own.json")
    assert same.exit_code == 0 and episodes_of(out) == episodes_of(tmp_path / "own.json")
