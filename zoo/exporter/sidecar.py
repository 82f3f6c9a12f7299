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


def action_facts(space) -> dict[str, Any]:
    """Action type, dimension, dtype and range of an action space, as the exported output gives them."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return {
            "action_type": "continuous",
            "action_dim": int(np.prod(space.shape)),
            "action_shape": list(space.shape),
            "action_dtype": "float32",
            "action_range": finite_bounds({"low": space.low.tolist(), "high": space.high.tolist()}),
        }
    if isinstance(space, spaces.Discrete):
        return {
            "action_type": "discrete",
            "action_dim": 1,
            "action_shape": [],
            "action_dtype": "int64",
            "num_actions": int(space.n),
            "action_range": {"low": int(space.start), "high": int(space.start + space.n - 1)},
        }
    if isinstance(space, spaces.MultiDiscrete):
        return {
            "action_type": "multi_discrete",
            "action_dim": int(np.prod(space.shape)),
            "action_shape": list(space.shape),
            "action_dtype": "int64",
            "nvec": space.nvec.tolist(),
            "action_range": {"low": space.start.tolist(), "high": (space.start + space.nvec - 1).tolist()},
        }
    if isinstance(space, spaces.MultiBinary):
        return {
            "action_type": "multi_binary",
            "action_dim": int(np.prod(space.shape)),
            "action_shape": list(space.shape),
            "action_dtype": "int64",
            "action_range": {"low": 0, "high": 1},
        }
    return {
        "action_type": type(space).__name__,
        "action_dim": None,
        "action_shape": None,
        "action_range": None,
    }


def recurrent_facts(spec: ExportSpec, inputs: list[str], outputs: list[str]) -> dict | None:
    if spec.recurrent is None:
        return None
    r = spec.recurrent
    return {
        "rnn_type": r.rnn_type,
        "num_layers": r.num_layers,
        "hidden_dim": r.hidden_dim,
        "state_shape": [r.num_layers, "batch", r.hidden_dim],
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
