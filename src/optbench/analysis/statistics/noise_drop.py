"""The H3 noise drop of two optimizers compared: (clean - noisy) of one against (clean - noisy) of the other.

- `drop_test(values)`: per-seed drops through `two_arm_test` when each optimizer's clean and noisy runs share
  seeds, else the `contrast` of the four cells.
- `contrast(cells)`: a difference of differences when seeds do not pair: estimate sum(w_i * mean_i),
  SE^2 = sum(w_i^2 * s_i^2 / n_i), Welch-Satterthwaite degrees of freedom.
- `paired_cells(values)`: the four cells on the seeds all four ran, so the means shown beside a per-seed test
  are taken on the seeds it used.
"""

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from optbench.analysis.statistics.power import ALPHA, detectable_effect, t_power
from optbench.analysis.statistics.summaries import (
    MIN_PAIRS,
    Description,
    by_seed,
    describe,
    finite,
    no_spread,
    one_per_seed,
    scale_of,
    seeds_pair,
    seeds_text,
)
from optbench.analysis.statistics.two_arms import LOW_POWER_N, Comparison, two_arm_test, untested


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
    are formed and compared with `two_arm_test` (paired t on drop differences when both optimizers ran the same
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
        result = two_arm_test(per_seed_s, per_seed_o, alpha, min_pairs=min_pairs)
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
