"""What every figure shares, so they read at a glance: one fixed colour per optimizer (`optimizer_colours`), a
line style and marker per variant of one optimizer (`Style`), the panel grid, the title and the one legend below
the panels (`finish`), percent axes, error bars clipped to an accuracy's range, and the rcParams (font sizes,
grid) set once on import."""

import math
import textwrap

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.typing import LineStyleType

from optbench.analysis.groups import KNOWN_OPTIMIZERS, optimizer_rank

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


def clipped_error(means, halves, high: float = 100.0) -> np.ndarray:
    """Asymmetric error bars for means +- halves, clipped to an accuracy's range [0, high] (a t interval of
    three accuracies can reach below 0 %)."""
    means, halves = np.asarray(means, dtype=float), np.nan_to_num(np.asarray(halves, dtype=float))
    return np.array([means - np.clip(means - halves, 0, high), np.clip(means + halves, 0, high) - means])


def close(figure) -> None:
    plt.close(figure)
