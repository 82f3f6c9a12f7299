"""RecurrentPPO behind zoo's Policy protocol: the actor LSTM's state carried between steps.

SB3's ``predict(obs, state, episode_start)`` zeroes the state of the envs whose ``episode_start``
is set (``(1 - episode_start) * state``), then steps the LSTM. zoo's evaluator calls
``reset(done_mask)`` once an episode ends (and again after gymnasium's autoreset step, whose action
the env ignores), and :meth:`SB3RecurrentPolicy.reset` does that same multiplication then, so the
state is already zero when the new episode's first observation arrives. Every step is therefore
:func:`~zoo.frameworks.sb3.actor.lstm_actor_step`: ``RecurrentActorCriticPolicy._predict`` with no
episode start, the same arithmetic as SB3's masked path, the same ``torch.lstm`` call.

What zoo leaves out is per-step overhead of ``predict``, not arithmetic: the state stays a torch
tensor (``predict`` copies it to numpy and back, and converts the episode starts, every step),
plain observations become a tensor without ``obs_to_tensor``'s checks and device lookups, the LSTM
is called directly (``_process_sequence`` reshapes and tests the starts on the way), the action
distribution skips torch's argument checks (they test values, never change them), and nothing runs
under autograd (``inference_mode``). Only the actor's state is kept: the critic's LSTM (separate,
shared or absent) never acts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from zoo.frameworks.sb3.actor import LstmState, NoArgChecks, lstm_actor_step
from zoo.frameworks.sb3.build import Rebuilt
from zoo.frameworks.sb3.normalize import ObsNormalizer
from zoo.frameworks.sb3.policy import SB3Policy
from zoo.policy import ExportSpec


class SB3RecurrentPolicy(SB3Policy):
    """A :class:`zoo.policy.Policy` over a ``RecurrentActorCriticPolicy``; state per env, zeroed by ``reset``."""

    is_recurrent = True

    def __init__(
        self,
        rebuilt: Rebuilt,
        normalizer: ObsNormalizer | None,
        algorithm: str | None,
        seed: int,
        observation_space: Any = None,
    ):
        from gymnasium import spaces
        from stable_baselines3.common.preprocessing import is_image_space

        super().__init__(rebuilt, normalizer, algorithm, seed, observation_space)
        self._state: LstmState | None = None
        self._device = self.policy.device  # SB3's ``device`` property walks the parameters on every call
        saved = self.policy.observation_space
        # obs_to_tensor transposes images and splits Dicts; any other observation it only reshapes
        self._plain_obs = not isinstance(saved, spaces.Dict) and not is_image_space(saved)

    def _zeros(self, batch: int) -> LstmState:
        layers, _, hidden = self.policy.lstm_hidden_state_shape
        h = torch.zeros(layers, batch, hidden, device=self._device)
        return h, torch.zeros_like(h)

    def _predict(self, obs: Any, deterministic: bool, action_masks: np.ndarray | None) -> np.ndarray:
        policy = self.policy
        if self._plain_obs:  # what obs_to_tensor does for these, without its checks and device lookups
            obs_tensor = torch.as_tensor(obs, device=self._device).reshape(
                (-1, *policy.observation_space.shape)
            )
        else:
            obs_tensor, _ = policy.obs_to_tensor(obs)
        batch = len(next(iter(obs_tensor.values())) if isinstance(obs_tensor, dict) else obs_tensor)
        if self._state is None or self._state[0].shape[1] != batch:
            self._state = self._zeros(batch)
        with torch.inference_mode(), NoArgChecks():
            actions, self._state = lstm_actor_step(policy, obs_tensor, self._state, deterministic)
        return _env_actions(policy, actions)

    def reset(self, done_mask: np.ndarray) -> None:
        """Zero the state of the envs whose episode ended, as ``episode_start`` does in SB3's predict."""
        if self._state is None or len(done_mask) != self._state[0].shape[1]:
            return  # no state yet, or another batch size: the next step starts from zeros anyway
        keep = torch.as_tensor(1.0 - np.asarray(done_mask, dtype=np.float32), device=self._device)
        with torch.inference_mode():
            self._state = (keep.view(1, -1, 1) * self._state[0], keep.view(1, -1, 1) * self._state[1])

    def export_spec(self) -> ExportSpec:
        """The actor with explicit state inputs: ``forward(obs, h, c) -> (actions, h, c)``."""
        from zoo.frameworks.sb3.export import recurrent_export_spec

        return recurrent_export_spec(self.policy, self.observation_space, self.normalizer)


def _env_actions(policy, actions: torch.Tensor) -> np.ndarray:
    """``BasePolicy.predict``'s last part: reshape to the action shape, unscale or clip Box actions."""
    from gymnasium import spaces

    out = actions.cpu().numpy().reshape((-1, *policy.action_space.shape))
    if not isinstance(policy.action_space, spaces.Box):
        return out
    if policy.squash_output:
        return policy.unscale_action(out)
    return np.clip(out, policy.action_space.low, policy.action_space.high)
