"""Human label noise: who was taken for whom, the transition matrix P(given label | true class) a run recorded,
as a heat map."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from optbench.analysis.writing.figures.style import finish
from optbench.registry import datasets

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
