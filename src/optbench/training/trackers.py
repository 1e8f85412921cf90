"""Experiment trackers (conf/logger/): TensorBoard, MLflow, Weights & Biases and a CSV table, several at once.

`open_trackers(cfg, run_dir, run_id, earlier_records)` starts every tracker the config chooses and
returns a `Trackers` that the epoch loop hands each epoch's metric record to, and tells how the run
ended. Each tracker gets the resolved config (record.json's) as parameters and the run id, study and
setting as tags. A tracker run is keyed by the run id and the record's start time: a resumed run
continues its tracker run (MLflow: found by its tags; W&B: the same run id), while a fresh start
(train.rerun=true, a new record) gets a new one. A tracker that fails (server gone, disk full, package
missing) is logged once and switched off: the run itself never fails for it, and its directory keeps
every number. Trackers are numbers-free: `logger` is in identity.NUMBERS_FREE_KEYS.
"""

import contextlib
import csv
import fcntl
import io
import json
import logging
import os
import time
from pathlib import Path

from optbench import fileio, identity, rundir
from optbench.formats import run_record, run_summary
from optbench.rundir import RunDir

log = logging.getLogger(__name__)
# Tracker status of a finished run: MLflow's run statuses; diverged is a result, so it finished.
MLFLOW_STATUS = {
    run_summary.COMPLETED: "FINISHED",
    run_summary.DIVERGED: "FINISHED",
    run_summary.FAILED: "FAILED",
    run_summary.INTERRUPTED: "KILLED",
    run_summary.RUNNING: "KILLED",
}


def chosen_loggers(cfg) -> dict:
    """logger name -> its settings; train.tensorboard=true (the older switch) adds TensorBoard."""
    chosen = {name: dict(settings or {}) for name, settings in (cfg.get("logger") or {}).items()}
    if cfg.train.get("tensorboard") and "tensorboard" not in chosen:
        chosen["tensorboard"] = {"dir": "tensorboard"}
    return chosen


class TrackerRun:
    """What every tracker says about one run: its key, name, parameters and tags."""

    def __init__(self, cfg, run_dir: RunDir, run_id: str):
        record = run_record.read(run_dir.path)
        created = record.created if record else ""
        self.run_id = run_id
        # the tracker run's key: the run id and when its record was written (a fresh start gets a new one)
        self.key = f"{run_id}-{''.join(char for char in created if char.isdigit())[:14]}"
        self.params = {
            key: value if isinstance(value, str) else json.dumps(value)
            for key, value in identity.flatten(record.config if record else {}).items()
        }
        self.setting = setting_name(cfg, run_dir.path)
        self.name = f"{self.setting}/seed{cfg.seed}"
        self.tags = {
            "optbench.run_id": run_id,
            "optbench.attempt": created,
            "optbench.setting": self.setting,
            "optbench.study": str(cfg.get("study") or ""),
            "optbench.run_dir": str(run_dir.path),
        }


def setting_name(cfg, run_path: Path) -> str:
    """The run directory below the results folder without its seed level (what all seeds of a setting share);
    for a directory elsewhere, dataset/noise-rate/optimizer."""
    try:
        return str(Path(run_path).resolve().relative_to(Path(cfg.paths.results_dir).resolve()).parent)
    except ValueError:
        noise = rundir.noise_level(cfg.noise.name, cfg.noise.rate, cfg.noise.get("label_set"))
        return f"{cfg.dataset.name}/{noise}/{cfg.optimizer.name}"


def numeric_metrics(record: dict) -> dict[str, float]:
    """The record's numbers, epoch left out (it is the step); None (a non-finite value read back) skipped."""
    return {
        key: float(value)
        for key, value in record.items()
        if key != "epoch" and isinstance(value, (int, float)) and not isinstance(value, bool)
    }


# ---------------------------------------------------------------- the trackers


class TensorBoardTracker:
    name = "tensorboard"

    def __init__(self, settings: dict, run: TrackerRun, run_path: Path, earlier: list[dict]):
        from torch.utils.tensorboard import SummaryWriter  # imported only when asked: tensorboard is slow to import

        folder = Path(run_path) / settings.get("dir", "tensorboard")
        self.fresh = not any(folder.glob("events.out.tfevents.*"))
        # purge_step drops events an earlier session wrote after the checkpoint it resumes from
        self.writer = SummaryWriter(str(folder), purge_step=None if self.fresh else len(earlier) + 1)

    def log_epoch(self, record: dict) -> None:
        for key, value in numeric_metrics(record).items():
            self.writer.add_scalar(key, value, record["epoch"])
        self.writer.flush()

    def finish(self, status: str) -> None:
        self.writer.close()


class CsvTracker:
    """<run dir>/csv/metrics.csv, rewritten whole each epoch (so a resume trimmed to its checkpoint agrees)."""

    name = "csv"

    def __init__(self, settings: dict, run: TrackerRun, run_path: Path, earlier: list[dict]):
        self.path = Path(run_path) / settings.get("dir", "csv") / "metrics.csv"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.rows = list(earlier)
        self.fresh = False  # it writes the earlier epochs itself
        self._write()

    def log_epoch(self, record: dict) -> None:
        self.rows.append(record)
        self._write()

    def _write(self) -> None:
        columns = list(dict.fromkeys(key for row in self.rows for key in row))
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.rows)
        fileio.write_bytes_atomically(self.path, text.getvalue().encode())

    def finish(self, status: str) -> None:
        pass


def quiet_store_messages() -> None:
    """MLflow announces creating and migrating a new SQLite store on the console ("Creating initial MLflow database
    tables...", alembic's "Context impl SQLiteImpl"): harmless, once per store, and not the run's business."""
    for name in ("mlflow.store.db.utils", "alembic", "alembic.runtime.migration"):
        logging.getLogger(name).setLevel(logging.WARNING)


@contextlib.contextmanager
def store_creation_lock(lock_path: Path | None):
    """Waits for (then holds) an flock beside a local MLflow store while a process opens it: runs started together
    on a new folder (study.py --launcher parallel) each created and migrated the same new SQLite file at once, and
    all but one lost their tracker ("duplicate column name: step"). Once created, concurrent writers are fine.
    None (a tracking server, which creates its own store): no lock."""
    if lock_path is None:
        yield
        return
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class MlflowTracker:
    name = "mlflow"

    def __init__(self, settings: dict, run: TrackerRun, run_path: Path, earlier: list[dict]):
        # A tracking server that is gone must not hold the run for minutes: MLflow retries 7 times with
        # backoff by default. The user's own environment settings win.
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
        from mlflow.tracking import MlflowClient

        quiet_store_messages()

        results_dir = Path(settings["results_dir"]).resolve()
        uri = settings.get("tracking_uri")
        if not uri:
            results_dir.mkdir(parents=True, exist_ok=True)
            uri = f"sqlite:///{results_dir / 'mlflow.db'}"
        database = Path(uri[len("sqlite:///") :]) if uri.startswith("sqlite:///") else None  # a local store
        # artifacts (summary.json) beside a local store, not MLflow's default ./mlruns in the working directory
        artifacts = (database.parent / "mlflow-artifacts").resolve().as_uri() if database else None
        with store_creation_lock(database.with_name(database.name + ".lock") if database else None):
            self.client = MlflowClient(tracking_uri=uri)
            experiment_id = self._experiment(settings.get("experiment_name") or "optbench", artifacts)
        found = self.client.search_runs(
            [experiment_id],
            max_results=1,
            filter_string=(
                f"tags.`optbench.run_id` = '{run.run_id}' and tags.`optbench.attempt` = '{run.tags['optbench.attempt']}'"  # noqa: E501
            ),
        )
        self.fresh = not found
        if found:
            self.mlflow_run_id = found[0].info.run_id
            if not settings.get("only_new"):  # training continues it; logging runs on disk leaves it as it is
                self.client.update_run(self.mlflow_run_id, status="RUNNING")
                self.client.set_tag(self.mlflow_run_id, "optbench.study", run.tags["optbench.study"])
        else:
            self.mlflow_run_id = self.client.create_run(experiment_id, tags=run.tags, run_name=run.name).info.run_id
            self._log_params(run.params)
        log.info("mlflow: run %s in %s", self.mlflow_run_id, uri)

    def _experiment(self, name: str, artifacts: str | None) -> str:
        experiment = self.client.get_experiment_by_name(name)
        if experiment is not None:
            return experiment.experiment_id
        try:
            return self.client.create_experiment(name, artifact_location=artifacts)
        except Exception:  # another process (a parallel sweep) created it first
            experiment = self.client.get_experiment_by_name(name)
            if experiment is None:
                raise
            return experiment.experiment_id

    def _log_params(self, params: dict[str, str]) -> None:
        from mlflow.entities import Param

        items = [Param(key, value) for key, value in sorted(params.items())]
        for start in range(0, len(items), 100):  # MLflow takes at most 100 parameters per batch
            self.client.log_batch(self.mlflow_run_id, params=items[start : start + 100])

    def log_epoch(self, record: dict) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(key, value, now, record["epoch"]) for key, value in numeric_metrics(record).items()]
        self.client.log_batch(self.mlflow_run_id, metrics=metrics)

    def log_summary(self, summary: dict) -> None:
        """summary.json's best (selected on validation) and final epochs as `best/...` and `final/...` metrics at
        their epoch, and the whole file as the artifact run-summary.json (not summary.json: the artifacts lie under
        the results folder, where a summary.json marks a run directory)."""
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [
            Metric(f"{part}/{key}", value, now, int(summary[part].get("epoch") or 0))
            for part in ("best", "final")
            if isinstance(summary.get(part), dict)
            for key, value in numeric_metrics(summary[part]).items()
        ]
        for start in range(0, len(metrics), 1000):  # MLflow takes at most 1000 metrics per batch
            self.client.log_batch(self.mlflow_run_id, metrics=metrics[start : start + 1000])
        self.client.log_dict(self.mlflow_run_id, summary, "run-summary.json")

    def finish(self, status: str) -> None:
        self.client.set_tag(self.mlflow_run_id, "optbench.status", status)
        self.client.set_terminated(self.mlflow_run_id, MLFLOW_STATUS.get(status, "FAILED"))


class WandbTracker:
    """A W&B run with the id `run.key`, files in <run dir>/wandb; offline unless logger.wandb.mode says otherwise."""

    name = "wandb"

    def __init__(self, settings: dict, run: TrackerRun, run_path: Path, earlier: list[dict]):
        import wandb

        self.fresh = not any((Path(run_path) / "wandb").glob(f"*run-*-{run.key}"))
        tags = [f"run_id:{run.run_id}"] + (
            [f"study:{run.tags['optbench.study']}"] if run.tags["optbench.study"] else []
        )
        self.run = wandb.init(
            dir=str(run_path),
            project=settings.get("project") or "optbench",
            entity=settings.get("entity"),
            id=run.key,
            resume="allow",
            mode=settings.get("mode") or "offline",
            name=run.name,
            group=run.setting[:128],
            tags=[tag[:64] for tag in tags],
            config={**run.params, **run.tags},
            reinit="create_new",  # a multirun trains its runs one after another in one process
            settings=wandb.Settings(silent=True, console="off", x_disable_stats=True, save_code=False),
        )
        # epoch is the x-axis: a resume that repeats epochs after its checkpoint is not dropped as out of order
        self.run.define_metric("epoch")
        self.run.define_metric("*", step_metric="epoch")

    def log_epoch(self, record: dict) -> None:
        self.run.log({**numeric_metrics(record), "epoch": record["epoch"]})

    def finish(self, status: str) -> None:
        self.run.summary["optbench.status"] = status
        self.run.finish(exit_code=0 if status in run_summary.FINAL_STATUSES else 1)


TRACKERS = {tracker.name: tracker for tracker in (TensorBoardTracker, CsvTracker, MlflowTracker, WandbTracker)}


# ---------------------------------------------------------------- all of them, each failing alone


class Trackers:
    """The started trackers; one that raises is logged once and dropped, and the run goes on."""

    def __init__(self):
        self.active = []
        self.failures = 0

    def start(self, name: str, make) -> None:
        tracker = self._guarded(name, "starting", make)
        if tracker is not None:
            self.active.append(tracker)

    def log_epoch(self, record: dict) -> None:
        for tracker in list(self.active):
            self._guarded(tracker.name, f"logging epoch {record['epoch']}", lambda: tracker.log_epoch(record), tracker)  # noqa: B023

    def finish(self, status: str, summary: dict | None = None) -> None:
        """The run's ending; trackers that take one (MLflow) also get summary.json's best and final metrics."""
        for tracker in list(self.active):
            if summary is not None and hasattr(tracker, "log_summary"):
                self._guarded(tracker.name, "logging the summary", lambda: tracker.log_summary(summary), tracker)  # noqa: B023
        for tracker in list(self.active):
            self._guarded(tracker.name, "finishing", lambda: tracker.finish(status), tracker)  # noqa: B023
        self.active = []

    def _guarded(self, name: str, doing: str, action, tracker=None):
        try:
            return action()
        except Exception as error:  # noqa: BLE001
            self.failures += 1
            if tracker is not None:
                self.active.remove(tracker)
            log.warning(
                "logger %s failed %s and is off for the rest of this run (the run goes on; its directory "
                "keeps every number): %s: %s",
                name,
                doing,
                type(error).__name__,
                str(error).splitlines()[0] if str(error) else "",
            )
            return None


def open_trackers(cfg, run_dir: RunDir, run_id: str, earlier_records: list[dict], only_new: bool = False) -> Trackers:
    """Start the chosen trackers; a tracker run started now also gets the epochs trained before (a resume).
    `only_new`: a tracker run found already is left as it is (a finished run logged again adds nothing)."""
    trackers = Trackers()
    chosen = chosen_loggers(cfg)
    if not chosen:
        return trackers
    run = trackers._guarded("+".join(chosen), "reading the run's record", lambda: TrackerRun(cfg, run_dir, run_id))
    if run is None:
        return trackers
    for name, settings in chosen.items():
        settings = {**settings, "results_dir": cfg.paths.results_dir, "only_new": only_new}
        trackers.start(name, lambda: TRACKERS[name](settings, run, run_dir.path, earlier_records))  # noqa: B023
    for tracker in list(trackers.active):
        if tracker.fresh:
            for record in earlier_records:
                trackers._guarded(tracker.name, "logging earlier epochs", lambda: tracker.log_epoch(record), tracker)  # noqa: B023
                if tracker not in trackers.active:
                    break
    return trackers


def log_finished_run(cfg, run_dir: RunDir, run_id: str, records: list[dict], summary: dict) -> list[str] | None:
    """A run that trains no more (finished, or stopped) into the chosen trackers that do not hold it yet: every
    epoch, its summary and its ending. Returns the trackers that got it (none: each had it already), or None
    when a tracker failed (logged once, as in training)."""
    trackers = open_trackers(cfg, run_dir, run_id, records, only_new=True)
    trackers.active = [tracker for tracker in trackers.active if tracker.fresh]
    added = [tracker.name for tracker in trackers.active]
    trackers.finish(str(summary.get("status")), summary)
    return None if trackers.failures else added
