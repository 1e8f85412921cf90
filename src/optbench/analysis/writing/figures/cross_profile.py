"""The cross-workload performance profile (AlgoPerf's form): per optimizer, rho(tau), the fraction of workloads on
which its median steps to the workload's target are within tau times the best optimizer's, for tau in [1, r_max],
with its integrated score in the legend."""

import math

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from optbench.analysis.statistics.profile_score import R_MAX, profile, profile_score
from optbench.analysis.writing.figures.profiles import profile_widths
from optbench.analysis.writing.figures.style import finish, optimizer_colours, panel_grid, percent_axis

POINTS = 400  # taus drawn between 1 and r_max: fine enough for a step at any ratio to show where it is


def cross_profile(costs: pd.DataFrame, r_max: float = R_MAX):
    """The profile of a workloads x optimizers table of median steps to target; None with no workload."""
    if not len(costs):
        return None
    names = [str(name) for name in costs.columns]
    values = costs.to_numpy(dtype=float)
    taus = np.linspace(1.0, r_max, POINTS)
    curves, scores = profile(values, taus), profile_score(values, r_max)
    colours = optimizer_colours(names)
    figure, (axis,) = panel_grid(1, panel_size=(6.4, 3.6))
    handles = []
    for index, (name, width) in enumerate(zip(names, profile_widths(len(names)))):
        label = f"{name} (score {scores[index]:.2f})" if math.isfinite(scores[index]) else name
        axis.step(taus, 100 * curves[index], where="post", color=colours[name], linewidth=width, label=label)
        handles.append(Line2D([], [], color=colours[name], linewidth=2, label=label))
    axis.set_xlim(1.0, r_max)
    axis.set_ylim(-3, 103)
    axis.set_xlabel("tau: median steps to the target relative to the best optimizer's")
    percent_axis(axis, f"workloads within tau (%), of {len(costs)}")
    return finish(
        figure,
        f"Time to target in steps across {', '.join(map(str, costs.index))}: performance profile\n"
        f"higher and further left is better; score = area under the profile up to tau = {r_max:g}, over "
        f"{r_max - 1:g} (AlgoPerf); a run that never reaches the target costs infinity",
        handles,
    )
