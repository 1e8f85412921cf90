"""Hypotheses evaluated: test each parsed hypothesis on the runs and give a verdict.

Hypothesis files (experiments/hypotheses/*.yaml, schema in experiments/README.md, section
"Hypotheses") are parsed once by optbench.specs.study_spec into frozen `Hypothesis` / `HypothesisTest`
objects with their defaults applied; this module only evaluates them. Three kinds of test:
- `metric_comparison`: the subject optimizer's metric is higher (or lower) than each `versus` one's;
- `epochs_to_fraction_of_reference`: the subject reaches `fraction` x the reference optimizer's mean
  final validation accuracy in fewer epochs than the reference, each run's crossing interpolated between
  evaluations (load.epochs_to_reach), so runs crossing within the same epoch are told apart (a run whose
  curve never reaches it is censored: tied worst in a rank-based permutation test, never given a made-up
  epoch; a run with no curve is missing data, not a failure);
- `noise_drop`: the subject loses less of its metric than `versus` from clean data to each noise rate, or
  under real human label noise (`noise: human`) to each of its `label_sets` (CIFAR-N's aggre, worst, ...).
Each test runs once per setting (dataset and any other varying setting) of its scope that holds runs of any
optimizer it names; each setting x compared optimizer (x rate) is one required comparison. The scope (which
settings, and whether a sequential decision rules) is chosen by optbench.analysis.judging.verdicts; `Context.planned`
carries it here.

Verdict rule (tests: two_arms.two_arm_test; paired t on per-seed differences, the exact test beside it):
supported when every required comparison goes in the stated direction with p < alpha, each on its own
(the intersection-union test, Berger 1982); rejected when any is significant in the opposite direction
after Holm's adjustment over the required comparisons; inconclusive otherwise: a comparison not
significant or tied, missing runs (named), no spread to test (named), or a test on fewer than
`min_seeds` seeds: the pairs of a paired test, else each arm's runs with a value (a completed run without
the metric, or a seed the other arm lacks, is not a seed of the test). Arms are paired on their shared
seeds when they share at least `min_seeds`, else compared unpaired (two_arms.two_arm_test). The family is every
setting of the scope matching `where:` in which any optimizer the test names has runs (of any status), so
a missing arm is named, never dropped. Only completed runs enter the tests. When an optimizer has several arms in a
setting (an LR sweep) the
arm with the best mean validation accuracy is used (selection on validation, never on test) and the
comparison is marked post-selection, since the same seeds chose it.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from optbench.analysis.groups import BASE_SETTING_KEYS, noise_label, short_key
from optbench.analysis.load import epochs_to_reach, is_clean
from optbench.analysis.statistics.exact_tests import holm
from optbench.analysis.statistics.noise_drop import drop_test, paired_cells
from optbench.analysis.statistics.two_arms import two_arm_test
from optbench.formats.run_summary import COMPLETED
from optbench.specs.hypothesis_spec import (
    HUMAN,
    Hypothesis,
    HypothesisTest,
    hypothesis_files,
    load_hypotheses,
    parse_hypothesis,
)

__all__ = [
    "Context",
    "Hypothesis",
    "Verdict",
    "evaluate",
    "evaluate_all",
    "hypothesis_files",
    "load_hypotheses",
    "parse_hypothesis",
]  # loading lives in optbench.specs.study_spec, shared with the study runner

SUPPORTED, REJECTED, INCONCLUSIVE = "supported", "rejected", "inconclusive"
AS_STATED, OPPOSITE = "as stated", "opposite"


@dataclass
class Check:
    """One required comparison and its outcome."""

    setting: str
    comparison: str  # "sgd vs adam", "lion vs adamw at symmetric 20%"
    expected: str  # "sgd higher", "lion fewer epochs", "lion smaller drop"
    outcome: str  # as stated / opposite (+ significant or not), tied, missing, not testable
    numbers: dict = field(default_factory=dict)
    detail: str = ""
    better: str = "higher"  # the stated direction of `difference` (subject - other)

    @property
    def testable(self) -> bool:
        return self.outcome not in ("missing", "not testable")


@dataclass
class Verdict:
    hypothesis: Hypothesis
    verdict: str
    reason: str
    checks: list[Check]
    exact_verdict: str = ""  # the same rule on the exact tests' p values (no normality assumed)
    runs: pd.DataFrame | None = None  # the runs of its family: its optimizers in the settings it was judged on


# ---- evaluation --------------------------------------------------------------------------------------


@dataclass
class Context:
    """What every test needs: all runs (labelled), their curves, the setting keys, and per optimizer the
    seeds a tuning study in the folder chose its hyperparameters on (tuning.seeds_tuned_on)."""

    runs: pd.DataFrame
    curves: pd.DataFrame
    setting_keys: list[str]
    tuned_on: dict = field(default_factory=dict)
    planned: list = field(default_factory=list)  # study_spec.PlannedSetting of the study that tests it: its scope
    seeds: tuple = ()  # only these seeds (a sequential look's); empty: every seed


def evaluate_all(hypotheses: list[Hypothesis], context: Context) -> list[Verdict]:
    return [evaluate(hypothesis, context) for hypothesis in hypotheses]


def evaluate(hypothesis: Hypothesis, context: Context) -> Verdict:
    test = hypothesis.test
    runs = within_plan(apply_where(context.runs, test.where), context.planned)
    if context.seeds:
        runs = runs[runs["seed"].map(lambda seed: pd.notna(seed) and int(seed) in set(context.seeds))]
    runs = runs.assign(
        tuned_seed=[
            int(seed) in context.tuned_on.get(str(optimizer), ()) if pd.notna(seed) else False
            for seed, optimizer in zip(runs["seed"], runs["optimizer"])
        ]
    )
    evaluators = {
        "metric_comparison": metric_comparison_checks,
        "epochs_to_fraction_of_reference": epochs_to_reference_checks,
        "noise_drop": noise_drop_checks,
    }
    checks = evaluators[test.kind](test, runs, context) + planned_but_absent(test, runs, context.planned)
    verdict = decide(hypothesis, checks, test)
    verdict.runs = family_runs(test, runs)
    return verdict


def family_runs(test: HypothesisTest, runs: pd.DataFrame) -> pd.DataFrame:
    """The runs a verdict rests on: its optimizers, and for a noise drop only the clean and required noise levels."""
    mine = runs[runs["optimizer"].astype(str).isin([test.subject, *test.versus])]
    if test.kind != "noise_drop":
        return mine
    if test.noise == HUMAN:
        noisy = (mine["noise"] == HUMAN) & mine.get("label_set", pd.Series(None, index=mine.index)).isin(
            test.label_sets
        )
    else:
        noisy = (mine["noise"] == test.noise) & mine["noise_rate"].map(
            lambda rate: any(same_value(rate, wanted) for wanted in test.rates)
        )
    return mine[mine["noise_rate"].map(is_clean) | noisy]


IDENTITY_WHERE = ("dataset", "noise", "noise_rate")  # the `where:` keys a planned setting can be checked on


def within_plan(runs: pd.DataFrame, planned: list) -> pd.DataFrame:
    """With the study named, only its planned settings (dataset x noise x rate, or x label set under human noise)
    are the family: runs of other studies in the same folder (the noisy arm beside a clean-only study) stay out
    of its verdicts."""
    if not planned:
        return runs
    label_sets = runs["label_set"] if "label_set" in runs else pd.Series([None] * len(runs), index=runs.index)
    keep = [
        any(
            str(row.dataset) == setting.dataset
            and str(row.noise) == setting.noise
            and (label_set == setting.label_set if setting.noise == HUMAN else same_value(row.noise_rate, setting.rate))
            and within_budget(runs.loc[index], setting.budget)
            for setting in planned
        )
        for index, row, label_set in zip(runs.index, runs[["dataset", "noise", "noise_rate"]].itertuples(), label_sets)
    ]
    return runs[keep]


def within_budget(run: pd.Series, budget: tuple) -> bool:
    """Whether the run has the planned setting's epochs and budget overrides; a key no run of the folder records
    (no `cfg.` column) cannot be checked and is passed."""
    return all(
        pd.isna(run[f"cfg.{key}"]) if wanted is None else same_value(run[f"cfg.{key}"], wanted)
        for key, wanted in budget
        if f"cfg.{key}" in run.index
    )


def planned_but_absent(test: HypothesisTest, runs: pd.DataFrame, planned: list) -> list[Check]:
    """A "missing" check for every setting the study planned (matching `where:`, with an optimizer the test
    names) of which the folder holds no run of those optimizers: the family is the plan, not the folder."""
    names = {test.subject, *test.versus}
    checks: list[Check] = []
    for setting in planned:
        values = {
            "dataset": setting.dataset,
            "noise": setting.noise,
            "noise_rate": setting.rate,
            "label_set": setting.label_set,
        }
        wanted = all(
            any(same_value(values[key], choice) for choice in (choices if isinstance(choices, list) else [choices]))
            for key, choices in test.where.items()
            if key in IDENTITY_WHERE
        )
        if test.kind == "noise_drop":  # its settings are datasets; the rates are the test's own
            values.update(noise="", noise_rate=math.nan)
        if not wanted or not names & set(setting.optimizers) or has_runs(runs, values, names):
            continue
        label = (
            setting.dataset
            if test.kind == "noise_drop"
            else f"{setting.dataset}, {setting_noise_text(setting.noise, setting.rate, setting.label_set)}"
        )
        if any(check.setting == label for check in checks):
            continue
        checks.append(
            Check(
                label,
                f"{test.subject} vs {', '.join(test.versus)}",
                "planned by the study",
                "missing",
                detail=f"no runs of {', '.join(sorted(names & set(setting.optimizers)))} in this planned setting",
            )
        )
    return checks


def has_runs(runs: pd.DataFrame, values: dict, names: set) -> bool:
    here = runs[(runs["dataset"].astype(str) == values["dataset"]) & runs["optimizer"].astype(str).isin(names)]
    if values["noise"] == HUMAN:
        if "label_set" not in here:  # no run of the folder used human labels: the column is absent
            return False
        here = here[(here["noise"].astype(str) == HUMAN) & (here["label_set"] == values["label_set"])]
    elif values["noise"]:
        here = here[
            (here["noise"].astype(str) == values["noise"])
            & here["noise_rate"].map(lambda rate: same_value(rate, values["noise_rate"]))
        ]
    return bool(len(here))


def setting_noise_text(noise: str, rate: float, label_set: str = "") -> str:
    """noise_label, and for a planned human label set without runs (its rate unknown yet) 'human worst'."""
    if noise == HUMAN and math.isnan(rate):
        return f"{HUMAN} {label_set}"
    return noise_label(noise, rate, label_set or None)


def apply_where(runs: pd.DataFrame, where: dict) -> pd.DataFrame:
    """Keep runs whose column (identity column or config key such as model.width) equals a listed value."""
    kept = runs
    for key, wanted in where.items():
        column = key if key in runs else f"cfg.{key}"
        if column not in runs:
            return runs.iloc[0:0]
        values = wanted if isinstance(wanted, list) else [wanted]
        kept = kept[kept[column].map(lambda value: any(same_value(value, choice) for choice in values))]  # noqa: B023
    return kept


def same_value(value, wanted) -> bool:
    if isinstance(wanted, (int, float)) and not isinstance(wanted, bool):
        try:
            return bool(np.isclose(float(value), float(wanted)))
        except (TypeError, ValueError):
            return False
    return str(value) == str(wanted)


def decide(hypothesis: Hypothesis, checks: list[Check], test: HypothesisTest) -> Verdict:
    """Supported: every required comparison significant in the stated direction, each at alpha on its own
    p (the intersection-union test, Berger 1982: the hypothesis is the intersection of its comparisons, so
    no adjustment is needed and the error stays at alpha). Rejected: any comparison significant in the
    opposite direction after Holm over the family. Inconclusive otherwise, naming what is missing. The
    same rule on the exact tests' p values is kept beside it as a check that assumes no normality."""
    if not checks:
        names = ", ".join([test.subject, *test.versus])
        under = f" under human label noise ({', '.join(test.label_sets)})" if test.noise == HUMAN else ""
        return Verdict(
            hypothesis, INCONCLUSIVE, f"missing runs: no setting has runs of {names}{under} to compare", checks
        )
    verdict, reason = rule(checks, test.alpha, "p")
    exact_verdict, _ = rule(checks, test.alpha, "exact_p")
    return Verdict(hypothesis, verdict, reason, checks, exact_verdict=exact_verdict)


def rule(checks: list[Check], alpha: float, p_key: str) -> tuple[str, str]:
    """(verdict, reason) from each check's `p_key` p value; the checks' outcomes are set from the primary p."""
    primary = p_key == "p"
    p_values = [check.numbers.get(p_key, math.nan) if check.testable else math.nan for check in checks]
    adjusted = holm(p_values)
    outcomes = [
        classify(check.numbers.get("difference", math.nan), p, check.better, alpha) if check.testable else check.outcome
        for check, p in zip(checks, p_values)
    ]
    opposite = [
        check
        for check, outcome, p_holm in zip(checks, outcomes, adjusted)
        if outcome.startswith(OPPOSITE) and p_holm < alpha
    ]
    if primary:
        for check, outcome, p_holm in zip(checks, outcomes, adjusted):
            check.outcome = outcome
            if check.testable:
                check.numbers["p_holm"] = float(p_holm)
    if opposite:
        return REJECTED, (
            f"{len(opposite)} of {len(checks)} required comparisons are significant in the opposite "
            f"direction (Holm-adjusted p < {alpha})"
        )
    if all(outcome == f"{AS_STATED}, significant" for outcome in outcomes):
        return SUPPORTED, (
            f"all {len(checks)} required comparisons go in the stated direction, each with p < {alpha} "
            f"(intersection-union test)"
        )
    return INCONCLUSIVE, inconclusive_reason(checks, outcomes, alpha)


def inconclusive_reason(checks: list[Check], outcomes: list[str], alpha: float) -> str:
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
    parts = [f"{count} of {len(checks)} {outcome}" for outcome, count in counts.items()]
    missing = [f"{check.detail} ({check.setting})" for check in checks if check.outcome in ("missing", "not testable")]
    reason = f"not every required comparison is significant in the stated direction at alpha = {alpha}: " + "; ".join(
        parts
    )
    return reason + (". Missing or not testable: " + "; ".join(missing) if missing else "")


def classify(difference: float, p_value: float, better: str, alpha: float) -> str:
    if not np.isfinite(p_value) or not np.isfinite(difference):
        return "not testable"
    if difference == 0:
        return "tied"
    direction = AS_STATED if (difference > 0) == (better == "higher") else OPPOSITE
    return f"{direction}, {'significant' if p_value < alpha else 'not significant'}"


# ---- choosing the runs of one optimizer in one setting -----------------------------------------------


@dataclass
class Arm:
    optimizer: str
    label: str | None  # None: no completed run to use
    runs: pd.DataFrame  # its completed runs
    problem: str = ""  # why it cannot be used, naming the runs that are missing
    note: str = ""  # e.g. which of several arms was selected


def select_arm(runs: pd.DataFrame, optimizer: str) -> Arm:
    """The completed runs of `optimizer`; with several arms (an LR sweep) the best on mean validation accuracy."""
    mine = runs[runs["optimizer"].astype(str) == optimizer]
    done = mine[mine["status"] == COMPLETED]
    if not len(done):
        if not len(mine):
            return Arm(optimizer, None, done, problem=f"{optimizer}: no runs")
        statuses = ", ".join(f"{count} {status}" for status, count in mine["status"].value_counts().items())
        return Arm(optimizer, None, done, problem=f"{optimizer}: no completed run ({statuses})")
    ranked = done.groupby("arm")["val_acc_best"].mean().sort_values(ascending=False)
    chosen = str(ranked.index[0]) if ranked.notna().any() else str(done["arm"].iloc[0])
    # Chosen and then tested on the same seeds: the test is post-selection (optimistic for the chosen arm).
    note = (
        f"post-selection: {chosen} chosen among {len(ranked)} {optimizer} arms by mean validation accuracy on "
        f"these same seeds"
        if len(ranked) > 1
        else ""
    )
    chosen_runs = done[done["arm"] == chosen]
    reused = (
        sorted(int(seed) for seed in chosen_runs.loc[chosen_runs["tuned_seed"], "seed"])
        if "tuned_seed" in chosen_runs
        else []
    )  # evaluate() marks the seeds a tuning study in the folder ran
    if reused:
        note = "; ".join(
            filter(
                None,
                [note, f"post-selection: seeds {', '.join(map(str, reused))} also tuned {optimizer}'s hyperparameters"],
            )
        )
    not_completed = len(mine[mine["arm"] == chosen]) - len(chosen_runs)
    if not_completed:
        note = "; ".join(filter(None, [note, f"{not_completed} {chosen} run(s) not completed, left out"]))
    return Arm(optimizer, chosen, chosen_runs, note=note)


def values_by_seed(arm: Arm, metric: str) -> pd.Series:
    return arm.runs.set_index("seed")[metric].astype(float)


def settings_of(runs: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(runs.sort_values(["dataset", "noise_rate"], kind="stable")["setting"]))


def has_optimizers(runs: pd.DataFrame, subject: str, others: list[str]) -> bool:
    """A setting belongs to the hypothesis's family when any required optimizer ran in it (any status):
    the others are then missing there, and named, never silently dropped."""
    return bool(set(runs["optimizer"].astype(str)) & {subject, *others})


def too_few(result, labels: tuple[str, str], min_seeds: int) -> str:
    """The test's own seeds against min_seeds: its pairs when paired, else each side's values (a drop contrast: the
    side's smaller cell). Completed runs are not the count: one without the metric, a seed the other arm lacks
    or a seed run twice is not one more seed of the test."""
    if result.n_pairs:
        return "" if result.n_pairs >= min_seeds else f"{result.n_pairs} paired seeds in the test (need {min_seeds})"
    small = [
        f"{label} has {n} seed(s) in the test" for label, n in zip(labels, (result.n_a, result.n_b)) if n < min_seeds
    ]
    return "; ".join(small) + (f" (need {min_seeds})" if small else "")


def without_value(arm: Arm, column: str, what: str) -> str:
    """A note naming the completed runs of the arm that have no value to test (they are left out, not counted)."""
    count = int(arm.runs[column].astype(float).isna().sum()) if column in arm.runs else 0
    return f"{count} completed {arm.label} run(s) have no {what}: left out of the test" if count else ""


# ---- the three kinds of test -------------------------------------------------------------------------


def metric_comparison_checks(test: HypothesisTest, runs: pd.DataFrame, context: Context) -> list[Check]:
    return [
        comparison_check(
            setting,
            mine,
            other,
            test.metric,
            test.better,
            test.alpha,
            test.min_seeds,
            expected=f"{test.subject} {test.better} {test.metric}",
        )
        for setting, mine, _, other in arm_pairs(test, runs)
    ]


def arm_pairs(test: HypothesisTest, runs: pd.DataFrame):
    """(setting, subject's arm, other optimizer's name, its arm) for each required comparison, in every
    setting (dataset x noise) that has runs of any optimizer the test names."""
    for setting in settings_of(runs):
        here = runs[runs["setting"] == setting]
        if not has_optimizers(here, test.subject, list(test.versus)):
            continue
        mine = select_arm(here, test.subject)
        for other_name in test.versus:
            yield setting, mine, other_name, select_arm(here, other_name)


def comparison_check(
    setting: str,
    mine: Arm,
    other: Arm,
    metric: str,
    better: str,
    alpha: float,
    min_seeds: int,
    expected: str,
    numbers_extra: dict | None = None,
    what: str = "",
) -> Check:
    """`what`: how a missing value of `metric` reads in a note (default: the metric's name)."""
    name = f"{mine.label or mine.optimizer} vs {other.label or other.optimizer}"
    if mine.label is None or other.label is None:
        missing = [arm.problem for arm in (mine, other) if arm.label is None]
        return Check(setting, name, expected, "missing", detail="; ".join(missing))
    result = two_arm_test(
        values_by_seed(mine, metric),
        values_by_seed(other, metric),
        alpha,
        min_pairs=min_seeds,
        names=(mine.label, other.label),
    )
    numbers = {**comparison_numbers(result), **(numbers_extra or {})}
    gaps = [without_value(arm, metric, what or metric) for arm in (mine, other)]
    return tested_check(
        Check(setting, name, expected, "", numbers, better=better),
        result,
        [mine, other],
        (mine.label, other.label),
        min_seeds,
        alpha,
        gaps,
    )


def tested_check(
    check: Check,
    result,
    arms: list[Arm],
    labels: tuple[str, str],
    min_seeds: int,
    alpha: float,
    notes: Sequence[str] = (),
) -> Check:
    """Outcome from the primary test; a test on fewer than min_seeds seeds, or no spread, is "not testable"."""
    small = too_few(result, labels, min_seeds)
    notes = [part for arm in arms for part in arm.note.split("; ")] + list(notes) + [result.note]
    check.detail = "; ".join(filter(None, dict.fromkeys([small, *notes])))  # each note once
    check.numbers["post_selection"] = any(arm.note.startswith("post-selection") for arm in arms)
    check.outcome = "not testable" if small else classify(result.difference, result.p_value, check.better, alpha)
    return check


def comparison_numbers(result) -> dict:
    return {
        "n_subject": result.n_a,
        "n_other": result.n_b,
        "n_pairs": result.n_pairs,
        "mean_subject": result.mean_a,
        "mean_other": result.mean_b,
        "difference": result.difference,
        "ci_low": result.ci_low,
        "ci_high": result.ci_high,
        "test": result.test,
        "p": result.p_value,
        "exact_test": result.exact_test,
        "exact_p": result.exact_p,
        "exact_min_p": result.exact_min_p,
        "effect_size": result.effect_size,
        "effect_kind": result.effect_kind,
        "spread": result.spread,
        "power": result.power,
        "min_detectable_d": result.min_detectable_d,
        "min_detectable_difference": result.min_detectable_difference,
        "low_power": result.low_power,
    }


def epochs_to_reference_checks(test: HypothesisTest, runs: pd.DataFrame, context: Context) -> list[Check]:
    subject, fraction = test.subject, float(test.fraction)
    reference_metric, curve_metric = test.reference_metric, test.curve_metric
    alpha, min_seeds = test.alpha, test.min_seeds
    checks = []
    for setting, mine, reference_name, reference in arm_pairs(test, runs):
        expected = f"{subject} fewer epochs to {fraction:g} x {reference_name}'s mean {reference_metric}"
        if reference.label is None or mine.label is None:
            checks.append(comparison_check(setting, mine, reference, "epochs", "lower", alpha, min_seeds, expected))
            continue
        target = fraction * float(reference.runs[reference_metric].mean())
        mine_epochs, mine_censored = epochs_to_target(mine.runs, context.curves, curve_metric, target)
        reference_epochs, reference_censored = epochs_to_target(reference.runs, context.curves, curve_metric, target)
        mine_timed = Arm(mine.optimizer, mine.label, mine.runs.assign(epochs=mine_epochs), note=mine.note)
        reference_timed = Arm(
            reference.optimizer, reference.label, reference.runs.assign(epochs=reference_epochs), note=reference.note
        )
        check = comparison_check(
            setting,
            mine_timed,
            reference_timed,
            "epochs",
            "lower",
            alpha,
            min_seeds,
            expected,
            {"target": target, "censored_subject": mine_censored, "censored_other": reference_censored},
            what=f"complete {curve_metric} curve (missing data, not a failure to reach the target)",
        )
        if mine_censored or reference_censored:
            check.detail = "; ".join(
                filter(
                    None,
                    [
                        check.detail,
                        f"never reached the target (censored, tied worst "
                        f"on ranks): {mine_censored} {mine.label}, "
                        f"{reference_censored} {reference.label}",
                    ],
                )
            )
        checks.append(check)
    return checks


def epochs_to_target(runs: pd.DataFrame, curves: pd.DataFrame, column: str, target: float) -> tuple[list[float], int]:
    """(per run, the epoch `column` first reaches the target, interpolated between evaluations; how many are
    censored). A run whose curve covers every epoch it trained and never gets there is right-censored (+inf: it
    needed more than its budget, how much more is unknown) and the test compares ranks. A run with no curve, or
    one shorter than its epochs that does not reach it, is missing data (NaN): it may have got there unseen, so it
    is left out, never counted as a failure."""
    epochs = []
    for _, run in runs.iterrows():
        curve = curves[curves["run_id"] == run["run_id"]]
        reached = epochs_to_reach(curve, column, target)
        evaluated = int(curve[column].notna().sum()) if column in curve else 0
        complete = evaluated > 0 and evaluated >= number_or_zero(run.get("epochs_done"))
        epochs.append(reached if not math.isnan(reached) else math.inf if complete else math.nan)
    return epochs, sum(math.isinf(value) for value in epochs)


def number_or_zero(value) -> float:
    try:
        return float(value) if pd.notna(value) else 0.0
    except (TypeError, ValueError):
        return 0.0


def noise_drop_checks(test: HypothesisTest, runs: pd.DataFrame, context: Context) -> list[Check]:
    subject, kind, metric = test.subject, test.noise, test.metric
    alpha, min_seeds = test.alpha, test.min_seeds
    runs = runs.assign(base=base_settings(runs, context.setting_keys))
    checks = []
    for base in dict.fromkeys(runs.sort_values(["dataset"], kind="stable")["base"]):
        here = runs[runs["base"] == base]
        if not has_optimizers(here, subject, list(test.versus)):
            continue
        if kind == HUMAN and not (here["noise"] == HUMAN).any() and not human_planned(context.planned, here):
            continue  # human label sets exist for CIFAR data only: a dataset neither run nor planned under them
        clean = here[here["noise_rate"].map(is_clean)]
        for noise_text, noisy in noisy_levels(test, here):
            for other_name in test.versus:
                checks.append(drop_check(base, noise_text, clean, noisy, subject, other_name, metric, alpha, min_seeds))
    return checks


def human_planned(planned: list, here: pd.DataFrame) -> bool:
    """Whether the study planned human label sets on the data set of `here` (then their absence is missing runs)."""
    return any(setting.noise == HUMAN and setting.dataset in set(here["dataset"].astype(str)) for setting in planned)


def noisy_levels(test: HypothesisTest, here: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(how the level reads, its runs) for each required noise level: a rate, or a human label set (named with
    its realised rate once it has runs)."""
    if test.noise == HUMAN:
        levels = []
        for label_set in test.label_sets:
            noisy = (
                here[(here["noise"] == HUMAN) & (here.get("label_set") == label_set)]
                if "label_set" in here
                else here.iloc[:0]
            )
            rate = float(noisy["noise_rate"].iloc[0]) if len(noisy) else math.nan
            levels.append((setting_noise_text(HUMAN, rate, label_set), noisy))
        return levels
    return [
        (
            noise_label(test.noise, rate),
            here[(here["noise"] == test.noise) & here["noise_rate"].map(lambda value: same_value(value, rate))],  # noqa: B023
        )
        for rate in test.rates
    ]


def base_settings(runs: pd.DataFrame, setting_keys: list[str]) -> list[str]:
    """The setting label without its noise: dataset and the other setting keys."""
    others = [key for key in setting_keys if key not in BASE_SETTING_KEYS]
    return [
        ", ".join(
            [
                str(row["dataset"]),
                *(
                    f"{short_key(key)}={row[key]!r}" if isinstance(row[key], float) else f"{short_key(key)}={row[key]}"
                    for key in others
                ),
            ]
        )
        for _, row in runs.iterrows()
    ]


def drop_check(
    base: str,
    noise_text: str,
    clean: pd.DataFrame,
    noisy: pd.DataFrame,
    subject: str,
    other: str,
    metric: str,
    alpha: float,
    min_seeds: int,
) -> Check:
    """Drop = clean mean - noisy mean of `metric`; the subject's drop should be the smaller one."""
    name = f"{subject} vs {other}, clean -> {noise_text}"
    expected = f"{subject} smaller drop than {other}"
    cells = {
        ("subject", "clean"): select_arm(clean, subject),
        ("subject", "noisy"): select_arm(noisy, subject),
        ("other", "clean"): select_arm(clean, other),
        ("other", "noisy"): select_arm(noisy, other),
    }
    missing = [
        f"{arm.problem} at {'clean' if state == 'clean' else noise_text}"
        for (_, state), arm in cells.items()
        if arm.label is None
    ]
    if missing:
        return Check(base, name, expected, "missing", detail="; ".join(missing))
    values, seeds_note = paired_cells({key: values_by_seed(arm, metric) for key, arm in cells.items()}, min_seeds)
    drop_subject, drop_other, result = drop_test(values, alpha, min_seeds)
    numbers = {
        **{f"mean_{who}_{state}": float(series.mean()) for (who, state), series in values.items()},
        **{f"n_{who}_{state}": len(series) for (who, state), series in values.items()},
        **comparison_numbers(result),
        "drop_subject": drop_subject,
        "drop_other": drop_other,
    }
    if result.test not in ("none", "Welch-Satterthwaite contrast"):
        numbers["test"] = f"{result.test} on per-seed drops"
    gaps = [without_value(arm, metric, metric) for arm in cells.values()]
    return tested_check(
        Check(base, name, expected, "", numbers, better="lower"),
        result,
        list(cells.values()),
        (subject, other),
        min_seeds,
        alpha,
        [*gaps, seeds_note],
    )
