"""``zoo watch``: follow a training run, evaluate every K-th new checkpoint, keep the best one.

Every ``poll`` seconds the watcher looks at the run dir:

1. Until a framework claims it, every adapter is asked for the run's checkpoints
   (:meth:`~zoo.frameworks.Adapter.checkpoints`); a folder none claims yet is waited on.
2. A checkpoint is ready once its files (the model and its companions) have the size and mtime they
   had at the poll before: a file still being written changes between two polls.
3. A ready checkpoint is hashed. One whose sha256 ``evals.jsonl`` holds is done already (a restarted
   watch evaluates nothing twice); every other one is new, and every ``every``-th new one is evaluated
   (one at step ``until`` or later always is).
4. An evaluation that fails (a file cut short that only looked complete, any load error) is tried again
   at the next polls, ``retries`` times in all, then recorded as a failed line and left; the watcher
   never stops for a bad checkpoint, only for flags that name nothing (:class:`~zoo.errors.UsageError`).
   A rollout that failed (:class:`~zoo.errors.RolloutError`: NaN actions, the env raising, the wall-time
   budget spent) is recorded at once: trying the same bytes again would fail again, or spend the budget again.

It stops after evaluating a checkpoint at step ``until`` or later, or once no checkpoint appeared or
changed for ``idle`` seconds; the newest checkpoint is then evaluated first if the every-K rule skipped
it, so that the run's final model is never left out. Results go through
:class:`~zoo.watcher.records.RunRecords` (the files, the best-model rule); the loop knows no framework.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.artifacts.digest import sha256_file
from zoo.atomic import check_writable
from zoo.checker import frameworks
from zoo.errors import RolloutError, UsageError, ZooError
from zoo.eval_session import EvalSession
from zoo.frameworks import Adapter, SavedCheckpoint, SpaceMismatch, get_adapter
from zoo.registry import Registry
from zoo.rollout_guard import check_bounds
from zoo.watcher.priority import lower_priority
from zoo.watcher.records import EVALS_FILE, RunRecords

if TYPE_CHECKING:
    from zoo.targets import Target

#: Tries an evaluation of one checkpoint gets before it is recorded as failed.
RETRIES = 3
NEW, DUE, SKIPPED, DONE = "new", "due", "skipped", "done"


@dataclass
class WatchResult:
    """What a watch did: its evals.jsonl lines (this session's), the best model's meta, why it stopped."""

    run_dir: Path
    framework: str | None
    evaluations: list[dict]
    best: dict | None  # best_model_meta.json as it stands (also a best kept by an earlier watch)
    stopped: str  # "until" or "idle"


@dataclass
class _Seen:
    """One checkpoint file as the watcher last saw it."""

    checkpoint: SavedCheckpoint
    stamp: tuple  # size and mtime of each of its files
    state: str = NEW
    digests: dict[Path, str] = field(default_factory=dict)
    attempts: int = 0

    @property
    def sha256(self) -> str:
        return self.digests[self.checkpoint.model_file]


def _files(checkpoint: SavedCheckpoint) -> list[Path]:
    return [checkpoint.model_file, *(checkpoint.companions[role] for role in sorted(checkpoint.companions))]


def _stamp(checkpoint: SavedCheckpoint) -> tuple:
    """Size and mtime of each of the checkpoint's files: what changes while one of them is being written."""
    return tuple((str(path), (st := path.stat()).st_size, st.st_mtime_ns) for path in _files(checkpoint))


def _quiet(_line: str) -> None:
    pass


class Watcher:
    """The polling loop over one run dir (:meth:`poll` is one look; :meth:`run` polls until a stop rule)."""

    def __init__(
        self,
        run_dir: Path,
        registry: Registry,
        session: EvalSession,
        *,
        every: int = 1,
        until: int | None = None,
        idle: float | None = None,
        retries: int = RETRIES,
        exp_name: str | None = None,
        notify: Callable[[str], None] = _quiet,
        on_eval: Callable[[dict], None] = _quiet,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.run_dir, self.registry, self.session = run_dir, registry, session
        self.every, self.until, self.idle, self.retries = every, until, idle, retries
        self.exp_name, self.notify, self.on_eval, self.clock = exp_name, notify, on_eval, clock
        self.records = RunRecords(run_dir)
        for problem in self.records.problems:
            notify(f"warning: {problem} (left as it is)")
        self.adapter: Adapter | None = None
        self.seen: dict[Path, _Seen] = {}
        self.listed: list[SavedCheckpoint] = []
        self.evaluations: list[dict] = []
        self.new = 0  # new checkpoints counted for the every-K rule
        self.last_change = clock()
        self.stopped: str | None = None
        self._said_waiting = False

    # ------------------------------------------------------------------ one poll
    def poll(self) -> None:
        """Note new and changed files; evaluate what is ready and due, in step order."""
        adapter = self._recognise()
        if adapter is None:
            return
        try:
            self.listed = adapter.checkpoints(self.run_dir)
        except OSError:  # the folder went away or is being replaced: look again next time
            self.listed = []
        due = [seen for seen in map(self._look, self.listed) if seen is not None and seen.state == DUE]
        for seen in due:
            self._evaluate(adapter, seen)
            if self.stopped:
                return

    def _recognise(self) -> Adapter | None:
        """The adapter of the run, once one claims the folder's files (said once, with what is recorded)."""
        if self.adapter is not None:
            return self.adapter
        names = [self.registry.get(self.exp_name).framework] if self.exp_name else frameworks(self.registry)
        claims = {}
        for name in names:
            try:
                found = get_adapter(name).checkpoints(self.run_dir)
            except OSError:
                found = []
            if found:
                claims[name] = found
        if not claims:
            if not self._said_waiting:
                until = f" (for up to {self.idle:g} s)" if self.idle is not None else ""
                self.notify(f"waiting for a checkpoint in {self.run_dir}{until}")
                self._said_waiting = True
            return None
        if len(claims) > 1:
            raise UsageError(
                f"{self.run_dir} holds checkpoints of {' and '.join(sorted(claims))}",
                hint="pass --exp-name to say which run to follow, or give the folder of one run",
            )
        name, found = next(iter(claims.items()))
        adapter = get_adapter(name)
        self.records.check_owned(adapter.best_model_files(self.run_dir, found[0]))
        best = self.records.best
        kept = f", best {best['return_mean']:.2f} at step {best['step']}" if best else ""
        self.notify(
            f"following the {name} run in {self.run_dir}: {len(found)} checkpoint"
            f"{'s' if len(found) != 1 else ''} so far, {len(self.records.lines)} in evals.jsonl{kept}"
        )
        self.adapter = adapter
        return adapter

    def _look(self, checkpoint: SavedCheckpoint) -> _Seen | None:
        """The checkpoint's state after this look: new or changed files wait a poll; once stable it is
        hashed and judged (done already, due, or skipped by the every-K rule)."""
        try:
            stamp = _stamp(checkpoint)
        except OSError:  # removed or renamed between the listing and now
            return None
        seen = self.seen.get(checkpoint.model_file)
        if seen is None or seen.stamp != stamp:
            self.seen[checkpoint.model_file] = _Seen(checkpoint, stamp)
            self.last_change = self.clock()
            return None
        if seen.state == NEW:
            try:
                seen.digests = {path: sha256_file(path) for path in _files(checkpoint)}
            except OSError:
                return None
            if self.records.is_recorded(seen.sha256):
                seen.state = DONE
            else:
                self.new += 1
                due = self._reaches_until(checkpoint.step) or self.new % self.every == 0
                seen.state = DUE if due else SKIPPED
        return seen

    def _evaluate(self, adapter: Adapter, seen: _Seen, final: bool = False) -> None:
        """One try at a due checkpoint; a failed one stays due until its tries are used (``final``: this
        is its last), then gets its failed line."""
        checkpoint = seen.checkpoint
        source = checkpoint.model_file.relative_to(self.run_dir).as_posix()
        try:
            target, result = self.session.evaluate(checkpoint.model_file)
        except (UsageError, SpaceMismatch):  # the flags, or the env for every checkpoint: no retry helps
            raise
        except Exception as exc:  # noqa: BLE001 - no checkpoint, however broken, stops the watch
            seen.attempts += 1
            if seen.attempts < self.retries and not final and not isinstance(exc, RolloutError):
                why = exc.message if isinstance(exc, ZooError) else f"{type(exc).__name__}: {exc}"
                named = why if checkpoint.model_file.name in why else f"{source}: {why}"
                self.notify(f"{named} (try {seen.attempts} of {self.retries}; again at the next poll)")
                return
            line = self.records.add_failure(
                exc, step=checkpoint.step, source=source, sha256=seen.sha256, attempts=seen.attempts
            )
        else:
            step = checkpoint.step if checkpoint.step is not None else logged_step(target)
            line = self.records.add(
                result,
                step=step,
                source=source,
                sha256=seen.sha256,
                files=adapter.best_model_files(self.run_dir, checkpoint),
                digests=seen.digests,
            )
        seen.state = DONE
        self.evaluations.append(line)
        self.on_eval(line)
        if self._reaches_until(line["step"]):
            self.stopped = "until"

    def _reaches_until(self, step: int | None) -> bool:
        return self.until is not None and step is not None and step >= self.until

    # ------------------------------------------------------------------ the loop
    def run(self, poll: float, sleep: Callable[[float], None] = time.sleep) -> WatchResult:
        """Poll until ``until`` or ``idle`` says stop; the kept env is closed however it ends."""
        try:
            while True:
                self.poll()
                if self.stopped:
                    break
                if self.idle is not None and self.clock() - self.last_change >= self.idle:
                    self._finish()
                    break
                sleep(poll)
        finally:
            self.session.close()
        return self.result()

    def _finish(self) -> None:
        """The idle stop: the checkpoints still due get their last try, and the newest one is evaluated if
        the every-K rule skipped it. A folder no framework ever claimed is an error."""
        if self.adapter is None:
            hints = "; ".join(get_adapter(name).layout_hint for name in frameworks(self.registry))
            raise ZooError(
                f"no checkpoint zoo recognizes appeared in {self.run_dir} in {self.idle:g} s",
                hint=f"give the folder the trainer saves checkpoints into; zoo follows {hints}",
            )
        newest = self.seen.get(self.listed[-1].model_file) if self.listed else None
        if newest is not None and newest.state == SKIPPED:
            newest.state = DUE
        for seen in [s for s in self.seen.values() if s.state == DUE]:
            self._evaluate(self.adapter, seen, final=True)
        self.stopped = self.stopped or "idle"

    def result(self) -> WatchResult:
        return WatchResult(
            self.run_dir,
            self.adapter.name if self.adapter else None,
            self.evaluations,
            self.records.best,
            self.stopped or "idle",
        )


def watch_run(
    run_dir: Path,
    registry: Registry,
    *,
    every: int = 1,
    episodes: int | None = None,
    num_envs: int = 8,
    seed: int = 0,
    until: int | None = None,
    idle: float | None = None,
    poll: float = 5.0,
    device: str = "cpu",
    nice: int = 10,
    max_cpu: int | None = 1,
    sched_idle: bool = False,
    retries: int = RETRIES,
    max_steps: int | None = None,
    max_seconds: float | None = None,
    exp_name: str | None = None,
    env_id: str | None = None,
    notify: Callable[[str], None] = _quiet,
    on_eval: Callable[[dict], None] = _quiet,
) -> WatchResult:
    """Check the settings, lower this process's priority, and follow the run (see the module docstring)."""
    if run_dir.name in ("", ".."):  # "." or "..": a run is known by its folder's name (CleanRL's, skrl's)
        run_dir = run_dir.resolve()
    if not run_dir.is_dir():
        what = "is not a folder" if run_dir.exists() else "does not exist"
        raise UsageError(
            f"run dir {run_dir} {what}",
            hint="give the folder the trainer saves its checkpoints "
            "into (create it first when the trainer has not yet)",
        )
    check_writable(run_dir / EVALS_FILE, "RUN_DIR's evals.jsonl")
    for flag, value, low in (("--every", every, 1), ("--retries", retries, 1), ("--num-envs", num_envs, 1)):
        if value < low:
            raise UsageError(f"{flag} {value}: must be at least {low}")
    if poll <= 0 or (idle is not None and idle <= 0):
        raise UsageError("--poll and --idle take a number of seconds above 0")
    check_bounds(max_steps, max_seconds)
    lowered = lower_priority(nice, max_cpu, sched_idle)
    if lowered:
        notify(f"priority: {', '.join(lowered)}")
    session = EvalSession(
        registry,
        episodes=episodes,
        num_envs=num_envs,
        seed=seed,
        device=device,
        exp_name=exp_name,
        env_id=env_id,
        max_steps=max_steps,
        max_seconds=max_seconds,
    )
    watcher = Watcher(
        run_dir,
        registry,
        session,
        every=every,
        until=until,
        idle=idle,
        retries=retries,
        exp_name=exp_name,
        notify=notify,
        on_eval=on_eval,
    )
    return watcher.run(poll)


def logged_step(target: Target) -> int | None:
    """The training step the run's log had reached, for a checkpoint whose name has none (a model saved
    over in place): the step of the last training return its framework logs (TensorBoard)."""
    from zoo.checker import train_return

    last = train_return(target.run)
    return int(last[0]) if last is not None else None
