"""The one abstraction shared by every framework, the evaluator and the exporter."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class Policy(Protocol):
    """Maps a batch of raw observations to a batch of env actions.

    ``deterministic=False`` means the framework's published eval mode (epsilon-greedy
    for Q-networks, sampled actions for Gaussian policies, exploration noise for
    deterministic actors), drawn from the policy's own seeded generator so that the
    same seed gives the same result, bit for bit.
    """

    observation_space: Any
    action_space: Any
    is_recurrent: bool

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]: ...

    def reset(self, done_mask: np.ndarray) -> None: ...
