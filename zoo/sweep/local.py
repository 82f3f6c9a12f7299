"""A sweep's plans run in this process, one after another, each env kept for every run that uses it."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable

from zoo.sweep.outcome import EVALUATED, Outcome, failure_message
from zoo.sweep.plan import SweepItem

#: ``on_run(outcome)`` after each run; ``on_episode(item, episodes_done)`` during one (its plan has the total).
OnRun = Callable[[Outcome], None]
OnEpisode = Callable[[SweepItem, int], None]


def evaluated(item: SweepItem, eval_json: dict, seconds: float) -> Outcome:
    """The row of a run whose evaluation was written."""
    metrics = eval_json["metrics"]
    return dataclasses.replace(
        item.started(),
        status=EVALUATED,
        return_mean=metrics["return_mean"],
        return_std=metrics["return_std"],
        episodes=eval_json["num_episodes"],
        seconds=round(seconds, 3),
    )


def run_local(items: list[SweepItem], on_run: OnRun, on_episode: OnEpisode | None = None) -> list[Outcome]:
    """Evaluate the pending items, grouped by env id so each kept env serves all its runs, and write each
    eval.json atomically as it is made. A run that fails is a failed row; the sweep goes on. Ctrl-C stops
    it between two files: what was written stays whole, the rest is left as it was."""
    from zoo.atomic import write_json_atomic
    from zoo.eval_session import EvalSession

    pending = sorted(
        (i for i, item in enumerate(items) if item.pending),
        key=lambda i: (items[i].plan.target.env_id, items[i].plan.target.entry.name, i),
    )
    outcomes: dict[int, Outcome] = {}
    session = EvalSession(registry=None)
    try:
        for index in pending:
            item = items[index]
            start = time.perf_counter()
            episode = functools.partial(on_episode, item) if on_episode is not None else None
            try:
                result = session.run(item.plan, on_episode=episode).to_json()
                write_json_atomic(item.plan.out_path, result)
                outcome = evaluated(item, result, time.perf_counter() - start)
            except Exception as exc:  # one run's failure is its row; KeyboardInterrupt stops the sweep
                outcome = item.failed(failure_message(exc), time.perf_counter() - start)
            outcomes[index] = outcome
            on_run(outcome)
    finally:
        session.close()
    return [outcomes.get(i, item.outcome) for i, item in enumerate(items)]
