"""The aggregator's statistics against numbers worked out by hand, not by calling scipy the same way.

Exact p values are enumerated here with itertools on exact fractions. The t distribution's tail is computed
here from the regularised incomplete beta function (P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2)) and the
critical value for 2 degrees of freedom from its closed form.
"""

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy.special import betainc

from optbench.analysis.judging.pairwise_tables import pairwise_table
from optbench.analysis.statistics.exact_tests import holm, sign_flip_p
from optbench.analysis.statistics.noise_drop import contrast
from optbench.analysis.statistics.power import min_detectable_d, t_power
from optbench.analysis.statistics.summaries import describe
from optbench.analysis.statistics.two_arms import two_arm_test

# t(0.975, 2) in closed form: for 2 degrees of freedom the quantile is (2u - 1) / sqrt(2 u (1 - u)); 4.303 in tables.
T_975_DF2 = 0.95 / math.sqrt(2 * 0.975 * 0.025)


def two_sided_p(t: float, df: float) -> float:
    return float(betainc(df / 2, 0.5, df / (df + t * t)))


def mean(values):
    return sum(values) / len(values)


def sample_sd(values) -> float:
    centre = mean(values)
    return math.sqrt(sum((value - centre) ** 2 for value in values) / (len(values) - 1))


def paired_t_by_hand(a, b) -> tuple[float, float, float]:
    """(mean difference, t, two-sided p) of the paired t-test."""
    differences = [x - y for x, y in zip(a, b)]
    t = mean(differences) / (sample_sd(differences) / math.sqrt(len(differences)))
    return mean(differences), t, two_sided_p(t, len(differences) - 1)


def welch_by_hand(a, b) -> tuple[float, float, float]:
    va, vb = sample_sd(a) ** 2 / len(a), sample_sd(b) ** 2 / len(b)
    t = (mean(a) - mean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return t, df, two_sided_p(t, df)


def exact_sign_flip(differences) -> float:
    """Twice the smaller tail over all 2^n sign patterns, in exact rational arithmetic (no float ties lost).
    `differences`: numbers, or Fractions when the data's decimal values are the exact ones."""
    exact = [Fraction(value) for value in differences]
    observed = sum(exact)
    null = [
        sum(sign * value for sign, value in zip(signs, exact))
        for signs in itertools.product((1, -1), repeat=len(exact))
    ]
    return min(1.0, 2 * min(sum(v >= observed for v in null), sum(v <= observed for v in null)) / len(null))


def exact_permutation(a, b) -> float:
    pooled = [Fraction(value) for value in [*a, *b]]
    observed = sum(pooled[: len(a)])
    null = [sum(pooled[i] for i in chosen) for chosen in itertools.combinations(range(len(pooled)), len(a))]
    return min(1.0, 2 * min(sum(v >= observed for v in null), sum(v <= observed for v in null)) / len(null))


def test_describe_gives_mean_sample_sd_and_t_interval():
    summary = describe([0.90, 0.92, 0.97])
    assert summary.n == 3
    assert summary.mean == pytest.approx(0.93, abs=1e-15)
    assert summary.std == pytest.approx(math.sqrt(0.0013), rel=1e-12)  # ddof = 1
    half = T_975_DF2 * math.sqrt(0.0013) / math.sqrt(3)
    assert summary.half_width == pytest.approx(half, rel=1e-12)
    assert (summary.ci_low, summary.ci_high) == pytest.approx((0.93 - half, 0.93 + half), rel=1e-12)


def test_describe_handles_one_and_no_values_and_drops_nan():
    one = describe([0.5])
    assert one.n == 1 and one.mean == 0.5 and math.isnan(one.std) and math.isnan(one.ci_low)
    assert describe([]).n == 0 and math.isnan(describe([]).mean)
    assert describe([0.9, math.nan, math.inf, 0.8]).n == 2


def test_describe_calls_rounding_noise_zero_spread():
    """np.std([0.7, 0.7, 0.7]) is ~1e-16, not 0: a spread that small is no spread."""
    assert np.std([0.70, 0.70, 0.70]) > 0
    assert describe([0.70, 0.70, 0.70]).std == 0.0


def test_paired_seeds_get_the_paired_t_test_with_its_interval():
    a = pd.Series([0.90, 0.92, 0.97, 0.91, 0.95], index=[2, 0, 1, 3, 4])  # order does not matter, seeds do
    b = pd.Series([0.90, 0.88, 0.93, 0.92, 0.90], index=[1, 2, 0, 3, 4])
    a_by_seed, b_by_seed = [0.92, 0.97, 0.90, 0.91, 0.95], [0.93, 0.90, 0.88, 0.92, 0.90]
    difference, t, p = paired_t_by_hand(a_by_seed, b_by_seed)
    result = two_arm_test(a, b)
    assert (result.test, result.n_pairs) == ("paired t", 5)
    assert result.difference == pytest.approx(difference, rel=1e-12)
    assert result.p_value == pytest.approx(p, rel=1e-9)
    differences = [x - y for x, y in zip(a_by_seed, b_by_seed)]
    # t(0.975, 4) = 2.7764451 (tables)
    half = 2.7764451052 * sample_sd(differences) / math.sqrt(5)
    assert (result.ci_low, result.ci_high) == pytest.approx((difference - half, difference + half), rel=1e-8)
    assert result.effect_size == pytest.approx(difference / sample_sd(differences), rel=1e-12)
    assert result.effect_kind == "d_z"
    assert result.exact_p == pytest.approx(exact_sign_flip(differences)) and result.exact_min_p == 2 / 32


def test_seeds_that_do_not_pair_get_welch_with_the_exact_permutation_test_beside_it():
    a = pd.Series([0.90, 0.92, 0.97], index=[0, 1, 2])
    b = pd.Series([0.86, 0.87, 0.91, 0.88, 0.85], index=[3, 4, 5, 6, 7])
    t, df, p = welch_by_hand(list(a), list(b))
    result = two_arm_test(a, b)
    assert (result.test, result.n_pairs) == ("Welch t", 0)
    assert result.p_value == pytest.approx(p, rel=1e-9)
    # Of the C(8, 3) = 56 splits only {0.97, 0.92, 0.91} has a larger sum than a's: p = 2 x 2/56.
    assert result.exact_p == pytest.approx(exact_permutation(list(a), list(b))) == pytest.approx(4 / 56)
    assert result.exact_min_p == pytest.approx(2 / math.comb(8, 3))
    pooled = math.sqrt((2 * sample_sd(list(a)) ** 2 + 4 * sample_sd(list(b)) ** 2) / 6)
    d = (0.93 - mean(list(b))) / pooled
    assert result.effect_size == pytest.approx(d * (1 - 3 / (4 * 8 - 9)), rel=1e-12) and result.effect_kind == "g"


def test_three_paired_seeds_can_reach_alpha_with_the_t_test_but_not_the_exact_test():
    """At the user's design (3 seeds) the exact test is stuck at p >= 0.25; the paired t is not."""
    result = two_arm_test(pd.Series([0.90, 0.92, 0.97]), pd.Series([0.86, 0.87, 0.91]))
    differences = [0.04, 0.05, 0.06]
    assert result.p_value == pytest.approx(paired_t_by_hand([0.90, 0.92, 0.97], [0.86, 0.87, 0.91])[2], rel=1e-9)
    assert result.p_value < 0.05
    assert result.exact_p == pytest.approx(0.25) == result.exact_min_p == exact_sign_flip(differences)


def test_equal_differences_are_not_testable_never_p_zero():
    """Every seed 2 epochs faster, or three constant arms: a t-test would divide by zero spread."""
    for a, b in (([3.0, 3.0, 3.0], [5.0, 5.0, 5.0]), ([3.0, 4.0, 6.0], [5.0, 6.0, 8.0]), ([0.7, 0.7, 0.7], [0.6] * 3)):
        result = two_arm_test(pd.Series(a), pd.Series(b))
        assert result.test == "none" and math.isnan(result.p_value) and math.isnan(result.effect_size)
        assert "not testable" in result.note and "all equal" in result.note
        assert result.exact_p == pytest.approx(0.25)  # the exact test still stands beside it


def test_constant_cells_on_the_welch_path_are_not_testable():
    """Constant cells on the Welch path (seeds that do not pair) have no spread: no test, no p, no effect size,
    never p < 0.001 with an effect size of -4.2e14."""
    result = two_arm_test(
        pd.Series([0.70, 0.70, 0.70], index=[0, 1, 2]), pd.Series([0.60, 0.60, 0.60], index=[3, 4, 5])
    )
    assert result.test == "none" and math.isnan(result.p_value) and math.isnan(result.effect_size)
    assert "every run of A and B scored the same" in result.note


def test_exact_p_is_never_below_the_exact_value():
    """Every p equals exact rational enumeration: a mean recomputed in float can miss the observed arrangement
    (relative error ~3e-14), which makes a p at n = 8 too small by 2/256 (68 of 1,500 random cases did)."""
    rng = np.random.default_rng(4)
    for _ in range(60):
        a, b = rng.normal(0.7, 0.01, 8).round(4), rng.normal(0.7, 0.01, 8).round(4)  # accuracies of 10,000 images
        decimal = [Fraction(str(float(x))) - Fraction(str(float(y))) for x, y in zip(a, b)]  # the data's exact values
        assert sign_flip_p(a - b) == pytest.approx(exact_sign_flip(decimal), abs=1e-12)
    # a tie in exact arithmetic that floating point breaks: 0.1 + 0.2 != 0.3
    tie = [Fraction("0.1"), Fraction("0.2"), Fraction("-0.3"), Fraction("0.3")]
    assert sign_flip_p(np.array([0.1, 0.2, -0.3, 0.3])) == pytest.approx(exact_sign_flip(tie))


def test_censored_runs_are_tied_worst_on_ranks_by_the_exact_test():
    """a: epochs 2, 3, never, never; b: 4, 5, 6, never (independent seeds). Pooled mid-ranks: a -> 1, 2, 7, 7;
    b -> 3, 4, 5, 7. The permutation test runs on those ranks; no t-test on made-up epochs."""
    a = pd.Series([2.0, 3.0, math.inf, math.inf], index=[0, 1, 2, 3])
    b = pd.Series([4.0, 5.0, 6.0, math.inf], index=[4, 5, 6, 7])
    result = two_arm_test(a, b)
    assert result.test == "permutation on ranks, exact"
    assert (result.censored_a, result.censored_b) == (2, 1)
    assert math.isnan(result.mean_a) and math.isnan(result.mean_b)
    assert result.difference == pytest.approx((1 + 2 + 7 + 7) / 4 - (3 + 4 + 5 + 7) / 4)
    assert result.p_value == pytest.approx(exact_permutation([1, 2, 7, 7], [3, 4, 5, 7]))


def test_power_and_detectable_effect_are_those_of_the_test_used():
    """Paired t at 3 seeds: power 0.70 against d_z = 4 / sqrt(2) (a gap of 4 seed-sd of one arm), and it detects
    d_z of about 3.26 at 80 %. The exact test at 3 seeds detects nothing."""
    assert t_power(4 / math.sqrt(2), 2, math.sqrt(3)) == pytest.approx(0.70, abs=0.01)
    assert min_detectable_d(3) == pytest.approx(3.26, abs=0.01)
    assert min_detectable_d(10, 10) == pytest.approx(1.32, abs=0.01)  # Cohen's tables: d = 1.32 at n = 10
    result = two_arm_test(pd.Series([0.90, 0.92, 0.97]), pd.Series([0.86, 0.87, 0.91]))
    spread = sample_sd([0.04, 0.05, 0.06])
    assert result.min_detectable_difference == pytest.approx(result.min_detectable_d * spread, rel=1e-9)
    assert result.power == pytest.approx(t_power(0.05 / spread, 2, math.sqrt(3)), rel=1e-9)
    censored = two_arm_test(pd.Series([2.0, 2.0, math.inf]), pd.Series([4.0, 5.0, 5.0]))
    assert censored.power == 0.0  # its smallest p, 0.25, exceeds alpha


def test_too_few_seeds_gives_no_test_and_says_so():
    result = two_arm_test(pd.Series([0.9]), pd.Series([0.8, 0.85]))
    assert result.test == "none" and math.isnan(result.p_value)
    assert "n too small" in result.note


def test_contrast_uses_welch_satterthwaite_degrees_of_freedom():
    cells = [
        (1.0, describe([0.94, 0.95, 0.96])),
        (-1.0, describe([0.85, 0.88, 0.86, 0.87])),
        (-1.0, describe([0.93, 0.95])),
        (1.0, describe([0.80, 0.82, 0.79])),
    ]
    parts = [cell.std**2 / cell.n for _, cell in cells]
    estimate = (0.95 - 0.865) - (0.94 - 0.80333333333333333)
    df = sum(parts) ** 2 / sum(part**2 / (cell.n - 1) for part, (_, cell) in zip(parts, cells))
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
    runs = pd.DataFrame(
        {
            "setting": ["s1"] * 6 + ["s2"] * 2,
            "arm": ["sgd"] * 3 + ["adam"] * 3 + ["sgd", "adam"],
            "seed": [0, 1, 2, 0, 1, 2, 0, 0],
            "acc": [0.90, 0.92, 0.97, 0.88, 0.93, 0.90, 0.5, 0.6],
        }
    )
    table = pairwise_table(runs, "acc", ["s1", "s2"], ["sgd", "adam"])
    assert list(table["setting"]) == ["s1", "s2"]
    first = table.iloc[0]
    assert (first["arm_a"], first["arm_b"], first["test"]) == ("sgd", "adam", "paired t")
    assert table.iloc[1]["test"] == "none"  # one seed each: no test, never a made-up p


def test_pairwise_significance_uses_the_holm_adjusted_p():
    seeds = list(range(8))
    runs = pd.DataFrame(
        {
            "setting": ["s"] * 24,
            "arm": ["a"] * 8 + ["b"] * 8 + ["c"] * 8,
            "seed": seeds * 3,
            "acc": [0.9 + 0.001 * i for i in seeds] + [0.8] * 8 + [0.8 + 0.001 * ((-1) ** i) for i in seeds],
        }
    )
    table = pairwise_table(runs, "acc", ["s"], ["a", "b", "c"]).set_index(["arm_a", "arm_b"])
    raw = table["p_value"].to_numpy()
    assert table["p_holm"].to_numpy() == pytest.approx(holm(raw))
    assert table.loc[("a", "b"), "significant"]
    assert not table.loc[("b", "c"), "significant"]


def test_experiments_readme_table_is_what_the_script_prints(capsys):
    """experiments/README.md, "What n can show", comes from scripts/what_n_can_show.py, not typed by hand."""
    import importlib.util

    from conftest import REPO

    spec = importlib.util.spec_from_file_location("what_n_can_show", REPO / "scripts" / "what_n_can_show.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main() == 0
    printed = capsys.readouterr().out
    assert "| 3 | 0.25 (never < 0.05) | 3.26 | 0.12 | 0.29 | 0.71 |" in printed  # power at d = 1, 2, 4 seed-sd
    assert printed in (REPO / "experiments" / "README.md").read_text()


def test_accuracy_intervals_are_clipped_and_a_zero_difference_is_tied():
    from optbench.analysis.writing.tables import difference_interval, interval

    assert interval(-0.1704, 0.5471) == "[0.00, 54.71]"  # a t interval of three accuracies can reach below 0 %
    assert interval(0.95, 1.02) == "[95.00, 100.00]"
    assert difference_interval(0.0, -0.01, 0.01) == "0.00 (tied)"
    assert difference_interval(0.012, -0.004, 0.028) == "+1.20 [-0.40, +2.80]"
