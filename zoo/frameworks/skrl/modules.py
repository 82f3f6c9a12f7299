"""skrl policy networks rebuilt in plain torch, computed the way skrl 2.x computes them.

- ``RunningStandardScaler`` on the flat observation (skrl's env wrappers flatten observations):
  ``clamp((x - mean.float()) / (sqrt(var.float()) + epsilon), -clip, clip)`` (skrl's defaults
  ``epsilon=1e-8``, ``clip_threshold=5``);
- conv networks read the observation in its space's shape again (skrl's instantiated models
  ``unflatten_tensorized_space`` it), ``permute``\\ d when the config says so;
- a recurrent core (GRU/LSTM) steps once per call on the scaled observation, as skrl's RNN
  models do in rollout (``(N, 1, features)``; zoo's ``(1, N, features)`` is the same computation);
- every declared layer followed by its activation, the output layer by the output expression.

The module maps raw observations ``(batch, *obs_shape)`` to the network output (Gaussian mean,
logits, deterministic output); :mod:`zoo.frameworks.skrl.policy` turns that into actions.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from zoo.frameworks.skrl.architecture import Architecture, Layer
from zoo.frameworks.skrl.checkpoint import Normalizer
from zoo.frameworks.skrl.config import PolicySpec, ScalerSpec

FUNCTIONS = {
    "elu": nn.functional.elu,
    "relu": nn.functional.relu,
    "leaky_relu": nn.functional.leaky_relu,
    "selu": nn.functional.selu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "softplus": nn.functional.softplus,
    "softsign": nn.functional.softsign,
}


def _module(layer: Layer) -> nn.Module:
    if layer.kind == "flatten":
        return nn.Flatten()
    if layer.kind == "linear":
        return nn.Linear(layer.in_size, layer.out_size, bias=layer.bias)
    return nn.Conv2d(
        layer.in_size,
        layer.out_size,
        layer.shape[2:],
        stride=layer.stride,
        padding=layer.padding,
        bias=layer.bias,
    )


class SkrlNetwork(nn.Module):
    """Scaler, layers, output expression; ``step`` adds the recurrent core's state."""

    def __init__(
        self,
        arch: Architecture,
        spec: PolicySpec,
        norm: Normalizer | None,
        scaler: ScalerSpec,
        obs_shape: tuple[int, ...],
    ):
        super().__init__()
        self.scaler = scaler  # the constants normalize() uses, for the export sidecar
        self.has_scaler = norm is not None
        if norm is not None:
            self.register_buffer("running_mean", norm.state["running_mean"].clone().to(torch.float64))
            self.register_buffer("running_variance", norm.state["running_variance"].clone().to(torch.float64))
        self.image_shape = list(obs_shape) if arch.convolutional else None
        self.permute = list(arch.permute) if arch.permute else None
        self.layers = nn.ModuleList(_module(layer) for layer in arch.layers)
        self.activations = [layer.activation for layer in arch.layers]
        self.output = list(spec.output)
        self.rnn: nn.Module | None = None
        self.is_lstm = arch.rnn is not None and arch.rnn.rnn_type == "lstm"
        if arch.rnn is not None:
            core = nn.LSTM if self.is_lstm else nn.GRU
            self.rnn = core(
                arch.rnn.input_size, arch.rnn.hidden_size, arch.rnn.num_layers, bias=arch.rnn.bias
            )

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        if not self.has_scaler:
            return x
        std = torch.sqrt(self.running_variance.float()) + self.scaler.epsilon
        threshold = self.scaler.clip_threshold
        return torch.clamp((x - self.running_mean.float()) / std, -threshold, threshold)

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """Raw observations to the first layer's input."""
        x = self.normalize(obs.flatten(1))
        if self.image_shape is not None:
            x = x.reshape([-1, *self.image_shape])
            if self.permute is not None:
                x = x.permute(self.permute)
        return x

    def head(self, x: torch.Tensor) -> torch.Tensor:
        for layer, name in zip(self.layers, self.activations, strict=True):
            x = layer(x)
            if name is not None:
                x = FUNCTIONS[name](x)
        for op, arg in self.output:
            x = FUNCTIONS[arg](x) if op == "act" else x * arg
        return x

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.encode(obs))

    def step(
        self, obs: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One recurrent step; states are ``(num_layers, batch, hidden)``, ``c`` passes a GRU unchanged."""
        x = self.encode(obs).unsqueeze(0)
        if self.is_lstm:
            out, (h, c) = self.rnn(x, (h, c))
        else:
            out, h = self.rnn(x, h)
        return self.head(out.squeeze(0)), h, c


def build_network(
    policy_state: Mapping,
    arch: Architecture,
    spec: PolicySpec,
    norm: Normalizer | None,
    scaler: ScalerSpec,
    obs_shape: tuple[int, ...],
) -> SkrlNetwork:
    """A :class:`SkrlNetwork` with the checkpoint's weights, in eval mode."""
    network = SkrlNetwork(arch, spec, norm, scaler, obs_shape)
    with torch.no_grad():
        for module, layer in zip(network.layers, arch.layers, strict=True):
            if layer.kind == "flatten":
                continue
            module.weight.copy_(policy_state[f"{layer.prefix}.weight"])
            if layer.bias:
                module.bias.copy_(policy_state[f"{layer.prefix}.bias"])
        if arch.rnn is not None:
            prefix = arch.rnn.prefix + "."
            network.rnn.load_state_dict(
                {k[len(prefix) :]: v for k, v in policy_state.items() if k.startswith(prefix)}
            )
    for param in network.parameters():
        param.requires_grad_(False)
    return network.eval()


class ActionHead(nn.Module):
    """skrl's deterministic eval action from the network output, in the env's action shape.

    ``CategoricalMixin``: the argmax of the logits (int64). Otherwise the mean (Gaussian mixins) or
    the output (``DeterministicMixin``), clamped to the action bounds when ``low``/``high`` are given.
    """

    def __init__(
        self,
        categorical: bool,
        low: torch.Tensor | None,
        high: torch.Tensor | None,
        action_shape: tuple[int, ...],
    ):
        super().__init__()
        self.categorical = categorical
        self.clamp = low is not None
        self.action_shape = list(action_shape)
        self.register_buffer("low", low if low is not None else torch.zeros(0))
        self.register_buffer("high", high if high is not None else torch.zeros(0))

    def forward(self, out: torch.Tensor) -> torch.Tensor:
        if self.categorical:
            return out.argmax(dim=1)
        if self.clamp:
            out = torch.clamp(out, min=self.low, max=self.high)
        return out.reshape([-1, *self.action_shape])


class SkrlActor(nn.Module):
    """Raw observations to deterministic actions: what ``zoo export`` writes for feed-forward policies."""

    def __init__(self, network: SkrlNetwork, head: ActionHead):
        super().__init__()
        self.network = network
        self.head = head

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.network(obs))


class SkrlRecurrentActor(SkrlActor):
    """The stateless recurrent form ``zoo export`` expects: ``forward(obs, h, c) -> (actions, h, c)``."""

    def forward(
        self, obs: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        out, h, c = self.network.step(obs, h, c)
        return self.head(out), h, c
