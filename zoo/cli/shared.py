"""What the command modules share beyond their options and rendering: the registry that ``--registry`` names,
and the console script's hold on the process."""

from __future__ import annotations

import click


class Process:
    """The console script is running (:func:`zoo.cli.main`; tests call ``cli`` itself): zoo owns the process.
    A command whose process has nothing left to do but tear down imports sets ``quick_exit``."""

    in_main = False
    quick_exit = False


def registry_of(ctx: click.Context):
    """The registry of this invocation: the bundled one, merged with ``--registry``'s file."""
    from zoo.registry import load_registry

    return load_registry(ctx.obj.get("registry"))
