"""What happened to each run of a sweep, and the sweep's summary."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from zoo.errors import EXIT_OK, EXIT_PROBLEM

EVALUATED, SKIPPED, FAILED = "evaluated", "skipped", "failed"


@dataclass
class Outcome:
    """One run of a sweep: ``status`` is evaluated, skipped (its eval.json already holds this evaluation) or
    failed (``message`` says why, in one line)."""

    run_dir: str
    status: str
    exp_name: str | None = None
    env_id: str | None = None
    run_seed: int | None = None
    eval_json: str | None = None
    return_mean: float | None = None
    return_std: float | None = None
    episodes: int | None = None
    seconds: float = 0.0  # the run's wall time in the sweep (load and rollout); 0 for a skipped run
    message: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class SweepResult:
    """Every run's :class:`Outcome`, in the order the runs were found, and how the sweep ran."""

    outcomes: list[Outcome]
    executor: str
    workers: int
    wall_clock_seconds: float
    notes: list[str] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def exit_code(self) -> int:
        """0 when every run was evaluated or skipped, 1 when one failed (the others were still evaluated)."""
        return EXIT_PROBLEM if self.count(FAILED) else EXIT_OK

    def to_json(self) -> dict:
        return {
            "executor": self.executor,
            "workers": self.workers,
            "wall_clock_seconds": self.wall_clock_seconds,
            "evaluated": self.count(EVALUATED),
            "skipped": self.count(SKIPPED),
            "failed": self.count(FAILED),
            "notes": self.notes,
            "runs": [o.to_json() for o in self.outcomes],
        }


def failure_message(exc: BaseException) -> str:
    """One line for a run that failed: zoo's own message and hint, else the exception's first line with its
    type (a library raising inside a rollout)."""
    from zoo.errors import ZooError

    if isinstance(exc, ZooError):
        return str(exc)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
