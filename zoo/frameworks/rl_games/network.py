"""rl_games' ``actor_critic`` actor rebuilt in plain torch from the model :mod:`.layout` reads.

The actor computes what the player's ``get_action(obs, is_deterministic=True)`` does, op for op (so that discrete
actions are equal and continuous ones equal to the float): ``RunningMeanStd`` in eval,
``clamp((x - mean.float()) / sqrt(var.float() + 1e-5), -5, 5)``; the MLP; argmax of the logits, or
``mu_act(mu)`` and, with ``clip_actions`` (the player's default), ``rescale_actions(low, high, clamp(mu, -1, 1))``
= ``clamp(mu, -1, 1) * (high - low) / 2 + (high + low) / 2``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from zoo.frameworks.rl_games.layout import CLAMP, EPSILON, NET, NORM, Architecture


def activation(name: str) -> nn.Module:
    """rl_games' ``ActivationsFactory``: the same torch modules for the same names."""
    table = {
        "relu": nn.ReLU,
        "tanh": nn.Tanh,
        "sigmoid": nn.Sigmoid,
        "elu": nn.ELU,
        "selu": nn.SELU,
        "swish": nn.SiLU,
        "gelu": nn.GELU,
        "softplus": nn.Softplus,
    }
    return table[name]() if name in table else nn.Identity()


class RlGamesActor(nn.Module):
    """``forward(obs) -> actions``: the player's deterministic action from raw observations (see the module)."""

    def __init__(
        self,
        arch: Architecture,
        act: str,
        mu_act: str,
        *,
        clip_observations: float | None,
        bounds: tuple[Any, Any] | None,
    ):
        super().__init__()
        layers: list[nn.Module] = []
        size = arch.obs_dim
        for units in arch.hidden:
            layers += [nn.Linear(size, units), activation(act)]
            size = units
        self.actor_mlp = nn.Sequential(*layers)
        self.head = nn.Linear(size, arch.actions)
        self.mu_act = nn.Identity() if arch.discrete else activation(mu_act)
        self.discrete = arch.discrete
        self.normalize = arch.normalize_input
        self.register_buffer("mean", torch.zeros(arch.obs_dim))
        self.register_buffer("var", torch.ones(arch.obs_dim))
        self.clip_observations = clip_observations
        self.rescale = bounds is not None
        low, high = bounds if bounds is not None else (torch.zeros(1), torch.zeros(1))
        self.register_buffer("low", torch.as_tensor(low, dtype=torch.float32).reshape(-1))
        self.register_buffer("high", torch.as_tensor(high, dtype=torch.float32).reshape(-1))

    def load(self, state: Mapping[str, Any]) -> None:
        """The checkpoint's actor weights and normalizer (float64 statistics taken as ``.float()``, as rl_games)."""
        mlp = {
            f"{i}.{p}": state[f"{NET}actor_mlp.{i}.{p}"]
            for i in range(0, len(self.actor_mlp), 2)
            for p in ("weight", "bias")
        }
        self.actor_mlp.load_state_dict(mlp)
        head = "logits" if self.discrete else "mu"
        self.head.load_state_dict({p: state[f"{NET}{head}.{p}"] for p in ("weight", "bias")})
        if self.normalize:
            self.mean.copy_(state[NORM[0]].float())
            self.var.copy_(state[NORM[1]].float())

    def inputs(self, obs: torch.Tensor) -> torch.Tensor:
        """The MLP's input: Isaac Lab's observation clamp (when the config sets one), then the normalizer."""
        x = obs.to(torch.float32).flatten(1)
        if self.clip_observations is not None:
            x = torch.clamp(x, -self.clip_observations, self.clip_observations)
        if self.normalize:
            x = torch.clamp((x - self.mean) / torch.sqrt(self.var + EPSILON), min=-CLAMP, max=CLAMP)
        return x

    def logits_or_mu(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mu_act(self.head(self.actor_mlp(self.inputs(obs))))

    def finish(self, out: torch.Tensor) -> torch.Tensor:
        """The action from logits or mu: argmax, or mu clamped to [-1, 1] and rescaled to the bounds."""
        if self.discrete:
            return torch.argmax(out, dim=-1)
        if not self.rescale:
            return out
        d = (self.high - self.low) / 2.0
        m = (self.high + self.low) / 2.0
        return torch.clamp(out, -1.0, 1.0) * d + m

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.finish(self.logits_or_mu(obs))
