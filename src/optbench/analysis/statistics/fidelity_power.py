"""The power of a fidelity ladder's two answers and the seeds each needs, by simulation (docs/fidelity.md).

Power is asked of an *unchanged* rung: its true ranking and gaps are the top's. Both answers (fidelity_stats.py)
take a maximum or an intersection over the pairs, whose per-seed differences share optimizers, so no closed formula
gives their power; each figure here is the share of SIMULATIONS ladders drawn at once (a (ladders, k, n) stack) and
judged by the same vectorised functions the report uses, with a fixed generator (the same figure every run).
- `design_resolution(spreads, seeds)`: the smallest d at which an unchanged rung is certified with 80 % power at
  those shared seeds: the 80 % quantile of the certified resolution when every change is 0. It sizes the whole
  decision, the observed |change| plus its bound, not the bound's half-width alone. `spreads`: each optimizer's sd
  of its per-seed change between the rung and the top (fidelity_stats.optimizer_variances), so one noisy optimizer
  widens the pairs it is in.
- `keep_power(means, spreads, top_signs, seeds)`: the share of unchanged rungs (means: the top's) in which every
  order the top establishes is kept; `spreads`: each optimizer's own sd at the rung.
- `seeds_to_certify`, `seeds_to_keep`: the fewest shared seeds (at most fidelity_stats.MAX_SEEDS) reaching 80 %,
  by bisection over n; `certify_power` gives the power at a number of seeds from a second, independent generator,
  the check that the planner's number keeps its promise. `orders_out_of_reach`: where no number of seeds keeps
  the orders, the ones an unchanged rung keeps in under 80 % of ladders even at MAX_SEEDS (`pair_keep_power`),
  so the report names why.
- `false_keeps`: order kept said yes while an order the top established is not the rung's true one (the order
  answer's error: its rate is the answer's size).
- `established_signs`, `rule_answers`: the whole rule on a stack of ladders (the top's orders by paired t and Holm
  per ladder, then both answers), what the simulations in tests/ and benchmarks/fidelity_coverage.py count.
- `draw_runs`: a stack of rungs' values, each optimizer's mean plus a seed effect every optimizer of a seed shares
  plus each run's own noise, normal or t-distributed (heavy tails) scaled to the same sd.
"""

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from optbench.analysis.statistics.fidelity_stats import (
    MAX_SEEDS,
    TARGET_POWER,
    all_kept,
    certified_resolutions,
    kept_by_bounds,
    pair_differences,
)

SIMULATIONS = 4000  # ladders per figure: a power near 80 % to within 0.6 points (one binomial standard error)
SEARCH_SEED, CHECK_SEED = 0, 1  # generators: the planner's search, and the independent check of its number


def unit_noise(rng: np.random.Generator, size: tuple[int, ...], tails: float = math.inf) -> np.ndarray:
    """Draws of variance 1: standard normal, or Student's t with `tails` degrees of freedom (> 2) rescaled."""
    if math.isinf(tails):
        return rng.standard_normal(size)
    return rng.standard_t(tails, size) / math.sqrt(tails / (tails - 2))


def draw_runs(
    rng: np.random.Generator,
    means: ArrayLike,
    spreads: ArrayLike,
    seeds: int,
    ladders: int,
    shared_sd: float = 0.0,
    tails: float = math.inf,
) -> np.ndarray:
    """(ladders, k, seeds) values: each optimizer's mean, a seed effect of sd `shared_sd` every optimizer of the
    seed shares (initialisation, data order), and each run's own noise of its optimizer's sd."""
    means, spreads = np.asarray(means, dtype=float), np.asarray(spreads, dtype=float)
    shared = shared_sd * unit_noise(rng, (ladders, 1, seeds), tails)
    own = unit_noise(rng, (ladders, len(means), seeds), tails) * spreads[:, None]
    return np.asarray(means[:, None] + shared + own)


def unchanged_resolutions(spreads: ArrayLike, seeds: int, ladders: int, rng: np.random.Generator) -> np.ndarray:
    """The certified resolution of `ladders` unchanged rungs: per-seed changes of mean 0 and the given spreads."""
    changes = draw_runs(rng, np.zeros(len(np.asarray(spreads))), spreads, seeds, ladders)
    return certified_resolutions(changes, np.zeros_like(changes))


def design_resolution(
    spreads: ArrayLike, seeds: int, power: float = TARGET_POWER, ladders: int = SIMULATIONS, seed: int = SEARCH_SEED
) -> float:
    """The smallest d an unchanged rung is certified at with `power` at `seeds` shared seeds (metric units)."""
    if seeds < 2 or not np.isfinite(np.asarray(spreads, dtype=float)).all():
        return math.nan
    return float(np.quantile(unchanged_resolutions(spreads, seeds, ladders, np.random.default_rng(seed)), power))


def certify_power(
    spreads: ArrayLike, seeds: int, wanted: float, ladders: int = SIMULATIONS, seed: int = CHECK_SEED
) -> float:
    """The share of unchanged rungs certified within `wanted` at `seeds` shared seeds."""
    if seeds < 2:
        return math.nan
    return float((unchanged_resolutions(spreads, seeds, ladders, np.random.default_rng(seed)) <= wanted).mean())


def keep_power(
    means: ArrayLike,
    spreads: ArrayLike,
    top_signs: ArrayLike,
    seeds: int,
    ladders: int = SIMULATIONS,
    seed: int = CHECK_SEED,
) -> float:
    """The share of unchanged rungs (the top's means, each optimizer's own sd at the rung) keeping every order the
    top establishes (`top_signs`); NaN when it establishes none."""
    signs = np.asarray(top_signs)
    if seeds < 2 or not signs.any():
        return math.nan
    values = draw_runs(np.random.default_rng(seed), means, spreads, seeds, ladders)
    return float(all_kept(values, signs).mean())


def pair_keep_power(
    means: ArrayLike,
    spreads: ArrayLike,
    top_signs: ArrayLike,
    seeds: int,
    ladders: int = SIMULATIONS,
    seed: int = CHECK_SEED,
) -> np.ndarray:
    """Per pair: the share of unchanged rungs keeping that order of the top's on its own (NaN where the top
    establishes none): `keep_power` asks it of every order at once."""
    signs = np.asarray(top_signs)
    values = draw_runs(np.random.default_rng(seed), means, spreads, seeds, ladders)
    kept = (kept_by_bounds(values, signs) == 1).mean(axis=0)
    return np.where(signs != 0, kept, math.nan)


def orders_out_of_reach(
    means: ArrayLike, spreads: ArrayLike, top_signs: ArrayLike, power: float = TARGET_POWER
) -> list[tuple[int, float]]:
    """(pair index, its share kept at MAX_SEEDS) of each order an unchanged rung keeps in fewer than `power` of
    ladders even at MAX_SEEDS: its gap is too small for its spread. Empty when each alone is within reach (then
    only all of them together are not)."""
    shares = pair_keep_power(means, spreads, top_signs, MAX_SEEDS)
    return [(int(index), float(shares[index])) for index in np.flatnonzero(shares < power)]  # NaN < power: False


def fewest_seeds(reaches: Callable[[int], bool]) -> int | None:
    """The smallest n in [2, MAX_SEEDS] with reaches(n), by bisection (power grows with n); None beyond."""
    low, high = 2, MAX_SEEDS
    if not reaches(high):
        return None
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle + 1, high)
    return low


def seeds_to_certify(spreads: ArrayLike, wanted: float, power: float = TARGET_POWER) -> int | None:
    """The fewest seeds shared by a rung and the top at which an unchanged rung is certified within `wanted`
    with `power`. None when the spreads are unknown or more than MAX_SEEDS are needed."""
    spreads = np.asarray(spreads, dtype=float)
    if not (wanted > 0 and len(spreads) >= 2 and np.isfinite(spreads).all() and spreads.max() > 0):
        return None
    return fewest_seeds(lambda n: design_resolution(spreads, n, power) <= wanted)


def seeds_to_keep(
    means: ArrayLike, spreads: ArrayLike, top_signs: ArrayLike, power: float = TARGET_POWER
) -> int | None:
    """The fewest seeds at a rung at which an unchanged rung keeps every order the top establishes with `power`.
    None when the top establishes none, the spreads are unknown, or more than MAX_SEEDS are needed."""
    spreads = np.asarray(spreads, dtype=float)
    if not (np.asarray(top_signs).any() and np.isfinite(spreads).all() and spreads.max() > 0):
        return None
    return fewest_seeds(lambda n: keep_power(means, spreads, top_signs, n, seed=SEARCH_SEED) >= power)


def holm_rows(p_values: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values along the last axis (each row a family): the step-down maxima of (m - i) p_(i)."""
    order = np.argsort(p_values, axis=-1)
    ranked = np.take_along_axis(p_values, order, axis=-1)
    m = p_values.shape[-1]
    adjusted_sorted = np.minimum(np.maximum.accumulate(ranked * (m - np.arange(m)), axis=-1), 1.0)
    adjusted = np.empty_like(adjusted_sorted)
    np.put_along_axis(adjusted, order, adjusted_sorted, axis=-1)
    return adjusted


def established_signs(values: np.ndarray, alpha: float) -> np.ndarray:
    """(..., pairs): fidelity_stats.established_orders on each ladder of a stack (..., k, n)."""
    differences = pair_differences(values)
    n = differences.shape[-1]
    mean, se = differences.mean(axis=-1), differences.std(axis=-1, ddof=1) / math.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_values = 2 * stats.t.sf(np.abs(mean / se), n - 1)
    return np.where(holm_rows(np.nan_to_num(p_values, nan=1.0)) < alpha, np.sign(mean), 0).astype(int)


def rule_answers(rung: np.ndarray, top: np.ndarray, alpha: float, wanted: float) -> tuple[np.ndarray, np.ndarray]:
    """Per ladder of a stack (rung and top on the same seeds): (order kept is yes, every change certified within
    `wanted`); a rung is faithful where both hold."""
    return all_kept(rung, established_signs(top, alpha)), certified_resolutions(rung, top) <= wanted


def false_keeps(order_yes: np.ndarray, top_signs: np.ndarray, rung_means: ArrayLike) -> np.ndarray:
    """Per ladder: order kept said yes while an order the top established is not the rung's true order (a pair the
    rung reverses or ties): the order answer's error, whose rate is its size."""
    truth = np.sign(pair_differences(np.asarray(rung_means, dtype=float)[:, None])[:, 0])
    wrong = (np.asarray(top_signs) != 0) & (np.asarray(top_signs) != truth)
    return np.asarray(order_yes & wrong.any(axis=-1))
