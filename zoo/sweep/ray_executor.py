"""A sweep's plans run as Ray actors: on a local Ray started for the sweep, or on a cluster by address.

Each actor is one worker process holding an :class:`~zoo.eval_session.EvalSession`, so its envs and torch
stay warm across the runs it gets; the runs are queued by env id, so consecutive runs of an actor share an
env. An actor evaluates exactly what the local sweep would (the plan is made here, on the driver) and sends
back the eval.json, which the driver writes: the files are the local sweep's, timing fields aside. Workers
read the model files from the paths in the plans, so on a cluster the runs folder must be on a filesystem
every node mounts at the same path (docs/scale-out.md).

A run that fails is its row. A worker that dies (killed, out of memory, a crash in native code) fails the
run it held, with that reason, and is replaced; the sweep goes on. Ctrl-C kills the actors and
disconnects before the interrupt goes on, so no work is left running on the cluster.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import socket
import time
from urllib.parse import urlsplit

from zoo.errors import NetworkError, UnsupportedError, UsageError
from zoo.sweep.local import OnRun, evaluated
from zoo.sweep.outcome import Outcome, failure_message
from zoo.sweep.plan import SweepItem

#: Seconds to wait for a cluster address to accept a connection before saying it does not answer.
CONNECT_TIMEOUT = 5.0


class Worker:
    """The actor's body: one session, its kept envs reused for every run the actor is given."""

    def __init__(self) -> None:
        from zoo.eval_session import EvalSession

        self.session = EvalSession(registry=None, lanes=1)  # an actor per CPU: its rollouts stay on its own

    def run(self, planned) -> tuple[str, object]:
        """``("ok", eval_json)``, or ``("failed", one line)`` for a failure zoo or a library raised."""
        try:
            return "ok", self.session.run(planned).to_json()
        except Exception as exc:
            return "failed", failure_message(exc)


def import_ray():
    """Ray, or the one-line error saying which extra brings it."""
    try:
        import ray
    except ImportError:
        raise UnsupportedError(
            "--executor ray needs Ray, which is not installed",
            hint="pip install 'rl-zoo-hub[ray]', or use --executor local",
        ) from None
    return ray


def check_address(address: str) -> None:
    """Refuse at once a cluster address that no one answers at (Ray itself would retry for a minute)."""
    if address == "auto":
        return
    parts = urlsplit(address if "://" in address else f"ray://{address}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise UsageError(
            f"--address {address}: not HOST:PORT",
            hint="for example --address 10.0.0.5:6379, ray://10.0.0.5:10001, or auto",
        )
    try:
        socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise NetworkError(
            f"no Ray cluster answers at {address} ({exc.strerror or exc})",
            hint="start one there with `ray start --head`, or drop --address for a local Ray",
        ) from None


def run_ray(
    items: list[SweepItem],
    on_run: OnRun,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    num_gpus: float = 0,
) -> tuple[list[Outcome], int]:
    """Evaluate the pending items on Ray and write their eval.json files: every run's outcome, in the
    items' order, and the number of workers used. ``num_cpus``: actors to run, one CPU each (default: every
    CPU of the local Ray or the cluster); ``num_gpus``: GPUs shared evenly among them (the runs then
    evaluate on ``cuda``). Without ``address`` a local Ray is started with ``num_cpus``/``num_gpus``, and
    stopped after; a Ray the caller already initialized is used as it is."""
    ray = import_ray()
    pending = sorted(
        (i for i, item in enumerate(items) if item.pending),
        key=lambda i: (items[i].plan.target.env_id, items[i].plan.target.entry.name, i),
    )
    outcomes: dict[int, Outcome] = {}
    if not pending:
        return [item.outcome for item in items], 0
    if address:
        check_address(address)
    started = not ray.is_initialized()
    if started:
        local = {} if address else {"num_cpus": num_cpus or os.cpu_count(), "num_gpus": num_gpus}
        ray.init(
            address=address, include_dashboard=False, log_to_driver=False, logging_level="ERROR", **local
        )
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        workers = max(1, min(len(pending), num_cpus or cpus))
        gpu_share = num_gpus / workers if num_gpus else 0
        actor_class = ray.remote(num_cpus=1, num_gpus=gpu_share, max_restarts=0)(Worker)
        device = "cuda" if num_gpus else None
        _schedule(ray, actor_class, items, pending, outcomes, workers, device, on_run)
    finally:
        if started:
            ray.shutdown()
    return [outcomes.get(i, item.outcome) for i, item in enumerate(items)], workers


def _schedule(
    ray,
    actor_class,
    items: list[SweepItem],
    pending: list[int],
    outcomes: dict[int, Outcome],
    workers: int,
    device: str | None,
    on_run: OnRun,
) -> None:
    """Keep every actor busy until the queue is empty; replace an actor that died."""
    from zoo.atomic import write_json_atomic

    queue = collections.deque(pending)
    idle = [actor_class.remote() for _ in range(workers)]
    in_flight: dict = {}  # object ref -> (actor, item index, start time)
    try:
        while queue or in_flight:
            while idle and queue:
                actor, index = idle.pop(), queue.popleft()
                planned = items[index].plan
                if device is not None:  # the driver may have no GPU: the plan's device is the workers'
                    planned = dataclasses.replace(
                        planned, device=device, options=dataclasses.replace(planned.options, device=device)
                    )
                in_flight[actor.run.remote(planned)] = (actor, index, time.perf_counter())
            (ref,), _ = ray.wait(list(in_flight), num_returns=1)
            actor, index, start = in_flight.pop(ref)
            item = items[index]
            try:
                kind, payload = ray.get(ref)
            except ray.exceptions.RayActorError as exc:
                kind, payload = "failed", f"the Ray worker died ({_first_line(exc)})"
                ray.kill(actor)
                actor = actor_class.remote()
            except ray.exceptions.RayError as exc:
                kind, payload = "failed", f"Ray: {_first_line(exc)}"
            seconds = time.perf_counter() - start
            if kind == "ok":
                write_json_atomic(item.plan.out_path, payload)
                outcome = evaluated(item, payload, seconds)
            else:
                outcome = item.failed(payload, seconds)
            outcomes[index] = outcome
            idle.append(actor)
            on_run(outcome)
    except BaseException:  # Ctrl-C or a driver failure: nothing keeps running on the cluster
        for actor, _index, _start in in_flight.values():
            ray.kill(actor)
        for actor in idle:
            ray.kill(actor)
        raise
    for actor in idle:
        ray.kill(actor)


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
