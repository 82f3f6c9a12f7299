"""The actor of a deprl checkpoint (``step_<N>.pt``, the ``ActorCriticWithTargets`` state dict), from its keys
and shapes, and the same network rebuilt in plain torch.

deprl's ``custom_model_mpo`` is ``Actor(ObservationEncoder(), MLP((h, h), ReLU), GaussianPolicyHead())``: the
torso's ``Linear`` layers at ``actor.torso.model.{0,2,...}`` with ReLU after each, the head's
``loc_layer.0`` followed by Tanh and ``scale_layer.0`` by Softplus (hard-coded in deprl/custom_torso.py, never
saved). The deterministic action, ``agent.test_step``, is the head's ``loc``. tonic's ``Actor.initialize`` hands
the observation normalizer to the encoder's ``action_space`` argument by position, so the actor never
normalizes: it acts on the raw observation (only the critic reads ``observation_normalizer``). A checkpoint whose
actor holds any other tensor is not this layout and is refused, not guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zoo.errors import LayoutMismatch

TORSO = re.compile(r"^actor\.torso\.model\.(\d{1,3})\.(weight|bias)$")
HEADS = ("loc_layer", "scale_layer")
_HINT = "zoo reads the actor of deprl's custom_model_mpo (see docs/frameworks/deprl.md)"


@dataclass(frozen=True)
class ActorLayout:
    """The actor's layer sizes: ``sizes[0]`` observations in, ``sizes[-1]`` actions out."""

    sizes: tuple[int, ...]

    @property
    def observations(self) -> int:
        return self.sizes[0]

    @property
    def actions(self) -> int:
        return self.sizes[-1]

    @property
    def hidden(self) -> tuple[int, ...]:
        return self.sizes[1:-1]


def _shape(state: Mapping[str, Any], key: str) -> tuple[int, ...]:
    value = state.get(key)
    if value is None or not hasattr(value, "shape"):
        raise LayoutMismatch(f"not a deprl MPO checkpoint: no tensor {key}", _HINT)
    return tuple(int(n) for n in value.shape)


def _linear(state: Mapping[str, Any], key: str) -> tuple[int, ...]:
    """The weight's shape of the ``Linear`` layer at ``key``, checked against its bias."""
    weight, bias = _shape(state, f"{key}.weight"), _shape(state, f"{key}.bias")
    if len(weight) != 2 or bias != weight[:1]:
        raise LayoutMismatch(f"{key} is {weight} with bias {bias}, not a Linear layer", _HINT)
    return weight


def actor_layout(state: Any) -> ActorLayout:
    """The actor's sizes from a state dict of tensors or of zoo's tensor descriptions (both have ``shape``)."""
    if not isinstance(state, Mapping) or not all(isinstance(k, str) for k in state):
        raise LayoutMismatch("not a deprl checkpoint: expected the model's state dict", _HINT)
    actor = [key for key in state if key.startswith("actor.")]
    torso = sorted({int(m[1]) for key in actor if (m := TORSO.match(key))})
    expected = {f"actor.torso.model.{i}.{p}" for i in torso for p in ("weight", "bias")}
    expected |= {f"actor.head.{head}.0.{p}" for head in HEADS for p in ("weight", "bias")}
    stray = sorted(set(actor) - expected)
    if stray:
        raise LayoutMismatch(f"the actor holds {stray[0][:80]}, which deprl's MPO actor does not", _HINT)
    if not torso or torso != list(range(0, 2 * len(torso), 2)):
        raise LayoutMismatch("not a deprl MPO checkpoint: no actor.torso.model.0 (the MLP torso)", _HINT)
    sizes: list[int] = []
    for key in [f"actor.torso.model.{i}" for i in torso] + ["actor.head.loc_layer.0"]:
        weight = _linear(state, key)
        if sizes and weight[1] != sizes[-1]:
            raise LayoutMismatch(f"{key} takes {weight[1]} inputs, the layer before gives {sizes[-1]}", _HINT)
        sizes += [weight[0]] if sizes else [weight[1], weight[0]]
    if _linear(state, "actor.head.scale_layer.0") != _linear(state, "actor.head.loc_layer.0"):
        raise LayoutMismatch("actor.head.scale_layer.0 is not the shape of loc_layer.0", _HINT)
    return ActorLayout(tuple(sizes))


def build_actor(state: Mapping[str, Any], layout: ActorLayout, low: Any = None, high: Any = None):
    """The actor as a plain torch module: ``tanh(loc)``, then tonic's ActionRescaler when ``low``/``high`` are
    given (``scaled_actions=True``: ``(high + low) / 2 + (high - low) / 2 * clip(a, -1, 1)``)."""
    import torch
    from torch import nn

    class DeprlActor(nn.Module):
        """The deterministic actor; ``scale`` is kept for zoo's stochastic mode."""

        def __init__(self) -> None:
            super().__init__()
            layers: list[nn.Module] = []
            for n_in, n_out in zip(layout.sizes[:-2], layout.sizes[1:-1], strict=True):
                layers += [nn.Linear(n_in, n_out), nn.ReLU()]
            self.torso = nn.Sequential(*layers)
            self.loc = nn.Linear(layout.sizes[-2], layout.actions)
            self.scale = nn.Linear(layout.sizes[-2], layout.actions)
            rescale = low is not None
            bias = (high + low) / 2 if rescale else 0.0
            half = (high - low) / 2 if rescale else 1.0
            self.rescale = rescale
            self.register_buffer("action_bias", torch.as_tensor(bias, dtype=torch.float32).reshape(-1))
            self.register_buffer("action_scale", torch.as_tensor(half, dtype=torch.float32).reshape(-1))

        def features(self, obs: torch.Tensor) -> torch.Tensor:
            return self.torso(obs)

        def to_env(self, action: torch.Tensor) -> torch.Tensor:
            """tonic's ActionRescaler (identity when the run did not scale actions)."""
            if not self.rescale:
                return action
            return self.action_bias + self.action_scale * torch.clamp(action, -1.0, 1.0)

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            return self.to_env(torch.tanh(self.loc(self.torso(obs))))

    actor = DeprlActor()
    mapped = {}
    for i, index in enumerate(range(0, 2 * len(layout.hidden), 2)):
        for p in ("weight", "bias"):
            mapped[f"torso.{2 * i}.{p}"] = state[f"actor.torso.model.{index}.{p}"]
    for head, name in (("loc_layer", "loc"), ("scale_layer", "scale")):
        for p in ("weight", "bias"):
            mapped[f"{name}.{p}"] = state[f"actor.head.{head}.0.{p}"]
    mapped["action_bias"], mapped["action_scale"] = actor.action_bias, actor.action_scale
    actor.load_state_dict({k: torch.as_tensor(v, dtype=torch.float32) for k, v in mapped.items()})
    return actor.eval()
