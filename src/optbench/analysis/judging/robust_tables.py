"""The robust tables over a study's runs: IQM, probability of improvement and performance profiles per setting
and across settings (tables/robust, improvement, profiles), from the estimators of optbench.analysis.statistics.robust.

A run that diverged or failed is a result, not a gap: it counts here with the score it recorded, or chance
accuracy (1 / classes) when it recorded none (`scored_runs`), and costs infinity in the profiles (`costs`).
Dropping it would rank an optimizer that diverged on two of three seeds by its one survivor. Pooled across
settings, accuracies are normalised per setting first (see `normalise`), so an easy setting does not outweigh a
hard one. Runs interrupted or still running have not ended: they are not results yet. Every table reads the
headline's direction (analysis/headline.py): a language model's loss is better low, its chance is ln K nats, and
P(A beats B) asks for the lower loss; a folder mixing workloads is computed workload by workload (`by_headline`).
"""

import math
from collections.abc import Callable, Collection, Iterable

import numpy as np
import pandas as pd

from optbench.analysis.headline import DEFAULT, Headline, headline_groups
from optbench.analysis.statistics.robust import (
    TAUS,
    UNDER_COVERING_N,
    Bounds,
    mean_win_probability,
    pooled_iqm,
    profile_fractions,
    stratified_interval,
)
from optbench.formats.run_summary import COMPLETED, DIVERGED, FAILED

RESULT_STATUSES = (COMPLETED, DIVERGED, FAILED)  # runs that ended; interrupted or running ones have not


def scored_runs(runs: pd.DataFrame, metric: str, headline: Headline = DEFAULT) -> pd.DataFrame:
    """Runs that ended, with `metric` for diverged and failed ones as recorded, else chance (the headline's value
    for a uniform guess over the setting's classes: 1/K, or ln K nats); `ended_badly` marks them."""
    ended = runs[runs["status"].isin(RESULT_STATUSES)].copy()
    ended["ended_badly"] = ended["status"] != COMPLETED
    chance = chance_of(ended, headline)
    missing = ended["ended_badly"] & ~np.isfinite(ended[metric].astype(float))
    ended[metric] = ended[metric].astype(float).where(~missing, chance)
    return ended


def chance_of(runs: pd.DataFrame, headline: Headline) -> pd.Series:
    """Per run: the headline of a uniform guess over its setting's classes (NaN where the classes are unknown)."""
    classes = runs.groupby("setting")["num_classes"].transform("max") if "num_classes" in runs else math.nan
    classes = pd.Series(classes, index=runs.index, dtype=float)
    if headline.higher_is_better:
        return 1.0 / classes  # as before workloads existed, to the last bit
    return classes.map(headline.chance)


def normalise(runs: pd.DataFrame, metric: str, headline: Headline = DEFAULT) -> pd.Series:
    """Per setting: (score - chance) / (the best arm's mean - chance), the best by the headline's direction. 1 is
    the setting's best arm on average, 0 is guessing (for a loss both differences are negative: the ratio reads
    the same); CIFAR-10 and CIFAR-100 (or clean and noisy) then weigh alike when pooled. The reference is fixed
    from the data, not resampled in the bootstrap."""
    unknown = 0.0 if headline.higher_is_better else math.nan  # an accuracy's unknown chance: from 0
    chance = chance_of(runs, headline).fillna(unknown)
    best_of = "max" if headline.higher_is_better else "min"
    best = runs.groupby(["setting", "arm"])[metric].transform("mean").groupby(runs["setting"]).transform(best_of)
    room = best - chance if headline.higher_is_better else chance - best
    room = room.where(room > 0)  # a setting where nobody beat chance cannot be normalised
    gain = runs[metric].astype(float) - chance if headline.higher_is_better else chance - runs[metric].astype(float)
    return gain / room


def values_of(runs: pd.DataFrame, setting: str, arm: str, metric: str) -> np.ndarray:
    chosen = runs[(runs["setting"] == setting) & (runs["arm"] == arm)][metric].astype(float).to_numpy()
    return np.asarray(chosen[np.isfinite(chosen)])


def failures(runs: pd.DataFrame, settings: Iterable[str], arm: str) -> int:
    return int(runs[runs["setting"].isin(list(settings)) & (runs["arm"] == arm)]["ended_badly"].sum())


def by_headline(
    table_of: Callable[..., pd.DataFrame], runs: pd.DataFrame, settings: list[str], arms: list[str]
) -> pd.DataFrame:
    """`table_of(runs, its headline column, its settings, arms, headline)` for each workload's headline among
    `settings`, stacked: one call for a folder of one workload, its table exactly as before workloads existed."""
    frames = [
        table_of(runs, headline.column, members, arms, headline)
        for headline, members in headline_groups(runs, settings)
    ]
    frames = [frame for frame in frames if len(frame)]
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else (frames[0] if frames else pd.DataFrame())


def pooled_name(count: int, headline: Headline) -> str:
    """'all 3 settings'; a non-default workload's pool names it ('all 2 char_lm settings')."""
    return f"all {count} settings" if headline == DEFAULT else f"all {count} {headline.workload} settings"


def iqm_table(
    runs: pd.DataFrame, metric: str, settings: list[str], arms: list[str], headline: Headline = DEFAULT
) -> pd.DataFrame:
    """IQM and its stratified bootstrap interval per setting x arm (in the metric's units), and per arm across
    its settings (normalised per setting). `runs`: every run; diverged and failed ones are scored."""
    scored = scored_runs(runs, metric, headline)
    scored = (
        scored.assign(normalised=normalise(scored, metric, headline)) if len(scored) else scored.assign(normalised=[])
    )
    rows = []
    for arm in arms:
        strata = {setting: values_of(scored, setting, arm, metric) for setting in settings}
        strata = {setting: values for setting, values in strata.items() if len(values)}
        for setting, values in strata.items():
            rows.append(iqm_row(setting, arm, metric, [values], failures(scored, [setting], arm), headline.bounds))
        if len(strata) > 1:
            pooled = [values_of(scored, setting, arm, "normalised") for setting in strata]
            rows.append(
                iqm_row(
                    pooled_name(len(strata), headline),
                    arm,
                    f"{metric}, normalised per setting",
                    pooled,
                    failures(scored, strata, arm),
                    (-math.inf, math.inf),
                )
            )
    return pd.DataFrame(rows)


def iqm_row(setting: str, arm: str, metric: str, strata: list[np.ndarray], failed: int, bounds: Bounds) -> dict:
    estimate, low, high = stratified_interval(strata, pooled_iqm, bounds)
    return {
        "setting": setting,
        "arm": arm,
        "metric": metric,
        "runs": sum(map(len, strata)),
        "diverged_or_failed": failed,
        "iqm": estimate,
        "ci_low": low,
        "ci_high": high,
        "under_covering": min(map(len, strata)) < UNDER_COVERING_N,
    }


def improvement_table(
    runs: pd.DataFrame, metric: str, settings: list[str], arms: list[str], headline: Headline = DEFAULT
) -> pd.DataFrame:
    """P(a beats b) with its stratified bootstrap interval for each ordered pair of arms, per setting and across
    the settings that hold both (beats: a higher accuracy, a lower loss; diverged and failed runs scored)."""
    scored = scored_runs(runs, metric, headline)
    if not headline.higher_is_better:  # a lower loss wins: compare the negated values
        scored[metric] = -scored[metric].astype(float)
    rows = []
    for index, arm_a in enumerate(arms):
        for arm_b in arms[index + 1 :]:
            pairs = {
                setting: (values_of(scored, setting, arm_a, metric), values_of(scored, setting, arm_b, metric))
                for setting in settings
            }
            pairs = {setting: pair for setting, pair in pairs.items() if len(pair[0]) and len(pair[1])}
            for setting, pair in pairs.items():
                rows.append(improvement_row(setting, arm_a, arm_b, metric, [pair]))
            if len(pairs) > 1:
                rows.append(
                    improvement_row(pooled_name(len(pairs), headline), arm_a, arm_b, metric, list(pairs.values()))
                )
    return pd.DataFrame(rows)


def improvement_row(setting: str, arm_a: str, arm_b: str, metric: str, pairs: list[tuple]) -> dict:
    strata = [values for pair in pairs for values in pair]
    estimate, low, high = stratified_interval(strata, mean_win_probability, (0.0, 1.0))
    return {
        "setting": setting,
        "arm_a": arm_a,
        "arm_b": arm_b,
        "metric": metric,
        "p_a_beats_b": estimate,
        "ci_low": low,
        "ci_high": high,
        "under_covering": min(map(len, strata)) < UNDER_COVERING_N,
    }


def costs(runs: pd.DataFrame, cost_column: str, settings: list[str], arms: list[str]) -> pd.DataFrame:
    """Settings x arms: the median over seeds of the cost to reach the target; a run that never reaches it,
    diverged or failed costs infinity (so the median is infinite when half the seeds fail); NaN where an arm
    has no run that ended (it was not planned there)."""
    ended = runs[runs["status"].isin(RESULT_STATUSES)]
    table = pd.DataFrame(math.nan, index=settings, columns=arms)
    for (setting, arm), group in ended.groupby(["setting", "arm"]):
        if setting in table.index and arm in table.columns:
            cost = group[cost_column].astype(float).where(group["status"] == COMPLETED).fillna(math.inf)
            table.loc[setting, arm] = float(np.median(cost))
    return table


def profile(cost_table: pd.DataFrame, taus: Collection[float] = TAUS) -> pd.DataFrame:
    """Arms x taus: `profile_fractions` of a settings x arms table of costs (from `costs`), labelled."""
    fractions = profile_fractions(cost_table.to_numpy(dtype=float), taus)
    return pd.DataFrame(fractions, index=cost_table.columns, columns=[f"tau={tau:g}" for tau in taus])


def profile_table(runs: pd.DataFrame, settings: list[str], arms: list[str]) -> pd.DataFrame:
    """One row per arm and cost (epochs, seconds to target): the profile at each tau, over the settings the
    arm ran in (`settings`), and how many of its runs diverged or failed."""
    frames = []
    ended_badly = runs[runs["status"].isin([DIVERGED, FAILED])]
    for cost, column in (("epochs", "epochs_to_target"), ("seconds", "seconds_to_target")):
        cost_table = costs(runs, column, settings, arms)
        frame = profile(cost_table)
        frame.insert(0, "diverged_or_failed", [int((ended_badly["arm"] == arm).sum()) for arm in frame.index])
        frame.insert(0, "settings", [int(cost_table[arm].notna().sum()) for arm in frame.index])
        frame.insert(0, "cost", cost)
        frames.append(frame.rename_axis("arm").reset_index())
    return pd.concat(frames, ignore_index=True)
