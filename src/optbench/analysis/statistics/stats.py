"""Statistics over seeds: means with t intervals, and tests between optimizers chosen for the n at hand.

- `describe(values)`: n, mean, sample std (ddof=1), 95 % CI mean +- t(0.975, n-1) * sd / sqrt(n).
- `compare(a, b)`: two arms given as values indexed by seed, each seed counted once (a seed run twice, a
  rerun differing only in a numbers-free key, counts at the mean of its runs). When the arms share at
  least `min_pairs` seeds (MIN_PAIRS, the verdicts' min_seeds) the primary test is the **paired t-test on
  per-seed differences** on those seeds (a seed fixes initialisation, batch order and noise draw for every
  optimizer, so pairing removes that shared variation; runs on seeds the other arm lacks are left out and
  named); its assumption is that seed-to-seed differences are roughly normal. Arms sharing fewer seeds get
  **Welch's t-test** on all their runs, so the test does not jump to a paired t on two pairs as the seed
  sets start to overlap. The n it reports are the values the test used. Beside it
  stands the **exact** sign-flip (paired) or permutation (unpaired) test as a sensitivity check that
  assumes nothing; it cannot go below 2 / 2^n (3 paired seeds: 0.25), so at small n it says little.
  Both are two-sided. A t-test needs spread: when the per-seed differences (paired) or an arm's runs
  (Welch) are equal up to floating-point noise (SPREAD_RTOL of the values' scale), the comparison is
  "not testable" and says why, never p = 0 with an effect size of 1e14. Runs censored at their budget
  (+inf: a target never reached) have no value to average: they are compared on pooled ranks, tied
  worst, by the exact test alone.
  Beside every p: the difference with its t interval, the effect size (paired: d_z = mean difference /
  sd of the differences; unpaired: Hedges' g), the power of the test used against the observed effect
  at the observed spread (0 when its smallest p exceeds alpha), and the smallest effect it detects 80 %
  of the time at this n (in sd units and in the metric's units).
- `contrast(cells)`: a difference of differences (the H3 noise drop) when seeds do not pair:
  estimate sum(w_i * mean_i), SE^2 = sum(w_i^2 * s_i^2 / n_i), Welch-Satterthwaite degrees of freedom.
- `drop_test(values)`: the H3 noise drop of two optimizers compared: per-seed drops through `compare`
  when each optimizer's clean and noisy runs share seeds, else the `contrast` of the four cells.
- `holm(p_values)`: Holm's step-down adjustment for a family of tests.
"""

import dataclasses
import functools
import itertools
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import optimize, stats

ALPHA = 0.05
# Pair two arms on their shared seeds only when they share at least this many (the verdicts' default min_seeds):
# a paired t on fewer pairs would test on fewer seeds than the arms ran; such arms are compared unpaired instead.
MIN_PAIRS = 3
LOW_POWER_N = 5  # below this many seeds per arm, only very large effects are detectable
EXACT_LIMIT = 20_000  # exact tests enumerate every arrangement up to this many (2^14 sign flips, 8 vs 8 splits)
TARGET_POWER = 0.8  # the usual power for "detectable"
# Spread below this fraction of the values' scale is floating-point noise, not variation: np.std of three
# equal accuracies is ~1e-16, which a t-test would divide by.
SPREAD_RTOL = 1e-9
# Arrangements whose statistics differ by less than this fraction of the data's scale are ties: a mean
# recomputed in another order differs in its last bits (scipy's tolerance, ~1e-14, is too tight for that).
TIE_RTOL = 1e-9


@dataclass(frozen=True)
class Description:
    n: int
    mean: float
    std: float  # sample standard deviation (ddof=1); NaN for n < 2
    half_width: float  # of the 95 % confidence interval of the mean: t(0.975, n-1) * std / sqrt(n)

    @property
    def ci_low(self) -> float:
        return self.mean - self.half_width

    @property
    def ci_high(self) -> float:
        return self.mean + self.half_width


def finite(values: npt.ArrayLike) -> np.ndarray:
    array = np.asarray(pd.Series(values, dtype=float), dtype=float)
    return np.asarray(array[np.isfinite(array)])


def describe(values: npt.ArrayLike, confidence: float = 0.95) -> Description:
    array = finite(values)
    n = len(array)
    if n == 0:
        return Description(0, math.nan, math.nan, math.nan)
    mean = float(array.mean())
    if n == 1:
        return Description(1, mean, math.nan, math.nan)
    std = float(array.std(ddof=1)) if not no_spread(array, scale_of(array)) else 0.0
    return Description(n, mean, std, float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * std / math.sqrt(n))


def scale_of(*arrays: npt.ArrayLike) -> float:
    """The magnitude of the data, against which spread and ties are judged."""
    finite_values = [np.abs(array[np.isfinite(array)]) for array in map(np.asarray, arrays)]
    return max([float(values.max()) for values in finite_values if len(values)] or [0.0])


def no_spread(values: npt.ArrayLike, scale: float) -> bool:
    """True when the values are all equal up to floating-point noise relative to `scale`."""
    values = np.asarray(values, dtype=float)
    return len(values) > 0 and float(np.ptp(values)) <= SPREAD_RTOL * max(scale, np.finfo(float).tiny)


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


def by_seed(values: pd.Series, censored: bool = False) -> pd.Series:
    """Values indexed by seed, NaN dropped; +inf (a censored run: never reached) kept when `censored`."""
    values = pd.Series(values, dtype=float)
    array = values.to_numpy()
    keep = np.isfinite(array) | (censored & (array == np.inf))
    return values[keep]


def one_per_seed(values: pd.Series) -> tuple[pd.Series, list]:
    """(each seed once, the seeds that repeated): a seed run twice (a rerun that differs only in a numbers-free
    key, or a copy in another folder) is one seed, counted at the mean of its runs; counting it twice would give a
    test a seed it does not have, and would stop the arms from pairing."""
    if values.index.is_unique:
        return values, []
    repeated = sorted(set(values.index[values.index.duplicated()]))
    return values.groupby(level=0, sort=False).mean(), repeated


def shared_seeds(a: pd.Series, b: pd.Series) -> list:
    """Seeds both arms ran (the pairs); each arm's seeds counted once (one_per_seed)."""
    return sorted(set(a.index) & set(b.index))


def seeds_pair(a: pd.Series, b: pd.Series, min_pairs: int = MIN_PAIRS) -> bool:
    return len(shared_seeds(one_per_seed(a)[0], one_per_seed(b)[0])) >= min_pairs


def seeds_text(seeds: Iterable[float]) -> str:
    return ", ".join(str(int(seed)) if float(seed).is_integer() else str(seed) for seed in seeds)


def seed_notes(
    a: pd.Series, b: pd.Series, pairs: list | None, repeated: tuple[list, list], names: tuple[str, str]
) -> str:
    """What a reader needs to count the test's seeds: repeated seeds counted once, runs left out of a paired test."""
    notes = [
        f"{name}'s seed(s) {seeds_text(seeds)} ran more than once: each counted once, at the mean of its runs"
        for name, seeds in zip(names, repeated)
        if seeds
    ]
    if pairs is not None:
        unpaired = [(name, sorted(set(values.index) - set(pairs))) for name, values in zip(names, (a, b))]
        left_out = [f"{name}'s seed(s) {seeds_text(seeds)}" for name, seeds in unpaired if seeds]
        if left_out:
            notes.append(f"paired on the {len(pairs)} seeds both ran; left out (no partner): {', '.join(left_out)}")
    return "; ".join(notes)


# ---- exact tests --------------------------------------------------------------------------------------


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


# ---- power of the t-tests -----------------------------------------------------------------------------


def t_power(effect: float, df: float, root_n: float, alpha: float = ALPHA) -> float:
    """Power of a two-sided t-test with `df` degrees of freedom against a standardised effect whose
    noncentrality is effect * root_n (paired: sqrt(n); two samples: sqrt(n_a n_b / (n_a + n_b)))."""
    if not (np.isfinite(effect) and np.isfinite(df) and df > 0):
        return math.nan
    critical = stats.t.ppf(1 - alpha / 2, df)
    shift = abs(effect) * root_n
    # scipy's noncentral t gives NaN for a far tail (large shift): that tail is then 0
    upper, lower = (
        np.nan_to_num(tail, nan=0.0)
        for tail in (stats.nct.sf(critical, df, shift), stats.nct.cdf(-critical, df, shift))
    )
    return float(upper + lower)


@functools.lru_cache(maxsize=512)  # a pure function of the design, called for every comparison
def detectable_effect(df: float, root_n: float, alpha: float = ALPHA, power: float = TARGET_POWER) -> float:
    """Smallest standardised effect the t-test finds with `power` (NaN when none up to 64 sd)."""
    if not (np.isfinite(df) and df > 0):
        return math.nan
    upper = 1.0
    while t_power(upper, df, root_n, alpha) < power:  # bracket the root; the noncentral t is unstable far out
        upper *= 2
        if upper > 64:
            return math.nan
    return float(optimize.brentq(lambda d: t_power(d, df, root_n, alpha) - power, 1e-6, upper))


def min_detectable_d(n_a: int, n_b: int | None = None, alpha: float = ALPHA, power: float = TARGET_POWER) -> float:
    """Paired (n_b None): d_z detectable at n pairs; unpaired: Cohen's d at n_a vs n_b (pooled df)."""
    if n_b is None:
        return detectable_effect(n_a - 1, math.sqrt(n_a), alpha, power) if n_a >= 2 else math.nan
    if n_a < 2 or n_b < 2:
        return math.nan
    return detectable_effect(n_a + n_b - 2, math.sqrt(n_a * n_b / (n_a + n_b)), alpha, power)


# ---- comparing two arms -------------------------------------------------------------------------------


def compare(
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
    """The test of the values chosen by `compare` (pairs, or every run of each arm)."""
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


# ---- the H3 noise drop --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Contrast:
    estimate: float
    standard_error: float
    df: float
    statistic: float
    p_value: float


def contrast(cells: list[tuple[float, Description]]) -> Contrast:
    """Test sum(w_i * mean_i) = 0 from independent cells (weight, description), Welch-Satterthwaite df."""
    estimate = sum(weight * cell.mean for weight, cell in cells)
    parts = [weight**2 * cell.std**2 / cell.n for weight, cell in cells]
    variance = sum(parts)
    if any(cell.n < 2 for _, cell in cells) or not variance > 0:
        return Contrast(
            estimate, math.sqrt(variance) if variance == variance else math.nan, math.nan, math.nan, math.nan
        )
    df = variance**2 / sum(part**2 / (cell.n - 1) for part, (_, cell) in zip(parts, cells))
    statistic = estimate / math.sqrt(variance)
    return Contrast(estimate, math.sqrt(variance), df, statistic, float(2 * stats.t.sf(abs(statistic), df)))


def paired_cells(values: dict, min_pairs: int = MIN_PAIRS) -> tuple[dict, str]:
    """(the four cells of a drop comparison, each seed once, a note). On the seeds all four ran, when at least
    `min_pairs`: the per-seed drops are tested on those seeds only, so the means shown beside the test are taken
    on them too (a clean seed with no noisy run, or one the other optimizer never ran, would otherwise move a mean
    the test never saw), and the note names the seeds left out."""
    values = {key: one_per_seed(by_seed(series))[0] for key, series in values.items()}
    common = sorted(set.intersection(*(set(series.index) for series in values.values())))
    if len(common) < min_pairs:
        return values, ""
    left_out = sorted(set().union(*(set(series.index) for series in values.values())) - set(common))
    note = (
        f"per-seed drops on the {len(common)} seeds all four cells ran; seed(s) {seeds_text(left_out)} left out"
        if left_out
        else ""
    )
    return {key: series.loc[common] for key, series in values.items()}, note


def drop_test(values: dict, alpha: float = ALPHA, min_pairs: int = MIN_PAIRS) -> tuple[float, float, Comparison]:
    """(subject's drop, other's drop, the test of subject drop - other drop).

    When each optimizer's clean and noisy runs share seeds, per-seed drops (clean - noisy of the same seed)
    are formed and compared with `compare` (paired t on drop differences when both optimizers ran the same
    seeds). Otherwise the four cells are independent and the contrast (clean_s - noisy_s) - (clean_o -
    noisy_o) gets a Welch-Satterthwaite t-test, only when no cell is constant.
    """
    values = {key: one_per_seed(by_seed(series))[0] for key, series in values.items()}  # each seed once
    clean_s, noisy_s = values[("subject", "clean")], values[("subject", "noisy")]
    clean_o, noisy_o = values[("other", "clean")], values[("other", "noisy")]
    drop_subject, drop_other = clean_s.mean() - noisy_s.mean(), clean_o.mean() - noisy_o.mean()
    if seeds_pair(clean_s, noisy_s, min_pairs) and seeds_pair(clean_o, noisy_o, min_pairs):
        per_seed_s = (clean_s - noisy_s).dropna()
        per_seed_o = (clean_o - noisy_o).dropna()
        result = compare(per_seed_s, per_seed_o, alpha, min_pairs=min_pairs)
        return drop_subject, drop_other, result
    return drop_subject, drop_other, contrast_comparison([clean_s, noisy_s, clean_o, noisy_o], alpha)


def contrast_comparison(series: list[pd.Series], alpha: float) -> Comparison:
    """The four independent cells' contrast as a Comparison (Welch-Satterthwaite t, no exact test); n_a and n_b
    are the smaller cell of each optimizer."""
    arrays = [finite(values) for values in series]
    cells = [(weight, describe(values)) for weight, values in zip((1.0, -1.0, -1.0, 1.0), arrays)]
    sizes = [len(values) for values in arrays]
    base: dict[str, Any] = dict(
        n_a=min(sizes[:2]),
        n_b=min(sizes[2:]),
        n_pairs=0,
        mean_a=math.nan,
        mean_b=math.nan,
        low_power=min(sizes) < LOW_POWER_N,
    )
    estimate = sum(weight * cell.mean for weight, cell in cells)
    if min(sizes) < 2:
        return untested(base, f"n too small (cells of {sizes} runs; a test needs 2 per cell)", False, estimate)
    scale = scale_of(*arrays)
    names = ["subject clean", "subject noisy", "other clean", "other noisy"]
    flat = [name for name, values in zip(names, arrays) if no_spread(values, scale)]
    if flat:
        return untested(
            base,
            f"not testable: every run of {', '.join(flat)} scored the same, and the seeds do not "
            f"pair, so there is no spread to test against",
            False,
            estimate,
        )
    tested = contrast(cells)
    half = stats.t.ppf(1 - alpha / 2, tested.df) * tested.standard_error
    spread = math.sqrt(np.mean([cell.std**2 for _, cell in cells]))
    root_n = spread / tested.standard_error  # the noncentrality of a 1-sd contrast
    detectable = detectable_effect(tested.df, root_n, alpha)
    return Comparison(
        test="Welch-Satterthwaite contrast",
        difference=estimate,
        ci_low=estimate - half,
        ci_high=estimate + half,
        p_value=tested.p_value,
        exact_test="none",
        exact_p=math.nan,
        exact_min_p=math.nan,
        effect_size=estimate / spread,
        effect_kind="d (rms sd of the cells)",
        spread=spread,
        power=t_power(estimate / spread, tested.df, root_n, alpha),
        min_detectable_d=detectable,
        min_detectable_difference=detectable * spread,
        note="the four cells' seeds do not pair",
        **base,
    )


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


def pairwise(
    runs: pd.DataFrame, metric: str, settings: list[str], arms: list[str], alpha: float = ALPHA
) -> pd.DataFrame:
    """Every pair of arms within each setting, on completed runs' `metric` (paired as `compare` pairs, so the
    same pair gets the same test here and in a verdict); Holm-adjusted per setting."""
    rows = []
    for setting in settings:
        here = runs[runs["setting"] == setting]
        present = [arm for arm in arms if arm in set(here["arm"])]
        family = []
        for i, arm_a in enumerate(present):
            for arm_b in present[i + 1 :]:
                a = here[here["arm"] == arm_a].set_index("seed")[metric]
                b = here[here["arm"] == arm_b].set_index("seed")[metric]
                family.append(
                    {
                        "setting": setting,
                        "metric": metric,
                        "arm_a": arm_a,
                        "arm_b": arm_b,
                        **compare(a, b, alpha).as_dict(),
                    }
                )
        for row, adjusted in zip(family, holm([row["p_value"] for row in family])):
            row["p_holm"] = adjusted
            row["significant"] = bool(row["p_holm"] < alpha)  # the family: every pair in this setting
        rows.extend(family)
    return pd.DataFrame(rows)
