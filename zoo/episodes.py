"""One finished episode and the per-env quota rule: what both rollout paths (gymnasium vector envs in
:mod:`zoo.evaluator`, batched tensor envs in :mod:`zoo.tensor_rollout`) count with.

Env ``i`` of ``K`` contributes ``N // K`` episodes, plus one for the first ``N % K`` envs: counting the
first ``N`` episodes to finish would over-sample short episodes and bias the mean down.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Episode:
    """One finished episode; ``env_index`` says which sub-env produced it. ``truncated``: the step bound
    (``--max-steps``, :mod:`zoo.rollout_guard`) cut it, the env did not end it."""

    env_index: int
    return_: float
    length: int
    success: bool | None
    truncated: bool = False

    def to_json(self) -> dict:
        return {
            "return": self.return_,
            "length": self.length,
            "success": self.success,
            "env_index": self.env_index,
            "truncated": self.truncated,
        }


def episode_quotas(episodes: int, num_envs: int) -> np.ndarray:
    """Episodes each sub-env must contribute; they add up to ``episodes``."""
    quotas = np.full(num_envs, episodes // num_envs, dtype=np.int64)
    quotas[: episodes % num_envs] += 1
    return quotas
