"""How far two rankings of the same optimizers agree: ranks, Kendall's tau, its intervals, and their coverage.

A workload's ranking orders its optimizers by their mean headline in its direction (`oriented`: a loss is negated,
so higher is better everywhere below). Kendall's tau between two workloads' rankings is scipy.stats.kendalltau of
their oriented means (tau-b: ties corrected). Its estimand is tau between the true means, and two intervals of it
are offered:
- `projection_interval`: fidelity_stats.tau_b_interval, the projection of Tukey's simultaneous intervals of each
  workload's pairwise differences (repeated measures over its seeds, each family at 97.5 % so both hold together at
  95 %): a pair both intervals order counts for certain, any other pair either way. Its coverage is at least 95 %
  whenever the two Tukey families cover, by construction; it is wide when means are close.
- `bootstrap_interval`: the percentile bootstrap of scipy.stats.bootstrap, seeds resampled within each workload
  (each workload's optimizers x seeds matrix resampled by seed columns, the workloads independently).
`interval_coverage` measures either by simulation (normal seed noise around given true means): with five
optimizers and six seeds the bootstrap holds CIFAR-like true means (a clear best and worst, three within a point)
near 95 %, but falls far below when all five lie within about one seed standard deviation (tau's bootstrap
distribution centres on the observed ranking, which near ties scramble), so the report prints the projection
interval and the measured coverage of both (scripts/tau_coverage.py, docs/cross-workload-study).
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from optbench.analysis.statistics.fidelity_stats import CONFIDENCE, tau_b_interval

BOOTSTRAP_RESAMPLES = 2000  # percentile intervals want 1,000 or more (Efron & Tibshirani 1993)
Interval = Callable[[np.ndarray, np.ndarray], tuple[float, float]]


def oriented(values: npt.ArrayLike, higher_is_better: bool) -> np.ndarray:
    """The values with higher better: a loss negated, so every ranking below reads one way."""
    array = np.asarray(values, dtype=float)
    return array if higher_is_better else -array


def ranks(means: npt.ArrayLike, higher_is_better: bool) -> np.ndarray:
    """1 for the best mean in the metric's direction; tied means share their average rank."""
    return np.asarray(stats.rankdata(-oriented(means, higher_is_better), method="average"), dtype=float)


def kendall_tau(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Kendall's tau-b between two oriented score vectors of the same optimizers (NaN with fewer than two)."""
    if len(np.asarray(a)) < 2:
        return math.nan
    return float(stats.kendalltau(a, b).statistic)


def tau_of_means(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Tau-b between the rows of a and b along their last axis (optimizers), batched over leading axes: what the
    bootstrap evaluates on every resample at once (kendall_tau on one pair of vectors gives the same number)."""
    first, second = np.triu_indices(a.shape[-1], 1)
    signs_a = np.sign(a[..., first] - a[..., second])
    signs_b = np.sign(b[..., first] - b[..., second])
    pairs = len(first)
    untied = np.sqrt((pairs - (signs_a == 0).sum(-1)) * (pairs - (signs_b == 0).sum(-1)))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((signs_a * signs_b).sum(-1) / untied, dtype=float)


def tau_of_samples(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """Tau of the mean over seeds (`axis`) of two optimizers x ... x seeds arrays (scipy.stats.bootstrap puts its
    resample axis between the optimizers and the seeds)."""
    return tau_of_means(np.moveaxis(a.mean(axis=axis), 0, -1), np.moveaxis(b.mean(axis=axis), 0, -1))


def projection_interval(a: np.ndarray, b: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Tau between the true means of two oriented optimizers x seeds matrices, at `confidence` or more: every
    ordering both workloads' Tukey intervals establish is certain, every other pair counted either way."""
    return tau_b_interval(np.asarray(a, dtype=float), np.asarray(b, dtype=float), confidence)


def bootstrap_interval(
    a: np.ndarray,
    b: np.ndarray,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    rng: np.random.Generator | None = None,
) -> tuple[float, float]:
    """The percentile bootstrap interval of tau, each matrix's seed columns resampled with replacement (the two
    independently). NaN when a matrix has fewer than two seeds."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if min(a.shape[-1], b.shape[-1]) < 2:
        return math.nan, math.nan
    result = stats.bootstrap(
        (a, b),
        tau_of_samples,
        n_resamples=resamples,
        confidence_level=confidence,
        method="percentile",
        vectorized=True,
        axis=-1,
        rng=np.random.default_rng(0) if rng is None else rng,
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@dataclass(frozen=True)
class Coverage:
    truth: float  # tau between the true means
    covered: int  # simulations whose interval held it
    simulations: int
    mean_width: float


def interval_coverage(
    true_a: npt.ArrayLike,
    true_b: npt.ArrayLike,
    seeds: int,
    sd: float,
    interval: Interval,
    simulations: int,
    rng: np.random.Generator,
) -> Coverage:
    """How often `interval(a, b)` holds tau between `true_a` and `true_b` (oriented true means) when each
    workload's optimizers x seeds values are its true means plus independent normal noise of `sd`."""
    true_a, true_b = np.asarray(true_a, dtype=float), np.asarray(true_b, dtype=float)
    truth = kendall_tau(true_a, true_b)
    covered, widths = 0, []
    for _ in range(simulations):
        a = true_a[:, None] + rng.normal(0.0, sd, (len(true_a), seeds))
        b = true_b[:, None] + rng.normal(0.0, sd, (len(true_b), seeds))
        low, high = interval(a, b)
        covered += bool(low - 1e-9 <= truth <= high + 1e-9)  # tau takes a few values: the ends count as inside
        widths.append(high - low)
    return Coverage(truth, covered, simulations, float(np.mean(widths)) if widths else math.nan)
