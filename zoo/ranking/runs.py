"""Which runs a leaderboard ranks: zoo's own discovery (what ``zoo check`` and ``zoo eval`` find), and
those of them that still need an evaluation (``zoo leaderboard --eval``).

Apart from :mod:`zoo.ranking.records` on purpose: reading an eval.json is pure and the hub server uses it
(:mod:`zoo.hub_server.scores`), while discovery goes through the checker and so reaches every adapter.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.ranking.records import eval_path

if TYPE_CHECKING:
    from zoo.artifacts.runs import Run, RunFilter
    from zoo.registry import Registry


def discover(paths: Iterable[Path], registry: Registry, run_filter: RunFilter) -> list[Run]:
    """zoo's own discovery (what ``zoo check`` and ``zoo eval`` find), in path order; none is an error."""
    from zoo.checker import found_runs

    return found_runs(list(paths), registry, run_filter, "zoo leaderboard")


def runs_without_eval(paths: Iterable[Path], registry: Registry, run_filter: RunFilter) -> list[Path]:
    """The run dirs (or lone model files) under ``paths`` that have no eval.json and whose experiment the
    registry knows: what ``zoo leaderboard --eval`` evaluates. Runs that have one are left alone, whatever
    settings it was made with."""
    return [
        Path(run.path)
        for run in discover(paths, registry, run_filter)
        if eval_path(run) is None and run.exp_name in registry.entries
    ]
