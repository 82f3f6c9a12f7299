"""The ``zoo`` command's rendering: its consoles (results on stdout, everything else on stderr), and every
table and summary a command prints. A command's one-line notes stay beside it.

Every command module of :mod:`zoo.cli` renders through it, so all of them look the same.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import click


def _console(stderr: bool):
    """Rich console; when piped (no terminal) use a wide page instead of rich's 80 columns. rich is
    imported here, not at the top: ``zoo --help`` then starts without it."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or os.environ.get("COLUMNS") else 160
    return Console(stderr=stderr, highlight=False, width=width, soft_wrap=stderr)


def out():
    """Console for results (stdout), built per call so that COLUMNS and redirections are honoured."""
    return _console(stderr=False)


def err():
    """Console for progress, summaries, warnings and errors (stderr)."""
    return _console(stderr=True)


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def table_of(*columns: str, **settings):
    from rich.table import Table

    table = Table(**settings)
    for col in columns:
        table.add_column(col, overflow="fold")
    return table


def print_json(data) -> None:
    """``--json`` output: strict JSON (:func:`zoo.strict_json.dumps`)."""
    from zoo.strict_json import dumps

    click.echo(dumps(data, what="the --json output", indent=2))


def row_names(run_paths: list, paths: list[Path]) -> list[str]:
    """Each run's path relative to the folder the given paths share (a leaf name alone can repeat)."""
    roots = [os.path.abspath(p) for p in paths]
    base = os.path.commonpath(roots) if roots else os.getcwd()
    runs = [os.path.abspath(p) for p in run_paths]
    if base in runs or os.path.isfile(base):
        base = os.path.dirname(base)
    names = [os.path.relpath(run, base) for run in runs]
    return [os.path.basename(run) if n == "." else n for n, run in zip(names, runs, strict=True)]


@contextlib.contextmanager
def progress(label: str, quiet: bool = False):
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


def run_with_progress(quiet: bool, total: int, work):
    """``work(on_episode)`` with a progress bar of ``total`` episodes on a terminal."""
    with progress("episodes", quiet) as update:
        return work(None if update is None else lambda done: update(done, total))


_CHECK_STYLE = {"ok": "green", "warning": "yellow", "error": "red"}


def _train_cell(train: dict | None) -> str:
    """The last training return, or "-"; a non-finite one is kept as the report spells it ("nan")."""
    if not train:
        return "-"
    return train["value"] if isinstance(train["value"], str) else f"{train['value']:.1f}"


def render_check(reports, quiet: bool, paths: list[Path]) -> None:
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
            f"[{_CHECK_STYLE[r.status]}]{r.status}[/]",
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
    for framework in sorted({r.run.framework for r, _ in shown}):
        for hint in network_hints(framework):
            out().print(f"[dim]hint: {escape(hint)}[/]")


def network_hints(framework: str) -> list[str]:
    """What each of the framework's training flags that reach the network does
    (:attr:`~zoo.frameworks.Adapter.network_flags`), said where a user meets its runs: each needs its own consent,
    and zoo passes none of them."""
    from zoo.frameworks import get_adapter

    adapter = get_adapter(framework)
    name = adapter.hub.display_name
    owner = f"{name}'" if name.endswith("s") else f"{name}'s"  # rl_games' --track, CleanRL's --track
    return [
        f"{owner} {flag} sends {f.sends} (network, {f.credential}): its own consent; zoo never turns it on"
        for flag, f in adapter.network_flags.items()
    ]


def _best_eval(watch: dict) -> str:
    """zoo watch's best model in a check row: its score, step and how many evaluations it beat."""
    best, count = watch["best"], watch["evaluations"]
    if best is None:
        return f"- ({count} eval{'s' if count != 1 else ''})"
    return f"{best['return_mean']:.1f} at step {best['step']} ({count} eval{'s' if count != 1 else ''})"


def render_leaderboard(board) -> None:
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
        f"{count(len(board.rows), 'row')} from {count(board.runs_found, 'run')}"
        + (f"; {len(board.problems)} not ranked (stderr)" if board.problems else "")
    )


def render_environment(env: dict) -> None:
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


def render_checks(diagnosis) -> None:
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


def render_push(result) -> None:
    """The staged files (and what each changes on the hub, when compared), the card, and what happened."""
    staging, comparison = result.staging, result.comparison
    change = {c["name"]: c["change"] for c in comparison["changes"]} if comparison else None
    columns = ("file", "size", "what") + (("change",) if comparison else ())
    table = table_of(*columns, title=f"staged for {result.repo_id} in {staging.folder}", title_justify="left")
    for f in staging.files:
        table.add_row(f.name, size(f.size), f.what, *([change[f.name]] if comparison else []))
    for c in comparison["changes"] if comparison else []:
        if c["change"] == "deleted":
            table.add_row(c["name"], size(c["size"]), "in the previous release, not in this one", "deleted")
    out().print(table)
    out().print(f"model card: {staging.card}")
    if comparison:
        out().print(compared_line(comparison))
    if result.upload is None:
        if not comparison:
            out().print(
                f"not compared with {result.repo_id} on the hub: pass --allow-download to list what "
                "this push adds, replaces and deletes there"
            )
        out().print("dry run: nothing was uploaded; pass --yes to push")
    else:
        out().print(result.upload["summary"])


def compared_line(comparison: dict) -> str:
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
    return f"{head}; {count(kept, 'other file')} {'stays' if kept == 1 else 'stay'} ({why})"


def count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def watch_line(line: dict) -> str:
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


_SWEEP_STYLE = {"evaluated": "green", "skipped": "cyan", "failed": "red"}


def render_sweep(result, target: Path, quiet: bool) -> None:
    shown = [o for o in result.outcomes if not (quiet and o.status != "failed")]
    names = row_names([o.run_dir for o in shown], [target])
    table = table_of("status", "run", "experiment", "env", "return", "episodes", "time", "note")
    for outcome, name in zip(shown, names, strict=True):
        score = (
            "-" if outcome.return_mean is None else f"{outcome.return_mean:.2f} +/- {outcome.return_std:.2f}"
        )
        table.add_row(
            f"[{_SWEEP_STYLE[outcome.status]}]{outcome.status}[/]",
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


def sweep_summary(result) -> str:
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
