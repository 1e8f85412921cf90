"""Hypotheses judged: `hypothesis_verdict(hypothesis, context)` tests one parsed hypothesis on its family of runs.

Hypothesis files (experiments/hypotheses/*.yaml, schema in experiments/README.md, section
"Hypotheses") are parsed once by optbench.specs.hypothesis_spec into frozen `Hypothesis` / `HypothesisTest`
objects with their defaults applied; this module chooses the runs each one is judged on (its family), runs its
checks (hypothesis_checks.py: one kind of test each, every setting x compared optimizer (x rate) one required
comparison) and gives the verdict (hypothesis_rule.py: intersection-union for supported, Holm for rejected).
The scope (which settings, and whether a sequential decision rules) is chosen by
optbench.analysis.judging.verdicts; `Context.planned` carries it here. The family is every setting of the scope
matching `where:` in which any optimizer the test names has runs (of any status), so a missing arm is named,
never dropped; with a study named, a planned setting with no runs is a "missing" check: the family is the plan,
not the folder.
"""

import math

import pandas as pd

from optbench.analysis.judging.hypothesis_checks import (
    Context,
    epochs_to_reference_checks,
    metric_comparison_checks,
    noise_drop_checks,
    setting_noise_text,
    tuned_as,
)
from optbench.analysis.judging.hypothesis_rule import (
    INCONCLUSIVE,
    REJECTED,
    SUPPORTED,
    Check,
    Verdict,
    verdict_from_checks,
)
from optbench.analysis.load import is_clean
from optbench.specs.hypothesis_spec import (
    HUMAN,
    Hypothesis,
    HypothesisTest,
    hypothesis_files,
    load_hypotheses,
    parse_hypothesis,
)
from optbench.values import same_value

__all__ = [
    "INCONCLUSIVE",
    "REJECTED",
    "SUPPORTED",
    "Check",
    "Context",
    "Hypothesis",
    "Verdict",
    "hypothesis_files",
    "hypothesis_verdict",
    "hypothesis_verdicts",
    "load_hypotheses",
    "parse_hypothesis",
]  # loading lives in optbench.specs.hypothesis_spec, shared with the study runner; the rule and checks beside


def hypothesis_verdicts(hypotheses: list[Hypothesis], context: Context) -> list[Verdict]:
    """Each hypothesis's verdict on the same runs (hypothesis_verdict)."""
    return [hypothesis_verdict(hypothesis, context) for hypothesis in hypotheses]


def hypothesis_verdict(hypothesis: Hypothesis, context: Context) -> Verdict:
    """The hypothesis judged on its family of runs in `context` (its scope, `where:` and seeds): its required
    comparisons, each run's tuned seeds marked post-selection, and the verdict rule over them."""
    test = hypothesis.test
    runs = within_plan(apply_where(context.runs, test.where), context.planned)
    if context.seeds:
        runs = runs[runs["seed"].map(lambda seed: pd.notna(seed) and int(seed) in set(context.seeds))]
    runs = tuned_as(runs, context.tuned)
    runs = runs.assign(
        tuned_seed=[
            int(seed) in context.tuned_on.get(str(optimizer), ()) if pd.notna(seed) else False
            for seed, optimizer in zip(runs["seed"], runs["optimizer"])
        ]
    )
    checks_of_kind = {
        "metric_comparison": metric_comparison_checks,
        "epochs_to_fraction_of_reference": epochs_to_reference_checks,
        "noise_drop": noise_drop_checks,
    }
    checks = checks_of_kind[test.kind](test, runs, context) + planned_but_absent(test, runs, context.planned)
    verdict = verdict_from_checks(hypothesis, checks, test)
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
    return runs.loc[keep]  # `runs[[]]` would select no columns: an empty family keeps its columns


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


def apply_where(runs: pd.DataFrame, where: dict) -> pd.DataFrame:
    """Keep runs whose column (grouping column or config key such as model.width) equals a listed value."""
    kept = runs
    for key, wanted in where.items():
        column = key if key in runs else f"cfg.{key}"
        if column not in runs:
            return runs.iloc[0:0]
        values = wanted if isinstance(wanted, list) else [wanted]
        kept = kept[kept[column].map(lambda value: any(same_value(value, choice) for choice in values))]  # noqa: B023
    return kept
