"""The aggregator's statistics against numbers worked out by hand, not by calling scipy the same way.

Permutation p values are enumerated here with itertools. The t distribution's tail is computed here from the regularised incomplete beta function
(P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2)) and the critical value for 2 degrees of freedom from its closed form.
"""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import betainc

from optbench.aggregate.stats import compare, contrast, describe, holm, min_detectable_d, pairwise

# t(0.975, 2) in closed form: for 2 degrees of freedom the quantile is (2u - 1) / sqrt(2 u (1 - u)); 4.303 in tables.
T_975_DF2 = 0.95 / math.sqrt(2 * 0.975 * 0.025)


def two_sided_p(t: float, df: float) -> float:
    return float(betainc(df / 2, 0.5, df / (df + t * t)))


def sample_sd(values) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((value - mean) ** 2 for value in values) / (len(values) - 1))


def welch_by_hand(a, b) -> tuple[float, float, float]:
    va, vb = sample_sd(a) ** 2 / len(a), sample_sd(b) ** 2 / len(b)
    t = (sum(a) / len(a) - sum(b) / len(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return t, df, two_sided_p(t, df)


def test_describe_gives_mean_sample_sd_and_t_interval():
    summary = describe([0.90, 0.92, 0.97])
    assert summary.n == 3
    assert summary.mean == pytest.approx(0.93, abs=1e-15)
    assert summary.std == pytest.approx(math.sqrt(0.0013), rel=1e-12)       # ddof = 1
    half = T_975_DF2 * math.sqrt(0.0013) / math.sqrt(3)
    assert summary.half_width == pytest.approx(half, rel=1e-12)
    assert (summary.ci_low, summary.ci_high) == pytest.approx((0.93 - half, 0.93 + half), rel=1e-12)


def test_describe_handles_one_and_no_values_and_drops_nan():
    one = describe([0.5])
    assert one.n == 1 and one.mean == 0.5 and math.isnan(one.std) and math.isnan(one.ci_low)
    assert describe([]).n == 0 and math.isnan(describe([]).mean)
    assert describe([0.9, math.nan, math.inf, 0.8]).n == 2


def two_sided_from(observed: float, null: list[float]) -> float:
    """scipy's two-sided permutation p: twice the smaller tail (each tail counts the observed), at most 1."""
    eps = 1e-12 * max(1.0, abs(observed))
    greater = sum(value >= observed - eps for value in null) / len(null)
    less = sum(value <= observed + eps for value in null) / len(null)
    return min(1.0, 2 * min(greater, less))


def independent_by_hand(a, b) -> float:
    pooled, n_a = [*a, *b], len(a)
    null = []
    for chosen in itertools.combinations(range(len(pooled)), n_a):
        first = [pooled[i] for i in chosen]
        second = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        null.append(sum(first) / n_a - sum(second) / len(second))
    return two_sided_from(sum(a) / n_a - sum(b) / len(b), null)


def sign_flip_by_hand(differences) -> float:
    null = [sum(sign * d for sign, d in zip(signs, differences)) / len(differences)
            for signs in itertools.product((1, -1), repeat=len(differences))]
    return two_sided_from(sum(differences) / len(differences), null)


def test_two_sample_permutation_p_equals_hand_enumeration_when_seeds_differ():
    a = pd.Series([0.90, 0.92, 0.97], index=[0, 1, 2])
    b = pd.Series([0.86, 0.87, 0.91, 0.88, 0.85], index=[3, 4, 5, 6, 7])
    result = compare(a, b)
    assert result.test == "permutation, exact"
    assert result.p_value == pytest.approx(independent_by_hand(list(a), list(b)), rel=1e-12)
    # Of the C(8, 3) = 56 splits only {0.97, 0.92, 0.91} has a larger mean difference than a's: p = 2 x 2/56.
    assert result.p_value == pytest.approx(4 / 56)
    assert result.min_p == pytest.approx(2 / math.comb(8, 3))
    assert result.difference == pytest.approx(0.93 - 0.874, rel=1e-12)


def test_paired_sign_flip_p_equals_hand_enumeration_when_both_arms_hold_the_same_seeds():
    a = pd.Series([0.90, 0.92, 0.97, 0.91, 0.95], index=[2, 0, 1, 3, 4])     # order does not matter, seeds do
    b = pd.Series([0.90, 0.88, 0.93, 0.92, 0.90], index=[1, 2, 0, 3, 4])
    differences = [0.92 - 0.93, 0.97 - 0.90, 0.90 - 0.88, 0.91 - 0.92, 0.95 - 0.90]  # a - b for seeds 0..4
    result = compare(a, b)
    assert result.test == "paired sign-flip, exact"
    assert result.p_value == pytest.approx(sign_flip_by_hand(differences), rel=1e-12)
    assert result.min_p == pytest.approx(2 / 2 ** 5)


def test_three_paired_seeds_can_never_reach_p_below_a_quarter():
    result = compare(pd.Series([0.99, 0.98, 0.97]), pd.Series([0.10, 0.11, 0.12]))
    assert result.p_value == pytest.approx(0.25) and result.min_p == pytest.approx(0.25)


def test_constant_differences_give_the_exact_p_not_zero():
    """Every seed 2 epochs faster: the sign-flip distribution has 8 arrangements, the observed one is the most
    extreme of its side, so p = 2/8, where a t-test would say t = inf, p = 0."""
    result = compare(pd.Series([3.0, 3.0, 3.0]), pd.Series([5.0, 5.0, 5.0]))
    assert result.p_value == pytest.approx(0.25)
    shifted = compare(pd.Series([3.0, 4.0, 6.0]), pd.Series([5.0, 6.0, 8.0]))   # differences all -2
    assert shifted.p_value == pytest.approx(0.25)
    same = compare(pd.Series([3.0, 3.0]), pd.Series([3.0, 3.0]))
    assert same.p_value == 1.0


def test_censored_runs_are_tied_worst_on_ranks_not_given_an_epoch():
    """a: epochs 2, 3, never, never; b: 4, 5, 6, never (independent seeds). Pooled mid-ranks: a -> 1, 2, 7, 7;
    b -> 3, 4, 5, 7. The permutation test runs on those ranks."""
    a = pd.Series([2.0, 3.0, math.inf, math.inf], index=[0, 1, 2, 3])
    b = pd.Series([4.0, 5.0, 6.0, math.inf], index=[4, 5, 6, 7])
    result = compare(a, b)
    assert result.test == "permutation on ranks, exact"
    assert (result.censored_a, result.censored_b) == (2, 1)
    assert math.isnan(result.mean_a) and math.isnan(result.mean_b)
    assert result.difference == pytest.approx((1 + 2 + 7 + 7) / 4 - (3 + 4 + 5 + 7) / 4)
    assert result.p_value == pytest.approx(independent_by_hand([1, 2, 7, 7], [3, 4, 5, 7]), rel=1e-12)


def test_effect_sizes_use_the_pooled_sd_and_hedges_correction():
    a, b = [0.90, 0.92, 0.97], [0.86, 0.87, 0.91]
    pooled = math.sqrt((2 * sample_sd(a) ** 2 + 2 * sample_sd(b) ** 2) / 4)
    d = (0.93 - sum(b) / 3) / pooled
    result = compare(pd.Series(a, index=[0, 1, 2]), pd.Series(b, index=[5, 6, 7]))
    assert result.cohens_d == pytest.approx(d, rel=1e-12)
    assert result.hedges_g == pytest.approx(d * (1 - 3 / (4 * 6 - 9)), rel=1e-12)


def test_low_power_is_flagged_below_five_seeds_with_the_detectable_effect():
    three = compare(pd.Series([0.90, 0.92, 0.97]), pd.Series([0.86, 0.87, 0.91]))
    assert three.low_power
    assert three.min_detectable_d == pytest.approx(3.07, abs=0.01)   # n = 3 vs 3, 80 % power, alpha 0.05
    five = compare(pd.Series(np.linspace(0.9, 0.94, 5)), pd.Series(np.linspace(0.88, 0.92, 5)))
    assert not five.low_power
    assert min_detectable_d(10, 10) == pytest.approx(1.32, abs=0.01)  # Cohen's tables: d = 1.32 at n = 10


def test_too_few_seeds_gives_no_test_and_says_so():
    result = compare(pd.Series([0.9]), pd.Series([0.8, 0.85]))
    assert result.test == "none" and math.isnan(result.p_value)
    assert "n too small" in result.note


def test_contrast_uses_welch_satterthwaite_degrees_of_freedom():
    cells = [(1.0, describe([0.94, 0.95, 0.96])), (-1.0, describe([0.85, 0.88, 0.86, 0.87])),
             (-1.0, describe([0.93, 0.95])), (1.0, describe([0.80, 0.82, 0.79]))]
    parts = [cell.std ** 2 / cell.n for _, cell in cells]
    estimate = (0.95 - 0.865) - (0.94 - 0.80333333333333333)
    df = sum(parts) ** 2 / sum(part ** 2 / (cell.n - 1) for part, (_, cell) in zip(parts, cells))
    t = estimate / math.sqrt(sum(parts))
    result = contrast(cells)
    assert result.estimate == pytest.approx(estimate, rel=1e-9)
    assert result.df == pytest.approx(df, rel=1e-12)
    assert result.p_value == pytest.approx(two_sided_p(t, df), rel=1e-9)


def test_holm_adjustment_steps_down_and_keeps_order():
    adjusted = holm([0.01, 0.04, 0.03, math.nan])
    assert adjusted[:3] == pytest.approx([0.03, 0.06, 0.06])
    assert math.isnan(adjusted[3])


def test_pairwise_tests_every_pair_within_a_setting_only():
    runs = pd.DataFrame({
        "setting": ["s1"] * 6 + ["s2"] * 2, "arm": ["sgd"] * 3 + ["adam"] * 3 + ["sgd", "adam"],
        "seed": [0, 1, 2, 0, 1, 2, 0, 0], "acc": [0.90, 0.92, 0.97, 0.88, 0.93, 0.90, 0.5, 0.6]})
    table = pairwise(runs, "acc", ["s1", "s2"], ["sgd", "adam"])
    assert list(table["setting"]) == ["s1", "s2"]
    first = table.iloc[0]
    assert (first["arm_a"], first["arm_b"], first["test"]) == ("sgd", "adam", "paired sign-flip, exact")
    assert table.iloc[1]["test"] == "none"   # one seed each: no test, never a made-up p


def test_pairwise_significance_uses_the_holm_adjusted_p():
    """Two pairs, 8 paired seeds each: raw p = 2/256 for the first, the Holm p doubles it."""
    seeds = list(range(8))
    runs = pd.DataFrame({"setting": ["s"] * 24, "arm": ["a"] * 8 + ["b"] * 8 + ["c"] * 8, "seed": seeds * 3,
                         "acc": [0.9 + 0.001 * i for i in seeds] + [0.8] * 8 + [0.8 + 0.001 * ((-1) ** i) for i in seeds]})
    table = pairwise(runs, "acc", ["s"], ["a", "b", "c"]).set_index(["arm_a", "arm_b"])
    assert table.loc[("a", "b"), "p_value"] == pytest.approx(2 / 256)
    assert table.loc[("a", "b"), "p_holm"] == pytest.approx(3 * 2 / 256)
    assert table.loc[("a", "b"), "significant"]
    assert not table.loc[("b", "c"), "significant"]
