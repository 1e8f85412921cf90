"""The epoch loop: train, evaluate, record, checkpoint; stop on a signal or on divergence.

`fit(run, run_dir, state)` trains the epochs left after `state` (a fresh LoopState, or one rebuilt from
a checkpoint) and returns the final summary. Every exit path leaves summary.json saying how the run
ended: completed, diverged (a result), interrupted (a stop signal; a checkpoint was written first, so
the same command resumes it, mid-epoch included) or failed (the error recorded). A mirror, when given,
copies the directory out after each epoch (training/mirror.py; train() copies the rest at the end).
The experiment trackers of conf/logger/ (training/trackers.py) get each epoch and the ending; they never fail a run.
The selected epoch's test predictions are kept from its test pass and written to predictions.npz at
each checkpoint and at the end (the checkpoint holds them too, so a resumed run writes the same file).
Optimizers with train and eval modes (Schedule-Free) are evaluated, and checkpointed at the end of an
epoch, in eval mode: the weights recorded are the weights evaluated. A LoopState adds the session's start-up
(`StartUp`: from the process's start, or its previous run's end, to the loop) to summary.json's `startup_s`,
which the wall time leaves out, and to `process_startup_s` where it counted from the process's start.
"""

import itertools
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from optbench.device.policy import out_of_memory_as_error, synchronise
from optbench.errors import RunInterrupted
from optbench.formats import metrics_log, predictions, run_summary
from optbench.formats.metrics_log import TRAIN_LOSS
from optbench.rundir import RunDir
from optbench.training import checkpoint, console
from optbench.training.epoch_record import epoch_record
from optbench.training.optim import set_mode
from optbench.training.progress import divergence
from optbench.training.signals import stop_requests
from optbench.training.steps import EpochProgress, train_epoch
from optbench.training.trackers import open_trackers

log = logging.getLogger(__name__)


def process_started() -> float | None:
    """When this process started (seconds since the epoch): Linux's /proc, else psutil where installed; None where
    neither can say (the run then records no start-up time)."""
    try:
        after_name = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - uptime + int(after_name[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start, in ticks
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil
    except ImportError:
        return None
    try:
        return float(psutil.Process().create_time())
    except psutil.Error:
        return None


class StartUp:
    """What a run spent before its first step: the interpreter, imports, Hydra, the data and the model. A process's
    first run counts from the process's start, each later run of a multirun from the end of the run before it."""

    previous_run_ended: float | None = None

    @classmethod
    def seconds(cls) -> float | None:
        origin = cls.previous_run_ended if cls.previous_run_ended is not None else process_started()
        return None if origin is None else max(0.0, time.time() - origin)

    @classmethod
    def run_ended(cls) -> None:
        cls.previous_run_ended = time.time()


class Clock:
    """Wall time of a run across sessions: what earlier sessions recorded plus this one's."""

    def __init__(self, earlier_seconds: float):
        self.earlier_seconds, self.started = earlier_seconds, time.perf_counter()

    def total(self) -> float:
        return self.earlier_seconds + time.perf_counter() - self.started


@dataclass
class LoopState:
    """Where a run stands between steps: what the loop carries and what a checkpoint saves."""

    summary: dict
    records: list[dict] = field(default_factory=list)  # one metric record per finished epoch
    progress: EpochProgress | None = None  # the epoch stopped half-way, if any
    partial_seconds: float = 0.0  # training time already spent on that epoch
    clock: Clock = field(init=False)  # started from the summary's wall time
    selected_predictions: tuple | None = None  # (epoch, predicted test classes) of the summary's best epoch

    def __post_init__(self) -> None:
        self.clock = Clock(run_summary.wall_time(self.summary))
        run_summary.add_startup(self.summary, StartUp.seconds(), from_process=StartUp.previous_run_ended is None)

    @classmethod
    def from_checkpoint(cls, saved: dict, progress: EpochProgress | None) -> "LoopState":
        summary = saved["summary"]
        run_summary.resumed(summary)
        partial_seconds = saved["partial_epoch"]["train_time_s"] if progress else 0.0
        kept = saved.get("selected_predictions")  # absent from checkpoints written before predictions.npz
        return cls(
            summary,
            list(saved["metrics"]),
            progress,
            partial_seconds,
            selected_predictions=(kept["epoch"], kept["predicted"]) if kept else None,
        )


def fit(run, run_dir: RunDir, state: LoopState, run_mirror=None, last_epoch: int | None = None) -> dict:
    """`run_mirror`: a training/mirror.py Mirror copying the run directory out, or None. `last_epoch`: stop
    after this epoch (a replay of the first epochs), the schedule still the full run's; the run is then left
    interrupted, as a stop signal leaves it."""
    cfg, summary = run.cfg, state.summary
    last = cfg.epochs if last_epoch is None else min(last_epoch, cfg.epochs)
    run_summary.mark(summary, run_summary.RUNNING)
    if run_mirror:
        run_mirror.attach(summary)
    run_summary.write(run_dir.path, summary)
    trackers = open_trackers(cfg, run_dir, run.run_id, state.records)  # conf/logger/: each fails alone
    try:
        with stop_requests() as stop:
            for epoch in range(len(state.records) + 1, last + 1):
                diverged = _run_epoch(run, run_dir, state, epoch, stop, trackers)
                if run_mirror:
                    run_mirror.after_epoch(epoch, summary)
                if diverged:
                    break
            else:
                run_summary.mark(summary, run_summary.COMPLETED if last == cfg.epochs else run_summary.INTERRUPTED)
    except (RunInterrupted, KeyboardInterrupt):
        run_summary.mark(summary, run_summary.INTERRUPTED)
        raise
    except Exception as error:
        run_summary.mark(summary, run_summary.FAILED, error)
        raise
    finally:
        run_summary.set_wall_time(summary, state.clock.total())
        _write_predictions(run, run_dir, state)
        run_summary.write(run_dir.path, summary)
        trackers.finish(summary["status"], summary)
    return summary


def _run_epoch(run, run_dir: RunDir, state: LoopState, epoch: int, stop, trackers) -> bool:
    """One epoch; True when the run diverged. A stop signal raises RunInterrupted after a checkpoint."""
    cfg, summary = run.cfg, state.summary
    progress, seconds = _train_part(run, epoch, state.progress, stop)
    state.progress, state.partial_seconds = progress, state.partial_seconds + seconds
    if progress.batches_done < len(run.pipeline):  # stopped mid-epoch
        _save(run, run_dir, state)
        raise RunInterrupted(stop.signal)
    # Evaluate, and checkpoint below, the weights the optimizer reports (Schedule-Free: its averaged iterate);
    # the next epoch's train_epoch switches back. A mid-epoch checkpoint above keeps the training mode.
    set_mode(run.optimizer, training=False)
    record, first_nonfinite_batch, test_predicted = epoch_record(
        run, epoch, progress, state.partial_seconds, run_summary.best_so_far(summary)
    )
    state.progress, state.partial_seconds = None, 0.0
    state.records.append(record)
    metrics_log.append(run_dir.path, record)
    console.log_epoch(record, cfg.epochs)
    trackers.log_epoch(record)
    run_summary.after_epoch(summary, record, state.clock.total())
    if (
        test_predicted is not None and run_summary.selected_epoch(summary) == epoch
    ):  # this epoch is now the selected one
        state.selected_predictions = (epoch, test_predicted)
    diverged_at = divergence(record, first_nonfinite_batch, cfg.train.divergence_factor, run.splits.num_classes)
    if diverged_at:
        run_summary.diverged(summary, diverged_at)
        log.warning("diverged at epoch %d: %s (train loss %s)", epoch, diverged_at["reason"], record[TRAIN_LOSS])
        return True
    if stop.signal or _checkpoint_due(cfg, epoch):
        _save(run, run_dir, state)
    if stop.signal:
        raise RunInterrupted(stop.signal)
    run_summary.write(run_dir.path, summary)
    return False


def _checkpoint_due(cfg, epoch: int) -> bool:
    every = cfg.train.checkpoint_every
    return epoch == cfg.epochs or bool(every and epoch % every == 0)


def _save(run, run_dir: RunDir, state: LoopState) -> None:
    run_summary.set_wall_time(state.summary, state.clock.total())
    checkpoint.save(run_dir.checkpoint_path, checkpoint.checkpoint_state(run, state))
    _write_predictions(run, run_dir, state)


def _write_predictions(run, run_dir: RunDir, state: LoopState) -> None:
    if state.selected_predictions is not None:
        epoch, predicted = state.selected_predictions
        predictions.write(
            run_dir.predictions_path,
            predicted.cpu().numpy(),
            run.splits.test.labels.reshape(-1).cpu().numpy(),  # a language model: one per position
            epoch,
            run.splits.num_classes,
        )


def _train_part(run, epoch: int, progress: EpochProgress | None, stop) -> tuple[EpochProgress, float]:
    """The epoch's training pass, from where `progress` stopped; ends early when a stop signal came."""
    cfg = run.cfg
    started = time.perf_counter()
    total = len(run.pipeline)
    done = progress.batches_done if progress else 0
    # Skipping the batches already trained on replays their random draws, so the rest match exactly.
    batches = tqdm(
        itertools.islice(run.pipeline.epoch(epoch), done, None),
        total=total,
        initial=done,
        leave=False,
        desc=f"epoch {epoch}",
        disable=None if cfg.train.progress_bar else True,
    )
    micro_batch = cfg.batch_size // cfg.train.grad_accum
    with out_of_memory_as_error(
        run.device, f"training batch_size={cfg.batch_size} in micro-batches of {micro_batch}", _training_memory_fix(cfg)
    ):
        progress = train_epoch(
            run.step_model,
            batches,
            run.optimizer,
            run.scheduler,
            run.policy,
            run.scaler,
            cfg.train.grad_accum,
            progress,
            should_stop=lambda: stop.signal is not None,
        )
    synchronise(run.device)  # on CUDA the last steps may still be running: the clock stops when they have
    return progress, time.perf_counter() - started


def _training_memory_fix(cfg) -> str:
    if cfg.batch_size // cfg.train.grad_accum == 1:  # validation makes grad_accum divide the batch
        return "even one image does not fit: use a smaller model.width or another device"
    next_accum = next(
        accum for accum in range(cfg.train.grad_accum + 1, cfg.batch_size + 1) if cfg.batch_size % accum == 0
    )
    return (
        f"try train.grad_accum={next_accum} (same effective batch of {cfg.batch_size}, smaller micro-batches), "
        f"or a smaller batch_size or model.width"
    )
