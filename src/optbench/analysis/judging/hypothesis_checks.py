"""The three kinds of hypothesis test, each setting x compared optimizer (x rate) one required comparison (`Check`).

- `metric_comparison`: the subject optimizer's metric is higher (or lower) than each `versus` one's;
- `epochs_to_fraction_of_reference`: the subject reaches `fraction` x the reference optimizer's mean
  final validation accuracy in fewer epochs than the reference, each run's crossing interpolated between
  evaluations (load.epochs_to_reach), so runs crossing within the same epoch are told apart (a run whose
  curve never reaches it is censored: tied worst in a rank-based permutation test, never given a made-up
  epoch; a run with no curve is missing data, not a failure);
- `noise_drop`: the subject loses less of its metric than `versus` from clean data to each noise rate, or
  under real human label noise (`noise: human`) to each of its `label_sets` (CIFAR-N's aggre, worst, ...).
Each test runs once per setting (dataset and any other varying setting) of its scope that holds runs of any
optimizer it names. Only completed runs enter the tests. Arms are paired on their shared seeds when they share
at least `min_seeds`, else compared unpaired (two_arms.two_arm_test); a test on fewer than `min_seeds` seeds (the pairs
of a paired test, else each arm's runs with a value: a completed run without the metric, or a seed the other
arm lacks, is not a seed of the test) is "not testable". When an optimizer has several arms in a setting (an LR
sweep) the arm with the best mean validation accuracy is used (selection on validation, never on test) and the
comparison is marked post-selection, since the same seeds chose it. Each check's outcome comes from the verdict
rule's `classify` (hypothesis_rule.py).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from optbench.analysis.groups import BASE_SETTING_KEYS, noise_label, short_key
from optbench.analysis.headline import selection_of, workload_of_runs
from optbench.analysis.judging.hypothesis_rule import Check, classify
from optbench.analysis.load import epochs_to_reach, is_clean
from optbench.analysis.statistics.noise_drop import drop_test, paired_cells
from optbench.analysis.statistics.two_arms import two_arm_test
from optbench.formats.run_summary import COMPLETED
from optbench.specs.hypothesis_spec import HUMAN, HypothesisTest
from optbench.values import same_value


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
    winners: dict = field(default_factory=dict)  # per tuning study here: per optimizer, its winner's values
    tuned: dict = field(default_factory=dict)  # per optimizer, the values its runs must have (a scope's); empty: any


def setting_noise_text(noise: str, rate: float, label_set: str = "") -> str:
    """noise_label, and for a planned human label set without runs (its rate unknown yet) 'human worst'."""
    if noise == HUMAN and math.isnan(rate):
        return f"{HUMAN} {label_set}"
    return noise_label(noise, rate, label_set or None)


def tuned_as(runs: pd.DataFrame, tuned: dict) -> pd.DataFrame:
    """The runs of each optimizer `tuned` names that have its values (`optimizer.lr` -> the cfg. column), and every
    run of the others: a study's own arms where other tunings' runs share its settings."""
    if not tuned or not len(runs):
        return runs
    keep = [
        all(same_value(run.get(f"cfg.{key}"), value) for key, value in tuned.get(str(run["optimizer"]), {}).items())
        for _, run in runs.iterrows()
    ]
    return runs.loc[keep]  # `runs[[]]` would select no columns


# ---- choosing the runs of one optimizer in one setting -----------------------------------------------


@dataclass
class Arm:
    optimizer: str
    label: str | None  # None: no completed run to use
    runs: pd.DataFrame  # its completed runs
    problem: str = ""  # why it cannot be used, naming the runs that are missing
    note: str = ""  # e.g. which of several arms was selected


def select_arm(runs: pd.DataFrame, optimizer: str) -> Arm:
    """The completed runs of `optimizer`; with several arms (an LR sweep) the best on its workload's selection
    metric's mean (validation accuracy: highest; a language model's validation loss: lowest)."""
    mine = runs[runs["optimizer"].astype(str) == optimizer]
    done = mine[mine["status"] == COMPLETED]
    if not len(done):
        if not len(mine):
            return Arm(optimizer, None, done, problem=f"{optimizer}: no runs")
        statuses = ", ".join(f"{count} {status}" for status, count in mine["status"].value_counts().items())
        return Arm(optimizer, None, done, problem=f"{optimizer}: no completed run ({statuses})")
    column, higher_is_better = selection_of(workload_of_runs(done))
    ranked = done.groupby("arm")[column].mean().sort_values(ascending=not higher_is_better)
    chosen = str(ranked.index[0]) if ranked.notna().any() else str(done["arm"].iloc[0])
    # Chosen and then tested on the same seeds: the test is post-selection (optimistic for the chosen arm).
    what = "validation accuracy" if column == "val_acc_best" else "validation loss"
    note = (
        f"post-selection: {chosen} chosen among {len(ranked)} {optimizer} arms by mean {what} on these same seeds"
        if len(ranked) > 1
        else ""
    )
    chosen_runs = done[done["arm"] == chosen]
    reused = (
        sorted(int(seed) for seed in chosen_runs.loc[chosen_runs["tuned_seed"], "seed"])
        if "tuned_seed" in chosen_runs
        else []
    )  # hypothesis_verdict() marks the seeds a tuning study in the folder ran
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
