"""Time-to-target thresholds: which metric each workload's runs must reach, the value, and the checks on it.

A workload's target crosses in its metric's direction: an accuracy target is reached when validation accuracy
rises to it, a loss target when validation loss falls to it (registry/workloads.py `target`). The aggregator's
two flags set them: `--target-acc` every accuracy workload's (default 0.9, as before workloads existed), and
`--target-loss` every loss workload's (default: the workload's registry target, char_lm's 2.2 nats/char). A
flag that no workload in the folder reads, or a loss threshold on the wrong side (every run starts at or below
it, so every run "reaches" it at its first evaluation), is a ConfigError of one line naming the fix. (An accuracy
target every run starts above stays allowed: folders and tests have long used low ones.)
"""

from dataclasses import dataclass

import pandas as pd

from optbench.errors import ConfigError
from optbench.formats.metrics_log import VAL_ACC
from optbench.registry import workloads

DEFAULT_TARGET_ACC = 0.9  # the aggregator's validation-accuracy target since before workloads existed


@dataclass(frozen=True)
class Targets:
    """The thresholds the user asked for; None: not given (each workload's default)."""

    acc: float | None = None
    loss: float | None = None


@dataclass(frozen=True)
class Target:
    """One workload's time-to-target threshold."""

    metric: str  # metrics.jsonl key, e.g. val/acc, val/loss
    value: float
    higher_is_better: bool
    flag: str  # the aggregator flag that sets it
    given: bool  # set by the user (checked against the runs), not a default

    def reached(self, value: float) -> bool:
        return value >= self.value if self.higher_is_better else value <= self.value

    @property
    def text(self) -> str:
        """'val acc ≥ 90%' or 'val loss ≤ 2.2' for a column header."""
        name = self.metric.replace("/", " ")
        if self.higher_is_better:
            return f"{name} ≥ {100 * self.value:g}%"
        return f"{name} ≤ {self.value:g}"


def target_for(workload_name: str, targets: Targets) -> Target:
    """The threshold of `workload_name`'s runs: --target-acc for an accuracy workload, --target-loss (else the
    registry's target) for a loss workload."""
    workload = workloads.describe(workload_name or workloads.DEFAULT)
    if workload.headline_metric.higher_is_better:
        value = DEFAULT_TARGET_ACC if targets.acc is None else targets.acc
        return Target(VAL_ACC, value, True, "--target-acc", targets.acc is not None)
    registry = workload.target
    value = registry.value if targets.loss is None else targets.loss
    higher = workload.metric(registry.metric).higher_is_better
    return Target(registry.metric, value, higher, "--target-loss", targets.loss is not None)


def check_targets(runs: pd.DataFrame, curves: pd.DataFrame, targets: Targets) -> None:
    """ConfigError when a flag given reads no workload here, or its threshold lies on the wrong side: every run
    of the workloads it sets starts already past it (their first evaluation)."""
    names = set(runs["workload"].fillna(workloads.DEFAULT)) if "workload" in runs and len(runs) else set()
    if not names:
        return
    for flag, given, wanted in (("--target-acc", targets.acc, True), ("--target-loss", targets.loss, False)):
        if given is None:
            continue
        mine = sorted(name for name in names if workloads.describe(name).headline_metric.higher_is_better == wanted)
        if not mine:
            other = "--target-loss" if wanted else "--target-acc"
            raise ConfigError(
                f"{flag} {given:g}: no {'accuracy' if wanted else 'loss'} workload here (the runs are "
                f"{', '.join(sorted(names))}, whose headline is {'a loss' if wanted else 'an accuracy'}): give {other}"
            )
        for name in mine if not wanted else ():  # an accuracy target below every start stays allowed, as before
            check_side(name, target_for(name, targets), runs, curves)


def check_side(name: str, target: Target, runs: pd.DataFrame, curves: pd.DataFrame) -> None:
    """Every run of `name` with a curve already past `target` at its first evaluation: the threshold is on the
    wrong side for the metric's direction."""
    ids = runs.loc[runs["workload"].fillna(workloads.DEFAULT) == name, "run_id"]
    mine = curves[curves["run_id"].isin(set(ids))] if "run_id" in curves else curves.iloc[0:0]
    if target.metric not in mine or not len(mine):
        return
    firsts = mine.sort_values("epoch").groupby("run_id")[target.metric].first().astype(float).dropna()
    if not len(firsts) or not all(target.reached(value) for value in firsts):
        return
    worst = float(firsts.min() if target.higher_is_better else firsts.max())
    side, fix = ("at or above", "above") if target.higher_is_better else ("at or below", "below")
    direction = "higher is better" if target.higher_is_better else "lower is better"
    raise ConfigError(
        f"{target.flag} {target.value:g} is on the wrong side for {name}'s {target.metric} ({direction}): every run "
        f"starts {side} it, so every run reaches it at once; give a target {fix} {worst:.4g}"
    )
