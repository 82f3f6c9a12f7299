"""Rollout lanes: one evaluation's sub-envs split across forked processes, so that every core steps envs
and runs the policy at once, with no message between them per step and the sequential loop's episodes,
bit for bit.

How. :func:`zoo.vector_rollout.rollout` starts sequentially. After its first steps it knows what a step
costs in the envs and in the policy; where a split pays, it forks one process per extra lane. A child
inherits the policy, the envs mid-episode, the recurrent state and the generators as they are, and steps
sub-envs ``[lo, hi)`` only; the parent steps the first lane. Each lane calls the policy on the full-width
batch (:mod:`zoo.vector_rollout` says why that keeps the actions exact). A child reports each episode that
counts as one JSON message on a pipe (nothing is unpickled) and the parent keeps them in env order.

When it pays. A lane step costs the policy's full-width call plus its share of the env steps, so ``L``
lanes turn a step of ``E + P`` seconds into one of ``E / L + P``. The rollout splits when that is at least
:data:`MIN_SPEEDUP` times faster and saves at least :data:`MIN_SAVED_SECONDS` of env time per step (a tiny
env such as CartPole saves less than two busy processes cost each other), once it has run
:data:`PROBE_SECONDS` unsplit: a fork costs milliseconds, and an evaluation shorter than that never pays them. A big policy on a cheap env (``P`` much more than
``E``) never splits; nor does a process with one usable core, or one whose other cores other processes
keep busy (:func:`free_cores`).

When it never splits: a vector env other than a plain ``SyncVectorEnv`` that resets on the next step;
observations other than arrays (or dicts of them); actions other than an array; a policy that sets
``forks_safely = False``; a process where CUDA or JAX's backends have started (their threads and device
handles do not survive a fork); a daemonic process (which may not have children); a platform
without ``fork``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np

from zoo.episodes import Episode
from zoo.rollout_guard import STUCK_GRACE, Deadline

if TYPE_CHECKING:  # the loop imports this module when it may split, not the other way round
    from zoo.vector_rollout import Lane

#: Steps the rollout takes unsplit before it may split (its timing needs a few; a forced split waits for them
#: too, so that a split always starts mid-episode, from state the children inherit).
PROBE_STEPS = 4
#: Seconds the rollout runs unsplit before it may split: what a few forks cost, so a short rollout never forks.
PROBE_SECONDS = 0.1
#: The speed-up (of an ideal split: each lane's share of the env steps plus the full policy call) below which
#: the rollout stays whole. Two processes on a small shared machine realize 65-90% of it (docs/benchmarks.md).
MIN_SPEEDUP = 1.25
#: Env seconds a split must save per step: below it (CartPole's 8 steps take about 0.1 ms), two processes
#: slowing each other down on shared caches and clocks cost what the split saves (docs/benchmarks.md).
MIN_SAVED_SECONDS = 1e-4
#: Most lanes a rollout is split into (one process each), whatever the core count.
MAX_LANES = 8
#: Parent lane steps between two looks at the children's messages (a look is a system call).
POLL_EVERY = 8


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the platform tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def free_cores() -> int:
    """Usable cores less those other processes keep busy right now: an evaluation among others (a test suite's
    workers, a parallel sweep) stays whole. Where the platform does not say, every usable core."""
    cores, running = usable_cores(), runnable_tasks()
    return cores if running is None else max(1, min(cores, cores - (running - 1)))


def runnable_tasks() -> int | None:
    """Tasks running or ready to run on the machine now, this one included (Linux's ``/proc/loadavg``)."""
    try:
        with open("/proc/loadavg", encoding="ascii") as loadavg:
            return int(loadavg.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def lane_count(requested: int | None, num_envs: int) -> int:
    """The lanes a rollout of ``num_envs`` sub-envs may use: ``requested`` (at most one per sub-env), or for
    None one per usable core, at most :data:`MAX_LANES`."""
    wanted = min(usable_cores(), MAX_LANES) if requested is None else requested
    return max(1, min(wanted, num_envs))


def probed(lane: Lane, started: float, forced: bool) -> bool:
    """Whether the unsplit rollout has run long enough to decide (a forced split only waits for the steps)."""
    if lane.steps < PROBE_STEPS:
        return False
    return forced or time.perf_counter() - started >= PROBE_SECONDS


def lanes_now(lane: Lane, count: int, forced: bool) -> int:
    """How many lanes (at most ``count``) to split the rest of ``lane``'s rollout into; 1: none. A requested
    split happens wherever it can; otherwise only on cores no other process is busy on, and only where the
    steps timed so far say it would be :data:`MIN_SPEEDUP` times faster."""
    if not splittable(lane):
        return 1
    if forced:
        return count
    count = min(count, free_cores())
    env, policy = lane.env_seconds / lane.steps, lane.policy_seconds / lane.steps
    saved = env - env / count
    pays_ = saved >= MIN_SAVED_SECONDS and (env + policy) >= MIN_SPEEDUP * (env / count + policy)
    return count if count > 1 and pays_ else 1


def splittable(lane: Lane) -> bool:
    """Whether a lane's rollout can go on in forked processes with the same results (module docstring)."""
    import multiprocessing

    import gymnasium as gym

    envs = lane.envs
    plain = type(envs) is gym.vector.SyncVectorEnv and hasattr(envs, "_autoreset_envs")
    return (
        plain
        and envs.autoreset_mode == gym.vector.AutoresetMode.NEXT_STEP
        and _rows(lane.obs, lane.width)
        and type(lane.actions) is np.ndarray
        and len(lane.actions) == lane.width
        and getattr(lane.policy, "forks_safely", True)
        and not _runtime_loaded()
        and not multiprocessing.current_process().daemon
        and "fork" in multiprocessing.get_all_start_methods()
    )


def _rows(batch: Any, width: int) -> bool:
    """Whether ``batch`` is an array of ``width`` rows, or a dict of such batches."""
    if isinstance(batch, dict):
        return all(_rows(value, width) for value in batch.values())
    return type(batch) is np.ndarray and batch.ndim >= 1 and len(batch) == width


def _runtime_loaded() -> bool:
    """An accelerator runtime in use, or JAX's backends started: a forked child would inherit dead threads and
    device handles."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return True
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except Exception:  # noqa: BLE001 - a JAX that cannot say is taken as started
        return True


def bounds(width: int, count: int) -> list[tuple[int, int]]:
    """``count`` contiguous ranges of sub-envs covering ``[0, width)``, as even as can be (the first lanes
    take one more)."""
    edges = np.cumsum([0] + [width // count + (k < width % count) for k in range(count)])
    return [(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:], strict=True)]


def sub_vector_env(envs, lo: int, hi: int):
    """A ``SyncVectorEnv`` over sub-envs ``[lo, hi)`` of ``envs`` as they are, mid-episode: the same env
    objects, and the same record of which of them reset on their next step."""
    import gymnasium as gym

    sub = gym.vector.SyncVectorEnv(
        [_as_made(env) for env in envs.envs[lo:hi]], copy=envs.copy, autoreset_mode=envs.autoreset_mode
    )
    sub._autoreset_envs = envs._autoreset_envs[lo:hi].copy()
    return sub


def _as_made(env: Any) -> Callable[[], Any]:
    """An env factory that gives ``env`` itself (SyncVectorEnv builds its sub-envs from factories)."""
    return lambda: env


def run_lanes(whole: Lane, count: int, deadline: Deadline) -> None:
    """Finish ``whole``'s rollout in ``count`` lanes: ``count - 1`` forked children and this process, which
    keeps every episode in ``whole.log``. A child that fails fails the rollout with its error; children are
    always gone when this returns or raises."""
    import multiprocessing

    ranges = bounds(whole.width, count)
    context = multiprocessing.get_context("fork")
    children: list[_Child] = []
    try:
        for lo, hi in ranges[1:]:
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(
                target=_lane_process,
                args=(whole, lo, hi, writer, deadline),
                name=f"zoo-lane-{lo}",
                daemon=True,
            )
            process.start()
            writer.close()
            children.append(_Child(process, reader, lo, hi))
        lo, hi = ranges[0]
        lane = whole.narrowed(sub_vector_env(whole.envs, lo, hi), lo)
        while not lane.filled:
            lane.step_within(deadline)
            if lane.steps % POLL_EVERY == 0:
                for child in children:
                    child.drain(whole.log, timeout=0)
        for child in children:
            while not child.done:
                left = deadline.at + STUCK_GRACE - time.perf_counter()
                if left <= 0:
                    raise deadline.error(whole.log.finished, whole.log.episodes, lane.steps)
                child.drain(whole.log, timeout=left)
    finally:
        for child in children:
            child.stop()


def _lane_process(whole: Lane, lo: int, hi: int, writer, deadline: Deadline) -> None:
    """A child's lane: step sub-envs ``[lo, hi)`` until they have filled their quotas, sending each episode that
    counts, then ``done`` (or the error that stopped it) to the parent."""
    try:
        # the parent's budget, with an alarm of this process's own for a call that hangs here
        with Deadline(deadline.max_seconds, at=deadline.at) as own:
            lane = whole.narrowed(sub_vector_env(whole.envs, lo, hi), lo)
            lane.log.on_episode = None  # the parent reports progress
            while not lane.filled:
                for episode in lane.step_within(own):
                    writer.send_bytes(json.dumps({"episode": asdict(episode)}).encode())
        writer.send_bytes(b'{"done": true}')
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent, which raises it
        writer.send_bytes(json.dumps({"error": _said(exc)}).encode())
    finally:
        writer.close()


def _said(exc: BaseException) -> dict:
    """A child's exception as the parent re-raises it: zoo's own errors as they are, others with the child's
    traceback (a bug there must be as visible as one in the sequential loop)."""
    import traceback

    from zoo.errors import ZooError

    if isinstance(exc, ZooError):
        return {"class": type(exc).__name__, "message": exc.message, "hint": exc.hint}
    if isinstance(exc, KeyboardInterrupt):
        return {"class": "KeyboardInterrupt"}
    return {"class": None, "message": "".join(traceback.format_exception(exc)).rstrip()}


class _Child:
    """A lane process (sub-envs ``[lo, hi)``) and the read end of its pipe."""

    def __init__(self, process, reader, lo: int, hi: int):
        self.process, self.reader, self.lo, self.hi, self.done = process, reader, lo, hi, False

    def drain(self, log, timeout: float) -> None:
        """Keep the episodes the child has sent (waiting up to ``timeout`` seconds for the first); raise the
        error it sent, or say it died."""
        while not self.done and self.reader.poll(timeout):
            timeout = 0
            try:
                message = json.loads(self.reader.recv_bytes())
            except EOFError:
                from zoo.errors import RolloutError

                self.process.join()
                code = self.process.exitcode
                how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited ({code})"
                raise RolloutError(
                    f"the rollout's lane process for envs {self.lo}-{self.hi - 1} {how} before its episodes "
                    "finished (out of memory, or killed from outside)",
                    hint="evaluate again; zoo.evaluator.evaluate(..., lanes=1) keeps the rollout in one process",
                ) from None
            if "episode" in message:
                log.add(Episode(**message["episode"]))
            elif "error" in message:
                raise _raised(message["error"])
            else:
                self.done = True

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.reader.close()


def _raised(said: dict) -> BaseException:
    """The exception a child sent (:func:`_said`), to raise here."""
    from zoo import errors

    if said["class"] == "KeyboardInterrupt":
        return KeyboardInterrupt()
    kind = getattr(errors, said["class"] or "", None)
    if isinstance(kind, type) and issubclass(kind, errors.ZooError):
        return kind(said["message"], said["hint"])
    return RuntimeError(f"a rollout lane process failed:\n{said['message']}")
