"""``zoo eval FOLDER --all``'s terminal side: a progress bar over runs and episodes, then one row per run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from zoo.cli.render import err, escape, out, print_json, row_names, table_of

_STYLE = {"evaluated": "green", "skipped": "cyan", "failed": "red"}


def sweep(target: Path, *, as_json: bool, quiet: bool, **settings) -> None:
    """Run :func:`zoo.api.evaluate_all` on ``target`` with a progress bar (on a terminal), print the table and
    a summary, and exit 1 if a run failed (130 on Ctrl-C, saying how many eval.json files were written)."""
    from zoo import api

    written = 0

    def count(outcome) -> None:
        nonlocal written
        written += outcome.status == "evaluated"

    console = err()
    try:
        if quiet or not console.is_terminal:
            result = api.evaluate_all(target, on_run=count, **settings)
        else:
            result = _with_progress(console, target, count, settings)
    except KeyboardInterrupt:
        console.print(
            f"interrupted: {written} eval.json written in full; the other runs were left as they were"
        )
        sys.exit(130)
    if as_json:
        print_json(result.to_json())
    elif not quiet or result.exit_code:
        _render(result, target, quiet)
    if not quiet or result.exit_code:
        console.print(_summary(result))
    sys.exit(result.exit_code)


def _with_progress(console, target: Path, count, settings: dict):
    """The sweep with two bars: runs decided, and the episodes of the run being evaluated (local executor)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from zoo import api

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        runs = progress.add_task("runs", total=None)
        episodes = progress.add_task("episodes", total=None, visible=False)

        def planned(items) -> None:
            progress.update(runs, total=len(items))

        def decided(outcome) -> None:
            count(outcome)
            progress.advance(runs)
            progress.update(episodes, visible=False)

        def episode(item, done: int) -> None:
            name = escape(os.path.basename(str(item.run.path)))
            progress.update(
                episodes, description=name, completed=done, total=item.plan.episodes, visible=True
            )

        return api.evaluate_all(target, on_planned=planned, on_run=decided, on_episode=episode, **settings)


def _render(result, target: Path, quiet: bool) -> None:
    shown = [o for o in result.outcomes if not (quiet and o.status != "failed")]
    names = row_names([o.run_dir for o in shown], [target])
    table = table_of("status", "run", "experiment", "env", "return", "episodes", "time", "note")
    for outcome, name in zip(shown, names, strict=True):
        score = (
            "-" if outcome.return_mean is None else f"{outcome.return_mean:.2f} +/- {outcome.return_std:.2f}"
        )
        table.add_row(
            f"[{_STYLE[outcome.status]}]{outcome.status}[/]",
            escape(name),
            escape(outcome.exp_name or "-"),
            escape(outcome.env_id or "-"),
            score,
            str(outcome.episodes or "-"),
            f"{outcome.seconds:.1f}s" if outcome.status == "evaluated" else "-",
            escape(outcome.message or ""),
        )
    if shown:
        out().print(table)


def _summary(result) -> str:
    workers = (
        f" on {result.workers} Ray worker{'s' if result.workers != 1 else ''}"
        if result.executor == "ray"
        else ""
    )
    return (
        f"{len(result.outcomes)} run{'s' if len(result.outcomes) != 1 else ''}: {result.count('evaluated')} "
        f"evaluated, {result.count('skipped')} skipped, {result.count('failed')} failed in "
        f"{result.wall_clock_seconds:.1f}s{workers}"
    )
