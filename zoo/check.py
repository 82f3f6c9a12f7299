"""``zoo check``: find runs under paths and say, per run, whether it holds a usable model.

``zoo check`` is what users run on a whole cluster's ``runs/``, so it is built for trees of many
thousands of runs: discovery lists each folder once however many adapters walk it
(:func:`~zoo.artifacts.runs.shared_listings`); a run whose files are unchanged gets its remembered
verdict (:class:`~zoo.artifacts.cache.VerdictMemo`) without a file being opened; and when many runs
must be read, they are read by one worker process per core (forked after the first run of each kind
was read here, so that imports and env probes are paid once).
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from zoo.artifacts.cache import VerdictMemo, context, stamp
from zoo.artifacts.report import RunReport
from zoo.artifacts.runs import Run, RunFilter, shared_listings
from zoo.errors import ZooError
from zoo.registry import Registry

#: Runs to read before more than one process is worth its start-up.
PARALLEL_FROM = 64


def adapter(framework: str):
    """The adapter module for a framework named in the registry."""
    return importlib.import_module(f"zoo.frameworks.{framework}")


def frameworks(registry: Registry) -> list[str]:
    return sorted({entry.framework for entry in registry.entries.values()})


def discover_runs(paths: list[Path], registry: Registry, run_filter: RunFilter) -> Iterator[Run]:
    """Runs of every registered framework under ``paths``, narrowed by ``run_filter``, each once."""
    seen: set[tuple[str, str, str | None]] = set()
    with shared_listings():
        for path in paths:
            if not path.exists():
                raise ZooError(
                    f"path not found: {path}", hint="give a runs folder, a run dir or a model file"
                )
            for framework in frameworks(registry):
                for run in adapter(framework).discover(path):
                    model = os.path.abspath(run.model_file) if run.model_file else None
                    key = (run.framework, os.path.abspath(run.path), model)
                    if run_filter.matches(run) and key not in seen:
                        seen.add(key)
                        yield run


def check_paths(paths: list[Path], registry: Registry, run_filter: RunFilter, use_cache: bool = True,
                on_progress: Callable[[int, int], None] | None = None) -> list[RunReport]:  # fmt: skip
    """One report per run found; an error when nothing (or nothing matching) is there.

    ``on_progress(done, total)`` is called as runs are read (not for remembered ones).
    """
    runs = list(discover_runs(paths, registry, run_filter))
    if not runs:
        where = ", ".join(map(str, paths))
        if run_filter.active():
            raise ZooError(f"no run matches {run_filter.describe()} under {where}",
                           hint="run zoo check without filters to see what is there")  # fmt: skip
        raise ZooError(
            f"no runs found under {where}", hint="expected runs/{env_id}__{exp_name}__{seed}__{time}/"
        )
    memo = VerdictMemo(context(registry.sources), enabled=use_cache)
    keys = [json.dumps(run.to_json(), sort_keys=True) for run in runs]
    stamps = [stamp(adapter(run.framework).inputs(run)) for run in runs]
    reports: list[RunReport | None] = []
    for key, file_stamp in zip(keys, stamps, strict=True):
        cached = memo.get(key, file_stamp)
        reports.append(RunReport.from_json(json.loads(cached)) if cached is not None else None)
    todo = [i for i, report in enumerate(reports) if report is None]
    for i, data in zip(todo, _inspect_all([runs[i] for i in todo], registry, on_progress), strict=True):
        reports[i] = RunReport.from_json(data)
        memo.put(keys[i], stamps[i], data)
    memo.save()
    return reports  # type: ignore[return-value]


def inspect(run: Run, registry: Registry) -> dict:
    """One run's report, as JSON: the adapter's verdict plus the last training return it logged."""
    framework = adapter(run.framework)
    report = framework.inspect_run(run, registry)
    events = report.run.events_file
    if events is not None and "train_return" not in report.details:
        from zoo.artifacts.tensorboard import last_scalar

        last = last_scalar(events, tag=framework.TRAIN_RETURN_TAG)
        if last is not None:
            report.details["train_return"] = {"step": int(last[0]), "value": float(last[1])}
    return report.to_json()


_WORKER_REGISTRY: Registry | None = None  # what a forked worker inspects with (inherited, not pickled)


def _inspect_in_worker(run: Run) -> dict:
    assert _WORKER_REGISTRY is not None
    return inspect(run, _WORKER_REGISTRY)


def _inspect_all(runs: list[Run], registry: Registry, on_progress) -> Iterator[dict]:
    """Reports in order; with many runs and several cores, worker processes read all but the first of
    each kind (framework, experiment, env), which this process reads to warm its imports and caches."""
    total, done = len(runs), 0
    workers = min(os.cpu_count() or 1, 8)
    if total < PARALLEL_FROM or workers < 2:
        for run in runs:
            yield inspect(run, registry)
            done += 1
            if on_progress:
                on_progress(done, total)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _WORKER_REGISTRY
    first = {}
    for i, run in enumerate(runs):
        first.setdefault((run.framework, run.exp_name, run.env_id), i)
    warm = {i: inspect(runs[i], registry) for i in first.values()}
    _WORKER_REGISTRY = registry
    rest = [run for i, run in enumerate(runs) if i not in warm]
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = pool.map(
                _inspect_in_worker, rest, chunksize=max(1, min(256, len(rest) // (workers * 8)))
            )
            for i in range(total):
                yield warm[i] if i in warm else next(results)
                done += 1
                if on_progress:
                    on_progress(done, total)
    finally:
        _WORKER_REGISTRY = None
