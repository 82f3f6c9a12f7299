"""``zoo eval FOLDER --all``'s terminal side: a progress bar over runs and episodes, then one row per run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from zoo.cli.render import err, escape, print_json, render_sweep, sweep_summary


def sweep(target: Path, *, as_json: bool, quiet: bool, **arguments) -> None:
    """Run :func:`zoo.api.evaluate_all` on ``target`` (with ``arguments``: its settings, load options, ...) with a
    progress bar (on a terminal), print the table and
    a summary, and exit 1 if a run failed (130 on Ctrl-C, saying how many eval.json files were written)."""
    from zoo import api

    written = 0

    def count(outcome) -> None:
        nonlocal written
        written += outcome.status == "evaluated"

    console = err()
    try:
        if quiet or not console.is_terminal:
            result = api.evaluate_all(target, on_run=count, **arguments)
        else:
            result = _with_progress(console, target, count, arguments)
    except KeyboardInterrupt:
        console.print(
            f"interrupted: {written} eval.json written in full; the other runs were left as they were"
        )
        sys.exit(130)
    if as_json:
        print_json(result.to_json())
    elif not quiet or result.exit_code:
        render_sweep(result, target, quiet)
    if not quiet or result.exit_code:
        console.print(sweep_summary(result))
    sys.exit(result.exit_code)


def _with_progress(console, target: Path, count, arguments: dict):
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

        return api.evaluate_all(target, on_planned=planned, on_run=decided, on_episode=episode, **arguments)
