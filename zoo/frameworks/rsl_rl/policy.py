"""rsl_rl policies: the actor (or distilled student) ``MLPModel``/``RNNModel``/``CNNModel`` in eval mode
behind zoo's Policy protocol. Env observations become the model's observation groups as
:mod:`.obs` says (a Dict observation by key, any other one as the single group).

Deterministic mode is the model's deterministic output (the Gaussian mean), as rsl_rl's
``get_inference_policy()`` gives it; stochastic mode samples the actor's Normal distribution from a
generator seeded at construction. The normalizer is the checkpoint's ``EmpiricalNormalization``
(``(x - mean) / (std + 1e-2)``, no clipping), applied by the model itself. Actions leave unclipped,
as rsl_rl's runner hands them to the env, unless the run's config sets ``clip_actions``.

Recurrent state: rsl_rl's envs reset a finished env in the same step and the runner zeroes that
env's hidden state, so each episode starts from zero. zoo's gymnasium vector envs reset on the *next*
step (gymnasium's default autoreset), whose action is discarded; the hidden state is zeroed at the
done step and again after that discarded step, so the new episode also starts from zero.

``export_spec()`` hands ``zoo export`` the same deterministic actor as a plain CPU module (see :mod:`.export`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zoo.frameworks.rsl_rl.obs import ObsLayout, whole_observation


class RslRlPolicy:
    """A :class:`zoo.policy.Policy` over one rsl_rl model; ``layout`` defaults to an MLP's or RNN's one group."""

    def __init__(
        self,
        model,
        observation_space,
        action_space,
        *,
        clip_actions: float | None,
        device: str,
        seed: int,
        layout: ObsLayout | None = None,
    ):
        import torch

        self.model = model.eval()
        self.layout = layout or whole_observation(model.obs_dim)
        self.observation_space = observation_space
        self.action_space = action_space
        self.is_recurrent = bool(model.is_recurrent)
        self.clip_actions = clip_actions
        self.device = torch.device(device)
        self._generator = torch.Generator(device=self.device).manual_seed(seed)

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        actions, state = self._act(self.layout.tensordict(obs_batch, self.device), state, deterministic)
        return actions.cpu().numpy(), state

    def act_tensor(self, obs: dict, state: Any = None, deterministic: bool = True):
        """:meth:`act` on a tensor env's ``{group: tensor}`` observation; the actions stay on the device."""
        return self._act(self.layout.from_tensors(obs), state, deterministic)

    def _act(self, obs, state: Any, deterministic: bool):
        import torch

        with torch.inference_mode():
            if deterministic or self.model.distribution is None:
                actions = self.model(obs)
            else:
                actions = self._sample(obs)
            if self.clip_actions is not None:
                actions = actions.clamp(-self.clip_actions, self.clip_actions)
        return actions, state

    def _sample(self, obs):
        import torch
        from torch.distributions import Normal

        self.model.distribution.update(self.model.mlp(self.model.get_latent(obs)))
        dist = self.model.distribution._distribution  # noqa: SLF001 - the only handle rsl_rl offers
        if not isinstance(dist, Normal):
            from zoo.errors import ZooError

            raise ZooError(
                f"stochastic eval samples Gaussian actors only, this one is {type(dist).__name__}",
                hint="use --deterministic",
            )
        noise = torch.randn(dist.mean.shape, generator=self._generator, device=self.device)
        return dist.mean + dist.stddev * noise

    def export_spec(self):
        """The actor as a plain CPU torch module for ``zoo export`` (see :mod:`.export`)."""
        from zoo.frameworks.rsl_rl.export import export_spec

        return export_spec(
            self.model, self.observation_space, self.layout, self.clip_actions, self.is_recurrent
        )

    def reset(self, done_mask: np.ndarray) -> None:
        """Zero the hidden state of the envs the evaluator marks (their episode ended)."""
        import torch

        self.reset_tensor(torch.as_tensor(np.asarray(done_mask, dtype=bool), device=self.device))

    def reset_tensor(self, dones) -> None:
        """:meth:`reset` with a bool tensor on the policy's device."""
        import torch

        if not self.is_recurrent:
            return
        with torch.inference_mode():
            self.model.reset(dones)
