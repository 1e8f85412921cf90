"""Readable output: settings named by what differs between them, short file names with an index back to the
full setting, and figures whose every axis names its unit and whose intervals stay in the metric's range."""

import csv
import re

import numpy as np
import pytest
from fixtures.aggregate.fake_runs import ramp_records, realistic_records, realistic_study, write_run

from optbench.analysis import aggregate
from optbench.analysis.pipeline import analyse
from optbench.analysis.writing.aggregate_files import PRIMARY_LABEL
from optbench.analysis.writing.figures import style as figure_style
from optbench.analysis.writing.figures.accuracy import (
    accuracy_vs_lr,
    accuracy_vs_noise,
    accuracy_vs_wall_time,
    final_accuracy,
)
from optbench.analysis.writing.figures.curves import learning_curves, memorization_curves
from optbench.analysis.writing.figures.profiles import performance_profiles
from optbench.analysis.writing.names import STEM_LIMIT, full_setting, setting_hash
from optbench.analysis.writing.tables import PRIMARY_METRIC

# What a tiny test run overrides (tests/conftest.py TINY): beside a default run, every one of these differs.
TINY = {"batch_size": 50, "dataset.val_size": 100, "dataset.train_subset": 600, "epochs": 2, "model.width": 8}


def test_labels_name_only_the_keys_that_vary_and_never_an_unset_one(tmp_path):
    root = tmp_path / "results"
    for seed in range(2):
        write_run(root, ramp_records(0.9), seed=seed)
        # train.grad_accum is absent from the other runs' configs: unset there, and never shown as unset.
        write_run(root, ramp_records(0.8), seed=seed, overrides={"train.grad_accum": 4}, variant="accum")
        write_run(root, ramp_records(0.7), seed=seed, overrides={"model.width": 16}, variant="narrow")
        # A key only this dataset has: unset in every cifar10 run, constant within its own dataset.
        write_run(root, ramp_records(0.6), seed=seed, dataset="synthetic", overrides={"dataset.test_size": 200})
    labels = set(analyse(root, 0.9).runs["setting"])
    assert labels == {
        "cifar10, clean, model.width=64",
        "cifar10, clean, model.width=64, train.grad_accum=4",
        "cifar10, clean, model.width=16",
        "synthetic, clean, model.width=64",
    }
    assert not any("unset" in label or "batch_size" in label or "test_size" in label for label in labels)


def test_settings_that_would_read_alike_get_told_apart(tmp_path):
    root = tmp_path / "results"
    write_run(root, ramp_records(0.9), overrides={"model.width": 16})
    write_run(root, ramp_records(0.8), overrides={"model.width": "16"}, variant="text")  # a hand-edited config
    labels = sorted(set(analyse(root, 0.9).runs["setting"]))
    assert len(labels) == 2 and all(
        re.fullmatch(r"cifar10, clean, model\.width=16 \[[0-9a-f]{6}\]", label) for label in labels
    )


@pytest.fixture(scope="module")
def tiny_beside_default(tmp_path_factory):
    """Three optimizers x 2 seeds in three settings: default, tiny (every TINY key differs), default noisy."""
    root = tmp_path_factory.mktemp("names") / "results"
    for optimizer, accuracy in (("sgd", 0.6), ("adam", 0.62), ("lion", 0.58)):
        for seed in range(2):
            write_run(
                root,
                ramp_records(accuracy + 0.01 * seed, epochs=2),
                optimizer=optimizer,
                seed=seed,
                overrides=TINY,
                variant="tiny",
                wall_time_s=30.0 + seed,
            )
            write_run(root, ramp_records(accuracy + 0.2, epochs=3), optimizer=optimizer, seed=seed)
            write_run(
                root,
                ramp_records(accuracy + 0.1, epochs=3),
                optimizer=optimizer,
                seed=seed,
                noise="symmetric",
                rate=0.2,
            )
    out = root.parent / "aggregate"
    aggregate(root, out, target_acc=0.5)
    return root, out


def read_csv(path) -> list[dict]:
    with open(path) as handle:
        return list(csv.DictReader(handle))


def test_file_names_are_short_and_free_of_equals_signs_and_commas(tiny_beside_default):
    _, out = tiny_beside_default
    names = [path.name for path in (out / "figures").iterdir()] + [path.name for path in (out / "tables").iterdir()]
    assert any(name.startswith("learning_curves_") for name in names)
    for name in names:
        assert len(name) <= 60 and not set("=, ") & set(name), name


def test_settings_csv_maps_each_short_name_to_its_full_setting(tiny_beside_default):
    root, out = tiny_beside_default
    index = {row["name"]: row for row in read_csv(out / "settings.csv")}
    curves = {path.stem.removeprefix("learning_curves_") for path in (out / "figures").glob("learning_curves_*.png")}
    assert curves == set(index)  # every setting's figure is named in the index, and nothing else is
    tiny = next(row for row in index.values() if "model.width=8" in row["setting"])
    assert {key: tiny[key] for key in TINY} == {key: str(value) for key, value in TINY.items()}
    assert tiny["setting"] == (
        "cifar10, clean, batch_size=50, dataset.train_subset=600, dataset.val_size=100, epochs=2, model.width=8"
    )
    assert tiny["model.name"] == "resnet18" and tiny["runs"] == "6"  # constant keys are in the full setting too
    runs = analyse(root, 0.5).runs
    name = next(name for name, row in index.items() if row is tiny)
    digest = setting_hash(full_setting(runs, tiny["setting"]))  # too long a label: its beginning and a hash
    assert len(tiny["setting"]) > STEM_LIMIT and name == f"cifar10-clean-batch_size-50-dat-{digest}"
    results = read_csv(out / "tables" / "results.csv")
    assert {row["setting"] for row in results} == {row["setting"] for row in index.values()}


def test_names_are_the_same_on_every_aggregation(tiny_beside_default, tmp_path):
    root, out = tiny_beside_default
    again = tmp_path / "again"
    aggregate(root, again, target_acc=0.5, draw_figures=False)
    assert read_csv(again / "settings.csv") == read_csv(out / "settings.csv")


def test_the_report_says_once_what_every_run_shares(tiny_beside_default):
    _, out = tiny_beside_default
    report = (out / "report.md").read_text()
    shared = next(line for line in report.splitlines() if line.startswith("Same in every run"))
    assert "`model.name=resnet18`" in shared and "`scheduler.name=cosine`" in shared and "epochs" not in shared
    assert "[`settings.csv`](settings.csv)" in report
    assert not any("resnet18" in row["setting"] for row in read_csv(out / "settings.csv"))


# ---- figures: units on every axis, intervals within the metric's range -----------------------------------

UNIT = re.compile(r".*\((%|s|min|h|ratio|log scale|cross-entropy, nats)(, log scale)?\)")
COUNTED = {"epoch", "optimizer"}  # axes of whole numbers and names: their label is their unit


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("study") / "results"
    realistic_study(root, seeds=(0, 1), rates=(0.0, 0.4), epochs=4)
    for seed in range(2):  # an LR sweep of adam, for the accuracy-vs-lr figure
        write_run(
            root,
            realistic_records("adam", seed, 0.0, 4),
            optimizer="adam",
            seed=seed,
            overrides={"optimizer.lr": 0.003},
            variant="lr",
        )
    # A run 1000 times as long with a hundredth of the loss: the wall-time and loss axes go logarithmic.
    write_run(
        root,
        ramp_records(0.9, epochs=4, train_loss=0.01),
        optimizer="adam",
        seed=2,
        overrides={"optimizer.lr": 0.003},
        variant="lr",
        wall_time_s=40000.0,
    )
    return analyse(root, 0.5)


def every_figure(analysis):
    runs, settings, arms, curves = analysis.runs, analysis.settings, analysis.arms, analysis.curves
    style = figure_style.Style(runs, arms)
    made = {
        "final_accuracy": final_accuracy(runs, settings, arms, style, PRIMARY_METRIC, PRIMARY_LABEL),
        "accuracy_vs_noise": accuracy_vs_noise(runs, arms, style, PRIMARY_METRIC, PRIMARY_LABEL),
        "accuracy_vs_lr": accuracy_vs_lr(runs, settings, style, PRIMARY_METRIC, PRIMARY_LABEL),
        "accuracy_vs_wall_time": accuracy_vs_wall_time(runs, settings, arms, style, PRIMARY_METRIC, PRIMARY_LABEL),
        "performance_profiles": performance_profiles(runs, settings, arms, style),
    }
    for setting in settings:
        made[f"learning_curves {setting}"] = learning_curves(runs, curves, setting, arms, style)
        made[f"memorization {setting}"] = memorization_curves(runs, curves, setting, arms, style)
    return {name: figure for name, figure in made.items() if figure is not None}


def test_every_axis_of_every_figure_names_its_unit(study):
    made = every_figure(study)
    assert {
        "final_accuracy",
        "accuracy_vs_noise",
        "accuracy_vs_lr",
        "accuracy_vs_wall_time",
        "performance_profiles",
    } <= set(made) and any(name.startswith("memorization") for name in made)
    labels = []
    for name, figure in made.items():
        for axis in [axis for axis in figure.axes if axis.get_visible()]:
            labels += [axis.get_xlabel(), axis.get_ylabel()]
            for label, scale in ((axis.get_xlabel(), axis.get_xscale()), (axis.get_ylabel(), axis.get_yscale())):
                assert label in COUNTED or UNIT.fullmatch(label), f"{name}: axis label {label!r} names no unit"
                assert ("log scale)" in label) == (scale == "log"), f"{name}: {label!r} on a {scale} axis"
        figure_style.close(figure)
    assert {"wall time per run (h, log scale)", "training loss (cross-entropy, nats, log scale)"} <= set(labels)


def test_interval_bars_stay_within_zero_and_a_hundred_percent(tmp_path):
    root = tmp_path / "results"
    for optimizer, accuracies in (("sgd", (0.02, 0.01, 0.60)), ("adam", (0.99, 1.0, 0.40))):
        for seed, accuracy in enumerate(accuracies):  # three seeds this far apart: a t interval beyond 0 and 100
            write_run(root, ramp_records(accuracy), optimizer=optimizer, seed=seed)
            write_run(root, ramp_records(accuracy * 0.9), optimizer=optimizer, seed=seed, noise="symmetric", rate=0.4)
    analysis = analyse(root, 0.5)
    style = figure_style.Style(analysis.runs, analysis.arms)
    for figure in (
        final_accuracy(analysis.runs, analysis.settings, analysis.arms, style, PRIMARY_METRIC, PRIMARY_LABEL),
        accuracy_vs_noise(analysis.runs, analysis.arms, style, PRIMARY_METRIC, PRIMARY_LABEL),
    ):
        bars = [
            segment
            for axis in figure.axes
            for collection in axis.collections
            if type(collection).__name__ == "LineCollection"
            for segment in collection.get_segments()
        ]
        heights = np.concatenate([segment[:, 1] for segment in bars])
        assert len(bars) >= 4 and heights.min() == pytest.approx(0.0) and heights.max() == pytest.approx(100.0)
        figure_style.close(figure)


def test_a_long_legend_makes_the_figure_taller_instead_of_covering_or_squeezing_the_panels():
    import io

    import pandas as pd

    arms = [f"adam lr={index / 1000:g}, weight_decay={index / 7:.3g}" for index in range(1, 41)]  # a sweep's arms
    runs = pd.DataFrame(
        {
            "setting": "s",
            "arm": arms,
            "optimizer": "adam",
            "status": "completed",
            "epochs_to_target": [float(2 + index % 5) for index in range(40)],
            "seconds_to_target": [float(30 + index) for index in range(40)],
        }
    )
    figure = performance_profiles(runs, ["s"], arms, figure_style.Style(runs, arms))
    figure.savefig(io.BytesIO(), format="png", dpi=50)  # lays the figure out
    legend = figure.legends[0].get_window_extent()
    for axis in figure.axes:
        panel = axis.get_window_extent()
        assert panel.height / figure.dpi > 2.0 and panel.y0 > legend.y1  # a full-size panel, above the legend
    figure_style.close(figure)
