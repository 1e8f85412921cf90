"""The test of two arms over seeds, chosen for the n at hand: `two_arm_test(a, b)` -> `Comparison`.

The arms are given as values indexed by seed, each seed counted once (a seed run twice, a rerun differing only
in a numbers-free key, counts at the mean of its runs). When the arms share at least `min_pairs` seeds
(MIN_PAIRS, the verdicts' min_seeds) the primary test is the **paired t-test on per-seed differences** on those
seeds (a seed fixes initialisation, batch order and noise draw for every optimizer, so pairing removes that
shared variation; runs on seeds the other arm lacks are left out and named); its assumption is that
seed-to-seed differences are roughly normal. Arms sharing fewer seeds get **Welch's t-test** on all their runs,
so the test does not jump to a paired t on two pairs as the seed sets start to overlap. The n it reports are
the values the test used. Beside it stands the **exact** sign-flip (paired) or permutation (unpaired) test as a
sensitivity check that assumes nothing; it cannot go below 2 / 2^n (3 paired seeds: 0.25), so at small n it
says little. Both are two-sided. A t-test needs spread: when the per-seed differences (paired) or an arm's runs
(Welch) are equal up to floating-point noise (SPREAD_RTOL of the values' scale), the comparison is "not
testable" and says why, never p = 0 with an effect size of 1e14. Runs censored at their budget (+inf: a target
never reached) have no value to average: they are compared on pooled ranks, tied worst, by the exact test alone.
Beside every p: the difference with its t interval, the effect size (paired: d_z = mean difference / sd of the
differences; unpaired: Hedges' g), the power of the test used against the observed effect at the observed
spread (0 when its smallest p exceeds alpha), and the smallest effect it detects 80 % of the time at this n (in
sd units and in the metric's units).
"""

import dataclasses
import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

from optbench.analysis.statistics.exact_tests import (
    EXACT_LIMIT,
    arrangements,
    min_attainable_p,
    permutation_p,
    ranks_when_censored,
    sign_flip_p,
)
from optbench.analysis.statistics.power import ALPHA, detectable_effect, min_detectable_d, t_power
from optbench.analysis.statistics.summaries import (
    MIN_PAIRS,
    by_seed,
    no_spread,
    one_per_seed,
    scale_of,
    seed_notes,
    shared_seeds,
)

LOW_POWER_N = 5  # below this many seeds per arm, only very large effects are detectable


@dataclass(frozen=True)
class Comparison:
    test: str  # the primary test: "paired t", "Welch t", "exact ... on ranks", or "none"
    n_a: int
    n_b: int
    n_pairs: int  # seeds in both arms (0: the arms do not pair)
    mean_a: float  # NaN when some run of the arm is censored (never reached its target)
    mean_b: float
    difference: float  # mean_a - mean_b (paired: mean of per-seed differences); with censoring, of mean ranks
    ci_low: float  # t interval of the difference at 1 - alpha (NaN on ranks or when not testable)
    ci_high: float
    p_value: float  # two-sided p of the primary test; NaN when not testable
    exact_test: str  # the assumption-free check beside it
    exact_p: float
    exact_min_p: float  # the smallest two-sided p the exact test can give at these n
    effect_size: float  # paired: d_z; unpaired: Hedges' g
    effect_kind: str  # "d_z" or "g"
    spread: float  # the sd the effect size is in units of (sd of differences, or pooled sd)
    power: float  # of the primary test against the observed effect at the observed spread
    min_detectable_d: float  # smallest |effect| (in `spread` units) the primary test finds with 80 % power
    min_detectable_difference: float  # the same in the metric's units, at the observed spread
    low_power: bool
    censored_a: int = 0
    censored_b: int = 0
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def two_arm_test(
    a: pd.Series,
    b: pd.Series,
    alpha: float = ALPHA,
    paired: bool | None = None,
    min_pairs: int = MIN_PAIRS,
    names: tuple[str, str] = ("A", "B"),
) -> Comparison:
    """Test arm a against arm b. `a`, `b`: values indexed by seed, +inf for a run censored at its budget.
    paired=None pairs on the seeds both arms ran when there are at least `min_pairs` of them, else compares
    every run unpaired. n_a, n_b (and n_pairs) count the values the test used; `names` label the arms in notes."""
    (a, repeated_a), (b, repeated_b) = (one_per_seed(by_seed(values, censored=True)) for values in (a, b))
    pairs = shared_seeds(a, b)
    paired = len(pairs) >= max(2, min_pairs) if paired is None else paired and len(pairs) >= 2
    if paired:
        x, y = a[pairs].to_numpy(), b[pairs].to_numpy()
    else:
        x, y = a.to_numpy(), b.to_numpy()
    note = seed_notes(a, b, pairs if paired else None, (repeated_a, repeated_b), names)
    if pairs and not paired:
        note = "; ".join(
            filter(
                None,
                [
                    note,
                    f"the arms share only {len(pairs)} seed(s), fewer than {min_pairs}: "
                    f"compared unpaired on all their runs",
                ],
            )
        )
    result = tested(x, y, paired, alpha, len(pairs) if paired else 0)
    return dataclasses.replace(result, note="; ".join(filter(None, [result.note, note])))


def tested(x: np.ndarray, y: np.ndarray, paired: bool, alpha: float, n_pairs: int) -> Comparison:
    """The test of the values chosen by `two_arm_test` (pairs, or every run of each arm)."""
    base = dict(
        n_a=len(x),
        n_b=len(y),
        n_pairs=n_pairs,
        mean_a=float(x.mean()) if len(x) and np.isfinite(x).all() else math.nan,
        mean_b=float(y.mean()) if len(y) and np.isfinite(y).all() else math.nan,
        censored_a=int(np.isinf(x).sum()),
        censored_b=int(np.isinf(y).sum()),
        low_power=min(len(x), len(y)) < LOW_POWER_N,
    )
    if len(x) < 2 or len(y) < 2:
        return untested(base, f"n too small (n = {len(x)} vs {len(y)}; a test needs 2 per arm)", paired)
    if base["censored_a"] or base["censored_b"]:
        return on_ranks(x, y, paired, alpha, base)
    return paired_t(x, y, alpha, base) if paired else welch_t(x, y, alpha, base)


def untested(
    base: dict, note: str, paired: bool, difference: float = math.nan, exact: tuple = ("none", math.nan, math.nan)
) -> Comparison:
    """A comparison with no primary test (too few runs, or no spread), the exact test kept when it ran."""
    return Comparison(
        test="none",
        difference=difference,
        ci_low=math.nan,
        ci_high=math.nan,
        p_value=math.nan,
        exact_test=exact[0],
        exact_p=exact[1],
        exact_min_p=exact[2],
        effect_size=math.nan,
        effect_kind="d_z" if paired else "g",
        spread=math.nan,
        power=math.nan,
        min_detectable_d=math.nan,
        min_detectable_difference=math.nan,
        note=note,
        **base,
    )


def exact_check(x: np.ndarray, y: np.ndarray, paired: bool) -> tuple[str, float, float]:
    """(name, p, smallest p) of the exact test beside the primary one."""
    n_x, n_y = len(x), len(y)
    sampled = arrangements(n_x, n_y, paired) > EXACT_LIMIT
    kind = "sign-flip" if paired else "permutation"
    name = f"{kind}, {'Monte Carlo ' + format(EXACT_LIMIT, ',') if sampled else 'exact'}"
    p = sign_flip_p(x - y) if paired else permutation_p(x, y)
    return name, p, min_attainable_p(n_x, n_y, paired)


def paired_t(x: np.ndarray, y: np.ndarray, alpha: float, base: dict) -> Comparison:
    differences = x - y
    n = len(differences)
    exact = exact_check(x, y, True)
    difference = float(differences.mean())
    if no_spread(differences, scale_of(x, y)):
        return untested(
            base,
            f"not testable: the {n} per-seed differences are all equal ({difference:+.4g}), "
            f"so there is no spread to test against",
            True,
            difference,
            exact,
        )
    result = stats.ttest_1samp(differences, 0.0)
    interval = result.confidence_interval(1 - alpha)
    spread = float(differences.std(ddof=1))
    effect = difference / spread
    detectable = min_detectable_d(n, None, alpha)
    return Comparison(
        test="paired t",
        difference=difference,
        ci_low=float(interval.low),
        ci_high=float(interval.high),
        p_value=float(result.pvalue),
        exact_test=exact[0],
        exact_p=exact[1],
        exact_min_p=exact[2],
        effect_size=effect,
        effect_kind="d_z",
        spread=spread,
        power=t_power(effect, n - 1, math.sqrt(n), alpha),
        min_detectable_d=detectable,
        min_detectable_difference=detectable * spread,
        **base,
    )


def welch_t(x: np.ndarray, y: np.ndarray, alpha: float, base: dict) -> Comparison:
    exact = exact_check(x, y, False)
    difference = float(x.mean() - y.mean())
    scale = scale_of(x, y)
    flat = [name for name, values in (("A", x), ("B", y)) if no_spread(values, scale)]
    if flat:
        return untested(
            base,
            f"not testable: every run of {' and '.join(flat)} scored the same, and the seeds do "
            f"not pair, so there is no spread to test against",
            False,
            difference,
            exact,
        )
    result = stats.ttest_ind(x, y, equal_var=False)
    interval = result.confidence_interval(1 - alpha)
    n_x, n_y = len(x), len(y)
    spread = math.sqrt(((n_x - 1) * x.var(ddof=1) + (n_y - 1) * y.var(ddof=1)) / (n_x + n_y - 2))
    d = difference / spread
    root_n = math.sqrt(n_x * n_y / (n_x + n_y))
    detectable = detectable_effect(float(result.df), root_n, alpha)
    return Comparison(
        test="Welch t",
        difference=difference,
        ci_low=float(interval.low),
        ci_high=float(interval.high),
        p_value=float(result.pvalue),
        exact_test=exact[0],
        exact_p=exact[1],
        exact_min_p=exact[2],
        effect_size=d * (1 - 3 / (4 * (n_x + n_y) - 9)),
        effect_kind="g",
        spread=spread,
        power=t_power(d, float(result.df), root_n, alpha),
        min_detectable_d=detectable,
        min_detectable_difference=detectable * spread,
        **base,
    )


def on_ranks(x: np.ndarray, y: np.ndarray, paired: bool, alpha: float, base: dict) -> Comparison:
    """Censored runs: the exact test on pooled mid-ranks is the only test; its power is 0 when its
    smallest p exceeds alpha and unknown otherwise."""
    rank_x, rank_y = ranks_when_censored(x, y)
    name, p, min_p = exact_check(rank_x, rank_y, paired)
    note = (
        f"{base['censored_a']} + {base['censored_b']} runs never reached the target: censored, tied worst on "
        f"ranks; difference is of mean ranks"
    )
    return Comparison(
        test=f"{name.replace(',', ' on ranks,')}",
        difference=float(rank_x.mean() - rank_y.mean()),
        ci_low=math.nan,
        ci_high=math.nan,
        p_value=p,
        exact_test=f"{name} on ranks",
        exact_p=p,
        exact_min_p=min_p,
        effect_size=math.nan,
        effect_kind="d_z" if paired else "g",
        spread=math.nan,
        power=0.0 if min_p > alpha else math.nan,
        min_detectable_d=math.nan,
        min_detectable_difference=math.nan,
        note=note,
        **base,
    )
