"""The ``zoo`` command: parse, call the library, render. No logic of its own.

Expected failures are :class:`~zoo.errors.ZooError`: one ``error:`` line, a hint,
and the error's exit code (1 problem, 2 usage, 3 refused), never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import warnings
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from zoo import __version__
from zoo.errors import EXIT_PROBLEM, EXIT_USAGE, ZooError

_QUICK_EXIT = False  # set by a command whose process has nothing left to do but tear down imports
_IN_MAIN = False  # the console script is running (tests call ``cli`` itself): zoo owns the process


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
    "--no-cache",
    is_flag=True,
    help="Read every run again (verdicts are remembered while a run's files are unchanged).",
)
@click.pass_context
def check_cmd(ctx, paths, exp_name, env_id, seed, as_json, quiet, no_cache) -> None:
    """Find runs under PATHS and say which hold a usable model.

    PATH may be a runs folder, one run dir or one model file. Nothing is executed:
    pickles are scanned, not loaded. Exit 0 when every run is ok or only warned, 1 on any error.
    """
    from zoo.artifacts.runs import RunFilter
    from zoo.check import check_paths

    with _progress("reading runs") as update:
        reports = check_paths(list(paths), _registry(ctx), RunFilter(exp_name, env_id, seed),
                              use_cache=not no_cache, on_progress=update, detached_save=_IN_MAIN)  # fmt: skip
    if as_json:  # one report per line: still one JSON array, written by json's C encoder
        click.echo("[\n" + ",\n".join(r.json_text() for r in reports) + "\n]")
    else:
        _render_check(reports, quiet)
    global _QUICK_EXIT
    _QUICK_EXIT = True
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
        reason = escape(r.reason) if not r.hint else f"{escape(r.reason)}\n[dim]{escape(r.hint)}[/]"
        table.add_row(
            f"[{_STYLE[r.status]}]{r.status}[/]", run.run_name or str(run.path), model,
            f"{train['value']:.1f}" if train else "-", reason,
        )  # fmt: skip
    if shown:
        out().print(table)
    counts = {s: sum(r.status == s for r in reports) for s in ("ok", "warning", "error")}
    out().print(
        f"{len(reports)} run{'s' if len(reports) != 1 else ''}: {counts['ok']} ok, {counts['warning']} warning, "
        f"{counts['error']} error"
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
@click.option("--model-config", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="YAML with the policy architecture when the run has none (skrl: params/agent.yaml format).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print eval.json on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary.")
@click.pass_context
def eval_cmd(ctx, target, exp_name, env_id, seed, run_seed, episodes, num_envs, device, deterministic,
             capture_video, trust_pickle, out_path, model_config, as_json, quiet) -> None:  # fmt: skip
    """Evaluate TARGET (a run dir, model file, or a policy.onnx/policy.ts from zoo export) and write eval.json.

    Rollouts are vectorized, seeded and deterministic: the same seed gives the same result, bit for bit.
    """
    from zoo.targets import load_plan_policy, plan_eval, resolve_target

    target_ = resolve_target(target, _registry(ctx), exp_name=exp_name, env_id=env_id, seed=run_seed)
    plan = plan_eval(target_, episodes=episodes, num_envs=num_envs, seed=seed, deterministic=deterministic,
                     device=device, out_path=out_path, capture_video=capture_video, trust_pickle=trust_pickle,
                     model_config=model_config)  # fmt: skip
    _announce_and_run(plan, load_plan_policy(plan), quiet, as_json)


def _announce_and_run(plan, policy, quiet: bool, as_json: bool) -> None:
    """Say what will run, roll out with a progress bar, surface video warnings, summarise."""
    from zoo.targets import run_eval

    target = plan.target
    if not quiet:
        err().print(f"evaluating [bold]{target.model_file}[/] ({target.entry.name}, {target.env_id}): "
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


# ----------------------------------------------------------------------------- export
@cli.command("export")
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["onnx", "torchscript"]), default=None,
              help="File format [from --out's suffix: .onnx, .ts/.pt; else onnx].")  # fmt: skip
@click.option("--out", "out_path", type=click.Path(path_type=Path), default=None,
              help="Exported file; its sidecar is FILE.metadata.json [beside the model: <model>.onnx|.ts].")  # fmt: skip
@click.option("--opset", type=click.IntRange(min=7), default=17, show_default=True, help="ONNX opset.")
@click.option("--exporter", type=click.Choice(["auto", "dynamo", "legacy"]), default="auto", show_default=True,
              help="ONNX exporter; auto tries dynamo, then legacy.")  # fmt: skip
@click.option("--tolerance", type=click.FloatRange(min=0), default=None,
              help="Parity tolerance for continuous actions [1e-5]; discrete actions must match exactly.")  # fmt: skip
@click.option("--exp-name", default=None, help="Experiment name when the path does not say.")
@click.option("--env-id", default=None, help="Env id when the path does not say.")
@click.option(
    "--run-seed", type=int, default=None, help="Pick the run with this training seed in a runs folder."
)
@click.option(
    "--trust-pickle", is_flag=True, help="Allow full unpickling of a file you trust. Never for downloads."
)
@click.option("--model-config", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="YAML with the policy architecture when the run has none (skrl).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the sidecar on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="Only errors.")
@click.pass_context
def export_cmd(ctx, target, fmt, out_path, opset, exporter, tolerance, exp_name, env_id, run_seed, trust_pickle,
               model_config, as_json, quiet) -> None:  # fmt: skip
    """Export TARGET's policy as TorchScript or ONNX: raw observation in, env action out.

    The framework's observation normalizer and action head are baked in. The written file is loaded
    back and compared with the source policy; a file that does not act like it is not kept (exit 1).
    """
    from zoo.export import export_target

    result = export_target(target, _registry(ctx), fmt=fmt, out=out_path, opset=opset, exporter=exporter,
                           tolerance=tolerance, exp_name=exp_name, env_id=env_id, run_seed=run_seed,
                           trust_pickle=trust_pickle, model_config=model_config)  # fmt: skip
    for note in result.notes:
        err().print(f"[yellow]note:[/] {escape(note)}", markup=True)
    if as_json:
        _print_json(result.meta)
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
        err().print(f"exported {escape(str(meta['checkpoint']))} -> [bold]{escape(str(result.path))}[/] "
                    f"({meta['format']}, {how})", markup=True)  # fmt: skip
        err().print(f"parity: {match} on {parity['samples']} observations (batch {', '.join(map(str, parity['batch_sizes']))}"
                    + (f", {parity['steps']} steps with state" if parity["steps"] else "") + ")")  # fmt: skip
        for note in meta["left_to_caller"]:
            err().print(f"[dim]left to the caller:[/] {escape(note)}", markup=True)
        err().print(f"sidecar: {escape(str(result.sidecar))}", markup=True)


# ----------------------------------------------------------------------------- enjoy
@cli.command("enjoy")
@click.option("--exp-name", required=True, help="Experiment name (registry), e.g. dqn.")
@click.option("--env-id", required=True, help="Env id, e.g. CartPole-v1.")
@click.option("--seed", type=int, default=1, show_default=True, help="Training seed of the run / hub repo.")
@click.option("--hf-entity", default=None, help="Hub user or org of the repo [registry hub.org; cleanrl].")
@click.option("--hf-repository", default=None, help="Full repo id; overrides the registry's pattern.")
@click.option("--revision", default="main", show_default=True, help="Hub branch, tag or commit.")
@click.option("--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
              help="Local runs folder searched first.")  # fmt: skip
@click.option(
    "--eval-episodes", type=click.IntRange(min=1), default=None, help="Episodes [registry default]."
)
@click.option("--num-envs", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--deterministic/--stochastic", default=None, help="Eval mode [registry default].")
@click.option("--capture-video", is_flag=True, help="Record env 0's episodes to videos/.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="eval.json path [run dir for a local run, else ./eval.json].")  # fmt: skip
@click.option(
    "--allow-download", is_flag=True, help="Consent to download from the hub (else: local and cache only)."
)
@click.option("--json", "as_json", is_flag=True, help="Print eval.json on stdout.")
@click.option("--quiet", "-q", is_flag=True)
@click.pass_context
def enjoy_cmd(ctx, exp_name, env_id, seed, hf_entity, hf_repository, revision, runs_dir, eval_episodes, num_envs,
              deterministic, capture_video, device, out_path, allow_download, as_json, quiet) -> None:  # fmt: skip
    """Evaluate a published model: local run first, then the HF cache, then (with consent) the hub.

    Flags follow CleanRL's enjoy. Downloads are verified against the hub's checksum before loading.
    """
    from zoo.hub.fetch import enjoy_target
    from zoo.targets import load_plan_policy, plan_eval

    registry = _registry(ctx)
    target, source = enjoy_target(registry, exp_name=exp_name, env_id=env_id, seed=seed, hf_entity=hf_entity,
                                  hf_repository=hf_repository, revision=revision, runs_dir=runs_dir,
                                  allow_download=allow_download)  # fmt: skip
    if not quiet:
        err().print(f"model: {source.describe()}")
    out_path = out_path or (None if source.kind == "local-run" else Path("eval.json"))
    plan = plan_eval(target, episodes=eval_episodes, num_envs=num_envs, seed=0, deterministic=deterministic,
                     device=device, out_path=out_path, capture_video=capture_video, trust_pickle=False)  # fmt: skip
    plan.source = source.to_json()
    _announce_and_run(plan, load_plan_policy(plan), quiet, as_json)


# ----------------------------------------------------------------------------- push
@cli.command("push")
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--repo-id", default=None, help="ORG/NAME [registry pattern with --hf-entity].")
@click.option(
    "--hf-entity", default=None, envvar="ZOO_HF_ENTITY", help="Hub user or org for the registry pattern."
)
@click.option("--exp-name", default=None, help="Experiment name when the run name does not say.")
@click.option("--env-id", default=None, help="Env id when the run name does not say.")
@click.option("--yes", is_flag=True, help="Upload (consent to the network). Without it: a dry run.")
@click.option("--revision", default=None, help="Branch to commit to [main].")
@click.option("--create-pr", is_flag=True, help="Open a pull request instead of committing to the branch.")
@click.option("--private", is_flag=True, help="Create the repo private.")
@click.option("--commit-message", default=None, help="Commit message.")
@click.option(
    "--eval-episodes", type=click.IntRange(min=1), default=None, help="Episodes if eval.json is missing."
)
@click.option("--video", is_flag=True, help="Record a replay video if the run has none.")
@click.option("--allow-large", is_flag=True, help="Allow files over --max-file-mb.")
@click.option("--max-file-mb", type=float, default=100, show_default=True, help="Per-file size limit.")
@click.option("--stage-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to stage [~/.cache/zoo/push/ORG/NAME].")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary on stdout.")
@click.pass_context
def push_cmd(ctx, run, repo_id, hf_entity, exp_name, env_id, yes, revision, create_pr, private, commit_message,
             eval_episodes, video, allow_large, max_file_mb, stage_dir, as_json) -> None:  # fmt: skip
    """Stage RUN with a generated model card (dry run), or upload it in one commit with --yes."""
    from zoo.artifacts.cache import cache_dir
    from zoo.hub.consent import require_network
    from zoo.hub.push import prepare, upload
    from zoo.targets import resolve_target

    target = resolve_target(run, _registry(ctx), exp_name=exp_name, env_id=env_id)
    if repo_id is None:
        if not hf_entity:
            raise ZooError("no repo id: pass --repo-id ORG/NAME, or --hf-entity ORG for the registry pattern",
                           exit_code=EXIT_USAGE)  # fmt: skip
        repo_id = target.entry.hub_repo(hf_entity=hf_entity, env_id=target.env_id, seed=target.run.seed or 0)
    folder = stage_dir or cache_dir() / "push" / repo_id
    staging = prepare(target, repo_id=repo_id, folder=folder, eval_episodes=eval_episodes, video=video,
                      max_mb=max_file_mb, allow_large=allow_large, notify=lambda line: err().print(line))  # fmt: skip
    summary = {"repo_id": repo_id, "staged": str(staging.folder), "card": str(staging.card),
               "files": [{"name": f.name, "size": f.size, "what": f.what} for f in staging.files]}  # fmt: skip
    if not as_json:
        table = Table(title=f"staged for {repo_id} in {staging.folder}", title_justify="left")
        for col in ("file", "size", "what"):
            table.add_column(col)
        for f in staging.files:
            table.add_row(f.name, _size(f.size), f.what)
        out().print(table)
        out().print(f"model card: {staging.card}")
    if yes:
        require_network(f"push {len(staging.files)} files to {repo_id}", "--yes", consented=True)
        message = commit_message or f"zoo push: {target.entry.name} on {target.env_id}"
        summary.update(
            upload(staging, private=private, revision=revision, create_pr=create_pr, message=message)
        )
        if not as_json:
            out().print(f"pushed: {summary['pr_url'] or summary['commit_url']}")
    elif not as_json:
        out().print("dry run: nothing was uploaded; pass --yes to push")
    if as_json:
        _print_json(summary)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


# ----------------------------------------------------------------------------- hub serve
@cli.group("hub")
def hub_cmd() -> None:
    """A Hugging Face Hub compatible server for air-gapped teams."""


@hub_cmd.command("serve")
@click.option(
    "--root", type=click.Path(file_okay=False, path_type=Path), required=True, help="Storage folder."
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Tokens, one per line: TOKEN USER [ORG,ORG...]. Without it anyone may write.")  # fmt: skip
def hub_serve_cmd(root, host, port, token_file) -> None:
    """Serve the Hub HTTP protocol from ROOT: point HF_ENDPOINT at it, with HF_HUB_DISABLE_XET=1."""
    from zoo.hub.server import HubServer

    server = HubServer(root, host=host, port=port, token_file=token_file)
    removed = server.storage.removed
    if removed.files:
        err().print(f"removed {removed.files} partial upload(s), {_size(removed.bytes)}, that a killed server left "
                    f"in {root / 'tmp'}")  # fmt: skip
    if server.open_access:
        err().print("[yellow]warning:[/] no --token-file: anyone who can reach this port may create and write repos",
                    markup=True)  # fmt: skip
    server.bind()
    err().print(f"serving {root} at {server.url}  (export HF_ENDPOINT={server.url} HF_HUB_DISABLE_XET=1)")
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C or SIGTERM: requests in flight finish first
        server.serve_forever()
    err().print("stopped")


@contextlib.contextmanager
def _progress(label: str, quiet: bool = False):
    """``update(done, total)`` drawing a rich progress bar on a terminal; None when piped or quiet."""
    console = err()
    if quiet or not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:  # fmt: skip
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
