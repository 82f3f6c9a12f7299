"""Write an :class:`~zoo.policy.ExportSpec` module as TorchScript or ONNX, batch axis dynamic.

TorchScript: ``torch.jit.trace`` (framework code such as SB3's distributions is traceable but not
scriptable); a recurrent core is wrapped in :class:`~zoo.export.modules.StatefulRecurrent`, which
is scripted around the traced core. ONNX: the dynamo exporter (``torch.export``) or the legacy
TorchScript-based one; the caller decides which to try (see :func:`zoo.export.export_policy`).
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

from zoo.export.modules import GruOnly, StatefulRecurrent
from zoo.policy import ExportSpec

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
    """Export with ``exporter`` ("dynamo" or "legacy"); raises whatever the exporter raises."""
    inputs, outputs = io_names(spec)
    args = _core_inputs(spec, obs)[: len(inputs)]  # a GRU's ONNX signature has no c
    module = _onnx_module(spec)
    with quiet(), torch.no_grad():
        if exporter == "dynamo":
            program = torch.onnx.export(module, args, None, dynamo=True, input_names=inputs, output_names=outputs,
                                        opset_version=opset, dynamic_axes=_dynamic_axes(spec))  # fmt: skip
            program.save(str(path), external_data=False)
        else:
            torch.onnx.export(module, args, str(path), dynamo=False, input_names=inputs, output_names=outputs,
                              opset_version=opset, dynamic_axes=_dynamic_axes(spec))  # fmt: skip
    import onnx

    onnx.checker.check_model(str(path))


def onnx_opset(path: Path) -> int:
    """The default-domain opset the file actually uses (dynamo may raise a requested 17 to 18)."""
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
