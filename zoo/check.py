"""``zoo check``: find runs under paths and say, per run, whether it holds a usable model."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

from zoo.artifacts.cache import FileMemo
from zoo.artifacts.report import RunReport
from zoo.artifacts.runs import Run, RunFilter
from zoo.errors import ZooError
from zoo.registry import Registry


def adapter(framework: str):
    """The adapter module for a framework named in the registry."""
    return importlib.import_module(f"zoo.frameworks.{framework}")


def frameworks(registry: Registry) -> list[str]:
    return sorted({entry.framework for entry in registry.entries.values()})


def discover_runs(paths: list[Path], registry: Registry, run_filter: RunFilter) -> Iterator[Run]:
    """Runs of every registered framework under ``paths``, narrowed by ``run_filter``."""
    for path in paths:
        if not path.exists():
            raise ZooError(f"path not found: {path}", hint="give a runs folder, a run dir or a model file")
        for framework in frameworks(registry):
            for run in adapter(framework).discover(path):
                if run_filter.matches(run):
                    yield run


def check_paths(
    paths: list[Path], registry: Registry, run_filter: RunFilter, use_cache: bool = True
) -> list[RunReport]:
    """One report per run found; an error when nothing (or nothing matching) is there."""
    runs = list(discover_runs(paths, registry, run_filter))
    if not runs:
        where = ", ".join(map(str, paths))
        if run_filter.active():
            raise ZooError(f"no run matches {run_filter.describe()} under {where}",
                           hint="run zoo check without filters to see what is there")  # fmt: skip
        raise ZooError(
            f"no runs found under {where}", hint="expected runs/{env_id}__{exp_name}__{seed}__{time}/"
        )
    memo = FileMemo("events", enabled=use_cache)
    reports = []
    for run in runs:
        report = adapter(run.framework).inspect_run(run, registry)
        _add_training_return(report, memo)
        reports.append(report)
    memo.save()
    return reports


def _add_training_return(report: RunReport, memo: FileMemo) -> None:
    """The last logged training return (the adapter's ``TRAIN_RETURN_TAG``), remembered per events file."""
    events = report.run.events_file
    if events is None or "train_return" in report.details:
        return
    tag = getattr(adapter(report.run.framework), "TRAIN_RETURN_TAG", "charts/episodic_return")
    hit, last = memo.get(events, tag)
    if not hit:
        from zoo.artifacts.tensorboard import last_scalar

        last = last_scalar(events, tag=tag)
        memo.put(events, last, tag)
    if last is not None:
        report.details["train_return"] = {"step": int(last[0]), "value": float(last[1])}
