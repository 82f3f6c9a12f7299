"""``zoo check``, ``zoo leaderboard`` and ``zoo report``: what the runs under a folder are, and how they rank."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from zoo.cli import options as opt
from zoo.cli.render import count, err, escape, out, print_json, progress, render_check, render_leaderboard
from zoo.cli.shared import Process, registry_of
from zoo.errors import EXIT_PROBLEM, ZooError


@click.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@opt.check_target_options
@opt.as_json
@click.option("--quiet", "-q", is_flag=True, help="Only print runs that are not ok.")
@click.option(
    "--no-cache",
    is_flag=True,
    help="Read every run again (verdicts are remembered while a run's files are unchanged).",
)
@click.pass_context
def check_cmd(ctx, paths, exp_name, env_id, run_seed, as_json, quiet, no_cache) -> None:
    """Find runs under PATHS and say which hold a usable model.

    PATH may be a runs folder, one run dir or one model file. For a path that holds one run,
    --exp-name and --env-id say what it is (its spaces are checked against that env); in a folder
    of several runs they pick. Nothing is executed: pickles are scanned, not loaded. Exit 0 when
    every run is ok or only warned, 1 on any error.
    """
    from zoo.artifacts.runs import RunFilter
    from zoo.checker import check_paths, unique_paths

    paths = unique_paths(list(paths))
    try:
        with progress("reading runs") as update:
            reports = check_paths(
                paths,
                registry_of(ctx),
                RunFilter(exp_name, env_id, run_seed),
                use_cache=not no_cache,
                on_progress=update,
                detached_save=Process.in_main,
            )
    except ZooError:
        if as_json:  # no run found (or no path): still JSON on stdout, the error on stderr
            click.echo("[]")
        raise
    if as_json:  # one report per line: still one JSON array, written by json's C encoder
        click.echo("[\n" + ",\n".join(r.json_text() for r in reports) + "\n]")
    else:
        render_check(reports, quiet, paths)
    Process.quick_exit = True
    sys.exit(EXIT_PROBLEM if any(r.status == "error" for r in reports) else 0)


@click.command("leaderboard")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--exp-name", default=None, help="Only runs of this experiment.")
@click.option("--env-id", default=None, help="Only runs on this env id.")
@opt.as_json
@click.option("--csv", "as_csv", is_flag=True, help="CSV on stdout: one line per row, every JSON field.")
@click.option("--markdown", "as_markdown", is_flag=True, help="A GitHub Markdown table on stdout.")
@click.option(
    "--eval",
    "evaluate_missing",
    is_flag=True,
    help="First evaluate the runs that have no eval.json (existing ones are kept as they are).",
)
@opt.episodes
@opt.seed
@opt.num_envs
@opt.device
@opt.bounds
@click.pass_context
@opt.typed()
def leaderboard_cmd(
    ctx, paths, exp_name, env_id, as_json, as_csv, as_markdown, evaluate_missing, settings
) -> None:
    """Rank the runs under PATHS per env id from their eval.json files, aggregated over seeds.

    Per experiment and env: the mean of the per-seed means with a 95% bootstrap interval, the IQM, the
    range of the seeds, and a success rate with a Wilson interval where episodes publish one. Runs that
    cannot be ranked are listed on stderr. Exit 0 when a leaderboard was printed, 1 when nothing could be
    ranked. --episodes, --seed, --num-envs, --device, --max-steps and --max-seconds are --eval's settings.
    See docs/leaderboard.md.
    """
    from click.core import ParameterSource

    from zoo import api

    if sum((as_json, as_csv, as_markdown)) > 1:
        raise click.UsageError("--json, --csv and --markdown are exclusive: pick one output format")
    eval_only = [
        f"--{n.replace('_', '-')}"
        for n in ("episodes", "seed", "num_envs", "device", "max_steps", "max_seconds")
        if ctx.get_parameter_source(n) == ParameterSource.COMMANDLINE
    ]
    if eval_only and not evaluate_missing:
        raise click.UsageError(f"{', '.join(eval_only)}: evaluation settings, only with --eval")

    def on_run(outcome) -> None:
        if outcome.status == "failed":
            err().print(
                f"[yellow]eval failed:[/] {escape(outcome.run_dir)}: {escape(outcome.message or '')}",
                markup=True,
            )
        else:
            err().print(f"[dim]{outcome.status}: {escape(outcome.run_dir)}[/]", markup=True)

    board = api.leaderboard(
        list(paths),
        exp_name=exp_name,
        env_id=env_id,
        evaluate_missing=evaluate_missing,
        settings=settings,
        registry=registry_of(ctx),
        on_run=on_run,
    )
    if as_json:
        print_json(board.to_json())
    elif as_csv:
        click.echo(board.to_csv(), nl=False)
    elif as_markdown:
        click.echo(board.to_markdown(), nl=False)
    elif board.rows:
        render_leaderboard(board)
    for path, message in board.problems:
        err().print(f"[yellow]not ranked:[/] {escape(path)}: {escape(message)}", markup=True)
    if not board.rows:
        raise ZooError(
            f"nothing to rank: none of the {count(board.runs_found, 'run')} found has a usable eval.json",
            hint="the lines above say why, run by run",
        )


@click.command("report")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="The report folder: index.html and its PNGs (replaced whole once the new one is complete).",
)
@click.option("--exp-name", default=None, help="Only runs of this experiment.")
@click.option("--env-id", default=None, help="Only runs on this env id.")
@opt.as_json
@click.pass_context
def report_cmd(ctx, paths, out_dir, exp_name, env_id, as_json) -> None:
    """Write an HTML report of the runs under PATHS into --out: learning curves per env (mean over seeds,
    95% band), eval returns (a dot per episode) and the leaderboard. Runs without an events file or an
    eval.json are listed under "Problems" on the page (and on stderr). See docs/report.md."""
    from zoo import api

    result = api.report(list(paths), out_dir, exp_name=exp_name, env_id=env_id, registry=registry_of(ctx))
    if as_json:
        print_json(result.to_json())
    else:
        out().print(
            f"wrote {escape(str(result.index))}: {count(len(result.leaderboard.rows), 'leaderboard row')}, "
            f"{count(len(result.images), 'image')}, {count(len(result.problems), 'problem')}"
        )
    for path, message in result.problems:
        err().print(f"[yellow]problem:[/] {escape(path)}: {escape(message)}", markup=True)
