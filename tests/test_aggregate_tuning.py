"""Tuning studies in the aggregator: their trials are set aside, their cost and winners tabulated, their
search drawn, winners at an edge of the space flagged, and a broken tuning file is a warning.

A main study (sgd and lion, seeds 0-2, default hyperparameters) sits beside a tuning study whose trial
runs are real-looking run directories (tests/fixtures/aggregate/fake_tuning.py), so every number is known.
"""

import csv
import json
import sys

import pytest
from conftest import REPO
from fixtures.aggregate.fake_runs import ramp_records, write_run
from fixtures.aggregate.fake_tuning import Trial, write_tuning_study

from optbench.analysis import aggregate
from optbench.analysis.tuning_report import EDGE_MARKER, edge_text
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
