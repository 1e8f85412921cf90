"""End to end through train(cfg, run_dir): outputs match the run-directory contract, runs are
reproducible, noisy runs report the memorization metrics, and real CIFAR-10 images are learned."""

import json
import os

import pytest
from conftest import compose_config

from optbench.config.own_optimizers import optimizer_names, spec_for
from optbench.training.run import train

EPOCH_KEYS = {
    "epoch",
    "lr",
    "time_s",
    "train/loss",
    "train/acc",
    "train/images",
    "train/time_s",
    "train/images_per_s",
    "val/loss",
    "val/acc",
    "test/loss",
    "test/acc",
}
SUMMARY_KEYS = {
    "status",
    "epochs_done",
    "epochs_planned",
    "final",
    "best",
    "wall_time_s",
    "train_images_per_s",
    "device",
    "device_policy",
    "versions",
    "git",
    "environment",
    "noise",
    "dataset",
    "model",
    "optimizer",
    "seed",
}


def read_metrics(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def without_timings(records):
    return [
        {key: value for key, value in record.items() if "time" not in key and "per_s" not in key} for record in records
    ]


@pytest.mark.slow
def test_one_epoch_synthetic_run_writes_the_contract_and_beats_chance(tiny_config, tmp_path):
    run_dir = tmp_path / "run"
    summary = train(tiny_config("epochs=2"), run_dir)
    records = read_metrics(run_dir)
    assert [record["epoch"] for record in records] == [1, 2]
    assert all(EPOCH_KEYS <= record.keys() for record in records)
    assert all(0 <= record[key] <= 1 for record in records for key in record if key.endswith("/acc"))
    assert SUMMARY_KEYS <= summary.keys()
    assert json.loads((run_dir / "summary.json").read_text()) == summary
    assert summary["status"] == "completed" and summary["epochs_done"] == 2
    assert summary["final"] == records[-1]
    best = max(records, key=lambda record: record["val/acc"])
    assert summary["best"]["epoch"] == best["epoch"] and summary["best"]["test/acc"] == best["test/acc"]
    assert summary["best"]["selected_by"] == "val/acc"
    assert summary["final"]["test/acc"] > 0.2  # 10 classes: chance is 0.1
    assert summary["dataset"] == {
        "name": "synthetic",
        "num_classes": 10,
        "num_train": 500,
        "num_val": 100,
        "num_test": 200,
    }
    assert (run_dir / "checkpoint.pt").stat().st_size > 0


def test_a_new_run_records_the_processor_its_dispatch_level_and_its_threads(tiny_config, tmp_path):
    """What changes the numbers besides config, seed and code is in summary.json, parsed by its format module."""
    import torch

    from optbench.formats import run_summary

    train(tiny_config("epochs=1", "device_policy.threads=1"), tmp_path / "run")
    environment = run_summary.read(tmp_path / "run").environment
    assert environment.threads == 1
    assert environment.cpu_capability == torch.backends.cpu.get_cpu_capability()
    assert environment.processor and environment.torch == torch.__version__
    assert environment.processor_kind.startswith(environment.processor)
    assert environment.cpu_capability in environment.processor_kind


def test_a_summary_from_before_the_environment_was_recorded_reads_as_unknown(tmp_path):
    from optbench.formats import run_summary

    content = {"status": "running", "epochs_done": 0}
    environment = run_summary.parse(content, tmp_path / "summary.json").environment
    assert environment == run_summary.Environment() and environment.processor_kind == "unknown"


@pytest.mark.slow
def test_same_seed_gives_identical_metrics_and_another_seed_does_not(tiny_config, tmp_path):
    runs = {
        name: train(tiny_config(f"seed={seed}", "noise=symmetric", "noise.rate=0.2"), tmp_path / name)
        for name, seed in (("a", 0), ("b", 0), ("c", 1))
    }
    first, again, other = (without_timings(read_metrics(tmp_path / name)) for name in "abc")
    assert first == again  # bit-identical on CPU, noise draw included
    assert first != other
    assert runs["a"]["noise"] == runs["b"]["noise"]


@pytest.mark.slow
def test_noisy_run_records_realised_rate_and_memorization(tiny_config, tmp_path):
    summary = train(tiny_config("noise=symmetric", "noise.rate=0.4"), tmp_path / "run")
    assert summary["noise"]["realised_rate"] == 0.4 and summary["noise"]["num_noisy"] == 200
    record = read_metrics(tmp_path / "run")[0]
    assert 0 <= record["noisy/fit_noisy_label"] <= 1 and 0 <= record["noisy/fit_clean_label"] <= 1
    # a flipped label is never the clean one, so one prediction cannot match both
    assert record["noisy/fit_noisy_label"] + record["noisy/fit_clean_label"] <= 1


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("optimizer", optimizer_names())  # own ones too (OPTBENCH_CONFIG_PATH)
@pytest.mark.slow
def test_every_optimizer_trains_end_to_end(tiny_config, tmp_path, optimizer):
    """Every registered optimizer, under the schedule a study gives it (Schedule-Free: constant, its own warmup)."""
    schedule = spec_for(optimizer).default_schedule
    summary = train(tiny_config(f"optimizer={optimizer}", "epochs=2", f"scheduler={schedule}"), tmp_path / "run")
    records = read_metrics(tmp_path / "run")
    assert summary["status"] == "completed"
    assert records[-1]["train/loss"] < records[0]["train/loss"]


# After the one epoch's 10 steps (peak lr 0.1): cosine has annealed to 0, step has passed both milestones
# (x0.1 at steps 5 and 8), constant stays at the peak.
@pytest.mark.parametrize(("schedule", "last_lr"), [("cosine", 0.0), ("step", 0.001), ("constant", 0.1)])
@pytest.mark.slow
def test_schedules_set_the_learning_rate_of_the_run(tiny_config, tmp_path, schedule, last_lr):
    summary = train(tiny_config(f"scheduler={schedule}", "optimizer=sgd"), tmp_path / "run")
    assert summary["status"] == "completed"
    assert summary["final"]["lr"] == pytest.approx(last_lr, abs=1e-12)


@pytest.mark.slow
def test_completed_run_is_skipped_unless_rerun(tiny_config, tmp_path):
    run_dir = tmp_path / "run"
    first = train(tiny_config(), run_dir)
    (run_dir / "metrics.jsonl").write_text("kept\n")
    assert train(tiny_config(), run_dir) == first
    assert (run_dir / "metrics.jsonl").read_text() == "kept\n"  # nothing redone, nothing overwritten
    rerun = train(tiny_config("train.rerun=true"), run_dir)
    assert rerun["status"] == "completed" and len(read_metrics(run_dir)) == 1


@pytest.mark.slow
def test_diverging_run_stops_with_status_diverged(tiny_config, tmp_path):
    summary = train(
        tiny_config("optimizer=sgd", "optimizer.lr=1e6", "epochs=3", "scheduler=constant"), tmp_path / "run"
    )
    assert summary["status"] == "diverged" and summary["diverged_at"]["epoch"] <= 3


@pytest.mark.slow
def test_tensorboard_scalars_are_written(tiny_config, tmp_path):
    train(tiny_config("train.tensorboard=true"), tmp_path / "run")
    assert list((tmp_path / "run" / "tensorboard").glob("events.out.tfevents.*"))


@pytest.mark.slow
def test_short_run_on_real_cifar10_images_beats_chance(tmp_path, real_cifar10_root):
    cfg = compose_config(
        [
            "dataset=imagefolder",
            f"dataset.root={real_cifar10_root}",
            f"paths.data_dir={os.environ['OPTBENCH_TEST_DATA_DIR']}",
            "dataset.val_size=1000",
            "dataset.train_subset=3000",
            "model.width=8",
            "epochs=2",
            "batch_size=64",
            "optimizer=adamw",
            "device=cpu",
            "train.progress_bar=false",
        ]
    )
    summary = train(cfg, tmp_path / "run")
    assert summary["status"] == "completed"
    assert summary["dataset"]["num_test"] == 10000 and summary["dataset"]["num_train"] == 3000
    assert summary["best"]["test/acc"] > 0.2  # 10 classes: chance is 0.1


@pytest.mark.slow
def test_the_dataloader_pipeline_trains_and_its_numbers_do_not_depend_on_workers(tiny_config, tmp_path):
    runs = [
        train(tiny_config("data.pipeline=dataloader", f"device_policy.num_workers={workers}"), tmp_path / str(workers))
        for workers in (0, 1)
    ]
    assert [run["status"] for run in runs] == ["completed", "completed"]
    assert without_timings([runs[0]["final"]]) == without_timings([runs[1]["final"]])
    assert runs[0]["final"]["train/images"] == 500  # 600 less 100 for validation, whole batches of 50
