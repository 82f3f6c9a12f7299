"""The parity check: the exported file, loaded back, against the source policy's deterministic action.

Observations are sampled from the policy's observation space (seeded, so a failure reproduces):
uniform within finite bounds, normal where a bound is infinite, never all zeros, where a missing
normalizer or a wrong scale would hide. Feed-forward policies are compared on one batch of 256
and on a batch of 1 (the batch axis really is dynamic). Recurrent policies run 16 envs for 64
consecutive steps with state carried, half of the envs reset at step 32, so state handling and
per-env resets are compared too. Discrete actions must match exactly; continuous ones within the
tolerance (absolute). The samples are raw observations: where the file applies observation terms
(:mod:`zoo.exporter.terms`), the source policy gets them as the task computes them, the file raw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zoo.exporter.obs import flatten_obs
from zoo.exporter.terms import TermScales, model_obs

FEED_FORWARD_BATCH = 256
RECURRENT_ENVS, RECURRENT_STEPS = 16, 64
DEFAULT_TOLERANCE = 1e-5


@dataclass
class Parity:
    """What the check measured; ``outputs`` lets a re-stamped file be compared with the checked one."""

    max_abs_diff: float
    mismatches: int
    samples: int
    tolerance: float  # 0.0: exact match required (discrete actions)
    batch_sizes: list[int]
    steps: int | None
    seed: int
    outputs: list[np.ndarray] = field(repr=False, default_factory=list)

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def to_json(self) -> dict:
        return {
            "max_abs_diff": self.max_abs_diff,
            "samples": self.samples,
            "tolerance": self.tolerance,
            "exact": self.tolerance == 0.0,
            "batch_sizes": self.batch_sizes,
            "steps": self.steps,
            "seed": self.seed,
            "compared_with": "the source policy's deterministic act()",
        }


def sample_batch(space, batch: int, rng: np.random.Generator) -> Any:
    """``batch`` observations from ``space`` (one vectorized-env step's worth), seeded by ``rng``."""
    from gymnasium.vector.utils import batch_space

    batched = batch_space(space, batch)
    batched.seed(int(rng.integers(2**31)))
    return batched.sample()


def _compare(ref: np.ndarray, got: np.ndarray, tolerance: float) -> tuple[float, int]:
    """``(max |diff|, number of values outside the tolerance)``; a shape mismatch fails every value."""
    ref, got = np.asarray(ref), np.asarray(got)
    if ref.shape != got.shape:
        return float("inf"), max(ref.size, got.size, 1)
    diff = np.abs(ref.astype(np.float64) - got.astype(np.float64))
    if diff.size == 0:
        return 0.0, 0
    bad = int(np.count_nonzero(diff > tolerance)) + int(np.count_nonzero(~np.isfinite(diff)))
    return float(np.nanmax(diff)) if np.isfinite(diff).any() else float("inf"), bad


def check_parity(
    policy, runner, obs_groups: dict, *, tolerance: float, seed: int = 0, scales: TermScales | None = None
) -> Parity:
    """Compare ``runner`` (an exported file) with ``policy.act(..., deterministic=True)``; ``scales``: the
    observation terms the file applies itself (the policy gets the sample with them applied)."""
    rng = np.random.default_rng(seed)
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    if policy.is_recurrent:
        everyone = np.ones(RECURRENT_ENVS, dtype=bool)
        policy.reset(everyone)
        runner.reset(everyone)
        half = np.arange(RECURRENT_ENVS) % 2 == 0
        for step in range(RECURRENT_STEPS):
            if step == RECURRENT_STEPS // 2:
                policy.reset(half)
                runner.reset(half)
            obs = sample_batch(policy.observation_space, RECURRENT_ENVS, rng)
            ref = policy.act(model_obs(obs, obs_groups, scales), None, True)[0]
            pairs.append((ref, runner(flatten_obs(obs, obs_groups))))
        batch_sizes, steps = [RECURRENT_ENVS], RECURRENT_STEPS
    else:
        obs = sample_batch(policy.observation_space, FEED_FORWARD_BATCH, rng)
        ref = policy.act(model_obs(obs, obs_groups, scales), None, True)[0]
        flat = flatten_obs(obs, obs_groups)
        pairs += [(ref, runner(flat)), (np.asarray(ref)[:1], runner(flat[:1]))]
        batch_sizes, steps = [FEED_FORWARD_BATCH, 1], None
    worst, mismatches = 0.0, 0
    for ref, got in pairs:
        diff, bad = _compare(ref, got, tolerance)
        worst, mismatches = max(worst, diff), mismatches + bad
    samples = sum(len(ref) for ref, _ in pairs)
    return Parity(worst, mismatches, samples, tolerance, batch_sizes, steps, seed, [got for _, got in pairs])
