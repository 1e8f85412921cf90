"""The estimate record, `<results_dir>/estimate-<study id>.json`: what a launch of a study predicted before it trained.

`python src/study.py STUDY` (a launch, not a dry run) prices the runs it is about to train exactly as its dry run
does (studies/estimate.py, through studies/dry_run.py) and records that here before the first sweep starts, so
`--status` can set the prediction beside what the runs then took (studies/status.py). Each launch adds one entry
and keeps the earlier ones: the first entry is the estimate made before anything trained, a later one (a resumed
or extended study, a tuning study's top-k reruns) prices only what was left. One module owns the format: the
file's name, its version and its schema, `EstimateRecord`; readers use the dataclasses, never the keys.
Standard library only; written atomically. `read` follows the run files' error policy: missing gives None; an
unreadable file, a field of the wrong type, a negative or non-finite number or a newer format is DamagedRunFile
naming the file, the field and the way out.

The contract, format 1 (run directories relative to the file's folder, as the tuning record's):

    {"format": 1, "study": "cross_mnist1d",
     "launches": [{"made": "2026-11-28T19:04:11",          when the estimate was made (local time, seconds)
                   "launcher": "basic",                     runs one after another; another launcher's jobs overlap
                   "how": "recorded rates of 3 run(s) of the same shape on disk",
                   "seconds": 812.5,                        the sum of the runs' predicted seconds
                   "runs": [{"run_dir": "mnist1d/none-0.0/adam/.../seed0",
                             "predicted_s": 40.6,           its remaining epochs at the estimate's rates
                             "spent_s": 0.0}]}]}            its wall and start-up seconds already spent then

Required: `study`, `launches`, and per launch `seconds` and `runs`, per run `run_dir` and `predicted_s`.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from optbench.fileio import json_text, read_json, write_bytes_atomically
from optbench.formats.fields import Fields

FORMAT = 1
PREFIX = "estimate-"
WAY_OUT = "move it out of the results folder: the next launch of the study writes a new one"


@dataclass(frozen=True)
class PlannedSeconds:
    run_dir: str  # relative to the record's folder
    predicted_s: float
    spent_s: float = 0.0  # wall time plus start-up the run had already recorded when the estimate was made


@dataclass(frozen=True)
class Launch:
    seconds: float
    runs: tuple[PlannedSeconds, ...]
    made: str | None = None
    launcher: str | None = None
    how: str | None = None


@dataclass(frozen=True)
class EstimateRecord:
    study: str
    launches: tuple[Launch, ...]


def path_for(results_dir: Path, study_id: str) -> Path:
    return Path(results_dir) / f"{PREFIX}{study_id}.json"


def read(path: Path) -> EstimateRecord | None:
    content = read_json(Path(path), WAY_OUT)
    return None if content is None else parse(content, Path(path))


def parse(content: dict, path: Path) -> EstimateRecord:
    fields = Fields(content, path, way_out=WAY_OUT)
    fields.version(FORMAT)
    study = fields.text("study", required=True)
    fields.listing("launches", required=True)
    return EstimateRecord(study, tuple(parse_launch(launch) for launch in fields.objects("launches")))


def parse_launch(fields: Fields) -> Launch:
    fields.listing("runs", required=True)
    return Launch(
        seconds=float(fields.number("seconds", required=True, low=0)),
        runs=tuple(
            PlannedSeconds(
                run_dir=run.text("run_dir", required=True),
                predicted_s=float(run.number("predicted_s", required=True, low=0)),
                spent_s=float(run.number("spent_s", low=0) or 0.0),
            )
            for run in fields.objects("runs")
        ),
        made=fields.text("made"),
        launcher=fields.text("launcher"),
        how=fields.text("how"),
    )


def launch_content(launch: Launch) -> dict:
    return {
        "made": launch.made,
        "launcher": launch.launcher,
        "how": launch.how,
        "seconds": launch.seconds,
        "runs": [
            {"run_dir": run.run_dir, "predicted_s": run.predicted_s, "spent_s": run.spent_s} for run in launch.runs
        ],
    }


def add_launch(results_dir: Path, study_id: str, launch: Launch) -> Path:
    """Append `launch` to the study's record (created when absent). A damaged record is DamagedRunFile, before any
    byte is written: the earlier estimates are not lost to a new one."""
    path = path_for(results_dir, study_id)
    earlier = read(path)
    content = {
        "format": FORMAT,
        "study": study_id,
        "launches": [launch_content(entry) for entry in (earlier.launches if earlier else ())]
        + [launch_content(launch)],
    }
    parse(json.loads(json_text(content)), path)  # the writer checks what it writes, as every format module does
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomically(path, json_text(content).encode())
    return path
