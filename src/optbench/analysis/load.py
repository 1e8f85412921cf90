"""Scan a results folder into two tidy tables: one row per run, and one row per (run, epoch).

`load_runs(results_dir, targets)` finds every run directory (a folder holding record.json,
summary.json, or .hydra/config.yaml alone: a run that never wrote a summary) and reads it through the
run-directory contract (optbench.rundir): the config from record.json, the harness's own record
written once when the run started; only a run without one (made by an older optbench) falls back to
Hydra's .hydra/config.yaml, which may have been rewritten since, and says so. It never writes
anything. Meaning comes from the files, never from the folder names. Damaged input (a torn last line
of metrics.jsonl, an unreadable summary or record) becomes a note on that run and a warning, not an
exception, so one bad run cannot hide the rest. Run directories a tuning study lists (`set_aside`,
from tuning_report.py) are counted and not read. Grouping (which config keys separate runs) is
`groups.py`'s job.
"""

import datetime
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from optbench import run_states, rundir
from optbench.analysis.targets import Target, Targets, target_for
from optbench.config.plain import plain_dict
from optbench.errors import DamagedRunFile
from optbench.formats import metrics_log, run_record, run_summary
from optbench.formats.metrics_log import EPOCH, TEST_ACC, TIME_S, TRAIN_ACC, TRAIN_LOSS, VAL_ACC, VAL_LOSS
from optbench.identity import flatten
from optbench.registry import workloads
from optbench.rundir import HYDRA_DIR, METRICS_FILE, RECORD_FILE, SUMMARY_FILE

HYDRA_CONFIG = Path(HYDRA_DIR) / "config.yaml"

# Statuses a run can have; only completed runs (run_summary.COMPLETED) enter means and statistics.
UNFINISHED = run_states.UNFINISHED  # no summary.json: never started, or killed before epoch 0
UNREADABLE = "unreadable"  # summary.json or record.json exists but cannot be read (copied mid-write, edited by hand)
STATUSES = (*run_summary.STATUSES, UNFINISHED)
# A run without summary.json (never started, or killed before epoch 0) reads as a summary of nothing but its status.
EMPTY_SUMMARY = run_summary.Summary(status=UNFINISHED)
PRECISION_KEY = "cfg.device_policy.amp"  # the configured value, replaced by the one the run trained in

# The grouping columns every run has (every grouping starts from them, groups.py), and the config keys they come from.
HUMAN = "human"  # noise kind whose setting is a label set, identified by its realised rate
HUMAN_RATE_DIGITS = 4  # realised rates rounded to 0.01 %: the seeds of one label set and split share it
GROUPING_COLUMN_SOURCES = {
    "dataset": "dataset.name",
    "noise": "noise.name",
    "noise_rate": "noise.rate",
    "optimizer": "optimizer.name",
}


@dataclass
class LoadedRuns:
    runs: pd.DataFrame  # one row per run: grouping columns, status, headline metrics, flattened config
    curves: pd.DataFrame  # one row per (run, epoch): run_id plus every metrics.jsonl key
    config_keys: list[str]  # flattened config columns present in `runs`
    warnings: list[str] = field(default_factory=list)
    set_aside: list[str] = field(default_factory=list)  # run ids left out as tuning trials


def find_run_dirs(results_dir: Path, skip: Path | None = None) -> list[Path]:
    """Every run directory below `results_dir`, sorted; `skip` (the aggregator's own output) is not entered."""
    found = []
    skip = skip.resolve() if skip else None
    for folder, subfolders, files in os.walk(results_dir):  # noqa: B007
        here = Path(folder)
        if rundir.is_run_dir(here):
            found.append(here)
            subfolders.clear()  # a run directory holds no other runs (tensorboard/ and .hydra/ are its own)
            continue
        subfolders[:] = sorted(
            name
            for name in subfolders
            if not name.startswith(".") and (skip is None or (here / name).resolve() != skip)
        )
    return sorted(found)


def load_runs(
    results_dir: Path,
    target_acc: Targets | float,
    skip: Path | None = None,
    set_aside: frozenset[Path] = frozenset(),
) -> LoadedRuns:
    """Every run below `results_dir` except those whose resolved path is in `set_aside` (tuning trials),
    which are only counted. `target_acc`: the accuracy target, or every time-to-target threshold (Targets)."""
    targets = target_acc if isinstance(target_acc, Targets) else Targets(acc=target_acc)
    rows, curve_frames, set_aside_ids = [], [], []
    warnings: list[str] = []
    for run_dir in find_run_dirs(results_dir, skip):
        run_id = run_dir.relative_to(results_dir).as_posix() or "."
        if set_aside and run_dir.resolve() in set_aside:
            set_aside_ids.append(run_id)
            continue
        row, curve, run_warnings = read_run(run_dir, run_id, targets)
        rows.append(row)
        curve_frames.append(curve)
        warnings.extend(f"{run_id}: {message}" for message in run_warnings)
    fill_unknown_precision(rows)
    runs = pd.DataFrame(rows)
    config_keys = sorted({key for row in rows for key in row if key.startswith("cfg.")})
    for key in config_keys:  # keep config values as written (4 stays 4, a missing key stays None, not NaN)
        runs[key] = pd.Series([row.get(key) for row in rows], index=runs.index, dtype=object)
    curves = pd.concat(
        [frame for frame in curve_frames if len(frame)] or [pd.DataFrame({"run_id": [], EPOCH: []})],
        ignore_index=True,
    )
    return LoadedRuns(runs=runs, curves=curves, config_keys=config_keys, warnings=warnings, set_aside=set_aside_ids)


def read_run(run_dir: Path, run_id: str, targets: Targets) -> tuple[dict, pd.DataFrame, list[str]]:
    warnings: list[str] = []
    summary, summary_damaged = read_summary(run_dir, warnings)
    config, record_damaged = read_config(run_dir, warnings)
    records, metrics_damaged = read_epochs(run_dir, warnings)
    status = UNREADABLE if summary_damaged or record_damaged or metrics_damaged else run_status(summary)
    summary = summary or EMPTY_SUMMARY
    if config is None:
        config = config_from_summary(summary)
        warnings.append("no record.json and no .hydra/config.yaml: grouping uses the few settings summary.json records")
    workload = workload_of(summary, config)
    warnings.extend(consistency_warnings(run_dir, status, summary, records, workload))
    curve = numeric_columns(pd.DataFrame(records))
    curve.insert(0, "run_id", run_id)
    row = {
        "run_id": run_id,
        "status": status,
        "workload": workload.name,
        **grouping_columns(config, summary),
        **human_noise_facts(summary),
        "seed": config.get("seed", summary.seed),
        **headline_metrics(summary, curve, target_for(workload.name, targets)),
        **workload_metrics(workload, summary, curve, config, target_for(workload.name, targets)),
        "notes": "; ".join(warnings),
    }
    if row["epochs_planned"] is None:  # no summary: the config says what was planned
        row["epochs_planned"] = config.get("epochs")
    row.update({f"cfg.{key}": value for key, value in config.items()})
    row.update(precision_used(summary))
    return row, curve, warnings


def numeric_columns(curve: pd.DataFrame) -> pd.DataFrame:
    """Metric columns as floats: a diverged run writes null for a loss that is NaN, and a column that is null in
    every epoch of a run would otherwise stay object-typed through the concatenation of every run's curve (and the
    figures' arithmetic on it fails). A column that is not all numbers or nulls is left as it is."""
    for column in curve.select_dtypes(include="object").columns:
        values = curve[column]
        if all(value is None or isinstance(value, (int, float)) for value in values):
            curve[column] = pd.to_numeric(values, errors="coerce").astype(float)
    return curve


def precision_used(summary: run_summary.Summary) -> dict:
    """The precision the run trained in, over the configured one: `device_policy.amp: null` resolves per
    machine (bf16 on one CPU or GPU, fp32 on another), so seeds trained at different precisions must split
    into different settings, never be averaged together because their configs both said null."""
    used = summary.precision
    return {PRECISION_KEY: used, "precision_known": True} if used is not None else {"precision_known": False}


def fill_unknown_precision(rows: list[dict]) -> None:
    """A run that never wrote summary.json has not resolved its precision yet: when every run that did used
    one precision, count it with them rather than as a setting of its own."""
    used = {row.get(PRECISION_KEY) for row in rows if row["precision_known"]}
    for row in rows:
        if not row.pop("precision_known") and len(used) == 1:
            row[PRECISION_KEY] = next(iter(used))


def run_status(summary: run_summary.Summary | None) -> str:
    return UNFINISHED if summary is None else summary.status


def workload_of(summary: run_summary.Summary, config: dict) -> workloads.Workload:
    """The run's workload: summary.json's, else its config's `workload` key; runs from before workloads (older
    CIFAR runs, which name none) are cifar_resnet18."""
    named = (summary.content.get("workload") or {}).get("name") or config.get("workload")
    return workloads.describe(named or workloads.DEFAULT)


def consistency_warnings(
    run_dir: Path, status: str, summary: run_summary.Summary, records: list[dict], workload: workloads.Workload
) -> list[str]:
    """What a reader of the numbers should know about this run's files."""
    warnings = []
    selected_by = (summary.best or {}).get("selected_by")
    if selected_by not in (None, VAL_ACC, workload.selection):
        warnings.append(
            f"no validation split: 'best' is chosen by {selected_by}, so test acc at best val is not "
            f"validation-selected"
        )
    if status == run_summary.RUNNING:
        written = datetime.datetime.fromtimestamp((run_dir / SUMMARY_FILE).stat().st_mtime, datetime.UTC)
        warnings.append(
            f"status 'running': still training, or killed before it could record an end "
            f"(summary.json last written {written:%Y-%m-%d %H:%M} UTC)"
        )
    epochs_done = summary.epochs_done
    if epochs_done and not records:
        warnings.append("metrics.jsonl missing or empty: no curves, no epochs-to-target")
    elif len(records) < epochs_done:
        warnings.append(f"metrics.jsonl has {len(records)} epochs, summary.json says {epochs_done}")
    return warnings


def read_config(run_dir: Path, warnings: list[str]) -> tuple[dict | None, bool]:
    """(the run's resolved config flattened to dotted keys, whether record.json is damaged). From
    record.json; from .hydra/config.yaml (which Hydra may have rewritten since the run started) only
    for a run without a readable record, to label it; None when neither is there."""
    try:
        record = run_record.read(run_dir)
    except DamagedRunFile as error:
        warnings.append(f"{error}; run counted as '{UNREADABLE}', labelled from {HYDRA_CONFIG}")
        return read_hydra_config(run_dir / HYDRA_CONFIG, warnings), True
    if record is not None:
        return flatten(record.config), False
    config = read_hydra_config(run_dir / HYDRA_CONFIG, warnings)
    if config is not None:
        warnings.append(
            f"no {RECORD_FILE} (an older run): config read from {HYDRA_CONFIG}, which may not be "
            f"the config the run trained with"
        )
    return config, False


def read_hydra_config(path: Path, warnings: list[str]) -> dict | None:
    """Hydra's resolved config, flattened; None when there is none or it cannot be read."""
    if not path.is_file():
        return None
    try:
        config = OmegaConf.load(path)
    except Exception as error:  # a hand-edited or truncated YAML file: say so, keep going  # noqa: BLE001
        warnings.append(f"{HYDRA_CONFIG} unreadable ({type(error).__name__})")
        return None
    if not isinstance(config, DictConfig):  # a list: no config at all
        warnings.append(f"{HYDRA_CONFIG} unreadable (not a mapping)")
        return None
    try:
        plain = plain_dict(config, resolve=True)
    except Exception:  # an interpolation whose resolver is not registered here: keep the literal text  # noqa: BLE001
        plain = plain_dict(config, resolve=False)
    return flatten(plain)


def config_from_summary(summary: run_summary.Summary) -> dict:
    """The settings summary.json itself records, for a run whose .hydra/ folder is missing."""
    dataset, noise, model = summary.dataset, summary.noise, summary.model
    return {
        key: value
        for key, value in {
            "dataset.name": dataset.name,
            "noise.name": noise.kind,
            "noise.rate": noise.rate,
            "optimizer.name": summary.optimizer,
            "seed": summary.seed,
            "epochs": summary.epochs_planned,
            "model.name": model.name,
            "model.width": model.width,
        }.items()
        if value is not None
    }


def read_summary(run_dir: Path, warnings: list[str]) -> tuple[run_summary.Summary | None, bool]:
    """(summary.json, whether it exists but cannot be read); a damaged one is a warning, not an exception."""
    try:
        return run_summary.read(run_dir), False
    except DamagedRunFile as error:
        warnings.append(f"{error}; run counted as '{UNREADABLE}'")
        return None, True


def read_epochs(run_dir: Path, warnings: list[str]) -> tuple[list[dict], bool]:
    """(one dict per epoch, whether metrics.jsonl holds a line that is JSON but not an epoch record). A line
    that is not JSON (a torn last line after a crash) is skipped with a warning."""
    try:
        records, bad = metrics_log.read(run_dir)  # accepts the NaN tokens older runs wrote
    except DamagedRunFile as error:
        warnings.append(f"{error}; run counted as '{UNREADABLE}'")
        return [], True
    if bad:
        warnings.append(f"{METRICS_FILE}: {bad} line(s) not valid JSON (torn write?); ignored")
    return [record for record in records if EPOCH in record], False


def grouping_columns(config: dict, summary: run_summary.Summary) -> dict:
    """The grouping columns dataset, noise, noise_rate, optimizer: from the config, else from summary.json."""
    noise = summary.noise
    fallback = {
        "dataset": summary.dataset.name,
        "noise": noise.kind,
        "noise_rate": noise.rate,
        "optimizer": summary.optimizer,
    }
    values = {column: config.get(source, fallback[column]) for column, source in GROUPING_COLUMN_SOURCES.items()}
    values["noise_rate"] = float(values["noise_rate"]) if values["noise_rate"] is not None else 0.0
    if values["noise"] is None:
        values["noise"] = "none"
    if values["noise"] == HUMAN:  # the label set fixes the rate: its realised rate on the training split
        values["noise_rate"] = round(number(noise.realised_rate), HUMAN_RATE_DIGITS)
    return values


def human_noise_facts(summary: run_summary.Summary) -> dict:
    """Human label noise (CIFAR-N): the label set and its transition matrix (true x given, training split).
    Other runs add no column, so tables of folders without human label noise keep their columns."""
    noise = summary.noise
    if noise.kind != HUMAN:
        return {}
    return {
        "label_set": noise.label_set,
        "transition_matrix": noise.transition_matrix,
        "annotated_dataset": noise.annotated_dataset,
    }


def headline_metrics(summary: run_summary.Summary, curve: pd.DataFrame, target: Target) -> dict:
    best, final = summary.best or {}, summary.final or {}
    oracle = summary.best_clean_val or {}  # under label noise only: the epoch chosen on clean labels
    noise, model = summary.noise, summary.model
    return {
        "epochs_done": summary.epochs_done if summary is not EMPTY_SUMMARY else len(curve),
        "epochs_planned": summary.epochs_planned,
        "best_epoch": best.get(EPOCH),
        "val_acc_best": number(best.get(VAL_ACC)),
        "test_acc_at_best_val": number(summary.headline),  # the headline: selected as a practitioner can
        "test_acc_at_best_clean_val": number(oracle.get(TEST_ACC)),
        "final_val_acc": number(final.get(VAL_ACC)),
        "val_loss_best": number(best.get(VAL_LOSS)),  # at the selected epoch: a language model's selection metric
        "final_val_loss": number(final.get(VAL_LOSS)),
        "final_test_acc": number(final.get(TEST_ACC)),
        "final_train_loss": number(final.get(TRAIN_LOSS)),
        "final_train_acc": number(final.get(TRAIN_ACC)),
        # The best test accuracy over all epochs is chosen by looking at the test set: optimistic.
        "best_test_acc": column_max(curve, TEST_ACC, fallback=best.get(TEST_ACC)),
        "epochs_to_target": epochs_to_reach(curve, target.metric, target.value, target.higher_is_better),
        "seconds_to_target": seconds_to_reach(curve, target.metric, target.value, target.higher_is_better),
        "wall_time_s": number(summary.wall_time_s),
        "train_time_s": number(summary.train_time_s),
        "train_images_per_s": number(summary.train_images_per_s),
        "realised_noise_rate": number(noise.realised_rate),
        "num_parameters": model.num_parameters,
        "num_classes": number(summary.dataset.num_classes),  # chance = 1 / num_classes
        "device": summary.device,
        "processor": summary.environment.processor_kind,  # "unknown" for runs from before it was recorded
        "threads": summary.environment.threads,  # intra-op threads it trained with (None: not recorded)
        "git_commit": summary.git.commit,
        "error": summary.error or diverged_text(summary.diverged_at),
    }


def workload_metrics(
    workload: workloads.Workload, summary: run_summary.Summary, curve: pd.DataFrame, config: dict, target: Target
) -> dict:
    """The columns only a non-default workload adds (a folder of CIFAR runs keeps the columns it always had): a
    language model's bits per character and test loss at the selected epoch, and for a step-budgeted workload the
    steps to its target (an "epoch" there is an evaluation period of dataset.steps_per_epoch steps)."""
    if workload.name == workloads.DEFAULT:
        return {}
    best = summary.best or {}
    extra = {
        "val_bpc_best": number(best.get("val/bpc")),
        "test_loss_at_best_val": number(best.get("test/loss")),
    }
    if workload.budget_unit == workloads.STEPS:
        extra["steps_to_target"] = steps_per_epoch(summary, config) * epochs_to_reach(
            curve, target.metric, target.value, target.higher_is_better
        )
    return extra


def steps_per_epoch(summary: run_summary.Summary, config: dict) -> float:
    """A step-budgeted run's steps per evaluation: its config's dataset.steps_per_epoch, else summary.json's budget
    (steps over evaluations)."""
    configured = number(config.get("dataset.steps_per_epoch"))
    if math.isfinite(configured):
        return configured
    budget = (summary.content.get("workload") or {}).get("budget") or {}
    return number(budget.get("value")) / number(budget.get("epochs"))


def diverged_text(diverged_at) -> str | None:
    """summary.json's diverged_at {"epoch", "train/loss"} as one line for the report."""
    if not isinstance(diverged_at, dict):
        return None
    return f"diverged at epoch {diverged_at.get(EPOCH)}: train loss {diverged_at.get(TRAIN_LOSS)}"


def number(value) -> float:
    """A float, NaN for missing or non-numeric values (so pandas sees one numeric column)."""
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def column_max(curve: pd.DataFrame, column: str, fallback=None) -> float:
    if column in curve and curve[column].notna().any():
        return float(curve[column].max())
    return number(fallback)


def crossing(
    curve: pd.DataFrame, column: str, target: float, higher_is_better: bool = True
) -> tuple[float, float, float] | None:
    """(epoch before, epoch at, fraction of the way) where `column` first reaches `target` in its direction: the
    last evaluation short of it and the first at or past it (at or above for an accuracy, at or below for a
    loss), the target reached that fraction of the way between their values (linear interpolation). The first
    evaluation already there has nothing before it: (its epoch, its epoch, 0). None when never reached (or no
    curve)."""
    if column not in curve or not len(curve):
        return None
    points = curve[[EPOCH, column]].astype(float).dropna().sort_values(EPOCH)
    epochs, values = points[EPOCH].to_numpy(), points[column].to_numpy()
    reached = np.flatnonzero(values >= target if higher_is_better else values <= target)
    if not len(reached):
        return None
    at = int(reached[0])
    if at == 0:
        return float(epochs[0]), float(epochs[0]), 0.0
    before, after = values[at - 1], values[at]
    return float(epochs[at - 1]), float(epochs[at]), float((target - before) / (after - before))


def epochs_to_reach(curve: pd.DataFrame, column: str, target: float, higher_is_better: bool = True) -> float:
    """The epoch at which `column` first reaches `target`, interpolated between evaluations (`crossing`): a value
    that rises from 0.40 after epoch 2 to 0.60 after epoch 3 reaches 0.55 at epoch 2.75, so two runs that both
    cross during epoch 3 are told apart, and whole-epoch steps do not make seeds tie. NaN when never reached."""
    found = crossing(curve, column, target, higher_is_better)
    if found is None:
        return math.nan
    before, at, fraction = found
    return before + fraction * (at - before)


def seconds_to_reach(curve: pd.DataFrame, column: str, target: float, higher_is_better: bool = True) -> float:
    """Wall-clock seconds (per-epoch `time_s`, training and evaluation, summed) to the interpolated crossing: every
    epoch up to the last evaluation below the target, and the same fraction of the epochs to the first one at or
    above it. NaN when never reached or not timed."""
    found = crossing(curve, column, target, higher_is_better)
    if found is None or TIME_S not in curve:
        return math.nan
    before, at, fraction = found
    times = curve[[EPOCH, TIME_S]].astype(float)
    if at == before:  # reached at the first evaluation: the time through it
        return float(times.loc[times[EPOCH] <= at, TIME_S].sum())
    done = times.loc[times[EPOCH] <= before, TIME_S].sum()
    crossing_epochs = times.loc[(times[EPOCH] > before) & (times[EPOCH] <= at), TIME_S].sum()
    return float(done + fraction * crossing_epochs)


def is_clean(noise_rate) -> bool:
    return bool(np.isclose(float(noise_rate), 0.0))
