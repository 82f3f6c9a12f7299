"""Keep a watcher from slowing the trainer it watches.

A watcher runs in its own process beside the training, so the kernel's scheduler is what bounds it:

- ``nice``: the watcher adds ``nice`` to its niceness (``os.nice``). Under Linux's CFS a task at nice 10
  weighs 110 against a nice-0 trainer's 1024, so on a core both want the trainer keeps at least
  1024 / (1024 + 110) = 90 % of it (nice 19: 98.6 %); on an idle core the watcher runs at full speed.
- ``sched_idle``: the watcher runs under Linux's ``SCHED_IDLE`` policy instead: only when a core would
  otherwise idle (weight 3 against the trainer's 1024, and no wake-up bonus), so the trainer keeps
  all but a fraction of a percent of a shared core. The price: beside a trainer that keeps every core
  busy, the watcher waits until it pauses (or ends) and its evaluations lag.
- ``max_cpu``: the watcher may run on at most that many cores (``os.sched_setaffinity``, the last ones
  it is allowed, as trainers start on the first), and torch uses that many threads. zoo's rollouts step
  one env batch at a time with one torch thread, so one core is what an evaluation uses anyway.
"""

from __future__ import annotations

import os


def lower_priority(nice: int, max_cpu: int | None, sched_idle: bool = False) -> list[str]:
    """Apply the bounds to this process (its threads started from now on inherit them); what was done,
    in words, for the watcher's first line. A bound the platform does not offer is skipped and said."""
    done = []
    if sched_idle:
        if hasattr(os, "SCHED_IDLE"):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            done.append("SCHED_IDLE")
        else:
            done.append("no SCHED_IDLE on this platform")
    elif nice:
        done.append(f"nice {os.nice(nice)}")
    if max_cpu:
        import torch

        if hasattr(os, "sched_setaffinity"):
            allowed = sorted(os.sched_getaffinity(0))
            keep = allowed[-max_cpu:]
            os.sched_setaffinity(0, keep)
            done.append(f"cpu {','.join(map(str, keep))}")
        else:
            done.append("no cpu affinity on this platform")
        torch.set_num_threads(max_cpu)
        done.append(f"{max_cpu} torch thread{'s' if max_cpu != 1 else ''}")
    return done
