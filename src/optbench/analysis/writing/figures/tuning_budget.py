"""The tuning-budget figure (scripts/tuning_budget.py): one panel per tuning study (a workload), each optimizer's
expected best validation score after k trials (analysis/judging/tuning_budget.py's curve table) with its interval
as a band, k on a log-2 axis; accuracies in %, a loss in nats (lower is better: the panel says so)."""

import matplotlib.ticker
import pandas as pd
from matplotlib.lines import Line2D

from optbench.analysis.groups import optimizer_rank
from optbench.analysis.writing.figures.style import finish, optimizer_colours, panel_grid

SCORE_NAMES = {
    "val_acc_best": "best validation accuracy (%)",
    "final_val_acc": "final validation accuracy (%)",
    "val_loss_best": "best validation loss (nats), lower is better",
    "final_val_loss": "final validation loss (nats), lower is better",
}
BAND_ALPHA = 0.15


def tuning_budget_figure(curves: pd.DataFrame):
    """The figure of a curve table with at least one row (one panel per (workload, study))."""
    panels = list(curves.groupby(["workload", "study"], sort=False))
    colours = optimizer_colours(curves["optimizer"])
    figure, axes = panel_grid(len(panels))
    for axis, ((workload, study), rows) in zip(axes, panels):
        draw_panel(axis, rows, colours)
        axis.set_title(f"{workload} ({study}, {rows['trials'].max()} trials)")
    names = sorted(curves["optimizer"].unique(), key=optimizer_rank)
    handles = [Line2D([], [], color=colours[name], marker="o", markersize=3, label=name) for name in names]
    title = (
        "Expected best validation score after k tuning trials (Tang et al. 2020's unbiased estimator)\n"
        "Bands: bias-corrected bootstrap intervals over the trials (coverage measured on the page); "
        "diverged trials count at their recorded score or chance"
    )
    return finish(figure, title, handles)


def draw_panel(axis, rows: pd.DataFrame, colours: dict) -> None:
    select_on = str(rows["select_on"].iloc[0])
    scale = 100.0 if bool(rows["higher_is_better"].iloc[0]) else 1.0  # an accuracy in %, a loss as itself
    for name, curve in sorted(rows.groupby("optimizer"), key=lambda item: optimizer_rank(item[0])):
        curve = curve.sort_values("k")
        colour = colours[name]
        axis.plot(curve["k"], scale * curve["expected_best"], color=colour, marker="o", markersize=2.5, linewidth=1.3)
        axis.fill_between(
            curve["k"], scale * curve["ci_low"], scale * curve["ci_high"], color=colour, alpha=BAND_ALPHA, linewidth=0
        )
    axis.set_xscale("log", base=2)
    axis.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_xlabel("tuning trials k")
    axis.set_ylabel(SCORE_NAMES.get(select_on, select_on))
