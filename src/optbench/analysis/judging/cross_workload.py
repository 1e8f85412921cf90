"""A cross-workload study judged: every table of its report, from one folder of runs and the parts file.

`judge_cross(runs_dir, spec)` selects each workload's runs (cross_parts.py) and computes, in order: each workload's
ranking and pairwise tests, the matrix of ranks and Kendall's tau between workloads (cross_rankings.py), time to
target in steps with its performance profile and score (cross_targets.py), each claim on each workload and across
them (cross_claims.py), and the device-hours (cross_cost.py). The writing room turns the record into files
(analysis/writing/cross_workload_report.py); scripts/cross_workload_study.py is the command.
"""

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from optbench.analysis.judging import cross_claims, cross_cost, cross_rankings, cross_targets
from optbench.analysis.judging.cross_parts import PartRuns, parts_table, select_parts
from optbench.analysis.statistics.power import ALPHA
from optbench.specs.cross_workload_spec import CrossWorkload
from optbench.specs.study_spec import EXPERIMENTS_DIR


@dataclass
class CrossWorkloadResult:
    spec: CrossWorkload
    runs_dir: Path
    parts: list[PartRuns]
    parts_table: pd.DataFrame  # cross_parts.parts_table
    ranking: pd.DataFrame  # cross_rankings.ranking_table
    pairwise: pd.DataFrame  # cross_rankings.pairwise_tests
    ranks: pd.DataFrame  # cross_rankings.rank_matrix
    tau: pd.DataFrame  # cross_rankings.tau_table
    targets: pd.DataFrame  # cross_targets.target_table
    costs: pd.DataFrame  # ranked workloads x optimizers: median steps to target (the profile's input)
    profile: pd.DataFrame  # cross_targets.profile_table
    part_verdicts: pd.DataFrame  # cross_claims.part_table
    claims: pd.DataFrame  # cross_claims.claims_table
    cost: pd.DataFrame  # cross_cost.cost_table
    warnings: list[str]

    @property
    def missing(self) -> list[PartRuns]:
        return [part for part in self.parts if part.missing]


def judge_cross(
    runs_dir: Path, spec: CrossWorkload, experiments_dir: Path = EXPERIMENTS_DIR, alpha: float = ALPHA
) -> CrossWorkloadResult:
    """Every table of the report (ConfigError for bad input, before anything is written)."""
    cross = select_parts(runs_dir, spec, experiments_dir)
    optimizers = spec.optimizers
    ranking = cross_rankings.ranking_table(cross.parts, optimizers)
    costs, runs_with_steps = cross_targets.cost_table(cross.parts, cross.curves, optimizers)
    # the profile compares optimizers over the same workloads: those where every optimizer has finished runs
    profiled = costs.loc[[part.workload for part in cross.parts if part.ranked(optimizers)]]
    verdicts = cross_claims.part_verdicts(spec, cross, experiments_dir)
    cost, cost_warnings = cross_cost.cost_table(cross)
    return CrossWorkloadResult(
        spec=spec,
        runs_dir=Path(runs_dir),
        parts=cross.parts,
        parts_table=parts_table(cross.parts, optimizers),
        ranking=ranking,
        pairwise=cross_rankings.pairwise_tests(cross.parts, optimizers, alpha),
        ranks=cross_rankings.rank_matrix(ranking, optimizers),
        tau=cross_rankings.tau_table(cross.parts, ranking, optimizers),
        targets=cross_targets.target_table(costs, runs_with_steps),
        costs=profiled,
        profile=cross_targets.profile_table(profiled),
        part_verdicts=cross_claims.part_table(verdicts),
        claims=cross_claims.claims_table(spec, verdicts),
        cost=cost,
        warnings=[*cross.warnings, *cost_warnings],
    )
