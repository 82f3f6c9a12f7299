"""The ``zoo`` command: parse, call the library, render. No logic of its own.

Expected failures are :class:`~zoo.errors.ZooError`: one ``error:`` line, a hint,
and the error's exit code (1 problem, 2 usage, 3 refused), never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from zoo import __version__
from zoo.errors import EXIT_PROBLEM, ZooError


def _console(stderr: bool) -> Console:
    """Rich console; when piped (no terminal) use a wide page instead of rich's 80 columns."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or os.environ.get("COLUMNS") else 160
    return Console(stderr=stderr, highlight=False, width=width, soft_wrap=stderr)


def out() -> Console:
    """Console for results (stdout), built per call so that COLUMNS and redirections are honoured."""
    return _console(stderr=False)


def err() -> Console:
    """Console for progress, summaries, warnings and errors (stderr)."""
    return _console(stderr=True)


def _fail(exc: ZooError) -> None:
    err().print(f"[bold red]error:[/] {exc.message}", markup=True)
    if exc.hint:
        err().print(f"[dim]hint:[/] {exc.hint}", markup=True)
    sys.exit(exc.exit_code)


class ZooGroup(click.Group):
    """Turns every ZooError raised by a command into the one-line error contract."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ZooError as exc:
            _fail(exc)
        except KeyboardInterrupt:
            err().print("interrupted: nothing was written")
            sys.exit(130)
        except Exception as exc:  # a bug in zoo: one line by default, the traceback on request
            if os.environ.get("ZOO_DEBUG"):
                raise
            _fail(ZooError(f"internal error: {type(exc).__name__}: {exc}",
                           hint="please report it; rerun with ZOO_DEBUG=1 for the traceback"))  # fmt: skip


def _registry(ctx: click.Context):
    from zoo.registry import load_registry

    return load_registry(ctx.obj.get("registry"))


def _print_json(data) -> None:
    click.echo(json.dumps(data, indent=2))


@click.group(cls=ZooGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="zoo")
@click.option("--registry", "registry", type=click.Path(dir_okay=False), default=None, envvar="ZOO_REGISTRY",
              help="A registry YAML merged over the bundled one (env: ZOO_REGISTRY).")  # fmt: skip
@click.pass_context
def cli(ctx: click.Context, registry: str | None) -> None:
    """zoo: find, check, evaluate and share trained RL policies.

    Local first and safe by default: no network, and no pickle executed unless you say so.
    """
    ctx.obj = {"registry": registry}


# ----------------------------------------------------------------------------- registry
@cli.group("registry")
def registry_cmd() -> None:
    """List or show the experiments zoo knows."""


@registry_cmd.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
@click.pass_context
def registry_list(ctx: click.Context, as_json: bool) -> None:
    """One line per experiment: framework, algorithm, format, extras."""
    reg = _registry(ctx)
    if as_json:
        _print_json({name: reg.entries[name].as_dict() for name in reg.names()})
        return
    table = Table(title=f"{len(reg.names())} experiments", title_justify="left")
    for col in ("name", "framework", "algorithm", "format", "layout", "eval mode", "extras"):
        table.add_column(col)
    for name in reg.names():
        e = reg.entries[name]
        mode = "deterministic" if e.eval.get("deterministic") else e.stochastic_mode()
        table.add_row(
            name, e.framework, e.algorithm, e.format, e.layout["kind"], mode, ",".join(e.extras) or "-"
        )
    out().print(table)


@registry_cmd.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
@click.pass_context
def registry_show(ctx: click.Context, name: str, as_json: bool) -> None:
    """Everything the registry says about NAME."""
    import yaml

    entry = _registry(ctx).get(name)
    if as_json:
        _print_json(entry.as_dict())
        return
    data = entry.as_dict()
    data.pop("name")
    out().print(f"[bold]{name}[/]", markup=True)
    out().print(yaml.safe_dump(data, sort_keys=False).rstrip())


# ----------------------------------------------------------------------------- check
_STYLE = {"ok": "green", "warning": "yellow", "error": "red"}


@cli.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--exp-name", default=None, help="Only runs of this experiment.")
@click.option("--env-id", default=None, help="Only runs on this env id.")
@click.option("--seed", type=int, default=None, help="Only runs with this seed.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="Only print runs that are not ok.")
@click.option(
    "--no-cache", is_flag=True, help="Re-read every events file (results are cached by size and mtime)."
)
@click.pass_context
def check_cmd(ctx, paths, exp_name, env_id, seed, as_json, quiet, no_cache) -> None:
    """Find runs under PATHS and say which hold a usable model.

    PATH may be a runs folder, one run dir or one model file. Nothing is executed:
    pickles are scanned, not loaded. Exit 0 when every run is ok or only warned, 1 on any error.
    """
    from zoo.artifacts.runs import RunFilter
    from zoo.check import check_paths

    reports = check_paths(
        list(paths), _registry(ctx), RunFilter(exp_name, env_id, seed), use_cache=not no_cache
    )
    if as_json:
        _print_json([r.to_json() for r in reports])
    else:
        _render_check(reports, quiet)
    sys.exit(EXIT_PROBLEM if any(r.status == "error" for r in reports) else 0)


def _render_check(reports, quiet: bool) -> None:
    table = Table(show_lines=False)
    for col in ("status", "run", "model", "train return", "reason"):
        table.add_column(col, overflow="fold")
    shown = [r for r in reports if not (quiet and r.status == "ok")]
    for r in shown:
        run, d = r.run, r.details
        model = "-"
        if run.model_file is not None and "size" in d:
            model = f"{d['size'] / 1024:.0f} KiB {d.get('format', '')}"
        train = d.get("train_return")
        reason = r.reason if not r.hint else f"{r.reason}\n[dim]{r.hint}[/]"
        table.add_row(
            f"[{_STYLE[r.status]}]{r.status}[/]", run.run_name or str(run.path), model,
            f"{train['value']:.1f}" if train else "-", reason,
        )  # fmt: skip
    if shown:
        out().print(table)
    counts = {s: sum(r.status == s for r in reports) for s in ("ok", "warning", "error")}
    out().print(
        f"{len(reports)} runs: {counts['ok']} ok, {counts['warning']} warning, {counts['error']} error"
    )


# ----------------------------------------------------------------------------- eval
@cli.command("eval")
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--exp-name", default=None, help="Experiment name when the path does not say.")
@click.option("--env-id", default=None, help="Env id when the path does not say.")
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of envs and of the policy's randomness."
)
@click.option(
    "--run-seed", type=int, default=None, help="Pick the run with this training seed in a runs folder."
)
@click.option(
    "--episodes", "-n", type=click.IntRange(min=1), default=None, help="Episodes [registry default]."
)
@click.option("--num-envs", type=click.IntRange(min=1), default=8, show_default=True, help="Vectorized envs.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@click.option("--deterministic/--stochastic", default=None,
              help="Greedy/mean actions, or the registry's published eval mode [registry default].")  # fmt: skip
@click.option(
    "--capture-video", is_flag=True, help="Record env 0's episodes to videos/ (a failure only warns)."
)
@click.option(
    "--trust-pickle", is_flag=True, help="Allow full unpickling of a file you trust. Never for downloads."
)
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write eval.json [run dir/eval.json].")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print eval.json on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary.")
@click.pass_context
def eval_cmd(ctx, target, exp_name, env_id, seed, run_seed, episodes, num_envs, device, deterministic,
             capture_video, trust_pickle, out_path, as_json, quiet) -> None:  # fmt: skip
    """Evaluate TARGET (a run dir or model file) and write eval.json.

    Rollouts are vectorized, seeded and deterministic: the same seed gives the same result, bit for bit.
    """
    from zoo.targets import load_plan_policy, plan_eval, resolve_target, run_eval

    target_ = resolve_target(target, _registry(ctx), exp_name=exp_name, env_id=env_id, seed=run_seed)
    plan = plan_eval(target_, episodes=episodes, num_envs=num_envs, seed=seed, deterministic=deterministic,
                     device=device, out_path=out_path, capture_video=capture_video, trust_pickle=trust_pickle)  # fmt: skip
    policy = load_plan_policy(plan)
    if not quiet:
        err().print(f"evaluating [bold]{target_.model_file}[/] ({target_.entry.name}, {target_.env_id}): "
                  f"{plan.episodes} episodes, {plan.num_envs} envs, seed {plan.seed}, {plan.mode} "
                  f"[dim]({plan.mode_source})[/], device {plan.device}", markup=True)  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _run_with_progress(
            quiet, plan.episodes, lambda on_episode: run_eval(plan, policy, on_episode)
        )
    for message in dict.fromkeys(str(w.message) for w in caught if "video" in str(w.message)):
        err().print(f"[yellow]warning:[/] {message}", markup=True)
    if as_json:
        _print_json(result.to_json())
    if not quiet:
        m = result.metrics
        success = "" if m["success_rate"] is None else f", success {m['success_rate']:.0%}"
        err().print(f"return {m['return_mean']:.2f} +/- {m['return_std']:.2f} over {plan.episodes} episodes "
                  f"(length {m['length_mean']:.1f}{success}) in {result.wall_clock_seconds:.1f}s -> {plan.out_path}")  # fmt: skip


def _run_with_progress(quiet: bool, total: int, work):
    """A rich progress bar on a terminal; nothing at all when piped or quiet."""
    console = err()
    if quiet or not console.is_terminal:
        return work(None)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("episodes"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:  # fmt: skip
        task = progress.add_task("eval", total=total)
        return work(lambda done: progress.update(task, completed=done))


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="zoo")
