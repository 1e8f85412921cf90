"""Experiment trackers (conf/logger/): MLflow read back through its client, W&B's offline run file,
TensorBoard and CSV, resume continuing the tracker run, and a broken tracker never failing a run."""

import csv
import errno
import json
import logging
import struct

import pytest
from conftest import TINY, compose_config
from test_resume import interrupt_after

from optbench.errors import ConfigError, RunInterrupted
from optbench.training.run import train
from optbench.training.trackers import CsvTracker

pytestmark = pytest.mark.usefixtures("one_thread")


def config(tmp_path, *extra):
    return compose_config(
        [*TINY, "epochs=2", f"paths.results_dir={tmp_path / 'results'}", f"paths.data_dir={tmp_path / 'data'}", *extra]
    )


def metrics_of(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def mlflow_runs(results_dir):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{results_dir / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("optbench")
    return client, client.search_runs([experiment.experiment_id])


@pytest.mark.slow
def test_mlflow_holds_one_run_per_run_directory_with_every_epoch_and_a_resume_continues_it(tmp_path, monkeypatch):
    results = tmp_path / "results"
    with monkeypatch.context() as patch:
        interrupt_after(patch, 10)  # 10 steps per epoch: stopped after epoch 1's checkpoint
        with pytest.raises(RunInterrupted):
            train(config(tmp_path, "logger=mlflow", "study=H9"), tmp_path / "run")
    client, runs = mlflow_runs(results)
    assert [run.info.status for run in runs] == ["KILLED"]
    summary = train(config(tmp_path, "logger=mlflow", "study=H9"), tmp_path / "run")  # resumes
    assert summary["resumes"] == 1
    client, runs = mlflow_runs(results)
    assert len(runs) == 1, "the resume continues the same MLflow run"
    run = runs[0]
    assert run.info.status == "FINISHED"
    assert run.data.tags["optbench.run_id"] == summary["run_id"] and run.data.tags["optbench.study"] == "H9"
    assert run.data.tags["optbench.status"] == "completed"
    assert run.data.params["optimizer.lr"] == "0.1" and run.data.params["epochs"] == "2"
    history = client.get_metric_history(run.info.run_id, "val/acc")
    assert [(metric.step, metric.value) for metric in history] == [
        (record["epoch"], pytest.approx(record["val/acc"])) for record in metrics_of(tmp_path / "run")
    ]
    assert [metric.step for metric in client.get_metric_history(run.info.run_id, "train/loss")] == [1, 2]

    train(config(tmp_path, "logger=mlflow", "seed=1", "epochs=1"), tmp_path / "run-seed1")  # another directory
    _, runs = mlflow_runs(results)
    assert len(runs) == 2 and len({run.data.tags["optbench.run_id"] for run in runs}) == 2


def wandb_records(path):
    """The records of a W&B offline run file (.wandb): W&B's LevelDB-style log of protobuf Records
    (a 7-byte ':W&B' header, then 32 KiB blocks of checksum-length-type framed chunks)."""
    from wandb.proto import wandb_internal_pb2

    data, position, block, pending = path.read_bytes(), 7, 32768, b""
    assert data[:4] == b":W&B"
    while position + 7 <= len(data):
        if block - position % block < 7:  # a block's tail too short for a chunk header is padding
            position += block - position % block
            continue
        _, length, kind = struct.unpack("<IHB", data[position : position + 7])
        if kind == 0 and length == 0:
            break
        pending += data[position + 7 : position + 7 + length]
        position += 7 + length
        if kind in (1, 4):  # a full record, or the last chunk of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


@pytest.mark.slow
def test_wandb_offline_run_folders_hold_every_epoch_under_one_run_id_across_a_resume(tmp_path, monkeypatch):
    with monkeypatch.context() as patch:
        interrupt_after(patch, 10)  # stopped after epoch 1's checkpoint
        with pytest.raises(RunInterrupted):
            train(config(tmp_path, "logger=wandb"), tmp_path / "run")
    summary = train(config(tmp_path, "logger=wandb"), tmp_path / "run")
    # W&B's service process writes the .wandb files; `run.finish()` can return before it has flushed the last
    # records (seen once in CI: epoch 2 missing). Its teardown waits for them, as the process's exit does.
    import wandb

    wandb.teardown()
    run_files = sorted((tmp_path / "run" / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(run_files) == 2  # one offline folder per session (wandb sync joins them by run id)
    records = [record for path in run_files for record in wandb_records(path)]
    run_ids = {record.run.run_id for record in records if record.HasField("run")}
    assert len(run_ids) == 1 and run_ids.pop().startswith(summary["run_id"])
    history = [
        {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
        for record in records
        if record.HasField("history")
    ]
    assert [(row["epoch"], row["val/acc"]) for row in history] == [
        (record["epoch"], pytest.approx(record["val/acc"])) for record in metrics_of(tmp_path / "run")
    ]


@pytest.mark.slow
def test_tensorboard_and_csv_together_and_the_older_switch(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    train(config(tmp_path, "logger=[tensorboard,csv]"), tmp_path / "run")
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    assert [event.step for event in events.Scalars("val/acc")] == [1, 2]
    with open(tmp_path / "run" / "csv" / "metrics.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [float(row["val/acc"]) for row in rows] == [record["val/acc"] for record in metrics_of(tmp_path / "run")]
    train(config(tmp_path, "train.tensorboard=true", "epochs=1"), tmp_path / "old")  # still works
    assert list((tmp_path / "old" / "tensorboard").glob("events.out.tfevents.*"))


@pytest.mark.slow
def test_a_broken_tracker_is_logged_once_and_never_fails_the_run(tmp_path, monkeypatch, caplog):
    def disk_full(self, record):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(CsvTracker, "log_epoch", disk_full)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with caplog.at_level(logging.WARNING):
        summary = train(
            config(tmp_path, "logger=[mlflow,csv]", "logger.mlflow.tracking_uri=http://127.0.0.1:9"), tmp_path / "run"
        )
    assert summary["status"] == "completed" and len(metrics_of(tmp_path / "run")) == 2
    failures = [record.getMessage() for record in caplog.records if "failed" in record.getMessage()]
    assert len(failures) == 2, failures  # once each, not once per epoch
    assert any(line.startswith("logger mlflow failed starting") for line in failures)
    assert any(line.startswith("logger csv failed logging epoch 1") and "No space left" in line for line in failures)


def test_loggers_are_not_part_of_a_runs_identity(tmp_path):
    plain = train(config(tmp_path, "epochs=1"), tmp_path / "run")
    again = train(config(tmp_path, "epochs=1", "logger=csv"), tmp_path / "run")  # same run: skipped, not refused
    assert again == plain


@pytest.mark.parametrize(
    "override, message",
    [
        ("logger=[csv,mlfow]", "unknown logger 'mlfow': did you mean logger=mlflow"),
        ("logger.wandb.mode=sometimes", "logger.wandb.mode=sometimes: choose offline"),
    ],
)
def test_a_bad_logger_choice_is_one_line(tmp_path, override, message):
    from conftest import CONF_DIR

    from optbench.config.hydra_glue import check_groups
    from optbench.config.validation import validate

    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        check_groups([override], CONF_DIR)
        validate(config(tmp_path, "logger=wandb", override))


@pytest.mark.slow
def test_a_tracker_added_when_a_run_resumes_gets_its_earlier_epochs(tmp_path, monkeypatch):
    with monkeypatch.context() as patch:
        interrupt_after(patch, 10)  # epoch 1 trained without a tracker
        with pytest.raises(RunInterrupted):
            train(config(tmp_path), tmp_path / "run")
    train(config(tmp_path, "logger=[mlflow,csv]"), tmp_path / "run")  # resumed with trackers: not another experiment
    client, runs = mlflow_runs(tmp_path / "results")
    assert [metric.step for metric in client.get_metric_history(runs[0].info.run_id, "val/acc")] == [1, 2]
    with open(tmp_path / "run" / "csv" / "metrics.csv") as handle:
        assert [row["epoch"] for row in csv.DictReader(handle)] == ["1", "2"]


@pytest.mark.extended
@pytest.mark.slow
def test_four_runs_started_at_once_on_a_new_folder_all_reach_one_mlflow_store_with_every_epoch(tmp_path):
    """Three of four lost their tracker when they raced to create the store ("duplicate column name: step")."""
    import os
    import subprocess
    import sys

    from conftest import REPO

    env = {**os.environ, "OPTBENCH_DATA_DIR": str(tmp_path / "data"), "OMP_NUM_THREADS": "1"}
    tiny = [override for override in TINY if not override.startswith("epochs=")]
    command = [
        sys.executable,
        "src/train.py",
        *tiny,
        "epochs=2",
        "logger=mlflow",
        f"paths.results_dir={tmp_path / 'results'}",
    ]
    started = [
        subprocess.Popen(
            [*command, f"seed={seed}"], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for seed in range(4)
    ]
    outputs = [process.communicate(timeout=600)[0] for process in started]
    assert [process.returncode for process in started] == [0] * 4, outputs
    assert not [output for output in outputs if "logger mlflow failed" in output], outputs
    client, runs = mlflow_runs(tmp_path / "results")
    assert sorted(run.data.params["seed"] for run in runs) == ["0", "1", "2", "3"]
    for run in runs:
        assert [metric.step for metric in client.get_metric_history(run.info.run_id, "val/acc")] == [1, 2]
        assert run.info.status == "FINISHED"


def folder_bytes(folder):
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def runs_bytes(results):
    """Every file of the run directories (the MLflow store and its artifacts beside them left out)."""
    return {
        path: data
        for path, data in folder_bytes(results).items()
        if not path.relative_to(results).parts[0].startswith("mlflow")
    }


@pytest.mark.slow
def test_runs_on_disk_go_into_mlflow_once_and_a_later_resume_with_the_tracker_continues_the_same_run(
    tmp_path, monkeypatch
):
    """`logger=mlflow` on a finished run only said "skipped"; runs trained without a tracker could not reach one."""
    from optbench.training.tracker_export import log_folder

    results = tmp_path / "results"
    train(config(tmp_path, "seed=2"), results / "finished-later-asked" / "seed2")
    train(config(tmp_path, "seed=2", "logger=mlflow"), results / "finished-later-asked" / "seed2")  # skipped, logged
    train(config(tmp_path, "seed=1"), results / "finished" / "seed1")
    with monkeypatch.context() as patch:
        interrupt_after(patch, 10)  # stopped after epoch 1's checkpoint
        with pytest.raises(RunInterrupted):
            train(config(tmp_path), results / "stopped" / "seed0")
    before = runs_bytes(results)

    assert log_folder(results, "mlflow") == {"logged": 2, "already there": 1}
    assert log_folder(results, "mlflow") == {"already there": 3}
    assert runs_bytes(results) == before
    client, runs = mlflow_runs(results)
    by_setting = {run.data.tags["optbench.setting"]: run for run in runs}
    assert sorted(by_setting) == ["finished", "finished-later-asked", "stopped"]
    assert by_setting["stopped"].info.status == "KILLED" and by_setting["finished"].info.status == "FINISHED"
    finished = by_setting["finished"]
    summary = json.loads((results / "finished" / "seed1" / "summary.json").read_text())
    assert finished.data.params["seed"] == "1" and finished.data.tags["optbench.run_id"] == summary["run_id"]
    assert [metric.step for metric in client.get_metric_history(finished.info.run_id, "val/acc")] == [1, 2]
    assert finished.data.metrics["best/test/acc"] == pytest.approx(summary["best"]["test/acc"])

    train(config(tmp_path, "logger=mlflow"), results / "stopped" / "seed0")  # resumes the stopped run
    client, runs = mlflow_runs(results)
    [stopped] = [run for run in runs if run.data.tags["optbench.setting"] == "stopped"]
    assert len(runs) == 3 and stopped.info.run_id == by_setting["stopped"].info.run_id
    assert stopped.info.status == "FINISHED"
    assert [metric.step for metric in client.get_metric_history(stopped.info.run_id, "val/acc")] == [1, 2]


def test_a_missing_folder_or_a_tracker_that_writes_into_run_directories_is_one_line(tmp_path):
    import subprocess
    import sys

    from conftest import REPO

    for arguments, expected in (
        ([str(tmp_path / "nowhere"), "--to-tracker", "mlflow"], "nowhere does not exist"),
        ([str(tmp_path), "--to-tracker", "csv"], "--to-tracker csv: writes into the run "),
        ([str(tmp_path), "--to-tracker", "mlfow"], "--to-tracker mlfow: is not a tracker"),
    ):
        done = subprocess.run(
            [sys.executable, "src/aggregate.py", *arguments], cwd=REPO, capture_output=True, text=True
        )
        assert done.returncode == 2 and done.stderr.startswith("error: ") and expected in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("published", ["docs/human-noise-study/runs"])
def test_a_published_folder_goes_into_mlflow_with_every_epoch_and_is_left_as_it_was(tmp_path, published):
    import subprocess
    import sys

    from conftest import REPO

    from optbench.training.tracker_export import run_dirs

    folder, store = REPO / published, f"sqlite:///{tmp_path / 'mlflow.db'}"
    before = folder_bytes(folder)
    command = [sys.executable, "src/aggregate.py", published, "--to-tracker", "mlflow", "--tracking-uri", store]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    run_paths = run_dirs(folder)
    assert done.returncode == 0 and done.stdout.startswith(f"mlflow: {len(run_paths)} logged in {store}"), done.stderr
    assert "mlflow ui --backend-store-uri" in done.stdout and done.stderr == ""
    again = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert again.stdout.startswith(f"mlflow: {len(run_paths)} already there"), again.stderr
    assert folder_bytes(folder) == before
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store)
    runs = client.search_runs([client.get_experiment_by_name("optbench").experiment_id], max_results=1000)
    by_run_id = {run.data.tags["optbench.run_id"]: run for run in runs}
    assert len(runs) == len(by_run_id) == len(run_paths)
    for run_path in run_paths:
        record = json.loads((run_path / "record.json").read_text())
        run = by_run_id[record["run_id"]]
        epochs = [json.loads(line)["epoch"] for line in (run_path / "metrics.jsonl").read_text().splitlines()]
        assert [metric.step for metric in client.get_metric_history(run.info.run_id, "val/acc")] == epochs
        assert run.data.params["seed"] == str(record["config"]["seed"])
