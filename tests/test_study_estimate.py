"""A study's estimate checked against what its runs took: runs record their start-up (summary.json's startup_s),
a launch keeps the estimate it made before training (estimate-<study>.json, formats/study_estimate.py), runs on
disk price the start-up they recorded, and --status sets each launch's estimate beside its finished runs' time."""

import json
import time
from pathlib import Path

import pytest
import yaml
from conftest import compose_config
from fixtures.aggregate.fake_runs import ramp_records, write_run
from test_study import SMALL

from optbench import run_states
from optbench.errors import DamagedRunFile
from optbench.formats import study_estimate
from optbench.studies import estimate, estimate_record, probe, study_command
from optbench.studies.plan import PlannedRun
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


def test_runs_that_say_which_started_their_process_split_the_start_up_however_few():
    """A pilot of one sweep of two runs priced a run's start-up at their median, half the process's 10.9 s, and a
    relaunch after a one-run pilot at 0.40 x what it took (the largest less the median was 0). Runs now record the
    part of their start-up counted from their process's start (summary.json's process_startup_s), which splits it
    at any count: later runs give a run's own start-up, process-starting runs what starting the process adds."""
    assert estimate.startup_parts([(10.9, 10.9), (0.17, 0.0)]) == pytest.approx((0.17, 10.73))
    assert estimate.startup_parts([(10.9, 10.9)]) == (0.0, 10.9)  # no later run seen: its own start-up unknown
    assert estimate.startup_parts([(6.0, 6.0), (6.4, 6.4), (5.8, 5.8)]) == (0.0, 6.0)  # three one-run processes
    # a resumed run: its first session started the process (5 s), its second followed another run (0.5 s)
    assert estimate.startup_parts([(5.5, 5.0), (0.2, 0.0), (0.3, 0.0)]) == pytest.approx((0.25, 4.75))
    assert estimate.startup_parts([(30.0, None), (0.5, None), (0.7, None)]) == pytest.approx((0.7, 29.3))  # older


def test_a_run_records_its_start_up_from_the_process_start_then_from_the_run_before(tiny_config, tmp_path, monkeypatch):
    monkeypatch.setattr(loop, "process_started", lambda: time.time() - 100.0)
    monkeypatch.setattr(loop.StartUp, "previous_run_ended", None)
    first = train(tiny_config("seed=0"), tmp_path / "first")
    second = train(tiny_config("seed=1"), tmp_path / "second")
    assert first["startup_s"] >= 100.0  # the process's start: 100 s ago
    assert 0.0 <= second["startup_s"] < 100.0  # the multirun's next run: from the first run's end
    assert first["process_startup_s"] == first["startup_s"] and second["process_startup_s"] == 0.0
    assert "startup_s" not in json.dumps(json.loads((tmp_path / "first" / "record.json").read_text())["identity"])


def test_process_started_reads_this_process(monkeypatch):
    started = loop.process_started()
    assert started is not None and 0 <= time.time() - started < 24 * 3600


@pytest.mark.slow  # two tiny runs through a Hydra multirun
@pytest.mark.extended
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
    # Relaunched with a third seed: its estimate prices only that run, and each launch is compared with its own runs.
    study.write_text(yaml.safe_dump({"id": "est", "statement": "s", "grid": {**grid, "seed": [0, 1, 2]}}))
    assert study_command.main(argv) == 0
    capsys.readouterr()
    kept = study_estimate.read(results / "estimate-est.json")
    assert kept is not None and kept.launches[0] == made
    (new,) = kept.launches[1].runs
    assert new.run_dir.endswith("seed2") and new.spent_s == 0.0
    assert study_command.main([*argv, "--status"]) == 0
    first, second = capsys.readouterr().out.splitlines()[-2:]
    assert first == line  # the first launch's runs: unchanged by the relaunch
    third = json.loads((results / new.run_dir / "summary.json").read_text())
    assert "1 run(s); the 1 finished took" in second
    assert second.endswith(f", {(third['wall_time_s'] + third['startup_s']) / new.predicted_s:.2f} x the estimate")


# ---- a study with no runs of its shape on disk: the steps timed at the runs' threads, the rest probed ----------


def test_the_steps_are_timed_at_the_runs_thread_count_and_cached_per_thread_count(tmp_path, monkeypatch):
    """A fresh MNIST-1D study (device_policy.threads=1) timed its steps in the study's process at torch's default,
    every core: on the busy 2-core CPU 2,742 images/s, while its runs trained at 46,000-75,000 (docs/studies.md "The
    estimate"). The shape now carries the runs' thread count, the timing uses it, and the cache keeps one rate per
    thread count; the study's process gets its own count back."""
    import torch

    from optbench.device import fastest

    monkeypatch.setenv("OPTBENCH_CACHE_DIR", str(tmp_path))
    seen: list[int] = []
    monkeypatch.setattr(
        fastest, "images_per_second", lambda device, model: seen.append(torch.get_num_threads()) or 1000.0 * len(seen)
    )
    one = estimate.workload(compose_config(["workload=mnist1d", "device_policy.threads=1", "device=cpu"]), 0)
    assert one.shape[-1] == 1 and estimate.workload(compose_config(["workload=mnist1d"]), 0).shape[-1] == 0
    two = (*one.shape[:-1], 2)
    before = torch.get_num_threads()
    rates = estimate.measure_rates({one.shape, two})
    assert seen == [1, 2] and torch.get_num_threads() == before
    assert rates[one.shape][1] == 1000.0 and rates[two][1] == 2000.0
    assert estimate.measure_rates({one.shape}) == {one.shape: rates[one.shape]} and len(seen) == 2  # cached


def planned(overrides: list[str]) -> PlannedRun:
    return PlannedRun(overrides, Path("unused"), compose_config(overrides), run_states.NEW)


def test_a_probe_sweep_trains_the_run_s_own_overrides_briefly_into_its_own_folder(tmp_path):
    """Its seed, epochs and output replaced; no tracker, no mirror, and no download where the dataset downloads."""
    run = planned(
        ["optimizer=adam", "seed=4", "epochs=30", "workload=mnist1d", "device_policy.threads=1", "logger=csv"]
        + ["paths.results_dir=results/x", "paths.mirror_dir=/mnt/drive"]
    )
    assert probe.probe_overrides(run, tmp_path) == [
        "optimizer=adam",
        "workload=mnist1d",
        "device_policy.threads=1",
        f"seed={','.join(str(seed) for seed in range(probe.PROBE_RUNS))}",
        f"epochs={probe.PROBE_EPOCHS}",
        f"paths.results_dir={tmp_path}",
        "paths.mirror_dir=null",
        "logger=none",
        "train.progress_bar=false",
    ]
    assert probe.probe_overrides(planned(["dataset=cifar10"]), tmp_path)[-1] == "dataset.download=false"
    work = estimate.workload(run.cfg, 0)
    assert work is not None
    epoch = work.train_images / 1000.0 + work.eval_images / (estimate.EVAL_SPEEDUP["cpu"] * 1000.0)
    assert probe.affordable(work, 1000.0, "cpu") == (probe.PROBE_RUNS * epoch <= probe.PROBE_MAX_S)
    assert probe.affordable(work, 1e6, "cpu") and not probe.affordable(work, 10.0, "cpu")


def test_a_probe_is_cached_like_a_timing_and_a_failed_one_prices_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTBENCH_CACHE_DIR", str(tmp_path))
    run = planned(["workload=mnist1d", "device_policy.threads=1"])
    shape = estimate.workload(run.cfg, 0).shape
    trained: list[int] = []
    measured = estimate.RecordedRate(3, 50_000.0, 300_000.0, 0.025, 0.17, 5.6)
    monkeypatch.setattr(probe, "trained_rate", lambda *_: trained.append(1) or (measured, ""))
    monkeypatch.setattr(estimate, "machine_load", lambda: 3.0)
    assert probe.probe_rate(run, shape, print) == (measured, "trained now")
    cached = probe.probe_rate(run, shape, print)
    assert cached[0] == measured and cached[1].startswith("cached in ") and len(trained) == 1  # busy then and now
    monkeypatch.setattr(estimate, "machine_load", lambda: 0.2)
    assert probe.probe_rate(run, shape, print)[0] == measured and len(trained) == 2  # quiet now: probed again
    assert probe.probe_rate(run, shape, print)[1].startswith("cached in ") and len(trained) == 2  # a quiet one stands
    other = planned(["workload=mnist1d", "device_policy.threads=2"])
    monkeypatch.setattr(probe, "trained_rate", lambda *_: (None, "the probe sweep failed (no data)"))
    assert probe.probe_rate(other, estimate.workload(other.cfg, 0).shape, print) == (
        None,
        "the probe sweep failed (no data)",
    )
    assert len(fastest_cache()) == 1  # the failure cached nothing
    cache = fastest_cache()
    (key,) = cache
    fastest_write({key: {**cache[key], "probe": {"runs": "three"}}})  # damaged: probed again
    monkeypatch.setattr(probe, "trained_rate", lambda *_: trained.append(1) or (measured, ""))
    assert probe.probe_rate(run, shape, print) == (measured, "trained now") and len(trained) == 3


def fastest_cache() -> dict:
    from optbench.device import fastest

    return fastest.read_cache(estimate.RATE_CACHE)


def fastest_write(cache: dict) -> None:
    from optbench.device import fastest

    fastest.write_cache(cache, estimate.RATE_CACHE)


@pytest.mark.slow  # a probe sweep: one child train.py process, three MNIST-1D runs of one epoch
def test_a_fresh_study_s_estimate_prices_what_its_probe_sweep_measured(tmp_path, capsys, monkeypatch):
    """Before, a study with no runs of its shape on disk was priced by timed steps alone: no start-up, no records;
    a fresh MNIST-1D study's estimate was 0.27 x what it took (3.7 x too long: its steps timed at the wrong thread
    count), and at the right thread count 1.5 s of its 8.9 s. Now: the probe's rates, its runs' start-up, and once
    per sweep its process's, by hand from what the probe cached."""
    from optbench.durations import format_duration

    monkeypatch.setenv("OPTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    results = tmp_path / "results"
    study = tmp_path / "fresh.yaml"
    grid = {"optimizer": ["sgd", "adam"], "seed": [0], "dataset": ["mnist1d"], "noise": [{"name": "none"}], "epochs": 2}
    overrides = ["workload=mnist1d", "device_policy.threads=1", "device=cpu", f"paths.results_dir={results}"]
    study.write_text(yaml.safe_dump({"id": "fresh", "statement": "s", "grid": grid, "overrides": overrides}))
    assert study_command.main([str(study), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "estimating: a probe sweep of 3 runs of 1 epoch of cnn1d width 25 on mnist1d" in out
    assert "from a probe sweep of 3 runs of 1 epoch (trained now): " in out
    (entry,) = (entry for key, entry in fastest_cache().items() if "|probe|mnist1d|" in key)
    rate = estimate.RecordedRate(**entry["probe"])
    assert rate.runs == 3 and rate.startup_s > 0 and rate.process_startup_s > rate.startup_s  # Python and imports
    work = estimate.workload(compose_config([*overrides, "epochs=2"]), 0)
    seconds = 2 * estimate.recorded_seconds(work, rate) + rate.process_startup_s  # one sweep: one process
    assert f"estimated time: {format_duration(seconds)} for 2 run(s) still to do" in out
    assert not list(results.rglob("summary.json"))  # the probe trained elsewhere
    assert study_command.main([str(study), "--dry-run"]) == 0
    again = capsys.readouterr().out
    assert "estimating: a probe" not in again and f"estimated time: {format_duration(seconds)}" in again


def test_a_relaunched_sweep_prices_the_finished_runs_it_passes_over(tmp_path):
    """A relaunched MNIST-1D study took 1.20-1.34 x its estimate: its sweep passes over the finished seeds (train()
    skips them), and each skip lands in the start-up the next run still to do records. Each run to do now carries
    the process's start-up if it is its sweep's first, and a run's own start-up per finished run passed over since
    the run before it; finished runs after the last one to do are recorded by no run, and priced by none."""
    from optbench.studies import dry_run
    from optbench.studies.plan import Sweep

    rate = estimate.RecordedRate(4, 50_000.0, 300_000.0, 0.025, startup_s=0.2, process_startup_s=6.0)

    def runs(*states: str) -> list[PlannedRun]:
        made = [planned(["workload=mnist1d", "device_policy.threads=1", f"seed={seed}"]) for seed in range(len(states))]
        for run, state in zip(made, states):
            run.status = state
        return made

    done, new, unfinished = run_states.DONE, run_states.NEW, run_states.UNFINISHED
    sweeps = [
        (Sweep({}), runs(done, done, new, done, unfinished, done)),
        (Sweep({}), runs(done, done)),  # all finished: never launched
        (Sweep({}), runs(new, done)),
    ]
    shape = estimate.workload(sweeps[0][1][2].cfg, 0).shape
    to_do = [(run, 10.0) for _, sweep_runs in sweeps for run in sweep_runs if run.status != done]
    priced = dry_run.with_sweep_startups(to_do, sweeps, {shape: rate})
    assert [seconds for _, seconds in priced] == pytest.approx([10 + 6.0 + 2 * 0.2, 10 + 0.2, 10 + 6.0])


def test_the_estimate_accuracy_in_the_docs_is_the_benchmark_s():
    """docs/studies.md's paragraph on how close the estimate comes is benchmarks/estimate_accuracy.py's, written from
    its JSON (`--from-json benchmarks/results/estimate-accuracy.json --docs` rewrites it), never typed."""
    from test_fidelity import script_module

    accuracy = script_module("benchmarks/estimate_accuracy.py")
    figures = json.loads((accuracy.REPO / "benchmarks" / "results" / "estimate-accuracy.json").read_text())
    current = accuracy.DOC.read_text()
    assert current == accuracy.with_block(current, accuracy.docs_text(figures)), (
        "stale: run python benchmarks/estimate_accuracy.py --from-json benchmarks/results/estimate-accuracy.json --docs"
    )
    for pair in figures["pairs"]:  # each ratio is what its launch's own figures give
        for launch in (pair["fresh"], pair["relaunched"]):
            assert launch["ratio"] == pytest.approx(launch["actual_s"] / launch["estimate_s"])
            assert launch["runs_finished"] == launch["runs_priced"]
