"""The model description TorchRL does not save: ``torchrl_policy.yaml``.

TorchRL checkpoints hold module state dicts only; the modules themselves (the MLP's cells and activation, the
``QValueActor`` or the ``ProbabilisticActor`` with its ``TanhNormal``, the env's ``ObservationNorm``) are built by
the user's code (sota-implementations' ``utils_*.py``). The user states them once in a small YAML file with a
closed vocabulary, read with zoo's bounded safe YAML loader (no tags, nothing evaluated); every value is checked
against the list of what it may be. The file sits beside the checkpoint (``torchrl_policy.yaml``), or is passed
with ``--model-config``. docs/frameworks/torchrl.md gives the ones for sota-implementations' DQN and PPO::

    algorithm: ppo            # the registry entry torchrl_<algorithm>
    head: tanh_normal         # qvalue (QValueActor: argmax) | tanh_normal (ProbabilisticActor + TanhNormal)
    num_cells: [64, 64]       # MLP(num_cells=...)
    activation: tanh          # MLP(activation_class=...)
    tanh_loc: false           # TanhNormal(tanh_loc=...), with upscale (default 5.0)
    observation_norm: checkpoint   # the env's ObservationNorm: checkpoint (the frozen vecnorm) or {loc, scale}
    observation_clip: [-10, 10]    # the env's ClipTransform after it
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.errors import LayoutMismatch

#: The file zoo reads beside a checkpoint when no ``--model-config`` is given.
CONFIG_FILE = "torchrl_policy.yaml"
HEADS = ("qvalue", "tanh_normal")
#: ``MLP(activation_class=...)``: torch.nn classes by the lower-case name the file uses.
ACTIVATIONS = {
    "tanh": "Tanh",
    "relu": "ReLU",
    "elu": "ELU",
    "leaky_relu": "LeakyReLU",
    "gelu": "GELU",
    "silu": "SiLU",
    "sigmoid": "Sigmoid",
    "softplus": "Softplus",
    "identity": "Identity",
}
ALGORITHMS = ("dqn", "ppo", "sac")
KEYS = (
    "algorithm",
    "head",
    "num_cells",
    "activation",
    "tanh_loc",
    "upscale",
    "low",
    "high",
    "observation_norm",
    "observation_clip",
)
MAX_CELLS = 64  # hidden layers
MAX_WIDTH = 1 << 16


@dataclass(frozen=True)
class ObservationNorm:
    """TorchRL's ``ObservationNorm(loc, scale, standard_normal)`` on the observation: ``(obs - loc) / scale`` when
    ``standard_normal`` (sota-implementations' setting), else ``obs * scale + loc``. ``from_checkpoint``: loc and
    scale are the checkpoint's frozen ``vecnorm``."""

    from_checkpoint: bool
    loc: tuple[float, ...] = ()
    scale: tuple[float, ...] = ()
    standard_normal: bool = True


@dataclass(frozen=True)
class ModelConfig:
    """One ``torchrl_policy.yaml``, every field checked."""

    source: str  # the file it came from, for messages
    algorithm: str | None
    head: str
    num_cells: tuple[int, ...] | None  # None: read from the weights
    activation: str
    tanh_loc: bool = False
    upscale: float = 5.0
    low: tuple[float, ...] | None = None  # None: the env's action bounds, as sota-implementations pass them
    high: tuple[float, ...] | None = None
    observation_norm: ObservationNorm | None = None
    observation_clip: tuple[float, float] | None = None


def _bad(source: str, key: str, problem: str) -> LayoutMismatch:
    return LayoutMismatch(
        f"{source}: {key} {problem}", "see docs/frameworks/torchrl.md for the model config's fields"
    )


def _floats(source: str, key: str, value: Any, size: int | None = None) -> tuple[float, ...]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if (
        not isinstance(value, list)
        or not value
        or len(value) > MAX_WIDTH
        or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value
        )
    ):
        raise _bad(source, key, "must be a finite number or a list of them")
    if size is not None and len(value) != size:
        raise _bad(source, key, f"must hold {size} numbers")
    return tuple(float(v) for v in value)


def _norm(source: str, value: Any) -> ObservationNorm | None:
    if value is None or value is False:
        return None
    if value == "checkpoint":
        return ObservationNorm(from_checkpoint=True)
    if (
        not isinstance(value, dict)
        or set(value) - {"loc", "scale", "standard_normal"}
        or not {"loc", "scale"} <= set(value)
    ):
        raise _bad(
            source,
            "observation_norm",
            "must be 'checkpoint' or {loc: [...], scale: [...], standard_normal: true}",
        )
    standard = value.get("standard_normal", True)
    if not isinstance(standard, bool):
        raise _bad(source, "observation_norm.standard_normal", "must be true or false")
    loc = _floats(source, "observation_norm.loc", value["loc"])
    scale = _floats(source, "observation_norm.scale", value["scale"])
    if standard and any(s == 0 for s in scale):
        raise _bad(source, "observation_norm.scale", "must not be 0 (it divides)")
    return ObservationNorm(False, loc, scale, standard)


def parse(doc: Any, source: str) -> ModelConfig:
    """The model config in ``doc`` (a parsed YAML document), or a one-line error naming the first wrong field."""
    if not isinstance(doc, dict):
        raise LayoutMismatch(
            f"{source}: not a mapping of the model config's fields", "see docs/frameworks/torchrl.md"
        )
    unknown = sorted(str(k) for k in doc if k not in KEYS)
    if unknown:
        raise _bad(source, unknown[0], f"is not a field of the model config (fields: {', '.join(KEYS)})")
    algorithm = doc.get("algorithm")
    if algorithm is not None and algorithm not in ALGORITHMS:
        raise _bad(source, "algorithm", f"{str(algorithm)[:40]!r} is not one of {', '.join(ALGORITHMS)}")
    head = doc.get("head")
    if head not in HEADS:
        raise _bad(source, "head", f"{str(head)[:40]!r} is not one of {', '.join(HEADS)}")
    cells = doc.get("num_cells")
    if cells is not None and (
        not isinstance(cells, list)
        or len(cells) > MAX_CELLS
        or not all(isinstance(c, int) and not isinstance(c, bool) and 0 < c <= MAX_WIDTH for c in cells)
    ):
        raise _bad(source, "num_cells", "must be a list of positive layer widths")
    activation = doc.get("activation", "tanh")  # TorchRL's MLP default: nn.Tanh
    if activation not in ACTIVATIONS:
        raise _bad(source, "activation", f"{str(activation)[:40]!r} is not one of {', '.join(ACTIVATIONS)}")
    tanh_loc = doc.get("tanh_loc", False)
    if not isinstance(tanh_loc, bool):
        raise _bad(source, "tanh_loc", "must be true or false")
    upscale = _floats(source, "upscale", doc.get("upscale", 5.0), 1)[0]
    low = _floats(source, "low", doc["low"]) if doc.get("low") is not None else None
    high = _floats(source, "high", doc["high"]) if doc.get("high") is not None else None
    if (low is None) != (high is None) or (
        low and high and (len(low) != len(high) or any(h <= lo for lo, h in zip(low, high, strict=False)))
    ):
        raise _bad(source, "low/high", "must be given together, each high above its low")
    clip = doc.get("observation_clip")
    clip_pair = _floats(source, "observation_clip", clip, 2) if clip is not None else None
    if clip_pair is not None and clip_pair[0] > clip_pair[1]:
        raise _bad(source, "observation_clip", "must be [low, high]")
    if head == "qvalue" and (doc.get("tanh_loc") is not None or low is not None):
        raise _bad(source, "tanh_loc/low/high", "belong to head tanh_normal")
    return ModelConfig(
        source,
        algorithm,
        head,
        tuple(cells) if cells is not None else None,
        activation,
        tanh_loc,
        upscale,
        low,
        high,
        _norm(source, doc.get("observation_norm")),
        (clip_pair[0], clip_pair[1]) if clip_pair is not None else None,
    )


def read(path: Path) -> ModelConfig:
    """``path`` read with zoo's bounded safe YAML loader (a Python tag is an error) and checked."""
    from zoo import safeyaml

    return parse(safeyaml.read(path, max_bytes=64 << 10), path.name)
