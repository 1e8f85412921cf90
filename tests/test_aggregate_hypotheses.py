"""Hypothesis files and verdicts: the repository's H1-H3 evaluated on hand-made runs with known numbers.

Supported needs every required comparison significant in the stated direction, each at alpha (paired t on
per-seed differences); one comparison significant the other way after Holm rejects; anything else (not
significant, missing runs, no spread, one seed) is inconclusive and says why.
"""

import dataclasses
import itertools
import json
import math

import pytest
from conftest import REPO
from fixtures.aggregate.fake_runs import ramp_records, record, write_run
from scipy import stats
from scipy.special import betainc

from optbench.analysis.judging.hypotheses import Context, hypothesis_verdict, load_hypotheses, parse_hypothesis
from optbench.analysis.pipeline import analyse
from optbench.errors import ConfigError

HYPOTHESES = REPO / "experiments" / "hypotheses"


def two_sided_p(t: float, df: float) -> float:
    return float(betainc(df / 2, 0.5, df / (df + t * t)))


def mean(values):
    return sum(values) / len(values)


def sample_sd(values) -> float:
    centre = mean(values)
    return math.sqrt(sum((value - centre) ** 2 for value in values) / (len(values) - 1))


def paired_t_p(a, b) -> float:
    """The paired t-test's two-sided p by hand: t = mean(d) / (sd(d) / sqrt(n)), n - 1 degrees of freedom."""
    differences = [x - y for x, y in zip(a, b)]
    t = mean(differences) / (sample_sd(differences) / math.sqrt(len(differences)))
    return two_sided_p(t, len(differences) - 1)


def sign_flip_p(a, b) -> float:
    """The exact paired sign-flip p by hand: every one of the 2^n sign patterns of the differences a - b."""
    differences = [x - y for x, y in zip(a, b)]
    observed = mean(differences)
    null = [
        mean([sign * d for sign, d in zip(signs, differences)])
        for signs in itertools.product((1, -1), repeat=len(differences))
    ]
    greater = sum(value >= observed - 1e-12 for value in null) / len(null)
    less = sum(value <= observed + 1e-12 for value in null) / len(null)
    return min(1.0, 2 * min(greater, less))


def verdict(root, name: str):
    analysis = analyse(root)
    hypothesis = parse_hypothesis(HYPOTHESES / name)
    return hypothesis_verdict(hypothesis, Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys))


def write_study(root, accuracies: dict, noise="none", rate=0.0, seeds=None):
    for optimizer, values in accuracies.items():
        for seed, accuracy in zip(seeds or range(len(values)), values):
            write_run(root, ramp_records(accuracy), optimizer=optimizer, seed=seed, noise=noise, rate=rate)


# Eight seeds: SGD ahead of each other optimizer on every seed (exact sign-flip p = 2/256 per comparison).
SGD = [0.950, 0.955, 0.960, 0.951, 0.957, 0.953, 0.958, 0.952]
OTHERS_WORSE = {
    "adam": [0.920, 0.921, 0.933, 0.925, 0.929, 0.922, 0.931, 0.927],
    "adamw": [0.930, 0.938, 0.940, 0.935, 0.933, 0.939, 0.936, 0.931],
    "lion": [0.925, 0.935, 0.930, 0.928, 0.933, 0.926, 0.934, 0.929],
    "muon": [0.940, 0.941, 0.952, 0.944, 0.946, 0.943, 0.949, 0.942],
}


def test_repository_hypotheses_load_and_unknown_top_level_keys_are_ignored(tmp_path):
    assert [hypothesis.id for hypothesis in load_hypotheses(REPO / "experiments")] == ["H1", "H2", "H3", "H3-human"]
    folder = tmp_path / "experiments" / "hypotheses"
    folder.mkdir(parents=True)
    text = (HYPOTHESES / "h2_generalisation.yaml").read_text()
    (folder / "h2.yaml").write_text(text + "study:\n  grid: {optimizer: [sgd, adam], seed: [0, 1, 2]}\nnotes: later\n")
    assert load_hypotheses(tmp_path / "experiments")[0].test.subject == "sgd"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id: H9\nstatement: x\n", "missing 'test'"),
        ("id: H9\nstatement: x\ntest: {kind: vibes}\n", "test.kind must be one of"),
        ("id: H9\nstatement: x\ntest: {kind: metric_comparison, subject: sgd, versus: adam, better: up}\n", "better"),
        ("id: H9\nstatement: x\ntest: {kind: noise_drop, subject: lion, versus: adamw, noise: symmetric}\n", "rates"),
        ("id: [unclosed\n", "not valid YAML"),
    ],
)
def test_malformed_hypothesis_files_name_the_file_and_the_fix(tmp_path, text, message):
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message) as error:
        load_hypotheses(tmp_path)
    assert "bad.yaml" in str(error.value) and "\n" not in str(error.value)


def test_h2_supported_when_sgd_beats_every_optimizer_significantly(tmp_path):
    write_study(tmp_path, {"sgd": SGD, **OTHERS_WORSE})
    result = verdict(tmp_path, "h2_generalisation.yaml")
    assert result.verdict == "supported"
    assert [check.comparison for check in result.checks] == [
        "sgd vs adam",
        "sgd vs adamw",
        "sgd vs lion",
        "sgd vs muon",
    ]
    first = result.checks[0].numbers
    assert first["test"] == "paired t" and (first["n_subject"], first["n_other"], first["n_pairs"]) == (8, 8, 8)
    assert first["mean_subject"] == pytest.approx(mean(SGD)) and first["mean_other"] == pytest.approx(
        mean(OTHERS_WORSE["adam"])
    )
    assert first["p"] == pytest.approx(paired_t_p(SGD, OTHERS_WORSE["adam"]), rel=1e-9)
    assert first["exact_p"] == pytest.approx(sign_flip_p(SGD, OTHERS_WORSE["adam"]), rel=1e-12) == 2 / 256
    assert first["exact_min_p"] == pytest.approx(2 / 256)
    assert result.exact_verdict == "supported"


def test_h2_rejected_when_an_optimizer_beats_sgd_significantly(tmp_path):
    better_muon = [value + 0.02 + 0.001 * (seed % 3) for seed, value in enumerate(SGD)]
    write_study(tmp_path, {"sgd": SGD, **OTHERS_WORSE, "muon": better_muon})
    result = verdict(tmp_path, "h2_generalisation.yaml")
    assert result.verdict == "rejected"
    muon = result.checks[-1]
    assert muon.outcome == "opposite, significant"
    assert muon.numbers["p"] == pytest.approx(paired_t_p(SGD, better_muon), rel=1e-9)
    assert "Holm-adjusted" in result.reason


def test_h2_three_seeds_clearly_ahead_is_supported_by_the_t_test_and_the_exact_test_says_it_cannot_tell(tmp_path):
    """The user's design: three seeds. The exact test cannot go below 0.25 whatever the data; the paired t can,
    and the report keeps the exact test's verdict beside it."""
    write_study(tmp_path, {"sgd": SGD[:3], **{name: values[:3] for name, values in OTHERS_WORSE.items()}})
    result = verdict(tmp_path, "h2_generalisation.yaml")
    assert result.verdict == "supported" and result.exact_verdict == "inconclusive"
    assert {check.numbers["exact_min_p"] for check in result.checks} == {0.25}
    assert all(check.numbers["p"] < 0.05 for check in result.checks)


def test_h2_inconclusive_names_the_missing_runs(tmp_path):
    write_study(tmp_path, {"sgd": SGD, "adam": OTHERS_WORSE["adam"], "adamw": OTHERS_WORSE["adamw"]})
    write_run(tmp_path, ramp_records(0.9)[:1], optimizer="muon", status="diverged", epochs_planned=3)
    result = verdict(tmp_path, "h2_generalisation.yaml")
    assert result.verdict == "inconclusive"
    assert "lion: no runs" in result.reason and "muon: no completed run (1 diverged)" in result.reason


def test_h2_inconclusive_when_not_significant_or_one_seed(tmp_path):
    write_study(tmp_path, {"sgd": SGD, **OTHERS_WORSE, "adam": [0.949, 0.958, 0.951]})  # sgd barely ahead
    assert verdict(tmp_path, "h2_generalisation.yaml").verdict == "inconclusive"
    one_seed = tmp_path / "one"
    write_study(one_seed, {"sgd": [0.95], **{name: values[:1] for name, values in OTHERS_WORSE.items()}})
    result = verdict(one_seed, "h2_generalisation.yaml")
    assert result.verdict == "inconclusive" and "has 1 seed(s) in the test (need 3)" in result.reason


def test_h2_ignores_noisy_runs_and_is_inconclusive_without_clean_ones(tmp_path):
    write_study(tmp_path, {"sgd": SGD, **OTHERS_WORSE}, noise="symmetric", rate=0.2)
    result = verdict(tmp_path, "h2_generalisation.yaml")
    assert result.verdict == "inconclusive" and "no setting has runs" in result.reason


LION_CLEAN, LION_20, LION_40 = [0.93, 0.94, 0.935], [0.90, 0.915, 0.905], [0.86, 0.875, 0.865]
ADAMW_CLEAN, ADAMW_20, ADAMW_40 = [0.94, 0.945, 0.94], [0.88, 0.89, 0.875], [0.80, 0.815, 0.79]


def noise_study(root, noisy_seeds=(0, 1, 2), rates=(0.2, 0.4)):
    write_study(root, {"lion": LION_CLEAN, "adamw": ADAMW_CLEAN})
    values = {0.2: (LION_20, ADAMW_20), 0.4: (LION_40, ADAMW_40)}
    for rate in rates:
        write_study(root, {"lion": values[rate][0], "adamw": values[rate][1]}, "symmetric", rate, noisy_seeds)


def test_h3_with_paired_seeds_compares_per_seed_drops_with_the_paired_t_test(tmp_path):
    noise_study(tmp_path)
    result = verdict(tmp_path, "h3_noise_robustness.yaml")
    at_20 = result.checks[0].numbers
    lion_drops = [c - n for c, n in zip(LION_CLEAN, LION_20)]
    adamw_drops = [c - n for c, n in zip(ADAMW_CLEAN, ADAMW_20)]
    assert at_20["test"] == "paired t on per-seed drops"
    assert at_20["drop_subject"] == pytest.approx(mean(lion_drops)) and at_20["drop_other"] == pytest.approx(
        mean(adamw_drops)
    )
    assert at_20["p"] == pytest.approx(paired_t_p(lion_drops, adamw_drops), rel=1e-9)
    assert at_20["exact_p"] == pytest.approx(sign_flip_p(lion_drops, adamw_drops), rel=1e-12) == 0.25


def test_h3_means_beside_the_test_are_taken_on_the_seeds_it_tested(tmp_path):
    """Clean seeds with no noisy run (a study continued on clean data only) enter no per-seed drop, so they
    must not move the clean means, drops and n shown beside the test either."""
    noise_study(tmp_path, rates=(0.2,))
    write_study(tmp_path, {"lion": [0.50, 0.52], "adamw": [0.99, 0.98]}, seeds=(3, 4))  # clean only
    at_20 = verdict(tmp_path, "h3_noise_robustness.yaml").checks[0].numbers
    lion_drops = [c - n for c, n in zip(LION_CLEAN, LION_20)]
    adamw_drops = [c - n for c, n in zip(ADAMW_CLEAN, ADAMW_20)]
    assert (at_20["n_subject_clean"], at_20["n_other_clean"], at_20["n_subject_noisy"]) == (3, 3, 3)
    assert at_20["mean_subject_clean"] == pytest.approx(mean(LION_CLEAN))
    assert at_20["drop_subject"] == pytest.approx(mean(lion_drops)) and at_20["drop_other"] == pytest.approx(
        mean(adamw_drops)
    )
    assert at_20["difference"] == pytest.approx(mean(lion_drops) - mean(adamw_drops))


def test_h3_supported_with_seven_seeds_smaller_drops_on_every_one(tmp_path):
    """Two required comparisons, each significant in the stated direction (intersection-union); the exact
    sign-flip tests agree (2/128 = 0.016 each)."""
    seeds = range(7)
    lion_clean, adamw_clean = [0.93 + 0.001 * i for i in seeds], [0.94 + 0.001 * i for i in seeds]
    write_study(tmp_path, {"lion": lion_clean, "adamw": adamw_clean})
    for rate, lion_drop, adamw_drop in ((0.2, 0.03, 0.06), (0.4, 0.07, 0.14)):
        write_study(
            tmp_path,
            {
                "lion": [v - lion_drop - 0.002 * (i % 2) for i, v in enumerate(lion_clean)],
                "adamw": [v - adamw_drop for v in adamw_clean],
            },
            "symmetric",
            rate,
        )
    result = verdict(tmp_path, "h3_noise_robustness.yaml")
    assert result.verdict == "supported" and result.exact_verdict == "supported"
    assert all(check.numbers["p"] < 0.05 for check in result.checks)
    assert [check.numbers["exact_p"] for check in result.checks] == pytest.approx([2 / 128] * 2)


def test_h3_without_paired_seeds_uses_the_welch_satterthwaite_contrast(tmp_path):
    noise_study(tmp_path, noisy_seeds=(3, 4, 5))
    check = verdict(tmp_path, "h3_noise_robustness.yaml").checks[1]  # clean -> 40 %
    cells = [LION_CLEAN, LION_40, ADAMW_CLEAN, ADAMW_40]
    parts = [sample_sd(cell) ** 2 / 3 for cell in cells]
    estimate = (mean(LION_CLEAN) - mean(LION_40)) - (mean(ADAMW_CLEAN) - mean(ADAMW_40))
    df = sum(parts) ** 2 / sum(part**2 / 2 for part in parts)
    t = estimate / math.sqrt(sum(parts))
    assert check.numbers["test"] == "Welch-Satterthwaite contrast"
    assert (check.numbers["difference"], check.numbers["p"]) == pytest.approx((estimate, two_sided_p(t, df)), rel=1e-9)


def test_h3_inconclusive_when_a_noise_rate_is_missing(tmp_path):
    noise_study(tmp_path, rates=(0.2,))
    result = verdict(tmp_path, "h3_noise_robustness.yaml")
    assert result.verdict == "inconclusive"
    assert "lion: no runs at symmetric 40%" in result.reason


def reaching(epoch_reached: int, epochs: int = 6, final_val: float = 0.9) -> list[dict]:
    """Validation accuracy climbs to `final_val` at `epoch_reached` and stays there (0 = never reaches 90 % of it)."""
    if not epoch_reached:
        return [record(epoch, 0.8 * epoch / epochs, 0.8, 0.5) for epoch in range(1, epochs + 1)]
    return [record(epoch, final_val * min(1.0, epoch / epoch_reached), 0.85, 0.5) for epoch in range(1, epochs + 1)]


def h1_verdict(folder, epochs_by_seed: list[tuple[int, int]]):
    """H1's verdict on runs whose Lion and AdamW reach the target at the given epochs, seed by seed."""
    for seed, (lion, adamw) in enumerate(epochs_by_seed):
        write_run(folder, reaching(lion), optimizer="lion", seed=seed)
        write_run(folder, reaching(adamw), optimizer="adamw", seed=seed)
    return verdict(folder, "h1_convergence.yaml")


def test_h1_lion_at_epoch_3_and_adamw_at_epoch_5_on_three_seeds_is_not_testable(tmp_path):
    """Equal per-seed differences (constant epochs) have no spread, where a paired t-test would say t = inf,
    p = 0: the comparison is not testable and says so, never supported; the exact test beside it gives 0.25.
    Target 0.81: Lion's 0.3 per epoch crosses it 0.7 of the way through epoch 3 (0.6 -> 0.9), AdamW's 0.18 per
    epoch half-way through epoch 5 (0.72 -> 0.9)."""
    result = h1_verdict(tmp_path, [(3, 5)] * 3)
    assert result.verdict == "inconclusive"
    check = result.checks[0]
    assert check.numbers["target"] == pytest.approx(0.81)
    assert (check.numbers["mean_subject"], check.numbers["mean_other"]) == pytest.approx((2.7, 4.5))
    assert check.outcome == "not testable" and math.isnan(check.numbers["p"])
    assert "all equal" in check.detail and "not testable" in result.reason
    assert check.numbers["exact_p"] == pytest.approx(0.25)


def test_h1_supported_with_six_seeds_each_faster(tmp_path):
    pairs = [(2, 4), (2, 5), (3, 5), (3, 4), (2, 6), (3, 6)]
    result = h1_verdict(tmp_path, pairs)
    assert result.verdict == "supported"
    assert result.checks[0].numbers["p"] == pytest.approx(paired_t_p(*zip(*pairs)), rel=1e-9)
    assert result.checks[0].numbers["exact_p"] == pytest.approx(sign_flip_p(*zip(*pairs)), rel=1e-12) == 2 / 64


def test_h1_when_no_lion_run_ever_reaches_the_target_it_is_not_rejected(tmp_path):
    """Runs that never reach the target get no made-up epoch (epochs_planned + 1 would give a spurious p = 0):
    three of Lion's never reaching it leave H1 inconclusive at p = 0.25, and so do all runs never reaching it."""
    result = h1_verdict(tmp_path, [(0, 5)] * 3)
    assert result.verdict == "inconclusive"
    assert result.checks[0].numbers["p"] == pytest.approx(0.25)
    everyone_never = tmp_path / "never"
    for seed in range(3):
        write_run(everyone_never, reaching(0), optimizer="lion", seed=seed)
        write_run(everyone_never, reaching(0, final_val=0.5), optimizer="adamw", seed=seed)
    assert verdict(everyone_never, "h1_convergence.yaml").verdict == "inconclusive"


def test_h1_counts_a_run_that_never_reaches_the_target_as_censored(tmp_path):
    check = h1_verdict(tmp_path, [(2, 4), (2, 5), (0, 5)]).checks[0]
    assert check.numbers["censored_subject"] == 1
    assert math.isnan(check.numbers["mean_subject"])  # no made-up epoch for the censored run
    assert check.numbers["test"] == "sign-flip on ranks, exact"
    # pooled mid-ranks of lion (2, 2, never) and adamw (4, 5, 5): lion 1.5, 1.5, 6; adamw 3, 4.5, 4.5
    assert check.numbers["p"] == pytest.approx(sign_flip_p([1.5, 1.5, 6], [3, 4.5, 4.5]), rel=1e-12)
    assert "never reached the target" in check.detail


def test_a_hypothesis_is_parsed_once_with_its_defaults_applied(tmp_path):
    (tmp_path / "h.yaml").write_text(
        "id: H9\nstatement: x\ntest: {kind: metric_comparison, subject: sgd, versus: adam}\n"
    )
    test = parse_hypothesis(tmp_path / "h.yaml").test
    assert (test.versus, test.metric, test.better, test.alpha, test.min_seeds, test.where) == (
        ("adam",),
        "test_acc_at_best_val",
        "higher",
        0.05,
        3,
        {},
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        test.alpha = 0.5


# ---- never over-claim on degenerate or incomplete data --------------------------------------------------


def test_h3_with_constant_cells_on_the_welch_path_is_not_testable_never_p_zero(tmp_path):
    """Four constant cells whose seeds do not pair: H3 is not testable, never SUPPORTED with p < 0.001 and an
    effect size of -4.2e14 (what a t-test makes of zero spread)."""
    write_study(tmp_path, {"lion": [0.70] * 3, "adamw": [0.70] * 3})
    for rate, lion, adamw in ((0.2, 0.65, 0.60), (0.4, 0.60, 0.50)):
        write_study(tmp_path, {"lion": [lion] * 3, "adamw": [adamw] * 3}, "symmetric", rate, seeds=(3, 4, 5))
    result = verdict(tmp_path, "h3_noise_robustness.yaml")
    assert result.verdict == "inconclusive"
    for check in result.checks:
        assert check.outcome == "not testable" and math.isnan(check.numbers["p"])
        assert math.isnan(check.numbers["effect_size"]) and "scored the same" in check.detail


def test_a_setting_missing_a_required_optimizer_is_named_not_dropped(tmp_path):
    """SGD's runs removed from one of two datasets: H2 names the setting that lacks them and is not SUPPORTED
    from the other dataset alone."""
    for dataset in ("cifar10", "cifar100"):
        for optimizer, values in {"sgd": SGD, **OTHERS_WORSE}.items():
            if dataset == "cifar100" and optimizer == "sgd":
                continue
            for seed, accuracy in enumerate(values):
                write_run(tmp_path, ramp_records(accuracy), optimizer=optimizer, seed=seed, dataset=dataset)
    result = verdict(tmp_path, "h2_generalisation.yaml")
    assert result.verdict == "inconclusive"
    assert "sgd: no runs (cifar100, clean)" in result.reason
    assert len(result.checks) == 8


def test_a_required_arm_with_failed_runs_below_min_seeds_makes_the_verdict_inconclusive(tmp_path):
    write_study(tmp_path, {"sgd": SGD, **OTHERS_WORSE, "lion": OTHERS_WORSE["lion"][:2]})
    write_run(tmp_path, ramp_records(0.1)[:1], optimizer="lion", seed=2, status="diverged", epochs_planned=3)
    result = verdict(tmp_path, "h2_generalisation.yaml")
    assert result.verdict == "inconclusive"
    assert "lion has 2 seed(s) in the test (need 3)" in result.reason


def test_a_configuration_chosen_among_several_on_the_same_seeds_is_marked_post_selection(tmp_path):
    write_study(tmp_path, {"sgd": SGD, **OTHERS_WORSE})
    for seed, accuracy in enumerate(SGD):  # a second SGD arm, worse on validation
        write_run(
            tmp_path,
            ramp_records(accuracy - 0.01, val_acc=0.5),
            optimizer="sgd",
            seed=seed,
            overrides={"optimizer.lr": 0.01},
            variant="optimizer.lr=0.01",
        )
    result = verdict(tmp_path, "h2_generalisation.yaml")
    assert all(check.numbers["post_selection"] for check in result.checks)
    assert "post-selection" in result.checks[0].detail


def test_a_difference_of_exactly_zero_is_tied_not_opposite():
    from optbench.analysis.judging.hypothesis_rule import classify

    assert classify(0.0, 1.0, "higher", 0.05) == "tied"
    assert classify(-0.001, 0.5, "higher", 0.05) == "opposite, not significant"


def test_with_the_study_named_a_planned_dataset_without_runs_is_missing(tmp_path):
    """The family is the plan: H3's study plans CIFAR-10 and CIFAR-100; runs of CIFAR-10 alone are not the
    whole answer, and the verdict names the absent dataset instead of leaving it out."""
    from optbench.specs.study_spec import find_study, planned_settings

    noise_study(tmp_path)
    analysis = analyse(tmp_path)
    hypothesis = parse_hypothesis(HYPOTHESES / "h3_noise_robustness.yaml")
    study = find_study("H3", REPO / "experiments")
    planned = planned_settings(dataclasses.replace(study, grid={**study.grid, "epochs": 3}))  # the runs' budget
    assert {(setting.dataset, setting.rate) for setting in planned} == {
        (dataset, rate) for dataset in ("cifar10", "cifar100") for rate in (0.0, 0.2, 0.4)
    }
    result = hypothesis_verdict(
        hypothesis, Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys, planned=planned)
    )
    missing = [check for check in result.checks if check.outcome == "missing"]
    assert [check.setting for check in missing] == ["cifar100"] and result.verdict == "inconclusive"
    assert "no runs of adamw, lion in this planned setting (cifar100)" in result.reason
    without_plan = hypothesis_verdict(
        hypothesis, Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys)
    )
    assert all(check.setting != "cifar100" for check in without_plan.checks)


def test_with_the_study_named_runs_outside_its_plan_stay_out_of_the_verdict(tmp_path):
    """A clean-only study beside noisy runs in the same folder: H1's family is the study's clean setting."""
    from optbench.specs.study_spec import PlannedSetting

    h1_verdict(tmp_path, [(2, 4), (2, 5), (3, 5)])
    for seed in range(3):
        write_run(tmp_path, reaching(3), optimizer="lion", seed=seed, noise="symmetric", rate=0.4)
        write_run(tmp_path, reaching(4), optimizer="adamw", seed=seed, noise="symmetric", rate=0.4)
    analysis = analyse(tmp_path)
    hypothesis = parse_hypothesis(HYPOTHESES / "h1_convergence.yaml")
    clean = [PlannedSetting("cifar10", "none", 0.0, ("lion", "adamw"))]
    planned = hypothesis_verdict(
        hypothesis, Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys, planned=clean)
    )
    assert [check.setting for check in planned.checks] == ["cifar10, clean"]
    everything = hypothesis_verdict(hypothesis, Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys))
    assert len(everything.checks) == 2


# ---- epochs to target, interpolated; the seeds a test uses are the seeds it counts ------------------------------


def crossing_curve(before: float, after: float, at: int, epochs: int = 6, final_val: float = 0.9) -> list[dict]:
    """Validation accuracy `before` after epoch at - 1 and `after` after epoch `at`, then `final_val` to the end."""
    values = [0.1 * epoch for epoch in range(1, at - 1)] + [before, after]
    values += [final_val] * (epochs - len(values))
    return [record(epoch, value, 0.85, 0.5) for epoch, value in enumerate(values, start=1)]


def test_h1_whole_epochs_one_apart_on_every_seed_is_testable_once_the_crossing_is_interpolated(tmp_path):
    """Lion crosses the target during epoch 3 and AdamW during epoch 4 on every seed: whole epochs gave per-seed
    differences of exactly -1, "not testable: no spread". Interpolated (target 0.81 = 0.9 x AdamW's final 0.9),
    Lion crosses at 2 + (0.81 - 0.70) / (0.85 - 0.70) etc., and the paired t runs on those."""
    lion = [(0.70, 0.85), (0.75, 0.83), (0.60, 0.90)]
    adamw = [(0.78, 0.84), (0.80, 0.82), (0.72, 0.86)]
    for seed, ((lion_before, lion_after), (adamw_before, adamw_after)) in enumerate(zip(lion, adamw)):
        write_run(tmp_path, crossing_curve(lion_before, lion_after, 3), optimizer="lion", seed=seed)
        write_run(tmp_path, crossing_curve(adamw_before, adamw_after, 4), optimizer="adamw", seed=seed)
    lion_epochs = [2 + (0.81 - before) / (after - before) for before, after in lion]
    adamw_epochs = [3 + (0.81 - before) / (after - before) for before, after in adamw]
    check = verdict(tmp_path, "h1_convergence.yaml").checks[0]
    assert check.numbers["target"] == pytest.approx(0.81)
    assert check.outcome != "not testable" and check.numbers["test"] == "paired t"
    assert check.numbers["mean_subject"] == pytest.approx(mean(lion_epochs))
    assert check.numbers["p"] == pytest.approx(paired_t_p(lion_epochs, adamw_epochs), rel=1e-9)


def hx_verdict(root, experiments, versus="adam"):
    """A one-comparison hypothesis, sgd higher test accuracy than `versus`, evaluated on `root`."""
    folder = experiments / "hypotheses"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hx.yaml").write_text(
        f"id: HX\nstatement: sgd beats {versus}\ntest: {{kind: metric_comparison, subject: sgd, versus: [{versus}]}}\n"
    )
    analysis = analyse(root)
    return hypothesis_verdict(
        parse_hypothesis(folder / "hx.yaml"), Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys)
    )


def test_a_completed_run_without_its_headline_number_is_not_a_seed_of_the_test(tmp_path):
    """Three completed seeds each, but seed 2's sgd run recorded no best epoch: the test has 2 pairs. It was
    SUPPORTED on those 2 pairs (p = 0.006) although min_seeds is 3."""
    sgd, adam = [0.950, 0.951, 0.952], [0.900, 0.900, 0.900]
    write_study(tmp_path / "runs", {"sgd": sgd, "adam": adam})
    summary_path = next((tmp_path / "runs").rglob("sgd/seed2/summary.json"))
    summary = json.loads(summary_path.read_text())
    summary["best"] = None
    summary_path.write_text(json.dumps(summary))
    result = hx_verdict(tmp_path / "runs", tmp_path / "experiments")
    check = result.checks[0]
    assert result.verdict == "inconclusive" and check.outcome == "not testable"
    assert (check.numbers["n_subject"], check.numbers["n_other"]) == (2, 3)
    assert "sgd has 2 seed(s) in the test (need 3)" in check.detail
    # a completed summary without its headline is unreadable (formats/run_summary.py): left out, never a seed
    assert "1 sgd run(s) not completed, left out" in check.detail


@pytest.mark.parametrize("adam_seeds", [(3, 4, 5, 6), (2, 3, 4, 5)])
def test_arms_sharing_fewer_seeds_than_min_seeds_are_compared_unpaired_on_all_their_runs(tmp_path, adam_seeds):
    """sgd on seeds 0-3, adam on 3-6 (one shared) or 2-5 (two shared): one shared seed gave Welch and two a
    paired t on 2 pairs, the test jumping with the overlap while both arms "had 4 seeds". Now both are Welch on
    the 4 runs of each, and say why."""
    sgd, adam = [0.950, 0.955, 0.948, 0.957], [0.930, 0.921, 0.935, 0.926]
    write_study(tmp_path / "runs", {"sgd": sgd}, seeds=range(4))
    write_study(tmp_path / "runs", {"adam": adam}, seeds=adam_seeds)
    check = hx_verdict(tmp_path / "runs", tmp_path / "experiments").checks[0]
    t_and_df = stats.ttest_ind(sgd, adam, equal_var=False)
    assert check.numbers["test"] == "Welch t" and check.numbers["n_pairs"] == 0
    assert (check.numbers["n_subject"], check.numbers["n_other"]) == (4, 4)
    assert check.numbers["p"] == pytest.approx(t_and_df.pvalue, rel=1e-9)
    assert "compared unpaired on all their runs" in check.detail


def test_a_seed_run_twice_in_one_arm_counts_once_and_the_arms_still_pair(tmp_path):
    """A rerun of sgd's seed 1 that differs only in a numbers-free key (its own folder, progress bar on) sits
    beside the first: the arm's seed index repeated, the paired test silently became Welch over 4 + 3 runs,
    counting seed 1 twice. Now seed 1 counts once, at the mean of its two runs, and the test is paired."""
    sgd, adam = [0.950, 0.955, 0.948], [0.930, 0.921, 0.935]
    write_study(tmp_path / "runs", {"sgd": sgd, "adam": adam})
    write_run(
        tmp_path / "runs",
        ramp_records(0.957),
        optimizer="sgd",
        seed=1,
        variant="rerun",
        overrides={"train.progress_bar": True},
    )
    check = hx_verdict(tmp_path / "runs", tmp_path / "experiments").checks[0]
    sgd_by_seed = [0.950, (0.955 + 0.957) / 2, 0.948]
    assert check.numbers["test"] == "paired t" and check.numbers["n_pairs"] == 3
    assert check.numbers["p"] == pytest.approx(paired_t_p(sgd_by_seed, adam), rel=1e-9)
    assert "seed(s) 1 ran more than once" in check.detail


def test_a_completed_run_without_a_curve_is_missing_data_not_a_failure_to_reach_the_target(tmp_path):
    """Lion's seed 3 has no metrics.jsonl: it was counted as never reaching the target (censored, tied worst on
    ranks), though nobody knows when it got there. It is missing data: the other 3 seeds are tested, paired."""
    pairs = [(2, 4), (2, 5), (3, 5), (3, 6)]
    for seed, (lion, adamw) in enumerate(pairs):
        write_run(tmp_path, reaching(lion), optimizer="lion", seed=seed)
        write_run(tmp_path, reaching(adamw), optimizer="adamw", seed=seed)
    (next(tmp_path.rglob("lion/seed3")) / "metrics.jsonl").write_text("")
    check = verdict(tmp_path, "h1_convergence.yaml").checks[0]
    assert check.numbers["censored_subject"] == 0 and check.numbers["test"] == "paired t"
    assert check.numbers["n_pairs"] == 3 and "no complete val/acc curve" in check.detail


# ---- one same_value: numbers compared as numbers (issue 56, item 4) ---------------------------------------------


@pytest.mark.parametrize("spelled", ["1e-3", "0.001", "1.0e-3"])
def test_a_study_override_optimizer_lr_1e_3_counts_its_runs(tmp_path, spelled):
    """PyYAML reads `1e-3` (no dot) as the string '1e-3': the budget filter compared it as text with the runs'
    0.001 and dropped every run, so H2 was missing everywhere. Every spelling of the number is the same lr."""
    from optbench.specs.study_spec import find_study, planned_settings

    for optimizer, values in {"sgd": SGD, **OTHERS_WORSE}.items():
        for seed, accuracy in enumerate(values):
            write_run(
                tmp_path, ramp_records(accuracy), optimizer=optimizer, seed=seed, overrides={"optimizer.lr": 1e-3}
            )
    study = find_study("cpu_demo_clean", REPO / "experiments")
    study = dataclasses.replace(
        study,
        grid={**study.grid, "epochs": 3, "dataset": ["cifar10"], "noise": [{"name": "none"}]},
        overrides=(f"optimizer.lr={spelled}",),
    )
    planned = planned_settings(study)
    assert dict(planned[0].budget)["optimizer.lr"] in ("1e-3", 0.001)  # PyYAML's reading, text or number
    analysis = analyse(tmp_path)
    hypothesis = parse_hypothesis(HYPOTHESES / "h2_generalisation.yaml")
    result = hypothesis_verdict(
        hypothesis, Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys, planned=planned)
    )
    assert result.verdict == "supported", result.reason
    assert len(result.runs) == 40


@pytest.mark.parametrize(
    "a, b, same",
    [
        ("1e-3", 0.001, True),
        (0.001, "1.0e-3", True),
        ("1e-3", "0.001", True),
        (3, "3", True),
        (3, 3.0, True),
        (0.001, 0.0011, False),
        ("aggre", "aggre", True),
        ("aggre", "worst", False),
        (None, 0.0, False),
        (float("nan"), 0.1, False),
        (True, 1, False),  # a switch is not a number
        (True, "true", True),
    ],
)
def test_same_value_compares_numbers_as_numbers_both_ways(a, b, same):
    from optbench.values import same_value

    assert same_value(a, b) is same and same_value(b, a) is same
