"""AlgoPerf-style time-to-target across workloads, in optimizer steps: per run, per optimizer, and the profile.

Each workload's target is the registry's (registry/workloads.py `target`, fixed before the main runs: CIFAR val acc
0.60, MNIST-1D val acc 0.85, char_lm val loss 2.2), crossed in its metric's direction. As AlgoPerf scores it, a run's
time is taken at the first evaluation at which the validation metric has reached the target (load.crossing's
evaluation, not interpolated), counted in optimizer steps up to that evaluation: an epoch-budgeted workload's
steps per epoch are its training examples that epoch (metrics.jsonl's train/images) over the batch size, rounded up
(a last partial batch is a step), a step-budgeted one's are dataset.steps_per_epoch per evaluation period. A run
that never reaches the target, diverged or failed costs infinity. Per optimizer and workload the cost is the median
over seeds (robust_tables.costs: infinite when half the seeds never reach it); its ratio to the best optimizer's
cost there, the profile rho(tau) for tau in [1, r_max] and its integrated score are profile_score.py's.
"""

import math

import numpy as np
import pandas as pd

from optbench.analysis.judging.cross_parts import PartRuns
from optbench.analysis.judging.robust_tables import RESULT_STATUSES, costs
from optbench.analysis.load import crossing, number
from optbench.analysis.statistics.profile_score import R_MAX, performance_ratios, profile, profile_score
from optbench.formats.metrics_log import EPOCH
from optbench.registry import workloads

STEPS = "steps_to_target"  # the per-run column this module adds: optimizer steps to the first evaluation at target
TRAIN_IMAGES = "train/images"  # metrics.jsonl: the examples trained on in an epoch
TAUS = (1.0, 1.25, 1.5, 2.0, 3.0, 4.0)  # the profile's columns, up to R_MAX


def target_of(workload: str) -> tuple[str, float, bool]:
    """(metrics.jsonl key, value, higher is better) of the workload's registry target."""
    described = workloads.describe(workload)
    return described.target.metric, described.target.value, described.metric(described.target.metric).higher_is_better


def target_text(workload: str) -> str:
    metric, value, higher = target_of(workload)
    shown = f"{100 * value:g} %" if metric.endswith("/acc") else f"{value:g}"
    return f"{metric} {'≥' if higher else '≤'} {shown}"


def steps_to_target(run: pd.Series, curve: pd.DataFrame, workload: str) -> float:
    """Optimizer steps to the run's first evaluation at or past its workload's target; NaN when never reached."""
    metric, value, higher = target_of(workload)
    found = crossing(curve, metric, value, higher)
    if found is None:
        return math.nan
    at = found[1]
    if workloads.describe(workload).budget_unit == workloads.STEPS:
        return at * number(run.get("cfg.dataset.steps_per_epoch"))
    batch = number(run.get("cfg.batch_size"))
    through = curve.loc[curve[EPOCH].astype(float) <= at, TRAIN_IMAGES].astype(float) if TRAIN_IMAGES in curve else []
    if not len(through) or not math.isfinite(batch):
        return math.nan
    return float(np.ceil(np.asarray(through) / batch).sum())


def with_steps(part: PartRuns, curves: pd.DataFrame) -> pd.DataFrame:
    """The part's runs with the STEPS column (NaN for a run with no curve or that never reached the target)."""
    by_run = dict(tuple(curves.groupby("run_id"))) if len(curves) else {}
    steps = [
        steps_to_target(run, by_run.get(run["run_id"], curves.iloc[0:0]), part.workload)
        for _, run in part.runs.iterrows()
    ]
    return part.runs.assign(**{STEPS: steps})


def cost_table(
    parts: list[PartRuns], curves: pd.DataFrame, optimizers: tuple[str, ...]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(workloads x optimizers median steps to target, the runs with their steps) over the parts with runs."""
    present = [part for part in parts if not part.missing]
    runs = pd.concat([with_steps(part, curves) for part in present], ignore_index=True) if present else pd.DataFrame()
    workloads_here = [part.workload for part in present]
    if not len(runs):
        return pd.DataFrame(index=workloads_here, columns=list(optimizers), dtype=float), runs
    return costs(runs, STEPS, workloads_here, list(optimizers)), runs


def target_table(cost: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (workload, optimizer): the target, runs that ended, how many reached it, the median steps
    (inf: not reached by half the seeds) and its ratio to the workload's best."""
    ratios = pd.DataFrame(performance_ratios(cost.to_numpy(dtype=float)), index=cost.index, columns=cost.columns)
    rows = []
    for workload in cost.index:
        for name in cost.columns:
            mine = runs[
                (runs["setting"] == workload) & (runs["optimizer"] == name) & runs["status"].isin(RESULT_STATUSES)
            ]
            reached = int((mine["status"].eq("completed") & mine[STEPS].notna()).sum())
            rows.append(
                {
                    "workload": workload,
                    "optimizer": name,
                    "target": target_text(str(workload)),
                    "runs": len(mine),
                    "reached": reached,
                    "median_steps": float(cost.loc[workload, name]),
                    "ratio": float(ratios.loc[workload, name]),
                }
            )
    return pd.DataFrame(rows, columns=TARGET_COLUMNS)


TARGET_COLUMNS = ["workload", "optimizer", "target", "runs", "reached", "median_steps", "ratio"]


def profile_table(cost: pd.DataFrame, r_max: float = R_MAX) -> pd.DataFrame:
    """One row per optimizer: the workloads it ran on, rho at each of TAUS and the integrated score up to r_max."""
    values = cost.to_numpy(dtype=float)
    rho = profile(values, TAUS) if len(cost) else np.full((len(cost.columns), len(TAUS)), math.nan)
    scores = profile_score(values, r_max) if len(cost) else np.full(len(cost.columns), math.nan)
    table = pd.DataFrame(rho, columns=[f"rho_{tau:g}" for tau in TAUS])
    table.insert(0, "workloads", [int(cost[name].notna().sum()) for name in cost.columns])
    table.insert(0, "optimizer", list(cost.columns))
    table["score"] = scores
    return table
