"""``zoo leaderboard``: real eval.json files of the bundled CleanRL runs, ranked, with numbers checked
against an independent computation (numpy, scipy called directly, Wilson's closed form)."""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from statistics import NormalDist

import gymnasium as gym
import numpy as np
import pytest
import torch
from helpers import EXAMPLES, zoo
from scipy import stats

import zoo as zoo_api

TD3 = next(EXAMPLES.glob("Pendulum-v1__td3_continuous_action__*"))
DQN = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
C51 = next(EXAMPLES.glob("CartPole-v1__c51__*"))
SUCCESS_ENV = "ZooLeaderboardSuccess-v0"


class _SuccessEnv(gym.Env):
    """CartPole-shaped env whose episodes last 3-7 steps and succeed on even lengths: it publishes
    ``is_success``, which no classic-control env does."""

    observation_space = gym.spaces.Box(-1, 1, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.horizon = 0, int(self.np_random.integers(3, 8))
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        done = self.t >= self.horizon
        info = {"is_success": self.t % 2 == 0} if done else {}
        return np.zeros(4, np.float32), float(self.t), done, False, info


gym.register(SUCCESS_ENV, entry_point=_SuccessEnv)


def _copy(src: Path, root: Path, env_id: str, exp_name: str, seed: int, t: int) -> Path:
    """The bundled run under a new run name (seed, time), its model renamed for ``exp_name``."""
    dst = root / f"{env_id}__{exp_name}__{seed}__{t}"
    shutil.copytree(src, dst)
    for model in dst.glob("*.cleanrl_model"):
        model.rename(dst / f"{exp_name}.cleanrl_model")
    return dst


def _ddpg_from_td3(run: Path) -> None:
    """DDPG's layout (actor, qf1) from the trained TD3 checkpoint (actor, qf1, qf2): a real trained actor."""
    model = run / "ddpg_continuous_action.cleanrl_model"
    actor, qf1, _qf2 = torch.load(model, weights_only=True)
    torch.save((actor, qf1), model)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """Real runs with real eval.json files (zoo.evaluate, 5 episodes):

    * Pendulum td3, 3 seeds, evaluated with eval seeds 0, 1, 2 (mixed settings, different means);
    * Pendulum ddpg (TD3's trained actor), 2 seeds, eval seed 0;
    * CartPole dqn and c51, one seed each (both 500: a tie);
    * the success env, dqn's network, 2 seeds of 12 episodes.
    """
    root = tmp_path_factory.mktemp("leaderboard") / "runs"
    root.mkdir()
    for seed in (1, 2, 3):
        run = _copy(TD3, root, "Pendulum-v1", "td3_continuous_action", seed, 1700000000 + seed)
        zoo_api.evaluate(run, settings=zoo_api.EvalSettings(episodes=5, seed=seed - 1))
    for seed in (1, 2):
        run = _copy(TD3, root, "Pendulum-v1", "ddpg_continuous_action", seed, 1700000100 + seed)
        _ddpg_from_td3(run)
        zoo_api.evaluate(run, settings=zoo_api.EvalSettings(episodes=5, seed=0))
    for src, name in ((DQN, "dqn"), (C51, "c51")):
        zoo_api.evaluate(
            _copy(src, root, "CartPole-v1", name, 1, 1700000200), settings=zoo_api.EvalSettings(episodes=5)
        )
    for seed in (1, 2):
        run = _copy(DQN, root, SUCCESS_ENV, "dqn", seed, 1700000300 + seed)
        zoo_api.evaluate(run, settings=zoo_api.EvalSettings(episodes=12, num_envs=4, seed=seed))
    return root


def _episodes(root: Path, env_id: str, exp_name: str) -> dict[int, list[dict]]:
    """Run seed -> the episodes of its eval.json, read straight from the files."""
    found = {}
    for path in root.glob(f"{env_id}__{exp_name}__*/eval.json"):
        found[int(path.parent.name.split("__")[2])] = json.loads(path.read_text())["episodes"]
    return found


def _row(board, env_id: str, exp_name: str):
    (row,) = [r for r in board.rows if r.env_id == env_id and r.exp_name == exp_name]
    return row


def test_rows_aggregate_over_seeds_as_computed_independently(tree):
    board = zoo_api.leaderboard(tree)
    assert board.problems == [] and board.runs_found == 9
    assert {(r.env_id, r.exp_name) for r in board.rows} == {
        ("Pendulum-v1", "td3_continuous_action"),
        ("Pendulum-v1", "ddpg_continuous_action"),
        ("CartPole-v1", "dqn"),
        ("CartPole-v1", "c51"),
        (SUCCESS_ENV, "dqn"),
    }
    episodes = _episodes(tree, "Pendulum-v1", "td3_continuous_action")
    means = [np.mean([e["return"] for e in episodes[s]]) for s in (1, 2, 3)]
    pooled = np.array([e["return"] for s in (1, 2, 3) for e in episodes[s]])
    row = _row(board, "Pendulum-v1", "td3_continuous_action")
    assert len(set(means)) == 3  # three eval seeds: three different means
    assert row.seeds == 3 and row.episodes == 15 and row.run_seeds == [1, 2, 3]
    assert row.seed_means == pytest.approx(means, abs=1e-9)
    assert row.mean == pytest.approx(np.mean(means), abs=1e-9)
    assert (row.seed_min, row.seed_max) == pytest.approx((min(means), max(means)), abs=1e-9)
    trimmed = np.sort(pooled)[3:-3]  # 25% of 15 episodes is 3 from each end
    assert row.iqm == pytest.approx(trimmed.mean(), abs=1e-9)
    ci = stats.bootstrap(
        (np.array(means),), np.mean, confidence_level=0.95, method="percentile", rng=np.random.default_rng(0)
    ).confidence_interval
    assert row.ci_over == "seeds" and (row.ci_low, row.ci_high) == pytest.approx((ci.low, ci.high), abs=1e-9)
    assert min(means) <= row.ci_low < row.mean < row.ci_high <= max(means)
    assert row.success_rate is None and row.success_episodes == 0
    assert zoo_api.leaderboard(tree).to_json() == board.to_json()  # the fixed rng: the same output again


def test_one_seed_is_bootstrapped_over_its_episodes_and_says_so(tmp_path, tree):
    root = tmp_path / "runs"
    src = next(tree.glob("Pendulum-v1__td3_continuous_action__2__*"))
    shutil.copytree(src, root / src.name)
    returns = np.array([e["return"] for e in _episodes(root, "Pendulum-v1", "td3_continuous_action")[2]])
    (row,) = zoo_api.leaderboard(root).rows
    ci = stats.bootstrap(
        (returns,), np.mean, method="percentile", rng=np.random.default_rng(0)
    ).confidence_interval
    assert row.ci_over == "episodes" and row.seeds == 1 and row.episodes == 5
    assert (row.ci_low, row.ci_high) == pytest.approx(
        (ci.low, ci.high), abs=1e-9
    ) and row.ci_low < row.ci_high
    assert row.mean == pytest.approx(returns.mean(), abs=1e-9)


def test_rows_are_ranked_within_each_env_by_mean(tree):
    board = zoo_api.leaderboard(tree)
    assert [r.env_id for r in board.rows] == sorted(r.env_id for r in board.rows)
    pendulum = [r for r in board.rows if r.env_id == "Pendulum-v1"]
    expected = sorted(pendulum, key=lambda r: -np.mean(r.seed_means))
    assert [r.exp_name for r in pendulum] == [r.exp_name for r in expected]
    assert [r.rank for r in pendulum] == [1, 2]
    cartpole = [r for r in board.rows if r.env_id == "CartPole-v1"]
    assert [(r.rank, r.exp_name, r.mean) for r in cartpole] == [(1, "c51", 500.0), (1, "dqn", 500.0)]  # a tie
    assert _row(board, SUCCESS_ENV, "dqn").rank == 1


def test_mixed_evaluation_settings_mark_the_row(tree):
    board = zoo_api.leaderboard(tree)
    td3 = _row(board, "Pendulum-v1", "td3_continuous_action")
    assert td3.mixed_settings and td3.mixed == ["seed"] and td3.eval_seed is None
    assert (td3.eval_episodes, td3.deterministic) == (5, False)
    ddpg = _row(board, "Pendulum-v1", "ddpg_continuous_action")
    assert not ddpg.mixed_settings and ddpg.mixed == [] and (ddpg.eval_seed, ddpg.eval_episodes) == (0, 5)


def test_success_rate_with_wilson_interval(tree):
    episodes = _episodes(tree, SUCCESS_ENV, "dqn")
    flags = [e["success"] for s in (1, 2) for e in episodes[s]]
    assert all(isinstance(f, bool) for f in flags) and 0 < sum(flags) < len(flags) == 24
    row = _row(zoo_api.leaderboard(tree), SUCCESS_ENV, "dqn")
    k, n = sum(flags), len(flags)
    p, z = k / n, NormalDist().inv_cdf(0.975)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert row.success_episodes == n and row.success_rate == pytest.approx(p)
    assert (row.success_ci_low, row.success_ci_high) == pytest.approx(
        (centre - half, centre + half), abs=1e-9
    )


def test_json_csv_and_markdown_say_the_same(tree):
    result = zoo("leaderboard", tree, "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["schema_version"] == 1 and data["problems"] == []
    assert data["bootstrap"] == {"method": "percentile", "n_resamples": 9999, "rng_seed": 0}
    assert data["rows"] == [r.to_json() for r in zoo_api.leaderboard(tree).rows]
    first = data["rows"][0]
    assert list(first)[:7] == ["rank", "env_id", "exp_name", "mean", "ci_low", "ci_high", "ci_over"]

    result = zoo("leaderboard", tree, "--csv")
    assert result.exit_code == 0, result.stderr
    lines = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(lines) == len(data["rows"])
    for line, row in zip(lines, data["rows"], strict=True):
        assert (line["env_id"], line["exp_name"], int(line["rank"])) == (
            row["env_id"],
            row["exp_name"],
            row["rank"],
        )
        assert float(line["mean"]) == row["mean"] and int(line["seeds"]) == row["seeds"]
        assert line["run_seeds"] == ";".join(map(str, row["run_seeds"]))
        assert line["mixed_settings"] == ("true" if row["mixed_settings"] else "false")
        assert line["success_rate"] == ("" if row["success_rate"] is None else str(row["success_rate"]))

    result = zoo("leaderboard", tree, "--markdown")
    assert result.exit_code == 0, result.stderr
    table = result.stdout.splitlines()
    assert table[0].startswith("| rank | env | experiment | mean | 95% CI | IQM |")
    assert set(table[1]) <= set("|-: ") and len(table) == 2 + len(data["rows"])
    td3 = next(r for r in data["rows"] if r["exp_name"] == "td3_continuous_action")
    line = next(t for t in table if "td3_continuous_action" in t)
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:4] == [str(td3["rank"]), "Pendulum-v1", "td3_continuous_action", f"{td3['mean']:.2f}"]
    assert cells[4] == f"[{td3['ci_low']:.2f}, {td3['ci_high']:.2f}]" and "mixed settings: seed" in cells[-1]
    success = next(t for t in table if SUCCESS_ENV in t)
    assert "%" in success and "[" in success.split("|")[10]


def test_the_terminal_table_and_the_filters(tree):
    result = zoo("leaderboard", tree, env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.stderr
    for name in (
        "td3_continuous_action",
        "ddpg_continuous_action",
        "c51",
        "CI over episodes (1 seed)",
        "mixed settings: seed",
        "5 rows from 9 runs",
    ):
        assert name in result.stdout, name
    result = zoo("leaderboard", tree, "--env-id", "Pendulum-v1", "--json")
    assert {r["env_id"] for r in result.json()["rows"]} == {"Pendulum-v1"}
    result = zoo("leaderboard", tree, "--exp-name", "dqn", "--json")
    assert {(r["env_id"], r["exp_name"]) for r in result.json()["rows"]} == {
        ("CartPole-v1", "dqn"),
        (SUCCESS_ENV, "dqn"),
    }


def test_format_flags_are_exclusive_and_eval_settings_need_eval(tree):
    result = zoo("leaderboard", tree, "--json", "--csv")
    assert result.exit_code == 2 and "exclusive" in result.stderr
    result = zoo("leaderboard", tree, "--episodes", "3")
    assert result.exit_code == 2 and "only with --eval" in result.stderr


def test_problems_are_lines_not_crashes(tmp_path, tree):
    root = tmp_path / "runs"
    good = shutil.copytree(
        next(tree.glob("CartPole-v1__dqn__1__*")), root / "CartPole-v1__dqn__1__1700000200"
    )
    older = shutil.copytree(good, root / "CartPole-v1__dqn__1__1600000000")  # the same seed, trained earlier
    shutil.copytree(DQN, root / "CartPole-v1__dqn__2__1700000000")  # no eval.json
    corrupt = shutil.copytree(
        next(tree.glob("CartPole-v1__c51__*")), root / "CartPole-v1__c51__1__1700000000"
    )
    (corrupt / "eval.json").write_text('{"task": "CartPole-v1", "episodes": [')
    invalid = shutil.copytree(C51, root / "CartPole-v1__c51__2__1700000000")
    (invalid / "eval.json").write_text(json.dumps({"task": "CartPole-v1", "episodes": [{"return": "high"}]}))
    unknown = _copy(DQN, root, "CartPole-v1", "myalgo", 1, 1700000000)

    board = zoo_api.leaderboard(root)
    problems = dict(board.problems)
    assert problems[str(root / "CartPole-v1__dqn__2__1700000000")] == (
        f"no eval.json: run zoo eval {root / 'CartPole-v1__dqn__2__1700000000'}, or zoo leaderboard --eval"
    )
    assert problems[str(corrupt / "eval.json")].startswith("invalid eval.json: not JSON")
    assert problems[str(invalid / "eval.json")] == (
        "invalid eval.json: episode 0 has no finite return; rerun zoo eval"
    )
    assert problems[str(unknown)].startswith("unknown experiment 'myalgo'")
    assert "only the newest run of a seed is ranked" in problems[str(older)]
    assert len(board.problems) == 5
    (row,) = board.rows
    assert (row.exp_name, row.seeds, row.runs) == ("dqn", 1, [str(good)])

    result = zoo("leaderboard", root)
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("not ranked:")]
    assert len(lines) == 5 and any(str(corrupt / "eval.json") in line for line in lines)
    assert "Traceback" not in result.stderr + result.stdout


def test_nothing_to_rank_exits_1_with_one_error(dqn_run):
    result = zoo("leaderboard", dqn_run.parent)
    assert result.exit_code == 1
    assert f"no eval.json: run zoo eval {dqn_run}, or zoo leaderboard --eval" in " ".join(
        result.stderr.split()
    )
    assert "error: nothing to rank: none of the 1 run found has a usable eval.json" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    result = zoo("leaderboard", dqn_run.parent, "--json")
    assert result.exit_code == 1 and result.json()["rows"] == [] and len(result.json()["problems"]) == 1


def test_a_run_whose_model_cannot_be_evaluated_says_why_not_to_run_zoo_eval(dqn_run):
    """Telling the user to run zoo eval on a cut-short model only leads to the same error: the line names it."""
    model = dqn_run / "dqn.cleanrl_model"
    model.write_bytes(model.read_bytes()[:3000])
    result = zoo("leaderboard", dqn_run.parent)
    line = " ".join(result.stderr.split())
    assert result.exit_code == 1 and "Traceback" not in line
    assert f"not ranked: {dqn_run}: no eval.json, and its model cannot be evaluated: truncated" in line, line
    assert "run zoo eval" not in line.split("error:")[0]


def test_an_empty_tree_is_one_error_line(tmp_path):
    (tmp_path / "empty").mkdir()
    result = zoo("leaderboard", tmp_path / "empty")
    assert result.exit_code == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: no runs found under {tmp_path / 'empty'}" and lines[1].startswith("hint:")
    assert len(lines) == 2 and "Traceback" not in result.stderr
    result = zoo("leaderboard", tmp_path / "empty", "--exp-name", "dqn")
    assert result.exit_code == 1 and "error: no run matches --exp-name dqn under" in result.stderr


def test_eval_fills_missing_eval_json_and_keeps_existing_ones(dqn_run, tree):
    kept = shutil.copytree(
        next(tree.glob("CartPole-v1__c51__*")), dqn_run.parent / "CartPole-v1__c51__1__1700000200"
    )
    before = (kept / "eval.json").read_bytes()
    assert not (dqn_run / "eval.json").exists()
    result = zoo("leaderboard", dqn_run.parent, "--eval", "--episodes", "3", "--num-envs", "3", "--json")
    assert result.exit_code == 0, result.stderr
    written = json.loads((dqn_run / "eval.json").read_text())
    assert written["num_episodes"] == 3 and written["exp_name"] == "dqn"
    assert (kept / "eval.json").read_bytes() == before
    rows = {r["exp_name"]: r for r in result.json()["rows"]}
    assert rows["dqn"]["episodes"] == 3 and rows["dqn"]["mean"] == np.mean(
        [e["return"] for e in written["episodes"]]
    )
    assert rows["c51"]["episodes"] == 5 and result.json()["problems"] == []


def test_the_api_function_stays_callable_and_cli_starts_without_scipy(tree):
    zoo_api.leaderboard(tree, env_id="CartPole-v1")
    assert callable(zoo_api.leaderboard) and "leaderboard" in zoo_api.__all__
    assert "leaderboard" in __import__("zoo.api").api.__all__
    code = "import sys, zoo.cli; assert 'scipy' not in sys.modules, 'scipy imported at start-up'"
    subprocess.run([sys.executable, "-c", code], check=True)
