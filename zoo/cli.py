"""The ``zoo`` command: parse, call the library, render. No logic of its own.

Expected failures are :class:`~zoo.errors.ZooError`: one ``error:`` line, a hint,
and the error's exit code (1 problem, 2 usage, 3 refused), never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import click

from zoo import __version__
from zoo import cli_options as opt
from zoo.cli_console import err, escape, out, print_json, row_names, table_of
from zoo.doctor.config import Guardrail
from zoo.errors import EXIT_PROBLEM, UsageError, WriteError, ZooError

_QUICK_EXIT = False  # set by a command whose process has nothing left to do but tear down imports
_IN_MAIN = False  # the console script is running (tests call ``cli`` itself): zoo owns the process


def _fail(exc: ZooError) -> None:
    err().print(f"[bold red]error:[/] {escape(exc.message)}", markup=True)
    if exc.hint:
        err().print(f"[dim]hint:[/] {escape(exc.hint)}", markup=True)
    sys.exit(exc.exit_code)


class ZooGroup(click.Group):
    """Turns every ZooError raised by a command into the one-line error contract."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ZooError as exc:
            _fail(exc)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise  # click's own control flow: --help in subcommands, usage errors (exit 2)
        except KeyboardInterrupt:
            err().print("interrupted: nothing was written")
            sys.exit(130)
        except OSError as exc:
            if exc.errno not in WriteError.DISK_ERRNOS or os.environ.get("ZOO_DEBUG"):
                _internal(exc)
            _fail(WriteError.of(exc))  # the disk is the cause, wherever zoo was writing
        except Exception as exc:
            _internal(exc)


def _internal(exc: Exception) -> None:
    """A bug in zoo: one line by default, the traceback on request (``ZOO_DEBUG=1``)."""
    if os.environ.get("ZOO_DEBUG"):
        raise exc
    _fail(
        ZooError(
            f"internal error: {type(exc).__name__}: {exc}",
            hint="please report it; rerun with ZOO_DEBUG=1 for the traceback",
        )
    )


def _registry(ctx: click.Context):
    from zoo.registry import load_registry

    return load_registry(ctx.obj.get("registry"))


def _versions(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``zoo --version``: zoo's, and those of the libraries it works with that are installed (from
    their metadata: nothing is imported)."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    from zoo.frameworks import framework_names, get_adapter

    click.echo(f"zoo {__version__}")
    names = ["torch", "gymnasium", "numpy", "huggingface_hub", "onnxruntime"]
    names += [pkg for name in framework_names() for pkg in get_adapter(name).packages]
    for name in dict.fromkeys(names):
        try:
            click.echo(f"{name} {version(name)}")
        except PackageNotFoundError:
            click.echo(f"{name} not installed")
    ctx.exit()


@click.group(cls=ZooGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_versions,
    help="Show zoo's version and those of torch, gymnasium and the framework libraries found.",
)
@click.option(
    "--registry",
    "registry",
    type=click.Path(dir_okay=False),
    default=None,
    envvar="ZOO_REGISTRY",
    help="A registry YAML merged over the bundled one (env: ZOO_REGISTRY).",
)
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
        print_json({name: reg.entries[name].as_dict() for name in reg.names()})
        return
    table = table_of(
        "name",
        "framework",
        "algorithm",
        "format",
        "layout",
        "eval mode",
        "extras",
        title=f"{len(reg.names())} experiments",
        title_justify="left",
    )
    for name in reg.names():
        e = reg.entries[name]
        mode = "deterministic" if e.eval.get("deterministic") else e.stochastic_mode()
        table.add_row(
            name,
            e.framework,
            e.algorithm,
            e.format,
            e.layout.get("kind", "-"),
            mode,
            ",".join(e.extras) or "-",
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
        print_json(entry.as_dict())
        return
    data = entry.as_dict()
    data.pop("name")
    out().print(f"[bold]{name}[/]", markup=True)
    out().print(yaml.safe_dump(data, sort_keys=False).rstrip())


# ----------------------------------------------------------------------------- check
_STYLE = {"ok": "green", "warning": "yellow", "error": "red"}


@cli.command("check")
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
        with _progress("reading runs") as update:
            reports = check_paths(
                paths,
                _registry(ctx),
                RunFilter(exp_name, env_id, run_seed),
                use_cache=not no_cache,
                on_progress=update,
                detached_save=_IN_MAIN,
            )
    except ZooError:
        if as_json:  # no run found (or no path): still JSON on stdout, the error on stderr
            click.echo("[]")
        raise
    if as_json:  # one report per line: still one JSON array, written by json's C encoder
        click.echo("[\n" + ",\n".join(r.json_text() for r in reports) + "\n]")
    else:
        _render_check(reports, quiet, paths)
    global _QUICK_EXIT
    _QUICK_EXIT = True
    sys.exit(EXIT_PROBLEM if any(r.status == "error" for r in reports) else 0)


def _train_cell(train: dict | None) -> str:
    """The last training return, or "-"; a non-finite one is kept as the report spells it ("nan")."""
    if not train:
        return "-"
    return train["value"] if isinstance(train["value"], str) else f"{train['value']:.1f}"


def _render_check(reports, quiet: bool, paths: list[Path]) -> None:
    shown = [
        (r, name)
        for r, name in zip(reports, row_names([r.run.path for r in reports], paths), strict=True)
        if not (quiet and r.status == "ok")
    ]
    watched = any("watch" in r.details for r, _ in shown)  # a column only where zoo watch left records
    table = table_of("status", "run", "model", "train return", *(("best eval",) if watched else ()), "reason")
    for r, name in shown:
        run, d = r.run, r.details
        model = "-"
        if run.model_file is not None and "size" in d:
            model = f"{d['size'] / 1024:.0f} KiB {d.get('format', '')}"
        train = d.get("train_return")
        reason = escape(r.reason) if not r.hint else f"{escape(r.reason)}\n[dim]{escape(r.hint)}[/]"
        best = _best_eval(d["watch"]) if "watch" in d else "-"
        table.add_row(
            f"[{_STYLE[r.status]}]{r.status}[/]",
            escape(name),
            model,
            _train_cell(train),
            *((best,) if watched else ()),
            reason,
        )
    if shown:
        out().print(table)
    counts = {s: sum(r.status == s for r in reports) for s in ("ok", "warning", "error")}
    out().print(
        f"{len(reports)} run{'s' if len(reports) != 1 else ''}: {counts['ok']} ok, {counts['warning']} warning, "
        f"{counts['error']} error"
    )


def _best_eval(watch: dict) -> str:
    """zoo watch's best model in a check row: its score, step and how many evaluations it beat."""
    best, count = watch["best"], watch["evaluations"]
    if best is None:
        return f"- ({count} eval{'s' if count != 1 else ''})"
    return f"{best['return_mean']:.1f} at step {best['step']} ({count} eval{'s' if count != 1 else ''})"


# ----------------------------------------------------------------------------- leaderboard
@cli.command("leaderboard")
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
def leaderboard_cmd(
    ctx,
    paths,
    exp_name,
    env_id,
    as_json,
    as_csv,
    as_markdown,
    evaluate_missing,
    episodes,
    seed,
    num_envs,
    device,
    max_steps,
    max_seconds,
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
        episodes=episodes,
        seed=seed,
        num_envs=num_envs,
        device=device,
        max_steps=max_steps,
        max_seconds=max_seconds,
        registry=_registry(ctx),
        on_run=on_run,
    )
    if as_json:
        print_json(board.to_json())
    elif as_csv:
        click.echo(board.to_csv(), nl=False)
    elif as_markdown:
        click.echo(board.to_markdown(), nl=False)
    elif board.rows:
        _render_leaderboard(board)
    for path, message in board.problems:
        err().print(f"[yellow]not ranked:[/] {escape(path)}: {escape(message)}", markup=True)
    if not board.rows:
        raise ZooError(
            f"nothing to rank: none of the {_count(board.runs_found, 'run')} found has a usable eval.json",
            hint="the lines above say why, run by run",
        )


# ----------------------------------------------------------------------------- report
@cli.command("report")
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

    result = api.report(list(paths), out_dir, exp_name=exp_name, env_id=env_id, registry=_registry(ctx))
    if as_json:
        print_json(result.to_json())
    else:
        out().print(
            f"wrote {escape(str(result.index))}: {_count(len(result.leaderboard.rows), 'leaderboard row')}, "
            f"{_count(len(result.images), 'image')}, {_count(len(result.problems), 'problem')}"
        )
    for path, message in result.problems:
        err().print(f"[yellow]problem:[/] {escape(path)}: {escape(message)}", markup=True)


def _render_leaderboard(board) -> None:
    """One rich table, a section per env id."""
    from zoo.ranking.board import COLUMNS, cells_of

    table = table_of(
        *COLUMNS, title="leaderboard (mean of seed means, 95% percentile bootstrap CI)", title_justify="left"
    )
    previous = None
    for row in board.rows:
        if previous is not None and row.env_id != previous:
            table.add_section()
        previous = row.env_id
        table.add_row(*(escape(cell) for cell in cells_of(row)))
    out().print(table)
    out().print(
        f"{_count(len(board.rows), 'row')} from {_count(board.runs_found, 'run')}"
        + (f"; {len(board.problems)} not ranked (stderr)" if board.problems else "")
    )


# ----------------------------------------------------------------------------- eval
@cli.command("eval")
@click.argument("target", type=click.Path(path_type=Path), required=False)
@opt.target_options
@opt.eval_options
@opt.trust_pickle
@opt.trust_wrapper
@opt.env_factory
@opt.env_module
@opt.policy_class
@opt.out("Where to write eval.json [run dir/eval.json].")
@opt.model_config
@opt.engine
@opt.sweep_options
@click.option(
    "--json", "as_json", is_flag=True, help="Print eval.json on stdout (with --all: the sweep's rows)."
)
@opt.quiet
@click.pass_context
def eval_cmd(
    ctx,
    target,
    exp_name,
    env_id,
    run_seed,
    seed,
    episodes,
    num_envs,
    device,
    deterministic,
    capture_video,
    max_steps,
    max_seconds,
    trust_pickle,
    trust_wrappers,
    env_factory,
    env_module,
    policy_class,
    out_path,
    model_config,
    engine,
    sweep,
    force,
    executor,
    address,
    num_cpus,
    num_gpus,
    as_json,
    quiet,
) -> None:
    """Evaluate TARGET (a run dir, model file, or a policy.onnx/policy.ts from zoo export) and write eval.json.

    Rollouts are vectorized, seeded and deterministic: the same seed gives the same result, bit for bit.
    With --policy-class module:Class and --env-id, your own class is evaluated and TARGET is optional.
    With --all, every run under the folder TARGET is evaluated in one process (or on Ray), each writing its
    own eval.json; runs whose eval.json already holds the same evaluation are skipped (docs/eval.md).
    """
    from zoo import api

    if target is None and policy_class is None:  # TARGET is optional only for a policy class
        raise click.MissingParameter(ctx=ctx, param_type="argument", param_hint="'TARGET'")
    sweep_flags = {
        "--force": force,
        "--executor": executor != "local",
        "--address": address,
        "--num-cpus": num_cpus,
        "--num-gpus": num_gpus,
    }
    if not sweep:
        given = [flag for flag, value in sweep_flags.items() if value]
        if given:
            raise UsageError(
                f"{given[0]} is a setting of a sweep", hint=f"add --all: zoo eval {target} --all"
            )
    else:
        single = {
            "--out": out_path,
            "--capture-video": capture_video,
            "--policy-class": policy_class,
            "--env-factory": env_factory,
            "--model-config": model_config,
        }
        given = [flag for flag, value in single.items() if value]
        if given:
            raise UsageError(
                f"{given[0]} evaluates one run; --all evaluates every run into its own eval.json",
                hint=f"drop {given[0]}, or name one run instead of --all",
            )
        from zoo.cli_sweep import sweep as run_sweep

        run_sweep(
            target,
            exp_name=exp_name,
            env_id=env_id,
            run_seed=run_seed,
            seed=seed,
            episodes=episodes,
            num_envs=num_envs,
            device=device,
            deterministic=deterministic,
            trust_pickle=trust_pickle,
            trust_wrappers=trust_wrappers,
            env_module=env_module,
            engine=engine,
            max_steps=max_steps,
            max_seconds=max_seconds,
            force=force,
            executor=executor,
            address=address,
            num_cpus=num_cpus,
            num_gpus=num_gpus,
            registry=_registry(ctx),
            as_json=as_json,
            quiet=quiet,
        )
        return
    plan = api.plan(
        target,
        exp_name=exp_name,
        env_id=env_id,
        run_seed=run_seed,
        seed=seed,
        episodes=episodes,
        num_envs=num_envs,
        device=device,
        deterministic=deterministic,
        capture_video=capture_video,
        trust_pickle=trust_pickle,
        model_config=model_config,
        out=out_path or "default",
        trust_wrappers=trust_wrappers,
        env_factory=env_factory,
        env_module=env_module,
        policy_class=policy_class,
        engine=engine,
        max_steps=max_steps,
        max_seconds=max_seconds,
        registry=_registry(ctx),
    )
    _evaluate(plan, quiet, as_json)


def _evaluate(plan, quiet: bool, as_json: bool, seeds: str | None = None) -> None:
    """Say what will run, roll out with a progress bar, report videos and warnings, summarise."""
    from zoo import api
    from zoo.rollout_guard import DEFAULT_MAX_STEPS
    from zoo.targets import load_target_policy

    target = plan.target
    if plan.options.policy_class:  # said even with --quiet, and before loading: loading runs the user's class
        err().print(
            f"[yellow]note:[/] running your code: --policy-class {escape(plan.options.policy_class)} acts",
            markup=True,
        )
    policy = load_target_policy(target, plan.options)  # refusals and bad files before the announcement
    if plan.options.env_factory:  # said even with --quiet: it is the user's code that runs
        err().print(
            f"[yellow]note:[/] running your code: --env-factory {escape(plan.options.env_factory)} "
            "builds the env",
            markup=True,
        )
    if not quiet:
        err().print(
            f"evaluating [bold]{escape(target.label)}[/] ({target.entry.name}, {target.env_id}): "
            f"{_count(plan.episodes, 'episode')}, {_count(plan.num_envs, 'env')}, {seeds or f'seed {plan.seed}'}, {plan.mode} "
            f"[dim]({plan.mode_source})[/], device {plan.device}"
            + ("" if plan.options.engine == "torch" else f", engine {plan.options.engine}"),
            markup=True,
        )
    result = _run_with_progress(
        quiet, plan.episodes, lambda on_episode: api.run_plan(plan, policy, on_episode)
    )
    for message in result.warnings:
        err().print(f"[yellow]warning:[/] {escape(message)}", markup=True)
    if as_json:
        print_json(result.to_json())
    if not quiet:
        m = result.metrics
        success = "" if m["success_rate"] is None else f", success {m['success_rate']:.0%}"
        cut = sum(e.truncated for e in result.episodes)
        bound = plan.max_steps or DEFAULT_MAX_STEPS  # an episode is cut by the flag's bound, else by the cap
        cut = f", {cut} cut at {bound} steps (truncated)" if cut else ""
        where = f" -> {plan.out_path}" if plan.out_path else ""
        err().print(
            f"return {m['return_mean']:.2f} +/- {m['return_std']:.2f} over {_count(plan.episodes, 'episode')} "
            f"(length {m['length_mean']:.1f}{success}{cut}) in {result.wall_clock_seconds:.1f}s{where}"
        )
        if result.videos:
            err().print(f"videos: {len(result.videos)} in {Path(result.videos[0]).parent}")


# ----------------------------------------------------------------------------- export
@cli.command("export")
@click.argument("target")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["onnx", "torchscript"]),
    default=None,
    help="File format [from --out's suffix: .onnx, .ts/.pt; else onnx].",
)
@click.option(
    "--out",
    "out_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Exported file; its sidecar is FILE.metadata.json [beside the model: <model>.onnx|.ts; from a hub "
    "repo: in the current folder].",
)
@click.option(
    "--opset", type=int, default=None, help="ONNX opset [17]; 7-28, by exporter: see docs/export.md."
)
@click.option(
    "--exporter",
    type=click.Choice(["auto", "dynamo", "legacy"]),
    default="auto",
    show_default=True,
    help="ONNX exporter; auto tries dynamo, then legacy.",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0),
    default=None,
    help="Parity tolerance for continuous actions [1e-5]; discrete actions must match exactly.",
)
@opt.target_options
@opt.trust_pickle
@opt.trust_wrapper
@opt.env_factory
@opt.env_module
@opt.model_config
@opt.revision
@opt.allow_download
@click.option("--json", "as_json", is_flag=True, help="Print the sidecar on stdout.")
@opt.quiet
@click.pass_context
def export_cmd(
    ctx,
    target,
    fmt,
    out_path,
    opset,
    exporter,
    tolerance,
    exp_name,
    env_id,
    run_seed,
    trust_pickle,
    trust_wrappers,
    env_factory,
    env_module,
    model_config,
    revision,
    allow_download,
    as_json,
    quiet,
) -> None:
    """Export TARGET's policy as TorchScript or ONNX: raw observation in, env action out.

    TARGET is a run dir or model file, or a hub repo ORG/NAME when no local path has that name: its model
    card says what it holds, and its model comes from the HF cache, else (with --allow-download) the hub.
    The framework's observation normalizer and action head are baked in. The written file is loaded
    back and compared with the source policy; a file that does not act like it is not kept (exit 1).
    """
    from zoo import api

    result = api.export(
        target,
        out_path,
        format=fmt,
        opset=opset,
        exporter=exporter,
        tolerance=tolerance,
        exp_name=exp_name,
        env_id=env_id,
        run_seed=run_seed,
        trust_pickle=trust_pickle,
        model_config=model_config,
        trust_wrappers=trust_wrappers,
        env_factory=env_factory,
        env_module=env_module,
        revision=revision,
        allow_download=allow_download,
        notify=None if quiet else lambda line: err().print(escape(line)),
        registry=_registry(ctx),
    )
    for note in result.notes:
        err().print(f"[yellow]note:[/] {escape(note)}", markup=True)
    if as_json:
        print_json(result.meta)
    if not quiet:
        meta, parity = result.meta, result.meta["parity"]
        how = (
            f"opset {meta['opset']}, {meta['exporter']['name']} exporter"
            if meta["format"] == "onnx"
            else "traced"
        )
        match = (
            "exact match"
            if parity["exact"]
            else f"max |diff| {parity['max_abs_diff']:.2g} <= {parity['tolerance']:g}"
        )
        err().print(
            f"exported {escape(str(meta['checkpoint']))} -> [bold]{escape(str(result.path))}[/] "
            f"({meta['format']}, {how})",
            markup=True,
        )
        err().print(
            f"parity: {match} on {parity['samples']} observations (batch {', '.join(map(str, parity['batch_sizes']))}"
            + (f", {parity['steps']} steps with state" if parity["steps"] else "")
            + ")"
        )
        for note in meta["left_to_caller"]:
            err().print(f"[dim]left to the caller:[/] {escape(note)}", markup=True)
        err().print(f"sidecar: {escape(str(result.sidecar))}", markup=True)


# ----------------------------------------------------------------------------- enjoy
@cli.command("enjoy")
@click.option("--exp-name", required=True, help="Experiment name (registry), e.g. dqn.")
@click.option("--env-id", required=True, help="Env id, e.g. CartPole-v1.")
@click.option(
    "--run-seed",
    type=int,
    default=1,
    show_default=True,
    help="Training seed of the run / hub repo (CleanRL's repos end in -seed{N}).",
)
@opt.hf_entity
@click.option("--hf-repository", default=None, help="Full repo id; overrides the registry's pattern.")
@click.option("--revision", default="main", show_default=True, help="Hub branch, tag or commit.")
@click.option(
    "--runs-dir",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Local runs folder searched first.",
)
@opt.eval_options
@opt.trust_wrapper
@opt.env_factory
@opt.env_module
@opt.out("eval.json path [run dir for a local run, else ./eval.json].")
@opt.allow_download
@click.option("--json", "as_json", is_flag=True, help="Print eval.json on stdout.")
@opt.quiet
@click.pass_context
def enjoy_cmd(
    ctx,
    exp_name,
    env_id,
    run_seed,
    hf_entity,
    hf_repository,
    revision,
    runs_dir,
    seed,
    episodes,
    num_envs,
    device,
    deterministic,
    capture_video,
    max_steps,
    max_seconds,
    trust_wrappers,
    env_factory,
    env_module,
    out_path,
    allow_download,
    as_json,
    quiet,
) -> None:
    """Evaluate a published model: local run first, then the HF cache, then (with consent) the hub.

    Flags follow CleanRL's enjoy, with zoo's meaning of --seed: the evaluation seed (--run-seed picks
    the model). Downloads are verified against the hub's checksum before loading.
    """
    from zoo import api

    plan, source = api.enjoy(
        exp_name,
        env_id,
        run_seed=run_seed,
        seed=seed,
        hf_entity=hf_entity,
        hf_repository=hf_repository,
        revision=revision,
        runs_dir=runs_dir,
        allow_download=allow_download,
        registry=_registry(ctx),
        episodes=episodes,
        num_envs=num_envs,
        device=device,
        deterministic=deterministic,
        capture_video=capture_video,
        max_steps=max_steps,
        max_seconds=max_seconds,
        trust_wrappers=trust_wrappers,
        env_factory=env_factory,
        env_module=env_module,
        out=out_path or "default",
        notify=None if quiet else lambda line: err().print(escape(line)),
    )
    if not quiet:
        err().print(f"model: {source.describe()}")
    _evaluate(plan, quiet, as_json, seeds=f"run seed {run_seed}, eval seed {seed}")


# ----------------------------------------------------------------------------- doctor
@cli.command("doctor")
@click.option(
    "--framework",
    type=click.Choice(["sb3", "cleanrl", "skrl", "rsl_rl", "custom"]),
    default=None,
    help="Check this framework's setup (without it: what is installed).",
)
@click.option(
    "--policy",
    type=click.Path(path_type=Path),
    default=None,
    help="A model file or run dir: it exists, and its content loads (read without running it).",
)
@click.option(
    "--config",
    type=click.Path(path_type=Path),
    default=None,
    help="A YAML experiment config: fields, types and the guardrail (see docs/doctor.md).",
)
@click.option(
    "--launcher",
    type=click.Choice(["local", "hydra-local", "submitit", "slurm"]),
    default=None,
    help="How the run would launch [the config's, else local].",
)
@click.option(
    "--probe-env", is_flag=True, help="Create and reset the env once to read its spaces (never stepped)."
)
@click.option("--env-id", "--env", "env_id", default=None, help="The env id [the policy's or the config's].")
@opt.env_module
@click.option("--exp-name", default=None, help="Experiment name (registry) when the path does not say.")
@click.option(
    "--policy-class",
    default=None,
    metavar="MODULE:CLASS",
    help="--framework custom: your policy class; its module is found, not imported.",
)
@opt.seed
@click.option(
    "--episodes", "-n", type=click.IntRange(min=1), default=None, help="Eval episodes [registry default]."
)
@click.option(
    "--max-timesteps",
    type=click.IntRange(min=1),
    default=Guardrail.max_timesteps,
    show_default=True,
    help="Guardrail: env steps per run.",
)
@click.option(
    "--max-envs",
    type=click.IntRange(min=1),
    default=Guardrail.max_envs,
    show_default=True,
    help="Guardrail: parallel envs per run.",
)
@click.option(
    "--max-wall-minutes",
    type=click.FloatRange(min=0, min_open=True),
    default=Guardrail.max_wall_minutes,
    show_default=True,
    help="Guardrail: wall time per run.",
)
@click.option(
    "--max-gpus",
    type=click.IntRange(min=0),
    default=Guardrail.max_gpus,
    show_default=True,
    help="Guardrail: GPUs per run.",
)
@click.option(
    "--max-runs",
    type=click.IntRange(min=1),
    default=Guardrail.max_runs,
    show_default=True,
    help="Guardrail: runs a sweep may launch.",
)
@click.option(
    "--allow-launcher",
    "allow_launchers",
    multiple=True,
    type=click.Choice(["local", "hydra-local", "submitit", "slurm"]),
    help="Guardrail: also allow this launcher [local, hydra-local]. Repeatable.",
)
@click.option(
    "--handoff",
    "handoff_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write handoff.json and HANDOFF.md (a plan for a human to run) into this folder.",
)
@opt.as_json
@click.pass_context
def doctor_cmd(
    ctx,
    framework,
    policy,
    config,
    launcher,
    probe_env,
    env_id,
    env_module,
    exp_name,
    policy_class,
    seed,
    episodes,
    max_timesteps,
    max_envs,
    max_wall_minutes,
    max_gpus,
    max_runs,
    allow_launchers,
    handoff_dir,
    as_json,
) -> None:
    """Preflight: check packages, files, a config and spaces before anything is loaded or launched.

    Exit 0: every requested check passed (and the config is within the guardrail); 1: a requirement is
    missing or invalid; 2: usage error; 3: the config exceeds or evades the guardrail. Doctor installs,
    downloads, unpickles, trains and launches nothing, and writes nothing but --handoff. No exit code
    authorizes training.
    """
    from zoo import api

    guardrail = Guardrail(
        max_timesteps=max_timesteps,
        max_envs=max_envs,
        max_wall_minutes=max_wall_minutes,
        max_gpus=max_gpus,
        max_runs=max_runs,
        allowed_launchers=tuple(dict.fromkeys([*Guardrail.allowed_launchers, *allow_launchers])),
    )
    diagnosis = api.diagnose(
        framework=framework,
        policy=policy,
        config=config,
        launcher=launcher,
        probe_env=probe_env,
        env_id=env_id,
        env_module=env_module,
        exp_name=exp_name,
        seed=seed,
        episodes=episodes,
        policy_class=policy_class,
        guardrail=guardrail,
        handoff=handoff_dir,
        command=_given_options(ctx),
        registry=ctx.obj.get("registry"),
    )
    if as_json:
        print_json(diagnosis.to_json())
    elif framework is None:
        _render_environment(diagnosis.environment)
    else:
        _render_checks(diagnosis)
    if diagnosis.handoff and not as_json:
        err().print(f"handoff: {', '.join(diagnosis.handoff)} (a plan: nothing was run)")
    ctx.exit(diagnosis.exit_code)


def _given_options(ctx: click.Context) -> list[str]:
    """The options typed on the command line, as arguments (a handoff records the command that made it)."""
    from click.core import ParameterSource

    args: list[str] = []
    for param in ctx.command.params:
        if (
            not isinstance(param, click.Option)
            or ctx.get_parameter_source(param.name) != ParameterSource.COMMANDLINE
        ):
            continue
        name = max(param.opts, key=len)
        value = ctx.params[param.name]
        if param.is_flag:
            args.append(name)
        else:
            args += [item for v in (value if param.multiple else [value]) for item in (name, str(v))]
    return args


def _render_environment(env: dict) -> None:
    table = table_of("", "", title=f"zoo {env['zoo']}", title_justify="left", show_header=False)
    torch = env["torch"]
    for name, found in env["packages"].items():
        table.add_row(name, found or "[red]not installed[/]")
    table.add_row(
        "cuda",
        ("usable: " + ", ".join(torch["devices"]))
        if torch["cuda_available"]
        else f"not usable (torch build: {torch.get('cuda_build') or 'CPU'})",
    )
    for framework, packages in env["frameworks"].items():
        table.add_row(
            f"framework {framework}",
            ", ".join(f"{p} {v or 'not installed'}" for p, v in packages.items()) or "-",
        )
    for name, extra in env["extras"].items():
        table.add_row(
            f"extra {name}", "installed" if extra["installed"] else f"missing {', '.join(extra['missing'])}"
        )
    hub = env["hub"]
    table.add_row("hub endpoint", hub["endpoint"] + ("" if hub["endpoint_set"] else " (default)"))
    table.add_row("hub cache", hub["cache"])
    table.add_row("hub token", hub["token"])
    table.add_row("HF_HUB_OFFLINE", "on" if hub["offline"] else "off")
    hw = env["hardware"]
    table.add_row(
        "machine", f"{hw['platform']}, {hw['cpus']} CPUs, {hw['memory_gib']} GiB, Python {hw['python']}"
    )
    out().print(table)


def _render_checks(diagnosis) -> None:
    colours = {"ok": "green", "fail": "red", "over": "yellow", "not checked": "dim"}
    table = table_of(
        "check",
        "status",
        "finding",
        title=f"zoo doctor --framework {diagnosis.framework}",
        title_justify="left",
    )
    for check in diagnosis.checks:
        finding = escape(check.message) + (f"\n[dim]hint: {escape(check.hint)}[/]" if check.hint else "")
        table.add_row(escape(check.name), f"[{colours[check.status]}]{check.status}[/]", finding)
    out().print(table)
    out().print(f"{diagnosis.verdict} (exit {diagnosis.exit_code}); doctor authorizes no training")


# ----------------------------------------------------------------------------- push
@cli.command("push")
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--repo-id", default=None, help="ORG/NAME [registry pattern with --hf-entity].")
@opt.hf_entity
@opt.target_options
@click.option("--yes", is_flag=True, help="Upload (consent to the network). Without it: a dry run.")
@click.option("--revision", default=None, help="Branch to commit to [main].")
@click.option("--create-pr", is_flag=True, help="Open a pull request instead of committing to the branch.")
@click.option("--private", is_flag=True, help="Create the repo private.")
@click.option("--commit-message", default=None, help="Commit message.")
@opt.episodes
@opt.seed
@opt.capture_video
@opt.alias("--video", "--capture-video", "capture_video", is_flag=True, default=None)
@click.option("--allow-large", is_flag=True, help="Allow files over --max-file-mb.")
@click.option("--max-file-mb", type=float, default=100, show_default=True, help="Per-file size limit.")
@click.option(
    "--stage-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to stage [~/.cache/zoo/push/ORG/NAME].",
)
@click.option(
    "--strip-unsafe",
    is_flag=True,
    help="Stage copies without what the libraries' own loaders would run as code (SB3 pickles "
    "off the allowlist, YAML Python tags) instead of refusing the push.",
)
@opt.allow_download
@opt.as_json
@click.pass_context
def push_cmd(
    ctx,
    run,
    repo_id,
    hf_entity,
    exp_name,
    env_id,
    run_seed,
    yes,
    revision,
    create_pr,
    private,
    commit_message,
    episodes,
    seed,
    capture_video,
    allow_large,
    max_file_mb,
    stage_dir,
    strip_unsafe,
    allow_download,
    as_json,
) -> None:
    """Stage RUN with a generated model card (dry run), or upload it in one commit with --yes.

    RUN is a run dir, a folder holding one model file, or the model file itself (--env-id when zoo
    cannot tell its env). The run dir is not written to: an eval.json (--episodes, --seed) or a replay
    (--capture-video) the run lacks is made for the push and staged beside its files. The commit deletes
    what the repo's previous zoo release had and this one has not.
    """
    from zoo import api

    result = api.push(
        run,
        repo_id,
        hf_entity=hf_entity,
        dry_run=not yes,
        exp_name=exp_name,
        env_id=env_id,
        run_seed=run_seed,
        revision=revision,
        create_pr=create_pr,
        private=private,
        commit_message=commit_message,
        episodes=episodes,
        seed=seed,
        capture_video=capture_video,
        allow_large=allow_large,
        max_file_mb=max_file_mb,
        stage_dir=stage_dir,
        registry=_registry(ctx),
        notify=lambda line: err().print(escape(line)),
        strip_unsafe=strip_unsafe,
        allow_download=allow_download,
    )
    if as_json:
        print_json(result.to_json())
        return
    staging, comparison = result.staging, result.comparison
    change = {c["name"]: c["change"] for c in comparison["changes"]} if comparison else None
    columns = ("file", "size", "what") + (("change",) if comparison else ())
    table = table_of(*columns, title=f"staged for {result.repo_id} in {staging.folder}", title_justify="left")
    for f in staging.files:
        table.add_row(f.name, _size(f.size), f.what, *([change[f.name]] if comparison else []))
    for c in comparison["changes"] if comparison else []:
        if c["change"] == "deleted":
            table.add_row(c["name"], _size(c["size"]), "in the previous release, not in this one", "deleted")
    out().print(table)
    out().print(f"model card: {staging.card}")
    if comparison:
        out().print(_compared_line(comparison))
    if result.upload is None:
        if not comparison:
            out().print(
                f"not compared with {result.repo_id} on the hub: pass --allow-download to list what "
                "this push adds, replaces and deletes there"
            )
        out().print("dry run: nothing was uploaded; pass --yes to push")
    else:
        out().print(result.upload["summary"])


def _compared_line(comparison: dict) -> str:
    """``against ORG/NAME @ main (commit 1a2b3c4): 2 added, 1 replaced, ...``: what the push changes there,
    and how many of the repo's files it leaves as they are (a hand-written notes.md)."""
    from zoo.hub.release import counts

    where, counted = comparison["compared_with"], counts(comparison["changes"])
    if where["commit"] is None:
        return f"against {where['repo_id']}, a new repo: {counted}"
    head = f"against {where['repo_id']} @ {where['revision']} (commit {where['commit'][:7]}): {counted}"
    kept = len(where["kept"])
    if not kept:
        return head
    why = "not zoo's" if where["previous_release"] else "no earlier zoo release there lists its files"
    return f"{head}; {_count(kept, 'other file')} {'stays' if kept == 1 else 'stay'} ({why})"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


# ----------------------------------------------------------------------------- watch
@cli.command("watch")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--every",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="K",
    help="Evaluate every K-th new checkpoint (the newest is always evaluated at an --idle stop).",
)
@opt.episodes
@opt.num_envs
@opt.seed
@click.option(
    "--until",
    type=click.IntRange(min=0),
    default=None,
    metavar="ITER",
    help="Stop after evaluating a checkpoint at this step or iteration, or later.",
)
@click.option(
    "--idle",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Stop when no checkpoint appeared or changed for this long [never].",
)
@click.option(
    "--poll",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="Look at the run dir this often.",
)
@click.option(
    "--device",
    type=click.Choice(["cpu", "cuda", "auto"]),
    default="cpu",
    show_default=True,
    help="Where policies run (the trainer keeps the GPU unless you say otherwise).",
)
@click.option(
    "--nice",
    type=click.IntRange(0, 19),
    default=10,
    show_default=True,
    help="Add this to the watcher's niceness: the trainer keeps >= 90% of a shared core at 10.",
)
@click.option(
    "--sched-idle",
    is_flag=True,
    help="Run only when a core would otherwise idle (Linux SCHED_IDLE; --nice is then moot): the "
    "trainer is not slowed, evaluations may lag.",
)
@click.option(
    "--max-cpu",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    metavar="N",
    help="Run on at most N cores, with N torch threads (0: no bound).",
)
@opt.bounds
@opt.exp_name
@opt.env_id
@click.option("--json", "as_json", is_flag=True, help="Print each evals.jsonl line on stdout when written.")
@opt.quiet
@click.pass_context
def watch_cmd(
    ctx,
    run_dir,
    every,
    episodes,
    num_envs,
    seed,
    until,
    idle,
    poll,
    device,
    nice,
    sched_idle,
    max_cpu,
    max_steps,
    max_seconds,
    exp_name,
    env_id,
    as_json,
    quiet,
) -> None:
    """Follow the training run saving checkpoints into RUN_DIR: evaluate every K-th new one, keep the best.

    Each evaluation (deterministic, seeded) is appended to RUN_DIR/evals.jsonl; a checkpoint that beats the
    best return so far is copied to RUN_DIR/best_model.* with best_model_meta.json. Restarted, it goes on
    where it stopped. Ctrl-C stops it with every file consistent (exit 130). See docs/watch.md.
    """
    from zoo import api
    from zoo.strict_json import dumps

    evaluations = []

    def on_eval(line: dict) -> None:
        evaluations.append(line)
        if as_json:
            click.echo(dumps(line, what="the --json output"))
        if not quiet or line["status"] != "ok":
            err().print(_watch_line(line), markup=True)

    def notify(message: str) -> None:
        if message.startswith("warning:"):
            err().print(f"[yellow]warning:[/]{escape(message.removeprefix('warning:'))}", markup=True)
        elif not quiet:
            err().print(f"[dim]{escape(message)}[/]", markup=True)

    try:
        result = api.watch(
            run_dir,
            every=every,
            episodes=episodes,
            num_envs=num_envs,
            seed=seed,
            until=until,
            idle=idle,
            poll=poll,
            device=device,
            nice=nice,
            sched_idle=sched_idle,
            max_cpu=max_cpu or None,
            max_steps=max_steps,
            max_seconds=max_seconds,
            exp_name=exp_name,
            env_id=env_id,
            registry=_registry(ctx),
            on_eval=on_eval,
            notify=notify,
        )
    except KeyboardInterrupt:
        err().print(
            f"interrupted: {_count(len(evaluations), 'evaluation')} recorded this time; evals.jsonl and "
            "the best model are consistent"
        )
        sys.exit(130)
    if not quiet:
        best = result.best
        kept = (
            f"; best {best['return_mean']:.2f} at step {best['step']} -> {run_dir / best['model']}"
            if best
            else ""
        )
        why = (
            f"a checkpoint at step {until} or later" if result.stopped == "until" else f"idle for {idle:g} s"
        )
        err().print(f"stopped ({why}): {_count(len(result.evaluations), 'evaluation')}{escape(kept)}")


def _watch_line(line: dict) -> str:
    """One evaluation as ``zoo watch`` prints it (rich markup)."""
    step = f"step {line['step']}" if line["step"] is not None else "step ?"
    where = escape(line["checkpoint"] or "")
    if line["status"] != "ok":
        hint = f"\n  [dim]hint: {escape(line['hint'])}[/]" if line.get("hint") else ""
        tries = f"{line['attempts']} tr{'ies' if line['attempts'] != 1 else 'y'}"
        where = "" if Path(line["checkpoint"] or "").name in line["error"] else f"  [dim]{where}[/]"
        return f"{step}  [red]failed[/] after {tries}: {escape(line['error'])}{where}{hint}"
    m = line["metrics"]
    success = "" if m["success_rate"] is None else f", success {m['success_rate']:.0%}"
    best = "  [bold green]new best[/]" if line["new_best"] else ""
    note = f"  [yellow]{escape(line['note'])}[/]" if line.get("note") else ""
    cut = f" ({line['truncated']} truncated)" if line.get("truncated") else ""
    return (
        f"{step}  return {m['return_mean']:.2f} +/- {m['return_std']:.2f}{success}  "
        f"[dim]{line['episodes']} episodes{cut} in {line['wall_clock_seconds']:.1f}s  {where}[/]{best}{note}"
    )


# ----------------------------------------------------------------------------- hub serve
class _ByteSize(click.ParamType):
    """A size in bytes: ``1048576``, ``500MB`` (powers of 1000), ``50GiB`` or ``50G`` (powers of 1024)."""

    name = "size"
    _UNITS = {
        "": 1,
        "b": 1,
        "k": 1 << 10,
        "kib": 1 << 10,
        "m": 1 << 20,
        "mib": 1 << 20,
        "g": 1 << 30,
        "gib": 1 << 30,
        "t": 1 << 40,
        "tib": 1 << 40,
        "kb": 10**3,
        "mb": 10**6,
        "gb": 10**9,
        "tb": 10**12,
    }

    def convert(self, value, param, ctx) -> int:
        if isinstance(value, int):
            return value
        import re
        from fractions import Fraction

        match = re.fullmatch(r"\s*(\d{1,20}(?:\.\d{1,9})?)\s*([A-Za-z]*)\s*", str(value))
        unit = self._UNITS.get(match.group(2).lower()) if match else None
        size = int(Fraction(match.group(1)) * unit) if match and unit else 0
        if size < 1:
            self.fail(
                f"{value!r} is not a size: give bytes, or a number with KiB, MiB, GiB, TiB (or KB, MB, "
                "GB, TB)",
                param,
                ctx,
            )
        return size


@cli.group("hub")
def hub_cmd() -> None:
    """A Hugging Face Hub compatible server for air-gapped teams."""


@hub_cmd.command("serve")
@click.option(
    "--root", type=click.Path(file_okay=False, path_type=Path), required=True, help="Storage folder."
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Tokens, one per line: TOKEN USER [ORG,ORG...]. Without it anyone may write.",
)
@click.option(
    "--reevaluate",
    is_flag=True,
    help="Evaluate each new main head with zoo eval in a bounded background worker (one at a time, in "
    "a subprocess, no pickle trusted), so the leaderboard page shows server-verified scores.",
)
@click.option(
    "--reevaluate-timeout",
    type=click.FloatRange(min=1),
    default=600,
    show_default=True,
    metavar="SECONDS",
    help="With --reevaluate: stop an evaluation after this long (recorded as failed).",
)
@click.option(
    "--public-url",
    default=None,
    metavar="URL",
    help="Where clients reach the server, e.g. https://hub.lab.example behind a TLS proxy: the URLs it "
    "hands out (LFS uploads) are built from it [from the request's Host header, as http://].",
)
@click.option(
    "--max-lfs-size",
    type=_ByteSize(),
    default="50GiB",
    show_default=True,
    metavar="SIZE",
    help="The largest file an LFS upload may announce (e.g. 500MiB, 200GiB); larger ones are refused "
    "before any byte is sent.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    help="Log to stderr: one line per request, commit and re-evaluation event at "
    "info; failures only at warning.",
)
def hub_serve_cmd(
    root, host, port, token_file, reevaluate, reevaluate_timeout, public_url, max_lfs_size, log_level
) -> None:
    """Serve the Hub HTTP protocol from ROOT: point HF_ENDPOINT at it, with HF_HUB_DISABLE_XET=1."""
    from zoo.hub_server.http_limits import Limits
    from zoo.hub_server.logs import log_to_stderr
    from zoo.hub_server.server import HubServer

    log_to_stderr(log_level)
    server = HubServer(
        root,
        host=host,
        port=port,
        token_file=token_file,
        reevaluate=reevaluate,
        reevaluate_timeout=reevaluate_timeout,
        public_url=public_url,
        limits=Limits(lfs_max_size=max_lfs_size),
    )
    removed = server.storage.removed
    if removed.files:
        err().print(
            f"removed {removed.files} partial upload(s), {_size(removed.bytes)}, that a killed server left "
            f"in {root / 'tmp'}"
        )
    if server.open_access:
        err().print(
            "[yellow]warning:[/] no --token-file: anyone who can reach this port may create and write repos",
            markup=True,
        )
    server.bind()
    endpoint = server.public_url or server.url
    via = f" for {endpoint}" if server.public_url else ""
    err().print(f"serving {root} at {server.url}{via}  (export HF_ENDPOINT={endpoint} HF_HUB_DISABLE_XET=1)")
    if reevaluate:
        err().print(
            f"re-evaluating new pushes with zoo eval (timeout {reevaluate_timeout:g} s); outcomes in "
            f"{root / 'evaluations.sqlite'}"
        )
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C or SIGTERM: requests in flight finish first
        server.serve_forever()
    err().print("stopped")


_hub_root = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The storage folder of zoo hub serve.",
)


@hub_cmd.command("gc")
@_hub_root
@click.option(
    "--grace",
    "grace",
    type=click.FloatRange(min=0),
    default=3600,
    show_default=True,
    metavar="SECONDS",
    help="Keep unreferenced blobs younger than this (uploads whose commit is on its way). 0 only when "
    "no server runs.",
)
@click.option("--dry-run", is_flag=True, help="Count what would be removed; remove nothing.")
@opt.as_json
def hub_gc_cmd(root, grace, dry_run, as_json) -> None:
    """Remove blobs that no commit of any repo references, and dead uploads; safe while servers run."""
    from zoo.hub_server.maintenance import collect_garbage

    report = collect_garbage(root, grace_seconds=grace, dry_run=dry_run)
    if as_json:
        print_json(report.to_json())
        return
    verb = "would remove" if dry_run else "removed"
    out().print(
        f"{verb} {_count(report.removed, 'unreferenced blob')} ({_size(report.removed_bytes)}), "
        f"{_count(report.uploads_removed, 'dead upload')} ({_size(report.uploads_bytes)}) and "
        f"{_count(report.parts_removed, 'abandoned multipart upload')}; kept "
        f"{report.referenced} referenced and {report.kept_fresh} younger than {grace:g} s, of "
        f"{_count(report.blobs, 'blob')} in {_count(report.repos, 'repo')}",
        soft_wrap=True,
    )


@hub_cmd.command("verify")
@_hub_root
@opt.as_json
@click.pass_context
def hub_verify_cmd(ctx, root, as_json) -> None:
    """Recheck every blob's sha256 and size, and that every blob and commit the repos name is there.

    Exit 0: all sound; 1: something is corrupt or missing (one line each). Nothing is changed.
    """
    from zoo.hub_server.maintenance import verify_blobs

    report = verify_blobs(root)
    if as_json:
        print_json(report.to_json())
    else:
        for problem in report.problems:
            out().print(escape(problem.message), soft_wrap=True)
        kinds = ("corrupt", "missing", "unreadable", "missing-commit")
        found = ", ".join(f"{report.count(k)} {k.replace('-', ' ')}" for k in kinds if report.count(k))
        orphans = (
            f"{_count(report.orphans, 'unreferenced blob')} ({_size(report.orphan_bytes)}; zoo hub gc "
            "removes them)"
            if report.orphans
            else "no unreferenced blobs"
        )
        out().print(
            f"verified {_count(report.blobs, 'blob')} ({_size(report.bytes)}) of "
            f"{_count(report.repos, 'repo')}, {_count(report.commits, 'commit')}: "
            f"{found or 'all sound'}; {orphans}",
            soft_wrap=True,
        )
        if not report.ok:
            err().print(
                "[dim]hint:[/] restore the named files from a backup (docs/hub-serve.md#backups); "
                "zoo hub verify repairs nothing",
                markup=True,
            )
    ctx.exit(0 if report.ok else EXIT_PROBLEM)


@contextlib.contextmanager
def _progress(label: str, quiet: bool = False):
    """``update(done, total)`` drawing a rich progress bar on a terminal; None when piped or quiet."""
    console = err()
    if quiet or not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = None

        def update(done: int, total: int) -> None:
            nonlocal task
            if task is None:
                task = progress.add_task(label, total=total)
            progress.update(task, completed=done)

        yield update


def _run_with_progress(quiet: bool, total: int, work):
    """``work(on_episode)`` with a progress bar of ``total`` episodes on a terminal."""
    with _progress("episodes", quiet) as update:
        return work(None if update is None else lambda done: update(done, total))


def main() -> None:
    """Console-script entry point.

    After ``zoo check`` the process ends with ``os._exit`` once its output is flushed: tearing down an
    interpreter that loaded torch takes about a third of a second, which a check of a big tree would pay
    on every call. Nothing is pending then: every file zoo writes is written atomically and closed, the
    worker pools are shut down, and the verdict memo is written by a detached process. (Tests call
    ``cli`` itself, so they never take this path.)
    """
    global _IN_MAIN
    _IN_MAIN = True
    try:
        cli(prog_name="zoo")
    except SystemExit as exc:
        if not _QUICK_EXIT:
            raise
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exc.code if isinstance(exc.code, int) else 1)
