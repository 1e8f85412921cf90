"""record.json: the harness's own record of a run, written once when it starts and never rewritten.

It holds the full resolved config, the run's identity (optbench.identity) and its hash `run_id`, and
when it was created. Readers use it, not Hydra's `.hydra/`. `read(run_dir)` follows the run files' one
error policy (missing: None; unreadable: DamagedRunFile naming the file and the way out).
"""

from pathlib import Path

from optbench import rundir
from optbench.fileio import json_text, read_json, write_new
from optbench.identity import run_id

FORMAT = 1
WAY_OUT = "move this run directory away, or train.rerun=true to start it over"


def new_record(resolved_config: dict, run_identity: dict, created: str) -> dict:
    return {"format": FORMAT, "run_id": run_id(run_identity), "created": created,
            "identity": run_identity, "config": resolved_config}


def path_in(run_dir: Path) -> Path:
    return Path(run_dir) / rundir.RECORD_FILE


def read(run_dir: Path) -> dict | None:
    return read_json(path_in(run_dir), WAY_OUT)


def write(run_dir: Path, record: dict) -> None:
    """Written once: an existing record is never replaced (a fresh start removes it first)."""
    write_new(path_in(run_dir), (json_text(record) + "\n").encode())
