"""The statistics of a fidelity ladder, as pure functions of optimizers x seeds matrices (docs/fidelity.md).

A rung's values are a k x n matrix (k optimizers, n seeds, one value per cell: a diverged or failed run at its
recorded score or chance); every matrix handed to one comparison has the same seeds in the same columns. The
functions that judge also take a stack of matrices (..., k, n), so a simulation judges thousands of ladders in one
call (fidelity_power.py). Two answers per rung, each at its stated confidence:
- *Magnitude*: `change_intervals(rung, top)`: per pair (a, b), the change in the pair's difference between the
  rung and the top, (rung_a - rung_b) - (top_a - top_b), with one-sided 95 % bounds on each side from the pair's own
  per-seed changes (paired t, n - 1 df: a noisier optimizer widens only its own pairs). `resolution(changes)`: the
  largest per-pair upper bound of |change|, |change| + t(0.95, n - 1) * se. For a fixed true change c > 0 the bound
  misses only when c exceeds the one-sided upper bound (at most 5 %), for c < 0 only when it falls below the lower
  one, so each pair's |change| is covered at 95 %. "Every change within d" is an intersection-union claim (Berger
  1982): it is certified only when every pair's bound is within d, so a rung whose largest true change exceeds d is
  certified at most 5 % of the time, without a multiplicity correction (Tukey's two-sided simultaneous intervals,
  which this replaces, covered the largest change in 99.8-100 % of ladders and certified almost nothing).
- *Order kept*: `order_fates(rung, top_signs)`: for each order the top establishes (`established_orders`: paired t
  by seed, Holm over the pairs, the pairwise tables' rule), a one-sided 95 % bound on the rung's own difference:
  *kept* when it shows the difference on the top's side, *reversed* when it shows it on the other, else
  *undetermined*; the rung need not re-establish the order at its own significance. `order_answer`: yes when every
  established order is kept (intersection-union again: each at 5 %), no when one is reversed, else undetermined
  (also when the top establishes none: there is nothing to keep).
- `is_faithful`: order kept, and the resolution within the study's (`fidelity: {resolution: ...}`).
- `tau_b_interval(rung, top)`: a projection interval for Kendall's tau-b of the true means: Tukey intervals of
  every pairwise difference at each rung (at 1 - (1 - confidence) / 2 each, so both hold together at
  `confidence`); a pair whose sign is fixed at both rungs is concordant or discordant for sure, every other pair
  could be either, which bounds tau. Conservative: it covers whenever the intervals do.
- `optimizer_variances`: each optimizer's own variance in an optimizer x seed layout (Grubbs), the spreads the power
  simulations draw from; `sd_upper_bound` and `seeds_to_establish`: the planner's spread and the top's seeds.
"""

import functools
import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from optbench.analysis.statistics.exact_tests import holm

CONFIDENCE = 0.95  # each one-sided bound; the claims they make (every change within d, every order kept) hold at it
DEFAULT_RESOLUTION_POINTS = 2.0  # fidelity: {resolution: 2}: orders of optimizers more than 2 points apart carry
TARGET_POWER = 0.8
MAX_SEEDS = 200  # the planner says "more than 200" beyond this
SD_CONFIDENCE = 0.8  # the planner's spread: its one-sided 80 % upper bound (seed_planner.sd_upper_bound)
YES, NO, UNDETERMINED = "yes", "no", "undetermined"  # order kept
KEPT, REVERSED = "kept", "reversed"  # an established order's fate at a rung (or UNDETERMINED, or "" if not one)


@dataclass(frozen=True)
class PairChange:
    a: int  # row of the first optimizer
    b: int
    change: float  # (rung_a - rung_b) - (top_a - top_b), metric units
    low: float  # one-sided 95 % lower bound of the change, from the pair's own spread (NaN when n < 2)
    high: float  # one-sided 95 % upper bound

    @property
    def bound(self) -> float:
        """The 95 % upper bound of |change|: the larger of the upper bound of change and of -change."""
        return max(self.high, -self.low)


def pairs_of(k: int) -> list[tuple[int, int]]:
    return list(combinations(range(k), 2))


def pair_differences(values: np.ndarray) -> np.ndarray:
    """(..., k, n) -> (..., pairs, n): each pair's per-seed difference a - b, pairs in `pairs_of` order."""
    values = np.asarray(values, dtype=float)
    pairs = pairs_of(values.shape[-2])
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    return np.asarray(values[..., first, :] - values[..., second, :])


def one_sided_bounds(differences: np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, ...]:
    """(mean, low, high, se) over the last axis (seeds): the paired t's one-sided `confidence` bounds on each side.
    NaN bounds with fewer than 2 seeds."""
    n = differences.shape[-1]
    mean = differences.mean(axis=-1)
    if n < 2:
        return mean, np.full_like(mean, math.nan), np.full_like(mean, math.nan), np.full_like(mean, math.nan)
    se = differences.std(axis=-1, ddof=1) / math.sqrt(n)
    half = stats.t.ppf(confidence, n - 1) * se
    return mean, mean - half, mean + half, se


def change_intervals(rung: np.ndarray, top: np.ndarray, confidence: float = CONFIDENCE) -> list[PairChange]:
    """Per pair, the change of its difference from the top to the rung, with one-sided bounds on its own spread."""
    mean, low, high, _ = one_sided_bounds(
        pair_differences(np.asarray(rung, float) - np.asarray(top, float)), confidence
    )
    return [
        PairChange(a, b, float(mean[index]), float(low[index]), float(high[index]))
        for index, (a, b) in enumerate(pairs_of(np.shape(rung)[0]))
    ]


def resolution(changes: list[PairChange]) -> float:
    """The certified resolution (metric units): the largest pair's 95 % upper bound of |change|."""
    bounds = [row.bound for row in changes]
    return float(max(bounds)) if bounds and all(math.isfinite(bound) for bound in bounds) else math.nan


def certified_resolutions(rung: np.ndarray, top: np.ndarray, confidence: float = CONFIDENCE) -> np.ndarray:
    """`resolution(change_intervals(...))` of a stack of ladders (..., k, n) at once: max over pairs of
    |change| + t * se."""
    n = np.shape(rung)[-1]
    if n < 2:
        return np.full(np.shape(rung)[:-2], math.nan)
    mean, _, _, se = one_sided_bounds(pair_differences(np.asarray(rung) - np.asarray(top)), confidence)
    return np.asarray((np.abs(mean) + stats.t.ppf(confidence, n - 1) * se).max(axis=-1))


def established_orders(values: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(sign, Holm-adjusted p) per pair: +1 when a is established above b (paired t by seed, Holm over the
    pairs, p < alpha), -1 below, 0 when not established (a pair without spread is not testable: 0)."""
    values = np.asarray(values, dtype=float)
    pairs = pairs_of(len(values))
    if not pairs or values.shape[1] < 2:
        return np.zeros(len(pairs), dtype=int), np.full(len(pairs), math.nan)
    differences = pair_differences(values)  # pairs x seeds
    spread = differences.std(axis=1, ddof=1)
    testable = spread > 1e-12 * max(1.0, float(np.abs(values).max()))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_values = stats.ttest_1samp(differences, 0.0, axis=1).pvalue  # one call: the pairs are rows
    adjusted = holm(np.where(testable, p_values, math.nan))
    directions = np.sign(differences.mean(axis=1)).astype(int)
    return np.where(adjusted < alpha, directions, 0), adjusted  # NaN < alpha is False


def kept_by_bounds(values: np.ndarray, top_signs: np.ndarray, confidence: float = CONFIDENCE) -> np.ndarray:
    """(..., pairs) of +1 kept, -1 reversed, 0 undetermined (or not established at the top), from the rung's own
    per-seed differences (..., k, n): the one-sided bound of sign * difference above 0, or its other bound below
    0. A pair without spread is not testable: 0."""
    signs = np.asarray(top_signs)
    mean, low, high, se = one_sided_bounds(pair_differences(values), confidence)
    toward_low = np.where(signs > 0, low, -high)  # lower bound of sign * difference
    toward_high = np.where(signs > 0, high, -low)
    testable = se > 1e-12 * np.maximum(1.0, np.abs(mean))
    fate = np.where(toward_low > 0, 1, np.where(toward_high < 0, -1, 0))
    return np.where(testable & (signs != 0), fate, 0)


def all_kept(values: np.ndarray, top_signs: np.ndarray, confidence: float = CONFIDENCE) -> np.ndarray:
    """Per ladder of a stack (..., k, n): is every order the top establishes kept (False when it establishes none)?"""
    fates = kept_by_bounds(values, top_signs, confidence)
    established = np.asarray(top_signs) != 0  # (pairs,) or one row per ladder
    return np.asarray(((fates == 1) | ~established).all(axis=-1) & established.any(axis=-1))


@dataclass(frozen=True)
class OrderCounts:
    established: int  # pairs whose order the top establishes
    kept: int  # of those, shown on the top's side at the rung (one-sided 95 % bound)
    reversed: int  # shown on the other side
    undetermined: int  # neither
    labels: tuple[str, ...]  # per pair: kept | reversed | undetermined | "" (not established at the top)

    @property
    def answer(self) -> str:
        """Order kept: yes (every established order kept), no (one reversed), else undetermined."""
        if self.reversed:
            return NO
        return YES if self.established and self.kept == self.established else UNDETERMINED


def order_fates(rung: np.ndarray, top_signs: np.ndarray, confidence: float = CONFIDENCE) -> OrderCounts:
    """What became of each order the top establishes (`top_signs`, from `established_orders`) at the rung."""
    fates = kept_by_bounds(np.asarray(rung, dtype=float), top_signs, confidence)
    labels = tuple(
        "" if not sign else {1: KEPT, -1: REVERSED, 0: UNDETERMINED}[int(fate)] for sign, fate in zip(top_signs, fates)
    )
    return OrderCounts(
        established=int(np.count_nonzero(top_signs)),
        kept=labels.count(KEPT),
        reversed=labels.count(REVERSED),
        undetermined=labels.count(UNDETERMINED),
        labels=labels,
    )


def is_faithful(counts: OrderCounts, rung_resolution: float, wanted_resolution: float) -> bool:
    """Both answers yes: every order the top establishes kept, and every change certified within the resolution."""
    return counts.answer == YES and math.isfinite(rung_resolution) and rung_resolution <= wanted_resolution


def rung_is_faithful(
    rung: np.ndarray, top: np.ndarray, alpha: float, wanted_resolution: float, confidence: float = CONFIDENCE
) -> bool:
    """The whole rule on one rung and the top over the same seeds (the ladder's tables apply its parts, each on
    its own seed set)."""
    counts = order_fates(rung, established_orders(top, alpha)[0], confidence)
    return is_faithful(counts, resolution(change_intervals(rung, top, confidence)), wanted_resolution)


# ---------------------------------------------------------------- tau-b and its projection interval


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


# ---------------------------------------------------------------- spreads for the planner


def sd_upper_bound(spread: float, df: int, confidence: float = SD_CONFIDENCE) -> float:
    """One-sided upper confidence bound of a standard deviation estimated on df degrees of freedom."""
    return spread * math.sqrt(df / stats.chi2.ppf(1 - confidence, df)) if df > 0 else math.nan


def optimizer_variances(values: np.ndarray) -> np.ndarray:
    """Each optimizer's own variance in a k x n optimizer x seed layout, unbiased (Grubbs 1948): its row's mean
    square of the two-way residual, less the share every other row puts in it, E[row mean square] =
    var_i (1 - 2/k) + sum(var) / k^2; it can come out negative. With two rows, which cannot be told apart, each
    gets half the variance of their difference. NaN when n < 2."""
    values = np.asarray(values, dtype=float)
    k, n = values.shape
    if n < 2 or k < 2:
        return np.full(k, math.nan)
    if k == 2:
        return np.full(2, float(np.var(values[0] - values[1], ddof=1)) / 2)
    residual = values - values.mean(axis=1, keepdims=True) - values.mean(axis=0, keepdims=True) + values.mean()
    mean_squares = (residual**2).sum(axis=1) / (n - 1)
    total = k / (k - 1) * mean_squares.sum()  # the sum of the k variances
    return np.asarray((mean_squares - total / k**2) / (1 - 2 / k), dtype=float)


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
