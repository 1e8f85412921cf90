"""After a sweep: which of its planned runs did not finish, read from each run's summary.json.

Launchers that run jobs elsewhere (joblib workers, submitit's local executor, SLURM) keep a run's
failure in the worker: the sweep itself exits 0. The study runner therefore reads every planned
run's summary.json after its sweep (`unfinished(runs)`) and names each run that is not completed or
diverged: failed, interrupted, still running, unreadable, or with no summary at all (refused or never
started). Standard library only, through optbench.rundir.
"""

from pathlib import Path

from optbench.errors import DamagedRunFile
from optbench.rundir import FINAL_STATUSES, RunDir


def run_outcome(run_dir: Path) -> str:
    """summary.json's status, `no summary.json` or `unreadable summary.json`."""
    try:
        summary = RunDir(run_dir).read_summary()
    except DamagedRunFile:
        return "unreadable summary.json"
    if summary is None:
        return "no summary.json (refused or never started; see the sweep's log)"
    status = str(summary.get("status"))
    error = summary.get("error")
    return f"{status}: {error}" if error else status


def unfinished(run_dirs: list[Path]) -> list[tuple[Path, str]]:
    """(run directory, outcome) for every run whose summary does not say completed or diverged."""
    outcomes = [(Path(run_dir), run_outcome(run_dir)) for run_dir in run_dirs]
    return [(run_dir, outcome) for run_dir, outcome in outcomes if outcome.split(":")[0] not in FINAL_STATUSES]
