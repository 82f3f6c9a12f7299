"""One source of truth for a run's env id and seed: a run that says them only in its config is found by the
filters and evaluated, ranked and named on the hub as that config says.

The runs are rsl_rl's, trained by examples/train_rsl_rl.py into Isaac Lab's layout
(``logs/rsl_rl/{experiment}/{date_time}/``): neither folder name carries an env id or a seed; Pendulum-v1 is
in ``params/env.yaml`` and the seed in ``params/agent.yaml`` (7 for one run, 3 for the other). Before discovery
resolved them with the adapter's hooks, ``zoo check logs --env-id Pendulum-v1`` answered "no run matches" for
runs that checked and evaluated fine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import zoo
from train_rsl_rl import configure, train

ENV_ID = "Pendulum-v1"
SEEDS = {"pendulum_mlp": 7, "pendulum_lstm": 3}


@pytest.fixture(scope="module")
def config_named_runs(tmp_path_factory) -> dict[str, Path]:
    """Two real rsl_rl runs whose env id and seed live only in their config, ``{experiment: run dir}``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        logs = tmp_path_factory.mktemp("identity") / "logs"
        runs = {}
        for experiment, seed in SEEDS.items():
            cfg, env = configure(experiment.removeprefix("pendulum_"))
            if seed != cfg["seed"]:
                env.envs.close()
                cfg["seed"] = seed
                env = type(env)(ENV_ID, 8, seed=seed)
            run_dir = logs / "rsl_rl" / experiment / "2026-11-30_10-00-00"
            train(run_dir, cfg, env, checkpoints=1, iterations=1)
            runs[experiment] = run_dir
        return runs
    finally:
        torch.set_num_threads(threads)


def _logs(runs: dict[str, Path]) -> Path:
    return next(iter(runs.values())).parents[2]


def test_the_names_say_nothing_and_discovery_takes_both_from_the_config(config_named_runs):
    from zoo.artifacts.runs import RunFilter
    from zoo.checker import discover_runs
    from zoo.frameworks import get_adapter
    from zoo.registry import load_registry

    logs = _logs(config_named_runs)
    named = list(get_adapter("rsl_rl").discover(logs))  # what listings and names alone say
    assert len(named) == 2 and all((r.env_id, r.seed) == (None, None) for r in named)
    found = {r.path: (r.env_id, r.seed) for r in discover_runs([logs], load_registry(), RunFilter())}
    assert found == {config_named_runs[e]: (ENV_ID, seed) for e, seed in SEEDS.items()}


def test_check_filters_by_the_config_s_env_id_and_seed(config_named_runs):
    logs = _logs(config_named_runs)
    found = zoo("check", logs, "--env-id", ENV_ID, "--json", "--no-cache")
    assert found.exit_code == 0, found.stderr
    reports = {Path(r["run"]["path"]).parent.name: r for r in found.json()}
    assert set(reports) == set(SEEDS)
    for experiment, report in reports.items():
        assert report["status"] == "ok", report
        assert (report["run"]["env_id"], report["run"]["seed"]) == (ENV_ID, SEEDS[experiment])
    (picked,) = zoo("check", logs, "--run-seed", "3", "--json", "--no-cache").json()
    assert Path(picked["run"]["path"]) == config_named_runs["pendulum_lstm"]
    other = zoo("check", logs, "--env-id", "CartPole-v1", "--no-cache")
    assert other.exit_code != 0 and "no run matches --env-id CartPole-v1" in other.stderr


def test_eval_leaderboard_and_push_see_the_config_s_env_and_seed(config_named_runs, tmp_path):
    logs = _logs(config_named_runs)
    picked = zoo("eval", logs, "--run-seed", "7", "-n", "2", "--num-envs", "2", "--quiet")
    assert picked.exit_code == 0, picked.stderr
    mlp = config_named_runs["pendulum_mlp"]
    assert json.loads((mlp / "eval.json").read_text())["task"] == ENV_ID
    swept = zoo("eval", logs, "--all", "--env-id", ENV_ID, "-n", "2", "--num-envs", "2", "--quiet")
    assert swept.exit_code == 0, swept.stderr
    lstm = config_named_runs["pendulum_lstm"]
    assert json.loads((lstm / "eval.json").read_text())["task"] == ENV_ID

    board = zoo("leaderboard", logs, "--env-id", ENV_ID, "--json")
    assert board.exit_code == 0, board.stderr
    (row,) = board.json()["rows"]
    assert (row["env_id"], row["exp_name"], row["run_seeds"]) == (ENV_ID, "rsl_ppo", [3, 7])

    pushed = zoo("push", mlp, "--hf-entity", "lab", "--stage-dir", tmp_path / "stage", "--json")
    assert pushed.exit_code == 0, pushed.stderr
    assert pushed.json()["repo_id"] == f"lab/{ENV_ID}-rsl_ppo-seed7"


def test_check_s_memo_of_discovery_follows_the_config_it_read(config_named_runs, tmp_path):
    """``zoo check`` remembers what discovery found while what it read is unchanged: the config is among it."""
    import shutil

    import yaml

    logs = tmp_path / "logs"
    shutil.copytree(_logs(config_named_runs), logs)
    assert len(zoo("check", logs, "--run-seed", "7", "--json").json()) == 1  # remembered from here on
    agent = logs / "rsl_rl" / "pendulum_mlp" / "2026-11-30_10-00-00" / "params" / "agent.yaml"
    cfg = yaml.safe_load(agent.read_text())
    cfg["seed"] = 11
    agent.write_text(yaml.safe_dump(cfg, sort_keys=False))
    (found,) = zoo("check", logs, "--run-seed", "11", "--json").json()
    assert found["run"]["seed"] == 11 and found["run"]["path"].endswith("pendulum_mlp/2026-11-30_10-00-00")
