"""Test set-up: tests/ and examples/ importable (helpers.py, the examples' modules), headless MuJoCo, a private zoo cache per test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "examples"))
os.environ.setdefault("MUJOCO_GL", "egl")

from every_kind import mismatch_runs, untrained  # noqa: E402, F401 - session fixtures: a model of every kind

#: Fixtures that train with a real library (seconds to minutes each): their tests are marked ``trains``.
TRAINING_FIXTURES = frozenset(
    {
        "models",
        "trained",
        "train_examples",
        "trained_runs",
        "dqn_real_run",
        "c51_run",
        "seeds",
        "skrl_runs",
        "rl_games_runs",
        "rl_games_reference",
        "deprl_run",
        "skrl_reference",
        "skrl_kind_runs",
        "skrl_rnn_runs",
        "skrl_cnn_run",
        "rsl_cnn_run",
        "rsl_distilled",
        "rlzoo_runs",
        "atari_reference",
        "contrib_run",
        "contrib_models",
        "pendulum_runs",
        "skrl_pendulum",
        "sb3_run",
        "go2_run",
        "short_run",
        "tinyrl_run",
        "tianshou_runs",
        "tianshou_reference",
        "skrl_go2_run",
        "genesis_hover_run",
        "mismatch_runs",
        "torchrl_runs",
        "release_runs",
        "retrained_dqn",
        "sb3_releases",
        "config_named_runs",
        "sf_runs",
    }
)


def pytest_collection_modifyitems(items):
    """``python3 dev.py test --fast`` leaves out what trains: the fast tier for a development loop."""
    for item in items:
        if TRAINING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.trains)


@pytest.fixture
def dqn_run(tmp_path):
    """A private copy of the bundled dqn run, as ``runs/<name>`` (it has no eval.json)."""
    import shutil

    from helpers import EXAMPLES

    src = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
    dst = tmp_path / "runs" / src.name
    shutil.copytree(src, dst)
    return dst


@pytest.fixture(scope="session")
def go2_run(tmp_path_factory):
    """A Genesis go2_train.py run on zoo's Go2 task (8 envs, 2 iterations): logs/go2-walking with cfgs.pkl,
    model_0.pt and model_1.pt; shared by the Genesis test modules (session-scoped: built once per xdist worker, whichever
    modules the worker is handed)."""
    from genesis_helpers import train_go2_run

    return train_go2_run(tmp_path_factory.mktemp("genesis-go2"), num_envs=8, iterations=2)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Each test gets its own zoo cache dir: no test reads another's memo or the user's."""
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path_factory.mktemp("zoo-cache")))


@pytest.fixture(autouse=True)
def _worker_priority_unchanged():
    """A test that runs ``zoo watch`` in-process must pass ``--nice 0 --max-cpu 0``: the watcher's defaults renice
    the process and pin it to one core, which would slow every later test of this worker (and fail
    test_watch's priority test there). Fails the test that changed them."""
    before = (os.nice(0), os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None)
    yield
    after = (os.nice(0), os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None)
    assert after == before, (
        "this test reniced or pinned the test process: pass --nice 0 --max-cpu 0 to zoo watch"
    )
