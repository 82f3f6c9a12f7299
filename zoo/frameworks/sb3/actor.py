"""The pieces of an SB3 policy's forward pass that zoo calls directly, shared by eval and export.

:func:`lstm_actor_step` is RecurrentPPO's acting path for one step, which both
:class:`~zoo.frameworks.sb3.recurrent.SB3RecurrentPolicy` (each eval step) and
:class:`~zoo.frameworks.sb3.export.SB3RecurrentExportModule` (the exported graph) run, so that the
file computes what ``zoo eval`` acts with. :class:`NoArgChecks` switches torch.distributions'
argument checks off around such calls.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.distributions import Distribution

LstmState = tuple[torch.Tensor, torch.Tensor]


class NoArgChecks:
    """Off for one call: torch.distributions' argument checks branch on tensor values, which
    ``torch.jit.trace`` cannot record and ``torch.export`` refuses (the action is the same). The
    recurrent policy skips them on every step as well: they only test values, at a cost per step."""

    def __enter__(self):
        self.before = Distribution._validate_args
        Distribution.set_default_validate_args(False)

    def __exit__(self, *exc):
        Distribution.set_default_validate_args(self.before)


def lstm_actor_step(
    policy, obs: Any, state: LstmState, deterministic: bool
) -> tuple[torch.Tensor, LstmState]:
    """One step of a ``RecurrentActorCriticPolicy``'s actor: its ``get_distribution`` for a sequence of
    one with no episode start (preprocessing and the actor's extractor, the actor LSTM, the actor
    MLP), then the distribution's action. ``state`` is the actor LSTM's ``(h, c)``."""
    from stable_baselines3.common.policies import BaseModel

    features = BaseModel.extract_features(policy, obs, policy.pi_features_extractor)
    latent, state = policy.lstm_actor(features.unsqueeze(0), state)
    latent = policy.mlp_extractor.forward_actor(latent.squeeze(0))
    return policy._get_action_dist_from_latent(latent).get_actions(deterministic=deterministic), state
