"""One sweep, start to end: plan every run, then hand the pending ones to the chosen executor."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.errors import UsageError
from zoo.sweep.local import OnEpisode, OnRun, run_local
from zoo.sweep.outcome import SweepResult
from zoo.sweep.plan import SweepItem, SweepSettings, plan_sweep

if TYPE_CHECKING:
    from zoo.artifacts.runs import RunFilter
    from zoo.registry import Registry

EXECUTORS = ("local", "ray")


def run_sweep(
    paths: Iterable[Path],
    registry: Registry,
    run_filter: RunFilter,
    settings: SweepSettings,
    *,
    force: bool = False,
    executor: str = "local",
    address: str | None = None,
    num_cpus: int | None = None,
    num_gpus: float = 0,
    on_planned: Callable[[list[SweepItem]], None] | None = None,
    on_run: OnRun | None = None,
    on_episode: OnEpisode | None = None,
) -> SweepResult:
    """Evaluate every run found under ``paths`` (see :func:`zoo.api.evaluate_all`). ``on_planned`` gets the
    planned items before any rollout (skipped and unplannable runs already decided), ``on_run`` each outcome
    as it is decided, ``on_episode`` the local executor's episodes."""
    if executor not in EXECUTORS:
        raise UsageError(f"unknown executor {executor!r}", hint=f"use one of {', '.join(EXECUTORS)}")
    if executor == "local" and (address or num_cpus or num_gpus):
        raise UsageError("--address, --num-cpus and --num-gpus are Ray settings", hint="add --executor ray")
    start = time.perf_counter()
    items = plan_sweep(paths, registry, run_filter, settings, force=force)
    if on_planned is not None:
        on_planned(items)
    report = on_run or (lambda _outcome: None)
    for item in items:
        if not item.pending:
            report(item.outcome)
    if executor == "ray":
        from zoo.sweep.ray_executor import run_ray

        outcomes, workers = run_ray(items, report, address=address, num_cpus=num_cpus, num_gpus=num_gpus)
    else:
        outcomes, workers = run_local(items, report, on_episode), 1
    return SweepResult(outcomes, executor, workers, round(time.perf_counter() - start, 3))
