"""Runs survive interruption: exact resume (mid-epoch included, and after a real SIGKILL), graceful
SIGTERM, damaged files, a changed config, the run-directory lock, divergence and failure isolation."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import REPO, TINY, compose_config
from omegaconf import OmegaConf

from optbench.config.own_optimizers import optimizer_names, spec_for
from optbench.errors import ConfigError, RunDirectoryBusy, RunInterrupted
from optbench.formats import predictions
from optbench.rundir import RunDir
from optbench.training import checkpoint
from optbench.training import steps as engine
from optbench.training.progress import divergence
from optbench.training.run import train
from optbench.training.train_command import deferred_exit_status, run_job

pytestmark = pytest.mark.usefixtures("one_thread")
# 600 images less 100 for validation, in batches of 50: 10 steps per epoch.
RESUME_RUN = [*TINY, "epochs=3", "noise=symmetric", "noise.rate=0.2"]
TIMING_KEYS = ("time_s", "per_s", "wall_time", "resumes")


def config(tmp_path, *extra):
    return compose_config([*RESUME_RUN, f"paths.data_dir={tmp_path / 'data'}", *extra])


def read_metrics(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def without_timings(value):
    """Drop wall-clock fields, which differ between any two runs, recursively."""
    if isinstance(value, dict):
        return {
            key: without_timings(item) for key, item in value.items() if not any(word in key for word in TIMING_KEYS)
        }
    if isinstance(value, list):
        return [without_timings(item) for item in value]
    return value


def kept_predictions(run_dir):
    """predictions.npz's content (the zip's own timestamps differ between any two writes)."""
    kept = predictions.read(run_dir / "predictions.npz")
    return kept.epoch, kept.predicted.tolist(), kept.labels.tolist()


def comparable_summary(summary):
    return without_timings({key: summary[key] for key in ("status", "epochs_done", "final", "best", "noise")})


class StopAfterSteps:
    """Stands in for the signal handler: a SIGTERM arrives during optimizer step `steps`."""

    def __init__(self, steps: int):
        self.steps_left, self.signal = steps, None

    def count_step(self):
        self.steps_left -= 1
        if self.steps_left == 0:
            self.signal = signal.SIGTERM


def interrupt_after(monkeypatch, steps: int):
    stopper = StopAfterSteps(steps)
    real_step = engine.train_step

    def counting_step(*args, **kwargs):
        result = real_step(*args, **kwargs)
        stopper.count_step()
        return result

    class FakeStopRequests:
        def __enter__(self):
            return stopper

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(engine, "train_step", counting_step)
    monkeypatch.setattr("optbench.training.loop.stop_requests", FakeStopRequests)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("reference") / "run"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the tests that compare with it (one_thread); restored, or later tests run on 1 thread
    try:
        summary = train(config(run_dir.parent, "optimizer=lion"), run_dir)
    finally:
        torch.set_num_threads(threads)
    return summary, read_metrics(run_dir), kept_predictions(run_dir)


@pytest.mark.parametrize("stop_at_step", [5, 10, 17, 30])  # mid-epoch 1, end of epoch 1, mid-epoch 2, last step
@pytest.mark.slow
def test_a_stopped_run_resumes_to_the_same_numbers_bit_for_bit(tmp_path, monkeypatch, uninterrupted, stop_at_step):
    reference_summary, reference_metrics, reference_predictions = uninterrupted
    run_dir = tmp_path / "run"
    with monkeypatch.context() as patch:
        interrupt_after(patch, stop_at_step)
        with pytest.raises(RunInterrupted):
            train(config(tmp_path, "optimizer=lion"), run_dir)
    stopped = json.loads((run_dir / "summary.json").read_text())
    assert stopped["status"] == "interrupted"
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert state["epochs_done"] * 10 + (state["partial_epoch"] or {}).get("batches_done", 0) == stop_at_step
    resumed = train(config(tmp_path, "optimizer=lion"), run_dir)
    assert resumed["resumes"] == 1
    assert without_timings(read_metrics(run_dir)) == without_timings(reference_metrics)
    assert comparable_summary(resumed) == comparable_summary(reference_summary)
    assert kept_predictions(run_dir) == reference_predictions


@pytest.mark.slow
def test_the_selected_epochs_predictions_come_back_from_the_checkpoint(tmp_path, monkeypatch):
    """Selection on epoch 1 (validation falls after it), stopped in epoch 2: only the checkpoint still holds
    epoch 1's test predictions, and the resumed run writes them exactly as an uninterrupted one does."""
    from optbench.training.epoch_record import epoch_record as real

    def falling_validation(run, epoch, progress, seconds, best_so_far=None):
        record, first_nonfinite, predicted = real(run, epoch, progress, seconds, best_so_far)
        return {**record, "val/acc": 1.0 / epoch}, first_nonfinite, predicted

    monkeypatch.setattr("optbench.training.loop.epoch_record", falling_validation)
    train(config(tmp_path, "optimizer=lion"), tmp_path / "reference")
    with monkeypatch.context() as patch:
        interrupt_after(patch, 17)
        with pytest.raises(RunInterrupted):
            train(config(tmp_path, "optimizer=lion"), tmp_path / "run")
    saved = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)["selected_predictions"]
    assert saved["epoch"] == 1
    (tmp_path / "run" / "predictions.npz").unlink()  # the checkpoint alone must carry them
    train(config(tmp_path, "optimizer=lion"), tmp_path / "run")
    assert kept_predictions(tmp_path / "run") == kept_predictions(tmp_path / "reference")
    assert kept_predictions(tmp_path / "run")[0] == 1


@pytest.mark.parametrize("optimizer", optimizer_names())  # own ones too (OPTBENCH_CONFIG_PATH)
@pytest.mark.slow
def test_every_optimizer_resumes_mid_epoch_to_the_same_numbers(tmp_path, monkeypatch, optimizer):
    """Each registered optimizer's state (Muon's, SOAP's preconditioners, Prodigy's estimate, ...) under the
    schedule a study gives it: stopped at step 7 of 20, resumed, equal to the uninterrupted run."""
    overrides = (f"optimizer={optimizer}", "epochs=2", f"scheduler={spec_for(optimizer).default_schedule}")
    reference = train(config(tmp_path, *overrides), tmp_path / "reference")
    with monkeypatch.context() as patch:
        interrupt_after(patch, 7)
        with pytest.raises(RunInterrupted):
            train(config(tmp_path, *overrides), tmp_path / "run")
    resumed = train(config(tmp_path, *overrides), tmp_path / "run")
    assert without_timings(read_metrics(tmp_path / "run")) == without_timings(read_metrics(tmp_path / "reference"))
    assert comparable_summary(resumed) == comparable_summary(reference)


SCHEDULE_FREE = ("optimizer=schedulefree_adamw", "scheduler=constant", "epochs=2")


@pytest.fixture(scope="module")
def uninterrupted_schedule_free(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("schedule-free") / "run"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        summary = train(config(run_dir.parent, *SCHEDULE_FREE), run_dir)
    finally:
        torch.set_num_threads(threads)
    return summary, read_metrics(run_dir), torch.load(run_dir / "checkpoint.pt", weights_only=True)


@pytest.mark.parametrize("stop_at_step", [5, 10, 15])  # mid-epoch 1, end of epoch 1 (after its evaluation), mid-epoch 2
@pytest.mark.slow
def test_schedule_free_resumes_bit_for_bit_whichever_mode_it_stopped_in(
    tmp_path, monkeypatch, uninterrupted_schedule_free, stop_at_step
):
    """Schedule-Free is checkpointed in train mode mid-epoch and in eval mode (the evaluated, averaged weights)
    after an epoch; a resumed run switches back exactly as the uninterrupted one does."""
    reference_summary, reference_metrics, reference_state = uninterrupted_schedule_free
    run_dir = tmp_path / "run"
    with monkeypatch.context() as patch:
        interrupt_after(patch, stop_at_step)
        with pytest.raises(RunInterrupted):
            train(config(tmp_path, *SCHEDULE_FREE), run_dir)
    stopped = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    stopped_mid_epoch = stopped["partial_epoch"] is not None
    assert [group["train_mode"] for group in stopped["optimizer"]["param_groups"]] == [stopped_mid_epoch] * 2
    resumed = train(config(tmp_path, *SCHEDULE_FREE), run_dir)
    assert resumed["resumes"] == 1
    assert without_timings(read_metrics(run_dir)) == without_timings(reference_metrics)
    assert comparable_summary(resumed) == comparable_summary(reference_summary)
    final_state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    for name, tensor in reference_state["model"].items():
        assert torch.equal(final_state["model"][name], tensor), name


def test_schedule_free_evaluates_and_saves_its_averaged_weights(uninterrupted_schedule_free):
    """The final checkpoint holds the eval-mode weights (the average x), not the gradient point y: switching
    the saved optimizer to train mode moves them."""
    from optbench.training.models import build_model
    from optbench.training.optim import build_optimizer, set_mode

    _, _, state = uninterrupted_schedule_free
    assert not any(group["train_mode"] for group in state["optimizer"]["param_groups"])
    model = build_model("resnet18", 10, 8)
    model.load_state_dict(state["model"])
    cfg = config(Path("unused"), *SCHEDULE_FREE)
    optimizer = build_optimizer(model, total_steps=20, **OmegaConf.to_container(cfg.optimizer, resolve=True))
    optimizer.load_state_dict(state["optimizer"])
    saved = [parameter.detach().clone() for parameter in model.parameters()]
    set_mode(optimizer, training=True)
    assert any(not torch.equal(before, parameter) for before, parameter in zip(saved, model.parameters()))


@pytest.mark.slow
def test_the_last_epoch_always_checkpoints_and_checkpoint_every_is_obeyed(tmp_path, monkeypatch):
    saved_epochs = []
    real_save = checkpoint.save
    monkeypatch.setattr(
        checkpoint, "save", lambda path, state: (saved_epochs.append(state["epochs_done"]), real_save(path, state))
    )
    train(config(tmp_path, "epochs=3", "train.checkpoint_every=2"), tmp_path / "run")
    assert saved_epochs == [2, 3]


@pytest.mark.slow
def test_metrics_written_after_the_last_checkpoint_are_trimmed_on_resume(tmp_path, monkeypatch, uninterrupted):
    """Killed after epoch 3's metrics line but before its checkpoint: the resume drops it and redoes epoch 3."""
    reference_summary, reference_metrics, reference_predictions = uninterrupted
    run_dir = tmp_path / "run"
    with monkeypatch.context() as patch:
        interrupt_after(patch, 20)  # the last step of epoch 2: its checkpoint is written, then the run stops
        with pytest.raises(RunInterrupted):
            train(config(tmp_path, "optimizer=lion"), run_dir)
    epoch_two_checkpoint = (run_dir / "checkpoint.pt").read_bytes()
    train(config(tmp_path, "optimizer=lion"), run_dir)
    assert len(read_metrics(run_dir)) == 3
    (run_dir / "checkpoint.pt").write_bytes(epoch_two_checkpoint)
    summary = json.loads((run_dir / "summary.json").read_text())
    (run_dir / "summary.json").write_text(json.dumps({**summary, "status": "running"}))
    resumed = train(config(tmp_path, "optimizer=lion"), run_dir)
    assert without_timings(read_metrics(run_dir)) == without_timings(reference_metrics)
    assert comparable_summary(resumed) == comparable_summary(reference_summary)
    assert kept_predictions(run_dir) == reference_predictions


@pytest.mark.slow
def test_a_one_thread_run_resumed_by_a_two_thread_launcher_keeps_one_thread_and_its_numbers(
    tmp_path, monkeypatch, uninterrupted
):
    """Started with 1 intra-op thread (as a parallel study gives each run), stopped mid-epoch 2, resumed where
    torch's own count is 2 (a run alone on 2 cores): it keeps 1 thread, so it equals the uninterrupted 1-thread
    run bit for bit (with 2 threads the training loss differs in its last digits)."""
    reference_summary, reference_metrics, reference_predictions = uninterrupted
    run_dir = tmp_path / "run"
    with monkeypatch.context() as patch:
        interrupt_after(patch, 17)
        with pytest.raises(RunInterrupted):
            train(config(tmp_path, "optimizer=lion"), run_dir)
    torch.set_num_threads(2)  # the launcher that resumes it: one run at a time, torch's own count
    resumed = train(config(tmp_path, "optimizer=lion"), run_dir)
    assert torch.get_num_threads() == 1 and resumed["device_policy"]["threads"] == 1
    assert "threads=1: kept from the run's start" in (run_dir / "train.log").read_text()
    assert without_timings(read_metrics(run_dir)) == without_timings(reference_metrics)
    assert comparable_summary(resumed) == comparable_summary(reference_summary)
    assert kept_predictions(run_dir) == reference_predictions


@pytest.mark.slow
@pytest.mark.extended
def test_a_thread_count_the_user_sets_on_resuming_wins_and_the_summary_says_so(tmp_path, monkeypatch):
    run_dir = interrupted_run(tmp_path, monkeypatch, steps=3)
    assert json.loads((run_dir / "summary.json").read_text())["environment"]["threads"] == 1
    resumed = train(config(tmp_path, "device_policy.threads=2"), run_dir)
    assert torch.get_num_threads() == 2 and resumed["device_policy"]["threads"] == 2
    assert resumed["environment"]["threads"] == 1  # where it started
    reason = resumed["device_policy"]["reasons"]["threads"]
    assert reason.startswith("set in config") and "it started with 1" in reason and "after epoch 0" in reason


@pytest.mark.slow
def test_a_completed_run_is_not_redone_and_rerun_starts_over(tmp_path):
    run_dir = tmp_path / "run"
    first = train(config(tmp_path, "epochs=1"), run_dir)
    assert train(config(tmp_path, "epochs=1"), run_dir) == first
    again = train(config(tmp_path, "epochs=1", "train.rerun=true"), run_dir)
    assert "resumes" not in again and len(read_metrics(run_dir)) == 1


def interrupted_run(tmp_path, monkeypatch, steps: int = 14):
    """A run stopped by a (simulated) SIGTERM during step `steps`, with its checkpoint on disk."""
    run_dir = tmp_path / "run"
    with monkeypatch.context() as patch:
        interrupt_after(patch, steps)
        with pytest.raises(RunInterrupted):
            train(config(tmp_path), run_dir)
    return run_dir


def test_a_checkpoint_from_other_settings_is_refused_with_the_key_named(tmp_path, monkeypatch):
    run_dir = interrupted_run(tmp_path, monkeypatch, steps=3)
    before = {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}
    with pytest.raises(ConfigError, match=r"optimizer.lr: 0.1 -> 0.05.*train.rerun=true"):
        train(config(tmp_path, "optimizer.lr=0.05"), run_dir)
    after = {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}
    assert {name: data for name, data in after.items() if name != ".lock"} == {
        name: data for name, data in before.items() if name != ".lock"
    }  # nothing overwritten


@pytest.mark.slow
def test_changing_only_where_or_how_fast_it_runs_still_resumes(tmp_path, monkeypatch):
    run_dir = interrupted_run(tmp_path, monkeypatch, steps=3)
    summary = train(config(tmp_path, "train.eval_batch_size=64", "train.checkpoint_every=0"), run_dir)
    assert summary["status"] == "completed" and summary["resumes"] == 1


def test_a_truncated_checkpoint_is_a_clear_error_and_is_left_in_place(tmp_path, monkeypatch):
    run_dir = interrupted_run(tmp_path, monkeypatch)
    checkpoint = run_dir / "checkpoint.pt"
    checkpoint.write_bytes(checkpoint.read_bytes()[:1000])
    before = files_but_the_lock(run_dir)
    with pytest.raises(ConfigError, match=r"checkpoint.pt cannot be read.*delete it.*train.rerun=true"):
        train(config(tmp_path), run_dir)
    assert checkpoint.stat().st_size == 1000
    assert files_but_the_lock(run_dir) == before  # refused before any byte: train.log gained nothing


def files_but_the_lock(run_dir) -> dict:
    return {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file() and path.name != ".lock"}


class Payload:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_a_checkpoint_with_pickled_code_is_refused_not_executed(tmp_path, monkeypatch):
    run_dir = interrupted_run(tmp_path, monkeypatch)
    torch.save({"format": 1, "evil": Payload()}, run_dir / "checkpoint.pt")
    before = files_but_the_lock(run_dir)
    with pytest.raises(ConfigError, match="checkpoint.pt cannot be read"):
        train(config(tmp_path), run_dir)
    assert files_but_the_lock(run_dir) == before


def test_a_damaged_summary_is_a_clear_error_naming_the_file(tmp_path, monkeypatch):
    run_dir = interrupted_run(tmp_path, monkeypatch)
    (run_dir / "summary.json").write_text('{"status": "interr')
    with pytest.raises(ConfigError, match=r"summary.json is damaged.*move it away"):
        train(config(tmp_path), run_dir)
    assert (run_dir / "summary.json").read_text() == '{"status": "interr'


def test_a_second_process_on_the_same_run_directory_is_refused(tmp_path):
    run_dir = tmp_path / "run"
    with RunDir(run_dir).lock():
        with pytest.raises(RunDirectoryBusy, match=rf"pid {os.getpid()} on .*wait for it"):
            train(config(tmp_path), run_dir)


def test_a_lock_held_by_a_killed_process_is_free_again(tmp_path):
    run_dir = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom optbench.rundir import RunDir\n"
            f"with RunDir({str(run_dir)!r}).lock():\n    print('locked', flush=True)\n"
            "    time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(RunDirectoryBusy):
        train(config(tmp_path), run_dir)
    holder.kill()
    holder.wait()
    assert train(config(tmp_path, "epochs=1"), run_dir)["status"] == "completed"


@pytest.mark.parametrize("loss, diverged", [(20.0, False), (30.0, True), (float("nan"), True), (float("inf"), True)])
def test_a_loss_past_the_factor_times_ln_classes_is_a_divergence(tmp_path, loss, diverged):
    where = divergence({"epoch": 4, "train/loss": loss}, -1, 10, 10)  # limit 10 x ln(10) = 23.03
    assert (where is not None) is diverged
    if diverged:
        assert where["epoch"] == 4 and "batch" not in where
        assert ("above 10 x ln(10) = 23" in where["reason"]) is math.isfinite(loss)


def test_a_nan_loss_records_the_epoch_and_the_first_bad_batch(tmp_path):
    summary = train(config(tmp_path, "optimizer=sgd", "optimizer.lr=1e6", "scheduler=constant"), tmp_path / "run")
    where = summary["diverged_at"]
    assert summary["status"] == "diverged" and where["reason"] == "non-finite training loss"
    assert where["epoch"] == 1 and 0 <= where["batch"] < 10


def test_a_failing_run_in_a_multirun_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr("optbench.training.models.CifarResNet.forward", lambda self, images: 1 / 0)
        assert run_job(config(tmp_path), tmp_path / "broken", multirun=True) == 0  # the sweep goes on
    summary = json.loads((tmp_path / "broken" / "summary.json").read_text())
    assert summary["status"] == "failed" and "ZeroDivisionError" in summary["error"]
    assert run_job(config(tmp_path, "epochs=1"), tmp_path / "fine", multirun=True) == 0
    assert json.loads((tmp_path / "fine" / "summary.json").read_text())["status"] == "completed"
    assert deferred_exit_status() == 1
    monkeypatch.setattr("optbench.training.train_command._deferred_exit_status", 0)


def test_a_failing_single_run_raises_and_records_failed(tmp_path, monkeypatch):
    monkeypatch.setattr("optbench.training.models.CifarResNet.forward", lambda self, images: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        run_job(config(tmp_path), tmp_path / "run")
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "failed"


FAULT_RUN = [*RESUME_RUN, "dataset.train_size=1500"]  # 28 steps per epoch: time to land inside one


def command(tmp_path, run_dir):
    return [
        sys.executable,
        "src/train.py",
        *FAULT_RUN,
        f"paths.data_dir={tmp_path / 'data'}",
        f"hydra.run.dir={run_dir}",
    ]


def wait_for_lines(run_dir, count: int, process) -> None:
    metrics = run_dir / "metrics.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"no {count} metric lines; process exit {process.poll()}")


@pytest.mark.slow
@pytest.mark.extended
def test_sigterm_then_sigkill_then_resume_gives_the_uninterrupted_numbers(tmp_path):
    """Fault injection on real processes: a graceful stop, a hard kill mid-epoch, then two resumes."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # as the in-process reference (one_thread)
    run_dir = tmp_path / "run"
    reference = train(compose_config([*FAULT_RUN, f"paths.data_dir={tmp_path / 'data'}"]), tmp_path / "reference")

    process = subprocess.Popen(command(tmp_path, run_dir), cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    wait_for_lines(run_dir, 1, process)
    time.sleep(0.3)  # into epoch 2
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 128 + signal.SIGTERM
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "interrupted"

    process = subprocess.Popen(command(tmp_path, run_dir), cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    wait_for_lines(run_dir, 2, process)
    time.sleep(0.3)  # into epoch 3, or writing epoch 2's files: either way nothing may tear
    process.kill()
    process.wait()

    finished = subprocess.run(command(tmp_path, run_dir), cwd=REPO, env=env, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    assert without_timings(read_metrics(run_dir)) == without_timings(read_metrics(tmp_path / "reference"))
    resumed = json.loads((run_dir / "summary.json").read_text())
    # 2 resumes; 1 when the kill landed between epoch 2's metrics line and its checkpoint
    assert comparable_summary(resumed) == comparable_summary(reference) and resumed["resumes"] in (1, 2)


def test_a_launchers_own_handler_still_gets_the_signal_after_the_checkpoint(tmp_path):
    """submitit requeues on SIGUSR2 with its own handler: it must run, and only after our checkpoint."""
    script = f"""
import os, signal, sys, json
from optbench.training.signals import stop_requests
from pathlib import Path
seen = []
signal.signal(signal.SIGUSR2, lambda signum, frame: seen.append(Path({str(tmp_path)!r}, "ck").exists()))
with stop_requests() as requests:
    os.kill(os.getpid(), signal.SIGUSR2)
    assert requests.signal == signal.SIGUSR2 and seen == []   # held back while training
    Path({str(tmp_path)!r}, "ck").write_text("checkpoint")
print(json.dumps(seen))
"""
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert json.loads(output) == [True]


def test_a_diverged_run_writes_strict_json_with_null_for_the_non_finite_loss(tmp_path):
    train(config(tmp_path, "optimizer=sgd", "optimizer.lr=1e6", "scheduler=constant"), tmp_path / "run")
    reject = lambda token: pytest.fail(f"non-standard JSON token {token}")  # noqa: E731
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(), parse_constant=reject)
    records = [json.loads(line, parse_constant=reject) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert summary["status"] == "diverged" and records[-1]["train/loss"] is None


def test_a_checkpoint_whose_summary_holds_a_torch_version_object_still_loads(tmp_path):
    """Checkpoints written while environment.torch was recorded as torch.__version__ (a TorchVersion, not a str)
    resume: weights-only loading allows that one class."""
    import torch

    from optbench.training import checkpoint

    torch.save({"summary": {"environment": {"torch": torch.__version__}}}, tmp_path / "checkpoint.pt")
    loaded = checkpoint.load(tmp_path / "checkpoint.pt", torch.device("cpu"))
    assert loaded["summary"]["environment"]["torch"] == str(torch.__version__)
