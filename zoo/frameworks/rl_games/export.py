"""rl_games policies as plain torch modules for ``zoo export``: the very actor ``act`` uses, on a CPU copy.

The module takes raw observations and returns the env's actions: Isaac Lab's observation clamp when the config
sets one, rl_games' ``RunningMeanStd`` (the checkpoint's statistics as float32, eps 1e-5, clamp +-5), the MLP, then
the argmax of the logits (int64) or ``mu`` clamped to [-1, 1] and rescaled to the action bounds (the player's
``clip_actions``).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from zoo.exporter.obs import obs_layout
from zoo.frameworks.rl_games.layout import CLAMP, EPSILON
from zoo.policy import ExportSpec

if TYPE_CHECKING:
    from zoo.frameworks.rl_games.policy import RlGamesPolicy


def export_spec(policy: RlGamesPolicy) -> ExportSpec:
    """The :class:`~zoo.policy.ExportSpec` of ``policy``; the live policy is left untouched."""
    module = copy.deepcopy(policy.actor).cpu().eval()
    for param in module.parameters():
        param.requires_grad_(False)
    obs_shape, groups = obs_layout(policy.observation_space, "obs")
    baked, left = [], []
    if module.clip_observations is not None:
        baked.append(f"clamp observations to +-{module.clip_observations:g} (Isaac Lab's wrapper)")
    normalization = None
    if module.normalize:
        baked.append("RunningMeanStd observation normalization")
        normalization = {
            "kind": "rl_games_running_mean_std",
            "formula": "clamp((x - mean) / sqrt(var + epsilon), -5, 5)",
            "epsilon": EPSILON,
            "clip": CLAMP,
        }
    if module.discrete:
        baked.append("argmax of the logits (int64)")
    else:
        baked.append(
            "mu" if type(module.mu_act).__name__ == "Identity" else f"{type(module.mu_act).__name__}(mu)"
        )
        if module.rescale:
            baked.append(
                f"clamp to [-1, 1], rescaled to the action bounds [{module.low.tolist()}, {module.high.tolist()}]"
            )
        else:
            left.append("rl_games hands mu to the env unclipped (clip_actions: False); the env clips")
    return ExportSpec(module, obs_shape, groups, normalization, baked=baked, left_to_caller=left)
