"""The runs a sweep finds, each planned as ``zoo eval RUN`` would plan it, or the one line saying why not."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.eval_settings import EvalSettings
from zoo.frameworks import LoadOptions
from zoo.sweep.outcome import FAILED, SKIPPED, Outcome, failure_message

if TYPE_CHECKING:
    from zoo.artifacts.runs import Run, RunFilter
    from zoo.registry import Registry
    from zoo.targets import EvalPlan


@dataclass(frozen=True)
class SweepSettings:
    """What every run of a sweep is evaluated with: ``zoo eval RUN``'s settings (what is left None comes from each
    run's registry entry), load options, and the package that registers the env ids (``--env-module``)."""

    eval: EvalSettings = field(default_factory=EvalSettings)
    load: LoadOptions = field(default_factory=LoadOptions)
    env_module: str | None = None


@dataclass
class SweepItem:
    """A run found by the sweep: its plan, and its outcome when that is decided before any rollout (skipped:
    its eval.json holds this evaluation; failed: it could not be planned)."""

    run: Run
    plan: EvalPlan | None = None
    outcome: Outcome | None = None

    @property
    def pending(self) -> bool:
        return self.outcome is None

    def failed(self, message: str, seconds: float = 0.0) -> Outcome:
        """The row of a run that failed: ``message`` with the run's own folder left out of paths (the row
        names the run)."""
        message = message.replace(f"{self.run.path}{os.sep}", "")
        return dataclasses.replace(self.started(), message=message, seconds=round(seconds, 3))

    def started(self) -> Outcome:
        """The outcome row of this run, filled with what its plan knows."""
        planned = self.plan
        return Outcome(
            run_dir=str(self.run.path),
            status=FAILED,
            exp_name=planned.target.entry.name if planned else self.run.exp_name,
            env_id=planned.target.env_id if planned else self.run.env_id,
            run_seed=planned.target.run.seed if planned else self.run.seed,
            eval_json=str(planned.out_path) if planned and planned.out_path else None,
        )


def plan_sweep(
    paths: Iterable[Path],
    registry: Registry,
    run_filter: RunFilter,
    settings: SweepSettings,
    force: bool = False,
) -> list[SweepItem]:
    """Every run under ``paths`` that ``run_filter`` keeps, in path order, planned with ``settings``. A run
    whose eval.json already holds this evaluation is marked skipped unless ``force``."""
    from zoo.checker import found_runs
    from zoo.errors import ZooError
    from zoo.sweep.resume import already_evaluated

    runs = found_runs(list(paths), registry, run_filter, "zoo eval --all")
    items = []
    for run in runs:
        item = SweepItem(run)
        try:
            item.plan = plan_run(run, registry, settings)
        except ZooError as exc:
            item.outcome = item.failed(failure_message(exc))
        if item.plan is not None and not force:
            recorded = already_evaluated(item.plan)
            if recorded is not None:
                metrics = recorded.get("metrics") or {}
                item.outcome = dataclasses.replace(
                    item.started(),
                    status=SKIPPED,
                    return_mean=metrics.get("return_mean"),
                    return_std=metrics.get("return_std"),
                    episodes=recorded.get("num_episodes"),
                    message="already evaluated (same model sha256 and settings)",
                )
        items.append(item)
    return items


def plan_run(run: Run, registry: Registry, settings: SweepSettings) -> EvalPlan:
    """``zoo eval RUN``'s plan for one discovered run, writing the run's own eval.json."""
    from zoo.envs import qualify_env_id
    from zoo.targets import DEFAULT_OUT, plan_eval, target_of_run

    target = target_of_run(run, registry)
    if settings.env_module:
        target = dataclasses.replace(target, env_id=qualify_env_id(target.env_id, settings.env_module))
    return plan_eval(target, settings.eval, settings.load, out=DEFAULT_OUT)
