"""The sidecar ``<file>.metadata.json`` (DESIGN section 5): everything a deployment needs to know.

The same facts go into the file itself: ONNX ``metadata_props`` (one key per field, the value as
JSON) and TorchScript's extra file ``zoo_metadata.json``. Only ``file_sha256`` is sidecar-only,
since a file cannot hold its own hash.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

import numpy as np

from zoo.policy import ExportSpec
from zoo.version import __version__

TORCHSCRIPT_METADATA = "zoo_metadata.json"


def finite_bounds(bounds: Any) -> Any:
    """A Box's bounds as JSON holds them: an unbounded end (an infinity, which JSON has no token for) is null.
    Applied to a sidecar read back too, so that one written before (with ``Infinity`` tokens) compares alike."""
    if isinstance(bounds, dict):
        return {key: finite_bounds(value) for key, value in bounds.items()}
    if isinstance(bounds, list):
        return [finite_bounds(value) for value in bounds]
    return None if isinstance(bounds, float) and not math.isfinite(bounds) else bounds


def _one_end(values: list) -> Any:
    """One end of a range: a number when every dimension has it, else the per-dimension list."""
    values = finite_bounds(list(values))
    return values[0] if values and all(v == values[0] for v in values) else values


def contract_range(low: Any, high: Any) -> list:
    """``[low, high]`` as the contract writes a range (DESIGN section 5): ``[-1.0, 1.0]`` when the bounds are the
    same for every dimension; an end that differs by dimension is a per-dimension list; an unbounded end null."""
    return [_one_end(np.ravel(low).tolist()), _one_end(np.ravel(high).tolist())]


def read_range(value: Any) -> list | None:
    """A sidecar's ``action_range`` in the contract's form, whichever form it was written in: the contract's
    ``[low, high]``, or ``{"low": ..., "high": ...}`` as zoo wrote it before."""
    if isinstance(value, dict) and set(value) == {"low", "high"}:
        value = [value["low"], value["high"]]
    if not isinstance(value, list) or len(value) != 2:
        return None
    return [_one_end(end if isinstance(end, list) else [end]) for end in value]


def action_facts(space) -> dict[str, Any]:
    """Action type, dimension, dtype and range of an action space, as the exported output gives them."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return {
            "action_type": "continuous",
            "action_dim": int(np.prod(space.shape)),
            "action_shape": list(space.shape),
            "action_dtype": "float32",
            "action_range": contract_range(space.low, space.high),
        }
    if isinstance(space, spaces.Discrete):
        return {
            "action_type": "discrete",
            "action_dim": 1,
            "action_shape": [],
            "action_dtype": "int64",
            "num_actions": int(space.n),
            "action_range": [int(space.start), int(space.start + space.n - 1)],
        }
    if isinstance(space, spaces.MultiDiscrete):
        return {
            "action_type": "multi_discrete",
            "action_dim": int(np.prod(space.shape)),
            "action_shape": list(space.shape),
            "action_dtype": "int64",
            "nvec": space.nvec.tolist(),
            "action_range": contract_range(space.start, space.start + space.nvec - 1),
        }
    if isinstance(space, spaces.MultiBinary):
        return {
            "action_type": "multi_binary",
            "action_dim": int(np.prod(space.shape)),
            "action_shape": list(space.shape),
            "action_dtype": "int64",
            "action_range": [0, 1],
        }
    return {
        "action_type": type(space).__name__,
        "action_dim": None,
        "action_shape": None,
        "action_range": None,
    }


#: The most layers and units a recurrent block may claim before zoo allocates its state (a hostile sidecar).
MAX_RNN_LAYERS, MAX_RNN_HIDDEN = 64, 1 << 16


def rnn_sizes(recurrent: dict) -> tuple[int, int]:
    """``(layers, hidden)`` of a recurrent block, under the contract's keys (``rnn_num_layers``,
    ``rnn_hidden_dim``) or zoo's earlier ones (``num_layers``, ``hidden_dim``); bounded before use."""
    from zoo.errors import BrokenFile

    layers = recurrent.get("rnn_num_layers", recurrent.get("num_layers"))
    hidden = recurrent.get("rnn_hidden_dim", recurrent.get("hidden_dim"))
    for name, value, most in (("layers", layers, MAX_RNN_LAYERS), ("hidden size", hidden, MAX_RNN_HIDDEN)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= most:
            raise BrokenFile(
                f"the recurrent block's {name} is {str(value)[:40]}, not a count from 1 to {most}"
            )
    return layers, hidden


def recurrent_facts(spec: ExportSpec, inputs: list[str], outputs: list[str]) -> dict | None:
    """The contract's recurrent block: the cell, its sizes, each state's shape by its ONNX input name, the ports."""
    if spec.recurrent is None:
        return None
    r = spec.recurrent
    shape = [r.num_layers, "batch", r.hidden_dim]
    return {
        "rnn_type": r.rnn_type,
        "rnn_num_layers": r.num_layers,
        "rnn_hidden_dim": r.hidden_dim,
        "state_shapes": {name: shape for name in inputs[1:]},
        "inputs": inputs,
        "outputs": outputs,
        "torchscript": "state kept inside; reset() zeroes every env, reset_envs(done_mask) the done ones",
        "reset": "zero an env's state when its episode starts",
    }


def build_sidecar(
    spec: ExportSpec,
    *,
    target: dict,
    fmt: str,
    exporter: dict,
    opset: int | None,
    recurrent: dict | None,
    inputs: list[str],
    outputs: list[str],
    action_space,
    parity: dict,
    left_to_caller: list[str],
    exported_at: str | None = None,
) -> dict:
    """Every sidecar field but ``file_sha256``; ``exported_at`` defaults to now."""
    import torch

    return {
        **target,
        "format": fmt,
        "obs_dim": int(np.prod(spec.obs_shape, dtype=np.int64)),
        "obs_shape": list(spec.obs_shape),
        "obs_dtype": "float32",
        "obs_groups": spec.obs_groups,
        "obs_terms_baked": all("terms" in group for group in spec.obs_groups.values()),
        **action_facts(action_space),
        "normalization_baked": spec.normalization is not None,
        "normalization": spec.normalization,
        "baked": spec.baked,
        "left_to_caller": left_to_caller,
        "is_recurrent": spec.recurrent is not None,
        "recurrent": recurrent,
        "inputs": inputs,
        "outputs": outputs,
        "exporter": exporter,
        "opset": opset,
        "parity": parity,
        "exported_at": exported_at or _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "torch_version": torch.__version__,
        "zoo_version": __version__,
    }
