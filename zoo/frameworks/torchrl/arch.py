"""A TorchRL actor's architecture, read from its state dict's shapes (tensors or their descriptions: no torch).

TorchRL's ``MLP`` is ``Linear, activation, Linear, ..., Linear`` in an ``nn.Sequential``, so its weights are
``<prefix><i>.weight``/``.bias`` with ``i`` = 0, 2, 4, ... whatever modules wrap it (``QValueActor`` ->
``module.0.module.``; ``ProbabilisticActor`` over ``Sequential(MLP, AddStateIndependentNormalScale)`` ->
``module.0.module.0.``). The head is the model config's:

- ``qvalue``: ``QValueActor``, whose action is the one-hot of the argmax of the Q-values (every exploration type:
  exploration is the separate ``EGreedyModule``); the env gets the argmax;
- ``tanh_normal``: ``ProbabilisticActor`` with ``TanhNormal(low, high, tanh_loc, upscale)``. Its
  ``ExplorationType.DETERMINISTIC`` action is ``TanhNormal.deterministic_sample``: the base Normal's mean (the loc)
  through ``SafeTanhTransform`` (``tanh`` clamped to +-(1 - finfo.resolution)) and, when the bounds are not
  [-1, 1], the affine ``(high + low) / 2 + (high - low) / 2 * y``. With ``tanh_loc`` TanhNormal first maps the loc
  to ``upscale * tanh(loc / upscale)``, plus ``(high - low) / 2 + low`` when the bounds are not [-1, 1] (TorchRL
  0.14.1's ``TanhNormal.update``, reproduced as it is). The scale comes from ``AddStateIndependentNormalScale``
  (a ``state_independent_scale`` tensor, the MLP gives the loc) or ``NormalParamExtractor`` (the MLP gives
  ``[loc, scale]``, the first half is the loc).

The actor itself is rebuilt by :mod:`zoo.frameworks.torchrl.network`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from zoo.errors import LayoutMismatch, UnsupportedError
from zoo.frameworks.torchrl.config import ModelConfig

LINEAR = re.compile(r"^(?P<prefix>(?:.*\.)?)(?P<index>\d+)\.(?P<kind>weight|bias)$")
SCALE = "state_independent_scale"


@dataclass(frozen=True)
class Architecture:
    """The MLP's Linear layers (their state-dict keys and sizes) and how the head reads its output."""

    prefix: str
    indices: tuple[int, ...]  # the Sequential's indices of the Linear layers
    sizes: tuple[int, ...]  # inputs, hidden widths, outputs
    scale_key: str | None  # AddStateIndependentNormalScale's parameter, when there is one

    @property
    def hidden(self) -> tuple[int, ...]:
        return self.sizes[1:-1]


def architecture(state: dict[str, Any]) -> Architecture:
    """The MLP in ``state`` (tensors or their descriptions: anything with ``shape``); a state dict laid out
    otherwise raises one line."""
    layers: dict[str, dict[int, dict[str, tuple[int, ...]]]] = {}
    scale_key, other = None, []
    for key, value in state.items():
        shape = tuple(getattr(value, "shape", ()) or ()) if hasattr(value, "shape") else None
        match = LINEAR.match(key)
        if match and shape is not None:
            layers.setdefault(match["prefix"], {}).setdefault(int(match["index"]), {})[match["kind"]] = shape
        elif key.endswith(SCALE) and shape is not None and scale_key is None:
            scale_key = key
        else:
            other.append(key)
    if not layers:
        raise LayoutMismatch(
            "the policy's state dict holds no Linear layer (keys like module.0.module.0.weight)",
            "is this a TorchRL policy's state dict?",
        )
    if len(layers) > 1:
        raise UnsupportedError(
            f"the policy holds Linear layers under {len(layers)} prefixes ({', '.join(sorted(layers)[:3])}): "
            "zoo rebuilds one MLP",
            "zoo reads TorchRL MLP actors (see docs/frameworks/torchrl.md)",
        )
    if other:
        raise UnsupportedError(
            f"the policy holds tensors zoo's rebuilt MLP does not use: {', '.join(sorted(other)[:3])}",
            "zoo reads TorchRL MLP actors (see docs/frameworks/torchrl.md)",
        )
    ((prefix, found),) = layers.items()
    sizes: list[int] = []
    for index in sorted(found):
        weight, bias = found[index].get("weight"), found[index].get("bias")
        if weight is None or len(weight) != 2 or (bias is not None and bias != weight[:1]):
            raise LayoutMismatch(f"layer {prefix}{index} is not a Linear layer ({weight}, bias {bias})")
        if bias is None:
            raise UnsupportedError(
                f"layer {prefix}{index} has no bias: zoo rebuilds MLP(bias_last_layer=True)"
            )
        if sizes and sizes[-1] != weight[1]:
            raise LayoutMismatch(
                f"layer {prefix}{index} takes {weight[1]} inputs, the layer before gives {sizes[-1]}"
            )
        if not sizes:
            sizes.append(weight[1])
        sizes.append(weight[0])
    return Architecture(prefix, tuple(sorted(found)), tuple(sizes), scale_key)


def action_size(arch: Architecture, config: ModelConfig, state: dict[str, Any]) -> int:
    """The actions the head gives: Q-values' count, or a TanhNormal's dimensions (the MLP's outputs with
    AddStateIndependentNormalScale, half of them with NormalParamExtractor)."""
    out = arch.sizes[-1]
    if config.head == "qvalue":
        if arch.scale_key:
            raise LayoutMismatch(
                f"the model config says head qvalue, but the policy holds {arch.scale_key} (a TanhNormal's scale)",
                "set head: tanh_normal",
            )
        return out
    if arch.scale_key:
        scale_shape = tuple(state[arch.scale_key].shape)
        if scale_shape not in ((out,), (1, out)):
            raise LayoutMismatch(f"{arch.scale_key} has shape {scale_shape}, the MLP gives {out} locs")
        return out
    if out % 2:
        raise LayoutMismatch(
            f"the MLP gives {out} values: a TanhNormal without state_independent_scale needs loc and scale "
            "(NormalParamExtractor), an even count",
        )
    return out // 2


def config_problem(arch: Architecture, config: ModelConfig) -> str | None:
    """What the model config says that the weights contradict."""
    if config.num_cells is not None and tuple(config.num_cells) != arch.hidden:
        return f"{config.source} declares num_cells {list(config.num_cells)}, the weights have {list(arch.hidden)}"
    return None
