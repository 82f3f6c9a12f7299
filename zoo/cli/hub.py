"""``zoo hub serve``, ``zoo hub gc`` and ``zoo hub verify``: the Hub-compatible server and its storage upkeep."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from zoo.cli import options as opt
from zoo.cli.render import count, err, escape, out, print_json, size
from zoo.errors import EXIT_PROBLEM


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


@click.group("hub")
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
            f"removed {removed.files} partial upload(s), {size(removed.bytes)}, that a killed server left "
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
        f"{verb} {count(report.removed, 'unreferenced blob')} ({size(report.removed_bytes)}), "
        f"{count(report.uploads_removed, 'dead upload')} ({size(report.uploads_bytes)}) and "
        f"{count(report.parts_removed, 'abandoned multipart upload')}; kept "
        f"{report.referenced} referenced and {report.kept_fresh} younger than {grace:g} s, of "
        f"{count(report.blobs, 'blob')} in {count(report.repos, 'repo')}",
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
            f"{count(report.orphans, 'unreferenced blob')} ({size(report.orphan_bytes)}; zoo hub gc "
            "removes them)"
            if report.orphans
            else "no unreferenced blobs"
        )
        out().print(
            f"verified {count(report.blobs, 'blob')} ({size(report.bytes)}) of "
            f"{count(report.repos, 'repo')}, {count(report.commits, 'commit')}: "
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
