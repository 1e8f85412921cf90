"""Statistics over seeds: means with t-based 95 % intervals, and exact tests between optimizers.

- `describe(values)`: n, mean, sample std (ddof=1), 95 % CI mean +- t(0.975, n-1) * sd / sqrt(n).
- `compare(a, b)`: two arms given as values indexed by seed, tested with an exact permutation test of
  the difference in means (scipy.stats.permutation_test). When both arms hold exactly the same seeds
  the test flips the sign of each seed's difference: a seed fixes initialisation, batch order and the
  noise draw for every optimizer, so pairing removes that shared variation. Otherwise it splits the
  pooled runs. Every arrangement is enumerated up to EXACT_LIMIT, so zero variance or constant
  differences give the true p (3 paired seeds: 0.25 at best), never t = inf, p = 0; the smallest p
  the n allows is reported beside it. Runs censored at their budget (+inf: a target never reached)
  are compared on pooled ranks, tied worst. Effect size: Cohen's d with the pooled sd, and Hedges' g.
  With fewer than 5 seeds per arm the result is flagged as low power, with the smallest effect an
  unpaired t-test would detect 80 % of the time: at n = 3 vs 3 that is d of about 3.
- `contrast(cells)`: a difference of differences (the H3 noise drop) when seeds do not pair:
  estimate sum(w_i * mean_i), SE^2 = sum(w_i^2 * s_i^2 / n_i), Welch-Satterthwaite degrees of freedom.
- `drop_test(values)`: the H3 noise drop of two optimizers compared: per-seed drops through `compare`
  when seeds pair, else the `contrast` of the four cells.
- `holm(p_values)`: Holm's step-down adjustment for a family of pairwise tests.
"""

import functools
import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats

ALPHA = 0.05
LOW_POWER_N = 5      # below this many seeds per arm, only very large effects are detectable
EXACT_LIMIT = 20_000   # permutation tests enumerate every arrangement up to this many (2^14 sign flips, 8 vs 8 splits)
TARGET_POWER = 0.8   # the usual power for "detectable"


@dataclass(frozen=True)
class Description:
    n: int
    mean: float
    std: float          # sample standard deviation (ddof=1); NaN for n < 2
    half_width: float   # of the 95 % confidence interval of the mean: t(0.975, n-1) * std / sqrt(n)

    @property
    def ci_low(self) -> float:
        return self.mean - self.half_width

    @property
    def ci_high(self) -> float:
        return self.mean + self.half_width


def finite(values) -> np.ndarray:
    array = np.asarray(pd.Series(values, dtype=float), dtype=float)
    return array[np.isfinite(array)]


def describe(values, confidence: float = 0.95) -> Description:
    array = finite(values)
    n = len(array)
    if n == 0:
        return Description(0, math.nan, math.nan, math.nan)
    mean = float(array.mean())
    if n == 1:
        return Description(1, mean, math.nan, math.nan)
    std = float(array.std(ddof=1))
    return Description(n, mean, std, float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * std / math.sqrt(n))


@dataclass(frozen=True)
class Comparison:
    test: str                # "paired sign-flip, exact", "permutation, exact", "..., Monte Carlo", or "none"
    n_a: int
    n_b: int
    mean_a: float            # NaN when some run of the arm is censored (never reached its target)
    mean_b: float
    difference: float        # mean_a - mean_b; with censored runs, the difference of mean ranks
    p_value: float           # two-sided, from the permutation distribution
    min_p: float             # the smallest two-sided p this test can give at these n (no ties)
    cohens_d: float          # (mean_a - mean_b) / pooled sd
    hedges_g: float          # d * (1 - 3 / (4 (n_a + n_b) - 9))
    min_detectable_d: float  # smallest |d| an unpaired t-test finds with 80 % power at alpha
    low_power: bool
    censored_a: int = 0
    censored_b: int = 0
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def pooled_sd(a: np.ndarray, b: np.ndarray) -> float:
    n_a, n_b = len(a), len(b)
    return math.sqrt(((n_a - 1) * a.var(ddof=1) + (n_b - 1) * b.var(ddof=1)) / (n_a + n_b - 2))


def effect_sizes(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return math.nan, math.nan   # censored runs have no value to standardise
    spread = pooled_sd(a, b)
    if spread == 0:
        return math.nan, math.nan
    d = (a.mean() - b.mean()) / spread
    return float(d), float(d * (1 - 3 / (4 * (len(a) + len(b)) - 9)))


@functools.lru_cache(maxsize=256)   # a pure function of the n's, called for every comparison
def min_detectable_d(n_a: int, n_b: int, alpha: float = ALPHA, power: float = TARGET_POWER) -> float:
    """Smallest Cohen's d a two-sided unpaired t-test detects with `power`, from the noncentral t."""
    if n_a < 2 or n_b < 2:
        return math.nan
    df = n_a + n_b - 2
    critical = stats.t.ppf(1 - alpha / 2, df)
    scale = math.sqrt(n_a * n_b / (n_a + n_b))

    def power_minus_target(d: float) -> float:
        shift = d * scale
        return stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift) - power

    upper = 1.0
    while power_minus_target(upper) < 0:   # bracket the root; the noncentral t is unstable far out
        upper *= 2
        if upper > 64:
            return math.nan
    return float(optimize.brentq(power_minus_target, 1e-6, upper))


def by_seed(values: pd.Series, censored: bool = False) -> pd.Series:
    """Values indexed by seed, NaN dropped; +inf (a censored run: never reached) kept when `censored`.
    A seed appearing twice keeps both (and then cannot be paired)."""
    values = pd.Series(values, dtype=float)
    array = values.to_numpy()
    keep = np.isfinite(array) | (censored & (array == np.inf))
    return values[keep]


def seeds_pair(a: pd.Series, b: pd.Series) -> bool:
    return a.index.is_unique and b.index.is_unique and set(a.index) == set(b.index)


def arrangements(n_a: int, n_b: int, paired: bool) -> int:
    """How many relabellings the permutation distribution has: 2^n sign flips, or C(n_a + n_b, n_a) splits."""
    return 2 ** n_a if paired else math.comb(n_a + n_b, n_a)


def min_attainable_p(n_a: int, n_b: int, paired: bool) -> float:
    """The smallest two-sided p of the permutation test (no ties): the two extreme arrangements, or the
    Monte Carlo floor 2 / (resamples + 1) when the distribution is sampled."""
    if n_a < 2 or n_b < 2:
        return math.nan
    count = arrangements(n_a, n_b, paired)
    return min(1.0, 2 / count if count <= EXACT_LIMIT else 2 / (EXACT_LIMIT + 1))


def mean_difference(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def permutation_p(a: np.ndarray, b: np.ndarray, paired: bool) -> float:
    """Two-sided p of the difference in means under relabelling (scipy.stats.permutation_test):
    sign flips of each seed's pair when paired ('samples'), else splits of the pooled runs ('independent').
    Exact when the arrangements number at most EXACT_LIMIT, otherwise a fixed-seed Monte Carlo."""
    result = stats.permutation_test((a, b), mean_difference, vectorized=True, n_resamples=EXACT_LIMIT,
                                    permutation_type="samples" if paired else "independent",
                                    alternative="two-sided", rng=np.random.default_rng(0))
    return float(result.pvalue)


def ranks_when_censored(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mid-ranks of the pooled values; censored runs (+inf: never reached) tie for the worst rank."""
    ranks = stats.rankdata(np.concatenate([a, b]))
    return ranks[:len(a)], ranks[len(a):]


def compare(a: pd.Series, b: pd.Series, alpha: float = ALPHA, paired: bool | None = None) -> Comparison:
    """Test arm a against arm b with an exact permutation test. `a`, `b`: values indexed by seed, +inf for a
    run censored at its budget (compared on ranks then). paired=None pairs when the seeds match."""
    a, b = by_seed(a, censored=True), by_seed(b, censored=True)
    n_a, n_b = len(a), len(b)
    paired = (seeds_pair(a, b) if paired is None else paired) and n_a >= 2
    seeds = sorted(a.index) if paired else None
    a_values = a[seeds].to_numpy() if paired else a.to_numpy()
    b_values = b[seeds].to_numpy() if paired else b.to_numpy()
    censored_a, censored_b = int(np.isinf(a_values).sum()), int(np.isinf(b_values).sum())
    mean_a = float(a_values.mean()) if n_a and not censored_a else math.nan
    mean_b = float(b_values.mean()) if n_b and not censored_b else math.nan
    base = dict(n_a=n_a, n_b=n_b, mean_a=mean_a, mean_b=mean_b, min_p=min_attainable_p(n_a, n_b, paired),
                min_detectable_d=min_detectable_d(n_a, n_b, alpha), low_power=min(n_a, n_b) < LOW_POWER_N,
                censored_a=censored_a, censored_b=censored_b)
    if n_a < 2 or n_b < 2:
        return Comparison(test="none", difference=mean_a - mean_b, p_value=math.nan, cohens_d=math.nan,
                          hedges_g=math.nan, note=f"n too small (n = {n_a} vs {n_b}; a test needs 2 per arm)", **base)
    tested_a, tested_b = (ranks_when_censored(a_values, b_values) if censored_a or censored_b
                          else (a_values, b_values))
    d, g = effect_sizes(a_values, b_values)
    return Comparison(test=test_name(n_a, n_b, paired, censored_a + censored_b),
                      difference=float(mean_difference(tested_a, tested_b)),
                      p_value=permutation_p(tested_a, tested_b, paired), cohens_d=d, hedges_g=g,
                      note=censored_note(censored_a, censored_b), **base)


def test_name(n_a: int, n_b: int, paired: bool, censored: int) -> str:
    kind = "paired sign-flip" if paired else "permutation"
    exactness = "exact" if arrangements(n_a, n_b, paired) <= EXACT_LIMIT else f"Monte Carlo {EXACT_LIMIT}"
    return f"{kind}{' on ranks' if censored else ''}, {exactness}"


def censored_note(censored_a: int, censored_b: int) -> str:
    if not censored_a + censored_b:
        return ""
    return (f"{censored_a} + {censored_b} runs never reached the target: censored, tied worst on ranks; "
            f"difference is of mean ranks")


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
    parts = [weight ** 2 * cell.std ** 2 / cell.n for weight, cell in cells]
    variance = sum(parts)
    if any(cell.n < 2 for _, cell in cells) or not variance > 0:
        return Contrast(estimate, math.sqrt(variance) if variance == variance else math.nan, math.nan, math.nan,
                        math.nan)
    df = variance ** 2 / sum(part ** 2 / (cell.n - 1) for part, (_, cell) in zip(parts, cells))
    statistic = estimate / math.sqrt(variance)
    return Contrast(estimate, math.sqrt(variance), df, statistic, float(2 * stats.t.sf(abs(statistic), df)))


def holm(p_values) -> np.ndarray:
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


def pairwise(runs: pd.DataFrame, metric: str, settings: list[str], arms: list[str], alpha: float = ALPHA) -> pd.DataFrame:
    """Every pair of arms within each setting, on completed runs' `metric`; Holm-adjusted per setting."""
    rows = []
    for setting in settings:
        here = runs[runs["setting"] == setting]
        present = [arm for arm in arms if arm in set(here["arm"])]
        family = []
        for i, arm_a in enumerate(present):
            for arm_b in present[i + 1:]:
                a = here[here["arm"] == arm_a].set_index("seed")[metric]
                b = here[here["arm"] == arm_b].set_index("seed")[metric]
                family.append({"setting": setting, "metric": metric, "arm_a": arm_a, "arm_b": arm_b,
                               **compare(a, b, alpha).as_dict()})
        for row, adjusted in zip(family, holm([row["p_value"] for row in family])):
            row["p_holm"] = adjusted
            row["significant"] = bool(row["p_holm"] < alpha)   # the family: every pair in this setting
        rows.extend(family)
    return pd.DataFrame(rows)


def drop_test(values: dict, alpha: float) -> dict:
    """Subject drop minus other drop, and its test.

    When each optimizer's clean and noisy runs share their seeds, per-seed drops are formed
    (clean - noisy for the same seed) and the two sets of drops are compared with stats.compare's exact
    permutation test (sign flips when both optimizers ran the same seeds).
    Otherwise the four cells are independent and the contrast (clean_s - noisy_s) - (clean_o - noisy_o)
    is tested with a Welch-Satterthwaite t-test.
    """
    clean_s, noisy_s = values[("subject", "clean")], values[("subject", "noisy")]
    clean_o, noisy_o = values[("other", "clean")], values[("other", "noisy")]
    drop_subject, drop_other = clean_s.mean() - noisy_s.mean(), clean_o.mean() - noisy_o.mean()
    if seeds_pair(clean_s, noisy_s) and seeds_pair(clean_o, noisy_o) and min(len(clean_s), len(clean_o)) >= 2:
        per_seed_s = clean_s - noisy_s[clean_s.index]
        per_seed_o = clean_o - noisy_o[clean_o.index]
        result = compare(per_seed_s, per_seed_o, alpha)
        return {"drop_subject": drop_subject, "drop_other": drop_other, "difference": result.difference,
                "test": f"{result.test} on per-seed drops", "p": result.p_value, "min_p": result.min_p,
                "effect_size": result.hedges_g, "low_power": result.low_power,
                "min_detectable_d": result.min_detectable_d}
    cells = [(1.0, describe(clean_s)), (-1.0, describe(noisy_s)), (-1.0, describe(clean_o)), (1.0, describe(noisy_o))]
    tested = contrast(cells)
    spread = math.sqrt(np.mean([cell.std ** 2 for _, cell in cells])) if all(cell.n > 1 for _, cell in cells) else math.nan
    return {"drop_subject": drop_subject, "drop_other": drop_other, "difference": tested.estimate,
            "test": "Welch-Satterthwaite contrast", "p": tested.p_value, "min_p": math.nan,
            # standardised by the root-mean-square sd of the four cells (a Cohen's d for a contrast)
            "effect_size": tested.estimate / spread if spread and spread > 0 else math.nan,
            "low_power": min(cell.n for _, cell in cells) < 5, "min_detectable_d": math.nan}
