"""Robust aggregates across runs and settings, and performance profiles across settings.

Agarwal et al. 2021 ("Deep RL at the edge of the statistical precipice"): the interquartile mean (IQM,
the mean of the middle 50 % of runs: scipy.stats.trim_mean with 25 % cut from each end) and the
probability of improvement P(X > Y) (the chance a run of X beats a run of Y, ties counting half,
averaged over settings), each with a 95 % percentile interval from a stratified bootstrap: runs are
resampled with replacement within each setting, keeping each setting's count. scipy.stats.bootstrap
resamples each of several samples independently, so passing one sample per setting is exactly that
stratification. Performance profiles (Dolan & More 2002, in AlgoPerf's form): for each arm, the
fraction of settings in which its cost to reach the target (median over seeds, a run that never
reaches it costs infinity) is within tau times the best arm's cost in that setting.
"""

import math

import numpy as np
import pandas as pd
from scipy import stats

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000   # percentile intervals; fixed seed so the same runs give the same table
TAUS = (1.0, 1.25, 1.5, 2.0, 3.0, 4.0)   # profile columns: within tau x the best arm's cost


def iqm(values, axis=-1):
    """Interquartile mean: the mean of the middle 50 % (a quarter trimmed from each end)."""
    return stats.trim_mean(values, 0.25, axis=axis)


def pooled_iqm(*strata, axis=-1):
    """The IQM of all runs of all settings together (each bootstrap resample keeps every setting's count)."""
    return iqm(np.concatenate(strata, axis=axis), axis=axis)


def win_probability(x, y):
    """P(X > Y) + P(X = Y) / 2 over every pair of a run of x and a run of y (the Mann-Whitney U / (n m)),
    along the last axis of each, batched over leading axes."""
    x, y = np.asarray(x)[..., :, None], np.asarray(y)[..., None, :]
    return np.mean(x > y, axis=(-2, -1)) + 0.5 * np.mean(x == y, axis=(-2, -1))


def mean_win_probability(*strata, axis=-1):
    """Strata alternate (x in setting 1, y in setting 1, x in setting 2, ...): the mean over settings."""
    return np.mean([win_probability(strata[i], strata[i + 1]) for i in range(0, len(strata), 2)], axis=0)


def stratified_interval(strata: list[np.ndarray], statistic) -> tuple[float, float, float]:
    """(estimate, low, high): the statistic on the data and its stratified bootstrap percentile interval.
    A setting with fewer than two runs cannot be resampled: the interval is then NaN."""
    estimate = float(statistic(*strata, axis=-1))
    if not strata or min(len(stratum) for stratum in strata) < 2:
        return estimate, math.nan, math.nan
    result = stats.bootstrap(strata, statistic, n_resamples=BOOTSTRAP_RESAMPLES, confidence_level=CONFIDENCE,
                             method="percentile", vectorized=True, rng=np.random.default_rng(0))
    return estimate, float(result.confidence_interval.low), float(result.confidence_interval.high)


def values_of(runs: pd.DataFrame, setting: str, arm: str, metric: str) -> np.ndarray:
    chosen = runs[(runs["setting"] == setting) & (runs["arm"] == arm)][metric].astype(float).to_numpy()
    return chosen[np.isfinite(chosen)]


def iqm_table(runs: pd.DataFrame, metric: str, settings: list[str], arms: list[str]) -> pd.DataFrame:
    """IQM and its stratified bootstrap interval per setting x arm, and per arm across its settings."""
    rows = []
    for arm in arms:
        strata = {setting: values_of(runs, setting, arm, metric) for setting in settings}
        strata = {setting: values for setting, values in strata.items() if len(values)}
        for setting, values in strata.items():
            rows.append(iqm_row(setting, arm, metric, [values]))
        if len(strata) > 1:
            rows.append(iqm_row(f"all {len(strata)} settings", arm, metric, list(strata.values())))
    return pd.DataFrame(rows)


def iqm_row(setting: str, arm: str, metric: str, strata: list[np.ndarray]) -> dict:
    estimate, low, high = stratified_interval(strata, pooled_iqm)
    return {"setting": setting, "arm": arm, "metric": metric, "runs": sum(map(len, strata)), "iqm": estimate,
            "ci_low": low, "ci_high": high}


def improvement_table(runs: pd.DataFrame, metric: str, settings: list[str], arms: list[str]) -> pd.DataFrame:
    """P(a > b) with its stratified bootstrap interval for each ordered pair of arms, per setting and across
    the settings that hold both (higher metric is better)."""
    rows = []
    for index, arm_a in enumerate(arms):
        for arm_b in arms[index + 1:]:
            pairs = {setting: (values_of(runs, setting, arm_a, metric), values_of(runs, setting, arm_b, metric))
                     for setting in settings}
            pairs = {setting: pair for setting, pair in pairs.items() if len(pair[0]) and len(pair[1])}
            for setting, pair in pairs.items():
                rows.append(improvement_row(setting, arm_a, arm_b, metric, [pair]))
            if len(pairs) > 1:
                rows.append(improvement_row(f"all {len(pairs)} settings", arm_a, arm_b, metric, list(pairs.values())))
    return pd.DataFrame(rows)


def improvement_row(setting: str, arm_a: str, arm_b: str, metric: str, pairs: list[tuple]) -> dict:
    strata = [values for pair in pairs for values in pair]
    estimate, low, high = stratified_interval(strata, mean_win_probability)
    return {"setting": setting, "arm_a": arm_a, "arm_b": arm_b, "metric": metric, "p_a_beats_b": estimate,
            "ci_low": low, "ci_high": high}


# ---- performance profiles -----------------------------------------------------------------------------

def costs(runs: pd.DataFrame, cost_column: str, settings: list[str], arms: list[str]) -> pd.DataFrame:
    """Settings x arms: the median over seeds of the cost to reach the target; a run that never reaches it
    costs infinity (so the median is infinite when half the seeds fail); NaN where an arm has no runs."""
    table = pd.DataFrame(math.nan, index=settings, columns=arms)
    for (setting, arm), group in runs.groupby(["setting", "arm"]):
        if setting in table.index and arm in table.columns:
            table.loc[setting, arm] = float(np.median(group[cost_column].astype(float).fillna(math.inf)))
    return table


def profile(cost_table: pd.DataFrame, taus=TAUS) -> pd.DataFrame:
    """Arms x taus: the fraction of settings (that every arm ran) in which the arm's cost is within tau x the
    best arm's. A setting no arm solved counts as unsolved for all."""
    complete = cost_table.dropna()
    best = complete.min(axis=1)
    ratios = complete.div(best.where(np.isfinite(best) & (best > 0)), axis=0).fillna(math.inf)
    rows = {arm: [float((ratios[arm] <= tau).mean()) if len(ratios) else math.nan for tau in taus]
            for arm in cost_table.columns}
    return pd.DataFrame.from_dict(rows, orient="index", columns=[f"tau={tau:g}" for tau in taus])


def profile_table(runs: pd.DataFrame, settings: list[str], arms: list[str]) -> pd.DataFrame:
    """One row per arm and cost (epochs, seconds to target): the profile at each tau, and how many settings."""
    frames = []
    for cost, column in (("epochs", "epochs_to_target"), ("seconds", "seconds_to_target")):
        cost_table = costs(runs, column, settings, arms)
        frame = profile(cost_table)
        frame.insert(0, "settings", len(cost_table.dropna()))
        frame.insert(0, "cost", cost)
        frames.append(frame.rename_axis("arm").reset_index())
    return pd.concat(frames, ignore_index=True)
