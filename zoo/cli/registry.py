"""``zoo registry list`` and ``zoo registry show``: the experiments zoo knows."""

from __future__ import annotations

import click

from zoo.cli.render import out, print_json, table_of
from zoo.cli.shared import registry_of


@click.group("registry")
def registry_cmd() -> None:
    """List or show the experiments zoo knows."""


@registry_cmd.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
@click.pass_context
def registry_list(ctx: click.Context, as_json: bool) -> None:
    """One line per experiment: framework, algorithm, format, extras."""
    reg = registry_of(ctx)
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

    entry = registry_of(ctx).get(name)
    if as_json:
        print_json(entry.as_dict())
        return
    data = entry.as_dict()
    data.pop("name")
    out().print(f"[bold]{name}[/]", markup=True)
    out().print(yaml.safe_dump(data, sort_keys=False).rstrip())
