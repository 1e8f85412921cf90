"""The tuning record, `<results_dir>/tuning-<study id>.json`: one module owns the format.

A tuning study's selection writes it (studies/tuning_protocol.py builds the content, `write` checks and writes
it) and the aggregator reads it (analysis/tuning_report.py, through `find_records` and `read`), so the writer
and the reader share one definition of the file's name, format number and required fields.
Standard library only. Written atomically (fileio.write_bytes_atomically); `read` raises ValueError
saying what is wrong with a file that is unreadable or off the contract (the aggregator turns that
into a warning and ignores the file).

The contract, format 1 (run directories are relative to the JSON file's folder; every score is the
selection metric `select_on`, on validation, never test):

    {"format": 1, "study": "tune_cpu_demo", "method": "quasirandom" | "grid",
     "sampler": "sobol" | null, "sampler_seed": 0 | null,          (null for grid)
     "select_on": "val_acc_best", "date": "2026-11-22",
     "budget": {"trials": 8, "epochs": 4, "trial_seeds": [0], "confirm_seeds": [1, 2], "top_k": 2},
     "optimizers": {"<name>": {
        "space": {"optimizer.lr": {"low": 1e-5, "high": 1e-3, "scale": "log" | "linear"},
                  "optimizer.weight_decay": {"values": [0.01, 0.1, 1.0], "scale": "grid"}},
        "trials": [{"index": 0, "values": {"optimizer.lr": 0.000123, ...},
                    "score": 0.41 | null,        mean over the trial's finished runs; null when none finished
                    "top_k": true,               rerun on the confirm seeds (those runs are in its `runs` too)
                    "runs": [{"run_dir": "imagefolder-x/none-0.0/lion/epochs=4,.../seed0", "seed": 0,
                              "status": "completed", "score": 0.41, "wall_time_s": 80.2,
                              "epochs_done": 4, "device": "cpu"}]}],
        "winner": {"index": 0, "values": {...}, "mean": 0.42, "sd": 0.01, "seeds": [0, 1, 2],
                   "scores": [0.41, 0.42, 0.43]} | null,
        "edges": ["optimizer.lr = 1.02e-05 sits at the low edge of [1e-05, 0.001] (log): widen the range"],
        "runs": 12, "epochs_trained": 48, "device_hours": 0.27, "devices": ["cpu"]}}}

Required: `format`, `study`, `optimizers`, and per optimizer `space`, `trials` (each with `values` and
`runs`, each run with `run_dir`); the rest is read when present. `edges` is the runner's word on
winners at the edge of the space; a file without `edges` gets the aggregator's own rule (EDGE_FRACTION).
The optimizer's `runs`, `epochs_trained` and `device_hours` are checked against its listed runs.
"""

import json
from pathlib import Path

from optbench.fileio import strict_json, write_bytes_atomically
from optbench.formats.fields import UPGRADE

FORMAT = 1
PREFIX = "tuning-"
FILE_PATTERN = f"{PREFIX}*.json"


def record_path(results_dir: Path, study_id: str) -> Path:
    return Path(results_dir) / f"{PREFIX}{study_id}.json"


def write(results_dir: Path, record: dict) -> Path:
    """Check `record` against the contract, then write it for its study; returns the file written."""
    check(record)
    path = record_path(results_dir, record["study"])
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomically(path, json.dumps(strict_json(record), indent=2).encode())
    return path


def find_records(results_dir: Path, skip: Path | None = None) -> list[Path]:
    """Every tuning-*.json below `results_dir`, sorted; files inside `skip` (the aggregator's output) are not."""
    skip = skip.resolve() if skip else None
    return sorted(
        path
        for path in Path(results_dir).rglob(FILE_PATTERN)
        if path.is_file() and (skip is None or skip not in path.resolve().parents)
    )


def read(path: Path) -> dict:
    """One checked record; ValueError saying what is wrong when it is unreadable or off the contract."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:  # copied mid-write, edited by hand
        raise ValueError(f"not readable as JSON ({type(error).__name__}: {error})") from error
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    check(record)
    return record


def expect(mapping, key: str, kind: type, where: str):
    """mapping[key] when it is a `kind`; otherwise ValueError saying where."""
    if not isinstance(mapping, dict):
        raise ValueError(f"{where} is not a JSON object")
    value = mapping.get(key)
    if not isinstance(value, kind):
        raise ValueError(f"{where}: '{key}' missing or not a {kind.__name__}")
    return value


def check(record: dict) -> None:
    """The required fields (the contract above); ValueError naming the first one missing or mistyped."""
    if isinstance(record.get("format"), int) and record["format"] > FORMAT:
        raise ValueError(f"format {record['format']}, this optbench reads up to format {FORMAT}: {UPGRADE}")
    if record.get("format") != FORMAT:
        raise ValueError(f"format {record.get('format')!r}, this aggregator reads format {FORMAT}")
    expect(record, "study", str, "the file")
    for name, entry in expect(record, "optimizers", dict, "the file").items():
        where = f"optimizers.{name}"
        expect(entry, "space", dict, where)
        for position, trial in enumerate(expect(entry, "trials", list, where)):
            expect(trial, "values", dict, f"{where}.trials[{position}]")
            for run_position, run in enumerate(expect(trial, "runs", list, f"{where}.trials[{position}]")):
                expect(run, "run_dir", str, f"{where}.trials[{position}].runs[{run_position}]")
        if entry.get("winner") is not None:
            expect(expect(entry, "winner", dict, where), "values", dict, f"{where}.winner")
