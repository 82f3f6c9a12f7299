"""rsl_rl actors as plain torch modules for ``zoo export``.

The exported module is a copy of the actor's own pieces: its observation normalizer (the checkpoint's
``EmpiricalNormalization``, or ``Identity``), a CNN actor's image encoders, the RNN (``nn.LSTM``/``nn.GRU``,
without rsl_rl's stateful wrapper), the MLP and the distribution's deterministic output module, then the
run's ``clip_actions`` clamp. It computes exactly :meth:`RslRlPolicy.act` with ``deterministic=True``.
Its input is zoo's flat observation (a Dict's keys flattened one after the other, see
:mod:`zoo.exporter.obs`); it slices the model's observation groups back out of it.

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
from zoo.frameworks.rsl_rl.obs import ObsLayout
from zoo.policy import ExportSpec, RecurrentSpec


def _slices(layout: ObsLayout, obs_groups: dict[str, dict], names) -> list[tuple[int, int, list[int]]]:
    """``(start, dim, shape)`` of each named group in the flat exported input."""
    if not layout.from_dict:
        ((_, group),) = obs_groups.items()
        return [(0, group["dim"], [*shape]) for _, shape in names]
    return [(obs_groups[name]["start"], obs_groups[name]["dim"], [*shape]) for name, shape in names]


class _ActorHead(nn.Module):
    """Shared by the exported actors: the model's latent from the flat input, its MLP, deterministic output
    and clamp.

    The latent is rsl_rl's: the 1-D groups concatenated in the model's order and normalized, then each
    image group through its CNN, all concatenated (``MLPModel``/``CNNModel.get_latent``).
    """

    def __init__(self, model, layout: ObsLayout, obs_groups: dict[str, dict], clip_actions: float | None):
        super().__init__()
        self.vector_slices = _slices(layout, obs_groups, layout.vectors)
        self.image_slices = _slices(layout, obs_groups, layout.images)
        self.obs_normalizer = copy.deepcopy(model.obs_normalizer)
        self.cnns = nn.ModuleList([copy.deepcopy(model.cnns[name]) for name, _ in layout.images])
        self.mlp = copy.deepcopy(model.mlp)
        dist = model.distribution
        self.deterministic_output = (
            dist.as_deterministic_output_module() if dist is not None else nn.Identity()
        )
        self.clip_actions = None if clip_actions is None else float(clip_actions)

    def latent(self, obs: torch.Tensor) -> torch.Tensor:
        flat = obs.flatten(1)
        parts = []
        if self.vector_slices:
            vector = torch.cat([flat[:, start : start + dim] for start, dim, _ in self.vector_slices], dim=-1)
            parts.append(self.obs_normalizer(vector))
        for cnn, (start, dim, shape) in zip(self.cnns, self.image_slices, strict=True):
            parts.append(cnn(flat[:, start : start + dim].reshape([-1, *shape])))
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)

    def actions(self, latent: torch.Tensor) -> torch.Tensor:
        actions = self.deterministic_output(self.mlp(latent))
        if self.clip_actions is not None:
            actions = actions.clamp(-self.clip_actions, self.clip_actions)
        return actions


class RslRlActor(_ActorHead):
    """An ``MLPModel`` or ``CNNModel`` actor: ``forward(obs) -> actions``."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actions(self.latent(obs))


class RslRlRecurrentActor(_ActorHead):
    """An ``RNNModel`` actor, stateless: ``forward(obs, h, c) -> (actions, h, c)``; a GRU passes ``c`` through."""

    def __init__(self, model, layout: ObsLayout, obs_groups: dict[str, dict], clip_actions: float | None):
        super().__init__(model, layout, obs_groups, clip_actions)
        self.rnn = copy.deepcopy(model.rnn.rnn)
        self.is_lstm = isinstance(self.rnn, nn.LSTM)

    def forward(
        self, obs: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = self.latent(obs).unsqueeze(0)  # one time step: (1, batch, obs_dim)
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


def export_spec(
    model, observation_space: Any, layout: ObsLayout, clip_actions: float | None, is_recurrent: bool
) -> ExportSpec:
    """The :class:`~zoo.policy.ExportSpec` of an rsl_rl actor ``model``; the live model is left untouched."""
    group = "+".join(name for name, _ in layout.groups)
    obs_shape, obs_groups = obs_layout(observation_space, group)
    recurrent = None
    if is_recurrent:
        module: nn.Module = RslRlRecurrentActor(model, layout, obs_groups, clip_actions)
        rnn = module.rnn
        recurrent = RecurrentSpec(
            "lstm" if module.is_lstm else "gru", int(rnn.num_layers), int(rnn.hidden_size)
        )
    else:
        module = RslRlActor(model, layout, obs_groups, clip_actions)
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
    if layout.images:
        baked.append(f"a CNN per image group ({', '.join(name for name, _ in layout.images)})")
    baked.append(_output_phrase(model.distribution))
    if layout.from_dict:
        what = f"observation groups {list(obs_groups)}, flattened one after the other in that order"
    else:
        what = f"{group!r} observation group as the env builds it"
    left = [f"feed the raw, unnormalized {what}"]
    if clip_actions is None:
        left.append(
            "rsl_rl hands actions to the env unclipped; "
            "the env (Isaac Lab action terms) applies its own scaling/clipping"
        )
    else:
        baked.append(f"clip actions to +-{float(clip_actions):g}")
        left.append("the env (Isaac Lab action terms) applies its own action scaling")
    if recurrent is not None:
        left.append("zero the state of an env at the start of its episode")
    return ExportSpec(
        module=module,
        obs_shape=obs_shape,
        obs_groups=obs_groups,
        normalization=normalization,
        baked=baked,
        left_to_caller=left,
        recurrent=recurrent,
    )
