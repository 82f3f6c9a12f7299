"""``zoo check``: find runs under paths and say, per run, whether it holds a usable model.

``zoo check`` is what users run on a whole cluster's ``runs/``, so it is built for trees of many
thousands of runs: discovery lists each folder once however many adapters walk it
(:func:`~zoo.artifacts.runs.shared_listings`); a run whose files are unchanged gets its remembered
verdict (:class:`~zoo.artifacts.cache.VerdictMemo`) without a file being opened; and when many runs
must be read, they are read by one worker process per core (forked after the first run of each kind
was read here, so that imports and env probes are paid once).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.artifacts.cache import CheckMemo, context, stamp
from zoo.artifacts.forking import fork_is_safe
from zoo.artifacts.report import WARNING, RememberedReport, RunReport
from zoo.artifacts.runs import Run, RunFilter, shared_listings
from zoo.errors import ZooError
from zoo.frameworks import BEST_MODEL, framework_names, get_adapter, plugin_sources
from zoo.registry import Entry, Registry
from zoo.strict_json import dumps, jsonable

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event

#: Runs to read before more than one process is worth its start-up.
PARALLEL_FROM = 64


def frameworks(registry: Registry) -> list[str]:
    return sorted({entry.framework for entry in registry.entries.values()})


def unique_paths(paths: list[Path]) -> list[Path]:
    """``paths`` without repeats (``runs``, ``./runs`` and ``runs/`` are one folder), in the order given."""
    seen: dict[str, Path] = {}
    for path in paths:
        seen.setdefault(os.path.realpath(path), Path(path))
    return list(seen.values())


def discover_runs(paths: list[Path], registry: Registry, run_filter: RunFilter) -> Iterator[Run]:
    """Runs of every registered framework under ``paths``, narrowed by ``run_filter``, each once; each run's
    env id and seed resolved here, once (:func:`identified`), so that the filter sees what evaluation will."""
    seen: set[tuple[str, str, str | None]] = set()
    with shared_listings():
        for path in paths:
            if not path.exists():
                raise ZooError(
                    f"path not found: {path}", hint="give a runs folder, a run dir or a model file"
                )
            for framework in frameworks(registry):
                for run in map(identified, get_adapter(framework).discover(path)):
                    model = os.path.abspath(run.model_file) if run.model_file else None
                    key = (run.framework, os.path.abspath(run.path), model)
                    if run_filter.matches(run) and key not in seen:
                        seen.add(key)
                        yield run


def found_runs(paths: list[Path], registry: Registry, run_filter: RunFilter, command: str) -> list[Run]:
    """Every run under ``paths`` that ``run_filter`` keeps, in path order (what ``zoo eval --all``, ``zoo
    leaderboard`` and ``zoo report`` go through); none is :func:`no_runs` for ``command``."""
    paths = unique_paths([Path(p) for p in paths])
    runs = sorted(discover_runs(paths, registry, run_filter), key=lambda r: (str(r.path), str(r.model_file)))
    if not runs:
        raise no_runs(paths, registry, run_filter, command)
    return runs


def no_runs(paths: list[Path], registry: Registry, run_filter: RunFilter, command: str) -> ZooError:
    """The error of a search that found no run: what the filters left out, else the layouts zoo recognises."""
    where = ", ".join(map(str, paths))
    if run_filter.active():
        return ZooError(
            f"no run matches {run_filter.describe()} under {where}",
            hint=f"run {command} without filters to see what is there",
        )
    layouts = "; ".join(get_adapter(name).layout_hint for name in frameworks(registry))
    return ZooError(f"no runs found under {where}", hint=f"zoo recognises {layouts}")


def identified(run: Run) -> Run:
    """A discovered run with its env id and seed resolved, the one source every command reads them from: what
    its names say, else the env zoo watch evaluated a best model on, else the run's own config (the adapter's
    :meth:`~zoo.frameworks.base.Adapter.identify`)."""
    if run.env_id is None and run.model_file is not None:
        run.env_id = _recorded_env_id(run.model_file)
    return get_adapter(run.framework).identify(run)


def _recorded_env_id(model_file: Path) -> str | None:
    """The env zoo watch evaluated a best model on, from the ``best_model_meta.json`` beside it: a copy
    named ``best_model.zip`` no longer says its env the way its checkpoint's folder or name did."""
    if not model_file.name.startswith(BEST_MODEL):
        return None
    from zoo.artifacts.runs import note_read
    from zoo.watcher.records import BEST_META_FILE, recorded_env_id

    note_read(model_file.parent / BEST_META_FILE)
    return recorded_env_id(model_file)


def check_paths(
    paths: list[Path],
    registry: Registry,
    run_filter: RunFilter,
    use_cache: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
    detached_save: bool = False,
) -> list[RunReport | RememberedReport]:
    """One report per run found; an error when nothing (or nothing matching) is there.

    ``on_progress(done, total)`` is called as runs are read (not for remembered ones). A remembered
    verdict comes back as a :class:`~zoo.artifacts.report.RememberedReport`, which reads like a report.
    ``detached_save`` writes the memo from a forked process afterwards (the ``zoo`` command's choice,
    never a library caller's: it forks the calling process).
    """
    paths = unique_paths(paths)
    packages = [pkg for name in framework_names() for pkg in get_adapter(name).packages]
    memo = CheckMemo(
        context(registry.sources, packages, plugin_sources()), enabled=use_cache, detached=detached_save
    )
    found, returns = _meant(paths, *_found(paths, registry, memo), registry, run_filter)
    keep = list(range(len(found)))
    unnamed = next((p for p in paths if p.is_file()), None) if run_filter.exp_name is None else None
    if not keep and unnamed is not None:
        raise ZooError(
            f"{unnamed}: no framework recognises this file by its name",
            hint="pass --exp-name to say which experiment it is (zoo registry list shows them), and "
            "--env-id for its env",
        )
    if not keep:
        raise no_runs(paths, registry, run_filter, "zoo check")
    stamps = {i: stamp(found[i][1]) for i in keep}
    reports: dict[int, RunReport | RememberedReport] = {}
    for i in keep:
        remembered = memo.verdict(found[i][0], stamps[i])
        if remembered:
            reports[i] = RememberedReport(*remembered)
    todo = [i for i in keep if i not in reports]
    tasks = [(found[i][0], returns.get(i, UNREAD)) for i in todo]
    for i, (status, text) in zip(todo, _inspect_all(tasks, registry, on_progress), strict=True):
        reports[i] = RememberedReport(status, text)
        memo.put_verdict(found[i][0], stamps[i], status, text)
    memo.save()
    return [reports[i] for i in keep]


#: A training return not read yet (None means read, and never logged).
UNREAD = "unread"
Found = list[tuple[str, list[str]]]


def _meant(
    paths: list[Path],
    found: Found,
    returns: dict[int, tuple | None],
    registry: Registry,
    run_filter: RunFilter,
) -> tuple[Found, dict[int, tuple | None]]:
    """The runs ``run_filter`` means, as :func:`check_paths` reads them. In a path that holds one run (a run
    dir, a model file) ``--exp-name`` and ``--env-id`` say what it is, as they do for ``zoo eval``: it is
    checked as that experiment on that env; among several runs they pick. ``--run-seed`` always picks.
    A model file that no adapter recognises by name is the experiment ``--exp-name`` names. Without a filter
    every run found is meant, as found: no run's JSON is parsed (a cold check of 10,000 runs spent a tenth of
    its serial time here)."""
    if not run_filter.active():
        return found, returns
    runs = [json.loads(key) for key, _ in found]
    owners = [_owner(paths, run) for run in runs]
    alone = {owner for owner, count in Counter(owners).items() if count == 1}
    saying = run_filter.exp_name is not None or run_filter.env_id is not None
    meant: Found = []
    meant_returns: dict[int, tuple | None] = {}
    for i, run in enumerate(runs):
        key, inputs = found[i]
        if saying and owners[i] in alone:
            if run_filter.seed is not None and run["seed"] != run_filter.seed:
                continue
            named = named_run(Run.from_json(run), registry, run_filter.exp_name, run_filter.env_id)
            key, inputs = _key(named)
        elif not run_filter.matches(run):
            continue
        if i in returns:
            meant_returns[len(meant)] = returns[i]
        meant.append((key, inputs))
    for index, path in enumerate(paths):
        if index not in owners and path.is_file() and run_filter.exp_name is not None:
            meant.append(
                _key(
                    named_run(
                        lone_file_run(path, registry, run_filter.exp_name), registry, None, run_filter.env_id
                    )
                )
            )
    return meant, meant_returns


def _owner(paths: list[Path], run: dict) -> int | None:
    """The index of the path given that holds the run (its folder, or its model file given by name; the
    innermost, when given paths nest)."""
    own = [os.path.abspath(run[key]) for key in ("path", "model_file") if run[key] is not None]
    holding = [
        (len(p), i)
        for i, p in enumerate(map(os.path.abspath, paths))
        if any(r == p or r.startswith(p.rstrip(os.sep) + os.sep) for r in own)
    ]
    return max(holding)[1] if holding else None


def lone_file_run(path: Path, registry: Registry, exp_name: str) -> Run:
    """A model file that no adapter recognises by name, as the experiment ``exp_name`` (a renamed file)."""
    return identified(
        Run(framework=registry.get(exp_name).framework, path=path, model_file=path, exp_name=exp_name)
    )


def named_run(run: Run, registry: Registry, exp_name: str | None, env_id: str | None) -> Run:
    """``run`` as ``--exp-name`` and ``--env-id`` say it is. With the experiment named, its model file is the one
    whose name the entry's pattern matches (a run dir may hold several: ``zoo eval`` takes the same one)."""
    if exp_name is None:
        return dataclasses.replace(run, env_id=env_id or run.env_id)
    env = env_id or run.env_id
    return dataclasses.replace(
        run, exp_name=exp_name, env_id=env, model_file=named_model_file(run, registry.get(exp_name), env)
    )


def named_model_file(run: Run, entry: Entry, env_id: str | None) -> Path | None:
    """Of the run's model files, the first whose name ``entry``'s pattern matches, else the run's own."""
    pattern = entry.model_filename(env_id=env_id)
    files = [p for p in (run.model_file, *run.other_model_files) if p is not None]
    return next((p for p in files if fnmatch.fnmatch(p.name, pattern)), run.model_file)


def _key(run: Run) -> tuple[str, list[str]]:
    """A run's memo key (its JSON) and the paths its verdict is read from."""
    inputs = [*get_adapter(run.framework).inputs(run), *_watch_inputs(run)]
    return json.dumps(run.to_json(), sort_keys=True), [os.fspath(p) for p in inputs if p is not None]


def _found(paths: list[Path], registry: Registry, memo: CheckMemo) -> tuple[Found, dict[int, tuple | None]]:
    """``(run key, input paths)`` of every run under ``paths`` (remembered while nothing discovery read
    changed, else discovered and remembered), and the training returns read on the way.

    Discovery runs in a forked process. If it is still going after a moment (a big tree) and has met a model
    file, this process meanwhile imports the libraries reading the runs will need, so that the workers forked later share
    them; the discovering process, once done, reads training returns until this one is ready.
    """
    roots = "\n".join(os.path.abspath(p) for p in paths)
    remembered = memo.discovery(roots)
    if remembered is not None:
        return remembered, {}
    if any(p.is_file() for p in paths) or (os.cpu_count() or 1) < 2 or not fork_is_safe():
        found, read, _runs = _discover(paths, registry)
        returns: dict[int, tuple | None] = {}
    else:
        found, read, returns = _discover_beside_imports(paths, registry)
    memo.put_discovery(roots, [*(os.path.abspath(p) for p in paths), *read], found)
    return found, returns


def _discover(
    paths: list[Path], registry: Registry, model_seen: Event | None = None
) -> tuple[Found, list[str], list[Run]]:
    """The runs under ``paths`` as memo keys with their input paths, what discovery read, and the runs;
    ``model_seen`` is set at the first run with a model file (reading it will need the heavy libraries)."""
    with shared_listings() as listed:
        runs = []
        for run in discover_runs(paths, registry, RunFilter()):
            runs.append(run)
            if model_seen is not None and run.model_file is not None:
                model_seen.set()
        found = [_key(run) for run in runs]
    return found, listed.inputs(), runs


_WORKER_REGISTRY: Registry | None = None  # what forked workers use (inherited at fork, never pickled)
_WORKER_STOP: Event | None = (
    None  # set by this process when the discovering one should stop reading training returns
)
_WORKER_MODEL_SEEN: Event | None = None  # set by the discovering process at the first run with a model file


def _discover_in_worker(paths: list[Path]) -> tuple[Found, list[str], dict[int, tuple | None]]:
    assert _WORKER_REGISTRY is not None and _WORKER_STOP is not None
    found, read, runs = _discover(paths, _WORKER_REGISTRY, _WORKER_MODEL_SEEN)
    returns: dict[int, tuple | None] = {}
    for i, run in enumerate(runs):
        if _WORKER_STOP.is_set():
            break
        returns[i] = train_return(run)
    return found, read, returns


def _discover_beside_imports(
    paths: list[Path], registry: Registry
) -> tuple[Found, list[str], dict[int, tuple | None]]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, TimeoutError

    global _WORKER_REGISTRY, _WORKER_STOP, _WORKER_MODEL_SEEN
    forking = multiprocessing.get_context("fork")
    _WORKER_REGISTRY, _WORKER_STOP, _WORKER_MODEL_SEEN = registry, forking.Event(), forking.Event()
    try:
        with ProcessPoolExecutor(1, mp_context=forking) as one:
            future = one.submit(_discover_in_worker, paths)
            try:
                future.result(timeout=0.05)
            except TimeoutError:
                # only once the walk has met a model file: a tree of runs without one needs neither library
                while not future.done() and not _WORKER_MODEL_SEEN.wait(0.05):
                    pass
                if _WORKER_MODEL_SEEN.is_set():
                    import gymnasium  # noqa: F401 - loaded now, shared by the workers forked after the walk
                    import torch  # noqa: F401
            _WORKER_STOP.set()
            return future.result()
    finally:
        _WORKER_REGISTRY = _WORKER_STOP = _WORKER_MODEL_SEEN = None


def train_return(run: Run) -> tuple[int, float] | None:
    """The last training return the run logged, under the first of its framework's tags it logged."""
    if run.events_file is None:
        return None
    from zoo.artifacts.tensorboard import last_scalar

    for tag in get_adapter(run.framework).train_return_tags:
        last = last_scalar(run.events_file, tag=tag)
        if last is not None:
            return last
    return None


def inspect(run: Run, registry: Registry, logged: tuple | None | str = UNREAD) -> dict:
    """One run's report, as JSON: the adapter's verdict plus the last training return it logged
    (``logged``, when it was read already)."""
    report = get_adapter(run.framework).inspect_run(run, registry)
    if "train_return" not in report.details:
        last = train_return(report.run) if logged == UNREAD else logged
        if last is not None:
            # a diverged training logs NaN: shown as written ("nan"), as JSON has no NaN
            report.details["train_return"] = {"step": int(last[0]), "value": jsonable(float(last[1]))}
    _watch_details(report)
    return report.to_json()


def _watch_inputs(run: Run) -> list[Path]:
    """The records zoo watch keeps in the run's folder: a verdict shows them, so it depends on them."""
    from zoo.watcher.records import BEST_META_FILE, EVALS_FILE

    folder = run.path if run.path.is_dir() else run.path.parent
    return [folder / EVALS_FILE, folder / BEST_META_FILE]


def _watch_details(report: RunReport) -> None:
    """``details["watch"]``: what zoo watch recorded (how many evaluations, the best model's step and
    score), on a run dir's row, or in a folder of lone model files on its best model's row. A malformed
    record is a warning: it says nothing about whether the model loads."""
    from zoo.watcher.records import read_records

    run = report.run
    named_best = run.model_file is not None and run.model_file.name.startswith(BEST_MODEL)
    if not (run.path.is_dir() or named_best) or not any(p.exists() for p in _watch_inputs(run)):
        return
    found = read_records(run.path if run.path.is_dir() else run.path.parent)
    for problem in found.problems:
        report.flag(WARNING, f"zoo watch's {problem}", "zoo watch skips what it cannot read; remove it")
    report.details["watch"] = found.summary()


def _inspect_key(task: tuple[str, tuple | None | str], registry: Registry) -> tuple[str, str]:
    """``(status, report JSON)`` of the run a memo key describes (a key is the run's JSON)."""
    key, logged = task
    report = inspect(Run.from_json(json.loads(key)), registry, logged)
    return report["status"], dumps(report, what="the --json output")


def _inspect_in_worker(task: tuple[str, tuple | None | str]) -> tuple[str, str]:
    assert _WORKER_REGISTRY is not None
    return _inspect_key(task, _WORKER_REGISTRY)


def _inspect_all(
    tasks: list[tuple[str, tuple | None | str]], registry: Registry, on_progress
) -> Iterator[tuple[str, str]]:
    """``(status, report JSON)`` in order; with many runs and several cores, worker processes read all
    but the first of each kind (framework, experiment, env), which this process reads to warm its imports
    and caches first. Workers get and return text, which pickles fastest."""
    total, done = len(tasks), 0
    workers = min(os.cpu_count() or 1, 8)
    if total < PARALLEL_FROM or workers < 2 or not fork_is_safe():
        for task in tasks:
            yield _inspect_key(task, registry)
            done += 1
            if on_progress:
                on_progress(done, total)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _WORKER_REGISTRY
    first: dict[tuple, int] = {}
    for i, (key, _) in enumerate(tasks):
        run = json.loads(key)
        first.setdefault((run["framework"], run["exp_name"], run["env_id"]), i)
    warm = {i: _inspect_key(tasks[i], registry) for i in first.values()}
    _WORKER_REGISTRY = registry
    rest = [task for i, task in enumerate(tasks) if i not in warm]
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
