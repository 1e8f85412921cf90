"""The expected best validation score after k tuning trials (a tuning-budget curve), and its bootstrap interval.

Dodge et al. (2019, "Show your work") plot, for k = 1..n, the expected best score a search would have found had it
run only k of its n trials. Their estimator draws the k trials from the n observed ones *with* replacement: it is
the expected maximum of k draws from the empirical distribution, sum_i v_(i) [(i/n)^k - ((i-1)/n)^k], which
repeats trials and so is biased low (at k = n it is below the best trial found; `with_replacement_curve`, kept
only to show that bias). Tang et al. (2020, "Showing your work doesn't always work") give the unbiased estimator:
with the n scores sorted ascending v_(1) <= ... <= v_(n), the best of k trials drawn *without* replacement has
expectation

    E_k = sum_{i=k}^{n} v_(i) C(i-1, k-1) / C(n, k),

the average over all C(n, k) subsets of k trials of the subset's best (v_(i) is the best of exactly C(i-1, k-1)
of them). It is a U-statistic with kernel max(x_1..x_k): unbiased for the expected best of k independent trials
from the search's distribution. E_1 is the mean, E_n the best trial, and E_k rises with k. Ties need no care (the
subset average is the same however they are broken). The weights are exact integers (math.comb) divided once, so
they are correctly rounded for any n (C(64, 32) is about 1.8e18, beyond a float's exact integers).

A loss (a language model's validation loss, lower wins) is the same curve of the negated scores, negated back:
the expected *lowest* loss after k trials.

`curve_interval` gives each E_k a bootstrap interval over the trials (scipy.stats.bootstrap, the n trials
resampled with replacement): bias-corrected normal (`corrected_interval`) at Hesterberg's expanded level for n
(robust.expanded_level, as the robust tables use). A plain percentile interval fails as k nears n: no resample
holds a trial better than the best one found, so at k = n it never reaches above the sample's best, and in the
hard case (expected_max_coverage.py) it falls well short of 95 % there (tests/test_tuning_budget.py). The
corrected interval's coverage, measured there per k, is in docs/cross-workload-study/tuning-budget.md; it is below
95 % at some k, and the page says where.
"""

import math
from functools import cache

import numpy as np
import numpy.typing as npt
from scipy import stats

from optbench.analysis.statistics.robust import CONFIDENCE, expanded_level

BOOTSTRAP_RESAMPLES = 20_000  # fixed generator seed: the same trials give the same interval


@cache
def weights(n: int) -> np.ndarray:
    """(n, n): row k-1 holds the weight of each ascending-sorted score in E_k, C(i-1, k-1) / C(n, k) (zero for
    i < k); each row sums to 1."""
    table = np.zeros((n, n))
    for k in range(1, n + 1):
        subsets = math.comb(n, k)
        for i in range(k, n + 1):
            table[k - 1, i - 1] = math.comb(i - 1, k - 1) / subsets  # exact integers, one correctly rounded division
    table.flags.writeable = False
    return table


def expected_best_curve(scores: npt.ArrayLike, higher_is_better: bool = True, axis: int = -1) -> np.ndarray:
    """E_1..E_n of the trials along `axis` (the unbiased estimator above): shape (n, ...) with k first, batched
    over the other axes (scipy.stats.bootstrap's vectorized form). A loss: the expected lowest, `higher_is_better`
    False."""
    sign = 1.0 if higher_is_better else -1.0
    ascending = np.sort(sign * np.moveaxis(np.asarray(scores, dtype=float), axis, -1), axis=-1)
    curve = ascending @ weights(ascending.shape[-1]).T  # (..., k)
    return np.moveaxis(sign * curve, -1, 0)


def with_replacement_weights(n: int) -> np.ndarray:
    """(n, n): Dodge et al.'s weight of each ascending-sorted score in E_k, (i/n)^k - ((i-1)/n)^k."""
    share = np.arange(n + 1) / n
    ks = np.arange(1, n + 1)[:, None]
    return np.asarray(share[None, 1:] ** ks - share[None, :-1] ** ks)


def with_replacement_curve(scores: npt.ArrayLike, higher_is_better: bool = True, axis: int = -1) -> np.ndarray:
    """Dodge et al.'s estimator (k trials drawn with replacement), shaped as `expected_best_curve`: biased low,
    so no table uses it; kept so the tests and the page can show the bias."""
    sign = 1.0 if higher_is_better else -1.0
    ascending = np.sort(sign * np.moveaxis(np.asarray(scores, dtype=float), axis, -1), axis=-1)
    curve = ascending @ with_replacement_weights(ascending.shape[-1]).T
    return np.moveaxis(sign * curve, -1, 0)


def curve_interval(
    scores: npt.ArrayLike,
    higher_is_better: bool = True,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(E_k, low, high) for k = 1..n: the estimates and their bias-corrected normal bootstrap intervals over the
    trials (`corrected_interval`). Fewer than two trials cannot be resampled: NaN intervals."""
    values = np.asarray(scores, dtype=float)
    estimate = expected_best_curve(values, higher_is_better)
    if len(values) < 2:
        return estimate, np.full(len(values), math.nan), np.full(len(values), math.nan)
    result = stats.bootstrap(
        (values,),
        lambda sample, axis: expected_best_curve(sample, higher_is_better, axis),
        n_resamples=resamples,
        method="percentile",  # only its replicates are used; BCa's jackknife cannot compute E_n from n - 1 trials
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    low, high = corrected_interval(estimate, result.bootstrap_distribution, len(values), confidence)
    return estimate, low, high


def corrected_interval(
    estimate: npt.ArrayLike, replicates: np.ndarray, n: int, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """The bias-corrected normal bootstrap interval (Efron & Tibshirani 1993, ch. 10 and 12.2): centred on
    2 estimate - mean(replicates), half-width z sd(replicates), z the normal quantile of Hesterberg's expanded
    level for n trials. A resample repeats trials, so its E_k sits below the sample's (the with-replacement bias
    of Dodge et al.'s estimator): the correction moves the interval up by that much, which is what lets it reach
    above the best trial found at k near n, where a percentile interval cannot (coverage measured in
    expected_max_coverage.py's hard case)."""
    replicates = np.asarray(replicates, dtype=float)
    centre = 2 * np.asarray(estimate, dtype=float) - replicates.mean(axis=-1)
    half = stats.norm.ppf(0.5 + expanded_level(n, confidence) / 2) * replicates.std(axis=-1, ddof=1)
    return centre - half, centre + half


def difference_interval(
    first: npt.ArrayLike,
    second: npt.ArrayLike,
    k: int,
    higher_is_better: bool = True,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(E_k(first) - E_k(second), low, high), signed so that positive means `first` is better (a lower loss for a
    loss): the two optimizers' trials resampled independently, the interval as `corrected_interval` at the smaller
    n."""
    sign = 1.0 if higher_is_better else -1.0

    def gap(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        first_best = expected_best_curve(a, higher_is_better, axis)[k - 1]
        second_best = expected_best_curve(b, higher_is_better, axis)[k - 1]
        return np.asarray(sign * (first_best - second_best))

    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    estimate = float(gap(a, b))
    if min(len(a), len(b)) < 2:
        return estimate, math.nan, math.nan
    result = stats.bootstrap(
        (a, b), gap, n_resamples=resamples, method="percentile", vectorized=True, rng=np.random.default_rng(seed)
    )
    low, high = corrected_interval(estimate, result.bootstrap_distribution, min(len(a), len(b)), confidence)
    return estimate, float(low), float(high)
