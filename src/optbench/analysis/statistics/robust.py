"""Robust aggregates across runs and settings, and performance profiles across settings.

Agarwal et al. 2021 ("Deep RL at the edge of the statistical precipice"): the interquartile mean (IQM,
the mean of the middle 50 % of runs: scipy.stats.trim_mean with 25 % cut from each end) and the
probability of improvement P(X > Y) (the chance a run of X beats a run of Y, ties counting half,
averaged over settings), each with a 95 % percentile interval from a stratified bootstrap: runs are
resampled with replacement within each setting, keeping each setting's count. scipy.stats.bootstrap
resamples each of several samples independently, so passing one sample per setting is exactly that
stratification. A plain percentile interval is too narrow at the few runs a study has (measured on normal
runs: about 91 % coverage at 5 runs, 93 % at 10), so it is expanded (Hesterberg 2015, "What teachers should
know about the bootstrap", The American Statistician 69:371): taken at the percentile level whose normal
quantile is sqrt(n / (n - 1)) t(0.975, n - 1), n the smallest setting's runs (measured on normal runs, IQM
and P(A > B): 95-98 % from 6 runs on, 95-97 % for two settings of 10). Performance profiles (Dolan & More 2002, in
AlgoPerf's form): for each arm, the
fraction of the settings it ran in which its cost to reach the target (median over seeds) is within
tau times the best arm's cost in that setting.

A run that diverged or failed is a result, not a gap: it counts here with the score it recorded, or
chance accuracy (1 / classes) when it recorded none, and costs infinity in the profiles (Dolan-More;
AlgoPerf's performance-profile scoring). Dropping it would rank an optimizer that diverged on two of three
seeds by its one survivor. Pooled across settings, accuracies are normalised per setting first (see
`normalise`), so an easy setting does not outweigh a hard one. Below UNDER_COVERING_N runs per setting the
intervals are flagged: expanded, they still held the centre only 89-96 % of the time at 5 runs, and no
percentile interval can cover at 3 (it never reaches beyond the runs' own range, which holds the centre
1 - 2 / 2^n of the time: 75 %).
"""

import math
from collections.abc import Callable, Collection, Iterable

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from optbench.formats.run_summary import COMPLETED, DIVERGED, FAILED

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 50_000  # percentile intervals; fixed seed so the same runs give the same table
UNDER_COVERING_N = 6  # fewer runs per setting than this: the interval covers less than 95 %, expanded or not
TAUS = (1.0, 1.25, 1.5, 2.0, 3.0, 4.0)  # profile columns: within tau x the best arm's cost
RESULT_STATUSES = (COMPLETED, DIVERGED, FAILED)  # runs that ended; interrupted or running ones have not
Bounds = tuple[float, float]  # the range of a statistic, to which its interval is clipped


def scored_runs(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Runs that ended, with `metric` for diverged and failed ones as recorded, else chance (1 / classes of
    the setting); `ended_badly` marks them."""
    ended = runs[runs["status"].isin(RESULT_STATUSES)].copy()
    ended["ended_badly"] = ended["status"] != COMPLETED
    classes = ended.groupby("setting")["num_classes"].transform("max") if "num_classes" in ended else math.nan
    chance = 1.0 / pd.Series(classes, index=ended.index, dtype=float)
    missing = ended["ended_badly"] & ~np.isfinite(ended[metric].astype(float))
    ended[metric] = ended[metric].astype(float).where(~missing, chance)
    return ended


def normalise(runs: pd.DataFrame, metric: str) -> pd.Series:
    """Per setting: (score - chance) / (the best arm's mean - chance). 1 is the setting's best arm on
    average, 0 is guessing; CIFAR-10 and CIFAR-100 (or clean and noisy) then weigh alike when pooled.
    The reference is fixed from the data, not resampled in the bootstrap."""
    classes = runs.groupby("setting")["num_classes"].transform("max") if "num_classes" in runs else math.nan
    chance = (1.0 / pd.Series(classes, index=runs.index, dtype=float)).fillna(0.0)  # unknown: from 0
    best = runs.groupby(["setting", "arm"])[metric].transform("mean").groupby(runs["setting"]).transform("max")
    room = (best - chance).where(best - chance > 0)  # a setting where nobody beat chance cannot be normalised
    return (runs[metric].astype(float) - chance) / room


# A statistic along the last axis, batched over leading ones: a number for 1-D data, an array for a batch
Estimate = np.floating | np.ndarray


def iqm(values: npt.ArrayLike, axis: int = -1) -> Estimate:
    """Interquartile mean: the mean of the middle 50 % (a quarter trimmed from each end)."""
    trimmed: Estimate = stats.trim_mean(values, 0.25, axis=axis)
    return trimmed


def pooled_iqm(*strata: np.ndarray, axis: int = -1) -> Estimate:
    """The IQM of all runs of all settings together (each bootstrap resample keeps every setting's count)."""
    return iqm(np.concatenate(strata, axis=axis), axis=axis)


def win_probability(x: npt.ArrayLike, y: npt.ArrayLike) -> Estimate:
    """P(X > Y) + P(X = Y) / 2 over every pair of a run of x and a run of y (the Mann-Whitney U / (n m)),
    along the last axis of each, batched over leading axes."""
    x, y = np.asarray(x)[..., :, None], np.asarray(y)[..., None, :]
    probability: Estimate = np.mean(x > y, axis=(-2, -1)) + 0.5 * np.mean(x == y, axis=(-2, -1))
    return probability


def mean_win_probability(*strata: np.ndarray, axis: int = -1) -> Estimate:
    """Strata alternate (x in setting 1, y in setting 1, x in setting 2, ...): the mean over settings."""
    mean: Estimate = np.mean([win_probability(strata[i], strata[i + 1]) for i in range(0, len(strata), 2)], axis=0)
    return mean


def expanded_level(n: int, confidence: float = CONFIDENCE) -> float:
    """The percentile level that makes a bootstrap interval from n runs cover `confidence` (Hesterberg's expanded
    percentile interval): its two-sided normal quantile is sqrt(n / (n - 1)) t(1 - alpha / 2, n - 1), undoing the
    bootstrap's sd with n instead of n - 1 and its normal tails where a t belongs."""
    alpha = 1 - confidence
    return float(1 - 2 * stats.norm.sf(math.sqrt(n / (n - 1)) * stats.t.ppf(1 - alpha / 2, n - 1)))


def stratified_interval(
    strata: list[np.ndarray], statistic: Callable[..., Estimate], bounds: Bounds = (-math.inf, math.inf)
) -> tuple[float, float, float]:
    """(estimate, low, high): the statistic on the data and its stratified bootstrap percentile interval, expanded
    for the smallest setting's runs (`expanded_level`), clipped to the statistic's range `bounds`. A setting with
    fewer than two runs cannot be resampled: the interval is then NaN."""
    estimate = float(statistic(*strata, axis=-1))
    if not strata or min(len(stratum) for stratum in strata) < 2:
        return estimate, math.nan, math.nan
    level = expanded_level(min(len(stratum) for stratum in strata))
    result = stats.bootstrap(
        strata,
        statistic,
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=level,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(0),
    )
    low, high = np.clip([result.confidence_interval.low, result.confidence_interval.high], *bounds)
    return estimate, float(low), float(high)


def values_of(runs: pd.DataFrame, setting: str, arm: str, metric: str) -> np.ndarray:
    chosen = runs[(runs["setting"] == setting) & (runs["arm"] == arm)][metric].astype(float).to_numpy()
    return np.asarray(chosen[np.isfinite(chosen)])


def failures(runs: pd.DataFrame, settings: Iterable[str], arm: str) -> int:
    return int(runs[runs["setting"].isin(list(settings)) & (runs["arm"] == arm)]["ended_badly"].sum())


def iqm_table(runs: pd.DataFrame, metric: str, settings: list[str], arms: list[str]) -> pd.DataFrame:
    """IQM and its stratified bootstrap interval per setting x arm (in the metric's units), and per arm across
    its settings (normalised per setting). `runs`: every run; diverged and failed ones are scored."""
    scored = scored_runs(runs, metric)
    scored = scored.assign(normalised=normalise(scored, metric)) if len(scored) else scored.assign(normalised=[])
    rows = []
    for arm in arms:
        strata = {setting: values_of(scored, setting, arm, metric) for setting in settings}
        strata = {setting: values for setting, values in strata.items() if len(values)}
        for setting, values in strata.items():
            rows.append(iqm_row(setting, arm, metric, [values], failures(scored, [setting], arm), (0.0, 1.0)))
        if len(strata) > 1:
            pooled = [values_of(scored, setting, arm, "normalised") for setting in strata]
            rows.append(
                iqm_row(
                    f"all {len(strata)} settings",
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


def improvement_table(runs: pd.DataFrame, metric: str, settings: list[str], arms: list[str]) -> pd.DataFrame:
    """P(a > b) with its stratified bootstrap interval for each ordered pair of arms, per setting and across
    the settings that hold both (higher metric is better; diverged and failed runs scored)."""
    scored = scored_runs(runs, metric)
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
                rows.append(improvement_row(f"all {len(pairs)} settings", arm_a, arm_b, metric, list(pairs.values())))
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


# ---- performance profiles -----------------------------------------------------------------------------


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
    """Arms x taus: the fraction of the settings an arm ran in which its cost is within tau x the best arm's
    cost there. A setting no arm solved counts as unsolved for all; an arm's failures count against it."""
    best = cost_table.min(axis=1)
    ratios = cost_table.div(best.where(np.isfinite(best) & (best > 0)), axis=0)
    rows = {}
    for arm in cost_table.columns:
        ran = cost_table[arm].notna()
        arm_ratios = ratios.loc[ran, arm].fillna(math.inf)
        rows[arm] = [float((arm_ratios <= tau).mean()) if ran.any() else math.nan for tau in taus]
    return pd.DataFrame.from_dict(rows, orient="index", columns=[f"tau={tau:g}" for tau in taus])


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
