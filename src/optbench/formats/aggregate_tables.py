"""The aggregator's tables that code reads back: tables/results.csv, tables/verdicts.csv, the fidelity tables, the
validation study's table (scripts/validation_study.py) and the cross-workload report's tables
(scripts/cross_workload_study.py, scripts/tau_coverage.py); and the paths of every other CSV table the
aggregator writes (summary.csv, settings.csv, pairwise, runs not completed, robustness, variance, tuning), which
it writes through `csv_text` too.

The aggregator writes many tables for people (Markdown, LaTeX); these CSV files are also read by code: README's
generated blocks (scripts/readme_study.py, scripts/readme_fidelity.py), the published-verdict checks, the fidelity
tests. This module owns their paths (relative to the aggregator's --out folder) and the columns a reader may rely
on: the aggregator writes each through `csv_text`, which refuses a table lacking one of them, and a reader gets it
through `read`, which names the file and the missing column (DamagedRunFile, with the way out: aggregate again).
The verdicts table is text (`read` keeps every cell a string, empty where the aggregator left it blank); the
results and fidelity tables are numbers where they can be.
"""

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from optbench.errors import DamagedRunFile

TABLES = "tables"
RESULTS = f"{TABLES}/results.csv"  # one row per (setting, optimizer): the mean table (analysis/writing/tables.py)
VERDICTS = f"{TABLES}/verdicts.csv"  # one row per (hypothesis, scope), then one per hypothesis not tested
HYPOTHESES = f"{TABLES}/hypotheses.csv"  # every comparison of every judged hypothesis
FIDELITY = f"{TABLES}/fidelity.csv"  # one row per (ladder, rung): its rank agreement with the top rung
FIDELITY_AGREEMENT = f"{TABLES}/fidelity_agreement.csv"
FIDELITY_TUNING = f"{TABLES}/fidelity_tuning.csv"  # per tuning budget and optimizer: the tuned values (when several)
VALIDATION = f"{TABLES}/validation.csv"  # scripts/validation_study.py: each rule's figure on real runs beside its claim
SUMMARY = "summary.csv"  # one row per run: its status, metrics and config (analysis/writing/aggregate_files.py)
SETTINGS = "settings.csv"  # one row per setting: its file-name stem, label, run count and full setting
PAIRWISE = f"{TABLES}/pairwise.csv"  # per setting: each pair of optimizers' tests
RUNS_NOT_COMPLETED = f"{TABLES}/runs_not_completed.csv"  # the runs that did not complete, and why
VARIANCE = f"{TABLES}/variance.csv"  # where the spread comes from: seeds and the finite test set
TUNING = f"{TABLES}/tuning.csv"  # one row per (tuning study, optimizer): cost, winner and edge
# scripts/tuning_budget.py (analysis/judging/tuning_budget.py): the expected best score after k tuning trials
TUNING_BUDGET = f"{TABLES}/tuning_budget.csv"  # per (workload, study, optimizer, k): E_k and its interval
TUNING_BUDGET_RANKS = f"{TABLES}/tuning_budget_ranks.csv"  # per (workload, study, budget k, optimizer): its rank
TUNING_BUDGET_PAIRS = f"{TABLES}/tuning_budget_pairs.csv"  # per pair: E_k differences at the smallest, largest k
TUNING_BUDGET_COVERAGE = f"{TABLES}/tuning_budget_coverage.csv"  # per k: the intervals' coverage, simulated
# The cross-workload report's tables (scripts/cross_workload_study.py, analysis/writing/cross_workload_report.py)
CROSS_PARTS = f"{TABLES}/parts.csv"  # one row per workload: its study, rung, runs and whether it has results yet
CROSS_RANKING = f"{TABLES}/ranking.csv"  # per (workload, optimizer): mean, interval, rank on the workload's headline
CROSS_PAIRWISE = f"{TABLES}/workload_pairwise.csv"  # per workload: each pair of optimizers' tests, Holm-adjusted
CROSS_RANKS = f"{TABLES}/rank_matrix.csv"  # optimizers x workloads: the ranks
CROSS_TAU = f"{TABLES}/tau.csv"  # per pair of workloads: Kendall's tau-b and its interval
CROSS_TARGETS = f"{TABLES}/time_to_target.csv"  # per (workload, optimizer): median steps to target, ratio to best
CROSS_PROFILE = f"{TABLES}/profile_score.csv"  # per optimizer: the profile rho(tau) and its integrated score
CROSS_CLAIM_PARTS = f"{TABLES}/claim_parts.csv"  # per (claim, workload): the verdict of its hypothesis there
CROSS_CLAIMS = f"{TABLES}/claims.csv"  # per claim: its verdict on each workload and across them
CROSS_COST = f"{TABLES}/cost.csv"  # per workload and in total: device-hours of the main runs and of tuning
TAU_COVERAGE = f"{TABLES}/tau_coverage.csv"  # scripts/tau_coverage.py: each tau interval's coverage, simulated

NOT_TESTED = "not tested"  # verdicts.csv's verdict of a hypothesis no run tested
# The columns readers rely on (the aggregator writes more).
COLUMNS = {
    RESULTS: (
        "setting",
        "arm",
        "optimizer",
        "seeds",
        "runs",
        "test_acc_at_best_val_mean",
        "test_acc_at_best_val_std",
        "test_acc_at_best_val_ci_low",
        "test_acc_at_best_val_ci_high",
        "final_train_loss_mean",
        "rank",
        "p_vs_best",
    ),
    VERDICTS: (
        "hypothesis",
        "title",
        "verdict",
        "rule",
        "study",
        "settings",
        "scope",
        "seeds",
        "why",
        "fixed_design_verdict",
        "exact_verdict",
    ),
    HYPOTHESES: ("hypothesis", "setting", "comparison", "p", "p (Holm)", "outcome"),
    FIDELITY: ("setting", "rung", "budget", "arm", "mean", "rank", "left_out"),
    FIDELITY_AGREEMENT: (  # each rung against the top (analysis/judging/fidelity.py), then the planner's columns
        "setting",
        "rung",
        "budget",
        "rung_seeds",
        "shared_seed_list",
        "top_seeds",
        "established_top",
        "smallest_p_holm_top",
        "budget_share",
        "order_kept",
        "orders_kept",
        "orders_reversed",
        "orders_undetermined",
        "keep_power",
        "resolution",
        "design_resolution",
        "faithful",
        "tau_b",
        "tau_low",
        "tau_high",
        "resolution_wanted",
        "seeds_to_establish",
        "seeds_for_resolution",
        "power_for_resolution",
        "seeds_to_keep",
        "power_to_keep",
        "planned_top",
        "tuned_by",
    ),
    # analysis/judging/validation_figures.py's Figure, one row each (analysis/writing/validation_tables.py)
    VALIDATION: (
        "study",
        "figure",
        "rule",
        "n",
        "measured",
        "mc_low",
        "mc_high",
        "hits",
        "trials",
        "claimed",
        "relation",
        "disagrees",
        "source",
        "note",
        "claimed_low",  # relation "within": the simulated range the measured figure should fall in
        "claimed_high",
    ),
    FIDELITY_TUNING: (  # analysis/judging/fidelity.py's tuned_settings
        "study",
        "optimizer",
        "epochs",
        "lr",
        "weight_decay",
        "lr_ratio_to_top",
        "weight_decay_ratio_to_top",
        "workload",
        "longest_tuning",  # the tuning of the same workload and settings with the most epochs: the ratios' base
    ),
    TUNING_BUDGET: (
        "workload",
        "study",
        "optimizer",
        "select_on",
        "higher_is_better",
        "trials",
        "diverged_or_failed",
        "at_chance",
        "not_ended",
        "k",
        "expected_best",
        "ci_low",
        "ci_high",
    ),
    TUNING_BUDGET_RANKS: (
        "workload",
        "study",
        "k",
        "rank",
        "optimizer",
        "expected_best",
        "ci_low",
        "ci_high",
        "trials",
        "order",
        "same_as_first",
    ),
    TUNING_BUDGET_PAIRS: (
        "workload",
        "study",
        "first",
        "second",
        "k_small",
        "difference_small",
        "ci_low_small",
        "ci_high_small",
        "k_large",
        "difference_large",
        "ci_low_large",
        "ci_high_large",
        "reversal",
    ),
    TUNING_BUDGET_COVERAGE: (
        "trials",
        "k",
        "truth",
        "coverage",
        "mc_low",
        "mc_high",
        "bias",
        "bias_se",
        "with_replacement_bias",
        "with_replacement_bias_se",
        "mean_width",
        "repetitions",
    ),
    CROSS_PARTS: ("workload", "study", "rung", "tuned_by", "runs", "completed", "planned", "status", "note"),
    CROSS_RANKING: ("workload", "optimizer", "higher_is_better", "completed", "mean", "ci_low", "ci_high", "rank"),
    CROSS_RANKS: ("optimizer",),  # then one column per ranked workload
    CROSS_TAU: ("workload_a", "workload_b", "tau", "low", "high", "interval"),
    CROSS_TARGETS: ("workload", "optimizer", "target", "runs", "reached", "median_steps", "ratio"),
    CROSS_PROFILE: ("optimizer", "workloads", "score"),
    CROSS_CLAIM_PARTS: ("claim", "workload", "hypothesis", "verdict", "seeds", "why"),
    CROSS_CLAIMS: ("claim", "title", "every_workload", "why"),  # and one column per workload
    CROSS_COST: ("workload", "main_runs", "main_hours", "tuning_runs", "tuning_hours", "total_hours"),
    TAU_COVERAGE: (
        "scenario",
        "true_tau",
        "optimizers",
        "seeds",
        "sd",
        "interval",
        "covered",
        "simulations",
        "coverage",
        "mc_low",
        "mc_high",
        "mean_width",
    ),
}
TEXT_TABLES = (VERDICTS, HYPOTHESES, CROSS_CLAIM_PARTS, CROSS_CLAIMS)


def robust_table(name: str) -> str:
    """The path of one robustness table (analysis/judging/robust_tables.py names them)."""
    return f"{TABLES}/{name}.csv"


WAY_OUT = "write it again with python src/aggregate.py (it was written by another optbench, or edited)"


def missing_columns(table: str, columns: Iterable[str]) -> list[str]:
    return [column for column in COLUMNS.get(table, ()) if column not in set(columns)]


def csv_text(table: str, frame: pd.DataFrame) -> str:
    """`frame` as `table`'s CSV; ValueError when it lacks a column readers rely on (a writer's bug)."""
    missing = missing_columns(table, frame.columns)
    if missing and len(frame.columns):  # an empty table (no rows, no columns) has nothing to read
        raise ValueError(f"{table} lacks the column(s) {', '.join(missing)} its readers rely on")
    return str(frame.to_csv(index=False))


def read(out_dir: Path, table: str) -> pd.DataFrame:
    """`table` of the aggregator's output folder `out_dir`, checked for the columns readers rely on."""
    return read_file(Path(out_dir) / table, table)


def read_file(path: Path, table: str) -> pd.DataFrame:
    """The CSV at `path`, read and checked as `table` (one of the paths above: its columns and its kind)."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False) if table in TEXT_TABLES else pd.read_csv(path)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as error:  # not CSV: copied mid-write, edited by hand
        raise DamagedRunFile(f"{path}: not readable as CSV ({type(error).__name__}): {WAY_OUT}") from error
    missing = missing_columns(table, frame.columns)
    if missing:
        raise DamagedRunFile(f"{path}: lacks the column(s) {', '.join(missing)}: {WAY_OUT}")
    return frame
