"""AlgoPerf's scoring of time-to-target across workloads: performance ratios, the profile, its integrated score.

Dahl et al. 2023 ("Benchmarking Neural Network Training Algorithms", AlgoPerf), section 4.5: each optimizer's cost
on a workload (here the median over seeds of the optimizer steps to the workload's target; a run that never reaches
it costs infinity) is divided by the best optimizer's cost there, the *performance ratio* r; a ratio above
`r_max` (4) counts as never reached. The performance profile rho(tau) is the fraction of workloads with r <= tau
(robust.profile_fractions, shared with the aggregator's profiles table), and the score is its area over
[1, r_max] divided by r_max - 1: 1 for an optimizer best everywhere, 0 for one never within r_max of the best.
Because rho is a step function the area is exact: each workload adds max(0, r_max - r) / (r_max - 1), so the
score is the mean of that over workloads (`profile_score`).
"""

import math
from collections.abc import Collection

import numpy as np
import numpy.typing as npt

from optbench.analysis.statistics.robust import profile_fractions

R_MAX = 4.0  # AlgoPerf's largest ratio that still counts


def performance_ratios(costs: npt.ArrayLike) -> np.ndarray:
    """[workloads, optimizers] costs -> each over the best (smallest) cost on its workload; inf for a cost that is
    inf or on a workload nobody solved; NaN where the optimizer did not run."""
    cost = np.asarray(costs, dtype=float)
    best = np.fmin.reduce(cost, axis=1) if cost.shape[1] else np.full(cost.shape[0], math.nan)
    reference = np.where(np.isfinite(best) & (best > 0), best, math.inf)
    with np.errstate(invalid="ignore"):
        ratios = cost / reference[:, None]
    return np.where(np.isnan(cost), math.nan, np.where(np.isfinite(reference)[:, None], ratios, math.inf))


def profile(costs: npt.ArrayLike, taus: Collection[float]) -> np.ndarray:
    """[optimizers, taus]: rho(tau), the fraction of the workloads it ran on where its ratio is within tau (a ratio
    above R_MAX counts as never reached only in the score, as AlgoPerf plots the profile up to R_MAX)."""
    return profile_fractions(costs, taus)


def profile_score(costs: npt.ArrayLike, r_max: float = R_MAX) -> np.ndarray:
    """[optimizers]: the area under rho over [1, r_max] over r_max - 1, exact (the mean over the workloads it ran on
    of max(0, r_max - r) / (r_max - 1)); NaN for an optimizer that ran nowhere."""
    ratios = performance_ratios(costs)
    with np.errstate(invalid="ignore"):
        shares = np.where(np.isfinite(ratios), np.clip(r_max - ratios, 0.0, None) / (r_max - 1), 0.0)
    ran = ~np.isnan(ratios)
    counts = ran.sum(axis=0)
    totals = np.where(ran, shares, 0.0).sum(axis=0)
    return np.where(counts > 0, totals / np.maximum(counts, 1), math.nan)
