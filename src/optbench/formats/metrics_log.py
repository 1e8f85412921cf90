"""metrics.jsonl: one JSON object per epoch, appended as the run trains.

`read(run_dir)` returns the epochs' records and how many lines were not JSON objects (a torn last line
after a kill); `append` adds one epoch; `replace` rewrites the file atomically as exactly the given
records (a resume drops the epochs after its checkpoint).
"""

import json
from pathlib import Path

from optbench import rundir
from optbench.fileio import json_text, write_bytes_atomically


def path_in(run_dir: Path) -> Path:
    return Path(run_dir) / rundir.METRICS_FILE


def read(run_dir: Path) -> tuple[list[dict], int]:
    """metrics.jsonl as one dict per epoch, and how many lines were not JSON objects (a torn last line)."""
    try:
        lines = path_in(run_dir).read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return [], 0
    records, bad = [], 0
    for line in filter(str.strip, lines):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            bad += 1
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            bad += 1
    return records, bad


def append(run_dir: Path, record: dict) -> None:
    with open(path_in(run_dir), "a") as handle:
        handle.write(json_text(record, indent=None) + "\n")
        handle.flush()


def replace(run_dir: Path, records: list[dict]) -> None:
    payload = "".join(json_text(record, indent=None) + "\n" for record in records).encode()
    write_bytes_atomically(path_in(run_dir), payload)
