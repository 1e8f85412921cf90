"""A launch's estimate kept, then set beside what its runs took: the check that a study's estimate holds.

`python src/study.py STUDY` prices the runs it is about to train as its dry run does (dry_run.print_estimate,
the same lines printed) and `record` adds that to the study's estimate record (formats/study_estimate.py:
`<results_dir>/estimate-<study>.json`) before the first sweep starts: each run's predicted seconds, what it had
already spent (an unfinished run's earlier sessions), and where the rates came from. `--status` then prints
`comparison_lines`: for each launch, the predicted seconds of its runs that have finished against what they
took, their wall time plus their start-up (summary.json's `startup_s`: the process's start, imports, data and
model, which the wall time leaves out), and the ratio. Both sums are serial, so a parallel launcher's overlap
changes neither. No torch.
"""

import time
from dataclasses import dataclass
from pathlib import Path

from optbench.durations import format_duration
from optbench.errors import DamagedRunFile
from optbench.formats import run_summary, study_estimate
from optbench.studies.dry_run import StudyEstimate


def spent_seconds(run_dir: Path) -> float | None:
    """A run's wall time plus start-up so far; None without a readable summary (not started, or damaged)."""
    try:
        summary = run_summary.read(Path(run_dir))
    except DamagedRunFile:
        return None
    if summary is None:
        return None
    return float(summary.wall_time_s or 0.0) + float(summary.startup_s or 0.0)


def record(study_id: str, results_dir: Path, estimate: StudyEstimate, launcher: str) -> Path:
    """Add this launch's estimate to the study's record, before anything trains."""
    runs = tuple(
        study_estimate.PlannedSeconds(
            run_dir=relative_to(Path(run.run_dir), results_dir),
            predicted_s=seconds,
            spent_s=spent_seconds(Path(run.run_dir)) or 0.0,
        )
        for run, seconds in estimate.runs
    )
    launch = study_estimate.Launch(
        seconds=estimate.seconds,
        runs=runs,
        made=time.strftime("%Y-%m-%dT%H:%M:%S"),
        launcher=launcher,
        how=estimate.how,
    )
    return study_estimate.add_launch(results_dir, study_id, launch)


def relative_to(run_dir: Path, results_dir: Path) -> str:
    try:
        return str(run_dir.relative_to(results_dir))
    except ValueError:  # a run outside the results folder (hydra.sweep.dir set elsewhere): its own path
        return str(run_dir)


def comparison_lines(study_id: str, results_dir: Path) -> list[str]:
    """`estimate ...: X for n runs; the k finished took Y (wall time and start-up), r x the estimate` per launch;
    [] without a record. A damaged record is one line saying so: --status still shows the runs."""
    try:
        kept = study_estimate.read(study_estimate.path_for(results_dir, study_id))
    except DamagedRunFile as error:
        return [f"estimate: {error}"]
    return [] if kept is None else [launch_line(launch, results_dir) for launch in kept.launches]


@dataclass(frozen=True)
class Comparison:
    """A launch's finished runs: how many, what the estimate priced for them, and what they took after it."""

    finished: int
    predicted_s: float
    actual_s: float  # wall time plus start-up, less what each had spent when the estimate was made


def compared(launch: study_estimate.Launch, results_dir: Path) -> Comparison:
    predicted = actual = 0.0
    finished = 0
    for run in launch.runs:
        summary = finished_summary(Path(results_dir) / run.run_dir)
        if summary is None:
            continue
        finished += 1
        predicted += run.predicted_s
        actual += max(0.0, float(summary.wall_time_s or 0.0) + float(summary.startup_s or 0.0) - run.spent_s)
    return Comparison(finished, predicted, actual)


def launch_line(launch: study_estimate.Launch, results_dir: Path) -> str:
    made = f"made {launch.made} " if launch.made else ""
    how = f", from {launch.how}" if launch.how else ""
    head = f"estimate ({made}before training{how}): {format_duration(launch.seconds)} for {len(launch.runs)} run(s)"
    took = compared(launch, results_dir)
    if not took.finished:
        return f"{head}; none of them has finished yet"
    ratio = f", {took.actual_s / took.predicted_s:.2f} x the estimate" if took.predicted_s > 0 else ""
    return (
        f"{head}; the {took.finished} finished took {format_duration(took.actual_s)} (wall time and start-up) "
        f"against {format_duration(took.predicted_s)} estimated for them{ratio}"
    )


def finished_summary(run_dir: Path) -> run_summary.Summary | None:
    try:
        summary = run_summary.read(run_dir)
    except DamagedRunFile:
        return None
    return summary if summary is not None and summary.finished else None
