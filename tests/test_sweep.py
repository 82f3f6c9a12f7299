"""``zoo eval FOLDER --all``: every run evaluated in one process (or on Ray) into its own eval.json, as
``zoo eval RUN`` would; failures are rows, reruns resume, and Ray gives the same files."""

from __future__ import annotations

import json
import shutil
import socket
import sys
from pathlib import Path

import pytest
from helpers import EXAMPLES, save_model, zoo

import zoo as zoo_api

TIMING = ("wall_clock_seconds", "evaluated_at")


def _runs(root: Path) -> Path:
    """Real CleanRL runs: the bundled dqn (as seeds 1 and 2), c51 and td3 runs, copied under ``root/runs``."""
    runs = root / "runs"
    for src in sorted(p for p in EXAMPLES.iterdir() if p.is_dir()):
        shutil.copytree(src, runs / src.name)
    dqn = next(runs.glob("CartPole-v1__dqn__1__*"))
    shutil.copytree(dqn, runs / dqn.name.replace("__1__", "__2__"))
    return runs


def _untimed(path: Path) -> dict:
    data = json.loads(path.read_text())
    for key in TIMING:
        data.pop(key)
    return data


def test_each_run_gets_the_eval_json_zoo_eval_gives_it_and_each_env_is_built_once(tmp_path, monkeypatch):
    import zoo.eval_session as session

    built = []
    real_make = session.make_vector_env
    monkeypatch.setattr(
        session, "make_vector_env", lambda spec, n: built.append(spec.env_id) or real_make(spec, n)
    )
    runs = _runs(tmp_path)
    result = zoo_api.evaluate_all(runs, settings=zoo_api.EvalSettings(episodes=4, seed=3))
    assert [o.status for o in result.outcomes] == ["evaluated"] * 4 and result.exit_code == 0
    assert sorted(built) == ["CartPole-v1", "Pendulum-v1"]  # one env per env id, kept for all its runs
    for outcome in result.outcomes:
        alone = zoo_api.evaluate(
            outcome.run_dir, settings=zoo_api.EvalSettings(episodes=4, seed=3), out=tmp_path / "alone.json"
        )
        swept = _untimed(Path(outcome.eval_json))
        assert swept == _untimed(tmp_path / "alone.json")
        assert swept["model_sha256"] is not None and outcome.return_mean == alone.metrics["return_mean"]


def test_a_rerun_skips_what_eval_json_holds_and_evaluates_what_changed(tmp_path):
    runs = _runs(tmp_path)
    zoo_api.evaluate_all(runs, settings=zoo_api.EvalSettings(episodes=3))
    files = sorted(runs.glob("*/eval.json"))
    stamps = [p.stat().st_mtime_ns for p in files]

    again = zoo_api.evaluate_all(runs, settings=zoo_api.EvalSettings(episodes=3))
    assert {o.status for o in again.outcomes} == {"skipped"}
    assert [p.stat().st_mtime_ns for p in files] == stamps  # not rewritten

    other = next(runs.glob("CartPole-v1__dqn__2__*"))
    save_model(other / "dqn.cleanrl_model", "dqn", "CartPole-v1", seed=7)  # new bytes for one run
    changed = zoo_api.evaluate_all(runs, settings=zoo_api.EvalSettings(episodes=3))
    assert {o.run_dir: o.status for o in changed.outcomes}[str(other)] == "evaluated"
    assert [o.status for o in changed.outcomes].count("skipped") == 3
    assert (
        json.loads((other / "eval.json").read_text())["model_sha256"]
        != json.loads(next(runs.glob("CartPole-v1__dqn__1__*/eval.json")).read_text())["model_sha256"]
    )

    assert {
        o.status for o in zoo_api.evaluate_all(runs, settings=zoo_api.EvalSettings(episodes=4)).outcomes
    } == {"evaluated"}  # new settings
    assert {
        o.status
        for o in zoo_api.evaluate_all(runs, settings=zoo_api.EvalSettings(episodes=4), force=True).outcomes
    } == {"evaluated"}


def test_failing_runs_are_rows_and_the_sweep_goes_on(tmp_path):
    runs = _runs(tmp_path)
    dqn = next(runs.glob("CartPole-v1__dqn__1__*"))
    cut = runs / dqn.name.replace("__1__", "__3__")
    shutil.copytree(dqn, cut)
    model = cut / "dqn.cleanrl_model"
    model.write_bytes(model.read_bytes()[:1000])
    unknown = runs / dqn.name.replace("__dqn__", "__mystery__")
    shutil.copytree(dqn, unknown)
    (unknown / "dqn.cleanrl_model").rename(unknown / "mystery.cleanrl_model")

    result = zoo("eval", runs, "--all", "--episodes", "3", "--json")
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    rows = {Path(r["run_dir"]).name: r for r in result.json()["runs"]}
    assert rows[cut.name]["status"] == "failed" and "cut short or corrupt" in rows[cut.name]["message"]
    assert (
        rows[unknown.name]["status"] == "failed"
        and "unknown experiment 'mystery'" in rows[unknown.name]["message"]
    )
    assert not (cut / "eval.json").exists() and not (unknown / "eval.json").exists()
    evaluated = [r for r in rows.values() if r["status"] == "evaluated"]
    assert len(evaluated) == 4 and all(Path(r["eval_json"]).is_file() for r in evaluated)
    assert "6 runs: 4 evaluated, 0 skipped, 2 failed" in result.stderr


def test_filters_narrow_the_sweep(tmp_path):
    runs = _runs(tmp_path)
    result = zoo_api.evaluate_all(runs, settings=zoo_api.EvalSettings(episodes=2), exp_name="dqn")
    assert [Path(o.run_dir).name.split("__")[1] for o in result.outcomes] == ["dqn", "dqn"]
    assert (
        zoo_api.evaluate_all(runs, settings=zoo_api.EvalSettings(episodes=2), env_id="Pendulum-v1")
        .outcomes[0]
        .exp_name
        == "td3_continuous_action"
    )


def test_sweep_usage_and_empty_tree_are_one_line_errors(tmp_path):
    runs = _runs(tmp_path)
    for args, flag in (
        (("--force",), "--force"),
        (("--executor", "ray"), "--executor"),
        (("--all", "--out", "x.json"), "--out"),
        (("--all", "--capture-video"), "--capture-video"),
        (("--all", "--num-cpus", "2"), "Ray settings"),
    ):
        result = zoo("eval", runs, *args)
        assert result.exit_code == 2 and flag in result.stderr and "Traceback" not in result.stderr
    (tmp_path / "empty").mkdir()
    result = zoo("eval", tmp_path / "empty", "--all")
    assert result.exit_code == 1 and result.stderr.startswith("error: no runs found under")
    assert len(result.stderr.strip().splitlines()) == 2  # the error and its hint


def test_ctrl_c_leaves_every_eval_json_whole(tmp_path):
    runs = _runs(tmp_path)

    def stop(outcome):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        zoo_api.evaluate_all(runs, settings=zoo_api.EvalSettings(episodes=2), on_run=stop)
    written = list(runs.glob("*/eval.json"))
    assert len(written) == 1 and json.loads(written[0].read_text())["num_episodes"] == 2
    assert not list(runs.glob("*/*.tmp*"))


def test_a_missing_ray_extra_and_an_address_that_does_not_answer_are_one_line_errors(tmp_path, monkeypatch):
    runs = _runs(tmp_path)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = zoo("eval", runs, "--all", "--executor", "ray", "--address", f"127.0.0.1:{port}")
    assert result.exit_code == 1 and f"no Ray cluster answers at 127.0.0.1:{port}" in result.stderr
    assert not list(runs.glob("*/eval.json"))
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    result = zoo("eval", runs, "--all", "--executor", "ray")
    assert result.exit_code == 1 and "pip install 'rl-zoo-hub[ray]'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray with 2 CPUs for this module; its workers can import tests/ (the dying env)."""
    ray = pytest.importorskip("ray")
    tests = str(Path(__file__).resolve().parent)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
        runtime_env={"env_vars": {"PYTHONPATH": tests}},
    )
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_writes_the_local_sweeps_files(tmp_path, local_ray):
    local, remote = _runs(tmp_path / "local"), _runs(tmp_path / "ray")
    zoo_api.evaluate_all(local, settings=zoo_api.EvalSettings(episodes=4, seed=5))
    result = zoo_api.evaluate_all(
        remote, settings=zoo_api.EvalSettings(episodes=4, seed=5), executor="ray", num_cpus=2
    )
    assert result.workers == 2 and [o.status for o in result.outcomes] == ["evaluated"] * 4
    for mine in sorted(local.glob("*/eval.json")):
        theirs = _untimed(remote / mine.parent.name / "eval.json")
        ours = _untimed(mine)
        assert theirs.pop("checkpoint").replace(str(remote), "") == ours.pop("checkpoint").replace(
            str(local), ""
        )
        assert theirs == ours


@pytest.mark.slow
def test_a_ray_worker_that_dies_fails_only_its_run(tmp_path, local_ray):
    runs = tmp_path / "runs"
    dqn = next(EXAMPLES.glob("CartPole-v1__dqn__1__*"))
    shutil.copytree(dqn, runs / dqn.name)
    shutil.copytree(
        dqn, runs / dqn.name.replace("CartPole-v1", "Dying-v1")
    )  # its env's reset ends the process
    shutil.copytree(dqn, runs / dqn.name.replace("__1__", "__2__"))
    result = zoo_api.evaluate_all(
        runs, settings=zoo_api.EvalSettings(episodes=3), env_module="dying_env", executor="ray", num_cpus=2
    )
    rows = {Path(o.run_dir).name.split("__")[0] + o.run_dir[-1]: o for o in result.outcomes}
    dying = next(o for o in result.outcomes if "Dying" in o.run_dir)
    assert dying.status == "failed" and dying.message.startswith("the Ray worker died")
    assert [o.status for o in result.outcomes if o is not dying] == ["evaluated", "evaluated"], rows
    assert result.exit_code == 1


@pytest.mark.slow
def test_ctrl_c_stops_the_ray_work(tmp_path, local_ray):
    runs = _runs(tmp_path)

    def stop(outcome):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        zoo_api.evaluate_all(
            runs, settings=zoo_api.EvalSettings(episodes=2), executor="ray", num_cpus=2, on_run=stop
        )
    import time

    for _ in range(100):  # the killed actors give their CPUs back
        if local_ray.available_resources().get("CPU") == 2:
            break
        time.sleep(0.1)
    assert local_ray.available_resources().get("CPU") == 2
    assert len(list(runs.glob("*/eval.json"))) == 1
