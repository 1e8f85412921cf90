"""Statistics over seeds: means with t-based 95 % intervals, and tests between optimizers.

- `describe(values)`: n, mean, sample std (ddof=1), 95 % CI mean +- t(0.975, n-1) * sd / sqrt(n).
- `compare(a, b)`: two arms given as values indexed by seed. When both arms hold exactly the same
  seeds the test is paired (scipy.stats.ttest_rel): a seed fixes initialisation, batch order and the
  noise draw for every optimizer, so pairing removes that shared variation. Otherwise Welch's t-test
  (ttest_ind, equal_var=False). Effect size: Cohen's d with the pooled sd, and Hedges' g, its
  small-sample correction (same definition for paired and unpaired tests so they can be compared).
  With fewer than 5 seeds per arm the result is flagged as low power, with the smallest effect an
  unpaired t-test would detect 80 % of the time: at n = 3 vs 3 that is d of about 3.
- `contrast(cells)`: a difference of differences (the H3 noise drop) when seeds do not pair:
  estimate sum(w_i * mean_i), SE^2 = sum(w_i^2 * s_i^2 / n_i), Welch-Satterthwaite degrees of freedom.
- `holm(p_values)`: Holm's step-down adjustment for a family of pairwise tests.
"""

import math
import warnings
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats

ALPHA = 0.05
LOW_POWER_N = 5      # below this many seeds per arm, only very large effects are detectable
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
    test: str                # "paired t", "Welch t", or "none" when no test is possible
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    difference: float        # mean_a - mean_b
    statistic: float         # t
    df: float
    p_value: float           # two-sided
    cohens_d: float          # (mean_a - mean_b) / pooled sd
    hedges_g: float          # d * (1 - 3 / (4 (n_a + n_b) - 9))
    min_detectable_d: float  # smallest |d| an unpaired t-test finds with 80 % power at alpha
    low_power: bool
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def pooled_sd(a: np.ndarray, b: np.ndarray) -> float:
    n_a, n_b = len(a), len(b)
    return math.sqrt(((n_a - 1) * a.var(ddof=1) + (n_b - 1) * b.var(ddof=1)) / (n_a + n_b - 2))


def effect_sizes(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    spread = pooled_sd(a, b)
    if spread == 0:
        return math.nan, math.nan
    d = (a.mean() - b.mean()) / spread
    return float(d), float(d * (1 - 3 / (4 * (len(a) + len(b)) - 9)))


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


def by_seed(values: pd.Series) -> pd.Series:
    """Finite values, indexed by seed; a seed appearing twice keeps both (and then cannot be paired)."""
    values = pd.Series(values, dtype=float)
    return values[np.isfinite(values.to_numpy())]


def seeds_pair(a: pd.Series, b: pd.Series) -> bool:
    return a.index.is_unique and b.index.is_unique and set(a.index) == set(b.index)


def compare(a: pd.Series, b: pd.Series, alpha: float = ALPHA, paired: bool | None = None) -> Comparison:
    """Test arm a against arm b. `a`, `b`: values indexed by seed. paired=None pairs when the seeds match."""
    a, b = by_seed(a), by_seed(b)
    n_a, n_b = len(a), len(b)
    mean_a = float(a.mean()) if n_a else math.nan
    mean_b = float(b.mean()) if n_b else math.nan
    base = dict(n_a=n_a, n_b=n_b, mean_a=mean_a, mean_b=mean_b, difference=mean_a - mean_b,
                min_detectable_d=min_detectable_d(n_a, n_b, alpha), low_power=min(n_a, n_b) < LOW_POWER_N)
    if n_a < 2 or n_b < 2:
        return Comparison(test="none", statistic=math.nan, df=math.nan, p_value=math.nan, cohens_d=math.nan,
                          hedges_g=math.nan, note=f"n too small (n = {n_a} vs {n_b}; a test needs 2 per arm)", **base)
    paired = seeds_pair(a, b) if paired is None else paired
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # zero variance: handled below, not printed
        if paired:
            seeds = sorted(a.index)
            result = stats.ttest_rel(a[seeds].to_numpy(), b[seeds].to_numpy())
        else:
            result = stats.ttest_ind(a.to_numpy(), b.to_numpy(), equal_var=False)
    d, g = effect_sizes(a.to_numpy(), b.to_numpy())
    return Comparison(test="paired t" if paired else "Welch t", statistic=float(result.statistic),
                      df=float(result.df), p_value=float(result.pvalue), cohens_d=d, hedges_g=g,
                      note=degenerate_note(a, b, paired, float(result.pvalue)), **base)


def degenerate_note(a: pd.Series, b: pd.Series, paired: bool, p_value: float) -> str:
    spread = (a[sorted(a.index)].to_numpy() - b[sorted(a.index)].to_numpy()).std() if paired \
        else max(a.std(ddof=1), b.std(ddof=1))
    if spread > 0:
        return ""
    if math.isnan(p_value):
        return "no variance and no difference: not testable"
    return "no variance within arms: the t-test is degenerate (p = 0 for any difference)"


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
            row["significant"] = bool(row["p_value"] < alpha)
        rows.extend(family)
    return pd.DataFrame(rows)
