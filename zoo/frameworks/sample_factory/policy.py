"""Sample Factory's actor in plain torch, and the zoo policy over it.

:class:`SfActor` computes what Sample Factory's ``enjoy --eval_deterministic=True`` sends to the env, in the same
operations and order, so the actions are bit for bit Sample Factory's:

- ``ObservationNormalizer``: ``x - obs_subtract_mean`` and ``x * (1 / obs_scale)`` when set, then
  ``RunningMeanStdInPlace``: ``clamp((x - mean) * (1 / sqrt(var + 1e-5)), -5, 5)`` (float64 statistics cast to
  float32; it multiplies by the reciprocal, as Sample Factory does);
- the MLP encoder (Linear then the nonlinearity, per layer), the GRU/LSTM core (``nn.GRU``/``nn.LSTM``, one step),
  the MLP decoder, ``distribution_linear``;
- ``argmax_actions``: discrete, ``argmax(softmax(logits))``; continuous, the Gaussian means (the first half of the
  head's output, or the head itself with a learned log-std, then ``tanh(m / s) * s`` when
  ``continuous_tanh_scale`` is set). Sample Factory neither clips nor rescales actions: the env gets the means.

It is also the exported module (``zoo export``): ``forward(obs) -> actions``, or, with a core,
``forward(obs, h, c) -> (actions, h, c)`` with states ``(num_layers, batch, hidden)`` (a GRU passes ``c``
through). Sample Factory packs the same states as one ``(batch, layers * hidden [* 2])`` tensor; the numbers are
the same.

Stochastic mode samples the distribution Sample Factory samples in training (``Categorical(logits)``, or
``Normal(mean, clamp(exp(log_std), 1e-4, 1e4))``) from a generator seeded at construction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from zoo.frameworks.sample_factory.checkpoint import (
    EPS,
    HEAD,
    NORM,
    NORM_CLIP,
    NORM_EPS,
    STDDEV,
    Architecture,
)
from zoo.frameworks.sample_factory.config import SfConfig

_ACTIVATIONS = {"elu": nn.ELU, "relu": nn.ReLU, "tanh": nn.Tanh}


def _mlp(sizes: tuple[int, ...], inputs: int, activation: str) -> nn.Module:
    layers: list[nn.Module] = []
    for size in sizes:
        layers += [nn.Linear(inputs, size), _ACTIVATIONS[activation]()]
        inputs = size
    return nn.Sequential(*layers) if layers else nn.Identity()


class SfActor(nn.Module):
    """The actor of ``ActorCriticSharedWeights`` (or of ``ActorCriticSeparateWeights``: its ``actor_*`` modules, whose
    half of Sample Factory's rnn state comes first), deterministic output included."""

    def __init__(self, arch: Architecture, config: SfConfig, state: Mapping[str, Any]):
        super().__init__()
        self.recurrent = arch.rnn_type is not None
        self.is_lstm = arch.rnn_type == "lstm"
        self.discrete = False  # set by the policy from the env's action space
        self.learned_stddev = arch.learned_stddev
        self.tanh_scale = float(arch.tanh_scale)
        self.head_out = arch.head_out
        self.sub_mean = float(config.obs_subtract_mean) if abs(config.obs_subtract_mean) > EPS else None
        self.scale = 1.0 / float(config.obs_scale) if abs(config.obs_scale - 1.0) > EPS else None
        self.normalized = arch.normalized
        mean = torch.zeros(arch.obs_dim)
        inv_std = torch.ones(arch.obs_dim)
        if arch.normalized:
            mean = state[f"{NORM}running_mean"].float()
            inv_std = 1 / torch.sqrt(state[f"{NORM}running_var"].float() + NORM_EPS)
        self.register_buffer("mean", mean.clone())
        self.register_buffer("inv_std", inv_std.clone())
        self.encoder = _mlp(arch.encoder, arch.obs_dim, arch.nonlinearity)
        self.encoder.load_state_dict(_strip(state, arch.prefixes.encoder), strict=True)
        features = arch.encoder[-1] if arch.encoder else arch.obs_dim
        self.core: nn.Module = nn.Identity()
        if self.recurrent:
            rnn = nn.LSTM if self.is_lstm else nn.GRU
            self.core = rnn(features, arch.rnn_size, arch.rnn_layers)
            self.core.load_state_dict(_strip(state, arch.prefixes.core), strict=True)
            features = arch.rnn_size
        self.decoder = _mlp(arch.decoder, features, arch.nonlinearity)
        self.decoder.load_state_dict(_strip(state, arch.prefixes.decoder), strict=True)
        self.head = nn.Linear(arch.decoder[-1] if arch.decoder else features, arch.head_out)
        self.head.load_state_dict(_strip(state, HEAD), strict=True)
        self.register_buffer("log_std", state[STDDEV].clone() if arch.learned_stddev else torch.zeros(0))

    def normalize(self, obs: torch.Tensor) -> torch.Tensor:
        x = obs.flatten(1)
        if self.sub_mean is not None:
            x = x - self.sub_mean
        if self.scale is not None:
            x = x * self.scale
        if self.normalized:
            x = ((x - self.mean) * self.inv_std).clamp(-NORM_CLIP, NORM_CLIP)
        return x

    def params(
        self, obs: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The action distribution's parameters (Sample Factory's ``action_distribution_params``), new states."""
        x = self.encoder(self.normalize(obs))
        if self.recurrent:
            if self.is_lstm:
                out, (h, c) = self.core(x.unsqueeze(0), (h, c))
            else:
                out, h = self.core(x.unsqueeze(0), h)
            x = out.squeeze(0)
        x = self.head(self.decoder(x))
        if self.learned_stddev:
            if self.tanh_scale > 0:
                x = torch.tanh(x / self.tanh_scale) * self.tanh_scale
            x = torch.cat((x, self.log_std.expand(x.shape[0], -1)), dim=1)
        return x, h, c

    def deterministic(self, params: torch.Tensor) -> torch.Tensor:
        """``argmax_actions``: the most probable action, or the Gaussian means."""
        if self.discrete:
            return torch.argmax(torch.softmax(params, dim=-1), dim=-1)
        return torch.chunk(params, 2, dim=1)[0]

    def forward(self, obs: torch.Tensor, h: torch.Tensor | None = None, c: torch.Tensor | None = None):
        if not self.recurrent:
            params, _, _ = self.params(obs, obs, obs)
            return self.deterministic(params)
        assert h is not None and c is not None
        params, h, c = self.params(obs, h, c)
        return self.deterministic(params), h, c


def _strip(state: Mapping[str, Any], prefix: str) -> dict[str, torch.Tensor]:
    return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}


class SfPolicy:
    """A :class:`zoo.policy.Policy` over :class:`SfActor`; the recurrent state lives here, one row per env."""

    def __init__(self, actor: SfActor, observation_space, action_space, device: str, seed: int):
        from gymnasium import spaces

        self.device = torch.device(device)
        actor.discrete = isinstance(action_space, spaces.Discrete)
        self.actor = actor.to(self.device).eval()
        for p in self.actor.parameters():
            p.requires_grad_(False)
        self.observation_space = observation_space
        self.action_space = action_space
        self.is_recurrent = actor.recurrent
        self._generator = torch.Generator(device=self.device).manual_seed(seed)
        self._h: torch.Tensor | None = None
        self._c: torch.Tensor | None = None

    def _states(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self._h is None or self._h.shape[1] != batch:
            core = self.actor.core
            shape = (core.num_layers, batch, core.hidden_size) if self.is_recurrent else (1, batch, 1)
            self._h = torch.zeros(shape, device=self.device)
            self._c = torch.zeros(shape, device=self.device)
        assert self._c is not None
        return self._h, self._c

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        obs = torch.as_tensor(np.asarray(obs_batch), dtype=torch.float32, device=self.device)
        with torch.inference_mode():
            h, c = self._states(obs.shape[0])
            params, h, c = self.actor.params(obs, h, c)
            if self.is_recurrent:
                self._h, self._c = h, c
            actions = self.actor.deterministic(params) if deterministic else self._sample(params)
        return actions.cpu().numpy(), state

    def _sample(self, params: torch.Tensor) -> torch.Tensor:
        if self.actor.discrete:
            probs = torch.softmax(params, dim=-1)
            return torch.multinomial(probs, 1, generator=self._generator).squeeze(1)
        mean, log_std = torch.chunk(params, 2, dim=1)
        std = log_std.exp().clamp(1e-4, 1e4)
        return mean + std * torch.randn(mean.shape, generator=self._generator, device=self.device)

    def reset(self, done_mask: np.ndarray) -> None:
        """Zero the core's state of the envs whose episode ended (Sample Factory zeroes a done agent's state)."""
        if not self.is_recurrent or self._h is None:
            return
        mask = torch.as_tensor(np.asarray(done_mask, dtype=bool), device=self.device)
        if mask.shape[0] != self._h.shape[1]:
            return
        assert self._c is not None
        with torch.inference_mode():  # the states were made there
            self._h[:, mask] = 0.0
            self._c[:, mask] = 0.0

    def export_spec(self):
        """The actor as a plain CPU module for ``zoo export`` (see :mod:`.export`)."""
        from zoo.frameworks.sample_factory.export import export_spec

        return export_spec(self.actor, self.observation_space)
