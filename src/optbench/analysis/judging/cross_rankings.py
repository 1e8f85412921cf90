"""Each workload's ranking, its pairwise tests, the matrix of ranks, and Kendall's tau between workloads' rankings.

On each workload's part (cross_parts.py), on its headline in its direction (analysis/headline.py: test accuracy at
the best-validation epoch, higher is better; a language model's validation loss, lower is better):
- `ranking_table`: per optimizer the completed runs' mean with its t interval (summaries.describe) and its rank
  (1 = best; ranked only when every optimizer has a completed run);
- `pairwise_tests`: every pair of optimizers tested as the aggregator tests them (pairwise_tables.pairwise_table:
  paired on shared seeds, Holm-adjusted within the workload);
- `rank_matrix`: optimizers x ranked workloads;
- `tau_table`: for each pair of ranked workloads, Kendall's tau-b between their rankings (the oriented means), with
  the 95 % projection interval (rank_agreement.projection_interval) from each workload's optimizers x seeds matrix
  on the seeds every optimizer completed there. Its coverage and the bootstrap's are measured by
  scripts/tau_coverage.py.
"""

import itertools

import numpy as np
import pandas as pd

from optbench.analysis.judging.cross_parts import PartRuns
from optbench.analysis.judging.pairwise_tables import pairwise_table
from optbench.analysis.statistics.power import ALPHA
from optbench.analysis.statistics.rank_agreement import kendall_tau, oriented, projection_interval, ranks
from optbench.analysis.statistics.summaries import by_seed, describe, one_per_seed, seeds_text

INTERVAL = "95 % projection interval (Tukey's simultaneous intervals of each workload, 97.5 % each)"


def ranking_table(parts: list[PartRuns], optimizers: tuple[str, ...]) -> pd.DataFrame:
    """One row per (workload with runs, optimizer): runs that ended, completed seeds, mean, sd, 95 % t interval and
    rank on the workload's headline (in its stored unit: a fraction or nats)."""
    rows = []
    for part in parts:
        if part.missing:
            continue
        headline = part.headline
        described = {
            name: describe(part.completed.loc[part.completed["optimizer"] == name, headline.column])
            for name in optimizers
        }
        rank = (
            ranks([described[name].mean for name in optimizers], headline.higher_is_better)
            if part.ranked(optimizers)
            else [np.nan] * len(optimizers)
        )
        for name, place in zip(optimizers, rank):
            mine = part.runs[part.runs["optimizer"] == name]
            summary = described[name]
            rows.append(
                {
                    "workload": part.workload,
                    "optimizer": name,
                    "metric": headline.column,
                    "higher_is_better": headline.higher_is_better,
                    "runs": len(mine),
                    "completed": summary.n,
                    "mean": summary.mean,
                    "std": summary.std,
                    "ci_low": summary.ci_low,
                    "ci_high": summary.ci_high,
                    "rank": place,
                }
            )
    return pd.DataFrame(rows, columns=RANKING_COLUMNS)


RANKING_COLUMNS = [
    "workload",
    "optimizer",
    "metric",
    "higher_is_better",
    "runs",
    "completed",
    "mean",
    "std",
    "ci_low",
    "ci_high",
    "rank",
]


def pairwise_tests(parts: list[PartRuns], optimizers: tuple[str, ...], alpha: float = ALPHA) -> pd.DataFrame:
    """Every pair of optimizers on each workload with runs, on its headline, Holm-adjusted within the workload."""
    frames = [
        pairwise_table(part.completed, part.headline.column, [part.workload], list(optimizers), alpha)
        .rename(columns={"setting": "workload"})
        .assign(higher_is_better=part.headline.higher_is_better)
        for part in parts
        if not part.missing and len(part.completed)
    ]
    frames = [frame for frame in frames if len(frame)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def rank_matrix(ranking: pd.DataFrame, optimizers: tuple[str, ...]) -> pd.DataFrame:
    """Optimizers x workloads: each ranked workload's rank of each optimizer (workloads in the parts' order)."""
    ranked = ranking.dropna(subset=["rank"])
    workloads = list(dict.fromkeys(ranked["workload"]))
    matrix = ranked.pivot(index="optimizer", columns="workload", values="rank")
    return matrix.reindex(index=list(optimizers), columns=workloads).rename_axis(columns=None).reset_index()


def seed_matrix(part: PartRuns, optimizers: tuple[str, ...]) -> tuple[np.ndarray, list]:
    """The part's optimizers x seeds matrix of oriented headline values on the seeds every optimizer completed
    (a seed run twice counts once, at its mean: summaries.by_seed)."""
    column = part.headline.column
    series = [
        one_per_seed(by_seed(part.completed.loc[part.completed["optimizer"] == name].set_index("seed")[column]))[0]
        for name in optimizers
    ]
    shared = sorted(set.intersection(*(set(values.dropna().index) for values in series))) if series else []
    values = np.array([[values[seed] for seed in shared] for values in series], dtype=float)
    return oriented(values.reshape(len(optimizers), len(shared)), part.headline.higher_is_better), shared


def tau_table(parts: list[PartRuns], ranking: pd.DataFrame, optimizers: tuple[str, ...]) -> pd.DataFrame:
    """One row per pair of ranked workloads: tau-b between their rankings and its projection interval."""
    ranked = [part for part in parts if part.ranked(optimizers)]
    rows = []
    for first, second in itertools.combinations(ranked, 2):
        means = [
            oriented(
                ranking.set_index(["workload", "optimizer"]).loc[
                    [(part.workload, name) for name in optimizers], "mean"
                ],
                part.headline.higher_is_better,
            )
            for part in (first, second)
        ]
        (matrix_a, seeds_a), (matrix_b, seeds_b) = seed_matrix(first, optimizers), seed_matrix(second, optimizers)
        low, high = (
            projection_interval(matrix_a, matrix_b) if min(len(seeds_a), len(seeds_b)) >= 2 else (np.nan, np.nan)
        )
        rows.append(
            {
                "workload_a": first.workload,
                "workload_b": second.workload,
                "tau": kendall_tau(*means),
                "low": low,
                "high": high,
                "interval": INTERVAL,
                "seeds_a": seeds_text(seeds_a),
                "seeds_b": seeds_text(seeds_b),
            }
        )
    return pd.DataFrame(rows, columns=TAU_COLUMNS)


TAU_COLUMNS = ["workload_a", "workload_b", "tau", "low", "high", "interval", "seeds_a", "seeds_b"]
