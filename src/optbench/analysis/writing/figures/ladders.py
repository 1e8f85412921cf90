"""One fidelity ladder's per-rung table (fidelity.py) against the budget: each optimizer's rank (a bump chart,
where a crossing is a reordering) and the headline metric's mean with its 95 % interval."""

import math

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from optbench.analysis.writing.figures.style import Style, finish, panel_grid, percent_axis, sentence


def rung_positions(per_rung: pd.DataFrame) -> tuple[list[str], list[float], bool]:
    """Rungs in budget order, their x positions (the budget, or 1, 2, 3 when a budget is unknown or two rungs share
    one, as a rung tuned at its own budget beside one tuned at another does), and whether x is the budget (then
    drawn on a log axis)."""
    rungs = per_rung.drop_duplicates("rung")[["rung", "budget"]]
    budgets = rungs["budget"].to_numpy(dtype=float)
    if np.isfinite(budgets).all() and (budgets > 0).all() and len(set(budgets)) == len(budgets):
        return list(rungs["rung"]), list(budgets), True
    return list(rungs["rung"]), list(range(1, len(rungs) + 1)), False


def rung_axis(axis, labels: list[str], positions: list[float], log: bool) -> None:
    if log:
        axis.set_xscale("log")
    axis.set_xticks(positions, [label.replace(", ", "\n") for label in labels])
    axis.minorticks_off()
    axis.set_xlabel("budget (rung; log scale of training compute)" if log else "budget (rung)")


def rung_lines(per_rung: pd.DataFrame, arms: list[str], where: dict):
    """(arm, x positions, its rows) for each arm with rows in the per-rung table: one line per optimizer."""
    for arm in arms:
        rows = per_rung[per_rung["arm"] == arm]
        if not rows.empty:
            yield arm, [where[rung] for rung in rows["rung"]], rows


def fidelity_ranks(per_rung: pd.DataFrame, arms: list[str], style: Style, setting: str):
    """Rank (1 = best) of each arm's mean at each rung: one line per optimizer; crossing lines are reorderings."""
    if per_rung.empty:
        return None
    labels, positions, log = rung_positions(per_rung)
    figure, (axis,) = panel_grid(1, (6.0, 3.6))
    handles = []
    for arm, x, rows in rung_lines(per_rung, arms, dict(zip(labels, positions))):
        axis.plot(x, rows["rank"], linewidth=2, markersize=6, **style.line(arm))
        handles.append(Line2D([], [], label=arm, **style.line(arm)))
    axis.invert_yaxis()
    top_rank = int(math.ceil(per_rung["rank"].max()))
    axis.set_yticks(range(1, top_rank + 1))
    axis.set_ylabel("rank of the mean (1 = best)")
    rung_axis(axis, labels, positions, log)
    return finish(
        figure,
        f"Rank against budget: {setting}\nEach line one optimizer; a crossing is a reordering "
        "(the flips table says whether it is significant)",
        handles,
    )


def fidelity_metric(per_rung: pd.DataFrame, arms: list[str], style: Style, setting: str, metric_label: str):
    """The headline metric's mean and 95 % interval (band) per rung, one line per optimizer, log budget axis."""
    if per_rung.empty:
        return None
    labels, positions, log = rung_positions(per_rung)
    figure, (axis,) = panel_grid(1, (6.0, 3.6))
    handles = []
    for arm, x, rows in rung_lines(per_rung, arms, dict(zip(labels, positions))):
        axis.plot(x, rows["mean"] * 100, linewidth=1.6, markersize=5, **style.line(arm))
        axis.fill_between(
            x, rows["ci_low"] * 100, rows["ci_high"] * 100, color=style.colour(arm), alpha=0.15, linewidth=0
        )
        handles.append(Line2D([], [], label=arm, **style.line(arm)))
    percent_axis(axis, metric_label)
    rung_axis(axis, labels, positions, log)
    return finish(
        figure,
        f"{sentence(metric_label)} against budget: {setting}\nLines: mean over seeds; bands: 95 % "
        "t interval of the mean (none where a rung has one seed)",
        handles,
    )
