"""One tuning study's search (tuning_report.py's records, not runs): every trial's validation score against each
searched hyperparameter's value, per optimizer, the top-k trials outlined and the winner a star."""

import math
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

from optbench.analysis.groups import optimizer_rank
from optbench.analysis.judging.tuning_report import TuningStudy
from optbench.analysis.load import number
from optbench.analysis.writing.figures.style import clipped_error, finish
from optbench.formats.run_summary import COMPLETED
from optbench.formats.tuning_record import Bounds, Budget, OptimizerTuning, Winner
from optbench.formats.tuning_record import Trial as TuningTrial
from optbench.specs.study_spec import selection_sign

TUNING_PANEL_SIZE = (2.6, 2.0)  # inches per (hyperparameter, optimizer) panel: small, many panels side by side
SCORE_LABELS = {
    "val_acc_best": "best validation accuracy (%)",
    "final_val_acc": "final validation accuracy (%)",
    "val_loss_best": "best validation loss (nats)",
    "final_val_loss": "final validation loss (nats)",
}
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
    scale = 100.0 if selection_sign(select_on or "") > 0 else 1.0  # an accuracy in %, a loss as itself
    any_unfinished = False
    for column, name in enumerate(names):
        axes[0][column].set_title(name, color=colours.get(name, "black"))
        for row, key in enumerate(keys):
            any_unfinished |= draw_search_panel(
                axes[row][column], study.optimizers[name], key, colours.get(name, "grey"), scale
            )
    figure.supylabel(label, fontsize=plt.rcParams["axes.labelsize"])  # one label: panels are short and share y
    budget = study.record.budget
    title = (
        f"Tuning search: {study.name}\n{study.record.method or '?'}, {budget.trials or '?'} trials x "
        f"{', '.join(str(epochs) for epochs in budget.epochs) or '?'} epochs per optimizer; selected on "
        "validation, never test"
    )
    return finish(figure, title, tuning_legend(budget, any_unfinished))


def draw_search_panel(axis, entry: OptimizerTuning, key: str, colour, scale: float = 100.0) -> bool:
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
        score = scale * trial.score
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
        draw_winner(axis, entry.winner, key, colour, scale)
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


def draw_winner(axis, winner: Winner, key: str, colour, scale: float = 100.0) -> None:
    value, mean, sd = (number(item) for item in (winner.values.get(key), winner.mean, winner.sd))
    if math.isfinite(value) and math.isfinite(mean):
        high = 100.0 if scale == 100.0 else math.inf  # an accuracy within 0-100 %, a loss above 0
        spread = clipped_error([scale * mean], [scale * sd], high) if math.isfinite(sd) else None
        axis.errorbar(
            [value],
            [scale * mean],
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
