"""rl_games policies behind zoo's Policy protocol: the rebuilt actor (:mod:`.network`) in eval mode.

Deterministic mode is the player's ``get_action(obs, is_deterministic=True)``. Stochastic mode samples what its
``is_deterministic=False`` samples, from zoo's seeded generator: ``Categorical(logits)``, or
``Normal(mu, exp(logstd))`` (``continuous_a2c_logstd``; the fixed log-std parameter or the sigma head through
``sigma_activation``), then the same clamp and rescale.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from zoo.frameworks.rl_games.network import RlGamesActor, activation


class RlGamesPolicy:
    """A :class:`zoo.policy.Policy` over one rebuilt rl_games actor."""

    is_recurrent = False

    def __init__(
        self,
        actor: RlGamesActor,
        sigma: dict[str, torch.Tensor],
        sigma_act: str,
        observation_space: Any,
        action_space: Any,
        device: str,
        seed: int,
    ):
        self.device = torch.device(device)
        self.actor = actor.to(self.device).eval()
        self.sigma = {k: v.to(self.device, torch.float32) for k, v in sigma.items()}
        self.sigma_act = activation(sigma_act)
        self.observation_space = observation_space
        self.action_space = action_space
        self._generator = torch.Generator(device=self.device).manual_seed(seed)

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        obs = torch.as_tensor(np.asarray(obs_batch), device=self.device)
        with torch.inference_mode():
            actions = self.actor(obs) if deterministic else self._sample(obs)
        return actions.cpu().numpy(), state

    def _sample(self, obs: torch.Tensor) -> torch.Tensor:
        out = self.actor.logits_or_mu(obs)
        if self.actor.discrete:
            probs = torch.softmax(out, dim=-1)
            return torch.multinomial(probs, 1, generator=self._generator).squeeze(1)
        if "sigma" in self.sigma:
            logstd = self.sigma_act(self.sigma["sigma"]).expand_as(out)
        else:
            hidden = self.actor.actor_mlp(self.actor.inputs(obs))
            logstd = self.sigma_act(hidden @ self.sigma["sigma.weight"].T + self.sigma["sigma.bias"])
        noise = torch.randn(out.shape, generator=self._generator, device=self.device)
        sampled = out + torch.exp(logstd) * noise
        return self.actor.finish(sampled)

    def reset(self, done_mask: np.ndarray) -> None:
        """Nothing to reset: the actor is feed-forward."""

    def export_spec(self):
        """The actor on a CPU copy, the normalizer and rescale baked in (see :mod:`.export`)."""
        from zoo.frameworks.rl_games.export import export_spec

        return export_spec(self)
