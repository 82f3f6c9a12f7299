"""``zoo report``: a page built from real CleanRL runs (their TensorBoard logs, real evaluations), opened in
a real headless Chromium: every image loads and renders, the table is the leaderboard's. Also the events
reader's learning curves, the plots' determinism, and the report folder's atomic replacement."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from helpers import EXAMPLES, zoo

import zoo as zoo_api

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
DQN = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
C51 = next(EXAMPLES.glob("CartPole-v1__c51__*"))
TD3 = next(EXAMPLES.glob("Pendulum-v1__td3_continuous_action__*"))


def _copy(src: Path, runs: Path, seed: int) -> Path:
    env_id, exp_name, _seed, started = src.name.split("__")
    dst = runs / f"{env_id}__{exp_name}__{seed}__{int(started) + seed}"
    shutil.copytree(src, dst)
    return dst


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """dqn under three seed names (seed 3 never evaluated), c51 under two (seed 2's events file cut short),
    td3 once on Pendulum; each other run evaluated for 5 episodes, as zoo eval writes eval.json."""
    root = tmp_path_factory.mktemp("report") / "runs"
    made = (
        [_copy(DQN, root, s) for s in (1, 2, 3)]
        + [_copy(C51, root, s) for s in (1, 2)]
        + [_copy(TD3, root, 1)]
    )
    events = next(made[4].glob("events.out.tfevents.*"))
    events.write_bytes(events.read_bytes()[: events.stat().st_size * 2 // 3])
    for run in made:
        if "__dqn__3__" not in run.name:
            zoo_api.evaluate(run, settings=zoo_api.EvalSettings(episodes=5, num_envs=2, device="cpu"))
    return root


@pytest.fixture(scope="module")
def report(runs):
    return zoo_api.report([runs], runs.parent / "report")


def _driver():
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        pytest.fail(
            f"Chromium is needed for this test: {CHROMIUM} or {CHROMEDRIVER} is missing; install them "
            "(Debian: apt-get install chromium chromium-driver; python3 dev.py test does it as root)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,2400",
    ):
        options.add_argument(arg)
    options.binary_location = str(CHROMIUM)
    return webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))


def test_page_renders_in_chromium_with_every_image_and_the_leaderboard(report, runs, tmp_path):
    from selenium.webdriver.common.by import By

    board = zoo_api.leaderboard([runs]).to_json()
    assert {(r["env_id"], r["exp_name"], r["seeds"]) for r in board["rows"]} == {
        ("CartPole-v1", "c51", 2),
        ("CartPole-v1", "dqn", 2),
        ("Pendulum-v1", "td3_continuous_action", 1),
    }
    driver = _driver()
    try:
        driver.get(report.index.resolve().as_uri())
        shot = tmp_path / "report.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        if os.environ.get("ZOO_TEST_ARTIFACTS"):  # CI's artifact folder, when it has one
            keep = Path(os.environ["ZOO_TEST_ARTIFACTS"])
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shot, keep / "zoo-report.png")
        images = driver.find_elements(By.TAG_NAME, "img")
        assert len(images) == 4  # per env: learning curves and eval returns
        for image in images:
            state = driver.execute_script(
                "const i = arguments[0], r = i.getBoundingClientRect();"
                "return [i.complete, i.naturalWidth, r.width, r.height, i.getAttribute('src')];",
                image,
            )
            assert state[0] and state[1] > 0 and state[2] > 0 and state[3] > 0, state
            assert not state[4].startswith(("http:", "https:", "/")), state  # beside the page, no network
        shown = [
            (
                tr.get_attribute("data-env"),
                tr.get_attribute("data-exp"),
                int(tr.get_attribute("data-seeds")),
                int(tr.get_attribute("data-rank")),
                tr.find_elements(By.TAG_NAME, "td")[2].text,
            )
            for tr in driver.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody tr")
        ]
        assert shown == [
            (r["env_id"], r["exp_name"], r["seeds"], r["rank"], r["exp_name"]) for r in board["rows"]
        ]
        problems = driver.find_element(By.CSS_SELECTOR, "ul.problems").text
        assert "CartPole-v1__dqn__3__" in problems and "no eval.json" in problems
        assert "cut short" in problems
        assert driver.execute_script("return document.scripts.length") == 0
    finally:
        driver.quit()


def test_report_folder_holds_the_page_its_images_and_the_leaderboard_json(report, runs):
    out = report.out
    assert sorted(p.name for p in out.iterdir()) == sorted(["index.html", "report.json", *report.images])
    summary = json.loads((out / "report.json").read_text())
    assert summary["leaderboard"] == zoo_api.leaderboard([runs]).to_json()
    html = (out / "index.html").read_text()
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")
    assert "<style>" in html and "Problems" in html
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".report.")]  # no work folder left


def test_cli_writes_the_page_and_an_empty_tree_is_one_error(runs, tmp_path):
    result = zoo("report", runs, "--out", tmp_path / "r", "--exp-name", "dqn")
    assert result.exit_code == 0, result.stderr
    assert "wrote" in result.stdout and "no eval.json" in result.stderr
    (tmp_path / "empty").mkdir()
    empty = zoo("report", tmp_path / "empty", "--out", tmp_path / "r2")
    assert empty.exit_code == 1 and empty.stderr.count("error:") == 1 and "hint:" in empty.stderr
    assert not (tmp_path / "r2").exists()


def test_existing_report_is_replaced_only_once_the_new_one_is_complete(runs, tmp_path, monkeypatch):
    out = tmp_path / "r"
    zoo_api.report([runs], out, env_id="Pendulum-v1")
    before = (out / "index.html").read_text()

    def broken(*_args, **_kwargs):
        raise RuntimeError("disk full")

    from zoo import plots

    monkeypatch.setattr(plots, "eval_strip", broken)
    with pytest.raises(RuntimeError):
        zoo_api.report([runs], out)
    assert (out / "index.html").read_text() == before  # the old report, whole
    assert [p.name for p in tmp_path.iterdir()] == ["r"]
    monkeypatch.undo()
    zoo_api.report([runs], out)
    assert "CartPole-v1" in (out / "index.html").read_text()

    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    refused = zoo("report", runs, "--out", tmp_path / "mine")
    assert refused.exit_code == 2 and "not a zoo report" in refused.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "x"


def test_a_run_without_events_file_is_a_problem_line_not_a_failure(runs, tmp_path):
    copy = tmp_path / "runs" / "Pendulum-v1__td3_continuous_action__1__1796029793"
    shutil.copytree(runs / copy.name, copy)
    for events in copy.glob("events.out.tfevents.*"):
        events.unlink()
    result = zoo_api.report([tmp_path / "runs"], tmp_path / "r")
    assert (str(copy), "no TensorBoard events file: no learning curve") in result.problems
    assert result.images == ["01-Pendulum-v1-eval-returns.png"]  # no curve to draw, the eval strip still
    html = (tmp_path / "r" / "index.html").read_text()
    assert "no TensorBoard events file" in html and "No learning curve" in html


def test_missing_chromium_fails_the_test_with_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(sys.modules[__name__], "CHROMIUM", tmp_path / "no-chromium")
    with pytest.raises(pytest.fail.Exception, match="install"):
        _driver()


def test_learning_curve_reads_every_point_and_a_damaged_file_what_came_before(tmp_path):
    from zoo.artifacts.tensorboard import last_scalar, scalars

    events = next(DQN.glob("events.out.tfevents.*"))
    points = scalars(events, "charts/episodic_return")
    assert len(points) > 100 and points[-1] == last_scalar(events, "charts/episodic_return")
    assert [s for s, _ in points] == sorted(s for s, _ in points)
    cut = tmp_path / events.name
    cut.write_bytes(events.read_bytes()[: events.stat().st_size // 2])
    problems: list[str] = []
    partial = scalars(cut, "charts/episodic_return", problems)
    assert 0 < len(partial) < len(points) and partial == points[: len(partial)]
    assert len(problems) == 1 and "cut short" in problems[0]
    assert scalars(tmp_path / "missing", "charts/episodic_return", problems) == []
    assert "unreadable" in problems[-1]


def test_plots_are_deterministic_pngs_and_the_band_is_a_t_interval(tmp_path):
    import numpy as np
    from PIL import Image
    from scipy import stats

    from zoo import plots

    a = [(s, float(s % 7)) for s in range(0, 1000, 10)]
    b = [(s, float(s % 5) + 1) for s in range(5, 995, 10)]
    for name in ("one.png", "two.png"):
        plots.learning_curves({"x": [a, b], "y": [a]}, tmp_path / name, title="t")
    assert (tmp_path / "one.png").read_bytes() == (tmp_path / "two.png").read_bytes()
    plots.eval_strip({"x": [("1", [1.0, 2.0]), ("2", [3.0])]}, tmp_path / "strip.png")
    plots.return_histogram([500.0] * 5, tmp_path / "hist.png")
    for name in ("one.png", "strip.png", "hist.png"):
        with Image.open(tmp_path / name) as image:
            assert image.format == "PNG" and image.size == (700, 400)
    grid, mean, low, high = plots.curve_band([a, b])
    assert grid[0] == 5 and grid[-1] == 985 and len(grid) == plots.GRID_POINTS
    values = np.stack([np.interp(grid, *np.asarray(s, dtype=float).T) for s in (a, b)])
    expect = stats.t.interval(0.95, 1, loc=values.mean(0), scale=stats.sem(values, axis=0))
    same = stats.sem(values, axis=0) > 0
    assert np.allclose(low[same], expect[0][same]) and np.allclose(high[same], expect[1][same])
    assert plots.curve_band([a])[2] is None  # one seed: its own curve, no band
    assert not list(tmp_path.glob(".*.tmp"))
