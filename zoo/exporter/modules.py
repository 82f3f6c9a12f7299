"""Small torch modules the exporter and the adapters wrap around a policy network.

``StatefulRecurrent`` is what makes a recurrent TorchScript export usable with any batch size:
rsl_rl's and Isaac Lab's own exporters keep a ``(num_layers, 1, hidden)`` state buffer, which fixes
the batch at 1. Here the state is (re)created at the batch size of the first call after a reset,
and ``reset_envs(mask)`` zeroes single envs, as a vectorized deployment needs.
"""

from __future__ import annotations

import torch
from torch import nn


class ArgmaxActions(nn.Module):
    """``argmax(q(x))`` as int64 indices: the greedy action of a Q-network."""

    def __init__(self, q_network: nn.Module):
        super().__init__()
        self.q_network = q_network

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.q_network(x).argmax(dim=1)


class ClampedActions(nn.Module):
    """``clamp(net(x.flatten(1)), low, high)`` reshaped to the action shape; no clamp when bounds are None."""

    def __init__(
        self,
        net: nn.Module,
        low: torch.Tensor | None,
        high: torch.Tensor | None,
        action_shape: tuple[int, ...],
    ):
        super().__init__()
        self.net = net
        self.clamp = low is not None
        self.action_shape = list(action_shape)
        self.register_buffer("low", low if low is not None else torch.zeros(0))
        self.register_buffer("high", high if high is not None else torch.zeros(0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x.flatten(1))
        if self.clamp:
            out = torch.clamp(out, min=self.low, max=self.high)
        return out.reshape([-1, *self.action_shape])


class GruOnly(nn.Module):
    """A GRU core's ONNX signature: ``(obs, h) -> (actions, h)`` (the shared core also takes a ``c``)."""

    def __init__(self, core: nn.Module):
        super().__init__()
        self.core = core

    def forward(self, obs: torch.Tensor, h: torch.Tensor):
        actions, h_out, _ = self.core(obs, h, h)
        return actions, h_out


class StatefulRecurrent(nn.Module):
    """A traced ``core(obs, h, c) -> (actions, h, c)`` holding its state inside (TorchScript export).

    ``forward(obs)`` starts from zeros whenever the batch size changes; ``reset()`` zeroes all envs,
    ``reset_envs(mask)`` only those whose episode ended.
    """

    def __init__(self, core: nn.Module, num_layers: int, hidden_dim: int):
        super().__init__()
        self.core = core
        self.num_layers = num_layers
        self.hidden_dim = hidden_dim
        self.h = torch.zeros(num_layers, 0, hidden_dim)
        self.c = torch.zeros(num_layers, 0, hidden_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if self.h.size(1) != obs.size(0):
            # float32 whatever the input's dtype: a leaderboard agent takes uint8 frames and float64 vectors
            self.h = torch.zeros(self.num_layers, obs.size(0), self.hidden_dim)
            self.c = torch.zeros(self.num_layers, obs.size(0), self.hidden_dim)
        with (
            torch.no_grad()
        ):  # whatever the caller's grad mode: its actions take .numpy(), its LSTM one kernel
            actions, h, c = self.core(obs, self.h, self.c)
        self.h = h
        self.c = c
        return actions

    @torch.jit.export
    def reset(self) -> None:
        """Forget the state of every env (the next call starts from zeros)."""
        self.h = torch.zeros(self.num_layers, 0, self.hidden_dim)
        self.c = torch.zeros(self.num_layers, 0, self.hidden_dim)

    @torch.jit.export
    def reset_envs(self, done: torch.Tensor) -> None:
        """Zero the state of the envs where ``done`` (bool, ``(batch,)``) is true."""
        if self.h.size(1) == done.size(0):
            keep = (~done).to(self.h.dtype).view(1, -1, 1)
            self.h = self.h * keep
            self.c = self.c * keep


class ObsTermsFirst(nn.Module):
    """``net(clip(x * scale, -clip, clip), *state)``: the task's observation terms applied to raw input."""

    def __init__(self, net: nn.Module, scale: torch.Tensor, clip: torch.Tensor):
        super().__init__()
        self.net = net
        self.register_buffer("scale", scale)
        self.register_buffer("clip", clip)

    def forward(self, x: torch.Tensor, *state: torch.Tensor):
        scaled = x.flatten(1) * self.scale
        terms = torch.minimum(torch.maximum(scaled, -self.clip), self.clip).reshape(x.shape)
        return self.net(terms, *state)
