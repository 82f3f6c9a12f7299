"""The leaderboard's statistics, every one of them scipy's (imported here, on first use, not at import time:
``zoo --help`` must not pay for scipy).

* a 95% **percentile bootstrap** interval of the mean (``scipy.stats.bootstrap``). Percentile, not BCa: BCa's
  acceleration is a jackknife ratio that is undefined when every value is equal, which RL results often are
  (every CartPole seed at 500), and its corrections are unreliable at the 3 to 10 seeds a leaderboard has.
  The generator is seeded (:data:`BOOTSTRAP_SEED`), so the same files give the same interval, digit for digit.
* the **interquartile mean** (``scipy.stats.trim_mean(x, 0.25)``): the mean of the middle half, rliable's
  IQM, which a few failed or lucky episodes do not move the way they move the mean.
* a 95% **Wilson** interval of a success rate (``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``):
  unlike the normal approximation it stays inside [0, 1] and is not zero-width at 0% or 100%.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CONFIDENCE = 0.95
BOOTSTRAP_METHOD = "percentile"
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 0


def bootstrap_ci(values: Sequence[float]) -> tuple[float, float] | None:
    """The 95% percentile bootstrap interval of the mean of ``values``; None for fewer than two values
    (nothing to resample)."""
    data = np.asarray(values, dtype=np.float64)
    if data.size < 2:
        return None
    from scipy import stats

    result = stats.bootstrap(
        (data,),
        np.mean,
        confidence_level=CONFIDENCE,
        n_resamples=BOOTSTRAP_RESAMPLES,
        method=BOOTSTRAP_METHOD,
        vectorized=True,
        rng=np.random.default_rng(BOOTSTRAP_SEED),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def iqm(values: Sequence[float]) -> float:
    """The interquartile mean: the mean after cutting the lowest and the highest quarter."""
    from scipy import stats

    return float(stats.trim_mean(np.asarray(values, dtype=np.float64), 0.25))


def wilson_ci(successes: int, trials: int) -> tuple[float, float]:
    """The 95% Wilson score interval of ``successes`` out of ``trials`` (at least one)."""
    from scipy import stats

    ci = stats.binomtest(successes, trials).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
    return float(ci.low), float(ci.high)


def competition_ranks(scores: Sequence[float]) -> list[int]:
    """Rank 1 for the highest score; equal scores share the best rank they tie for (1, 1, 3)."""
    from scipy import stats

    return [int(r) for r in stats.rankdata(-np.asarray(scores, dtype=np.float64), method="min")]
