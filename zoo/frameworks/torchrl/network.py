"""A TorchRL actor rebuilt in plain torch: the env's ``ObservationNorm`` and ``ClipTransform``, the MLP, then
the head (:mod:`zoo.frameworks.torchrl.arch` says which). Imported only when a policy is loaded.

The module computes TorchRL's ``ExplorationType.DETERMINISTIC`` action from a raw float32 observation: it is both
what zoo's policy acts with and what ``zoo export`` traces.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from zoo.frameworks.torchrl.arch import Architecture
from zoo.frameworks.torchrl.config import ACTIVATIONS, ModelConfig


def build_actor(
    state: dict[str, Any],
    arch: Architecture,
    config: ModelConfig,
    n_actions: int,
    bounds: tuple[Any, Any] | None,
    norm: tuple[Any, Any, bool] | None,
):
    """The :class:`TorchRLActor` of ``state`` (tensors): ``bounds`` the TanhNormal's (low, high), ``norm``
    ``(loc, scale, standard_normal)`` of the ObservationNorm."""
    linears = []
    for i in range(len(arch.indices)):
        key = f"{arch.prefix}{arch.indices[i]}"
        layer = torch.nn.Linear(arch.sizes[i], arch.sizes[i + 1])
        with torch.no_grad():
            layer.weight.copy_(state[f"{key}.weight"].to(torch.float32))
            layer.bias.copy_(state[f"{key}.bias"].to(torch.float32))
        linears.append(layer)
    return TorchRLActor(
        linears, config, n_actions, bounds, norm, state[arch.scale_key] if arch.scale_key else None
    )


class TorchRLActor(nn.Module):
    """The TorchRL actor's deterministic action from a raw float32 observation: ObservationNorm,
    ClipTransform, the MLP, then the head (argmax, or TanhNormal's deterministic sample). ``loc_of`` and
    :meth:`squash` are shared with the stochastic path."""

    def __init__(self, linears, config: ModelConfig, n_actions: int, bounds, norm, scale) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i, layer in enumerate(linears):
            layers.append(layer)
            if i < len(linears) - 1:
                layers.append(getattr(nn, ACTIVATIONS[config.activation])())
        self.mlp = nn.Sequential(*layers)
        self.qvalue = config.head == "qvalue"
        self.n_actions = n_actions
        self.has_norm = norm is not None
        loc, nscale, standard = norm if norm is not None else (torch.zeros(1), torch.ones(1), True)
        self.register_buffer("obs_loc", torch.as_tensor(loc, dtype=torch.float32).clone())
        self.register_buffer("obs_scale", torch.as_tensor(nscale, dtype=torch.float32).clone())
        self.standard_normal = bool(standard)
        clip = config.observation_clip
        self.has_clip = clip is not None
        self.clip_low = float(clip[0]) if clip else 0.0
        self.clip_high = float(clip[1]) if clip else 0.0
        low, high = bounds if bounds is not None else (-torch.ones(n_actions), torch.ones(n_actions))
        low = torch.as_tensor(low, dtype=torch.float32).clone()
        high = torch.as_tensor(high, dtype=torch.float32).clone()
        self.register_buffer("low", low)
        self.register_buffer("high", high)
        self.affine = bool((high != 1.0).any() or (low != -1.0).any())
        self.tanh_loc = config.tanh_loc
        self.upscale = float(config.upscale)
        self.lim = 1.0 - float(torch.finfo(torch.float32).resolution)
        self.register_buffer(
            "scale_param",
            torch.as_tensor(scale, dtype=torch.float32).clone() if scale is not None else torch.zeros(0),
        )

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        x = obs
        if self.has_norm:
            x = (
                (x - self.obs_loc) / self.obs_scale
                if self.standard_normal
                else x * self.obs_scale + self.obs_loc
            )
        if self.has_clip:
            x = x.clamp(self.clip_low, self.clip_high)
        return self.mlp(x)

    def loc_of(self, out: torch.Tensor) -> torch.Tensor:
        loc = out[..., : self.n_actions]
        if self.tanh_loc:
            loc = (loc / self.upscale).tanh() * self.upscale
            if self.affine:
                loc = loc + (self.high - self.low) / 2 + self.low
        return loc

    def squash(self, z: torch.Tensor) -> torch.Tensor:
        y = z.tanh().clamp(-self.lim, self.lim)
        if self.affine:
            y = (self.high + self.low) / 2 + (self.high - self.low) / 2 * y
        return y

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        out = self.features(obs)
        if self.qvalue:
            return out.argmax(dim=-1)
        return self.squash(self.loc_of(out))
