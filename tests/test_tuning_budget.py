"""Tuning-budget curves (issue 55): Tang et al.'s unbiased expected-best estimator against brute force and a hand
computation, its interval's coverage simulated in the hard case (and that the check catches Dodge et al.'s biased
estimator), the records read with failed trials kept and confirm reruns left out, the command's files and errors,
the committed tables recomputed from the committed records, and README's block."""

import importlib.util
import itertools
import json
import math
import re
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import REPO
from fixtures.aggregate.fake_tuning import Trial, write_tuning_study
from scipy import stats

from optbench.analysis.judging.tuning_budget import curve_table, pair_table, rank_table, read_searches
from optbench.analysis.statistics import expected_max
from optbench.analysis.statistics.expected_max import curve_interval, expected_best_curve, with_replacement_curve
from optbench.analysis.statistics.expected_max_coverage import HARD_CASE, simulate_coverage
from optbench.analysis.statistics.robust import expanded_level
from optbench.formats import aggregate_tables, run_summary

STUDY_DOCS = REPO / "docs" / "cross-workload-study"


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def brute_force(scores, k: int, best=max) -> float:
    """The best of every k-subset of the trials, averaged: what E_k means."""
    subsets = list(itertools.combinations(scores, k))
    return sum(best(subset) for subset in subsets) / len(subsets)


# ---- the estimator -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scores",
    [
        [0.61, 0.55, 0.61, 0.1, 0.72, 0.55, 0.58],  # ties and a diverged trial at chance
        [0.3, 0.3, 0.3, 0.3],  # all tied
        [0.9, 0.1, 0.5, 0.5, 0.7, 0.2, 0.9, 0.8, 0.4],
    ],
)
def test_the_estimator_is_the_average_over_every_k_subset_of_its_best(scores):
    curve = expected_best_curve(scores)
    losses = expected_best_curve(scores, higher_is_better=False)
    for k in range(1, len(scores) + 1):
        assert curve[k - 1] == pytest.approx(brute_force(scores, k), abs=1e-12)
        assert losses[k - 1] == pytest.approx(brute_force(scores, k, best=min), abs=1e-12)


def test_by_hand_three_trials():
    """Scores 0.2, 0.5, 0.9: E_1 = 1.6 / 3; E_2 = (0.5 + 2 x 0.9) / 3 (0.5 is the best of one pair, 0.9 of two);
    E_3 = 0.9. Dodge et al.'s E_2 = 0.2/9 + 0.5 x 3/9 + 0.9 x 5/9 = 6.2/9, below the unbiased 6.9/9."""
    assert expected_best_curve([0.5, 0.9, 0.2]) == pytest.approx([1.6 / 3, 2.3 / 3, 0.9])
    assert with_replacement_curve([0.5, 0.9, 0.2])[1] == pytest.approx(6.2 / 9)
    # a loss: the expected lowest of 2 is (0.2 x 2 + 0.5) / 3
    assert expected_best_curve([0.5, 0.9, 0.2], higher_is_better=False)[1] == pytest.approx(0.9 / 3)


@pytest.mark.parametrize("n", [1, 2, 8, 33, 64])
def test_first_is_the_mean_last_is_the_best_and_it_never_falls(n):
    scores = np.random.default_rng(n).beta(2, 5, size=n)
    curve = expected_best_curve(scores)
    assert curve[0] == pytest.approx(scores.mean(), abs=1e-12)
    assert curve[-1] == pytest.approx(scores.max(), abs=1e-12)
    assert np.all(np.diff(curve) >= -1e-12)
    assert np.allclose(expected_max.weights(n).sum(axis=1), 1.0)
    lowest = expected_best_curve(scores, higher_is_better=False)
    assert lowest[-1] == pytest.approx(scores.min()) and np.all(np.diff(lowest) <= 1e-12)


def test_batched_curves_equal_one_at_a_time():
    batch = np.random.default_rng(0).random((4, 6))
    together = expected_best_curve(batch, axis=-1)
    assert together.shape == (6, 4)
    for row in range(4):
        assert together[:, row] == pytest.approx(expected_best_curve(batch[row]))


# ---- the interval ------------------------------------------------------------------------------------------


def bias_is_zero(results) -> bool:
    """Every k's mean error within 4 Monte Carlo standard errors of 0 (or a hundredth of a point)."""
    return all(abs(result.bias) <= 4 * result.bias_se + 1e-4 for result in results)


def test_in_the_hard_case_the_estimate_is_unbiased_and_the_interval_covers_near_95_percent():
    """8 trials, a fifth diverged at chance, the rest skewed: measured coverage (400 searches) about 86 % at k = 1
    and 90-95 % beyond; the checks leave some 3 Monte Carlo sd of room."""
    results = simulate_coverage(HARD_CASE, trials=8, repetitions=400, resamples=1000)
    assert bias_is_zero(results)
    assert results[0].coverage.value >= 0.78
    assert all(result.coverage.value >= 0.85 for result in results[1:])


def test_the_same_check_catches_dodges_with_replacement_estimator(monkeypatch):
    """Swap in Dodge et al.'s estimator: it is biased low at every k >= 2, so the bias check fails."""
    monkeypatch.setattr(expected_max, "expected_best_curve", with_replacement_curve)
    results = simulate_coverage(HARD_CASE, trials=8, repetitions=400, resamples=1000)
    assert not bias_is_zero(results)
    assert all(result.bias < -4 * result.bias_se for result in results[1:])
    assert all(result.with_replacement_bias == pytest.approx(result.bias) for result in results)


def test_a_plain_percentile_interval_would_miss_at_k_equal_n():
    """Why the interval is bias-corrected: no resample beats the best trial found, so a percentile interval of E_n
    never reaches above the sample's best, and in the hard case it holds the truth far below 95 % of the time."""
    rng = np.random.default_rng(5)
    truth = HARD_CASE.expected_best(8)
    held_percentile = held_corrected = 0
    for repetition in range(300):
        scores = HARD_CASE.draw(rng, (8,))
        result = stats.bootstrap(
            (scores,),
            lambda sample, axis: expected_best_curve(sample, True, axis)[-1],
            n_resamples=1000,
            confidence_level=expanded_level(8),
            method="percentile",
            vectorized=True,
            rng=np.random.default_rng(repetition),
        )
        held_percentile += result.confidence_interval.low <= truth <= result.confidence_interval.high
        _, low, high = curve_interval(scores, resamples=1000, seed=repetition)
        held_corrected += low[-1] <= truth <= high[-1]
    assert held_percentile / 300 < 0.85 < held_corrected / 300


def test_fewer_than_two_trials_have_no_interval():
    estimate, low, high = curve_interval([0.4])
    assert estimate == pytest.approx([0.4]) and math.isnan(low[0]) and math.isnan(high[0])


# ---- reading tuning records --------------------------------------------------------------------------------


def demo_study(root, study="tune_demo"):
    """Adam: 4 trials, trial 1 failed; its top 2 rerun on seeds 1 and 2 (far above their seed-0 scores)."""
    trials = {
        "adam": [
            Trial(1e-4, 0.1, [0.50, 0.99, 0.99]),
            Trial(2e-4, 0.1, None),
            Trial(3e-4, 0.1, [0.60, 0.98, 0.98]),
            Trial(4e-4, 0.1, [0.40]),
        ],
        "sgd": [Trial(1e-3, 0.1, [0.55, 0.56, 0.57]), Trial(2e-3, 0.1, [0.45, 0.46, 0.47]), Trial(3e-3, 0.1, [0.3])],
    }
    return write_tuning_study(root, trials, study=study)


def test_trials_count_on_the_trial_seed_with_a_failed_one_at_its_recorded_score(tmp_path):
    path = demo_study(tmp_path)
    record = json.loads(path.read_text())
    failed_dir = tmp_path / record["optimizers"]["adam"]["trials"][1]["runs"][0]["run_dir"]
    recorded = run_summary.read(failed_dir).best["val/acc"]
    found = read_searches([tmp_path])
    adam = next(search for search in found.searches if search.optimizer == "adam")
    assert adam.scores == pytest.approx([0.50, recorded, 0.60, 0.40])  # the 0.99s of the confirm seeds left out
    assert (adam.diverged_or_failed, adam.at_chance, adam.not_ended) == (1, 0, 0)
    assert found.missing() == ["mnist1d", "char_lm"] and found.tuned_workloads == ["cifar_resnet18"]


def test_a_failed_trial_that_recorded_nothing_counts_at_chance(tmp_path):
    path = demo_study(tmp_path)
    record = json.loads(path.read_text())
    failed_dir = tmp_path / record["optimizers"]["adam"]["trials"][1]["runs"][0]["run_dir"]
    (failed_dir / "summary.json").unlink()
    adam = next(search for search in read_searches([tmp_path]).searches if search.optimizer == "adam")
    assert adam.scores[1] == pytest.approx(0.1)  # 1 / 10 classes
    assert (adam.trials, adam.at_chance) == (4, 1)


def test_a_loss_is_ranked_lowest_first(tmp_path):
    path = demo_study(tmp_path)
    record = json.loads(path.read_text())
    record["select_on"] = "val_loss_best"  # the same numbers read as losses: sgd's lower trials now win
    path.write_text(json.dumps(record))
    found = read_searches([tmp_path])
    assert all(not search.higher_is_better for search in found.searches)
    curves = curve_table(found.searches, resamples=500)
    ranks = rank_table(curves)
    at_one = ranks[ranks["k"] == 1].set_index("optimizer")
    adam = next(search for search in found.searches if search.optimizer == "adam")
    assert at_one.loc["sgd", "expected_best"] == pytest.approx(0.433333, abs=1e-6)  # (0.55 + 0.45 + 0.3) / 3
    assert at_one.loc["adam", "expected_best"] == pytest.approx(adam.scores.mean())
    lowest = min(at_one.index, key=lambda name: at_one.loc[name, "expected_best"])
    assert at_one.loc[lowest, "rank"] == 1 and at_one["rank"].max() == 2


def test_ranks_stop_at_the_fewest_trials_and_pairs_compare_both_ends(tmp_path):
    demo_study(tmp_path)
    found = read_searches([tmp_path])
    curves = curve_table(found.searches, resamples=500)
    assert sorted(curves.groupby("optimizer")["k"].max().items()) == [("adam", 4), ("sgd", 3)]
    ranks = rank_table(curves)
    assert sorted(ranks["k"].unique()) == [1]  # budgets 1, 4, ...: sgd has 3 trials, so only k = 1 is shared
    pairs = pair_table(found.searches, ranks, resamples=500)
    assert len(pairs) == 1 and pairs.iloc[0]["k_small"] == pairs.iloc[0]["k_large"] == 1


# ---- the command -------------------------------------------------------------------------------------------


def test_the_command_writes_every_file_and_names_missing_workloads(tmp_path, capsys):
    demo_study(tmp_path / "runs")
    script = load_script("tuning_budget")
    assert script.main([str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--coverage-repetitions", "5"]) == 0
    for relative in (
        aggregate_tables.TUNING_BUDGET,
        aggregate_tables.TUNING_BUDGET_RANKS,
        aggregate_tables.TUNING_BUDGET_PAIRS,
        aggregate_tables.TUNING_BUDGET_COVERAGE,
        "tables/tuning_budget.md",
        "tables/tuning_budget_ranks.md",
        "figures/tuning_budget.png",
        "tuning-budget.md",
    ):
        assert (tmp_path / "out" / relative).is_file(), relative
    page = (tmp_path / "out" / "tuning-budget.md").read_text()
    assert "**Missing:** no tuning record yet for mnist1d, char_lm." in page
    assert "missing: mnist1d, char_lm" in capsys.readouterr().out


@pytest.mark.parametrize("problem", ["not a folder", "no records", "two records of one study"])
def test_bad_input_is_one_error_line_exit_2_and_writes_nothing(tmp_path, capsys, problem):
    runs = tmp_path / "runs"
    runs.mkdir()
    given = [str(runs)]
    if problem == "not a folder":
        given = [str(tmp_path / "absent")]
    elif problem == "two records of one study":
        demo_study(runs / "a")
        demo_study(runs / "b")
    script = load_script("tuning_budget")
    assert script.main([*given, "--out", str(tmp_path / "out"), "--coverage-repetitions", "5"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and "\n" not in error
    assert not (tmp_path / "out").exists()


def committed_command() -> list[str]:
    """The arguments the committed page says wrote it."""
    page = (STUDY_DOCS / "tuning-budget.md").read_text()
    command = re.search(r"Written by `python scripts/tuning_budget.py ([^`]*)`", page).group(1)
    return command.split()


def test_the_committed_tables_recompute_from_the_committed_records(tmp_path):
    """Run the page's own command again (coverage with few repetitions: the simulated table is checked above):
    the curves, ranks and pairs come out identical."""
    arguments = committed_command()
    script = load_script("tuning_budget")
    sources = arguments[: arguments.index("--out")]
    assert (
        script.main(
            [*[str(REPO / source) for source in sources], "--out", str(tmp_path), "--coverage-repetitions", "3"]
        )
        == 0
    )
    for table in (
        aggregate_tables.TUNING_BUDGET,
        aggregate_tables.TUNING_BUDGET_RANKS,
        aggregate_tables.TUNING_BUDGET_PAIRS,
    ):
        fresh = aggregate_tables.read(tmp_path, table)
        committed = aggregate_tables.read(STUDY_DOCS, table)
        pd.testing.assert_frame_equal(fresh, committed, check_exact=False, rtol=1e-12, atol=1e-12)


def test_readme_block_is_current_and_short():
    readme = load_script("readme_tuning_budget")
    assert readme.main(["--check"]) == 0
    block = readme.tuning_budget_block()
    assert len(block.strip().splitlines()) <= 10
    ranks = aggregate_tables.read(STUDY_DOCS, aggregate_tables.TUNING_BUDGET_RANKS)
    first = ranks[(ranks["k"] == 1)].sort_values(["workload", "rank"]).iloc[0]
    assert f"k=1 {readme.NAMES.get(first['optimizer'], first['optimizer'])}" in block


def test_a_stale_readme_block_is_refused(tmp_path, monkeypatch, capsys):
    readme = load_script("readme_tuning_budget")
    stale = tmp_path / "README.md"
    stale.write_text(readme.with_block(readme.README.read_text(), "- cifar_resnet18: k=1 Lion > Muon\n"))
    monkeypatch.setattr(readme, "README", stale)
    assert readme.main(["--check"]) == 1
    assert "run python scripts/readme_tuning_budget.py" in capsys.readouterr().err


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
