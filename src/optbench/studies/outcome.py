"""After a sweep: which of its planned runs did not finish, read from each run's summary.json.

Launchers that run jobs elsewhere (joblib workers, submitit's local executor, SLURM) keep a run's
failure in the worker: the sweep itself exits 0. The study runner therefore reads every planned
run's summary.json after its sweep (`unfinished(runs)`) and names each run that is not completed or
diverged: failed, interrupted, still running, unreadable, or with no summary at all (refused or never
started), or whose summary names another run id than the planned one. Standard library only, through optbench.rundir.
"""

from pathlib import Path

from optbench.errors import DamagedRunFile
from optbench.formats import run_summary
from optbench.formats.run_summary import COMPLETED, DIVERGED, FAILED, FINAL_STATUSES


def run_outcome(run_dir: Path, expected_run_id: str | None = None) -> str:
    """summary.json's status, `no summary.json`, `unreadable summary.json`, or `other experiment` when the
    summary names another run than the one planned for this directory."""
    try:
        summary = run_summary.read(run_dir)
    except DamagedRunFile as error:
        return f"unreadable summary.json: {error}"
    if summary is None:
        return "no summary.json (refused or never started; see the sweep's log)"
    if expected_run_id and summary.run_id != expected_run_id:
        return (
            f"other experiment: its summary names run {summary.run_id}, the study planned "
            f"{expected_run_id} (see the sweep's log for the refusal)"
        )
    return f"{summary.status}: {summary.error}" if summary.error else summary.status


def unfinished(run_dirs: list[Path], expected_run_ids: list[str | None] | None = None) -> list[tuple[Path, str]]:
    """(run directory, outcome) for every run whose summary does not say completed or diverged, or names
    another run than `expected_run_ids` (one per directory) plans."""
    expected = expected_run_ids or [None] * len(run_dirs)
    outcomes = [(Path(run_dir), run_outcome(run_dir, run_id)) for run_dir, run_id in zip(run_dirs, expected)]
    return [(run_dir, outcome) for run_dir, outcome in outcomes if outcome.split(":")[0] not in FINAL_STATUSES]


def tally(outcomes: list[str]) -> dict[str, int]:
    """completed / diverged / failed (anything else that did not finish) counts of run outcomes."""
    counts = {COMPLETED: 0, DIVERGED: 0, FAILED: 0}
    for what in outcomes:
        status = what.split(":")[0]
        counts[status if status in (COMPLETED, DIVERGED) else FAILED] += 1
    return counts


def tally_line(counts: dict[str, int]) -> str:
    """`3 completed, 0 diverged, 1 failed, 2 skipped`: how a sweep or study ended."""
    return ", ".join(f"{counts.get(key, 0)} {key}" for key in (COMPLETED, DIVERGED, FAILED, "skipped"))
