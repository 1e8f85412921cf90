"""A whole run directory read at once: record.json, summary.json and metrics.jsonl, through their format modules.

For the commands that take a run directory from the user (src/compare.py, src/replay.py): `read(path, which)` is
the run's three files, or one ConfigError line naming the fix when `path` is not a folder or holds no record or
summary (`which`, "RUN_A" say, opens the line: the command has several). A file that is there but damaged raises
its module's DamagedRunFile unchanged: each command words that for what it is about to do.
"""

from dataclasses import dataclass
from pathlib import Path

from optbench import rundir
from optbench.errors import ConfigError
from optbench.formats import metrics_log, run_record, run_summary

EXAMPLE = "results/cifar10/none-0.0/sgd/seed0"  # a run directory, named in the messages


@dataclass(frozen=True)
class RunFiles:
    path: Path
    record: run_record.RunRecord
    summary: run_summary.Summary
    epochs: list[dict]  # metrics.jsonl, one dict per line that is a JSON object (a torn last line left out)
    unreadable_lines: tuple[int, ...] = ()  # metrics.jsonl's lines (from 1) that were not JSON objects


def read(path: Path, which: str = "") -> RunFiles:
    """The run in `path`; ConfigError when it is not a run directory, DamagedRunFile when one of its files is
    damaged (record and summary are read before either is found missing, as a damaged file is the worse news)."""
    path = Path(path)
    named = f"{which} {path}" if which else str(path)
    if not path.is_dir():
        problem = "not a directory" if path.exists() else "no such directory"
        raise ConfigError(f"{named}: {problem}: give a run directory, e.g. {EXAMPLE}")
    record, summary = run_record.read(path), run_summary.read(path)
    epochs, unreadable = metrics_log.read_lines(path)
    if record is None or summary is None:
        missing = rundir.RECORD_FILE if record is None else rundir.SUMMARY_FILE
        raise ConfigError(
            f"{named}: not a run directory (no {missing}): give the folder holding a run's {rundir.RECORD_FILE} "
            f"and {rundir.SUMMARY_FILE}, e.g. {EXAMPLE}"
        )
    return RunFiles(path, record, summary, epochs, tuple(unreadable))
