"""rsl_rl actors as plain torch modules for ``zoo export``.

The exported module is a copy of the actor's own pieces: its observation normalizer (the checkpoint's
``EmpiricalNormalization``, or ``Identity``), the RNN (``nn.LSTM``/``nn.GRU``, without rsl_rl's
stateful wrapper), the MLP and the distribution's deterministic output module, then the run's
``clip_actions`` clamp. It computes exactly :meth:`RslRlPolicy.act` with ``deterministic=True``.

Unlike rsl_rl's own ``as_jit``/``as_onnx`` (which keep the hidden state in a ``(layers, 1, hidden)``
buffer, so batch 1 only), the recurrent module is stateless: ``forward(obs, h, c) -> (actions, h, c)``
with states ``(num_layers, batch, hidden)``; the exporter adds the state handling per format.
Nothing in ``forward`` reads a shape or branches on data, so traces and ONNX graphs keep the batch free.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from zoo.exporter.obs import obs_layout
from zoo.policy import ExportSpec, RecurrentSpec


class _ActorHead(nn.Module):
    """Shared by both exported actors: normalizer in front, MLP, deterministic output and clamp behind."""

    def __init__(self, model, clip_actions: float | None, flatten: bool):
        super().__init__()
        self.obs_normalizer = copy.deepcopy(model.obs_normalizer)
        self.mlp = copy.deepcopy(model.mlp)
        dist = model.distribution
        self.deterministic_output = (
            dist.as_deterministic_output_module() if dist is not None else nn.Identity()
        )
        self.clip_actions = None if clip_actions is None else float(clip_actions)
        self.flatten = flatten

    def normalize(self, obs: torch.Tensor) -> torch.Tensor:
        return self.obs_normalizer(obs.flatten(1) if self.flatten else obs)

    def actions(self, latent: torch.Tensor) -> torch.Tensor:
        actions = self.deterministic_output(self.mlp(latent))
        if self.clip_actions is not None:
            actions = actions.clamp(-self.clip_actions, self.clip_actions)
        return actions


class RslRlActor(_ActorHead):
    """An ``MLPModel`` actor: ``forward(obs) -> actions``."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actions(self.normalize(obs))


class RslRlRecurrentActor(_ActorHead):
    """An ``RNNModel`` actor, stateless: ``forward(obs, h, c) -> (actions, h, c)``; a GRU passes ``c`` through."""

    def __init__(self, model, clip_actions: float | None, flatten: bool):
        super().__init__(model, clip_actions, flatten)
        self.rnn = copy.deepcopy(model.rnn.rnn)
        self.is_lstm = isinstance(self.rnn, nn.LSTM)

    def forward(
        self, obs: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = self.normalize(obs).unsqueeze(0)  # one time step: (1, batch, obs_dim)
        if self.is_lstm:
            out, (h, c) = self.rnn(x, (h, c))
        else:
            out, h = self.rnn(x, h)
        return self.actions(out.squeeze(0)), h, c


def _normalization(normalizer: nn.Module) -> dict | None:
    if isinstance(normalizer, nn.Identity):
        return None
    if all(hasattr(normalizer, name) for name in ("_mean", "_std", "eps")):
        return {
            "kind": "rsl_rl_empirical",
            "formula": "(x - mean) / (std + eps)",
            "eps": float(normalizer.eps),
        }
    return {
        "kind": f"rsl_rl {type(normalizer).__name__}",
        "formula": "the checkpoint normalizer's own forward",
    }


def _output_phrase(distribution) -> str:
    if distribution is None:
        return "MLP output as is (no distribution)"
    name = type(distribution).__name__
    if name == "HeteroscedasticGaussianDistribution":
        return "Gaussian mean (the mean half of the MLP output)"
    if name == "BetaDistribution":
        low, high = distribution.action_range
        return f"Beta mean rescaled to [{low:g}, {high:g}]"
    return "Gaussian mean" if "Gaussian" in name else f"{name} deterministic output"


def export_spec(model, observation_space: Any, clip_actions: float | None, is_recurrent: bool) -> ExportSpec:
    """The :class:`~zoo.policy.ExportSpec` of an rsl_rl actor ``model``; the live model is left untouched."""
    group = "+".join(model.obs_groups)
    obs_shape, obs_groups = obs_layout(observation_space, group)
    flatten = len(obs_shape) != 1
    recurrent = None
    if is_recurrent:
        module: nn.Module = RslRlRecurrentActor(model, clip_actions, flatten)
        rnn = module.rnn
        recurrent = RecurrentSpec(
            "lstm" if module.is_lstm else "gru", int(rnn.num_layers), int(rnn.hidden_size)
        )
    else:
        module = RslRlActor(model, clip_actions, flatten)
    module = module.cpu().eval()
    for param in module.parameters():
        param.requires_grad_(False)

    normalization = _normalization(module.obs_normalizer)
    baked = (
        ["EmpiricalNormalization"] if normalization and normalization["kind"] == "rsl_rl_empirical" else []
    )
    if normalization and not baked:
        baked.append(type(module.obs_normalizer).__name__)
    if recurrent is not None:
        baked.append(f"{recurrent.rnn_type.upper()} x{recurrent.num_layers} (hidden {recurrent.hidden_dim})")
    baked.append(_output_phrase(model.distribution))
    left = [f"feed the raw, unnormalized {group!r} observation group as the env builds it"]
    if clip_actions is None:
        left.append("rsl_rl hands actions to the env unclipped; "
                    "the env (Isaac Lab action terms) applies its own scaling/clipping")  # fmt: skip
    else:
        baked.append(f"clip actions to +-{float(clip_actions):g}")
        left.append("the env (Isaac Lab action terms) applies its own action scaling")
    if recurrent is not None:
        left.append("zero the state of an env at the start of its episode")
    return ExportSpec(
        module=module, obs_shape=obs_shape, obs_groups=obs_groups, normalization=normalization,
        baked=baked, left_to_caller=left, recurrent=recurrent,
    )  # fmt: skip
