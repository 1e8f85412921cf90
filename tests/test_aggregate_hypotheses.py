"""Hypothesis files and verdicts: the repository's H1-H3 evaluated on hand-made runs with known numbers.

Supported needs every required comparison significant in the stated direction; one significant
comparison the other way rejects; anything else (not significant, missing runs, one seed) is
inconclusive and says why.
"""

import dataclasses
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import betainc

from conftest import REPO
from fixtures.aggregate.fake_runs import ramp_records, record, write_run
from optbench.aggregate.hypotheses import Context, evaluate, load_hypotheses, parse_hypothesis
from optbench.aggregate.pipeline import analyse
from optbench.errors import ConfigError

HYPOTHESES = REPO / "experiments" / "hypotheses"


def two_sided_p(t: float, df: float) -> float:
    return float(betainc(df / 2, 0.5, df / (df + t * t)))


def mean(values):
    return sum(values) / len(values)


def sample_sd(values) -> float:
    centre = mean(values)
    return math.sqrt(sum((value - centre) ** 2 for value in values) / (len(values) - 1))


def sign_flip_p(a, b) -> float:
    """The exact paired sign-flip p by hand: every one of the 2^n sign patterns of the differences a - b."""
    differences = [x - y for x, y in zip(a, b)]
    observed = mean(differences)
    null = [mean([sign * d for sign, d in zip(signs, differences)])
            for signs in itertools.product((1, -1), repeat=len(differences))]
    greater = sum(value >= observed - 1e-12 for value in null) / len(null)
    less = sum(value <= observed + 1e-12 for value in null) / len(null)
    return min(1.0, 2 * min(greater, less))


def verdict(root, name: str):
    analysis = analyse(root)
    hypothesis = parse_hypothesis(HYPOTHESES / name)
    return evaluate(hypothesis, Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys))


def write_study(root, accuracies: dict, noise="none", rate=0.0, seeds=None):
    for optimizer, values in accuracies.items():
        for seed, accuracy in zip(seeds or range(len(values)), values):
            write_run(root, ramp_records(accuracy), optimizer=optimizer, seed=seed, noise=noise, rate=rate)


# Eight seeds: SGD ahead of each other optimizer on every seed gives sign-flip p = 2/256 per comparison,
# and Holm over H2's four comparisons at most 4 x 2/256 = 0.031 < 0.05 (three seeds could never get below 0.25).
SGD = [0.950, 0.955, 0.960, 0.951, 0.957, 0.953, 0.958, 0.952]
OTHERS_WORSE = {"adam": [0.920, 0.921, 0.933, 0.925, 0.929, 0.922, 0.931, 0.927],
                "adamw": [0.930, 0.938, 0.940, 0.935, 0.933, 0.939, 0.936, 0.931],
                "lion": [0.925, 0.935, 0.930, 0.928, 0.933, 0.926, 0.934, 0.929],
                "muon": [0.940, 0.941, 0.952, 0.944, 0.946, 0.943, 0.949, 0.942]}


def test_repository_hypotheses_load_and_unknown_top_level_keys_are_ignored(tmp_path):
    assert [hypothesis.id for hypothesis in load_hypotheses(REPO / "experiments")] == ["H1", "H2", "H3"]
    folder = tmp_path / "experiments" / "hypotheses"
    folder.mkdir(parents=True)
    text = (HYPOTHESES / "h2_generalisation.yaml").read_text()
    (folder / "h2.yaml").write_text(text + "study:\n  grid: {optimizer: [sgd, adam], seed: [0, 1, 2]}\nnotes: later\n")
    assert load_hypotheses(tmp_path / "experiments")[0].test.subject == "sgd"


@pytest.mark.parametrize(("text", "message"), [
    ("id: H9\nstatement: x\n", "missing 'test'"),
    ("id: H9\nstatement: x\ntest: {kind: vibes}\n", "test.kind must be one of"),
    ("id: H9\nstatement: x\ntest: {kind: metric_comparison, subject: sgd, versus: adam, better: up}\n", "better"),
    ("id: H9\nstatement: x\ntest: {kind: noise_drop, subject: lion, versus: adamw, noise: symmetric}\n", "rates"),
    ("id: [unclosed\n", "not valid YAML"),
])
def test_malformed_hypothesis_files_name_the_file_and_the_fix(tmp_path, text, message):
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message) as error:
        load_hypotheses(tmp_path)
    assert "bad.yaml" in str(error.value) and "\n" not in str(error.value)


def test_h2_supported_when_sgd_beats_every_optimizer_significantly(tmp_path):
    write_study(tmp_path, {"sgd": SGD, **OTHERS_WORSE})
    result = verdict(tmp_path, "h2_generalisation.yaml")
    assert result.verdict == "supported"
    assert [check.comparison for check in result.checks] == ["sgd vs adam", "sgd vs adamw", "sgd vs lion", "sgd vs muon"]
    first = result.checks[0].numbers
    assert first["test"] == "paired sign-flip, exact" and (first["n_subject"], first["n_other"]) == (8, 8)
    assert first["mean_subject"] == pytest.approx(mean(SGD)) and first["mean_other"] == pytest.approx(mean(OTHERS_WORSE["adam"]))
    assert first["p"] == pytest.approx(sign_flip_p(SGD, OTHERS_WORSE["adam"]), rel=1e-12) == 2 / 256
    assert [check.numbers["p_holm"] for check in result.checks] == pytest.approx([4 * 2 / 256] * 4)
    assert first["min_p"] == pytest.approx(2 / 256)


def test_h2_rejected_when_an_optimizer_beats_sgd_significantly(tmp_path):
    better_muon = [value + 0.02 for value in SGD]
    write_study(tmp_path, {"sgd": SGD, **OTHERS_WORSE, "muon": better_muon})
    result = verdict(tmp_path, "h2_generalisation.yaml")
    assert result.verdict == "rejected"
    muon = result.checks[-1]
    assert muon.outcome == "opposite, significant"
    assert muon.numbers["p"] == pytest.approx(sign_flip_p(SGD, better_muon), rel=1e-12)
    assert "Holm-adjusted" in result.reason


def test_h2_three_seeds_ahead_on_every_seed_is_inconclusive_not_supported(tmp_path):
    """Three seeds cannot reach p < 0.25 on an exact test: no verdict either way."""
    write_study(tmp_path, {"sgd": SGD[:3], **{name: values[:3] for name, values in OTHERS_WORSE.items()}})
    result = verdict(tmp_path, "h2_generalisation.yaml")
    assert result.verdict == "inconclusive"
    assert {check.numbers["min_p"] for check in result.checks} == {0.25}


def test_h2_inconclusive_names_the_missing_runs(tmp_path):
    write_study(tmp_path, {"sgd": SGD, "adam": OTHERS_WORSE["adam"], "adamw": OTHERS_WORSE["adamw"]})
    write_run(tmp_path, ramp_records(0.9)[:1], optimizer="muon", status="diverged", epochs_planned=3)
    result = verdict(tmp_path, "h2_generalisation.yaml")
    assert result.verdict == "inconclusive"
    assert "lion: no runs" in result.reason and "muon: no completed run (1 diverged)" in result.reason


def test_h2_inconclusive_when_not_significant_or_one_seed(tmp_path):
    write_study(tmp_path, {"sgd": SGD, **OTHERS_WORSE, "adam": [0.949, 0.958, 0.951]})   # sgd barely ahead
    assert verdict(tmp_path, "h2_generalisation.yaml").verdict == "inconclusive"
    one_seed = tmp_path / "one"
    write_study(one_seed, {"sgd": [0.95], **{name: values[:1] for name, values in OTHERS_WORSE.items()}})
    result = verdict(one_seed, "h2_generalisation.yaml")
    assert result.verdict == "inconclusive" and "has 1 completed seed(s) (need 3)" in result.reason


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


def test_h3_with_paired_seeds_compares_per_seed_drops_with_the_exact_sign_flip_test(tmp_path):
    noise_study(tmp_path)
    result = verdict(tmp_path, "h3_noise_robustness.yaml")
    assert result.verdict == "inconclusive"   # three seeds: p >= 0.25 whatever the data
    at_20 = result.checks[0].numbers
    lion_drops = [c - n for c, n in zip(LION_CLEAN, LION_20)]
    adamw_drops = [c - n for c, n in zip(ADAMW_CLEAN, ADAMW_20)]
    assert at_20["test"] == "paired sign-flip, exact on per-seed drops"
    assert at_20["drop_subject"] == pytest.approx(mean(lion_drops)) and at_20["drop_other"] == pytest.approx(mean(adamw_drops))
    assert at_20["p"] == pytest.approx(sign_flip_p(lion_drops, adamw_drops), rel=1e-12)


def test_h3_supported_with_seven_seeds_smaller_drops_on_every_one(tmp_path):
    """Two required comparisons: Holm needs the larger raw p below 0.05 and the smaller below 0.025;
    seven seeds give 2/128 = 0.016 each."""
    seeds = range(7)
    lion_clean, adamw_clean = [0.93 + 0.001 * i for i in seeds], [0.94 + 0.001 * i for i in seeds]
    write_study(tmp_path, {"lion": lion_clean, "adamw": adamw_clean})
    for rate, lion_drop, adamw_drop in ((0.2, 0.03, 0.06), (0.4, 0.07, 0.14)):
        write_study(tmp_path, {"lion": [v - lion_drop - 0.002 * (i % 2) for i, v in enumerate(lion_clean)],
                               "adamw": [v - adamw_drop for v in adamw_clean]}, "symmetric", rate)
    result = verdict(tmp_path, "h3_noise_robustness.yaml")
    assert result.verdict == "supported"
    assert [check.numbers["p_holm"] for check in result.checks] == pytest.approx([2 * 2 / 128] * 2)


def test_h3_without_paired_seeds_uses_the_welch_satterthwaite_contrast(tmp_path):
    noise_study(tmp_path, noisy_seeds=(3, 4, 5))
    check = verdict(tmp_path, "h3_noise_robustness.yaml").checks[1]   # clean -> 40 %
    cells = [LION_CLEAN, LION_40, ADAMW_CLEAN, ADAMW_40]
    parts = [sample_sd(cell) ** 2 / 3 for cell in cells]
    estimate = (mean(LION_CLEAN) - mean(LION_40)) - (mean(ADAMW_CLEAN) - mean(ADAMW_40))
    df = sum(parts) ** 2 / sum(part ** 2 / 2 for part in parts)
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


def test_h1_lion_at_epoch_3_and_adamw_at_epoch_5_on_three_seeds_is_not_supported(tmp_path):
    """Issue 14's first reproduction: constant epochs made a paired t-test say t = inf, p = 0, supported."""
    result = h1_verdict(tmp_path, [(3, 5)] * 3)
    assert result.verdict == "inconclusive"
    numbers = result.checks[0].numbers
    assert numbers["target"] == pytest.approx(0.81)
    assert (numbers["mean_subject"], numbers["mean_other"]) == (3, 5)
    assert numbers["p"] == pytest.approx(0.25) and numbers["p"] > 0   # 2 of 8 sign patterns as extreme


def test_h1_supported_with_six_seeds_each_faster(tmp_path):
    pairs = [(2, 4), (2, 5), (3, 5), (3, 4), (2, 6), (3, 6)]
    result = h1_verdict(tmp_path, pairs)
    assert result.verdict == "supported"
    assert result.checks[0].numbers["p"] == pytest.approx(sign_flip_p(*zip(*pairs)), rel=1e-12) == 2 / 64


def test_h1_when_no_lion_run_ever_reaches_the_target_it_is_not_rejected(tmp_path):
    """Issue 14's second reproduction: never-reached runs were given epochs_planned + 1 and a spurious p = 0."""
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
    assert math.isnan(check.numbers["mean_subject"])   # no made-up epoch for the censored run
    assert check.numbers["test"] == "paired sign-flip on ranks, exact"
    # pooled mid-ranks of lion (2, 2, never) and adamw (4, 5, 5): lion 1.5, 1.5, 6; adamw 3, 4.5, 4.5
    assert check.numbers["p"] == pytest.approx(sign_flip_p([1.5, 1.5, 6], [3, 4.5, 4.5]), rel=1e-12)
    assert "never reached the target" in check.detail


def null_study(rng, seeds: int = 8) -> pd.DataFrame:
    """H2's five optimizers, truly equal: each seed shares a draw (initialisation, data order), plus run noise."""
    shared = rng.normal(0.0, 0.004, seeds)
    rows = [{"run_id": f"{name}/{seed}", "setting": "cifar10, clean", "dataset": "cifar10", "noise": "none",
             "noise_rate": 0.0, "optimizer": name, "arm": name, "seed": seed, "status": "completed",
             "val_acc_best": 0.9, "test_acc_at_best_val": 0.93 + shared[seed] + rng.normal(0.0, 0.003)}
            for name in ("sgd", "adam", "adamw", "lion", "muon") for seed in range(seeds)]
    return pd.DataFrame(rows)


def test_under_the_null_supported_and_rejected_each_stay_at_or_below_alpha():
    """150 simulated H2 studies (about 5 s on one core) with all optimizers equal. Raw p on four comparisons would reject in about
    1 - 0.975^4 = 10 % of them; Holm-adjusted exact tests keep each verdict at or below alpha = 0.05."""
    hypothesis = parse_hypothesis(HYPOTHESES / "h2_generalisation.yaml")
    rng = np.random.default_rng(14)
    verdicts = [evaluate(hypothesis, Context(null_study(rng), pd.DataFrame(), [])).verdict for _ in range(150)]
    assert verdicts.count("supported") / len(verdicts) <= 0.05
    assert verdicts.count("rejected") / len(verdicts) <= 0.05
    assert verdicts.count("inconclusive") >= 0.9 * len(verdicts)


def test_a_hypothesis_is_parsed_once_with_its_defaults_applied(tmp_path):
    (tmp_path / "h.yaml").write_text("id: H9\nstatement: x\ntest: {kind: metric_comparison, subject: sgd, versus: adam}\n")
    test = parse_hypothesis(tmp_path / "h.yaml").test
    assert (test.versus, test.metric, test.better, test.alpha, test.min_seeds, test.where) == (
        ("adam",), "test_acc_at_best_val", "higher", 0.05, 3, {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        test.alpha = 0.5
