"""``zoo export``: a run's policy as one ONNX or TorchScript file, parity-checked."""

from __future__ import annotations

from pathlib import Path

import click

from zoo.cli import options as opt
from zoo.cli.render import err, escape, print_json
from zoo.cli.shared import registry_of


@click.command("export")
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
@opt.typed()
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
    env_module,
    revision,
    allow_download,
    as_json,
    quiet,
    load,
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
        load=load,
        exp_name=exp_name,
        env_id=env_id,
        run_seed=run_seed,
        env_module=env_module,
        revision=revision,
        allow_download=allow_download,
        notify=None if quiet else lambda line: err().print(escape(line)),
        registry=registry_of(ctx),
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
