"""Fidelity ladders: rungs in the study format, the planner reusing a rung that exists, tau-b and its seed bootstrap
against hand computations, flips classed confirmed or unconfirmed, missing optimizers named, the interval's
coverage in a bounded simulation, and the report on hand-made run directories."""

import math
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import CONF_DIR
from omegaconf import OmegaConf

from optbench.analysis import fidelity
from optbench.analysis.fidelity import Ladder, Rung, analyse_ladder, tau_b
from optbench.analysis.pipeline import aggregate
from optbench.errors import ConfigError
from optbench.formats import tuning_record
from optbench.specs.study_spec import find_study, load_study
from optbench.studies import study_command

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "aggregate"))
from fake_runs import ramp_records, write_run
from test_study import SMALL, synthetic_grid, write_study, write_summary

METRIC = "test_acc_at_best_val"


# ---------------------------------------------------------------- the study format and the planner


def test_the_axis_form_and_the_list_form_give_the_same_rungs(tmp_path):
    axis = load_study(write_study(tmp_path / "axis.yaml", synthetic_grid(), fidelity={"epochs": [1, 2]}))
    listed = load_study(
        write_study(tmp_path / "listed.yaml", synthetic_grid(), fidelity=[{"epochs": 1}, {"epochs": 2}])
    )
    assert [rung.label for rung in axis.rungs] == [rung.label for rung in listed.rungs] == ["epochs=1", "epochs=2"]
    mixed = load_study(
        write_study(
            tmp_path / "mixed.yaml",
            synthetic_grid(),
            tuned_by="tune_cpu_demo",
            fidelity=[{"epochs": 8}, {"epochs": 8, "model.width": 32, "tuned_by": "tune_w32"}],
        )
    )
    assert mixed.rungs[1].overrides == ("epochs=8", "model.width=32") and mixed.rungs[1].tuned_by == "tune_w32"


@pytest.mark.parametrize(
    "block, message",
    [
        ({"epochs": [2, 4], "model.width": [8, 16]}, "the axis form names one key"),
        ({"epochs": [2]}, "give at least two rungs"),
        ([{"optimizer": "adam"}, {"epochs": 2}], "optimizer changes what is compared"),
        ([{"noise.rate": 0.2}, {"epochs": 2}], "noise.rate changes what is compared"),
        ({"epochs": [2, 2]}, "the rung epochs=2 appears twice"),
        ([{"tuned_by": "tune_cpu_demo"}, {"epochs": 2}], "names no budget key"),
    ],
)
def test_a_bad_fidelity_block_is_one_error_naming_the_fix(tmp_path, block, message):
    with pytest.raises(ConfigError, match=message):
        load_study(write_study(tmp_path / "bad.yaml", synthetic_grid(), fidelity=block))


def test_the_cpu_fidelity_study_plans_the_published_directories():
    study = find_study("cpu_fidelity")
    assert [rung.label for rung in study.rungs] == [
        "epochs=2",
        "epochs=4",
        "epochs=8",
        "epochs=16",
        "epochs=8,tuned_by=tune_cpu_demo_8ep",
    ]
    assert study.tuned_by == "tune_cpu_demo" and study.grid["optimizer"] == ["sgd", "adam", "adamw", "lion", "muon"]
    assert set(study.overrides) == set(find_study("cpu_demo").overrides)  # the 8-epoch rung is cpu_demo's runs


def test_a_ladder_whose_rung_exists_trains_nothing_for_it(tmp_path, capsys, monkeypatch):
    results = tmp_path / "results"
    variant = "batch_size=50,dataset.test_size=200,dataset.train_size=600,dataset.val_size=100,epochs={},model.width=8"
    for optimizer in ("sgd", "adam"):  # the 1-epoch rung: another study's finished runs
        for seed in (0, 1):
            write_summary(results / "synthetic/none-0.0" / optimizer / variant.format(1) / f"seed{seed}", "completed")
    study = write_study(tmp_path / "ladder.yaml", synthetic_grid(), fidelity={"epochs": [1, 2]})
    launched = []
    monkeypatch.setattr(study_command.subprocess, "call", lambda command, **_: launched.append(command) or 0)
    study_command.main([str(study), "--set", *SMALL, f"paths.results_dir={results}"])
    out = capsys.readouterr().out
    assert "8 runs in 2 sweep(s): 4 done, 0 unfinished, 4 new" in out
    assert "sweep 1: all 4 runs finished, skipped" in out
    assert len(launched) == 1 and "epochs=2" in launched[0] and "epochs=1" not in launched[0]


def test_dry_run_costs_each_rung_and_status_shows_progress_per_rung(tmp_path, capsys):
    results = tmp_path / "results"
    variant = "batch_size=50,dataset.test_size=200,dataset.train_size=600,dataset.val_size=100,epochs=1,model.width=8"
    write_summary(results / "synthetic/none-0.0/sgd" / variant / "seed0", "completed")
    study = write_study(tmp_path / "ladder.yaml", synthetic_grid(), fidelity={"epochs": [1, 3]})
    assert study_command.main([str(study), "--dry-run", "--set", *SMALL, f"paths.results_dir={results}"]) == 0
    out = capsys.readouterr().out
    assert "rung epochs=1: 4 runs, 1 done;" in out and "rung epochs=3: 4 runs, 0 done;" in out
    assert study_command.main([str(study), "--status", "--set", *SMALL, f"paths.results_dir={results}"]) == 0
    out = capsys.readouterr().out
    assert "  rung epochs=1: progress: 1 of 4 runs finished" in out and "rung epochs=3: progress: 0 of 4" in out


# ---------------------------------------------------------------- tau-b and its interval, by hand


def test_tau_b_counts_ties_as_kendall_b_does_by_hand():
    # pairs of (1, 2, 3, 4) vs (1, 3, 2, 2): AB AC AD concordant, BC BD discordant, CD tied in y only:
    # (3 - 2) / sqrt((3 + 2 + 0) * (3 + 2 + 1)) = 1 / sqrt(30)
    assert tau_b([1, 2, 3, 4], [1, 3, 2, 2]) == pytest.approx(1 / math.sqrt(30))


def rung(label: str, budget: float, values: dict, seconds: float = 100.0) -> Rung:
    """values: arm -> {seed: accuracy}."""
    rows = [
        {
            "arm": arm,
            "optimizer": arm,
            "seed": seed,
            "status": "completed",
            METRIC: value,
            "wall_time_s": seconds,
            "device": "cpu",
        }
        for arm, by_seed in values.items()
        for seed, value in by_seed.items()
    ]
    return Rung(label, {"cfg.epochs": budget}, budget, pd.DataFrame(rows))


def test_a_missing_optimizer_is_named_and_unequal_seeds_are_kept():
    low = rung(
        "epochs=2",
        2,
        {"a": {0: 0.50, 1: 0.50, 2: 0.50}, "b": {0: 0.60, 1: 0.60, 2: 0.60}, "c": {0: 0.55, 1: 0.55, 2: 0.55}},
        seconds=100,
    )
    top = rung("epochs=8", 8, {"a": {0: 0.70}, "b": {0: 0.80}, "c": {0: 0.60}, "d": {0: 0.90}}, seconds=400)
    ladder = analyse_ladder(Ladder("cifar10, clean", ["cfg.epochs"], [low, top], ["a", "b", "c", "d"]), METRIC)
    assert ladder.missing == ["d has no completed run at epochs=2"]
    row = ladder.agreement.iloc[0]
    # a, b, c: (0.50, 0.60, 0.55) vs (0.70, 0.80, 0.60): ab concordant, ac discordant, bc concordant -> 1/3
    assert row["arms"] == 3 and row["seeds"] == 3 and row["tau_b"] == pytest.approx(1 / 3)
    assert math.isnan(row["tau_low"])  # one seed shared with the top: no interval (the bootstrap gave one)
    assert row["cost_share"] == pytest.approx(0.25) and row["budget_share"] == pytest.approx(0.25)
    assert ladder.agreement.iloc[1]["seeds"] == 1


def test_a_constructed_flip_is_found_and_classed():
    # a - b: +2 points at both seeds' spread 0.1 at the low rung, -2 at the top: significant in opposite directions.
    # a - c: +0.1 with noise at the low rung (not significant), -2 at the top: an unconfirmed flip.
    low = rung(
        "epochs=2",
        2,
        {"a": {0: 0.520, 1: 0.531, 2: 0.509}, "b": {0: 0.500, 1: 0.510, 2: 0.490}, "c": {0: 0.530, 1: 0.500, 2: 0.528}},
    )
    top = rung(
        "epochs=8",
        8,
        {"a": {0: 0.700, 1: 0.711, 2: 0.689}, "b": {0: 0.720, 1: 0.730, 2: 0.710}, "c": {0: 0.745, 1: 0.751, 2: 0.735}},
    )
    ladder = analyse_ladder(Ladder("cifar10, clean", ["cfg.epochs"], [low, top], ["a", "b", "c"]), METRIC)
    flips = ladder.flips.set_index(["a", "b"])
    assert flips.loc[("a", "b"), "flip"] == "confirmed"
    assert flips.loc[("a", "c"), "flip"] == "unconfirmed"
    assert ("b", "c") not in flips.index  # b < c at both rungs
    row = ladder.agreement.iloc[0]
    assert row["confirmed_flips"] == 1 and row["unconfirmed_flips"] == 1
    assert row["significant_pairs"] >= 1 and row["kept_pairs"] < row["significant_pairs"]
    assert fidelity.cheapest_faithful_rung(ladder) is None


# ---------------------------------------------------------------- the report on run directories


def write_ladder(root: Path) -> None:
    """sgd > adam at 8 epochs on every seed; adam > sgd at 2 epochs; lion only at 8 epochs under 40 % noise."""
    accuracies = {(2, "sgd"): 0.40, (2, "adam"): 0.45, (8, "sgd"): 0.70, (8, "adam"): 0.65}
    jitter = {"sgd": (0.0, 0.012, 0.005), "adam": (0.0, 0.003, 0.011)}  # differences with spread: testable
    for (epochs, optimizer), accuracy in accuracies.items():
        for seed in (0, 1, 2):
            write_run(
                root,
                ramp_records(accuracy + jitter[optimizer][seed], epochs=epochs),
                optimizer=optimizer,
                seed=seed,
                variant=f"epochs={epochs}",
                overrides={"epochs": epochs},
                wall_time_s=10.0 * epochs,
            )
    for seed in (0, 1, 2):
        write_run(
            root,
            ramp_records(0.5 + 0.01 * seed, epochs=8),
            optimizer="lion",
            seed=seed,
            noise="symmetric",
            rate=0.4,
            variant="epochs=8",
            overrides={"epochs": 8},
        )


def test_the_report_has_a_fidelity_section_and_leaves_other_settings_out(tmp_path):
    write_ladder(tmp_path / "results")
    aggregate(tmp_path / "results", tmp_path / "out", target_acc=0.3, draw_figures=False)
    per_rung = pd.read_csv(tmp_path / "out/tables/fidelity.csv")
    assert set(per_rung["arm"]) == {"sgd", "adam"} and set(per_rung["rung"]) == {"epochs=2", "epochs=8"}
    agreement = pd.read_csv(tmp_path / "out/tables/fidelity_agreement.csv").set_index("rung")
    assert agreement.loc["epochs=2", "tau_b"] == -1 and agreement.loc["epochs=2", "confirmed_flips"] == 1
    assert agreement.loc["epochs=2", "cost_share"] == pytest.approx(0.25)
    report = (tmp_path / "out/report.md").read_text()
    assert "## Fidelity: what the cheaper budgets got right" in report
    assert "The epochs=2 rung cost 25 % of the top rung's device-hours per run" in report


def test_runs_that_differ_in_no_budget_key_get_no_fidelity_section(tmp_path):
    for seed in (0, 1):
        write_run(tmp_path / "results", ramp_records(0.6, epochs=2), optimizer="sgd", seed=seed)
    aggregate(tmp_path / "results", tmp_path / "out", target_acc=0.3, draw_figures=False)
    assert not (tmp_path / "out/tables/fidelity.csv").exists()
    assert "## Fidelity" not in (tmp_path / "out/report.md").read_text()


def test_tuned_values_per_budget_and_their_ratio_to_the_longest():
    class Study:
        def __init__(self, name, epochs, lr):
            self.name = name
            run = {"run_dir": f"adam/seed0-{epochs}", "epochs_done": epochs, "seed": 0}
            values = {"optimizer.lr": lr, "optimizer.weight_decay": 1e-4}
            entry = {"space": {}, "trials": [{"values": values, "runs": [run]}], "winner": {"values": values}}
            content = {"study": name, "optimizers": {"adam": entry}}
            self.optimizers = tuning_record.parse(content, Path(f"tuning-{name}.json")).optimizers

    table = fidelity.tuned_settings([Study("tune_e16", 16, 0.004), Study("tune_e2", 2, 0.001)])
    assert list(table["epochs"]) == [2, 16]
    assert list(table["lr_ratio_to_top"]) == [pytest.approx(0.25), 1.0]
    assert fidelity.tuned_settings([Study("tune_e2", 2, 0.001)]).empty


def test_one_rung_from_the_command_line_plans_only_that_rung(tmp_path, capsys):
    study = write_study(tmp_path / "ladder.yaml", synthetic_grid(), fidelity={"epochs": [1, 2]})
    argv = [str(study), "--dry-run", "--no-estimate", "--set", *SMALL, f"paths.results_dir={tmp_path / 'results'}"]
    assert study_command.main([*argv, "--rung", "epochs=3"]) == 0
    out = capsys.readouterr().out
    assert "4 runs in 1 sweep(s)" in out and "rung epochs=3: noise=none" in out and ",epochs=3," in out
    assert study_command.main([*argv, "--rung", "seed=4"]) == 2
    assert "seed changes what is compared" in capsys.readouterr().err


def test_a_rung_with_its_own_tuning_study_runs_with_its_winners(tmp_path, capsys):
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    tuning = {}
    for name, epochs, lr in (("tune_short", 1, 0.05), ("tune_long", 2, 0.2)):  # selected values, as --select-tuned
        tuned = OmegaConf.load(CONF_DIR / "optimizer" / "sgd.yaml")
        tuned.lr = lr
        (conf / "optimizer" / "tuned" / name).mkdir(parents=True)
        OmegaConf.save(tuned, conf / "optimizer" / "tuned" / name / "sgd.yaml")
        grid = synthetic_grid(optimizer=["sgd"], seed=[5], epochs=epochs)
        tuning[name] = write_study(tmp_path / f"{name}.yaml", grid, tune={"method": "grid", "output": f"tuned/{name}"})
    ladder = write_study(
        tmp_path / "ladder.yaml",
        synthetic_grid(optimizer=["sgd"]),
        fidelity=[
            {"epochs": 1, "tuned_by": str(tuning["tune_short"])},
            {"epochs": 2, "tuned_by": str(tuning["tune_long"])},
        ],
    )
    argv = [
        str(ladder),
        "--dry-run",
        "--no-estimate",
        "--conf-dir",
        str(conf),
        "--set",
        *SMALL,
        f"paths.results_dir={tmp_path / 'results'}",
    ]
    assert study_command.main(argv) == 0
    out = capsys.readouterr().out
    assert "is tuned by tune_short: tuning first" in out and "is tuned by tune_long: tuning first" in out
    sweeps = [line for line in out.splitlines() if line.startswith("sweep ") and "(rung " in line]
    assert len(sweeps) == 2
    assert "epochs=1" in sweeps[0] and "optimizer.lr=0.05" in sweeps[0]
    assert "optimizer=tuned/tune_short/sgd" in sweeps[0]
    assert "epochs=2" in sweeps[1] and "optimizer.lr=0.2" in sweeps[1]


def test_some_rungs_tuned_and_others_not_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="some rungs name their tuned_by and others none"):
        load_study(
            write_study(
                tmp_path / "half.yaml",
                synthetic_grid(),
                fidelity=[{"epochs": 1, "tuned_by": "tune_cpu_demo"}, {"epochs": 2}],
            )
        )


def test_a_learning_rate_tuned_per_rung_is_the_same_optimizer_on_the_ladder(tmp_path):
    lrs = {(2, "sgd"): 0.05, (8, "sgd"): 0.2, (2, "adam"): 0.001, (8, "adam"): 0.003}  # a tuned_by per rung
    for (epochs, optimizer), lr in lrs.items():
        for seed in (0, 1):
            accuracy = 0.5 + 0.1 * (optimizer == "sgd") + 0.01 * seed
            write_run(
                tmp_path / "results",
                ramp_records(accuracy, epochs=epochs),
                optimizer=optimizer,
                seed=seed,
                variant=f"epochs={epochs},lr={lr}",
                overrides={"epochs": epochs, "optimizer.lr": lr},
            )
    aggregate(tmp_path / "results", tmp_path / "out", target_acc=0.3, draw_figures=False)
    per_rung = pd.read_csv(tmp_path / "out/tables/fidelity.csv")
    assert sorted(per_rung["arm"]) == ["adam", "adam", "sgd", "sgd"]
    assert "Missing" not in (tmp_path / "out/report.md").read_text()


def test_a_larger_rung_still_being_run_is_shown_not_compared():
    low = rung("epochs=2", 2, {"a": {0: 0.50, 1: 0.52}, "b": {0: 0.60, 1: 0.61}})
    middle = rung("epochs=8", 8, {"a": {0: 0.70, 1: 0.72}, "b": {0: 0.80, 1: 0.83}})
    started = rung("epochs=16", 16, {"a": {0: 0.90}})  # one optimizer, one seed so far
    ladder = Ladder(
        "cifar10, clean",
        ["cfg.epochs"],
        [low, middle, started],
        ["a", "b"],
        top_index=fidelity.top_rung_index([low, middle, started], ["a", "b"]),
    )
    analyse_ladder(ladder, METRIC)
    assert ladder.top.label == "epochs=8" and list(ladder.agreement["rung"]) == ["epochs=2", "epochs=8"]
    assert ladder.not_yet == [
        "epochs=16: a, b have fewer than 2 completed seeds there yet (shown in the table and figures, not compared)"
    ]
    assert set(ladder.per_rung["rung"]) == {"epochs=2", "epochs=8", "epochs=16"} and ladder.missing == []


def test_a_larger_rung_with_one_seed_per_optimizer_is_shown_not_compared():
    """Every optimizer at the 16-epoch rung but on one seed each: no pair there has an interval or a test, so the
    top rung stays the largest with two seeds per optimizer."""
    low = rung("epochs=2", 2, {"a": {0: 0.50, 1: 0.52}, "b": {0: 0.60, 1: 0.61}})
    middle = rung("epochs=8", 8, {"a": {0: 0.70, 1: 0.72}, "b": {0: 0.80, 1: 0.83}})
    first_seeds = rung("epochs=16", 16, {"a": {0: 0.90}, "b": {0: 0.85}})
    rungs = [low, middle, first_seeds]
    ladder = Ladder(
        "cifar10, clean", ["cfg.epochs"], rungs, ["a", "b"], top_index=fidelity.top_rung_index(rungs, ["a", "b"])
    )
    analyse_ladder(ladder, METRIC)
    assert ladder.top.label == "epochs=8"
    assert ladder.not_yet == [
        "epochs=16: a, b have fewer than 2 completed seeds there yet (shown in the table and figures, not compared)"
    ]
