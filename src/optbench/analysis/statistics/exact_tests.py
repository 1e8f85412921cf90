"""Exact permutation tests that assume nothing, and Holm's adjustment for a family of tests.

- `sign_flip_p(differences)`: the paired test, every arrangement of signs of the per-seed differences;
  `permutation_p(a, b)`: the two-sample test, every split of the pooled runs. Both two-sided, enumerated up to
  EXACT_LIMIT arrangements and sampled (Monte Carlo, fixed seed) beyond.
- `min_attainable_p(n_a, n_b, paired)`: the smallest p such a test can give: 2 / 2^n (3 paired seeds: 0.25), so
  at small n it says little.
- `ranks_when_censored(a, b)`: pooled mid-ranks, a run censored at its budget (+inf) tied worst.
- `holm(p_values)`: Holm's step-down adjustment for a family of tests.
"""

import itertools
import math

import numpy as np
import numpy.typing as npt
from scipy import stats

EXACT_LIMIT = 20_000  # exact tests enumerate every arrangement up to this many (2^14 sign flips, 8 vs 8 splits)
# Arrangements whose statistics differ by less than this fraction of the data's scale are ties: a mean
# recomputed in another order differs in its last bits (scipy's tolerance, ~1e-14, is too tight for that).
TIE_RTOL = 1e-9


def arrangements(n_a: int, n_b: int, paired: bool) -> int:
    """How many relabellings the permutation distribution has: 2^n sign flips, or C(n_a + n_b, n_a) splits."""
    return 2**n_a if paired else math.comb(n_a + n_b, n_a)


def min_attainable_p(n_a: int, n_b: int, paired: bool) -> float:
    """The smallest two-sided p of the exact test (no ties): the two extreme arrangements, or the
    Monte Carlo floor 2 / (resamples + 1) when the distribution is sampled."""
    if n_a < 2 or n_b < 2:
        return math.nan
    count = arrangements(n_a, n_b, paired)
    return min(1.0, 2 / count if count <= EXACT_LIMIT else 2 / (EXACT_LIMIT + 1))


def two_sided(null: np.ndarray, observed: float, tolerance: float, sampled: bool) -> float:
    """2 x the smaller tail (each tail counting the observed arrangement), at most 1; statistics within
    `tolerance` of the observed one are ties. A sampled distribution adds the observed arrangement itself."""
    greater = np.count_nonzero(null >= observed - tolerance)
    less = np.count_nonzero(null <= observed + tolerance)
    extra = 1 if sampled else 0
    return float(min(1.0, 2 * (min(greater, less) + extra) / (len(null) + extra)))


def sign_flip_p(differences: np.ndarray) -> float:
    """Exact two-sided p of the paired sign-flip test: every arrangement's statistic is the sum of the same
    per-seed differences with signs flipped, so the observed arrangement is one of them to the last bit."""
    differences = np.asarray(differences, dtype=float)
    n = len(differences)
    sampled = 2**n > EXACT_LIMIT
    if sampled:
        signs = np.random.default_rng(0).choice([-1.0, 1.0], size=(EXACT_LIMIT, n))
    else:
        signs = 1.0 - 2.0 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
    tolerance = TIE_RTOL * float(np.abs(differences).sum())
    return two_sided(signs @ differences, float(differences.sum()), tolerance, sampled)


def permutation_p(a: np.ndarray, b: np.ndarray) -> float:
    """Exact two-sided p of the two-sample permutation test. Statistic: the sum of the first group, which
    orders arrangements exactly as the difference in means does (the pooled total is fixed)."""
    pooled = np.concatenate([a, b]).astype(float)
    n_a, n = len(a), len(a) + len(b)
    sampled = math.comb(n, n_a) > EXACT_LIMIT
    if sampled:
        rng = np.random.default_rng(0)
        chosen = np.argsort(rng.random((EXACT_LIMIT, n)), axis=1)[:, :n_a]
    else:
        chosen = np.array(list(itertools.combinations(range(n), n_a)))
    tolerance = TIE_RTOL * float(np.abs(pooled).sum())
    return two_sided(pooled[chosen].sum(axis=1), float(pooled[:n_a].sum()), tolerance, sampled)


def ranks_when_censored(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mid-ranks of the pooled values; censored runs (+inf: never reached) tie for the worst rank."""
    ranks = stats.rankdata(np.concatenate([a, b]))
    return ranks[: len(a)], ranks[len(a) :]


# ---- families -----------------------------------------------------------------------------------------


def holm(p_values: npt.ArrayLike) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN and does not count as a test)."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full_like(p, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    order = tested[np.argsort(p[tested])]
    running_max = 0.0
    for position, index in enumerate(order):
        running_max = max(running_max, (len(order) - position) * p[index])
        adjusted[index] = min(1.0, running_max)
    return adjusted
