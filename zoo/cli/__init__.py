"""The ``zoo`` command: parse, call the library, render. No logic of its own.

This module holds the root group (the error contract, ``--version``, ``--registry``) and the console script;
each command group is a module of its own (:mod:`zoo.cli.check`, :mod:`zoo.cli.evaluate`, ...), its options
declared once in :mod:`zoo.cli.options` and its tables in :mod:`zoo.cli.render`. Command modules import only
click and zoo's light modules at the top, so ``zoo --help`` stays fast.

Expected failures are :class:`~zoo.errors.ZooError`: one ``error:`` line, a hint,
and the error's exit code (1 problem, 2 usage, 3 refused), never a traceback.
"""

from __future__ import annotations

import os
import sys

import click

from zoo.cli import check, doctor, evaluate, export, hub, push, registry, watch
from zoo.cli.render import err, escape
from zoo.cli.shared import Process
from zoo.errors import WriteError, ZooError
from zoo.version import __version__


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


def _versions(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``zoo --version``: zoo's, and those of the libraries it works with that are installed (from
    their metadata: nothing is imported)."""
    if not value or ctx.resilient_parsing:
        return
    from zoo.dist_info import version
    from zoo.frameworks import framework_names, get_adapter

    click.echo(f"zoo {__version__}")
    names = ["torch", "gymnasium", "numpy", "huggingface_hub", "onnxruntime"]
    names += [pkg for name in framework_names() for pkg in get_adapter(name).packages]
    for name in dict.fromkeys(names):
        found = version(name)
        click.echo(f"{name} {found if found is not None else 'not installed'}")
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


for _command in (
    registry.registry_cmd,
    check.check_cmd,
    check.leaderboard_cmd,
    check.report_cmd,
    evaluate.eval_cmd,
    evaluate.enjoy_cmd,
    export.export_cmd,
    doctor.doctor_cmd,
    push.push_cmd,
    watch.watch_cmd,
    hub.hub_cmd,
):
    cli.add_command(_command)


def main() -> None:
    """Console-script entry point.

    After ``zoo check`` the process ends with ``os._exit`` once its output is flushed: tearing down an
    interpreter that loaded torch takes about a third of a second, which a check of a big tree would pay
    on every call. Nothing is pending then: every file zoo writes is written atomically and closed, the
    worker pools are shut down, and the verdict memo is written by a detached process. (Tests call
    ``cli`` itself, so they never take this path.)
    """
    Process.in_main = True
    try:
        cli(prog_name="zoo")
    except SystemExit as exc:
        if not Process.quick_exit:
            raise
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exc.code if isinstance(exc.code, int) else 1)
