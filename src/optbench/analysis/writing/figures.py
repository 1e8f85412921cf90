"""Figures for the report, drawn with matplotlib's Agg backend (no display needed).

Each function takes the labelled run table (and the per-epoch curves where needed) and returns a
matplotlib Figure, or None when the data for it is absent (no noisy runs, no LR sweep). Conventions
kept across every figure so they read at a glance:
- one fixed colour per optimizer (sgd, adam, adamw, lion, muon; others take the next palette colours),
  line style and marker tell variants of one optimizer apart (an LR sweep);
- accuracies in %, epochs on x, units in every axis label, the legend outside the data area;
- means use completed runs only; runs that did not complete are drawn apart (dotted, or counted in
  the panel) and are said to be excluded.
`tuning_search` draws one tuning study's search (tuning_report.py's records), not runs;
`fidelity_ranks` (a bump chart) and `fidelity_metric` draw one fidelity ladder's per-rung table (fidelity.py).
"""

import math
import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: files only, works on headless machines
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.typing import LineStyleType

from optbench.analysis.groups import KNOWN_OPTIMIZERS, noise_label, optimizer_rank
from optbench.analysis.judging.tuning_report import TuningStudy
from optbench.analysis.load import number
from optbench.analysis.statistics.summaries import describe
from optbench.durations import duration_unit
from optbench.formats import metrics_log
from optbench.formats.run_summary import COMPLETED
from optbench.formats.tuning_record import Bounds, Budget, OptimizerTuning, Winner
from optbench.formats.tuning_record import Trial as TuningTrial
from optbench.registry import datasets

TAB10 = tuple(matplotlib.color_sequences["tab10"])
FIXED_COLOURS = dict(zip(KNOWN_OPTIMIZERS, TAB10[:5]))  # sgd blue, adam orange, adamw green, lion red, muon purple
EXTRA_COLOURS = TAB10[5:] + tuple(matplotlib.color_sequences["Dark2"])
# Dotted (":") is kept for runs that did not complete, so variants never use it.
LINE_STYLES: list[LineStyleType] = ["-", "--", "-.", (0, (6, 2, 1, 2, 1, 2))]
MARKERS = ["o", "s", "^", "D", "v", "P"]
PANEL_SIZE = (4.6, 3.4)  # inches per panel: readable when the PNG is shown at page width
MAX_COLUMNS = 3
plt.rcParams.update(
    {
        "font.size": 9,
        "axes.titlesize": 9.5,
        "axes.labelsize": 9,
        "legend.fontsize": 8.5,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
)


def optimizer_colours(names) -> dict:
    """The five studied optimizers' fixed colours, then the next palette colours for any other, by name."""
    extra = [name for name in sorted(set(names), key=optimizer_rank) if name not in FIXED_COLOURS]
    return {**FIXED_COLOURS, **{name: EXTRA_COLOURS[i % len(EXTRA_COLOURS)] for i, name in enumerate(extra)}}


class Style:
    """Colour per optimizer, line style and marker per variant of that optimizer; fixed for the whole report."""

    def __init__(self, runs: pd.DataFrame, arms: list[str]):
        self.colours = optimizer_colours(runs["optimizer"].map(str))
        arm_optimizer = dict(zip(runs["arm"], runs["optimizer"].map(str)))
        self.arm_optimizer = {arm: arm_optimizer[arm] for arm in arms}
        self.variant = {}
        for arm in arms:
            siblings = [other for other in arms if self.arm_optimizer[other] == self.arm_optimizer[arm]]
            self.variant[arm] = siblings.index(arm)

    def colour(self, arm: str):
        return self.colours[self.arm_optimizer[arm]]

    def line(self, arm: str) -> dict:
        variant = self.variant[arm]
        return {
            "color": self.colour(arm),
            "linestyle": LINE_STYLES[variant % len(LINE_STYLES)],
            "marker": MARKERS[variant % len(MARKERS)],
        }


def panel_grid(count: int, panel_size=PANEL_SIZE, columns: int = MAX_COLUMNS):
    columns = max(1, min(columns, count))
    rows = math.ceil(count / columns)
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(panel_size[0] * columns, panel_size[1] * rows + 0.6),
        squeeze=False,
        layout="constrained",
    )
    flat = list(axes.flat)
    for unused in flat[count:]:
        unused.set_visible(False)
    return figure, flat[:count]


def wrap(text: str, width: int = 58) -> str:  # a panel title: about 58 characters fit a 4.6 in panel
    return "\n".join(textwrap.wrap(text, width))


def finish(figure, title: str, handles: list, extra_handles: list | None = None):
    """Title on top, one legend below all panels (never over data)."""
    characters_per_line = int(figure.get_figwidth() * 13)  # about 13 characters per inch at 10.5 pt
    # First line what is shown, second line how to read it; each wrapped on its own.
    wrapped = "\n".join(wrap(line, characters_per_line) for line in title.split("\n"))
    figure.suptitle(wrapped, fontsize=10.5)
    handles = handles + (extra_handles or [])
    if handles:
        columns = legend_columns(figure, handles)
        title_lines = wrapped.count("\n") + 1
        # Room for every legend row and title line beyond the two the panel sizes allow for: a long legend
        # (an LR sweep's dozens of arms) would otherwise squeeze the panels to nothing or cover them.
        extra_rows = max(0, math.ceil(len(handles) / columns) - 2) + max(0, title_lines - 2)
        figure.set_figheight(figure.get_figheight() + 0.2 * extra_rows)
        figure.legend(handles=handles, loc="outside lower center", ncol=columns, frameon=False)
    return figure


def legend_columns(figure, handles: list) -> int:
    """As many columns as fit the figure's width, so the legend is never cut off at the sides."""
    widest = max(len(handle.get_label()) for handle in handles)
    entry_inches = 0.07 * widest + 0.7  # about 0.07 in per character at 8.5 pt, plus the line sample
    fitting = max(1, int(figure.get_figwidth() / entry_inches))
    rows = math.ceil(len(handles) / fitting)
    return math.ceil(len(handles) / rows)  # balanced rows


def sentence(axis_label: str) -> str:
    """'test accuracy at best validation (%)' -> 'Test accuracy at best validation' for a title."""
    text = axis_label.replace(" (%)", "")
    return text[:1].upper() + text[1:]


def percent_axis(axis, label: str) -> None:
    axis.set_ylabel(label)
    axis.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))


# ---- learning curves and memorization ---------------------------------------------------------------


def mean_band(curves: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per epoch: mean and sd over runs, and how many runs have the epoch."""
    values = curves[["epoch", column]].replace([np.inf, -np.inf], np.nan).dropna()
    return values.groupby("epoch")[column].agg(["mean", "std", "count"]).reset_index()


def clipped_error(means, halves, high: float = 100.0) -> np.ndarray:
    """Asymmetric error bars for means +- halves, clipped to an accuracy's range [0, high] (a t interval of
    three accuracies can reach below 0 %)."""
    means, halves = np.asarray(means, dtype=float), np.nan_to_num(np.asarray(halves, dtype=float))
    return np.array([means - np.clip(means - halves, 0, high), np.clip(means + halves, 0, high) - means])


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


def learning_curves(runs: pd.DataFrame, curves: pd.DataFrame, setting: str, arms: list[str], style: Style):
    present = [arm for arm in arms if arm in set(runs.loc[runs["setting"] == setting, "arm"])]
    panels = [panel for panel in CURVE_PANELS if panel[0] in curves]
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
        axis.set_xlabel("epoch")
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


# ---- final accuracy per optimizer --------------------------------------------------------------------


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


# ---- accuracy against noise rate, learning rate and wall time -----------------------------------------


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


# ---- tuning: every trial of the search, per optimizer and hyperparameter ------------------------------

TUNING_PANEL_SIZE = (2.6, 2.0)  # inches per (hyperparameter, optimizer) panel: small, many panels side by side
SCORE_LABELS = {"val_acc_best": "best validation accuracy (%)", "final_val_acc": "final validation accuracy (%)"}
SEARCHED_RANGE: dict[str, Any] = {"color": "grey", "linestyle": "--", "linewidth": 0.8}


def tuning_search(study: TuningStudy, colours: dict):
    """One column per optimizer, one row per searched hyperparameter: each trial's validation score
    against its value, top-k trials outlined, the winner a star at its mean over the confirm seeds (± sd).
    Trials with a run that did not complete are an x (at the bottom when they have no score).
    None when no optimizer searched anything."""
    names = sorted(
        (name for name, entry in study.optimizers.items() if entry.trials and entry.space), key=optimizer_rank
    )  # columns in the other figures' order: sgd, adam, adamw, lion, muon
    keys = list(dict.fromkeys(key for name in names for key in study.optimizers[name].space))
    if not names:
        return None
    size = (TUNING_PANEL_SIZE[0] * len(names) + 0.4, TUNING_PANEL_SIZE[1] * len(keys) + 1.2)  # + labels, legend
    figure, axes = plt.subplots(len(keys), len(names), squeeze=False, sharey=True, layout="constrained", figsize=size)
    select_on = study.record.select_on
    label = SCORE_LABELS.get(select_on or "", f"{select_on} (%)")
    any_unfinished = False
    for column, name in enumerate(names):
        axes[0][column].set_title(name, color=colours.get(name, "black"))
        for row, key in enumerate(keys):
            any_unfinished |= draw_search_panel(
                axes[row][column], study.optimizers[name], key, colours.get(name, "grey")
            )
    figure.supylabel(label, fontsize=plt.rcParams["axes.labelsize"])  # one label: panels are short and share y
    budget = study.record.budget
    title = (
        f"Tuning search: {study.name}\n{study.record.method or '?'}, {budget.trials or '?'} trials x "
        f"{', '.join(str(epochs) for epochs in budget.epochs) or '?'} epochs per optimizer; selected on "
        "validation, never test"
    )
    return finish(figure, title, tuning_legend(budget, any_unfinished))


def draw_search_panel(axis, entry: OptimizerTuning, key: str, colour) -> bool:
    """One hyperparameter of one optimizer's search; True when a trial that did not complete was drawn."""
    bounds = entry.space.get(key)
    if bounds is None:
        axis.text(0.5, 0.5, "not searched", ha="center", va="center", transform=axis.transAxes, color="grey")
        axis.set_xticks([])
        return False
    trials = [trial for trial in entry.trials if key in trial.values]
    points: dict[str, list[tuple[float, float]]] = {"complete": [], "incomplete": [], "top_k": [], "unscored": []}
    for trial in trials:
        value = trial.values[key]
        if trial.score is None:
            points["unscored"].append((value, 0.03))  # no score to place it by: at the bottom of the panel
            continue
        score = 100 * trial.score
        points["complete" if trial_completed(trial) else "incomplete"].append((value, score))
        if trial.top_k:
            points["top_k"].append((value, score))
    axis.scatter(*xy(points["complete"]), color=colour, s=16, alpha=0.75, zorder=3)
    axis.scatter(*xy(points["incomplete"]), color=colour, marker="x", s=24, zorder=3)
    axis.scatter(
        *xy(points["unscored"]),
        transform=axis.get_xaxis_transform(),
        color=colour,
        marker="x",
        s=24,
        clip_on=False,
        zorder=3,
    )
    axis.scatter(*xy(points["top_k"]), facecolor="none", edgecolor="black", s=70, linewidth=0.9, zorder=4)
    if entry.winner is not None:
        draw_winner(axis, entry.winner, key, colour)
    for end in search_ends(bounds):
        axis.axvline(end, **SEARCHED_RANGE)
    values = [trial.values[key] for trial in trials] + search_ends(bounds)
    log_axis = bounds.scale in ("log", "grid") and values and min(values) > 0
    if log_axis:
        axis.set_xscale("log")
    axis.set_xlabel(f"{key.removeprefix('optimizer.')}" + (" (log scale)" if log_axis else ""))
    return bool(points["incomplete"] or points["unscored"])


def xy(points: list[tuple[float, float]]) -> tuple[list, list]:
    return [x for x, _ in points], [y for _, y in points]


def trial_completed(trial: TuningTrial) -> bool:
    return trial.score is not None and all(run.status == COMPLETED for run in trial.runs)


def draw_winner(axis, winner: Winner, key: str, colour) -> None:
    value, mean, sd = (number(item) for item in (winner.values.get(key), winner.mean, winner.sd))
    if math.isfinite(value) and math.isfinite(mean):
        spread = clipped_error([100 * mean], [100 * sd]) if math.isfinite(sd) else None  # within 0-100 %
        axis.errorbar(
            [value],
            [100 * mean],
            yerr=spread,
            color=colour,
            marker="*",
            markersize=13,
            markeredgecolor="black",
            markeredgewidth=0.7,
            capsize=3,
            zorder=5,
        )


def search_ends(bounds: Bounds) -> list[float]:
    """The searched range's two ends (a grid's smallest and largest values), where they are numbers."""
    return [end for end in bounds.ends if math.isfinite(end)]


def tuning_legend(budget: Budget, any_unfinished: bool) -> list:
    def seeds(listed: tuple[int, ...]) -> str:
        return ("seed " if len(listed) == 1 else "seeds ") + (", ".join(str(seed) for seed in listed) or "?")

    handles = [
        Line2D(
            [],
            [],
            color="grey",
            marker="o",
            linestyle="none",
            markersize=4,
            label=f"trial (score on {seeds(budget.trial_seeds)})",
        ),
        Line2D(
            [],
            [],
            color="black",
            marker="o",
            markerfacecolor="none",
            linestyle="none",
            markersize=8,
            label=f"top {budget.top_k or 'k'}: rerun on {seeds(budget.confirm_seeds)}",
        ),
        Line2D(
            [],
            [],
            color="grey",
            marker="*",
            markeredgecolor="black",
            markersize=11,
            linestyle="-",
            label="winner: mean ± sd over its seeds",
        ),
        Line2D([], [], **SEARCHED_RANGE, label="searched range"),
    ]
    if any_unfinished:
        handles.append(
            Line2D(
                [], [], color="grey", marker="x", linestyle="none", label="run diverged/failed (no score: at bottom)"
            )
        )
    return handles


# ---- human label noise -----------------------------------------------------------------------------

ANNOTATED_CELLS_UP_TO = 10  # classes whose cells get their percentage written in; more would not be legible


def transition_heatmap(runs: pd.DataFrame, setting: str):
    """Who was taken for whom under a human label set: P(given label | true class) on the training split, from
    the transition matrix a run recorded (every run of a setting shares it: same label set, same split)."""
    recorded = runs[
        (runs["setting"] == setting) & runs["transition_matrix"].map(lambda matrix: isinstance(matrix, list))
    ]
    if not len(recorded):
        return None
    first = recorded.iloc[0]
    counts = np.asarray(first["transition_matrix"], dtype=float)
    percent = 100 * counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    annotated = first.get("annotated_dataset")
    names = list(datasets.DATASETS[annotated].classes) if annotated in datasets.DATASETS else []
    size = len(counts)
    figure, axis = plt.subplots(figsize=(6.4, 5.6), layout="constrained")
    image = axis.imshow(percent, cmap="viridis", vmin=0, vmax=100)
    figure.colorbar(image, ax=axis, label="% of the true class's training images")
    if size <= ANNOTATED_CELLS_UP_TO:
        for row, column in np.ndindex(size, size):
            axis.text(
                column,
                row,
                f"{percent[row, column]:.0f}",
                ha="center",
                va="center",
                fontsize=7,
                color="black" if percent[row, column] > 50 else "white",
            )
    if names and size <= 20:
        axis.set_xticks(range(size), names, rotation=60, ha="right")
        axis.set_yticks(range(size), names)
    axis.grid(False)
    axis.set_xlabel("given (human) label")
    axis.set_ylabel("true class")
    wrong = 100 * (counts.sum() - np.trace(counts)) / max(counts.sum(), 1)
    return finish(
        figure,
        f"Human label noise: {setting}\nrow = true class, column = the label training sees, "
        f"% of the row; {wrong:.2f} % wrong on the training split",
        [],
    )


def close(figure) -> None:
    plt.close(figure)


# ---------------------------------------------------------------- fidelity ladders (fidelity.py)


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
