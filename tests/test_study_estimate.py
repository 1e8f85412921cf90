"""A study's estimate checked against what its runs took: runs record their start-up (summary.json's startup_s),
a launch keeps the estimate it made before training (estimate-<study>.json, formats/study_estimate.py), runs on
disk price the start-up they recorded, and --status sets each launch's estimate beside its finished runs' time."""

import json
import time
from pathlib import Path

import pytest
import yaml
from fixtures.aggregate.fake_runs import ramp_records, write_run
from test_study import SMALL

from optbench.errors import DamagedRunFile
from optbench.formats import study_estimate
from optbench.studies import estimate, estimate_record, study_command
from optbench.training import loop
from optbench.training.run import train


def launch(runs: list[tuple[str, float, float]], seconds: float | None = None) -> study_estimate.Launch:
    planned = tuple(study_estimate.PlannedSeconds(run_dir, predicted, spent) for run_dir, predicted, spent in runs)
    return study_estimate.Launch(
        seconds=sum(run.predicted_s for run in planned) if seconds is None else seconds,
        runs=planned,
        made="2026-11-28T19:00:00",
        launcher="basic",
        how="recorded rates of 3 run(s) of the same shape on disk",
    )


def test_each_launch_is_added_and_the_earlier_ones_kept(tmp_path):
    first = launch([("a/seed0", 10.0, 0.0), ("a/seed1", 12.5, 0.0)])
    second = launch([("a/seed2", 11.0, 3.0)])
    study_estimate.add_launch(tmp_path, "s", first)
    path = study_estimate.add_launch(tmp_path, "s", second)
    assert path == tmp_path / "estimate-s.json"
    assert study_estimate.read(path) == study_estimate.EstimateRecord("s", (first, second))


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ('{"format": 1, "study": "s", "launches": [{"seconds": -1, "runs": []}]}', "launches[0].seconds"),
        ('{"format": 1, "study": "s", "launches": [{"seconds": 1, "runs": [{"predicted_s": 1}]}]}', "run_dir"),
        ('{"format": 1, "study": "s", "launches": {}}', "launches"),
        ('{"format": 1, "study": "s", "launch', "is damaged"),
    ],
)
def test_a_damaged_record_names_the_field_and_a_new_launch_does_not_replace_it(tmp_path, content, field):
    path = tmp_path / "estimate-s.json"
    path.write_text(content)
    with pytest.raises(DamagedRunFile, match=field.replace("[", r"\[").replace("]", r"\]")):
        study_estimate.add_launch(tmp_path, "s", launch([("a/seed0", 10.0, 0.0)]))
    assert path.read_text() == content
    (line,) = estimate_record.comparison_lines("s", tmp_path)
    assert line.startswith("estimate: ") and str(path) in line


def finished_run(results: Path, seed: int, wall_time_s: float, startup_s: float | None, status="completed") -> str:
    run_dir = write_run(results, ramp_records(0.8), seed=seed, wall_time_s=wall_time_s, status=status)
    summary = json.loads((run_dir / "summary.json").read_text())
    if startup_s is not None:
        summary["startup_s"] = startup_s
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return str(run_dir.relative_to(results))


def test_status_sets_each_launch_beside_what_its_finished_runs_took(tmp_path):
    """Actual = wall time + start-up, less what an unfinished run had already spent when the estimate was made;
    runs not finished yet are left out of both sides."""
    a = finished_run(tmp_path, 0, wall_time_s=30.0, startup_s=10.0)
    b = finished_run(tmp_path, 1, wall_time_s=50.0, startup_s=2.0)  # resumed: 20 s of it spent before the launch
    c = finished_run(tmp_path, 2, wall_time_s=5.0, startup_s=1.0, status="interrupted")
    study_estimate.add_launch(tmp_path, "s", launch([(a, 32.0, 0.0), (b, 24.0, 20.0), (c, 40.0, 0.0)]))
    study_estimate.add_launch(tmp_path, "s", launch([("cifar10/none-0.0/sgd/seed9", 8.0, 0.0)]))
    first, second = estimate_record.comparison_lines("s", tmp_path)
    actual, predicted = (30 + 10) + (50 + 2 - 20), 32 + 24
    assert first.startswith(
        "estimate (made 2026-11-28T19:00:00 before training, from recorded rates of 3 run(s) of the same shape on "
        "disk): 96 s for 3 run(s); the 2 finished took 72 s (wall time and start-up) against 56 s estimated for them"
    )
    assert first.endswith(f", {actual / predicted:.2f} x the estimate") and f"{actual / predicted:.2f}" == "1.29"
    assert second.endswith(": 8 s for 1 run(s); none of them has finished yet")
    assert estimate_record.comparison_lines("other", tmp_path) == []


def test_recorded_start_ups_price_a_run_and_once_per_sweep_its_process(tmp_path):
    """A sweep's first run recorded Python's start and the imports (30 s), the others only their own (0.5 s)."""
    runs = [
        write_run(tmp_path, ramp_records(0.8), seed=seed, wall_time_s=9.0) for seed, startup in enumerate((30, 0.5))
    ]
    runs += [write_run(tmp_path, ramp_records(0.8), seed=seed, wall_time_s=9.0) for seed in (2, 3)]
    for run_dir, startup in zip(runs, (30.0, 0.5, 0.7, 0.4)):
        summary = json.loads((run_dir / "summary.json").read_text())
        (run_dir / "summary.json").write_text(json.dumps({**summary, "startup_s": startup}))
    work = estimate.recorded_workload(runs[0])
    assert work is not None
    (rate,) = estimate.recorded_rates([(work, run_dir) for run_dir in runs]).values()
    assert rate.startup_s == pytest.approx((0.5 + 0.7) / 2) and rate.process_startup_s == pytest.approx(30 - 0.6)
    without = estimate.RecordedRate(rate.runs, rate.train_rate, rate.eval_rate, rate.epoch_overhead_s)
    assert estimate.recorded_seconds(work, rate) == pytest.approx(estimate.recorded_seconds(work, without) + 0.6)
    assert estimate.startup_parts([]) == (0.0, 0.0)


def test_a_run_records_its_start_up_from_the_process_start_then_from_the_run_before(tiny_config, tmp_path, monkeypatch):
    monkeypatch.setattr(loop, "process_started", lambda: time.time() - 100.0)
    monkeypatch.setattr(loop.StartUp, "previous_run_ended", None)
    first = train(tiny_config("seed=0"), tmp_path / "first")
    second = train(tiny_config("seed=1"), tmp_path / "second")
    assert first["startup_s"] >= 100.0  # the process's start: 100 s ago
    assert 0.0 <= second["startup_s"] < 100.0  # the multirun's next run: from the first run's end
    assert "startup_s" not in json.dumps(json.loads((tmp_path / "first" / "record.json").read_text())["identity"])


def test_process_started_reads_this_process(monkeypatch):
    started = loop.process_started()
    assert started is not None and 0 <= time.time() - started < 24 * 3600


@pytest.mark.slow  # two tiny runs through a Hydra multirun
def test_a_launch_records_its_estimate_before_training_and_status_compares_it(tmp_path, capsys):
    results = tmp_path / "results"
    study = tmp_path / "est.yaml"
    grid = {"optimizer": ["sgd"], "seed": [0, 1], "dataset": ["synthetic"], "noise": [{"name": "none"}], "epochs": 1}
    study.write_text(yaml.safe_dump({"id": "est", "statement": "an estimate checked", "grid": grid}))
    argv = [str(study), "--set", *SMALL, "train.progress_bar=false", f"paths.results_dir={results}"]
    assert study_command.main(argv) == 0
    out = capsys.readouterr().out
    assert out.index("estimated time: ") < out.index("sweep 1: ")  # made before the sweep started
    kept = study_estimate.read(results / "estimate-est.json")
    assert kept is not None and len(kept.launches) == 1
    (made,) = kept.launches
    assert len(made.runs) == 2 and made.seconds == pytest.approx(sum(run.predicted_s for run in made.runs))
    assert made.how and made.launcher == "basic" and {run.spent_s for run in made.runs} == {0.0}
    summaries = [json.loads(path.read_text()) for path in results.rglob("summary.json")]
    assert all(summary["startup_s"] > 0 for summary in summaries)
    assert study_command.main([*argv, "--status"]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    took = sum(summary["wall_time_s"] + summary["startup_s"] for summary in summaries)
    assert line.startswith("estimate (made ") and "the 2 finished took" in line
    assert line.endswith(f", {took / made.seconds:.2f} x the estimate")
    assert study_command.main([*argv, "--no-estimate"]) == 0  # nothing left to run, and no estimate recorded
    assert len(study_estimate.read(results / "estimate-est.json").launches) == 1
