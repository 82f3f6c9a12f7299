"""skrl policies as plain torch modules for ``zoo export``: the very network and action head ``act`` uses.

The module is a CPU copy of the rebuilt :class:`~zoo.frameworks.skrl.modules.SkrlNetwork` (scaler,
layers, output expression) followed by the deterministic :class:`~zoo.frameworks.skrl.modules.ActionHead`
(argmax of the logits, or the mean clamped where skrl clamps it). A recurrent policy exports the
stateless ``forward(obs, h, c) -> (actions, h, c)``; the exporter adds the state handling per format.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from zoo.exporter.obs import obs_layout
from zoo.frameworks.skrl.modules import SkrlActor, SkrlRecurrentActor
from zoo.policy import ExportSpec, RecurrentSpec

if TYPE_CHECKING:
    from zoo.frameworks.skrl.policy import SkrlPolicy

_OUTPUT = {
    "gaussian": "Gaussian mean",
    "multivariate_gaussian": "multivariate Gaussian mean",
    "deterministic": "deterministic actor output",
    "categorical": "argmax of the categorical logits (int64)",
}


def _normalization(network) -> dict | None:
    if not network.has_scaler:
        return None
    return {
        "kind": "skrl_running_standard_scaler",
        "formula": "clamp((x - mean) / (sqrt(var) + epsilon), -clip_threshold, clip_threshold)",
        "epsilon": network.scaler.epsilon,
        "clip_threshold": network.scaler.clip_threshold,
    }


def export_spec(policy: SkrlPolicy) -> ExportSpec:
    """The :class:`~zoo.policy.ExportSpec` of ``policy``; the live policy is left untouched."""
    network = copy.deepcopy(policy.network).cpu().eval()
    head = copy.deepcopy(policy.head).cpu().eval()
    module = (SkrlRecurrentActor if policy.is_recurrent else SkrlActor)(network, head)
    obs_shape, groups = obs_layout(policy.observation_space, "policy")
    spec = policy.spec
    baked = ["RunningStandardScaler observation normalization"] if network.has_scaler else []
    recurrent = None
    if network.rnn is not None:
        rnn_type = "lstm" if network.is_lstm else "gru"
        recurrent = RecurrentSpec(rnn_type, int(network.rnn.num_layers), int(network.rnn.hidden_size))
        baked.append(f"{rnn_type.upper()} x{recurrent.num_layers} (hidden {recurrent.hidden_dim})")
    if spec.output:
        baked.append("output " + " ".join(f"{op} {arg}" for op, arg in spec.output))
    baked.append(_OUTPUT[spec.kind])
    left = []
    if head.clamp:
        baked.append(f"clamp to the action bounds [{head.low.tolist()}, {head.high.tolist()}]")
    elif spec.kind != "categorical":
        left.append(
            "skrl passes actions to the env unclipped; the env applies its own action scaling and clipping"
        )
    if recurrent is not None:
        left.append("zero the state of an env at the start of its episode")
    return ExportSpec(
        module,
        obs_shape,
        groups,
        _normalization(network),
        baked=baked,
        left_to_caller=left,
        recurrent=recurrent,
    )
