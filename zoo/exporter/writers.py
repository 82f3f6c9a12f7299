"""Write an :class:`~zoo.policy.ExportSpec` module as TorchScript or ONNX, batch axis dynamic.

TorchScript: ``torch.jit.trace`` (framework code such as SB3's distributions is traceable but not
scriptable); a recurrent core is wrapped in :class:`~zoo.exporter.modules.StatefulRecurrent`, which
is scripted around the traced core. ONNX: the dynamo exporter (``torch.export``) or the legacy
TorchScript-based one; the caller decides which to try (see :func:`zoo.exporter.export_policy`).
Each writes only some opsets as asked (:data:`EXPORTER_OPSETS`); :func:`write_onnx` reads the
written file's opset back and raises unless it is the one asked for.
Both exporters chat on stdout, stderr and the logging system; that noise is captured here and only
the first line of a failure is kept.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from pathlib import Path

import torch

from zoo.exporter.modules import GruOnly, StatefulRecurrent
from zoo.policy import ExportSpec

# The ONNX opsets each exporter can write, measured with torch 2.13.0, onnxscript 0.7.2, onnx 1.23.2
# and onnxruntime 1.32 on zoo's policies (docs/export.md, "Opsets"). legacy writes 7..23 as asked and
# raises "Unsupported onnx_opset_version" above. dynamo builds opset 18 and converts: 18..25 with
# onnxscript's converter, 13..17 and 26..28 with onnx's, which lacks down-adapters for some ops (Gemm
# below 13, so no policy goes lower; Relu, Sub, Div below 14; Shape below 15). Where a conversion
# fails, and for any opset above 28, dynamo keeps opset 18 and only logs a warning.
LEGACY_OPSETS = range(7, 24)
DYNAMO_OPSETS = range(13, 29)
EXPORTER_OPSETS = {"dynamo": DYNAMO_OPSETS, "legacy": LEGACY_OPSETS}  # in the order "auto" tries them
ONNX_OPSETS = range(LEGACY_OPSETS.start, DYNAMO_OPSETS.stop)  # what zoo writes with one or the other


class OpsetError(RuntimeError):
    """The exporter could not write the requested opset for this graph."""


_NOISY_LOGGERS = ("torch.onnx", "torch.export", "torch._dynamo", "torch._export", "onnxscript", "torch.fx")


@contextlib.contextmanager
def quiet():
    """Silence exporter prints, warnings and log records (they are not the user's business)."""
    loggers = [logging.getLogger(name) for name in _NOISY_LOGGERS]
    levels = [lg.level for lg in loggers]
    sink = io.StringIO()
    try:
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def io_names(spec: ExportSpec) -> tuple[list[str], list[str]]:
    """ONNX input and output names (DESIGN section 5)."""
    if spec.recurrent is None:
        return ["obs"], ["actions"]
    if spec.recurrent.rnn_type == "gru":
        return ["obs", "h_in"], ["actions", "h_out"]
    return ["obs", "h_in", "c_in"], ["actions", "h_out", "c_out"]


def _core_inputs(spec: ExportSpec, obs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``(obs,)``, or ``(obs, h, c)`` with zero states of the matching batch size for a recurrent core."""
    if spec.recurrent is None:
        return (obs,)
    r = spec.recurrent
    state = torch.zeros(r.num_layers, obs.shape[0], r.hidden_dim)
    # h and c must be distinct tensors: given one tensor twice, the dynamo exporter merges the two
    # inputs and the LSTM's ONNX graph drifts from the model (5e-2 after 64 steps, measured).
    return (obs, state, state.clone())


def write_torchscript(spec: ExportSpec, obs: torch.Tensor, path: Path) -> None:
    """Trace at the example batch; recurrent cores get their state inside (``reset``/``reset_envs``)."""
    with quiet(), torch.no_grad():
        module = torch.jit.trace(spec.module, _core_inputs(spec, obs), check_trace=False)
        if spec.recurrent is not None:
            r = spec.recurrent
            module = torch.jit.script(StatefulRecurrent(module, r.num_layers, r.hidden_dim))
        torch.jit.save(module, str(path))


def _onnx_module(spec: ExportSpec):
    return (
        GruOnly(spec.module)
        if spec.recurrent is not None and spec.recurrent.rnn_type == "gru"
        else spec.module
    )


def _dynamic_axes(spec: ExportSpec) -> dict[str, dict[int, str]]:
    inputs, outputs = io_names(spec)
    return {
        name: ({1: "batch"} if name.startswith(("h_", "c_")) else {0: "batch"}) for name in inputs + outputs
    }


def write_onnx(spec: ExportSpec, obs: torch.Tensor, path: Path, *, opset: int, exporter: str) -> None:
    """Export with ``exporter`` ("dynamo" or "legacy") at ``opset``; raises whatever the exporter raises.

    Raises :class:`OpsetError`, too, when the file's opset is not ``opset`` (dynamo's converter gives
    up quietly).
    """
    inputs, outputs = io_names(spec)
    args = _core_inputs(spec, obs)[: len(inputs)]  # a GRU's ONNX signature has no c
    module = _onnx_module(spec)
    with quiet(), torch.no_grad():
        if exporter == "dynamo":
            program = torch.onnx.export(
                module,
                args,
                None,
                dynamo=True,
                input_names=inputs,
                output_names=outputs,
                opset_version=opset,
                dynamic_axes=_dynamic_axes(spec),
            )
            program.save(str(path), external_data=False)
        else:
            torch.onnx.export(
                module,
                args,
                str(path),
                dynamo=False,
                input_names=inputs,
                output_names=outputs,
                opset_version=opset,
                dynamic_axes=_dynamic_axes(spec),
            )
    import onnx

    if exporter == "dynamo" and onnx_opset(path) != opset:
        _convert_opset(path, opset)
    written = onnx_opset(path)
    if written != opset:
        raise OpsetError(f"wrote opset {written}, not the requested {opset}")
    onnx.checker.check_model(str(path))


def _convert_opset(path: Path, opset: int) -> None:
    """Convert ``path`` to ``opset`` with onnx's converter, or raise its reason in one line.

    dynamo ran this converter already, but on the graph before its optimizer, and only logged why it
    failed. On the optimized graph it may succeed (rsl_rl's MLP to opset 14: measured).
    """
    import onnx
    from onnx import version_converter

    try:
        with quiet():
            model = version_converter.convert_version(onnx.load(str(path)), opset)
    except Exception as exc:  # noqa: BLE001 - onnx raises RuntimeError or ValueError, with C++ file names
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0].split(" failed: ")[-1]
        raise OpsetError(
            f"onnx's converter cannot take the graph from opset {onnx_opset(path)} to {opset}: {reason}"
        ) from None
    onnx.save(model, str(path))


def onnx_opset(path: Path) -> int:
    """The default-domain opset the file actually uses."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return next(int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx"))


def set_onnx_metadata(path: Path, facts: dict[str, str]) -> None:
    """Replace the file's ``metadata_props`` with ``facts`` (values are JSON strings)."""
    import onnx

    model = onnx.load(str(path))
    del model.metadata_props[:]
    for key, value in facts.items():
        model.metadata_props.add(key=key, value=value)
    onnx.save(model, str(path))
