"""Each workload's headline as the aggregator reads it: its runs-table column, direction, label and unit.

The workload registry (registry/workloads.py) names a workload's headline metric (`test/acc`, `val/loss`) and its
direction; the aggregator reads that number from a column of the runs table (load.py) and shows it in the
workload's own unit. `headline_of(name)` answers both in one record, so ranks, "p vs best", hypothesis
directions, tuning, fidelity and profiles read the direction here, never assume higher is better. Settings of
one workload share a headline (a setting belongs to one workload: its config names it); `headline_groups` splits
a folder's settings by headline, so a folder mixing workloads is computed workload by workload, and a folder of
CIFAR runs alone is computed exactly as before workloads existed.
"""

import math
from dataclasses import dataclass

import pandas as pd

from optbench.registry import workloads

# The runs-table column holding each registry headline at the selected epoch (load.headline_metrics), and each
# selection metric's value there (what an LR sweep's arm is chosen on: validation, never test).
HEADLINE_COLUMNS = {"test/acc": "test_acc_at_best_val", "val/loss": "val_loss_best"}
SELECTION_COLUMNS = {"val/acc": "val_acc_best", "val/loss": "val_loss_best"}
WORKLOAD_COLUMN = "workload"  # the runs table's column naming each run's workload


@dataclass(frozen=True)
class Headline:
    """The number a workload's tables report, and how to show and judge it."""

    workload: str
    metric: str  # the registry's metrics.jsonl key, e.g. val/loss
    column: str  # the runs-table column holding it, e.g. val_loss_best
    higher_is_better: bool
    label: str  # a table header without its unit
    unit: str  # '%' or 'nats/char'
    scale: float  # shown value = scale x stored value (accuracy: a fraction shown in %)
    difference_unit: str  # 'pp' or 'nats/char'

    @property
    def is_loss(self) -> bool:
        return not self.higher_is_better

    def chance(self, num_classes: float) -> float:
        """The headline of a model that guesses uniformly: 1/K accuracy, ln K nats of cross-entropy. A diverged or
        failed run without a recorded score counts at it (robust_tables.scored_runs)."""
        if not num_classes or not math.isfinite(num_classes):
            return math.nan
        return math.log(num_classes) if self.is_loss else 1.0 / num_classes

    @property
    def bounds(self) -> tuple[float, float]:
        """Where the headline can lie: an accuracy in [0, 1], a loss in [0, inf) (bootstrap intervals clip to it)."""
        return (0.0, math.inf) if self.is_loss else (0.0, 1.0)


def headline_of(workload_name: str) -> Headline:
    """The headline of the registry's workload `workload_name` (cifar_resnet18 for a run that names none)."""
    workload = workloads.describe(workload_name or workloads.DEFAULT)
    metric = workload.headline_metric
    column = HEADLINE_COLUMNS[metric.key]
    if metric.higher_is_better:
        return Headline(workload.name, metric.key, column, True, "test acc @ best val", "%", 100.0, "pp")
    unit = "nats/char" if "per character" in metric.meaning else "nats"
    return Headline(workload.name, metric.key, column, False, "val loss @ best val", unit, 1.0, unit)


DEFAULT = headline_of(workloads.DEFAULT)


def selection_of(workload_name: str) -> tuple[str, bool]:
    """(the runs-table column a workload's best epoch is chosen on, whether higher is better there)."""
    workload = workloads.describe(workload_name or workloads.DEFAULT)
    return SELECTION_COLUMNS[workload.selection], workload.selection_metric.higher_is_better


def workload_of_runs(runs: pd.DataFrame) -> str:
    """The workload of these runs (one setting's: the first named; the default when none is)."""
    names = runs[WORKLOAD_COLUMN].dropna() if WORKLOAD_COLUMN in runs else pd.Series(dtype=object)
    return str(names.iloc[0]) if len(names) else workloads.DEFAULT


def workload_of_setting(runs: pd.DataFrame, setting: str) -> str:
    """The workload of a setting's runs (each setting belongs to one: the workload key separates settings)."""
    return workload_of_runs(runs[runs["setting"] == setting])


def headline_groups(runs: pd.DataFrame, settings: list[str]) -> list[tuple[Headline, list[str]]]:
    """The settings split by their workload's headline, each group in `settings` order, groups in the order their
    first setting comes: one group (the default) for a folder of CIFAR runs."""
    groups: dict[str, list[str]] = {}
    for setting in settings:
        groups.setdefault(workload_of_setting(runs, setting), []).append(setting)
    if not groups:
        return [(DEFAULT, [])]
    return [(headline_of(name), members) for name, members in groups.items()]


def is_default_only(runs: pd.DataFrame) -> bool:
    """Every run is the default workload's: tables keep exactly the columns they had before workloads existed."""
    return WORKLOAD_COLUMN not in runs or bool(
        (runs[WORKLOAD_COLUMN].fillna(workloads.DEFAULT) == workloads.DEFAULT).all()
    )
