"""summary.json: how a run stands (status, epochs, final and best metrics, provenance), replaced atomically.

The statuses a run can be in live here. Training builds the content (training/progress.py) and writes
it through `write`; every reader goes through `read`, which follows the run files' one error policy
(missing: None; unreadable: DamagedRunFile naming the file and the way out).
"""

from pathlib import Path

from optbench import rundir
from optbench.fileio import json_text, read_json, write_bytes_atomically

RUNNING, COMPLETED, DIVERGED, FAILED, INTERRUPTED = "running", "completed", "diverged", "failed", "interrupted"
STATUSES = (COMPLETED, DIVERGED, FAILED, INTERRUPTED, RUNNING)
FINAL_STATUSES = (COMPLETED, DIVERGED)   # results: the same command skips them
WAY_OUT = "move it away to resume from the checkpoint, or train.rerun=true to start this run over"


def path_in(run_dir: Path) -> Path:
    return Path(run_dir) / rundir.SUMMARY_FILE


def read(run_dir: Path) -> dict | None:
    return read_json(path_in(run_dir), WAY_OUT)


def write(run_dir: Path, summary: dict) -> None:
    write_bytes_atomically(path_in(run_dir), (json_text(summary) + "\n").encode())
