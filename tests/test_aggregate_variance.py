"""analysis/statistics/variance.py: the seed vs test-image decomposition on cases with known answers, the two-level
bootstrap; analysis/judging/variance_tables.py: the table the aggregator writes from runs' predictions.npz."""

import numpy as np
import pandas as pd
import pytest
from fixtures.aggregate.fake_runs import ramp_records, write_predictions, write_run

from optbench.analysis import aggregate
from optbench.analysis.judging.variance_tables import comparison_row
from optbench.analysis.statistics.variance import bootstrap_differences, decompose


def test_a_hand_computed_case():
    correct_a = np.array([[1, 1, 0, 0], [1, 0, 1, 0]], dtype=bool)
    correct_b = np.array([[1, 0, 0, 0], [0, 0, 1, 1]], dtype=bool)
    # D = [[0, 1, 0, 0], [1, 0, 0, -1]]: per seed (0.25, 0), per image (0.5, 0.5, 0, -0.5)
    parts = decompose(correct_a, correct_b)
    assert parts.difference == pytest.approx(0.125)
    assert parts.var_seeds == pytest.approx(0.03125 / 2)  # var(0.25, 0) = 0.03125, over S = 2
    assert parts.var_images == pytest.approx((0.6875 / 3) / 4)  # sum of squares 0.6875 about 0.125, ddof 1, over N = 4
    assert parts.share_seeds + parts.share_images == pytest.approx(1)
    assert parts.share_seeds == pytest.approx(0.015625 / (0.015625 + 0.6875 / 12))


def test_seeds_that_agree_leave_all_the_variance_to_the_test_images():
    rng = np.random.default_rng(0)
    one_seed_a, one_seed_b = rng.random(500) < 0.7, rng.random(500) < 0.6
    parts = decompose(np.tile(one_seed_a, (4, 1)), np.tile(one_seed_b, (4, 1)))
    assert parts.var_seeds == 0 and parts.share_seeds == 0 and parts.share_images == 1
    assert parts.var_images == pytest.approx((one_seed_a.astype(float) - one_seed_b).var(ddof=1) / 500)


def test_a_difference_the_same_on_every_image_leaves_all_the_variance_to_the_seeds():
    # seed 0: A and B both right everywhere; seed 1: A right and B wrong everywhere
    correct_a = np.ones((2, 100), dtype=bool)
    correct_b = np.array([np.ones(100, dtype=bool), np.zeros(100, dtype=bool)])
    parts = decompose(correct_a, correct_b)
    assert parts.difference == pytest.approx(0.5)
    assert parts.var_images == 0 and parts.share_seeds == 1
    assert parts.var_seeds == pytest.approx(0.5 / 2)  # var(0, 1) = 0.5 over S = 2


def test_identical_arms_have_no_variance_and_no_shares():
    same = np.random.default_rng(1).random((3, 50)) < 0.5
    parts = decompose(same, same)
    assert parts.difference == 0 and parts.var_seeds == 0 and parts.var_images == 0
    assert np.isnan(parts.share_seeds) and np.isnan(parts.share_images)


def test_the_bootstrap_of_one_source_matches_its_variance():
    rng = np.random.default_rng(2)
    one_seed_a, one_seed_b = rng.random(2000) < 0.8, rng.random(2000) < 0.7
    # seeds identical: resampling seeds changes nothing, the rounds vary by the test images alone
    rounds = bootstrap_differences(
        np.tile(one_seed_a, (3, 1)), np.tile(one_seed_b, (3, 1)), 2000, np.random.default_rng(0)
    )
    expected = decompose(np.tile(one_seed_a, (3, 1)), np.tile(one_seed_b, (3, 1))).var_images
    assert rounds.var() == pytest.approx(expected, rel=0.1)
    # every image alike within a seed: the rounds vary by the seeds alone (ddof 0: the bootstrap's own)
    per_seed = np.array([0.1, 0.3, 0.2, 0.6])
    correct_a = np.array([np.arange(1000) < 1000 * share for share in per_seed])
    rounds = bootstrap_differences(correct_a, np.zeros_like(correct_a), 2000, np.random.default_rng(0))
    assert rounds.mean() == pytest.approx(per_seed.mean(), abs=0.01)
    assert rounds.var() == pytest.approx(per_seed.var() / 4, rel=0.1)


def test_a_comparison_row_is_reproducible_and_its_interval_covers_the_difference():
    rng = np.random.default_rng(3)
    easy = rng.random(3000)
    correct_a, correct_b = rng.random((3, 3000)) < easy, rng.random((3, 3000)) < easy - 0.05
    row = comparison_row("cifar10", "sgd", "adam", correct_a, correct_b)
    assert row == comparison_row("cifar10", "sgd", "adam", correct_a, correct_b)
    assert row["ci_low"] < row["difference"] < row["ci_high"]
    assert row["difference"] == pytest.approx(correct_a.mean() - correct_b.mean())
    # conservative: the crossed bootstrap is at least as wide as the two one-way sources together
    assert row["sd_bootstrap"] ** 2 >= 0.9 * (row["var_seeds"] + row["var_images"])
    single = comparison_row("cifar10", "sgd", "adam", correct_a[:1], correct_b[:1])
    assert pd.isna(single.get("difference")) and "fewer than 2 paired seeds" in single["note"]


def study_with_predictions(results, images=400):
    """sgd and adam x 3 seeds on one test set, adam with a 4th seed sgd lacks, and a run without predictions."""
    rng = np.random.default_rng(4)
    correct = {}
    for optimizer, accuracy in (("sgd", 0.7), ("adam", 0.6)):
        for seed in range(3 if optimizer == "sgd" else 4):
            correct[optimizer, seed] = rng.random(images) < accuracy
            run_dir = write_run(results, ramp_records(correct[optimizer, seed].mean()), optimizer=optimizer, seed=seed)
            write_predictions(run_dir, correct[optimizer, seed], epoch=3)
    write_run(results, ramp_records(0.5), optimizer="lion", seed=0)  # made before predictions.npz
    return correct


def test_the_aggregator_writes_the_variance_table_and_report_section(tmp_path):
    correct = study_with_predictions(tmp_path / "results")
    outcome = aggregate(tmp_path / "results", tmp_path / "out", draw_figures=False)
    table = pd.read_csv(tmp_path / "out" / "tables" / "variance.csv")
    assert len(table) == 1  # lion has no predictions: no pair with it
    row = table.iloc[0]
    assert (row["arm_a"], row["arm_b"], row["seeds"], row["images"]) == ("sgd", "adam", 3, 400)  # seed 3 unpaired
    expected = decompose(
        np.stack([correct["sgd", seed] for seed in range(3)]), np.stack([correct["adam", seed] for seed in range(3)])
    )
    assert row["difference"] == pytest.approx(expected.difference)
    assert row["var_seeds"] == pytest.approx(expected.var_seeds)
    assert row["var_images"] == pytest.approx(expected.var_images)
    report = outcome.report.read_text()
    assert "## Where the variance comes from" in report and "2000 rounds" in report
    assert "tables/variance.md" in outcome.written


def test_predictions_from_another_epoch_or_test_set_are_left_out_with_a_warning(tmp_path):
    results = tmp_path / "results"
    study_with_predictions(results)
    stale = next((results).rglob("sgd/seed0"))
    write_predictions(stale, np.ones(400, dtype=bool), epoch=2)  # not the selected epoch 3
    other = next((results).rglob("sgd/seed1"))
    write_predictions(other, np.ones(300, dtype=bool), epoch=3)  # another test set
    outcome = aggregate(results, tmp_path / "out", draw_figures=False)
    table = pd.read_csv(tmp_path / "out" / "tables" / "variance.csv")
    assert table.iloc[0]["seeds"] == 1 and "fewer than 2 paired seeds" in table.iloc[0]["note"]
    assert any("from epoch 2, summary.json selected epoch 3" in warning for warning in outcome.warnings)
    assert any("another test set" in warning for warning in outcome.warnings)


def test_a_damaged_predictions_file_is_a_warning_not_a_crash(tmp_path):
    results = tmp_path / "results"
    study_with_predictions(results)
    (next(results.rglob("adam/seed2")) / "predictions.npz").write_bytes(b"not a zip")
    outcome = aggregate(results, tmp_path / "out", draw_figures=False)
    assert pd.read_csv(tmp_path / "out" / "tables" / "variance.csv").iloc[0]["seeds"] == 2
    assert any("predictions.npz cannot be read" in warning for warning in outcome.warnings)
