"""The tuning record, `<results_dir>/tuning-<study id>.json`: one module owns the format.

A tuning study's selection writes it (studies/tuning_protocol.py builds a `TuningRecord`, `write` turns it into
the file's JSON with `content` and parses that through the schema here before writing it) and the aggregator
reads it (analysis/judging/tuning_report.py, through `find_records` and `read`), so the writer and every reader
share one definition: the file's name, its format version and its schema, `TuningRecord` (frozen dataclasses
down to each run). Readers use the dataclasses' attributes, never the file's keys. Standard library only.
Written atomically (fileio.write_bytes_atomically).
`read` raises DamagedRunFile (a ConfigError) naming the file, the field and the way out when the file is
unreadable, a field is missing or of the wrong type, a number is not finite or out of its range, or the format
is newer than this optbench's; the aggregator turns that into one warning line and ignores the file. A file
without `format` reads as format 1.

The contract, format 1 (run directories are relative to the JSON file's folder; every score is the
selection metric `select_on`, on validation, never test: an accuracy, a fraction in [0, 1], or for a loss
(`select_on` naming one, LOSS_SELECTIONS: a language model's val_loss_best) a loss in nats, any number >= 0):

    {"format": 1, "study": "tune_cpu_demo", "method": "quasirandom" | "grid",
     "sampler": "sobol" | null, "sampler_seed": 0 | null,          (null for grid)
     "select_on": "val_acc_best", "date": "2026-11-22",
     "budget": {"trials": 8 | null, "epochs": 4, "trial_seeds": [0], "confirm_seeds": [1, 2], "top_k": 2 | null},
     "optimizers": {"<name>": {
        "space": {"optimizer.lr": {"low": 1e-5, "high": 1e-3, "scale": "log" | "linear"},
                  "optimizer.weight_decay": {"values": [0.01, 0.1, 1.0], "scale": "grid"}},
        "trials": [{"index": 0, "values": {"optimizer.lr": 0.000123, ...},
                    "score": 0.41 | null,        mean over the trial's finished runs; null when none finished
                    "top_k": true,               rerun on the confirm seeds (those runs are in its `runs` too)
                    "runs": [{"run_dir": "imagefolder-x/none-0.0/lion/epochs=4,.../seed0", "seed": 0,
                              "status": "completed", "score": 0.41, "wall_time_s": 80.2,
                              "epochs_done": 4, "device": "cpu"}]}],
        "winner": {"index": 0, "values": {...}, "mean": 0.42, "sd": 0.01 | null, "seeds": [0, 1, 2],
                   "scores": [0.41, 0.42, 0.43]} | null,
        "edges": ["optimizer.lr = 1.02e-05 sits at the low edge of [1e-05, 0.001] (log): widen the range"],
        "runs": 12, "epochs_trained": 48, "device_hours": 0.27, "devices": ["cpu"]}}}

Required: `study`, `optimizers`, and per optimizer `space`, `trials` (each with `values` and `runs`, each run
with `run_dir`), a winner's `values`, a range's `low` and `high`, a grid's `values`; every other field may be
absent or null (an older or hand-made file), and is checked when present. The budget's `epochs` and
`trial_seeds` are the study grid's, a number or a list of them (read as a tuple). `edges` is the runner's word
on winners at the edge of the space; a file without `edges` gets the aggregator's own rule (EDGE_FRACTION).
"""

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optbench.errors import DamagedRunFile
from optbench.fileio import strict_json, write_bytes_atomically
from optbench.formats.fields import Fields
from optbench.formats.run_summary import STATUSES

FORMAT = 1
PREFIX = "tuning-"
FILE_PATTERN = f"{PREFIX}*.json"
METHODS = ("grid", "quasirandom")
SCALES = ("log", "linear", "grid")
# The selection metrics whose scores are losses (lower wins, no ceiling); the rest are accuracies in [0, 1].
# specs/study_spec.py's LOWER_IS_BETTER_SELECTION is this list.
LOSS_SELECTIONS = ("val_loss_best", "final_val_loss")
WAY_OUT = (
    "write it again with `python src/study.py --select-tuned STUDY` once its runs are there, or move it out of the "
    "results folder"
)


@dataclass(frozen=True)
class Bounds:
    """One searched hyperparameter: a range (`low`, `high` on a log or linear scale) or a grid's `values`."""

    scale: str  # log | linear | grid
    low: float | None = None  # ranges
    high: float | None = None
    values: tuple[float, ...] = ()  # grids

    @property
    def ends(self) -> tuple[float, float]:
        """The searched range's two ends (a grid's smallest and largest values)."""
        if self.scale == "grid":
            return (min(self.values), max(self.values)) if self.values else (math.nan, math.nan)
        return (math.nan if self.low is None else self.low, math.nan if self.high is None else self.high)


@dataclass(frozen=True)
class Run:
    """One run of a trial: where it lives (relative to the record's folder) and what it gave."""

    run_dir: str
    seed: int | None
    status: str | None  # summary.json's status; None: the run had no finished summary
    score: float | None
    wall_time_s: float | None
    epochs_done: int | None
    device: str | None


@dataclass(frozen=True)
class Trial:
    index: int | None
    values: dict[str, float]  # override key (optimizer.lr) -> value
    score: float | None  # mean over the trial seeds' runs; None when none finished
    top_k: bool  # rerun on the confirm seeds
    runs: tuple[Run, ...]


@dataclass(frozen=True)
class Winner:
    index: int | None
    values: dict[str, float]
    mean: float | None
    sd: float | None  # None with one seed
    seeds: tuple[int, ...]
    scores: tuple[float, ...]


@dataclass(frozen=True)
class OptimizerTuning:
    """One optimizer's search: its space, every trial, the winner, and the totals the runner wrote."""

    space: dict[str, Bounds]
    trials: tuple[Trial, ...]
    winner: Winner | None
    edges: tuple[str, ...] | None  # the runner's edge sentences; None: the file has none
    runs: int | None
    epochs_trained: int | None
    device_hours: float | None
    devices: tuple[str, ...]

    @property
    def listed_runs(self) -> list[Run]:
        return [run for trial in self.trials for run in trial.runs]


@dataclass(frozen=True)
class Budget:
    trials: int | None  # per optimizer (quasirandom)
    epochs: tuple[int, ...]  # the study grid's
    trial_seeds: tuple[int, ...]
    confirm_seeds: tuple[int, ...]
    top_k: int | None  # trials rerun on the confirm seeds (quasirandom)


@dataclass(frozen=True)
class TuningRecord:
    version: int
    study: str
    method: str | None
    sampler: str | None
    sampler_seed: int | None
    select_on: str | None
    date: str | None
    budget: Budget
    optimizers: dict[str, OptimizerTuning]

    @property
    def run_dirs(self) -> list[str]:
        """Every run directory its trials list, as written (relative to the record's folder)."""
        return [run.run_dir for entry in self.optimizers.values() for run in entry.listed_runs]


def record_path(results_dir: Path, study_id: str) -> Path:
    return Path(results_dir) / f"{PREFIX}{study_id}.json"


def content(record: TuningRecord) -> dict:
    """The file's JSON object for `record`, keys in the order the runner has always written them."""
    return {
        "format": record.version,
        "study": record.study,
        "method": record.method,
        "sampler": record.sampler,
        "sampler_seed": record.sampler_seed,
        "select_on": record.select_on,
        "date": record.date,
        "budget": {
            "trials": record.budget.trials,
            "epochs": grid_value(record.budget.epochs),
            "trial_seeds": list(record.budget.trial_seeds),  # seeds: always a list
            "confirm_seeds": list(record.budget.confirm_seeds),
            "top_k": record.budget.top_k,
        },
        "optimizers": {name: optimizer_content(entry) for name, entry in record.optimizers.items()},
    }


def grid_value(values: tuple[int, ...]) -> int | list[int] | None:
    """The budget's epochs as a study file writes them: one number alone, several as a list, none as null."""
    return None if not values else values[0] if len(values) == 1 else list(values)


def optimizer_content(entry: OptimizerTuning) -> dict:
    return {
        "space": {key: bounds_content(bounds) for key, bounds in entry.space.items()},
        "trials": [
            {
                "index": trial.index,
                "values": trial.values,
                "score": trial.score,
                "top_k": trial.top_k,
                "runs": [run_content(run) for run in trial.runs],
            }
            for trial in entry.trials
        ],
        "winner": None if entry.winner is None else winner_content(entry.winner),
        "edges": None if entry.edges is None else list(entry.edges),
        "runs": entry.runs,
        "epochs_trained": entry.epochs_trained,
        "device_hours": entry.device_hours,
        "devices": list(entry.devices),
    }


def bounds_content(bounds: Bounds) -> dict:
    if bounds.scale == "grid":
        return {"values": list(bounds.values), "scale": bounds.scale}
    return {"low": bounds.low, "high": bounds.high, "scale": bounds.scale}


def run_content(run: Run) -> dict:
    return {
        "run_dir": run.run_dir,
        "seed": run.seed,
        "status": run.status,
        "score": run.score,
        "wall_time_s": run.wall_time_s,
        "epochs_done": run.epochs_done,
        "device": run.device,
    }


def winner_content(winner: Winner) -> dict:
    return {
        "index": winner.index,
        "values": winner.values,
        "mean": winner.mean,
        "sd": winner.sd,
        "seeds": list(winner.seeds),
        "scores": list(winner.scores),
    }


def write(results_dir: Path, record: "TuningRecord | dict") -> Path:
    """Write `record` (the runner's TuningRecord, or a file's JSON object as a dict) for its study, parsed
    through the schema first; returns the file written. Content off the schema raises DamagedRunFile and
    writes nothing."""
    written = strict_json(content(record) if isinstance(record, TuningRecord) else record)
    path = record_path(results_dir, str(written.get("study")) if isinstance(written, dict) else "")
    parse(written, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomically(path, json.dumps(written, indent=2).encode())
    return path


def find_records(results_dir: Path, skip: Path | None = None) -> list[Path]:
    """Every tuning-*.json below `results_dir`, sorted; files inside `skip` (the aggregator's output) are not."""
    skip = skip.resolve() if skip else None
    return sorted(
        path
        for path in Path(results_dir).rglob(FILE_PATTERN)
        if path.is_file() and (skip is None or skip not in path.resolve().parents)
    )


def read(path: Path, shown_as: str | None = None) -> TuningRecord:
    """The checked record; DamagedRunFile naming the file (`shown_as`, else its path), the field and the way out
    when it is off the schema."""
    name = shown_as or str(path)
    return parse(json_content(path, name), name)


def json_content(path: Path, name: str) -> Any:  # JSON of any shape: parse checks it
    """The file's JSON as written; DamagedRunFile naming it when it is not JSON."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:  # copied mid-write, edited by hand
        raise DamagedRunFile(f"{name}: not readable as JSON ({type(error).__name__}: {error}): {WAY_OUT}") from error


def move_run_dirs(path: Path, old_prefix: str, new_prefix: str) -> bool:
    """Rewrite the record at `path` so that its runs' `run_dir`s under `old_prefix` (relative to the file's folder,
    ending in /) are under `new_prefix`, when its runs moved; True when it changed. A damaged record is
    DamagedRunFile and stays as it is."""
    content = json_content(path, str(path))
    parse(content, path)  # the schema holds before the keys below are used
    moved = [
        run
        for entry in content["optimizers"].values()
        for trial in entry["trials"]
        for run in trial["runs"]
        if run["run_dir"].startswith(old_prefix)
    ]
    for run in moved:
        run["run_dir"] = new_prefix + run["run_dir"][len(old_prefix) :]
    if moved:
        write_bytes_atomically(path, json.dumps(content, indent=2).encode())
    return bool(moved)


def parse(content: object, path: Path | str) -> TuningRecord:
    """The checked TuningRecord of `content` (the file's JSON); DamagedRunFile on the first field off it."""
    fields = Fields(content, path, way_out=WAY_OUT)
    version = fields.version(FORMAT)
    optimizers = fields.inner("optimizers", required=True)
    select_on = fields.text("select_on")
    ceiling = score_ceiling(select_on)
    return TuningRecord(
        version=version,
        study=fields.text("study", required=True),
        method=fields.text("method", choices=METHODS),
        sampler=fields.text("sampler"),
        sampler_seed=fields.whole("sampler_seed"),
        select_on=select_on,
        date=fields.text("date"),
        budget=parse_budget(fields.inner("budget") or Fields({}, path, "budget", WAY_OUT)),
        optimizers={name: parse_optimizer(optimizers.inner(name, required=True), ceiling) for name in optimizers.value},
    )


def score_ceiling(select_on: str | None) -> float:
    """The largest score a record selecting on `select_on` can hold: 1 for an accuracy, none for a loss (a
    language model's validation loss is about 1.5-4.2 nats)."""
    return math.inf if select_on in LOSS_SELECTIONS else 1  # an int: the refusal reads "in [0, 1]"


def parse_budget(fields: Fields) -> Budget:
    return Budget(
        trials=fields.whole("trials", low=1),
        epochs=number_or_list(fields, "epochs", low=1),
        trial_seeds=number_or_list(fields, "trial_seeds", low=0),
        confirm_seeds=fields.wholes("confirm_seeds") or (),
        top_k=fields.whole("top_k"),
    )


def number_or_list(fields: Fields, key: str, low: int) -> tuple[int, ...]:
    """A study grid's value: one whole number or a list of them (what the study file says)."""
    if isinstance(fields.value.get(key), list):
        return fields.wholes(key, low=low) or ()
    single = fields.whole(key, low=low)
    return () if single is None else (single,)


def parse_optimizer(fields: Fields, ceiling: float = 1) -> OptimizerTuning:
    space = fields.inner("space", required=True)
    winner = fields.inner("winner")
    return OptimizerTuning(
        space={key: parse_bounds(space.inner(key, required=True)) for key in space.value},
        trials=tuple(parse_trial(trial, ceiling) for trial in fields.objects("trials", required=True)),
        winner=None if winner is None else parse_winner(winner, ceiling),
        edges=fields.texts("edges"),
        runs=fields.whole("runs"),
        epochs_trained=fields.whole("epochs_trained"),
        device_hours=fields.number("device_hours", low=0),
        devices=fields.texts("devices") or (),
    )


def parse_bounds(fields: Fields) -> Bounds:
    scale = fields.text("scale", choices=SCALES) or "linear"
    if scale == "grid":
        return Bounds(scale, values=fields.numbers("values", required=True) or ())
    return Bounds(scale, low=fields.number("low", required=True), high=fields.number("high", required=True))


def parse_values(fields: Fields) -> dict[str, float]:
    """A point of the space: override key -> finite number."""
    values = fields.inner("values", required=True)
    return {key: required_number(values, key) for key in values.value}


def required_number(fields: Fields, key: str) -> float:
    value = fields.number(key, required=True)
    assert value is not None  # required: Fields raised for a missing one
    return value


def parse_trial(fields: Fields, ceiling: float = 1) -> Trial:
    return Trial(
        index=fields.whole("index"),
        values=parse_values(fields),
        score=fields.number("score", low=0, high=ceiling),
        top_k=bool(fields.flag("top_k")),
        runs=tuple(parse_run(run, ceiling) for run in fields.objects("runs", required=True)),
    )


def parse_run(fields: Fields, ceiling: float = 1) -> Run:
    return Run(
        run_dir=fields.text("run_dir", required=True),
        seed=fields.whole("seed"),
        status=fields.text("status", choices=STATUSES),
        score=fields.number("score", low=0, high=ceiling),
        wall_time_s=fields.number("wall_time_s", low=0),
        epochs_done=fields.whole("epochs_done"),
        device=fields.text("device"),
    )


def parse_winner(fields: Fields, ceiling: float = 1) -> Winner:
    return Winner(
        index=fields.whole("index"),
        values=parse_values(fields),
        mean=fields.number("mean", low=0, high=ceiling),
        sd=fields.number("sd", low=0, high=ceiling),
        seeds=fields.wholes("seeds") or (),
        scores=fields.numbers("scores", low=0, high=ceiling) or (),
    )
