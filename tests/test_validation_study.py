"""The validation study's resampling (scripts/validation_study.py and the modules under it), on synthetic runs with
known properties: draws are without replacement and disjoint; a pool with no spread gives exactly no false positive;
pure noise stays near alpha; a planted effect is found; the command writes the table its schema promises and the
README block between its markers. Bounded to a few seconds (few resamples, nested looks 3 and 6 where it can)."""

import importlib.util
import math

import numpy as np
import pandas as pd
import pytest
from conftest import REPO
from fixtures.aggregate.fake_runs import write_run

from optbench.analysis.judging.hypothesis_rule import Check
from optbench.analysis.judging.validation_effect import Pairs, effect_figures
from optbench.analysis.judging.validation_figures import AT_LEAST, AT_MOST, EQUAL, Figure
from optbench.analysis.judging.validation_null import comparison_z, null_figures
from optbench.analysis.judging.validation_runs import METRIC, finished_pool, paired_pools, resample_table
from optbench.analysis.statistics.resampling import Rate, disjoint_draw, extended_draw, monte_carlo_rate
from optbench.formats import aggregate_tables
from optbench.studies.until_decided import comparison_z as study_comparison_z


def pool_of(values, statuses=None) -> pd.DataFrame:
    values = np.asarray(values, dtype=float)
    return pd.DataFrame(
        {
            "seed": np.arange(len(values)),
            "status": statuses or ["completed"] * len(values),
            METRIC: values,
            "val_acc_best": values,
            "wall_time_s": 1.0,
        }
    )


def by_key(figures: list[Figure]) -> dict:
    return {(figure.figure, figure.rule, figure.n): figure.rate for figure in figures}


# ---- the draws and the rates, by hand -----------------------------------------------------------------


def test_a_draw_is_without_replacement_and_its_arms_disjoint():
    rng = np.random.default_rng(0)
    for _ in range(200):
        draw = disjoint_draw(rng, 12, 4, 3)
        assert draw.shape == (4, 3) and len(set(draw.ravel())) == 12  # the whole pool, each run once
    with pytest.raises(ValueError, match="need 13 runs; the pool has 12"):
        disjoint_draw(rng, 12, 1, 13)


def test_an_extended_draw_keeps_the_pilot_and_adds_new_runs_only():
    rng = np.random.default_rng(1)
    pilot = np.array([7, 2, 5])
    study = extended_draw(rng, 10, pilot, 8)
    assert list(study[:3]) == [7, 2, 5] and len(set(study)) == 8 and set(study) <= set(range(10))
    assert list(extended_draw(rng, 10, pilot, 3)) == [7, 2, 5]


def test_a_rate_carries_the_exact_binomial_interval():
    rate = monte_carlo_rate(0, 20)
    assert rate.value == 0.0 and rate.low == 0.0
    assert rate.high == pytest.approx(1 - 0.025 ** (1 / 20))  # Clopper-Pearson at 0 of n: 1 - (alpha/2)^(1/n)
    assert math.isnan(monte_carlo_rate(0, 0).value)


@pytest.mark.parametrize(
    "rate, claimed, relation, disagrees",
    [
        (Rate(10, 100, 0.05, 0.18), 0.05, AT_MOST, False),  # the interval reaches the bound
        (Rate(12, 100, 0.06, 0.20), 0.05, AT_MOST, True),  # wholly above "at most 5 %"
        (Rate(70, 100, 0.60, 0.79), 0.80, AT_LEAST, True),  # wholly below the promised 80 %
        (Rate(95, 100, 0.89, 0.98), 0.95, EQUAL, False),
        (Rate(0, 0, math.nan, math.nan), 0.05, EQUAL, False),  # nothing measured: no claim judged
    ],
)
def test_a_figure_disagrees_only_beyond_monte_carlo_error(rate, claimed, relation, disagrees):
    assert Figure("A/A", "f", "r", 3, rate, claimed, relation, "s").disagrees is disagrees


def test_the_sequential_z_is_the_one_the_study_takes():
    checks = [
        Check("s", "a vs b", "a higher", "as stated, significant", {"p": 0.01, "difference": 0.02}),
        Check("s", "a vs b", "a higher", "opposite, not significant", {"p": 0.4, "difference": -0.01}),
        Check("s", "a vs b", "a higher", "not testable", {"p": 0.01, "difference": 0.02}),
    ]
    for check in checks:
        ours, study = comparison_z(check), study_comparison_z(check)
        assert ours == study or (math.isnan(ours) and math.isnan(study))


# ---- the pools --------------------------------------------------------------------------------------


def test_the_pool_holds_finished_runs_of_the_setting_once_per_seed():
    runs = pd.DataFrame(
        {
            "run_id": ["x/0", "x/1", "x/2", "x/2b", "y/0"],
            "status": ["completed", "running", "diverged", "completed", "completed"],
            "seed": [0, 1, 2, 2, 0],
            "cfg.optimizer.lr": [0.01, 0.01, 0.01, 0.01, 0.005],
            METRIC: [0.9, 0.8, 0.1, 0.7, 0.85],
            "val_acc_best": 0.9,
            "wall_time_s": 1.0,
        }
    )
    pool = finished_pool(runs, {"optimizer.lr": 0.01})
    assert list(pool["seed"]) == [0, 2] and list(pool["status"]) == ["completed", "diverged"]  # running: not yet
    a, b = paired_pools(runs, {"optimizer.lr": 0.01}, {"optimizer.lr": 0.005})
    assert list(a["seed"]) == list(b["seed"]) == [0]


def test_a_resample_relabels_seeds_so_different_runs_pair_by_position():
    pool = pool_of([0.1, 0.2, 0.3, 0.4])
    table = resample_table({"a": pool.iloc[[3, 0]], "b": pool.iloc[[1, 2]]}, relabel=True)
    assert list(table["seed"]) == [0, 1, 0, 1] and list(table[METRIC]) == [0.4, 0.1, 0.2, 0.3]
    assert set(table["arm"]) == set(table["optimizer"]) == {"a", "b"}


# ---- the A/A figures ---------------------------------------------------------------------------------


def test_a_pool_without_spread_gives_no_false_positive_at_all():
    """Every run scores the same: every comparison is not testable, so no verdict, pair or look can err; the
    mean's interval is the point itself (covers); the difference's is not printed (not counted)."""
    figures = by_key(null_figures(pool_of([0.9] * 24), resamples=5, seed=0, sizes=(3, 6)))
    for (figure, rule, n), rate in figures.items():
        if figure == "coverage":
            assert (rate.trials, rate.value) == ((5, 1.0) if rule == "mean's 95 % CI" else (0, rate.value)), rule
        else:
            assert (rate.hits, rate.trials) == (0, 5), (figure, rule, n)


def test_pure_noise_errs_near_alpha_and_its_intervals_cover():
    values = np.random.default_rng(3).normal(0.9, 0.01, 60)
    figures = by_key(null_figures(pool_of(values), resamples=16, seed=1, sizes=(3, 6)))
    for n in (3, 6):  # 16 resamples: a sanity bound (the exact cases above carry the weight)
        assert figures[("false supported", "verdict, 1 comparison", n)].hits <= 3
        assert figures[("any pair significant", "pairwise tests, 4 arms, Holm", n)].hits <= 3
        assert figures[("coverage", "paired difference's 95 % CI", n)].hits >= 13
    assert figures[("crossed by this look", "sequential, as shipped", 6)].hits <= 3


def test_too_small_a_pool_gives_no_figures():
    assert null_figures(pool_of(np.arange(39.0)), resamples=5, seed=0) == []  # 4 arms x 10 seeds need 40


# ---- the known effect --------------------------------------------------------------------------------


def test_a_planted_effect_is_found_and_the_truth_is_stated_in_its_direction():
    rng = np.random.default_rng(4)
    base = rng.normal(0.9, 0.01, 30)
    low, high = pool_of(base), pool_of(base + 0.02 + rng.normal(0, 0.002, 30))
    pairs = Pairs(low, high, ("lr 0.005", "lr 0.01"))  # given in the wrong order: the claim follows the truth
    assert pairs.names == ("lr 0.01", "lr 0.005") and pairs.truth > 0.015
    figures = {(figure.figure, figure.rule, figure.n): figure for figure in effect_figures(pairs, 8, 0)}
    assert figures[("power (supported)", "verdict, 1 comparison", 10)].rate.value == 1.0
    planner = [figure for figure in figures.values() if figure.rule == "planner, all pairs as its pilot"][0]
    assert planner.n == 3 and planner.rate.value == 1.0  # d_z of about 10: the pilot's own 3 seeds suffice


# ---- the command -----------------------------------------------------------------------------------------


def load_script():
    spec = importlib.util.spec_from_file_location("validation_study", REPO / "scripts" / "validation_study.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_run(root, seed: int, lr: float, test_acc: float, status: str = "completed"):
    record = {
        "epoch": 1,
        "lr": lr,
        "train/loss": 0.3,
        "train/acc": 0.9,
        "train/images": 4000,
        "train/time_s": 1.0,
        "val/loss": 0.3,
        "val/acc": 0.9,
        "test/loss": 0.3,
        "test/acc": test_acc,
        "time_s": 1.0,
    }
    overrides = {"optimizer.lr": lr, "optimizer.weight_decay": 0.1}
    write_run(
        root,
        [record],
        optimizer="adamw",
        seed=seed,
        dataset="mnist1d",
        status=status,
        epochs_planned=60,
        overrides=overrides,
        variant=f"lr={lr}",
    )


def test_the_command_writes_the_table_and_the_readme_block(tmp_path, capsys):
    rng = np.random.default_rng(5)
    results, out = tmp_path / "results", tmp_path / "out"
    for seed in range(41):
        fake_run(results, seed, 0.01, float(rng.normal(0.9, 0.01)), status="running" if seed == 40 else "completed")
    for seed in range(10):  # half the learning rate: 3 points worse on every seed
        fake_run(results, seed, 0.005, float(rng.normal(0.87, 0.001)))
    out.mkdir()
    script = load_script()
    (out / "README.md").write_text(f"# Study\n\n{script.BEGIN}\nold\n{script.END}\n\nafter\n")
    assert script.main([str(results), "--out", str(out), "--resamples", "3"]) == 0
    table = aggregate_tables.read_file(out / aggregate_tables.VALIDATION, aggregate_tables.VALIDATION)
    assert set(table["study"]) == {"A/A", "known effect"} and (table["trials"] <= 3).all()
    readme = (out / "README.md").read_text()
    assert "old" not in readme and readme.endswith(f"{script.END}\n\nafter\n")
    assert "A/A pool (AdamW lr 0.01, weight decay 0.1, 60 epochs): 40 seeds" in readme  # the running one left out
    assert "Known effect: 10 seeds finished in both arms" in readme and "lr 0.01 ahead of lr 0.005" in readme


def test_the_quoted_sequential_figures_are_the_ones_the_docs_print():
    from optbench.analysis.judging.validation_null import QUOTED_CROSSING

    text = " ".join((REPO / "experiments" / "README.md").read_text().split())
    shipped, plain = (f"{100 * QUOTED_CROSSING[key]:.1f} %" for key in ("as shipped", "without the futility stop"))
    assert f"({plain} with at most 10 seeds)" in text and f"as shipped ({shipped})" in text
