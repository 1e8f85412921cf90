"""Performance profiles across settings (Dolan and More 2002): per optimizer, the fraction of settings where it
reaches the validation target within tau times the best optimizer's cost, in epochs and in wall-clock seconds."""

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from optbench.analysis.writing.figures.style import Style, finish, panel_grid, percent_axis


def performance_profiles(runs: pd.DataFrame, settings: list[str], arms: list[str], style: Style):
    """Dolan-More profiles, epochs and seconds to the target: per arm, the fraction of settings solved within
    tau x the best arm's cost. None when fewer than two arms share a setting."""
    from optbench.analysis.judging.robust_tables import costs, profile

    tables = {
        cost: costs(runs, column, settings, arms).dropna(how="all")
        for cost, column in (("epochs", "epochs_to_target"), ("wall-clock seconds", "seconds_to_target"))
    }
    if len(arms) < 2 or not any(len(table) for table in tables.values()):
        return None
    figure, axes = panel_grid(2)
    widths = profile_widths(len(arms))
    for axis, (cost, table) in zip(axes, tables.items()):
        ratios = table.div(table.min(axis=1), axis=0).to_numpy()
        largest = float(np.nanmax(ratios[np.isfinite(ratios)], initial=1.0))
        taus = np.geomspace(1.0, max(2.0, 1.2 * largest), 200)
        curves = profile(table, taus)
        for arm, width in zip(arms, widths):
            axis.step(
                taus,
                100 * curves.loc[arm].to_numpy(),
                where="post",
                label=arm,
                **{**style.line(arm), "marker": None, "linewidth": width},
            )
        axis.set_ylim(-3, 103)
        if not np.isfinite(table.to_numpy()).any():  # a flat line at 0 would look like a result
            axis.text(
                0.5,
                0.5,
                "no run reached the target:\nlower --target-acc",
                transform=axis.transAxes,
                ha="center",
                va="center",
                fontsize=9,
                color="dimgrey",
            )
        axis.set_xlabel("tau: cost relative to the best optimizer's (ratio)")
        percent_axis(axis, "settings reached within tau (%)")
        axis.set_title(f"{cost} to the target")
    handles = [Line2D([], [], label=arm, **{**style.line(arm), "marker": None, "linewidth": 2}) for arm in arms]
    return finish(
        figure,
        "Performance profiles across settings\nhigher and further left is better; cost = median "
        "over seeds, a run that never reaches the target, diverges or fails costs infinity; "
        "lines drawn thick to thin so that equal ones stay visible",
        handles,
    )


def profile_widths(count: int) -> list[float]:
    """Line widths, first arm widest: a later arm's curve drawn over an equal one leaves its edges showing."""
    step = min(1.1, 4.4 / max(count - 1, 1))  # never wider than 5.7 pt, however many arms
    return list(np.linspace(1.3 + step * max(count - 1, 0), 1.3, count)) if count else []
