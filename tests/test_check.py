"""``zoo check``: discovery, per-run verdicts, filters, exit codes, and no needless imports."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import EXAMPLES, make_run, save_model, write_malicious, zoo


def _by_name(reports):
    return {r["run"]["run_name"]: r for r in reports}


def test_bundled_examples_are_all_ok_with_metadata():
    result = zoo("check", EXAMPLES, "--json")
    assert result.exit_code == 0, result.stderr
    reports = result.json()
    assert {r["run"]["exp_name"] for r in reports} >= {"dqn", "c51", "td3_continuous_action"}
    for r in reports:
        assert r["status"] == "ok", r
        run = r["run"]
        assert (
            run["env_id"] in ("CartPole-v1", "Pendulum-v1") and run["seed"] == 1 and run["started_at"] > 1.6e9
        )
        assert run["model_file"].endswith(f"{run['exp_name']}.cleanrl_model")
        assert run["events_file"] and "events.out.tfevents" in run["events_file"]
        assert r["details"]["weights_only"] is True and r["details"]["format"] == "torch-zip"
        assert isinstance(r["details"]["train_return"]["value"], float)


def test_human_table_and_summary():
    result = zoo("check", EXAMPLES, env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "CartPole-v1__dqn__1__" in result.stdout and "ready to evaluate" in result.stdout
    assert "runs: " in result.stdout and "0 error" in result.stdout


def test_one_run_dir_and_one_model_file(tmp_path):
    run = make_run(tmp_path, "CartPole-v1", "dqn")
    for target in (run, run / "dqn.cleanrl_model"):
        reports = zoo("check", target, "--json").json()
        assert len(reports) == 1 and reports[0]["status"] == "ok"
        assert reports[0]["run"]["env_id"] == "CartPole-v1"


def test_filters_narrow_and_say_when_nothing_matches(tmp_path):
    make_run(tmp_path, "CartPole-v1", "dqn", seed=1)
    make_run(tmp_path, "CartPole-v1", "dqn", seed=2)
    make_run(tmp_path, "Acrobot-v1", "c51", seed=1)
    runs = tmp_path / "runs"
    assert len(zoo("check", runs, "--json").json()) == 3
    assert len(zoo("check", runs, "--run-seed", "2", "--json").json()) == 1
    only = zoo("check", runs, "--exp-name", "c51", "--json").json()
    assert [r["run"]["env_id"] for r in only] == ["Acrobot-v1"]
    none = zoo("check", runs, "--env-id", "Pendulum-v1")
    assert none.exit_code == 1 and "no run matches --env-id Pendulum-v1" in none.stderr


def test_a_lone_model_file_is_what_exp_name_and_env_id_say(tmp_path):
    """A file outside any run dir: the flags say what its path does not, as they do for zoo eval; each
    row without enough to go on names the flag to add."""
    model = save_model(tmp_path / "model.cleanrl_model", "dqn", "CartPole-v1")
    (alone,) = zoo("check", model, "--json").json()
    assert alone["status"] == "error" and alone["reason"].startswith("cannot tell the experiment: its folder")
    assert "'model' is not a registry entry" in alone["reason"] and alone["hint"].startswith(
        "pass --exp-name"
    )
    (named,) = zoo("check", model, "--exp-name", "dqn", "--json").json()
    assert named["status"] == "warning" and named["hint"] == "pass --env-id"
    said = zoo("check", model, "--exp-name", "dqn", "--env-id", "CartPole-v1", "--json")
    assert said.exit_code == 0 and said.json()[0]["status"] == "ok"
    assert said.json()[0]["run"]["exp_name"] == "dqn" and said.json()[0]["run"]["env_id"] == "CartPole-v1"
    evaluated = zoo(
        "eval",
        model,
        "--exp-name",
        "dqn",
        "--env-id",
        "CartPole-v1",
        "-n",
        "1",
        "-q",
        "--out",
        tmp_path / "eval.json",
    )
    assert evaluated.exit_code == 0, evaluated.stderr
    wrong = zoo("check", model, "--exp-name", "dqn", "--env-id", "Pendulum-v1", "--json")
    assert wrong.exit_code == 1 and wrong.json()[0]["status"] == "error"
    assert wrong.json()[0]["reason"] == "dqn acts on a Discrete action space; Pendulum-v1's is Box(1,)"


def test_a_file_no_framework_recognises_asks_for_exp_name(tmp_path):
    model = save_model(tmp_path / "policy.pt", "dqn", "CartPole-v1")
    unnamed = zoo("check", model)
    assert unnamed.exit_code == 1 and "no framework recognises this file by its name" in unnamed.stderr
    assert "hint: pass --exp-name" in unnamed.stderr
    said = zoo("check", model, "--exp-name", "dqn", "--env-id", "CartPole-v1", "--json")
    assert said.exit_code == 0 and said.json()[0]["status"] == "ok"


def test_one_run_is_said_what_it_is_and_several_are_picked_from(tmp_path):
    run = make_run(tmp_path, "CartPole-v1", "dqn")
    (said,) = zoo("check", run, "--env-id", "Acrobot-v1", "--json").json()
    assert said["status"] == "error" and "dqn on Acrobot-v1: network.0.weight is (120, 4)" in said["reason"]
    assert said["run"]["env_id"] == "Acrobot-v1"
    inside = zoo("check", run / "dqn.cleanrl_model", "--exp-name", "dqn", "--env-id", "CartPole-v1", "--json")
    assert inside.exit_code == 0 and [r["run"]["path"] for r in inside.json()] == [
        str(run)
    ]  # one row: its run's
    make_run(tmp_path, "Acrobot-v1", "c51")
    picked = zoo("check", tmp_path / "runs", "--env-id", "Acrobot-v1", "--json")
    assert picked.exit_code == 0 and [r["run"]["exp_name"] for r in picked.json()] == ["c51"]
    seed = zoo("check", run, "--env-id", "Acrobot-v1", "--run-seed", "7")  # a seed only ever picks
    assert seed.exit_code == 1 and "no run matches" in seed.stderr


def test_each_problem_gets_its_reason_and_exit_1(tmp_path):
    runs = tmp_path / "runs"
    make_run(tmp_path, "CartPole-v1", "dqn", seed=1)  # ok
    (runs / "CartPole-v1__dqn__2__1700000000").mkdir()  # empty run dir
    make_run(tmp_path, "CartPole-v1", "c51", seed=3, model_name="dqn.cleanrl_model")  # exp mismatch
    bogus = runs / "CartPole-v1__dqnn__4__1700000000"
    save_model(bogus / "dqnn.cleanrl_model", "dqn", "CartPole-v1")  # unknown experiment
    cut = runs / "CartPole-v1__dqn__5__1700000000" / "dqn.cleanrl_model"
    good = save_model(cut, "dqn", "CartPole-v1").read_bytes()
    cut.write_bytes(good[:1000])  # truncated
    text = runs / "CartPole-v1__dqn__6__1700000000" / "dqn.cleanrl_model"
    text.parent.mkdir()
    text.write_text("not a model")  # not a torch file
    wrong = runs / "Acrobot-v1__dqn__7__1700000000" / "dqn.cleanrl_model"
    save_model(wrong, "dqn", "CartPole-v1")  # shapes do not fit the env
    layout = runs / "CartPole-v1__c51__8__1700000000" / "c51.cleanrl_model"
    save_model(layout, "dqn", "CartPole-v1")  # a dqn state dict where c51 writes a dict
    unparsed = runs / "my-experiment" / "dqn.cleanrl_model"
    save_model(unparsed, "dqn", "CartPole-v1")  # run name that does not parse

    result = zoo("check", runs, "--json")
    assert result.exit_code == 1
    reports = {r["run"]["path"].split("/runs/")[-1]: r for r in result.json()}
    expect = {
        "CartPole-v1__dqn__1__1700000000": ("ok", "ready"),
        "CartPole-v1__dqn__2__1700000000": ("error", "missing model"),
        "CartPole-v1__c51__3__1700000000": ("error", "exp_name mismatch"),
        "CartPole-v1__dqnn__4__1700000000": ("error", "unknown experiment 'dqnn'"),
        "CartPole-v1__dqn__5__1700000000": ("error", "truncated"),
        "CartPole-v1__dqn__6__1700000000": ("error", "not a torch file"),
        "Acrobot-v1__dqn__7__1700000000": ("error", "shapes do not match dqn on Acrobot-v1"),
        "CartPole-v1__c51__8__1700000000": ("error", "c51 files hold a dict"),
        "my-experiment/dqn.cleanrl_model": ("warning", "is not a run dir env_id__exp_name__seed__time"),
    }
    for name, (status, reason) in expect.items():
        assert reports[name]["status"] == status, (name, reports[name])
        assert reason in reports[name]["reason"], (name, reports[name]["reason"])
        if status == "error":
            assert reports[name]["hint"]
    assert reports["CartPole-v1__dqnn__4__1700000000"]["hint"] == "did you mean dqn?"


def test_unparseable_empty_dir_and_missing_path(tmp_path):
    (tmp_path / "nothing").mkdir()
    empty = zoo("check", tmp_path / "nothing")
    assert empty.exit_code == 1 and "no runs found" in empty.stderr
    missing = zoo("check", tmp_path / "absent")
    assert missing.exit_code == 1 and "path not found" in missing.stderr and "Traceback" not in missing.stderr


def test_malicious_model_is_flagged_and_never_executed(tmp_path):
    canary = tmp_path / "canary"
    run = tmp_path / "runs" / "CartPole-v1__dqn__1__1700000000"
    write_malicious(run / "dqn.cleanrl_model", canary)
    result = zoo("check", run, "--json")
    assert result.exit_code == 1
    report = result.json()[0]
    assert report["status"] == "error" and "unsafe pickle" in report["reason"]
    assert report["details"]["dangerous_globals"] == ["posix.system"]
    assert not canary.exists()


def test_missing_optional_extra_is_a_warning(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ale_py" else real(name, *a)
    )
    run = tmp_path / "runs" / "BreakoutNoFrameskip-v4__dqn_atari__1__1700000000"
    import gymnasium as gym
    import torch

    from zoo.frameworks.cleanrl.checkpoint import build_model
    from zoo.registry import load_registry

    entry = load_registry().get("dqn_atari")
    spaces = (gym.spaces.Box(0, 255, (4, 84, 84), "uint8"), gym.spaces.Discrete(4))
    run.mkdir(parents=True)
    torch.save(build_model(entry, "q_network", spaces, {}).state_dict(), run / "dqn_atari.cleanrl_model")
    report = zoo("check", run, "--json").json()[0]
    assert report["status"] == "warning" and "missing optional extra 'atari'" in report["reason"]
    assert "rl-zoo-hub[atari]" in report["hint"]


def test_videos_and_existing_eval_are_found(tmp_path):
    run = make_run(tmp_path, "CartPole-v1", "dqn")
    (run / "eval.json").write_text("{}")
    for folder, count in ((run.name, 2), (f"{run.name}-eval", 1)):
        (tmp_path / "videos" / folder).mkdir(parents=True)
        for i in range(count):
            (tmp_path / "videos" / folder / f"rl-video-episode-{i}.mp4").write_bytes(b"\0")
    report = zoo("check", tmp_path / "runs", "--json").json()[0]
    assert report["run"]["videos"] == {"train": 2, "eval": 1}
    assert report["run"]["eval_json"].endswith("eval.json")


def _imported_after(args: list[str]) -> set[str]:
    code = (
        "import contextlib, io, sys\nfrom zoo.cli import cli\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    try:\n        cli({args!r}, prog_name='zoo')\n    except SystemExit:\n        pass\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(proc.stdout.split())


#: What start-up must not pay for: the heavy libraries, and what the commands that need them import later
#: (yaml: the registry; rich.console: tables; importlib.metadata: each distribution's metadata parsed).
HEAVY = ("torch", "gymnasium", "tensorboard", "numpy", "yaml", "jinja2", "rich.console", "importlib.metadata")


def test_help_and_check_without_model_files_import_no_heavy_library(tmp_path):
    (tmp_path / "runs" / "CartPole-v1__dqn__1__1700000000").mkdir(parents=True)
    assert _imported_after(["--help"]) == set()
    assert _imported_after(["eval", "--help"]) == set()
    assert _imported_after(["--version"]) == set()  # every adapter imported, none of their libraries
    light = {"yaml", "rich.console"}  # the registry and the table: all a check of runs without models needs
    assert _imported_after(["check", str(tmp_path / "runs"), "--json"]) <= light
    assert _imported_after(["registry", "list"]) <= light


def test_verdicts_are_remembered_until_a_file_of_the_run_changes(tmp_path):
    import os
    import sqlite3

    from torch.utils.tensorboard import SummaryWriter

    run = make_run(tmp_path, "CartPole-v1", "dqn")
    writer = SummaryWriter(str(run))
    writer.add_scalar("charts/episodic_return", 42.0, 100)
    writer.close()
    first = zoo("check", run, "--json").json()[0]
    assert first["status"] == "ok" and first["details"]["train_return"] == {"step": 100, "value": 42.0}

    def plant() -> None:  # a planted verdict proves that the next call reads the memo, not the run
        with sqlite3.connect(Path(os.environ["ZOO_CACHE_DIR"]) / "check.sqlite") as db:
            db.execute("UPDATE verdicts SET report = replace(report, '42.0', '7.0')")

    def train_return(*args: str) -> float:
        return zoo("check", run, "--json", *args).json()[0]["details"]["train_return"]["value"]

    plant()
    assert train_return() == 7.0
    assert train_return("--no-cache") == 42.0
    events = next(run.glob("events.out.tfevents.*"))
    os.utime(events, ns=(events.stat().st_atime_ns, events.stat().st_mtime_ns + 10**9))
    assert train_return() == 42.0  # the events file changed: read again

    plant()
    model = run / "dqn.cleanrl_model"
    before = model.stat()
    raw = bytearray(model.read_bytes())
    raw[-40] ^= 0xFF  # same size, and the old mtime put back below: only ctime and content differ
    model.write_bytes(bytes(raw))
    os.utime(model, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert zoo("check", run, "--json").json()[0]["status"] == "error"


def test_a_stray_model_file_at_the_top_of_runs_hides_no_run(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(EXAMPLES, runs)
    shutil.copy(next(runs.glob("CartPole-v1__dqn__*")) / "dqn.cleanrl_model", runs / "dqn.cleanrl_model")
    result = zoo("check", runs, "--json")
    assert result.exit_code == 0, result.stderr
    rows = {r["run"]["run_name"] or r["run"]["path"]: r for r in result.json()}
    assert sorted(rows) == sorted([*(p.name for p in EXAMPLES.iterdir()), str(runs / "dqn.cleanrl_model")])
    stray = rows[str(runs / "dqn.cleanrl_model")]
    assert stray["status"] == "warning" and "its folder 'runs' is not a run dir" in stray["reason"]
    assert all(r["status"] == "ok" for name, r in rows.items() if name != str(runs / "dqn.cleanrl_model"))


def test_a_zip_bomb_data_pkl_and_a_symlink_loop_are_one_line_each_without_inflating(tmp_path, monkeypatch):
    import zipfile

    run = make_run(tmp_path, "CartPole-v1", "dqn")
    model = run / "dqn.cleanrl_model"
    with zipfile.ZipFile(model) as zin:
        entries = [(item, zin.read(item)) for item in zin.infolist()]
    with zipfile.ZipFile(model, "w") as zout:
        for item, data in entries:
            if item.filename.endswith("/data.pkl"):
                bomb = zipfile.ZipInfo(item.filename)
                bomb.compress_type = zipfile.ZIP_DEFLATED
                with zout.open(bomb, "w", force_zip64=True) as fh:  # about 0.5 MiB, inflates to 512 MiB
                    for _ in range(512):
                        fh.write(b"\0" * (1 << 20))
            else:
                zout.writestr(item, data)
    inflated = []  # bytes zipfile inflates while zoo checks the run: the work, not the time, is the bound
    read = zipfile.ZipExtFile.read
    monkeypatch.setattr(
        zipfile.ZipExtFile, "read", lambda self, n=-1: inflated.append(len(got := read(self, n))) or got
    )
    report = zoo("check", run, "--json", "--no-cache").json()[0]
    monkeypatch.undo()
    assert report["status"] == "error" and "inflates" in report["reason"] and report["hint"]
    assert sum(inflated) < 1 << 20, f"inflated {sum(inflated) >> 20} MiB of the bomb's 512"

    loop = tmp_path / "runs" / "CartPole-v1__dqn__2__1700000000"
    loop.mkdir(parents=True)
    (loop / "dqn.cleanrl_model").symlink_to(loop / "dqn.cleanrl_model")
    looped = zoo("check", loop, "--json")
    (report,) = looped.json()
    assert report["status"] == "error" and report["reason"].startswith("cannot read dqn.cleanrl_model: ")
    assert "symlink" in report["hint"] and "size" not in report["details"]
    evaluated = zoo("eval", loop, "-q", "-n", "1")
    assert evaluated.exit_code == 1 and evaluated.stderr.count("error:") == 1
    assert "internal error" not in evaluated.stderr and "Traceback" not in evaluated.stderr


def test_symlinked_folders_are_followed_out_of_the_tree_once_and_never_round_a_loop(tmp_path):
    run = make_run(tmp_path, "CartPole-v1", "dqn")
    runs = run.parent
    (runs / "again").symlink_to(runs)  # a loop back to the top
    (run / "inner").symlink_to(run)  # a loop inside a run dir
    elsewhere = make_run(tmp_path / "store", "Acrobot-v1", "dqn")
    (runs / "linked").symlink_to(elsewhere.parent)
    (runs / "linked-twice").symlink_to(elsewhere.parent)

    reports = zoo("check", runs, "--json", "--no-cache").json()
    paths = sorted(r["run"]["path"] for r in reports)  # the first link in name order is the one followed
    assert paths == [str(run), str(runs / "linked" / elsewhere.name)]
    assert all(r["status"] == "ok" for r in reports)


def test_non_finite_weights_are_an_error_naming_the_tensors(tmp_path):
    """A diverged run still loads and acts (a NaN DQN plays action 0): check names the tensors and counts."""
    import torch

    run = make_run(tmp_path, "CartPole-v1", "dqn")
    model = run / "dqn.cleanrl_model"
    state = torch.load(model, weights_only=True)
    state["network.4.weight"] = torch.full_like(state["network.4.weight"], float("nan"))
    state["network.0.bias"][3] = float("inf")
    torch.save(state, model)
    result = zoo("check", run, "--json")
    assert result.exit_code == 1
    (report,) = result.json()
    rows = state["network.4.weight"].numel()
    assert report["status"] == "error" and report["reason"] == (
        f"non-finite weights (NaN or Inf): network.0.bias (1 of 120), network.4.weight ({rows} of {rows})"
    ), report
    assert report["details"]["non_finite"][0] == {"tensor": "network.0.bias", "non_finite": 1, "values": 120}
    assert "earlier" in report["hint"]


@pytest.mark.parametrize("holds", ["a thread of its own", "jax"])
def test_a_caller_holding_threads_is_never_forked(tmp_path, monkeypatch, holds):
    """zoo check forks workers only from a process a fork cannot hurt: a library caller that runs a
    thread of its own (a server, a notebook kernel) or imported JAX (its threads deadlock a child, and it
    warns) gets its verdicts read in-process, the same verdicts."""
    import threading

    from zoo import api

    for seed in (1, 2, 3):
        make_run(tmp_path, "CartPole-v1", "dqn", seed=seed)
    stop = threading.Event()
    if holds == "jax":
        monkeypatch.setitem(sys.modules, "jax", sys.modules.get("jax") or __import__("jax"))
    else:
        threading.Thread(target=stop.wait, daemon=True).start()

    def no_fork():
        raise AssertionError("zoo check forked a process holding threads")

    monkeypatch.setattr(os, "fork", no_fork)
    try:
        reports = api.check(tmp_path / "runs", use_cache=False)
    finally:
        stop.set()
    assert [r.status for r in reports] == ["ok"] * 3


def test_a_training_that_logged_nan_is_shown_as_written_in_strict_json(tmp_path):
    """A diverged training logs a NaN return; ``--json`` stays JSON every parser reads ("nan", a string,
    as the log has it) and the table shows it."""
    import json

    from torch.utils.tensorboard import SummaryWriter

    run = make_run(tmp_path, "CartPole-v1", "dqn")
    with SummaryWriter(str(run)) as writer:
        writer.add_scalar("charts/episodic_return", 120.0, 1000)
        writer.add_scalar("charts/episodic_return", float("nan"), 2000)
    result = zoo("check", run, "--json", "--no-cache")
    (report,) = json.loads(result.stdout, parse_constant=lambda token: pytest.fail(f"not JSON: {token}"))
    assert report["details"]["train_return"] == {"step": 2000, "value": "nan"}
    table = zoo("check", run, "--no-cache")
    assert table.exit_code == 0 and " nan " in table.stdout


def test_a_cleanrl_run_says_which_training_flags_reach_the_network_and_that_zoo_passes_neither():
    """CleanRL's --track (Weights & Biases) and --upload-model (the Hub) are each a network integration with its own
    consent: the check of a CleanRL run says so, once per flag; a run of another framework says nothing of them."""
    run = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
    shown = zoo("check", run, env={"COLUMNS": "200"}).stdout.splitlines()
    assert [line for line in shown if line.startswith("hint:")] == [
        "hint: CleanRL's --track sends metrics to Weights & Biases (network, a W&B API key): its own consent; "
        "zoo never turns it on",
        "hint: CleanRL's --upload-model sends the model and videos to the Hugging Face Hub (network, a Hub write "
        "token): its own consent; zoo never turns it on",
    ]
    other = zoo("check", Path(__file__).parent / "data" / "rsl_rl_legacy", env={"COLUMNS": "200"})
    assert other.exit_code == 0 and "hint:" not in other.stdout
    assert "hint:" not in zoo("check", run, "--quiet").stdout  # nothing shown, nothing hinted
