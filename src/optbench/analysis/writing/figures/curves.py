"""Curves over epochs, one figure per setting: the learning curves (training loss, validation and test accuracy;
a language model's training and validation loss and validation bits per character, over its evaluations) and the
memorization curves of the noisy training samples; mean over completed seeds with a ±1 sd band, each run
that did not complete a dotted line of its own."""

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from optbench.analysis.headline import workload_of_setting
from optbench.analysis.writing.figures.style import Style, finish, panel_grid, percent_axis
from optbench.formats import metrics_log
from optbench.formats.run_summary import COMPLETED
from optbench.registry import workloads


def mean_band(curves: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per epoch: mean and sd over runs, and how many runs have the epoch."""
    values = curves[["epoch", column]].replace([np.inf, -np.inf], np.nan).dropna()
    return values.groupby("epoch")[column].agg(["mean", "std", "count"]).reset_index()


def draw_mean_band(
    axis,
    curves: pd.DataFrame,
    column: str,
    arm: str,
    style: Style,
    scale: float = 1.0,
    bounds: tuple[float, float] = (-np.inf, np.inf),
) -> bool:
    band = mean_band(curves, column)
    if not len(band):
        return False
    line = style.line(arm)
    axis.plot(band["epoch"], scale * band["mean"], color=line["color"], linestyle=line["linestyle"], linewidth=1.8)
    spread = band["std"].fillna(0)
    axis.fill_between(
        band["epoch"],
        np.clip(scale * (band["mean"] - spread), *bounds),
        np.clip(scale * (band["mean"] + spread), *bounds),
        color=line["color"],
        alpha=0.18,
        linewidth=0,
    )
    return True


def draw_unfinished(axis, curves: pd.DataFrame, column: str, arm: str, style: Style, scale: float = 1.0) -> bool:
    """Each run that did not complete: a thin dotted line ending in an x (not part of the mean)."""
    drawn = False
    for _, run_curve in curves.groupby("run_id"):
        values = run_curve[["epoch", column]].replace([np.inf, -np.inf], np.nan).dropna()
        if not len(values):
            continue
        axis.plot(values["epoch"], scale * values[column], color=style.colour(arm), linestyle=":", linewidth=1)
        axis.plot(
            values["epoch"].iloc[-1:],
            scale * values[column].iloc[-1:],
            color=style.colour(arm),
            marker="x",
            markersize=6,
            linestyle="none",
        )
        drawn = True
    return drawn


def split_curves(runs: pd.DataFrame, curves: pd.DataFrame, setting: str, arm: str):
    chosen = runs[(runs["setting"] == setting) & (runs["arm"] == arm)]
    done = set(chosen.loc[chosen["status"] == COMPLETED, "run_id"])
    others = set(chosen["run_id"]) - done
    return curves[curves["run_id"].isin(done)], curves[curves["run_id"].isin(others)], len(done)


CURVE_PANELS = [
    (metrics_log.TRAIN_LOSS, "training loss (cross-entropy, nats)", 1.0, True),
    (metrics_log.VAL_ACC, "validation accuracy (%)", 100.0, False),
    (metrics_log.TEST_ACC, "test accuracy (%)", 100.0, False),
]
# A loss workload's (char_lm's) metrics: lower is better in every panel.
LOSS_CURVE_PANELS = [
    (metrics_log.TRAIN_LOSS, "training loss (nats/char)", 1.0, True),
    (metrics_log.VAL_LOSS, "validation loss (nats/char)", 1.0, False),
    ("val/bpc", "validation bits per character", 1.0, False),
]


def curve_panels(workload_name: str) -> tuple[list, str]:
    """(the panels of a workload's learning curves, the x axis's label): a step-budgeted workload's "epoch" is an
    evaluation period of dataset.steps_per_epoch steps."""
    workload = workloads.describe(workload_name)
    panels = CURVE_PANELS if workload.headline_metric.higher_is_better else LOSS_CURVE_PANELS
    return (
        panels,
        "evaluation (every dataset.steps_per_epoch steps)" if workload.budget_unit == workloads.STEPS else "epoch",
    )


def learning_curves(runs: pd.DataFrame, curves: pd.DataFrame, setting: str, arms: list[str], style: Style):
    present = [arm for arm in arms if arm in set(runs.loc[runs["setting"] == setting, "arm"])]
    all_panels, x_label = curve_panels(workload_of_setting(runs, setting))
    panels = [panel for panel in all_panels if panel[0] in curves]
    if not present or not panels or not len(curves):
        return None
    figure, axes = panel_grid(len(panels))
    handles, any_unfinished = [], False
    for arm in present:
        done, unfinished, n_done = split_curves(runs, curves, setting, arm)
        for axis, (column, _, scale, _) in zip(axes, panels):
            draw_mean_band(axis, done, column, arm, style, scale, (0.0, 100.0) if scale == 100.0 else (0.0, np.inf))
            any_unfinished |= draw_unfinished(axis, unfinished, column, arm, style, scale)
        handles.append(
            Line2D(
                [],
                [],
                color=style.colour(arm),
                linestyle=style.line(arm)["linestyle"],
                linewidth=2,
                label=f"{arm} (n={n_done})",
            )
        )
    for axis, (column, label, _, log_scale) in zip(axes, panels):
        axis.set_xlabel(x_label)
        axis.set_ylabel(label)
        axis.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        values = curves[column].replace([np.inf, -np.inf], np.nan).dropna()
        if log_scale and len(values) and values.min() > 0 and values.max() / values.min() > 10:  # a decade or more
            axis.set_yscale("log")
            axis.set_ylabel(label.replace(")", ", log scale)"))
    extra = (
        [Line2D([], [], color="grey", linestyle=":", marker="x", label="run not completed (not in mean)")]
        if any_unfinished
        else []
    )
    return finish(figure, f"Learning curves: {setting}\nline = mean over completed seeds, band = ±1 sd", handles, extra)


MEMORIZATION_PANELS = [
    ("noisy/fit_noisy_label", "flipped samples fit to their wrong label (%)"),
    ("noisy/fit_clean_label", "flipped samples fit to their true label (%)"),
]


def memorization_curves(runs: pd.DataFrame, curves: pd.DataFrame, setting: str, arms: list[str], style: Style):
    """How the noisy training samples are fit over epochs: the memorization curve of label-noise papers."""
    if not all(column in curves for column, _ in MEMORIZATION_PANELS):
        return None
    in_setting = runs[runs["setting"] == setting]
    if curves.loc[curves["run_id"].isin(in_setting["run_id"]), MEMORIZATION_PANELS[0][0]].notna().sum() == 0:
        return None
    figure, axes = panel_grid(len(MEMORIZATION_PANELS))
    handles = []
    for arm in [arm for arm in arms if arm in set(in_setting["arm"])]:
        done, _, n_done = split_curves(runs, curves, setting, arm)
        drawn = [
            draw_mean_band(axis, done, column, arm, style, 100.0, (0.0, 100.0))
            for axis, (column, _) in zip(axes, MEMORIZATION_PANELS)
        ]
        if any(drawn):
            handles.append(
                Line2D(
                    [],
                    [],
                    color=style.colour(arm),
                    linestyle=style.line(arm)["linestyle"],
                    linewidth=2,
                    label=f"{arm} (n={n_done})",
                )
            )
    for axis, (_, label) in zip(axes, MEMORIZATION_PANELS):
        axis.set_xlabel("epoch")
        percent_axis(axis, label)
        axis.set_ylim(-2, 102)
        axis.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    return finish(figure, f"Memorization of noisy labels: {setting}\nmean over completed seeds, band = ±1 sd", handles)
