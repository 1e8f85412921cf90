"""Tuning studies in the aggregator: their trials are set aside, their cost and winners tabulated, their
search drawn, winners at an edge of the space flagged, and a broken tuning file is a warning.

A main study (sgd and lion, seeds 0-2, default hyperparameters) sits beside a tuning study whose trial
runs are real-looking run directories (tests/fixtures/aggregate/fake_tuning.py), so every number is known.
"""

import csv
import json
import math
import sys

import pytest
from conftest import REPO
from fixtures.aggregate.fake_runs import ramp_records, write_run
from fixtures.aggregate.fake_tuning import Trial, write_tuning_study

from optbench.analysis import aggregate
from optbench.analysis.judging.tuning_report import EDGE_MARKER, IGNORED, edge_text
from optbench.errors import DamagedRunFile
from optbench.formats import tuning_record
from optbench.formats.fields import Fields
from optbench.formats.tuning_record import parse_bounds

sys.path.insert(0, str(REPO / "src"))
import aggregate as aggregate_cli

MAIN_RUNS = 6


def lion_trials(winner_lr: float = 1e-4) -> list[Trial]:
    """Top-2 trials on three seeds (the first wins), one more trial on seed 0, one failed trial."""
    return [
        Trial(winner_lr, 0.3, [0.45, 0.46, 0.44], wall_time_s=100.0),
        Trial(3e-5, 0.1, [0.40, 0.41, 0.42], 120.0),
        Trial(5e-4, 0.5, [0.30], 80.0),
        Trial(8e-4, 0.05, None, 15.0),
    ]


SGD_TRIALS = [Trial(2e-4, 0.1, [0.50, 0.52, 0.51], 60.0), Trial(6e-5, 0.03, [0.48, 0.47, 0.49], 70.0)]


def study_folder(root, winner_lr: float = 1e-4, edges=None):
    for optimizer, accuracies in {"sgd": [0.90, 0.91, 0.92], "lion": [0.88, 0.90, 0.89]}.items():
        for seed, accuracy in enumerate(accuracies):
            write_run(root, ramp_records(accuracy), optimizer=optimizer, seed=seed)
    write_tuning_study(root, {"lion": lion_trials(winner_lr), "sgd": SGD_TRIALS}, study="tune_demo", edges=edges)
    return root


def read_csv(path) -> list[dict]:
    with open(path) as handle:
        return list(csv.DictReader(handle))


def tuning_rows(out) -> dict[str, dict]:
    return {row["optimizer"]: row for row in read_csv(out / "tables" / "tuning.csv")}


def test_tuning_trials_are_set_aside_from_the_main_comparison(tmp_path):
    results = study_folder(tmp_path / "results")
    outcome = aggregate(results, draw_figures=False)
    out = results / "aggregate"
    summary = read_csv(out / "summary.csv")
    assert outcome.runs == len(summary) == MAIN_RUNS
    assert not [row for row in summary if "optimizer.lr=" in row["run_id"]]
    table = read_csv(out / "tables" / "results.csv")
    assert {row["arm"]: int(row["runs"]) for row in table} == {"sgd": 3, "lion": 3}  # no lr variants as arms
    tuning_runs = 3 + 3 + 1 + 1 + 3 + 3
    report = outcome.report.read_text()
    assert f"**{MAIN_RUNS} runs**: {MAIN_RUNS} completed." in report
    assert f"{tuning_runs} more run directories are tuning trials" in report
    assert f"{tuning_runs} run directories found here are tuning trials (the tuning files list {tuning_runs})" in report
    assert "RuntimeError: boom" not in report  # the failed trial is not a failed run of the study


def test_tuning_table_counts_cost_from_the_listed_runs(tmp_path):
    results = study_folder(tmp_path / "results")
    outcome = aggregate(results, draw_figures=False)
    rows = tuning_rows(results / "aggregate")
    lion_hours = (3 * 100 + 3 * 120 + 80 + 15) / 3600
    sgd_hours = (3 * 60 + 3 * 70) / 3600
    assert float(rows["lion"]["device_hours"]) == pytest.approx(lion_hours)
    assert float(rows["sgd"]["device_hours"]) == pytest.approx(sgd_hours)
    assert (rows["lion"]["trials"], rows["lion"]["runs"], rows["lion"]["epochs_trained"]) == ("4", "8", "15")
    assert rows["lion"]["devices"] == "cpu"
    assert rows["lion"]["winner"] == "optimizer.lr=0.0001, optimizer.weight_decay=0.3"
    assert float(rows["lion"]["winner_mean"]) == pytest.approx(0.45) and rows["lion"]["winner_n"] == "3"
    report = outcome.report.read_text()
    assert f"**Total tuning cost: {lion_hours + sgd_hours:.3g} device-hours** over 14 runs (cpu)" in report
    assert (
        "Quasirandom search (sobol sampler, seed 0): 4 trials x 2 epochs per optimizer on seed 0; the top 2 "
        "trials rerun on seeds 1, 2; the winner is chosen on validation (`val_acc_best`), never on test." in report
    )
    assert "45.00 ± 1.00 (n=3)" in report


@pytest.mark.parametrize("winner_lr, side", [(1.1e-5, "low"), (1e-4, None), (9e-4, "high")])
def test_edge_warning_exactly_when_the_winner_is_at_an_edge(tmp_path, winner_lr, side):
    results = study_folder(tmp_path / "results", winner_lr=winner_lr)
    outcome = aggregate(results, draw_figures=False)
    rows = tuning_rows(results / "aggregate")
    edge_warnings = [warning for warning in outcome.warnings if EDGE_MARKER in warning]
    report = outcome.report.read_text()
    assert rows["sgd"]["edge"] == ""
    if side is None:
        assert rows["lion"]["edge"] == "" and edge_warnings == []
        assert "No winner sits at an edge of its search space." in report
    else:
        expected = f"optimizer.lr = {winner_lr:.3g} sits at the {side} edge of [1e-05, 0.001] (log): widen the range"
        assert rows["lion"]["edge"] == expected
        assert edge_warnings == [f"tuning-tune_demo.json, lion: {EDGE_MARKER}: {expected}"]
        assert f"**{EDGE_MARKER}**: {expected}" in (results / "aggregate" / "tables" / "tuning.md").read_text()
        assert f"- lion: {expected}" in report and f"- {edge_warnings[0]}" in report  # section and warnings


def test_the_runners_edge_sentences_are_used_when_the_file_has_them(tmp_path):
    results = study_folder(tmp_path / "results", winner_lr=1.1e-5, edges={"lion": [], "sgd": ["runner's words"]})
    outcome = aggregate(results, draw_figures=False)
    rows = tuning_rows(results / "aggregate")
    assert (rows["lion"]["edge"], rows["sgd"]["edge"]) == ("", "runner's words")
    assert [warning for warning in outcome.warnings if EDGE_MARKER in warning] == [
        f"tuning-tune_demo.json, sgd: {EDGE_MARKER}: runner's words"
    ]


@pytest.mark.parametrize(
    "value, bounds, side",
    [
        (0.1, {"values": [0.1, 0.3, 1.0], "scale": "grid"}, "low"),
        (0.3, {"values": [0.1, 0.3, 1.0], "scale": "grid"}, None),
        (1.0, {"values": [1.0, 0.3, 0.1], "scale": "grid"}, "high"),
        (0.95, {"low": 0.0, "high": 1.0, "scale": "linear"}, "high"),
        (0.5, {"low": 0.0, "high": 1.0, "scale": "linear"}, None),
        (0.5, {"values": [0.5], "scale": "grid"}, None),  # one value: nothing was searched
    ],
)
def test_edge_rule_on_grids_and_linear_ranges(value, bounds, side):
    text = edge_text("optimizer.momentum", value, parse_bounds(Fields(bounds, "tuning-x.json", "space.momentum")))
    assert (f"at the {side} edge" in text) if side else text == ""


def test_search_figure_is_drawn_and_embedded(tmp_path):
    results = study_folder(tmp_path / "results", winner_lr=1.1e-5)
    outcome = aggregate(results)
    figures = results / "aggregate" / "figures"
    assert (figures / "tuning-tune_demo.png").stat().st_size > 0
    assert (figures / "tuning-tune_demo.pdf").stat().st_size > 0
    report = outcome.report.read_text()
    assert "![Tuning search: tune_demo](figures/tuning-tune_demo.png)" in report
    assert "![Tuning search" not in report.split("## Tuning")[0]  # not among the main comparison's figures


def test_broken_tuning_files_are_warnings_naming_them(tmp_path):
    results = study_folder(tmp_path / "results")
    (results / "tuning-torn.json").write_text('{"format": 1, "study": "to')
    (results / "nested").mkdir()
    (results / "nested" / "tuning-future.json").write_text(json.dumps({"format": 2, "study": "x", "optimizers": {}}))
    partial = write_tuning_study(tmp_path / "elsewhere", {"adam": SGD_TRIALS}, study="partial")
    record = json.loads(partial.read_text())
    del record["optimizers"]["adam"]["trials"][1]["runs"]
    (results / "tuning-partial.json").write_text(json.dumps(record))
    outcome = aggregate(results, draw_figures=False)
    warnings = "\n".join(outcome.warnings)
    assert "tuning-torn.json: not readable as JSON (JSONDecodeError" in warnings
    assert (
        "nested/tuning-future.json: format 2, this optbench reads up to format 1: it was written by a newer "
        "optbench: upgrade" in warnings
    )
    assert (
        "tuning-partial.json: field optimizers.adam.trials[1].runs is missing: write it again with `python "
        "src/study.py --select-tuned STUDY`" in warnings
    )
    assert set(tuning_rows(results / "aggregate")) == {"lion", "sgd"}  # the good file is still read


def test_a_broken_tuning_files_runs_stay_in_the_main_comparison(tmp_path):
    results = study_folder(tmp_path / "results")
    tuning_file = results / "tuning-tune_demo.json"
    tuning_file.write_text(tuning_file.read_text().replace('"format": 1', '"format": 7'))
    outcome = aggregate(results, draw_figures=False)
    assert outcome.runs == MAIN_RUNS + 14
    assert not (results / "aggregate" / "tables" / "tuning.csv").exists()
    assert "## Tuning" not in outcome.report.read_text()


def test_a_folder_of_tuning_trials_only_gives_the_tuning_report(tmp_path):
    results = tmp_path / "results"
    write_tuning_study(results, {"lion": lion_trials()}, study="tune_demo")
    outcome = aggregate(results, experiments_dir=REPO / "experiments", draw_figures=False)
    report = outcome.report.read_text()
    assert outcome.runs == 0 and outcome.verdicts == {}
    assert "**0 runs**: none outside the tuning studies." in report and "Every run here is a tuning trial" in report
    assert "### Tuning study tune_demo" in report


def test_command_line_end_to_end(tmp_path, capsys):
    results = study_folder(tmp_path / "results", winner_lr=9e-4)
    (results / "tuning-torn.json").write_text("{")
    out = tmp_path / "out"
    assert aggregate_cli.main([str(results), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"{MAIN_RUNS} runs -> {out / 'report.md'}")
    assert f"warning: tuning-tune_demo.json, lion: {EDGE_MARKER}: optimizer.lr = 0.0009" in captured.err
    assert "warning: tuning-torn.json: not readable as JSON" in captured.err
    for name in (
        "tables/tuning.csv",
        "tables/tuning.md",
        "figures/tuning-tune_demo.png",
        "figures/tuning-tune_demo.pdf",
    ):
        assert (out / name).stat().st_size > 0
    assert "## Tuning" in (out / "report.md").read_text()


# ---- the schema: damaged copies of a real tuning record ------------------------------------------------

PUBLISHED_RECORD = REPO / "docs" / "cpu-study" / "runs" / "tuning-tune_cpu_demo.json"


def set_in(path: list, value):
    """A change to the record's JSON: the value at `path` (keys and list places) set to `value`."""

    def change(record):
        for step in path[:-1]:
            record = record[step]
        record[path[-1]] = value

    return change


def remove(path: list):
    def change(record):
        for step in path[:-1]:
            record = record[step]
        del record[path[-1]]

    return change


ADAM_RUN = ["optimizers", "adam", "trials", 0, "runs", 0]
DAMAGED_RECORDS = {  # what is done to the published record -> what its one warning says after the file's name
    "wrong type": (
        set_in([*ADAM_RUN, "wall_time_s"], "102.9"),
        "field optimizers.adam.trials[0].runs[0].wall_time_s is '102.9', not a finite number in [0, inf]",
    ),
    "a bool for a seed": (set_in([*ADAM_RUN, "seed"], True), "field optimizers.adam.trials[0].runs[0].seed is True"),
    "missing key": (remove(["optimizers", "adam", "space"]), "field optimizers.adam.space is missing"),
    "a list of the wrong type": (
        set_in(["optimizers", "adam", "winner", "seeds"], [0, 1.5]),
        "field optimizers.adam.winner.seeds[1] is 1.5, not a whole number >= 0",
    ),
    "another shape": (lambda record: [record], "is list, not a JSON object"),
    "a trial that is not an object": (
        set_in(["optimizers", "adam", "trials", 2], "trial 2"),
        "field optimizers.adam.trials[2] is str, not a JSON object",
    ),
    "a score in percent": (
        set_in(["optimizers", "adam", "winner", "mean"], 52.7),
        "field optimizers.adam.winner.mean is 52.7, not a finite number in [0, 1]",
    ),
    "a negative time": (
        set_in([*ADAM_RUN, "wall_time_s"], -1.0),
        "field optimizers.adam.trials[0].runs[0].wall_time_s is -1.0, not a finite number in [0, inf]",
    ),
    "a non-finite number": (
        set_in(["optimizers", "adam", "trials", 0, "score"], math.nan),
        "field optimizers.adam.trials[0].score is nan, not a finite number in [0, 1]",
    ),
    "an unknown method": (set_in(["method"], "bayes"), "field method is 'bayes', not one of grid, quasirandom"),
    "newer format": (set_in(["format"], 2), "format 2, this optbench reads up to format 1: it was written by a newer"),
}


@pytest.mark.parametrize("damage", DAMAGED_RECORDS)
def test_a_damaged_tuning_record_is_one_warning_naming_the_field_and_changes_nothing(tmp_path, damage):
    change, expected = DAMAGED_RECORDS[damage]
    results = study_folder(tmp_path / "results")
    record = json.loads(PUBLISHED_RECORD.read_text())
    damaged = change(record)
    (results / "tuning-damaged.json").write_text(json.dumps(record if damaged is None else damaged))  # NaN token
    with pytest.raises(DamagedRunFile) as raised:
        tuning_record.read(results / "tuning-damaged.json")
    assert str(raised.value).startswith(f"{results / 'tuning-damaged.json'}: ")
    before = {path: path.read_bytes() for path in sorted(results.rglob("*")) if path.is_file()}
    outcome = aggregate(results, tmp_path / "out", draw_figures=False)
    about_it = [warning for warning in outcome.warnings if "tuning-damaged.json" in warning]
    assert len(about_it) == 1 and "\n" not in about_it[0]
    assert about_it[0].startswith(f"tuning-damaged.json: {expected}") and about_it[0].endswith(IGNORED)
    assert set(tuning_rows(tmp_path / "out")) == {"lion", "sgd"}  # the good record is still read
    assert {path: path.read_bytes() for path in sorted(results.rglob("*")) if path.is_file()} == before


def test_every_published_tuning_record_parses_and_one_without_format_reads_as_format_1(tmp_path):
    published = [path for folder in (REPO / "docs", REPO / "results") for path in tuning_record.find_records(folder)]
    assert PUBLISHED_RECORD in published
    for path in published:
        record = tuning_record.read(path)
        assert record.version == 1 and record.optimizers and record.run_dirs
    content = json.loads(PUBLISHED_RECORD.read_text())
    del content["format"]
    older = tuning_record.parse(content, "tuning-older.json")
    assert (
        older.version == 1
        and older.optimizers["adam"].winner == tuning_record.read(PUBLISHED_RECORD).optimizers["adam"].winner
    )


def test_the_writer_parses_what_it_writes_and_writes_nothing_off_the_schema(tmp_path):
    record = json.loads(PUBLISHED_RECORD.read_text())
    record["optimizers"]["adam"]["trials"][1]["runs"][0]["epochs_done"] = 3.5
    with pytest.raises(DamagedRunFile, match=r"field optimizers\.adam\.trials\[1\]\.runs\[0\]\.epochs_done is 3\.5"):
        tuning_record.write(tmp_path / "results", record)
    assert not (tmp_path / "results").exists()
    record["optimizers"]["adam"]["trials"][1]["runs"][0]["epochs_done"] = 3
    path = tuning_record.write(tmp_path / "results", record)
    assert tuning_record.read(path) == tuning_record.read(PUBLISHED_RECORD)


def test_arms_tuned_with_different_budgets_are_one_warning_naming_each_budget(tmp_path):
    """Issue 56: a newcomer tuned with 4 trials sat beside baselines tuned with 8 and the report said nothing.
    Here sgd and lion are tuned with 4 trials (tune_demo) and radam with 2 (its own study)."""
    from optbench.analysis.judging.tuning_report import read_tuning

    study_folder(tmp_path)
    assert not [line for line in read_tuning(tmp_path).warnings if "different budgets" in line]
    write_tuning_study(tmp_path, {"radam": SGD_TRIALS}, study="tune_radam")
    budgets = [line for line in read_tuning(tmp_path).warnings if "different budgets" in line]
    assert len(budgets) == 1
    assert "radam: 2 trials" in budgets[0] and "lion: 4 trials" in budgets[0] and "sgd: 4 trials" in budgets[0]


def test_a_record_selecting_on_a_loss_holds_losses_above_one_and_an_accuracy_record_does_not(tmp_path):
    """A language model's tuning selects on its validation loss (1.5-4.2 nats): the record must hold it, while an
    accuracy record still refuses a score in percent."""
    record = json.loads(PUBLISHED_RECORD.read_text())
    record["select_on"] = "val_loss_best"
    adam = record["optimizers"]["adam"]
    adam["trials"][0]["score"] = adam["trials"][0]["runs"][0]["score"] = 2.375
    adam["winner"].update(mean=1.92, sd=1.2, scores=[1.9, 1.94])
    path = tuning_record.write(tmp_path / "results", record)
    assert tuning_record.read(path).optimizers["adam"].trials[0].runs[0].score == 2.375
    record["select_on"] = "val_acc_best"
    with pytest.raises(DamagedRunFile, match=r"trials\[0\]\.score is 2\.375, not a finite number in \[0, 1"):
        tuning_record.write(tmp_path / "other", record)


def test_only_study_keeps_its_own_tuning_and_never_another_tunings_trials(tmp_path):
    """A folder of two studies and two tunings (as docs/cross-workload-study/runs holds a ladder, the CIFAR part and
    a language model's trials): with --only-study the named study's runs (sgd and lion at 2 epochs) and its tuning's
    record; the 4-epoch runs and tune_other's record are left out, and tune_other's trials, whose settings the study
    plans (clean, 2 epochs), stay set aside rather than joining it as lr variants."""
    from optbench.specs.study_spec import load_study

    results = tmp_path / "results"
    for optimizer, accuracies in {"sgd": [0.90, 0.91, 0.92], "lion": [0.88, 0.90, 0.89]}.items():
        for seed, accuracy in enumerate(accuracies):
            write_run(results, ramp_records(accuracy, epochs=2), optimizer=optimizer, seed=seed, variant="e2")
            write_run(results, ramp_records(accuracy, epochs=4), optimizer=optimizer, seed=seed, variant="e4")
    write_tuning_study(results, {"lion": lion_trials(), "sgd": SGD_TRIALS}, study="tune_demo")
    write_tuning_study(results / "other", {"sgd": [Trial(0.3, 0.2, [0.2, 0.3])]}, study="tune_other")
    grid = {"optimizer": ["sgd", "lion"], "seed": [0, 1, 2], "dataset": ["cifar10"], "noise": ["none"], "epochs": 2}
    spec = tmp_path / "demo_2ep.yaml"
    spec.write_text(json.dumps({"id": "demo_2ep", "statement": "s", "grid": grid, "tuned_by": "tune_demo"}))
    study = load_study(spec)
    everything = aggregate(results, tmp_path / "all", draw_figures=False, study=study)
    assert everything.runs == 12 and "### Tuning study tune_other" in everything.report.read_text()
    outcome = aggregate(results, tmp_path / "only", draw_figures=False, study=study, only_study=True)
    summary = read_csv(tmp_path / "only" / "summary.csv")
    assert outcome.runs == len(summary) == 6 and all("/e2/" in row["run_id"] for row in summary)
    assert {row["arm"] for row in read_csv(tmp_path / "only" / "tables" / "results.csv")} == {"sgd", "lion"}
    report = outcome.report.read_text()
    assert "### Tuning study tune_demo" in report and "tune_other" not in report
    assert "14 more run directories are tuning trials" in report  # tune_demo's: 3 + 3 + 1 + 1 + 3 + 3
    assert "8 more run directories here are other studies' (settings demo_2ep does not plan" in report  # 6 + 2
