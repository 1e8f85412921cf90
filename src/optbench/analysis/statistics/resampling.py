"""Resampling real runs to measure a rule's error rate or power, and the Monte Carlo interval of each figure.

`disjoint_draw(rng, pool, arms, per_arm)` draws `arms` disjoint sets of `per_arm` positions from a pool of `pool`
runs, without replacement (a seed is never in two arms, nor twice in one: two arms of one setting must be
different runs), and `extended_draw` adds positions to a draw without touching those it holds (a study that
continues from its pilot). `monte_carlo_rate(hits, trials)` is the share of resamples in which something
happened, with its exact binomial (Clopper-Pearson) interval from scipy.stats.binomtest: the Monte Carlo error of
that share given the pool, not the error of the pool itself as a sample of all seeds.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95  # of the Monte Carlo interval beside each measured rate


def disjoint_draw(rng: np.random.Generator, pool: int, arms: int, per_arm: int) -> np.ndarray:
    """(arms, per_arm) positions in range(pool), every one distinct; ValueError when the pool is too small."""
    if arms * per_arm > pool:
        raise ValueError(f"{arms} arms of {per_arm} need {arms * per_arm} runs; the pool has {pool}")
    return rng.choice(pool, size=arms * per_arm, replace=False).reshape(arms, per_arm)


def extended_draw(rng: np.random.Generator, pool: int, drawn: np.ndarray, total: int) -> np.ndarray:
    """`drawn` (1-D positions) followed by `total - len(drawn)` more from the rest of the pool, without replacement."""
    rest = np.setdiff1d(np.arange(pool), drawn)
    if total - len(drawn) > len(rest):
        raise ValueError(f"{total} positions asked for; the pool has {pool}")
    return np.concatenate([drawn, rng.choice(rest, size=max(0, total - len(drawn)), replace=False)])


@dataclass(frozen=True)
class Rate:
    hits: int
    trials: int
    low: float  # the Monte Carlo interval (Clopper-Pearson at CONFIDENCE); NaN without trials
    high: float

    @property
    def value(self) -> float:
        return self.hits / self.trials if self.trials else math.nan


def monte_carlo_rate(hits: int, trials: int, confidence: float = CONFIDENCE) -> Rate:
    """The share hits / trials with its exact binomial interval (NaN when nothing was tried)."""
    if trials == 0:
        return Rate(0, 0, math.nan, math.nan)
    interval = stats.binomtest(int(hits), int(trials)).proportion_ci(confidence, method="exact")
    return Rate(int(hits), int(trials), float(interval.low), float(interval.high))


def finite_pool_coverage(n: int, pool: int, level: float = 0.95) -> float:
    """What a t interval for a mean at `level` covers when its n values are drawn without replacement from a pool
    of `pool` and the truth is the pool's own mean (normal values): the sample mean then varies by sqrt(1 - n/pool)
    of what the interval assumes, so it covers P(|t_{n-1}| <= t_crit / sqrt(1 - n/pool)), above `level` (96.5 % at
    n = 10 of 61, 95.3 % at 10 of 400). The interval is right for the setting; the pool is what is finite."""
    if not 1 < n < pool:
        return math.nan
    critical = stats.t.ppf(0.5 + level / 2, n - 1) / math.sqrt(1 - n / pool)
    return float(1 - 2 * stats.t.sf(critical, n - 1))
