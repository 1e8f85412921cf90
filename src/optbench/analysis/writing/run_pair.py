"""Two runs side by side (`python src/compare.py RUN_A RUN_B`): the config keys that differ, the headline
numbers, and both runs' curves in one figure.

`read_compared(path)` reads one run directory through optbench.formats.run_files (record.json for the
resolved config, summary.json, metrics.jsonl) and raises ConfigError with one line when it is not a run;
`config_differences(a, b)` gives the differing keys, the ones that can change the numbers first;
`headline_rows(a, b)` the numbers a reader compares; `curves_figure(a, b)` a matplotlib figure (Agg) with
accuracy and training loss against epochs. Nothing here writes into a run directory: the entry point
saves the figure where the user says, and refuses a path inside a run.
"""

import math
from dataclasses import dataclass
from pathlib import Path

from optbench import identity
from optbench.durations import format_duration
from optbench.errors import ConfigError, DamagedRunFile
from optbench.formats import run_files, run_summary
from optbench.formats.metrics_log import EPOCH, TEST_ACC, TRAIN_LOSS, VAL_ACC

COLOURS = {"A": "tab:blue", "B": "tab:orange"}
MAX_LABEL_KEYS = 3  # differing keys named in a run's legend label, these first:
LABEL_KEYS = (
    "optimizer.name",
    "dataset.name",
    "noise.name",
    "noise.rate",
    "seed",
    "optimizer.lr",
    "optimizer.weight_decay",
    "epochs",
    "batch_size",
    "model.width",
)


@dataclass
class ComparedRun:
    path: Path
    config: dict  # flattened resolved config (record.json)
    summary: run_summary.Summary
    records: list[dict]  # metrics.jsonl, one per epoch


def read_compared(path: Path, which: str) -> ComparedRun:
    """One run directory; a ConfigError (one line naming the fix) when it is not one or cannot be read."""
    try:
        run = run_files.read(path, which)
    except DamagedRunFile as error:
        raise ConfigError(f"{which}: {error}") from None
    return ComparedRun(run.path, identity.flatten(run.record.config), run.summary, run.epochs)


def config_differences(a: ComparedRun, b: ComparedRun) -> tuple[list[tuple[str, str, str]], list[str]]:
    """([(key, A's value, B's value)] for the keys that can change the numbers, [numbers-free keys that differ])."""
    differing = sorted(key for key in a.config.keys() | b.config.keys() if a.config.get(key) != b.config.get(key))
    numbers = [
        (key, shown_value(a.config, key), shown_value(b.config, key))
        for key in differing
        if not identity.is_numbers_free(key)
    ]
    return numbers, [key for key in differing if identity.is_numbers_free(key)]


def shown_value(config: dict, key: str) -> str:
    return "(absent)" if key not in config else str(config[key])


def run_label(which: str, run: ComparedRun, differences: list[tuple[str, str, str]]) -> str:
    """'A: optimizer.name=sgd, optimizer.lr=0.1' (the telling differing keys first), or the run's folder name."""
    column = 1 if which == "A" else 2
    telling = sorted(
        (row for row in differences if not row[0].endswith(("_target_", "_partial_"))),
        key=lambda row: LABEL_KEYS.index(row[0]) if row[0] in LABEL_KEYS else len(LABEL_KEYS),
    )
    named = [f"{row[0]}={row[column]}" for row in telling[:MAX_LABEL_KEYS]]
    more = f" (+{len(differences) - len(named)} more)" if len(differences) > len(named) else ""
    return f"{which}: " + (", ".join(named) + more if named else run.path.name)


def percent(value) -> str:
    return "-" if not isinstance(value, (int, float)) or not math.isfinite(value) else f"{100 * value:.2f} %"


def headline_rows(a: ComparedRun, b: ComparedRun) -> list[tuple[str, str, str]]:
    """(what, A, B): status, epochs, test accuracy at the best-validation epoch, best validation accuracy,
    final accuracies and training loss, wall time and throughput."""

    def rows_of(run: ComparedRun) -> list[str]:
        summary, best, final = run.summary, run.summary.best or {}, run.summary.final or {}
        rate = summary.train_images_per_s
        return [
            summary.status,
            f"{summary.epochs_done} of {summary.epochs_planned or '?'}",
            percent(best.get(TEST_ACC)),
            f"{percent(best.get(VAL_ACC))} (epoch {best.get(EPOCH, '-')})" if VAL_ACC in best else "-",
            percent(final.get(TEST_ACC)),
            "-" if final.get(TRAIN_LOSS) is None else f"{final[TRAIN_LOSS]:.4f}",
            format_duration(summary.wall_time_s),
            "-" if not rate else f"{rate:.0f}",
        ]

    names = [
        "status",
        "epochs done",
        "test acc at best-val epoch",
        "best val acc",
        "final test acc",
        "final train loss",
        "wall time",
        "training images/s",
    ]
    return list(zip(names, rows_of(a), rows_of(b)))


def curves_figure(a: ComparedRun, b: ComparedRun, labels: dict[str, str]):
    """Accuracy (validation solid, test dashed) and training loss against epochs, A in blue, B in orange."""
    import matplotlib

    matplotlib.use("Agg")  # files only, works on headless machines
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    figure, (accuracy_axis, loss_axis) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for which, run in (("A", a), ("B", b)):
        epochs = [record[EPOCH] for record in run.records]
        for key, style in ((VAL_ACC, "-"), (TEST_ACC, "--")):
            values = [
                100 * record[key] if isinstance(record.get(key), (int, float)) else math.nan for record in run.records
            ]
            if any(math.isfinite(value) for value in values):
                accuracy_axis.plot(
                    epochs,
                    values,
                    style,
                    color=COLOURS[which],
                    marker="o",
                    markersize=3,
                    label=f"{which} {key.split('/')[0]}",
                )
        losses = [
            record[TRAIN_LOSS] if isinstance(record.get(TRAIN_LOSS), (int, float)) else math.nan
            for record in run.records
        ]
        loss_axis.plot(epochs, losses, "-", color=COLOURS[which], marker="o", markersize=3, label=which)
    accuracy_axis.set(
        xlabel="epoch", ylabel="accuracy (%)", ylim=(0, 100), title="validation (solid) and test (dashed)"
    )
    loss_axis.set(xlabel="epoch", ylabel="training loss (cross-entropy, nats)", title="training loss")
    for axis in (accuracy_axis, loss_axis):
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # epochs are whole
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle("\n".join(labels[which] for which in ("A", "B")), fontsize=9)
    return figure
