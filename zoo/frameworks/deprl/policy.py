"""A DEP-RL actor behind zoo's Policy protocol, and its export.

Deterministic mode is ``deprl.load(path, env)(obs)``, i.e. ``agent.test_step``: ``tanh(loc)`` of the raw
observation, then tonic's ActionRescaler when the run's env was built with ``scaled_actions=True`` (the env
receives ``(high + low) / 2 + (high - low) / 2 * clip(a, -1, 1)``). Stochastic mode is MPO's ``step``: a sample of
``Normal(loc, clamp(softplus(scale), 1e-4, 1))`` from zoo's seeded generator, rescaled the same way (the rescaler
clips it to [-1, 1] first).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from zoo.policy import ExportSpec

SCALE_MIN, SCALE_MAX = 1e-4, 1.0  # tonic's GaussianPolicyHead defaults


class DeprlPolicy:
    """:class:`zoo.policy.Policy` over the rebuilt actor (:func:`zoo.frameworks.deprl.actor.build_actor`)."""

    is_recurrent = False

    def __init__(self, actor, observation_space, action_space, device: str, seed: int):
        import torch

        self.device = torch.device(device)
        self.actor = actor.to(self.device)
        self.observation_space, self.action_space = observation_space, action_space
        self._generator = torch.Generator(device=self.device).manual_seed(seed)

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        import torch

        obs = torch.as_tensor(np.asarray(obs_batch), dtype=torch.float32, device=self.device)
        with torch.inference_mode():
            obs = obs.reshape(obs.shape[0], -1)
            if deterministic:
                actions = self.actor(obs)
            else:
                features = self.actor.features(obs)
                loc = torch.tanh(self.actor.loc(features))
                scale = torch.nn.functional.softplus(self.actor.scale(features)).clamp(SCALE_MIN, SCALE_MAX)
                noise = torch.randn(loc.shape, generator=self._generator, device=self.device)
                actions = self.actor.to_env(loc + scale * noise)
        return actions.cpu().numpy().reshape(len(obs), *self.action_space.shape), state

    def reset(self, done_mask: np.ndarray) -> None:
        """The actor holds no state between steps."""

    def export_spec(self) -> ExportSpec:
        """The very actor ``act`` runs, on a CPU copy: ``tanh(loc)`` and the ActionRescaler baked in."""
        from zoo.exporter.obs import obs_layout

        actor = copy.deepcopy(self.actor).cpu().eval()
        shape, groups = obs_layout(self.observation_space)
        baked = ["tanh of the Gaussian head's loc (deprl's test_step)"]
        left = [
            "deprl's actor reads the raw observation: no normalizer to apply (the critic's is not the actor's)"
        ]
        if actor.rescale:
            baked.append("tonic's ActionRescaler: (high + low) / 2 + (high - low) / 2 * clip(a, -1, 1)")
        else:
            left.append("actions in [-1, 1] are passed to the env as they are (scaled_actions=False)")
        return ExportSpec(actor, shape, groups, None, baked=baked, left_to_caller=left)
