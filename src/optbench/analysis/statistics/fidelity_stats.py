"""The statistics of a fidelity ladder, as pure functions of optimizers x seeds matrices (docs/fidelity.md).

A rung's values are a k x n matrix (k optimizers, n seeds, one value per cell: a diverged or failed run at its
recorded score or chance); every matrix handed to one comparison has the same seeds in the same columns.
- `change_intervals(rung, top)`: per pair (a, b), the change in the pair's difference between the rung and the
  top, (rung_a - rung_b) - (top_a - top_b), with simultaneous intervals over all k(k-1)/2 pairs. The change of a
  pair is the difference of the two optimizers' per-seed changes u = rung - top, so the pairs are the pairwise
  contrasts of a k x n repeated-measures design: Tukey's studentized range on the two-way (optimizer x seed)
  residual, df = (k - 1)(n - 1). The seed's own effect (a lucky seed lifts every optimizer) cancels in each
  contrast and leaves the residual, and the pooled residual gives 8 degrees of freedom at 3 seeds where a pair's
  own paired t has 2 (Bonferroni-t over 10 pairs would need t(0.9975, 2) = 14.1: 20-point intervals).
- `resolution(changes)`: the smallest d such that every pair's change lies within +-d (the intervals' extreme).
- `established_orders(matrix)`: each pair's paired t-test by seed, Holm over the pairs: the pairwise tables' rule.
- `classify_orders(top, rung)`: established at the top, reproduced (the rung establishes the same sign),
  contradicted (established at both, opposite signs), undetermined (established at the top only).
- `tau_b_interval(rung, top)`: a projection interval for Kendall's tau-b of the true means: Tukey intervals of
  every pairwise difference at each rung (at 1 - (1 - confidence) / 2 each, so both hold together at
  `confidence`); a pair whose sign is fixed at both rungs is concordant or discordant for sure, every other pair
  could be either, which bounds tau. It covers whenever the intervals do (conservative), unlike the percentile
  bootstrap it replaces (10 distinct resamples at 3 seeds: 67-71 % coverage, benchmarks/fidelity_coverage.py).
- `is_faithful`: the top establishes an order, the rung reproduces every one, contradicts none, and its
  resolution is at most the study's (`fidelity: {resolution: ...}`).
- `seeds_for_resolution`, `seeds_to_establish`: the planner, from the ladder's own residual spread.
- `spread_ratio(changes)`: the noisiest optimizer's spread over the others' (Grubbs' per-row variances,
  `optimizer_variances`). The change intervals pool one spread; from UNEQUAL_SPREAD_RATIO their measured
  coverage falls below 90 %, and the report flags the rung's intervals as possibly under-covering.
- `simulated_ladder`: values drawn as the coverage measurements draw them (a shared seed effect plus noise).
"""

import functools
import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from optbench.analysis.statistics.exact_tests import holm

CONFIDENCE = 0.95
DEFAULT_RESOLUTION_POINTS = 2.0  # fidelity: {resolution: 2}: orders of optimizers more than 2 points apart carry
TARGET_POWER = 0.8
MAX_SEEDS = 200  # the planner says "more than 200" beyond this
SD_CONFIDENCE = 0.8  # the planner's spread: its one-sided 80 % upper bound (seed_planner.sd_upper_bound)


@dataclass(frozen=True)
class PairChange:
    a: int  # row of the first optimizer
    b: int
    change: float  # (rung_a - rung_b) - (top_a - top_b), metric units
    low: float  # simultaneous interval over every pair (NaN when it cannot be formed: n < 2)
    high: float


def pairs_of(k: int) -> list[tuple[int, int]]:
    return list(combinations(range(k), 2))


def residual_spread(values: np.ndarray) -> tuple[float, int]:
    """(sd, df) of the optimizer x seed two-way residual: what is left of each value once its optimizer's and its
    seed's means are taken out; df = (k - 1)(n - 1). NaN sd when df is 0."""
    values = np.asarray(values, dtype=float)
    k, n = values.shape
    df = (k - 1) * (n - 1)
    if df <= 0:
        return math.nan, 0
    residual = values - values.mean(axis=1, keepdims=True) - values.mean(axis=0, keepdims=True) + values.mean()
    return float(math.sqrt((residual**2).sum() / df)), df


@functools.lru_cache(maxsize=1024)  # scipy integrates numerically (tens of ms): the same (k, df) recur
def studentized_range_quantile(confidence: float, k: int, df: int) -> float:
    return float(stats.studentized_range.ppf(confidence, k, df))


def tukey_half_width(values: np.ndarray, confidence: float = CONFIDENCE) -> float:
    """Half-width of Tukey's simultaneous intervals for every difference of two optimizers' means over the same
    seeds (repeated measures): q(confidence, k, df) * residual sd / sqrt(n)."""
    k, n = np.shape(values)
    sd, df = residual_spread(values)
    if k < 2 or df <= 0:
        return math.nan
    return studentized_range_quantile(confidence, k, df) * sd / math.sqrt(n)


def change_intervals(rung: np.ndarray, top: np.ndarray, confidence: float = CONFIDENCE) -> list[PairChange]:
    """Per pair, the change of its difference from the top to the rung, with simultaneous intervals."""
    changes = np.asarray(rung, dtype=float) - np.asarray(top, dtype=float)  # u: each optimizer's own change
    means = changes.mean(axis=1)
    half = tukey_half_width(changes, confidence)
    rows = []
    for a, b in pairs_of(len(means)):
        change = float(means[a] - means[b])
        rows.append(PairChange(a, b, change, change - half, change + half))
    return rows


def resolution(changes: list[PairChange]) -> float:
    """The smallest d (metric units) with every pair's change within +-d at the intervals' confidence."""
    bounds = [max(abs(row.low), abs(row.high)) for row in changes]
    return float(max(bounds)) if bounds and all(math.isfinite(bound) for bound in bounds) else math.nan


def established_orders(values: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(sign, Holm-adjusted p) per pair: +1 when a is established above b (paired t by seed, Holm over the
    pairs, p < alpha), -1 below, 0 when not established (a pair without spread is not testable: 0)."""
    values = np.asarray(values, dtype=float)
    pairs = pairs_of(len(values))
    if not pairs or values.shape[1] < 2:
        return np.zeros(len(pairs), dtype=int), np.full(len(pairs), math.nan)
    differences = np.array([values[a] - values[b] for a, b in pairs])  # pairs x seeds
    spread = differences.std(axis=1, ddof=1)
    testable = spread > 1e-12 * max(1.0, float(np.abs(values).max()))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_values = stats.ttest_1samp(differences, 0.0, axis=1).pvalue  # one call: the pairs are rows
    adjusted = holm(np.where(testable, p_values, math.nan))
    directions = np.sign(differences.mean(axis=1)).astype(int)
    return np.where(adjusted < alpha, directions, 0), adjusted  # NaN < alpha is False


@dataclass(frozen=True)
class OrderCounts:
    established: int  # pairs whose order the top establishes
    reproduced: int  # of those, established by the rung in the same direction
    contradicted: int  # established at both, in opposite directions
    undetermined: int  # established at the top, not at the rung
    labels: tuple[str, ...]  # per pair: reproduced | contradicted | undetermined | "" (not established at the top)


def classify_orders(top_signs: np.ndarray, rung_signs: np.ndarray) -> OrderCounts:
    labels = []
    for top_sign, rung_sign in zip(top_signs, rung_signs):
        if top_sign and rung_sign:
            labels.append("reproduced" if top_sign == rung_sign else "contradicted")
        elif top_sign:
            labels.append("undetermined")
        else:
            labels.append("")
    return OrderCounts(
        established=int(np.count_nonzero(top_signs)),
        reproduced=labels.count("reproduced"),
        contradicted=labels.count("contradicted"),
        undetermined=labels.count("undetermined"),
        labels=tuple(labels),
    )


def tau_b(x: ArrayLike, y: ArrayLike) -> float:
    return float(stats.kendalltau(x, y).statistic)  # scipy's default variant is tau-b (ties corrected)


def tau_b_interval(rung: np.ndarray, top: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Projection interval of tau between the true means of the two rungs (same seeds, same optimizer rows)."""
    rung, top = np.asarray(rung, dtype=float), np.asarray(top, dtype=float)
    each = 1 - (1 - confidence) / 2  # both rungs' intervals hold together with probability >= confidence
    signs = []
    for values in (rung, top):
        means, half = values.mean(axis=1), tukey_half_width(values, each)
        if not math.isfinite(half):
            return math.nan, math.nan
        signs.append(
            [
                int(np.sign(means[a] - means[b])) if abs(means[a] - means[b]) > half else 0
                for a, b in pairs_of(len(means))
            ]
        )
    pairs = len(signs[0])
    if not pairs:
        return math.nan, math.nan
    sure_concordant = sum(1 for s, t in zip(*signs) if s and s == t)
    sure_discordant = sum(1 for s, t in zip(*signs) if s and t and s != t)
    return (2 * sure_concordant - pairs) / pairs, (pairs - 2 * sure_discordant) / pairs


def is_faithful(counts: OrderCounts, rung_resolution: float, wanted_resolution: float) -> bool:
    return (
        counts.established >= 1
        and counts.reproduced == counts.established
        and counts.contradicted == 0
        and math.isfinite(rung_resolution)
        and rung_resolution <= wanted_resolution
    )


def rung_is_faithful(
    rung: np.ndarray, top: np.ndarray, alpha: float, wanted_resolution: float, confidence: float = CONFIDENCE
) -> bool:
    """The whole rule on one rung and the top over the same seeds (the ladder's tables apply its parts, each on
    its own seed set): what the simulations in tests/ and benchmarks/fidelity_coverage.py count."""
    counts = classify_orders(established_orders(top, alpha)[0], established_orders(rung, alpha)[0])
    return is_faithful(counts, resolution(change_intervals(rung, top, confidence)), wanted_resolution)


# ---------------------------------------------------------------- the planner


def sd_upper_bound(spread: float, df: int, confidence: float = SD_CONFIDENCE) -> float:
    """One-sided upper confidence bound of a standard deviation estimated on df degrees of freedom."""
    return spread * math.sqrt(df / stats.chi2.ppf(1 - confidence, df)) if df > 0 else math.nan


def seeds_for_resolution(
    change_sd: float, optimizers: int, wanted: float, confidence: float = CONFIDENCE
) -> int | None:
    """The fewest seeds (shared by the rung and the top) whose simultaneous change intervals are at most +-wanted
    wide when the true changes are 0: q(confidence, k, (k-1)(n-1)) * change_sd / sqrt(n) <= wanted. None beyond
    MAX_SEEDS. `change_sd`: the residual sd of the per-seed changes (the ladder's own)."""
    if not (math.isfinite(change_sd) and change_sd > 0 and wanted > 0 and optimizers >= 2):
        return None
    for n in range(2, MAX_SEEDS + 1):
        q = studentized_range_quantile(confidence, optimizers, (optimizers - 1) * (n - 1))
        if q * change_sd / math.sqrt(n) <= wanted:
            return n
    return None


def seeds_to_establish(
    difference_sd: float, gap: float, pairs: int, alpha: float, power: float = TARGET_POWER
) -> int | None:
    """The fewest seeds at the top whose paired t-test at alpha / pairs (Holm's strictest step) reaches `power`
    against a gap of `gap` with per-seed differences of sd `difference_sd`. None beyond MAX_SEEDS."""
    if not (math.isfinite(difference_sd) and difference_sd > 0 and gap > 0 and pairs >= 1):
        return None
    level = alpha / pairs
    for n in range(2, MAX_SEEDS + 1):
        critical = stats.t.ppf(1 - level / 2, n - 1)
        shift = gap / difference_sd * math.sqrt(n)
        reached = stats.nct.sf(critical, n - 1, shift) + stats.nct.cdf(-critical, n - 1, shift)
        if reached >= power:
            return n
    return None


# ---------------------------------------------------------------- simulation (coverage, tests)


def simulated_ladder(
    rng: np.random.Generator, means: np.ndarray, seeds: int, shared_sd: float, own_sd: float
) -> np.ndarray:
    """One rung's optimizers x seeds values: each optimizer's true mean, a seed effect shared by every optimizer
    (initialisation and data order), and each run's own noise."""
    means = np.asarray(means, dtype=float)
    return means[:, None] + rng.normal(0.0, shared_sd, (1, seeds)) + rng.normal(0.0, own_sd, (len(means), seeds))


# ---------------------------------------------------------------- unequal spreads: the change intervals' assumption

# The noisiest optimizer's spread over the others' from which the change intervals' simultaneous coverage was
# measured below 90 % at 3 and at 6 seeds (benchmarks/fidelity_coverage.py measures it, and fails when this differs).
UNEQUAL_SPREAD_RATIO = 3.0


def optimizer_variances(values: np.ndarray) -> np.ndarray:
    """Each optimizer's own variance in a k x n optimizer x seed layout, unbiased (Grubbs 1948): its row's mean
    square of the two-way residual, less the share every other row puts in it, E[row mean square] =
    var_i (1 - 2/k) + sum(var) / k^2; it can come out negative. NaN when k < 3 (two rows cannot be told apart)
    or n < 2."""
    values = np.asarray(values, dtype=float)
    k, n = values.shape
    if k < 3 or n < 2:
        return np.full(k, math.nan)
    residual = values - values.mean(axis=1, keepdims=True) - values.mean(axis=0, keepdims=True) + values.mean()
    mean_squares = (residual**2).sum(axis=1) / (n - 1)
    total = k / (k - 1) * mean_squares.sum()  # the sum of the k variances
    return np.asarray((mean_squares - total / k**2) / (1 - 2 / k), dtype=float)


def spread_ratio(values: np.ndarray) -> tuple[float, int]:
    """(ratio, row): the noisiest optimizer's spread over the root mean square spread of the others, and its row;
    the change intervals pool one spread for all. (NaN, -1) when it cannot be estimated; inf when only the
    noisiest shows any spread."""
    spreads = np.sqrt(np.clip(optimizer_variances(values), 0.0, None))  # a negative variance: no spread seen
    if not np.isfinite(spreads).all():
        return math.nan, -1
    row = int(np.argmax(spreads))
    others = math.sqrt(float(np.mean(np.delete(spreads, row) ** 2)))
    if spreads[row] == 0:
        return math.nan, -1  # no optimizer shows any spread
    if others <= 1e-9 * spreads[row]:  # the others' spread is rounding error
        return math.inf, row
    return float(spreads[row] / others), row


def spreads_unequal(ratio: float) -> bool:
    """The ratio reaches UNEQUAL_SPREAD_RATIO, up to rounding (a ratio of 3 computed as 2.9999999999999996 does)."""
    return ratio >= UNEQUAL_SPREAD_RATIO or math.isclose(ratio, UNEQUAL_SPREAD_RATIO)
