"""The validation study's resampling (scripts/validation_study.py and the modules under it), on synthetic runs with
known properties: draws are without replacement and disjoint; a pool with no spread gives exactly no false positive;
pure noise stays near alpha; a planted effect is found; the command writes the table its schema promises and the
README block between its markers. Bounded to a few seconds (few resamples, nested looks 3 and 6 where it can)."""

import importlib.util
import math

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO
from fixtures.aggregate.fake_runs import ramp_records, write_run
from scipy import stats

from optbench.analysis.judging.hypothesis_rule import Check, comparison_z
from optbench.analysis.judging.validation_effect import Pairs, effect_figures
from optbench.analysis.judging.validation_fidelity import (
    LadderPool,
    fidelity_figures,
    judge,
    pair_bounds,
    real_pools,
    resampled,
)
from optbench.analysis.judging.validation_figures import AT_LEAST, AT_MOST, EQUAL, WITHIN, Figure
from optbench.analysis.judging.validation_null import null_figures
from optbench.analysis.judging.validation_runs import METRIC, finished_pool, paired_pools, resample_table
from optbench.analysis.statistics import fidelity_stats
from optbench.analysis.statistics.resampling import Rate, disjoint_draw, extended_draw, monte_carlo_rate
from optbench.formats import aggregate_tables


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
        (Rate(90, 100, 0.82, 0.95), 0.9, WITHIN, False),  # 0.90 within the simulated pools' [0.85, 0.97]
        (Rate(80, 100, 0.71, 0.87), 0.9, WITHIN, True),  # 0.80 below it
    ],
)
def test_a_figure_disagrees_only_beyond_monte_carlo_error(rate, claimed, relation, disagrees):
    figure = Figure("A/A", "f", "r", 3, rate, claimed, relation, "s", "", 0.85, 0.97)
    assert figure.disagrees is disagrees


def test_the_sequential_z_is_the_check_s_two_sided_p_as_a_z_signed_by_the_stated_direction():
    """One comparison_z (analysis/judging/hypothesis_rule.py) for the sequential study and its validation."""
    checks = [
        Check("s", "a vs b", "a higher", "as stated, significant", {"p": 0.01, "difference": 0.02}),
        Check("s", "a vs b", "a higher", "opposite, not significant", {"p": 0.4, "difference": -0.01}),
        Check("s", "a vs b", "a lower", "as stated, significant", {"p": 0.05, "difference": -0.03}, better="lower"),
        Check("s", "a vs b", "a higher", "not testable", {"p": 0.01, "difference": 0.02}),
    ]
    z = [comparison_z(check) for check in checks]
    assert z[:3] == pytest.approx([2.5758293035489, -0.8416212335729, 1.9599639845401])
    assert math.isnan(z[3])


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


# ---- the fidelity ladder -----------------------------------------------------------------------------


def normal_pool(seeds: int = 30, seed: int = 0, moved: bool = True) -> LadderPool:
    """Five optimizers at a rung 5 points below the top, two of them moved by 1 point (`moved`): seed noise
    normal, a seed effect every optimizer of the seed shares."""
    rng = np.random.default_rng(seed)
    top_means = np.array([0.90, 0.89, 0.885, 0.87, 0.92])
    rung_means = top_means - 0.05 + (np.array([0.0, 0.01, -0.01, 0.0, 0.005]) if moved else 0.0)
    shared = rng.normal(0, 0.007, seeds)
    top = top_means[:, None] + shared + rng.normal(0, 0.008, (5, seeds))
    rung = rung_means[:, None] + shared + rng.normal(0, 0.012, (5, seeds))
    return LadderPool("epochs=6", "epochs=60", ("sgd", "adam", "adamw", "lion", "muon"), tuple(range(seeds)), rung, top)


def test_a_pair_bound_is_the_one_sided_t_bound_by_hand():
    """Two optimizers, three seeds: the pair's per-seed changes are 1, 2, 6 points; the bound of |change| is the
    mean 3 plus t(0.95, 2) times sd / sqrt(3)."""
    rung = np.array([[0.51, 0.52, 0.56], [0.50, 0.50, 0.50]])
    top = np.full((2, 3), 0.5)
    changes = np.array([1.0, 2.0, 6.0]) / 100
    by_hand = changes.mean() + stats.t.ppf(0.95, 2) * changes.std(ddof=1) / math.sqrt(3)
    assert pair_bounds(rung, top)[0] == pytest.approx(by_hand)
    assert fidelity_stats.change_intervals(rung, top)[0].bound == pytest.approx(by_hand)


def test_the_vectorised_rule_is_the_reports_rule_ladder_by_ladder():
    """judge's answers and bounds on a stack equal fidelity_stats' scalar functions (the report's) on each ladder."""
    rng = np.random.default_rng(7)
    top = np.array([0.9, 0.88, 0.86, 0.84])[:, None] + rng.normal(0, 0.01, (40, 4, 6))
    rung = top - 0.05 + rng.normal(0, 0.01, (40, 4, 6))
    truth = np.full(6, 0.01)
    outcomes = judge(rung, top, rung - top, truth, 0.02)
    for index in range(40):
        signs = fidelity_stats.established_orders(top[index], 0.05)[0]
        assert outcomes.order_yes[index] == (fidelity_stats.order_fates(rung[index], signs).answer == "yes")
        changes = fidelity_stats.change_intervals(rung[index], top[index])
        assert outcomes.certified[index] == (fidelity_stats.resolution(changes) <= 0.02)
        assert list(outcomes.pair_covers[index]) == [change.bound >= 0.01 for change in changes]
    assert outcomes.order_yes.any() and not outcomes.order_yes.all()  # the case is not trivial either way


def test_a_resample_of_the_whole_pool_is_the_pool_every_time():
    """n = N: drawn without replacement, every resample holds every seed once, so every outcome is the same; the
    rung and the top are drawn on the same seeds, so a change that is the same on every seed is exactly it."""
    pool = normal_pool(seeds=6)
    same_change = LadderPool("r", "t", pool.arms, pool.seeds, pool.top_values - 0.03, pool.top_values)
    outcomes = resampled(real_pools(same_change), 6, 50, 0.02, np.random.default_rng(0))
    assert outcomes.certified.all() and outcomes.covers_largest.all()  # every change 0, with no spread: bound 0
    varied = resampled(real_pools(pool), 6, 50, 0.02, np.random.default_rng(0))
    for name in ("order_yes", "certified", "covers_largest"):
        assert len(set(getattr(varied, name)[0])) == 1
    assert (varied.pair_covers[0] == varied.pair_covers[0, 0]).all()


def fidelity_by_key(figures: list[Figure]) -> dict:
    return {(figure.figure, figure.rule.split(" (")[0], figure.n): figure for figure in figures}


def test_a_normal_pool_agrees_with_the_harness_model():
    figures = fidelity_figures([normal_pool()], resamples=200, seed=0, sizes=(3, 10), simulated_pools=60)
    assert len(figures) == 8 and {figure.relation for figure in figures} == {WITHIN}
    assert sum(figure.disagrees for figure in figures) <= 1  # 8 figures at 99 %: a second is a bug, not chance
    covers = fidelity_by_key(figures)[("coverage", "fidelity resolution covers the largest change", 10)]
    assert covers.rate.value >= 0.95 and "normal at the pool's covariance" in covers.note


def test_a_diverged_run_makes_the_bound_too_narrow_and_is_seen_under_covering():
    """One optimizer diverged at the rung on one seed of 30 (chance, 10 %): the change all seeds show moves its
    pairs by about 2.2-2.7 points, but 4 resamples of 5 of 6 seeds miss that seed and bound its pairs' changes
    within about 1.7 points: their bounds are too narrow there. The normal models, fed the pool's huge spread for
    that optimizer, cover almost always; the real figure is seen far below their range, the pool-covariance
    model's too (the shape of the noise: one outlying run)."""
    pool = normal_pool(moved=False)
    rung = pool.rung_values.copy()
    rung[4, 7] = 0.1  # muon diverged on seed 7
    broken = LadderPool(pool.rung, pool.top, pool.arms, pool.seeds, rung, pool.top_values)
    figures = fidelity_by_key(fidelity_figures([broken], resamples=300, seed=0, sizes=(6, 10), simulated_pools=40))
    pair = figures[("coverage", "fidelity pair bound, least-covered pair", 6)]
    assert pair.rate.high < 0.6 and pair.claimed > 0.85 and pair.disagrees and "muon" in pair.note.split(",")[0]
    low_end = float(pair.note.split("99 % of pools ")[1].split("-")[0])
    assert pair.rate.high * 100 < low_end  # outside the pool-covariance model's range too
    healthy = fidelity_by_key(fidelity_figures([pool], resamples=300, seed=0, sizes=(6, 10), simulated_pools=40))
    assert not healthy[("coverage", "fidelity pair bound, least-covered pair", 6)].disagrees  # the same, undiverged


def test_a_pool_too_small_to_resample_gives_no_figures():
    assert fidelity_figures([normal_pool(seeds=10)], resamples=5, seed=0, simulated_pools=2) == []


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


def write_fake_ladder(results, study_path) -> None:
    """Three optimizers x 12 seeds at 2 and 4 epochs, and the ladder study that planned them."""
    rng = np.random.default_rng(6)
    for epochs, level in ((2, 0.6), (4, 0.8)):
        for index, optimizer in enumerate(("sgd", "adam", "lion")):
            for seed in range(12):
                write_run(
                    results,
                    ramp_records(float(level + 0.02 * index + rng.normal(0, 0.01)), epochs=epochs),
                    optimizer=optimizer,
                    seed=seed,
                    variant=f"epochs={epochs}",
                    overrides={"epochs": epochs},
                )
    grid = {"optimizer": ["sgd", "adam", "lion"], "seed": list(range(12)), "dataset": ["cifar10"]}
    grid |= {"noise": [{"name": "none"}], "epochs": 4}
    study = {"id": "ladder", "statement": "a test ladder", "grid": grid, "fidelity": {"epochs": [2, 4]}}
    study_path.write_text(yaml.safe_dump(study))


def test_the_command_adds_the_ladders_rows(tmp_path):
    results, out, study = tmp_path / "results", tmp_path / "out", tmp_path / "ladder.yaml"
    for seed in range(4):
        fake_run(results, seed, 0.01, 0.9)
    write_fake_ladder(tmp_path / "ladder", study)
    out.mkdir()
    script = load_script()
    (out / "README.md").write_text(f"{script.BEGIN}\n{script.END}\n")
    argv = [str(results), "--out", str(out), "--resamples", "3", "--pools", "3"]
    assert script.main([*argv, "--ladder", str(tmp_path / "ladder"), "--ladder-study", str(study)]) == 0
    table = aggregate_tables.read_file(out / aggregate_tables.VALIDATION, aggregate_tables.VALIDATION)
    ladder = table[table["study"] == "fidelity ladder"]
    assert len(ladder) == 12 and set(ladder["n"]) == {3, 6, 10} and (ladder["trials"] == 3).all()
    assert ladder["rule"].str.endswith("(epochs=2 vs epochs=4)").all() and (ladder["relation"] == WITHIN).all()
    assert (ladder["claimed_low"] <= ladder["claimed_high"]).all()
    assert "epochs=2 vs epochs=4 on 12 shared seeds" in (out / "README.md").read_text()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--ladder", "LADDER"], "--ladder DIR and --ladder-study STUDY go together"),
        (["--ladder", "nowhere", "--ladder-study", "fidelity_mnist1d"], "--ladder nowhere is not a folder"),
        (["--ladder", "LADDER", "--ladder-study", "validation_aa"], "has no fidelity: rungs"),
        (["--ladder", "LADDER", "--ladder-study", "no_such_study"], "unknown study 'no_such_study'"),
    ],
)
def test_a_ladder_asked_for_wrongly_is_one_error_and_nothing_written(tmp_path, capsys, extra, message):
    results, out = tmp_path / "results", tmp_path / "out"
    fake_run(results, 0, 0.01, 0.9)
    (tmp_path / "ladder").mkdir()
    extra = [str(tmp_path / "ladder") if word == "LADDER" else word for word in extra]
    assert load_script().main([str(results), "--out", str(out), *extra]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and message in error and error.count("\n") == 1
    assert not out.exists()


# ---- README's block ------------------------------------------------------------------------------------


def load_readme_script():
    spec = importlib.util.spec_from_file_location("readme_validation", REPO / "scripts" / "readme_validation.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readmes_validation_block_is_the_generated_one():
    script = load_readme_script()
    current = script.README.read_text()
    assert current == script.with_block(current, script.validation_block()), (
        "README's validation block is stale: run python scripts/readme_validation.py"
    )


def test_the_block_shows_a_disagreeing_figure_and_counts_the_rules_rows(tmp_path):
    figures = [
        Figure("A/A", "coverage", "mean's 95 % CI", 3, Rate(95, 100, 0.89, 0.98), 0.95, EQUAL, "nominal"),
        Figure("A/A", "coverage", "mean's 95 % CI", 10, Rate(99, 100, 0.96, 1.0), 0.95, EQUAL, "nominal"),
        Figure("A/A", "coverage", "mean's 95 % CI", 6, Rate(94, 100, 0.87, 0.98), 0.95, EQUAL, "nominal"),
        Figure("A/A", "false supported", "verdict, 1 comparison", 3, Rate(2, 100, 0.0, 0.07), 0.05, AT_MOST, "s"),
        Figure("A/A", "false supported", "verdict, 1 comparison", 10, Rate(3, 100, 0.0, 0.08), 0.05, AT_MOST, "s"),
        Figure(
            "fidelity ladder",
            "order kept: yes",
            "fidelity order answer (epochs=6 vs epochs=60)",
            10,
            Rate(40, 100, 0.3, 0.5),
            0.45,
            WITHIN,
            "model",
            "",
            0.2,
            0.7,
        ),
    ]
    from optbench.analysis.writing.validation_tables import figure_table

    (tmp_path / "tables").mkdir()
    table = figure_table(figures)
    (tmp_path / aggregate_tables.VALIDATION).write_text(aggregate_tables.csv_text(aggregate_tables.VALIDATION, table))
    block = load_readme_script().validation_block(tmp_path)
    lines = block.strip().splitlines()
    assert len(lines) <= 14
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines if line.startswith("| ") and "---" not in line}
    coverage = rows["Mean's 95 % interval: coverage"]
    assert "n = 10" in coverage and "99.0 % [96.0 %, 100.0 %]" in coverage and "**no**: 1 of 3 disagree" in coverage
    verdict = rows["Verdict, no effect: false supported / rejected"]
    assert "n = 10" in verdict and "yes, all 2" in verdict and "<= 5.00 %" in verdict
    order = rows["Fidelity order kept: yes"]
    assert "epochs=6 vs epochs=60" in order and "in [20.0 %, 70.0 %] (mean 45.0 %)" in order and "yes, all 1" in order


def test_a_mean_interval_resampled_from_a_finite_pool_covers_what_finite_pool_coverage_says():
    """n runs drawn without replacement from a pool of N vary less than n fresh seeds, so the mean's 95 % interval
    covers the pool's mean more often than 95 %: the provisional table's 97.0 % [95.1, 98.3] at n = 10 of 61 A/A
    runs "disagreed" with 95 % while agreeing with this claim (96.5 %). Simulated on a normal pool of 61."""
    from optbench.analysis.statistics.resampling import finite_pool_coverage

    rng = np.random.default_rng(0)
    pool, n, trials = rng.normal(90.0, 1.0, 61), 10, 20000
    truth, critical = pool.mean(), stats.t.ppf(0.975, n - 1)
    hits = 0
    for _ in range(trials):
        drawn = rng.choice(pool, n, replace=False)
        hits += abs(drawn.mean() - truth) <= critical * drawn.std(ddof=1) / np.sqrt(n)
    measured = monte_carlo_rate(hits, trials)
    assert measured.low <= finite_pool_coverage(n, 61) <= measured.high  # 96.5 %
    assert measured.low > 0.95  # the nominal claim it replaces is seen failing
    assert finite_pool_coverage(10, 400) == pytest.approx(0.9523, abs=1e-4)


def test_the_pages_counts_are_the_published_tables():
    """The page's prose counts (figures, disagreements, the ladder's figures) are those of tables/validation.csv,
    and every figure of the ladder agrees, as the page says."""
    page = " ".join((REPO / "docs" / "validation-study" / "README.md").read_text().split())
    table = pd.read_csv(REPO / "docs" / "validation-study" / "tables" / "validation.csv")
    ladder = table[table["study"] == "fidelity ladder"]
    disagreeing = int(table["disagrees"].sum())
    words = {1: "One", 2: "Two", 3: "Three"}
    assert f"**{words[disagreeing]} of the {len(table)} figures disagree" in page
    assert f"agrees with its simulation in all {len(ladder)} of its figures" in page and not ladder["disagrees"].any()
