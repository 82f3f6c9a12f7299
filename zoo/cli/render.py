"""The ``zoo`` command's consoles and shared rendering: results on stdout, everything else on stderr.

Every command module of :mod:`zoo.cli` renders through it, so all of them look the same.
"""

from __future__ import annotations

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
