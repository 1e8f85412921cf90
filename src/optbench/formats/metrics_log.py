"""metrics.jsonl: one JSON object per epoch, appended as the run trains; the epoch record's schema.

`read(run_dir)` returns the epochs' records and how many lines were not JSON objects (a torn last line
after a kill: a warning, the rest stands; `read_lines` gives their line numbers); a line that is a JSON object
but not an epoch record (a metric that is not a number, a non-finite one, an epoch that is not a whole number) is
DamagedRunFile naming the line. `append` adds one epoch; `replace` rewrites the file atomically as exactly the
given records (a resume drops the epochs after its checkpoint). The lines carry no version of their own: they
are written by the trainer that writes summary.json beside them, whose `format` covers them (a new
metric is a new key, which every reader already keeps).

The metric keys (`split/name`) live here, the one vocabulary every writer and reader of them uses: a module
spells `metrics_log.VAL_ACC`, never "val/acc".
"""

import json
from pathlib import Path

from optbench import rundir
from optbench.fileio import json_text, write_bytes_atomically
from optbench.formats.fields import Fields

# The keys of an epoch's record (accuracies are fractions in [0, 1]; losses are cross-entropy in nats).
EPOCH = "epoch"  # counted from 1
LR = "lr"  # the first parameter group's learning rate at the end of the epoch
TRAIN_LOSS, TRAIN_ACC = "train/loss", "train/acc"  # over the epoch's training batches, as trained
TRAIN_IMAGES, TRAIN_TIME_S, TRAIN_IMAGES_PER_S = "train/images", "train/time_s", "train/images_per_s"
VAL_LOSS, VAL_ACC = "val/loss", "val/acc"  # against the labels selection sees (noisy under noise.validation: noisy)
VAL_ACC_CLEAN = "val/acc_clean"  # under label noise: the same predictions against the true labels (the oracle)
TEST_LOSS, TEST_ACC = "test/loss", "test/acc"
EVAL_TIME_S, EVAL_IMAGES, EVAL_IMAGES_PER_S = "eval/time_s", "eval/images", "eval/images_per_s"
TIME_S = "time_s"  # the epoch's wall time: training and evaluation
SELECTED_BY = "selected_by"  # summary.json's best only: the key the epoch was chosen on

TEXT_KEYS = (SELECTED_BY,)  # the only text in an epoch's record (summary.json's best); every other value is a number
WAY_OUT = "restore it from a copy (the mirror, a backup), or move the run away and train it again"


def path_in(run_dir: Path) -> Path:
    return Path(run_dir) / rundir.METRICS_FILE


def read(run_dir: Path) -> tuple[list[dict], int]:
    """metrics.jsonl as one dict per epoch, and how many lines were not JSON objects (a torn last line)."""
    records, unreadable = read_lines(run_dir)
    return records, len(unreadable)


def read_lines(run_dir: Path) -> tuple[list[dict], list[int]]:
    """metrics.jsonl as one dict per epoch, and the numbers (from 1) of the lines that were not JSON objects:
    a reader that compares epochs (replay) names the line it could not read."""
    try:
        lines = path_in(run_dir).read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return [], []
    records: list[dict] = []
    unreadable: list[int] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            unreadable.append(number)
            continue
        if isinstance(record, dict):
            records.append(epoch_line(Fields(record, f"{path_in(run_dir)} line {number}", way_out=WAY_OUT)))
        else:
            unreadable.append(number)
    return records, unreadable


def epoch_line(fields: Fields) -> dict:
    """One metrics.jsonl line as an epoch record (a line is never absent, so never None)."""
    record = epoch_record(fields)
    assert record is not None
    return record


def epoch_record(fields: Fields | None) -> dict | None:
    """One epoch's metrics (a metrics.jsonl line, summary.json's best and final): metric name -> a finite
    number, or None for one written as null (a diverged run's non-finite loss); `epoch` a whole number."""
    if fields is None:
        return None
    record = {
        key: fields.text(key) if key in TEXT_KEYS else fields.number(key, nonfinite_as_null=True)
        for key in fields.value
    }
    if "epoch" in record:
        record["epoch"] = fields.whole("epoch")
    return record


def append(run_dir: Path, record: dict) -> None:
    with open(path_in(run_dir), "a") as handle:
        handle.write(json_text(record, indent=None) + "\n")
        handle.flush()


def replace(run_dir: Path, records: list[dict]) -> None:
    payload = "".join(json_text(record, indent=None) + "\n" for record in records).encode()
    write_bytes_atomically(path_in(run_dir), payload)
