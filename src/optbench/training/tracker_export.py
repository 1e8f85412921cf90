"""Trackers for runs already on disk: every run directory under a folder into MLflow (src/aggregate.py --to-tracker).

`log_folder(folder, tracker, tracking_uri)` walks the folder for run directories and logs each one that trains no
more (summary.json says how it ended) and that the tracker does not hold yet as one tracker run with its config
as parameters, every epoch of metrics.jsonl, summary.json's best and final metrics and the file itself
(run-summary.json)
(trackers.log_finished_run). The tracker run is keyed as training keys it (the run id and the record's start),
so a second call adds nothing and a run resumed later with logger=mlflow continues the same tracker run. Run
directories are only read; published ones without checkpoints (docs/*/runs) work the same. Without a tracking
URI the store is <folder>/mlflow.db, where training with logger=mlflow and paths.results_dir=<folder> puts it.
"""

import logging
import os
from collections import Counter
from pathlib import Path

from omegaconf import OmegaConf, open_dict

from optbench import rundir
from optbench.config.plain import plain_dict
from optbench.errors import ConfigError, DamagedRunFile, did_you_mean
from optbench.formats import metrics_log, run_record, run_summary
from optbench.registry import choices
from optbench.training import trackers

log = logging.getLogger(__name__)
OUTSIDE_RUN_DIRS = ("mlflow",)  # trackers whose store lies outside the run directories, which stay as they were


def run_dirs(folder: Path) -> list[Path]:
    """Every run directory under `folder` (a run directory holds no other; hidden folders are not entered), sorted."""
    found = []
    for here, subfolders, _ in os.walk(folder):
        if rundir.is_run_dir(here):
            found.append(Path(here))
            subfolders.clear()
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
    return sorted(found)


def check_request(folder: Path, tracker: str) -> None:
    """One line for a folder that is not there or a tracker that cannot take runs on disk."""
    if not folder.is_dir():
        raise ConfigError(
            f"{folder} does not exist (or is not a folder): give the folder holding the run "
            "directories, e.g. results/ or docs/cpu-study/runs"
        )
    if tracker not in OUTSIDE_RUN_DIRS:
        why = (
            "writes into the run directories, which this command leaves as they are"
            if tracker in choices.LOGGERS
            else f"is not a tracker ({did_you_mean(tracker, OUTSIDE_RUN_DIRS).strip() or 'see conf/logger/'})"
        )
        raise ConfigError(f"--to-tracker {tracker}: {why}; choose --to-tracker {', '.join(OUTSIDE_RUN_DIRS)}")


def run_config(recorded_config: dict, folder: Path, tracker: str, settings: dict):
    """The recorded config with the tracker chosen and `folder` as its results folder (the tracker's setting
    names are paths below it, as for runs trained there)."""
    cfg = OmegaConf.create(recorded_config or {})
    with open_dict(cfg):
        cfg.paths = {**(plain_dict(cfg.paths) if "paths" in cfg else {}), "results_dir": str(folder)}
        cfg.logger = {tracker: settings}
        cfg.train = {**(plain_dict(cfg.train) if "train" in cfg else {}), "tensorboard": False}
    return cfg


def log_folder(
    folder: Path, tracker: str, tracking_uri: str | None = None, experiment_name: str = "optbench"
) -> Counter:
    """Counts of `logged`, `already there`, `being trained`, `unreadable` and `failed` run directories."""
    check_request(folder, tracker)
    settings = {"tracking_uri": tracking_uri, "experiment_name": experiment_name}
    counts: Counter[str] = Counter()
    for run_path in run_dirs(folder):
        if rundir.is_being_trained(run_path):  # its own trainer logs it, with logger=mlflow
            counts["being trained"] += 1
            continue
        try:
            record, summary = run_record.read(run_path), run_summary.read(run_path)
        except DamagedRunFile as error:
            record, summary = None, None
            log.warning("%s", error)
        if not record or not summary or not record.run_id:
            log.warning("%s: no record.json or summary.json to log; left out", run_path)
            counts["unreadable"] += 1
            continue
        cfg = run_config(record.config, folder, tracker, settings)
        records = metrics_log.read(run_path)[0]
        added = trackers.log_finished_run(cfg, rundir.RunDir(run_path), record.run_id, records, summary.content)
        counts["failed" if added is None else "logged" if added else "already there"] += 1
    return counts
