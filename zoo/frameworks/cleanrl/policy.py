"""CleanRL policies: the acting part of a checkpoint plus its eval-mode behaviour.

Heads (``policy.head`` in the registry):

- ``q_values``/``c51``: argmax of Q; stochastic mode is epsilon-greedy (CleanRL's
  ``dqn_eval``/``c51_eval`` use epsilon 0.05).
- ``gaussian``: the mean action; stochastic mode samples ``Normal(mean, exp(logstd))``
  like ``ppo_eval``.
- ``categorical``: the module gives logits; the argmax, and in stochastic mode a sample from
  ``Categorical(logits)`` (CleanRL's JAX PPO evals sample Gumbel-max, the same distribution).
- ``deterministic_actor``: the tanh-rescaled actor; stochastic mode adds
  ``N(0, action_scale * exploration_noise)`` and clips, like ``ddpg_eval``/``td3_eval``.

All randomness comes from generators seeded at construction, so one seed gives one
result, bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class CleanRLPolicy:
    """A :class:`zoo.policy.Policy` over one CleanRL ``nn.Module``."""

    is_recurrent = False

    def __init__(
        self, module, head: str, observation_space, action_space, eval_cfg: dict, device: str, seed: int
    ):
        import torch

        self.module = module.eval()
        self.head = head
        self.observation_space = observation_space
        self.action_space = action_space
        self.device = torch.device(device)
        self.epsilon = float(eval_cfg.get("epsilon", 0.0))
        self.exploration_noise = float(eval_cfg.get("exploration_noise", 0.0))
        self._rng = np.random.default_rng(seed)
        self._torch_rng = torch.Generator().manual_seed(seed)
        if head == "deterministic_actor":
            self._low = np.asarray(action_space.low, dtype=np.float32)
            self._high = np.asarray(action_space.high, dtype=np.float32)

    def _noise(self, shape) -> Any:
        import torch

        return torch.randn(shape, generator=self._torch_rng).to(self.device)

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        import torch

        with torch.inference_mode():
            x = torch.as_tensor(obs_batch, device=self.device, dtype=torch.float32)
            if self.head in ("q_values", "c51"):
                actions = self.module(x).argmax(dim=1).cpu().numpy()
                if not deterministic and self.epsilon > 0:
                    explore = self._rng.random(len(actions)) < self.epsilon
                    random_actions = self._rng.integers(self.action_space.n, size=len(actions))
                    actions = np.where(explore, random_actions, actions)
                return actions, state
            if self.head == "categorical":
                logits = self.module(x)
                if deterministic:
                    return logits.argmax(dim=1).cpu().numpy(), state
                probs = torch.softmax(logits.double().cpu(), dim=1)
                return torch.multinomial(probs, 1, generator=self._torch_rng).squeeze(1).numpy(), state
            if self.head == "gaussian":
                mean = self.module.actor_mean(x)
                if not deterministic:
                    mean = mean + torch.exp(self.module.actor_logstd) * self._noise(mean.shape)
                return mean.cpu().numpy(), state
            actions = self.module(x)
            if not deterministic and self.exploration_noise > 0:
                actions = (
                    actions + self._noise(actions.shape) * self.module.action_scale * self.exploration_noise
                )
                return np.clip(actions.cpu().numpy(), self._low, self._high), state
            return actions.cpu().numpy(), state

    def reset(self, done_mask: np.ndarray) -> None:
        """Feed-forward policies carry no state between steps."""

    def export_spec(self):
        """The deterministic head on a CPU copy of the network: argmax index, mean, or scaled tanh actor."""
        import copy

        from zoo.exporter.modules import ArgmaxActions
        from zoo.exporter.obs import obs_layout
        from zoo.policy import ExportSpec

        module = copy.deepcopy(self.module).cpu().eval()
        obs_shape, groups = obs_layout(self.observation_space)
        if self.head in ("q_values", "c51", "categorical"):
            what = {
                "c51": "argmax over expected Q-values (C51 atoms)",
                "categorical": "argmax over the actor's logits",
            }
            what = what.get(self.head, "argmax over Q-values")
            return ExportSpec(ArgmaxActions(module), obs_shape, groups, None, baked=[what])
        if self.head == "gaussian":
            return ExportSpec(module.actor_mean, obs_shape, groups, None, baked=["Gaussian mean"])
        low, high = self._low.tolist(), self._high.tolist()
        return ExportSpec(module, obs_shape, groups, None,
                          baked=[f"tanh rescaled to the action bounds [{low}, {high}]"])  # fmt: skip
