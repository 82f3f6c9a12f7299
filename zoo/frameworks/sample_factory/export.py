"""Sample Factory actors as plain torch modules for ``zoo export``.

The exported module is a copy of :class:`~zoo.frameworks.sample_factory.policy.SfActor`, the very module zoo's
policy acts with: the observation normalizer baked in (its float32 mean and reciprocal standard deviation as
buffers), the encoder, the GRU/LSTM core (stateless: ``forward(obs, h, c) -> (actions, h, c)``, states
``(num_layers, batch, hidden)``; the exporter adds the state handling per format), the decoder, the action head and
``argmax_actions``. Nothing in ``forward`` reads a shape or branches on data, so the batch stays free.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from zoo.exporter.obs import obs_layout
from zoo.frameworks.sample_factory.checkpoint import NORM_CLIP, NORM_EPS
from zoo.policy import ExportSpec, RecurrentSpec

if TYPE_CHECKING:
    from zoo.frameworks.sample_factory.policy import SfActor


def export_spec(actor: SfActor, observation_space: Any) -> ExportSpec:
    """The :class:`~zoo.policy.ExportSpec` of ``actor``; the live actor is left untouched."""
    module = copy.deepcopy(actor).cpu().eval()
    for param in module.parameters():
        param.requires_grad_(False)
    obs_shape, obs_groups = obs_layout(observation_space, "obs")
    baked, normalization = [], None
    if module.sub_mean is not None or module.scale is not None:
        baked.append("obs_subtract_mean / obs_scale")
    if module.normalized:
        normalization = {
            "kind": "sample_factory_running_mean_std",
            "formula": "clamp((x - mean) * (1 / sqrt(var + eps)), -clip, clip)",
            "eps": NORM_EPS,
            "clip": NORM_CLIP,
        }
        baked.append("RunningMeanStdInPlace observation normalization")
    recurrent = None
    if module.recurrent:
        core = module.core
        recurrent = RecurrentSpec(
            "lstm" if module.is_lstm else "gru", int(core.num_layers), int(core.hidden_size)
        )
        baked.append(f"{recurrent.rnn_type.upper()} x{recurrent.num_layers} (hidden {recurrent.hidden_dim})")
    if module.discrete:
        baked.append("argmax of the action probabilities")
    else:
        baked.append(
            "Gaussian means" + (f", tanh-scaled to +-{module.tanh_scale:g}" if module.tanh_scale > 0 else "")
        )
    left = ["feed the raw, unnormalized observation the env gives"]
    if not module.discrete:
        left.append(
            "Sample Factory hands the means to the env unclipped; the env clips or rescales them itself"
        )
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
