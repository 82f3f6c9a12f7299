"""skrl policies behind zoo's Policy protocol: skrl 2.x's eval-mode action for each model mixin.

Deterministic mode is what skrl's trainers step the env with in eval (``stochastic_evaluation:
false``, the default): the mixin's ``mean_actions`` output.

- ``GaussianMixin`` / ``MultivariateGaussianMixin``: the mean, clamped to the action bounds only
  when ``clip_mean_actions``; stochastic mode samples ``Normal(mean, exp(clamp(log_std)))`` (skrl's
  ``MultivariateNormal`` with the diagonal ``scale_tril`` of the same deviations is the same
  distribution) and clamps when ``clip_actions``;
- ``DeterministicMixin``: the output, clamped when ``clip_actions``;
- ``CategoricalMixin`` returns no ``mean_actions``, so skrl's trainer samples its actions even with
  ``stochastic_evaluation: false``. zoo's deterministic action is the argmax of the logits (the
  distribution's mode); stochastic mode samples ``Categorical(logits)`` from zoo's seeded generator.

skrl's env wrapper passes actions to the env without clipping, and neither does zoo.

Recurrent policies keep their ``(num_layers, num_envs, hidden)`` state between calls: zeros at the
start, and ``reset(done_mask)`` zeroes the envs whose episode ended, as ``PPO_RNN`` does after each
step for finished envs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zoo.frameworks.skrl.config import PolicySpec
from zoo.rollout_guard import require_finite


class SkrlPolicy:
    """A :class:`zoo.policy.Policy` over a rebuilt skrl policy network."""

    def __init__(
        self, network, spec: PolicySpec, log_std, observation_space, action_space, device: str, seed: int
    ):
        import torch

        from zoo.frameworks.skrl.modules import ActionHead

        self.device = torch.device(device)
        self.network = network.to(self.device)
        self.spec = spec
        self.log_std = None if log_std is None else log_std.to(self.device, torch.float32)
        self.observation_space = observation_space
        self.action_space = action_space
        self.is_recurrent = network.rnn is not None
        self._state: tuple | None = None
        self._generator = torch.Generator(device=self.device).manual_seed(seed)
        categorical = spec.kind == "categorical"
        if categorical:
            self._low = self._high = None
        else:
            self._low = torch.as_tensor(action_space.low, dtype=torch.float32, device=self.device)
            self._high = torch.as_tensor(action_space.high, dtype=torch.float32, device=self.device)
        clamps = spec.clip_actions if spec.kind == "deterministic" else spec.clip_mean_actions
        shape = tuple(action_space.shape or ())
        self.head = ActionHead(
            categorical, self._low if clamps else None, self._high if clamps else None, shape
        )

    def _states(self, batch: int) -> tuple:
        import torch

        if self._state is None or self._state[0].shape[1] != batch:
            rnn = self.network.rnn
            zeros = torch.zeros(rnn.num_layers, batch, rnn.hidden_size, device=self.device)
            self._state = (zeros, zeros.clone())
        return self._state

    def _output(self, obs):
        if not self.is_recurrent:
            return self.network(obs)
        out, h, c = self.network.step(obs, *self._states(len(obs)))
        self._state = (h, c)
        return out

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        import torch

        obs = torch.as_tensor(np.asarray(obs_batch), dtype=torch.float32, device=self.device)
        actions, state = self.act_tensor(obs, state, deterministic)
        return actions.cpu().numpy(), state

    def act_tensor(self, obs, state: Any = None, deterministic: bool = True):
        """:meth:`act` on a tensor env's device tensors: ``obs`` a tensor or ``{group: tensor}`` (skrl's
        wrappers hand the model the ``policy`` group); the actions stay on the device."""
        import torch

        if isinstance(obs, dict):
            from zoo.tensor_env import box_group

            obs = obs[box_group(obs)]
        with torch.inference_mode():
            out = self._output(obs.to(torch.float32).reshape(obs.shape[0], -1))
            if self.spec.kind == "categorical":  # the argmax of NaN logits looks like an action: refuse them
                require_finite(out, "action logits")  # (on a GPU: one host read per step, for this head only)
            return (self.head(out) if deterministic else self._sample(out)), state

    def _sample(self, out):
        import torch

        spec = self.spec
        if spec.kind == "categorical":
            probs = (
                torch.softmax(out, dim=-1) if spec.unnormalized_log_prob else out / out.sum(-1, keepdim=True)
            )
            return torch.multinomial(probs, 1, generator=self._generator).squeeze(1)
        if spec.kind == "deterministic" or self.log_std is None:
            return self.head(out)
        mean = torch.clamp(out, min=self._low, max=self._high) if spec.clip_mean_actions else out
        log_std = self.log_std
        if spec.clip_log_std:
            log_std = torch.clamp(log_std, spec.min_log_std, spec.max_log_std)
        noise = torch.randn(mean.shape, generator=self._generator, device=self.device)
        actions = mean + log_std.exp() * noise
        actions = torch.clamp(actions, min=self._low, max=self._high) if spec.clip_actions else actions
        return actions.reshape(len(out), *self.action_space.shape)

    def reset(self, done_mask: np.ndarray) -> None:
        """Zero the recurrent state of the envs whose episode ended (feed-forward policies hold none)."""
        import torch

        self.reset_tensor(torch.as_tensor(np.asarray(done_mask, dtype=bool), device=self.device))

    def reset_tensor(self, done) -> None:
        """:meth:`reset` with a bool tensor on the policy's device."""
        import torch

        if self._state is None or self._state[0].shape[1] != len(done):
            return
        with torch.inference_mode():
            keep = (~done).to(torch.float32).view(1, -1, 1)
            self._state = tuple(s * keep for s in self._state)

    def export_spec(self):
        """The rebuilt network and action head on a CPU copy (see :mod:`zoo.frameworks.skrl.export`)."""
        from zoo.frameworks.skrl.export import export_spec

        return export_spec(self)
