"""The headline accuracy as points and intervals: per optimizer (each seed a dot, the mean with its 95 % CI), and
against the label-noise rate, the learning rate (an LR sweep) and the wall time per run."""

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from optbench.analysis.groups import noise_label, optimizer_rank
from optbench.analysis.statistics.summaries import describe
from optbench.analysis.writing.figures.style import (
    LINE_STYLES,
    PANEL_SIZE,
    Style,
    clipped_error,
    finish,
    panel_grid,
    percent_axis,
    sentence,
    wrap,
)
from optbench.durations import duration_unit
from optbench.formats.run_summary import COMPLETED


def final_accuracy(
    runs: pd.DataFrame, settings: list[str], arms: list[str], style: Style, metric: str, metric_label: str
):
    """Per setting: each seed as a dot, the mean with its 95 % CI as a bar; non-completed runs counted."""
    if not settings:
        return None
    most_arms = max(runs.loc[runs["setting"] == setting, "arm"].nunique() for setting in settings)
    width = max(PANEL_SIZE[0], 0.75 * most_arms + 0.8)  # room for every optimizer's name under its column
    figure, axes = panel_grid(len(settings), (width, PANEL_SIZE[1] + 0.3), columns=max(1, int(14 // width)))
    for axis, setting in zip(axes, settings):
        in_setting = runs[runs["setting"] == setting]
        present = [arm for arm in arms if arm in set(in_setting["arm"])]
        for position, arm in enumerate(present):
            group = in_setting[in_setting["arm"] == arm]
            draw_seed_dots(axis, position, group, metric, arm, style)
        axis.set_xticks(range(len(present)), [tick_label(in_setting, arm) for arm in present], fontsize=8)
        for text, arm in zip(axis.get_xticklabels(), present):
            text.set_color(style.colour(arm))
        axis.set_xlim(-0.6, len(present) - 0.4)
        axis.set_xlabel("optimizer")
        axis.grid(axis="x", visible=False)
        axis.set_title(wrap(setting))
        percent_axis(axis, metric_label)
    # The names are under the columns in each optimizer's colour: the legend only explains the marks.
    legend = [
        Line2D([], [], color="grey", marker="o", linestyle="none", markersize=5, label="one completed seed"),
        Line2D([], [], color="black", marker="_", markersize=12, linestyle="-", label="mean and 95% CI"),
    ]
    return finish(
        figure,
        f"{sentence(metric_label)} per optimizer\nruns not completed are counted under the name, never averaged",
        legend,
    )


def draw_seed_dots(axis, position: int, group: pd.DataFrame, metric: str, arm: str, style: Style) -> None:
    done = group[group["status"] == COMPLETED]
    values = 100 * done[metric].dropna().to_numpy()
    jitter = np.linspace(-0.12, 0.12, len(values)) if len(values) > 1 else np.zeros(len(values))
    axis.scatter(
        position + jitter,
        values,
        color=style.colour(arm),
        s=22,
        alpha=0.85,
        zorder=3,
        marker=style.line(arm)["marker"],
        edgecolor="white",
        linewidth=0.5,
    )
    summary = describe(values)
    if summary.n:
        half = summary.half_width if np.isfinite(summary.half_width) else 0
        axis.errorbar(
            position + 0.25,
            summary.mean,
            yerr=clipped_error([summary.mean], [half]),
            color="black",
            marker="_",
            markersize=12,
            capsize=3,
            linewidth=1.2,
            zorder=4,
        )


def tick_label(in_setting: pd.DataFrame, arm: str) -> str:
    """'adam\nlr=0.003\n1 diverged': the optimizer, its variant, and any runs that did not complete."""
    group = in_setting[in_setting["arm"] == arm]
    missing = group[group["status"] != COMPLETED]["status"].value_counts()
    lines = arm.split(" ", 1) + [f"{count} {status}" for status, count in missing.items()]
    return "\n".join(lines)


# ---- against noise rate, learning rate and wall time ---------------------------------------------------


def base_setting(runs: pd.DataFrame) -> pd.Series:
    """The setting without its noise part: 'cifar10' or 'cifar10, epochs=100'."""

    def strip(row) -> str:
        return row["setting"].replace(f", {noise_label(row['noise'], row['noise_rate'], row.get('label_set'))}", "", 1)

    return runs.apply(strip, axis=1)


def accuracy_vs_noise(runs: pd.DataFrame, arms: list[str], style: Style, metric: str, metric_label: str):
    runs = runs.assign(base=base_setting(runs))
    bases = [base for base in dict.fromkeys(runs["base"]) if runs.loc[runs["base"] == base, "noise_rate"].nunique() > 1]
    if not bases:
        return None
    figure, axes = panel_grid(len(bases))
    used_arms, kinds_seen = [], set()
    for axis, base in zip(axes, bases):
        here = runs[(runs["base"] == base) & (runs["status"] == COMPLETED)]
        kinds = sorted(set(here.loc[here["noise_rate"] > 0, "noise"]))
        kinds_seen.update(kinds)
        present = [arm for arm in arms if arm in set(here["arm"])]
        dodge = 0.012 * 100 * here["noise_rate"].max()  # spread error bars of one rate so they do not overlap
        for arm_index, arm in enumerate(present):
            shift = dodge * (arm_index - (len(present) - 1) / 2)
            for kind_index, kind in enumerate(kinds):
                cells = here[(here["arm"] == arm) & ((here["noise"] == kind) | (here["noise_rate"] == 0))]
                points = [(rate, describe(group[metric])) for rate, group in cells.groupby("noise_rate")]
                if not points:
                    continue
                rates = [100 * rate + shift for rate, _ in points]
                means = [100 * summary.mean for _, summary in points]
                halves = [100 * np.nan_to_num(summary.half_width) for _, summary in points]
                axis.errorbar(
                    rates,
                    means,
                    yerr=clipped_error(means, halves),
                    color=style.colour(arm),
                    marker=style.line(arm)["marker"],
                    linestyle=LINE_STYLES[kind_index % len(LINE_STYLES)],
                    capsize=3,
                    linewidth=1.6,
                    markersize=5,
                )
            if arm not in used_arms:
                used_arms.append(arm)
        axis.set_xticks(sorted({100 * rate for rate in here["noise_rate"]}))
        axis.set_xlabel("training labels flipped (%)")
        percent_axis(axis, metric_label)
        axis.set_title(wrap(base))
    kinds = sorted(kinds_seen)
    extra = (
        [
            Line2D([], [], color="grey", linestyle=LINE_STYLES[i % len(LINE_STYLES)], label=f"{kind} noise")
            for i, kind in enumerate(kinds)
        ]
        if len(kinds) > 1
        else []
    )
    return finish(
        figure,
        f"{sentence(metric_label)} vs label-noise rate\nmean over completed seeds, bars = 95% CI",
        [Line2D([], [], color=style.colour(arm), marker=style.line(arm)["marker"], label=arm) for arm in used_arms],
        extra,
    )


LR_KEY = "cfg.optimizer.lr"


def accuracy_vs_lr(runs: pd.DataFrame, settings: list[str], style: Style, metric: str, metric_label: str):
    """Only when an LR sweep is present: some optimizer has more than one lr within a setting."""
    if LR_KEY not in runs:
        return None
    swept = [
        setting
        for setting in settings
        if (runs[runs["setting"] == setting].groupby("optimizer")[LR_KEY].nunique() > 1).any()
    ]
    if not swept:
        return None
    figure, axes = panel_grid(len(swept))
    used = []
    for axis, setting in zip(axes, swept):
        here = runs[(runs["setting"] == setting) & (runs["status"] == COMPLETED)]
        for optimizer in sorted(set(here["optimizer"]), key=optimizer_rank):
            cells = here[here["optimizer"] == optimizer]
            points = sorted((float(lr), describe(group[metric])) for lr, group in cells.groupby(LR_KEY))
            colour = style.colours[str(optimizer)]
            axis.errorbar(
                [lr for lr, _ in points],
                [100 * s.mean for _, s in points],
                yerr=clipped_error([100 * s.mean for _, s in points], [100 * s.half_width for _, s in points]),
                color=colour,
                marker="o",
                capsize=3,
                linewidth=1.6,
                markersize=5,
            )
            if optimizer not in used:
                used.append(optimizer)
        axis.set_xscale("log")  # learning rates are swept over decades
        axis.set_xlabel("peak learning rate (log scale)")
        percent_axis(axis, metric_label)
        axis.set_title(wrap(setting))
    handles = [Line2D([], [], color=style.colours[str(name)], marker="o", label=str(name)) for name in used]
    return finish(
        figure, f"{sentence(metric_label)} vs learning rate\nmean over completed seeds, bars = 95% CI", handles
    )


def accuracy_vs_wall_time(
    runs: pd.DataFrame, settings: list[str], arms: list[str], style: Style, metric: str, metric_label: str
):
    done = runs[(runs["status"] == COMPLETED) & runs["wall_time_s"].notna() & runs[metric].notna()]
    settings = [setting for setting in settings if setting in set(done["setting"])]
    if not settings:
        return None
    figure, axes = panel_grid(len(settings))
    used = []
    for axis, setting in zip(axes, settings):
        here = done[done["setting"] == setting]
        unit, seconds_per_unit = duration_unit(here["wall_time_s"].max())
        for arm in [arm for arm in arms if arm in set(here["arm"])]:
            group = here[here["arm"] == arm]
            durations, accuracy = group["wall_time_s"] / seconds_per_unit, 100 * group[metric]
            axis.scatter(
                durations, accuracy, color=style.colour(arm), marker=style.line(arm)["marker"], s=20, alpha=0.5
            )
            axis.scatter(
                [durations.mean()],
                [accuracy.mean()],
                color=style.colour(arm),
                marker=style.line(arm)["marker"],
                s=80,
                edgecolor="black",
                linewidth=0.8,
                zorder=3,
            )
            if arm not in used:
                used.append(arm)
        durations = here["wall_time_s"]
        log_axis = durations.min() > 0 and durations.max() / durations.min() > 20  # spread over decades
        if log_axis:
            axis.set_xscale("log")
        else:
            axis.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(nbins=5))
        # Every axis names its unit, whatever the spread.
        axis.set_xlabel(f"wall time per run ({unit}, log scale)" if log_axis else f"wall time per run ({unit})")
        percent_axis(axis, metric_label)
        axis.set_title(wrap(setting))
    extra = [
        Line2D([], [], color="grey", marker="o", markersize=4, alpha=0.5, linestyle="none", label="one seed"),
        Line2D([], [], color="grey", marker="o", markersize=8, markeredgecolor="black", linestyle="none", label="mean"),
    ]
    return finish(
        figure,
        f"{sentence(metric_label)} vs wall time\ncompleted runs",
        [
            Line2D([], [], color=style.colour(arm), marker=style.line(arm)["marker"], linestyle="none", label=arm)
            for arm in used
        ],
        extra,
    )
