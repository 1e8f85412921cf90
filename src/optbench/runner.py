"""`train(cfg, run_dir)`: one complete run, from a composed config to a finished run directory.

The only function the entry points call (src/train.py, run_single_experiment.py, tests, the
notebook). It validates the config, loads and splits the data, applies label noise, builds model,
optimizer and schedule, then trains, validating and testing every epoch; each epoch appends one
line to metrics.jsonl and rewrites summary.json, so a crash leaves a readable partial record.
Returns the summary dict.

Running the same command again continues the run: a completed (or diverged) run is skipped unless
`train.rerun=true`; an unfinished one resumes from its checkpoint (model, optimizer, scheduler,
scaler, RNG states, even half an epoch), so its numbers equal an uninterrupted run's bit for bit
on the CPU. SIGTERM/SIGINT stop the run at the next step with a checkpoint (RunInterrupted).
"""

import itertools
import logging
import math
import time
from dataclasses import dataclass, is_dataclass
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from optbench import provenance
from optbench.checkpoint import check_resumable, checkpoint_state, restore
from optbench.config import validate
from optbench.data import DatasetSplits, load_splits
from optbench.device import (DevicePolicy, apply_policy, decide_policy, facts_of, out_of_memory_as_error,
                             release_device_memory, resolve_device)
from optbench.engine import EpochProgress, evaluate, noisy_fit, train_epoch
from optbench.errors import ConfigError, RunInterrupted
from optbench.fastest import fastest_device
from optbench.loader import DataLoaderPipeline, DevicePipeline, channel_tensor, eval_batches, num_train_batches
from optbench.models import build_model
from optbench.noise import NoisyLabels, apply_label_noise
from optbench.optim import build_optimizer, build_scheduler
from optbench.rng import seed_everything
from optbench.runlog import RunLog
from optbench.signals import stop_requests

log = logging.getLogger(__name__)


@dataclass
class Run:
    """Everything one run trains with, already on its device."""

    cfg: DictConfig
    device: torch.device
    policy: DevicePolicy
    splits: DatasetSplits          # moved to the device
    noisy: NoisyLabels             # moved to the device
    model: torch.nn.Module         # the module whose state is saved
    step_model: torch.nn.Module    # what trains and evaluates: `model`, or its torch.compile wrapper
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler   # loss scaling under fp16; a pass-through otherwise
    scheduler: torch.optim.lr_scheduler.LRScheduler
    pipeline: DevicePipeline | DataLoaderPipeline  # the training batches of each epoch
    mean: torch.Tensor
    std: torch.Tensor


FINAL_STATUSES = ("completed", "diverged")  # results: the same command skips them


def train(cfg: DictConfig, run_dir: str | Path) -> dict:
    validate(cfg)
    run_log = RunLog(Path(run_dir))
    with run_log.lock():
        previous = None if cfg.train.rerun else run_log.read_summary()
        if previous and previous.get("status") in FINAL_STATUSES:
            log.info("already %s, skipped: %s (train.rerun=true runs it again)", previous["status"], run_dir)
            return previous
        try:
            run = prepare(cfg)
        except ConfigError:
            raise  # bad input: the CLI reports it, nothing is written
        except Exception as error:
            _record_failure(run_log, previous, error)
            raise
        try:
            checkpoint = _resume_point(run, run_log)
            return fit(run, run_log, checkpoint)
        finally:
            release_device_memory(run.device)


def _record_failure(run_log: RunLog, previous: dict | None, error: Exception) -> None:
    """A run that failed before its first epoch still says so in summary.json (for the aggregator)."""
    summary = {"epochs_done": 0, "final": None, "best": None, **(previous or {})}
    summary.update(status="failed", error=f"{type(error).__name__}: {error}")
    run_log.write_summary(summary)


def _resume_point(run: Run, run_log: RunLog) -> dict | None:
    """Load the last checkpoint into `run` and trim metrics.jsonl to it; or start afresh (None)."""
    checkpoint = None if run.cfg.train.rerun else run_log.load_checkpoint(run.device)
    if checkpoint is None:
        run_log.begin()
        return None
    check_resumable(run.cfg, checkpoint, run_log.checkpoint_path)
    checkpoint["progress"] = restore(checkpoint, run.model, run.optimizer, run.scheduler, run.scaler)
    run_log.restore_metrics(checkpoint["metrics"])
    batches_done = checkpoint["progress"].batches_done if checkpoint["progress"] else 0
    log.info("resuming %s after epoch %d%s", run_log.run_dir, checkpoint["epochs_done"],
             f" and {batches_done} batches of the next" if batches_done else "")
    return checkpoint


def choose_device(cfg: DictConfig) -> tuple[torch.device, DevicePolicy]:
    def measure_fastest() -> torch.device:
        # Timed at 10 classes: the head's size barely changes the speed, and the data is not loaded yet.
        return fastest_device(cfg.model.name, cfg.model.width, 10, cfg.batch_size)[0]

    device = resolve_device(cfg.device, fastest=measure_fastest)
    policy = decide_policy(facts_of(device), OmegaConf.to_container(cfg.device_policy), cfg.model.width)
    apply_policy(policy)
    log.info("device %s (device=%s); policy:", device, cfg.device)
    for line in policy.log_lines():
        log.info("  %s", line)
    return device, policy


def prepare(cfg: DictConfig) -> Run:
    device, policy = choose_device(cfg)
    dataset_options = OmegaConf.to_container(cfg.dataset, resolve=True)
    splits = load_splits(data_dir=cfg.paths.data_dir, **dataset_options)
    noisy = apply_label_noise(splits.train.labels, cfg.noise.name, cfg.noise.rate, splits.classes,
                              cfg.noise.seed, splits.name)
    seed_everything(cfg.seed)  # before building the model: its initial weights come from the seed
    model = build_model(cfg.model.name, splits.num_classes, cfg.model.width).to(device, memory_format=policy.memory_format)
    optimizer = build_optimizer(model, **OmegaConf.to_container(cfg.optimizer, resolve=True))
    steps_per_epoch = num_train_batches(len(splits.train), cfg.batch_size)
    scheduler = build_scheduler(optimizer, steps_per_epoch, cfg.epochs, **OmegaConf.to_container(cfg.scheduler))
    step_model = torch.compile(model) if policy.compile else model
    splits_on_device, noisy_on_device = _to_device(splits, device), _to_device(noisy, device)
    mean, std = channel_tensor(splits.mean, device), channel_tensor(splits.std, device)
    pipeline = _pipeline(cfg, policy, device, splits, noisy, splits_on_device, noisy_on_device, mean, std)
    return Run(cfg, device, policy, splits_on_device, noisy_on_device, model, step_model, optimizer,
               policy.grad_scaler_for_run(), scheduler, pipeline, mean, std)


def _pipeline(cfg, policy, device, splits, noisy, splits_on_device, noisy_on_device, mean, std):
    """data.pipeline=device: batches cut from the split on the device. dataloader: the classic DataLoader,
    reading the CPU copy with the policy's workers and pinning (the device copy then serves only the
    noisy-fit evaluation; on a CPU run both are the same tensor)."""
    if cfg.data.pipeline == "device":
        return DevicePipeline(splits_on_device.train.images, noisy_on_device.labels, cfg.batch_size, cfg.seed, mean, std)
    return DataLoaderPipeline(splits.train.images, noisy.labels, cfg.batch_size, cfg.seed, splits.mean, splits.std,
                              device, policy.num_workers, policy.pin_memory, policy.persistent_workers)


def _to_device(value, device: torch.device):
    """Move every tensor field of a (nested) frozen dataclass to `device`, once per run."""
    fields = {}
    for name, field in vars(value).items():
        if isinstance(field, torch.Tensor):
            field = field.to(device)
        elif is_dataclass(field):
            field = _to_device(field, device)
        fields[name] = field
    return type(value)(**fields)


def fit(run: Run, run_log: RunLog, checkpoint: dict | None = None) -> dict:
    """Train the remaining epochs; every exit path leaves summary.json saying how the run ended."""
    cfg = run.cfg
    summary = checkpoint["summary"] if checkpoint else _initial_summary(run)
    records = list(checkpoint["metrics"]) if checkpoint else []
    progress = checkpoint["progress"] if checkpoint else None
    partial_seconds = checkpoint["partial_epoch"]["train_time_s"] if checkpoint and progress else 0.0
    if checkpoint:
        summary["resumes"] = summary.get("resumes", 0) + 1
    summary.update(status="running", error=None)
    run_log.write_summary(summary)
    writer = _tensorboard_writer(run_log.run_dir) if cfg.train.tensorboard else None
    clock = _Clock(summary["wall_time_s"])
    try:
        with stop_requests() as stop:
            for epoch in range(len(records) + 1, cfg.epochs + 1):
                progress, train_seconds = _train_part(run, epoch, progress, stop)
                train_seconds += partial_seconds
                if progress.batches_done < len(run.pipeline):
                    _save(run, run_log, len(records), progress, train_seconds, records, summary, clock)
                    raise RunInterrupted(stop.signal)
                record, first_nonfinite_batch = _finish_epoch(run, epoch, progress, train_seconds)
                progress, partial_seconds = None, 0.0
                records.append(record)
                run_log.append_metrics(record)
                _log_epoch(record, cfg.epochs, writer)
                _update_summary(summary, record, clock)
                if _diverged(summary, record, first_nonfinite_batch, cfg, run.splits.num_classes):
                    break
                if stop.signal or _checkpoint_due(cfg, epoch):
                    _save(run, run_log, epoch, None, 0.0, records, summary, clock)
                if stop.signal:
                    raise RunInterrupted(stop.signal)
                run_log.write_summary(summary)
            else:
                summary["status"] = "completed"
    except (RunInterrupted, KeyboardInterrupt):
        summary["status"] = "interrupted"
        raise
    except Exception as error:
        summary.update(status="failed", error=f"{type(error).__name__}: {error}")
        raise
    finally:
        summary["wall_time_s"] = clock.total()
        run_log.write_summary(summary)
        if writer:
            writer.close()
    return summary


class _Clock:
    """Wall time of a run across sessions: what earlier sessions recorded plus this one's."""

    def __init__(self, earlier_seconds: float):
        self.earlier_seconds, self.started = earlier_seconds, time.perf_counter()

    def total(self) -> float:
        return self.earlier_seconds + time.perf_counter() - self.started


def _checkpoint_due(cfg: DictConfig, epoch: int) -> bool:
    every = cfg.train.checkpoint_every
    return epoch == cfg.epochs or bool(every and epoch % every == 0)


def _save(run: Run, run_log: RunLog, epochs_done: int, progress: EpochProgress | None, partial_seconds: float,
          records: list[dict], summary: dict, clock: _Clock) -> None:
    summary["wall_time_s"] = clock.total()
    run_log.save_checkpoint(checkpoint_state(run.cfg, run.model, run.optimizer, run.scheduler, run.scaler,
                                             epochs_done, progress, partial_seconds, records, summary))


def _diverged(summary: dict, record: dict, first_nonfinite_batch: int, cfg: DictConfig, num_classes: int) -> bool:
    """A non-finite loss, or an epoch loss past `divergence_factor` x ln(classes) (the loss of a uniform guess)."""
    loss, limit = record["train/loss"], cfg.train.divergence_factor * math.log(num_classes)
    if math.isfinite(loss) and loss <= limit:
        return False
    where = {"epoch": record["epoch"], "train/loss": loss,
             "reason": "non-finite training loss" if not math.isfinite(loss) else
             f"training loss above {cfg.train.divergence_factor} x ln({num_classes}) = {limit:.3g}"}
    if first_nonfinite_batch >= 0:
        where["batch"] = first_nonfinite_batch  # counted from 0 within the epoch
    summary.update(status="diverged", diverged_at=where)
    log.warning("diverged at epoch %d: %s (train loss %s)", record["epoch"], where["reason"], loss)
    return True


def _train_part(run: Run, epoch: int, progress: EpochProgress | None, stop) -> tuple[EpochProgress, float]:
    """The epoch's training pass, from where `progress` stopped; ends early when a stop signal came."""
    cfg = run.cfg
    started = time.perf_counter()
    total = len(run.pipeline)
    done = progress.batches_done if progress else 0
    batches = run.pipeline.epoch(epoch)
    # Skipping the batches already trained on replays their random draws, so the rest match exactly.
    batches = tqdm(itertools.islice(batches, done, None), total=total, initial=done, leave=False,
                   desc=f"epoch {epoch}", disable=None if cfg.train.progress_bar else True)
    micro_batch = cfg.batch_size // cfg.train.grad_accum
    with out_of_memory_as_error(run.device, f"training batch_size={cfg.batch_size} in micro-batches of {micro_batch}",
                                _training_memory_fix(cfg)):
        progress = train_epoch(run.step_model, batches, run.optimizer, run.scheduler, run.policy, run.scaler,
                               cfg.train.grad_accum, progress, should_stop=lambda: stop.signal is not None)
    return progress, time.perf_counter() - started


def _finish_epoch(run: Run, epoch: int, progress: EpochProgress, train_seconds: float) -> tuple[dict, int]:
    """The epoch's metric record (training results, then validation, test and noisy-fit evaluation),
    and the first batch whose loss was not finite (-1: none)."""
    cfg, splits = run.cfg, run.splits
    evaluation_start = time.perf_counter()
    trained = progress.result()
    record = {"epoch": epoch, "lr": run.optimizer.param_groups[0]["lr"],
              "train/loss": trained["loss"], "train/acc": trained["acc"],
              "train/images": trained["images"], "train/time_s": train_seconds,
              "train/images_per_s": trained["images"] / train_seconds}
    for split_name in ("val", "test"):
        image_set = getattr(splits, split_name)
        if len(image_set):
            batches = eval_batches(image_set.images, image_set.labels, cfg.train.eval_batch_size, run.mean, run.std)
            with _evaluation_memory_guard(run):
                metrics, _ = evaluate(run.step_model, batches, run.policy)
            record.update({f"{split_name}/{name}": value for name, value in metrics.items()})
    if run.noisy.num_noisy:
        record.update(_noisy_fit_metrics(run))
    record["time_s"] = train_seconds + time.perf_counter() - evaluation_start
    return record, trained["first_nonfinite_batch"]


def _training_memory_fix(cfg: DictConfig) -> str:
    if cfg.batch_size // cfg.train.grad_accum == 1:  # validation makes grad_accum divide the batch
        return "even one image does not fit: use a smaller model.width or another device"
    next_accum = next(accum for accum in range(cfg.train.grad_accum + 1, cfg.batch_size + 1) if cfg.batch_size % accum == 0)
    return (f"try train.grad_accum={next_accum} (same effective batch of {cfg.batch_size}, smaller micro-batches), "
            f"or a smaller batch_size or model.width")


def _evaluation_memory_guard(run: Run):
    size = run.cfg.train.eval_batch_size
    return out_of_memory_as_error(run.device, f"evaluating batches of train.eval_batch_size={size}",
                                  f"try train.eval_batch_size={max(1, size // 4)}")


def _noisy_fit_metrics(run: Run) -> dict:
    """Predict the flipped training images, un-augmented, and compare with noisy and clean labels."""
    index = run.noisy.is_noisy.nonzero().squeeze(1)
    train = run.splits.train
    batches = eval_batches(train.images, run.noisy.labels, run.cfg.train.eval_batch_size, run.mean, run.std, index)
    with _evaluation_memory_guard(run):
        _, predicted = evaluate(run.step_model, batches, run.policy)
    fit = noisy_fit(predicted, run.noisy.labels[index], train.labels[index])
    return {f"noisy/{name}": value for name, value in fit.items()}


def _initial_summary(run: Run) -> dict:
    cfg, splits = run.cfg, run.splits
    return {
        "status": "running", "epochs_done": 0, "epochs_planned": cfg.epochs, "seed": cfg.seed,
        "optimizer": cfg.optimizer.name, "final": None, "best": None, "error": None,
        "dataset": {"name": splits.name, "num_classes": splits.num_classes, "num_train": len(splits.train),
                    "num_val": len(splits.val), "num_test": len(splits.test)},
        "noise": {"kind": cfg.noise.name, "rate": cfg.noise.rate, "realised_rate": run.noisy.realised_rate,
                  "num_noisy": run.noisy.num_noisy},
        "model": {"name": cfg.model.name, "width": cfg.model.width,
                  "num_parameters": sum(p.numel() for p in run.model.parameters())},
        "device": str(run.device), "device_policy": run.policy.as_dict(),
        "versions": provenance.library_versions(), "git": provenance.git_state(),
        "wall_time_s": 0.0, "train_time_s": 0.0, "train_images": 0, "train_images_per_s": None,
    }


def _update_summary(summary: dict, record: dict, clock: _Clock) -> None:
    summary["epochs_done"] = record["epoch"]
    summary["final"] = record
    summary["wall_time_s"] = clock.total()
    summary["train_time_s"] += record["train/time_s"]
    summary["train_images"] += record["train/images"]
    summary["train_images_per_s"] = summary["train_images"] / summary["train_time_s"]
    selection_key = "val/acc" if "val/acc" in record else None
    best = summary["best"]
    if best is None or selection_key is None or record[selection_key] > best[selection_key]:
        summary["best"] = {"selected_by": selection_key or "last epoch (no validation split)", **record}


def _log_epoch(record: dict, epochs: int, writer) -> None:
    parts = [f"epoch {record['epoch']}/{epochs}", f"train loss {record['train/loss']:.4f} acc {record['train/acc']:.4f}"]
    for split_name in ("val", "test"):
        if f"{split_name}/acc" in record:
            parts.append(f"{split_name} loss {record[f'{split_name}/loss']:.4f} acc {record[f'{split_name}/acc']:.4f}")
    if "noisy/fit_noisy_label" in record:
        parts.append(f"noisy fit noisy {record['noisy/fit_noisy_label']:.3f} clean {record['noisy/fit_clean_label']:.3f}")
    parts.append(f"lr {record['lr']:.3g}")
    parts.append(f"{record['time_s']:.1f}s")
    log.info(" | ".join(parts))
    if writer:
        for key, value in record.items():
            if key != "epoch":
                writer.add_scalar(key, value, record["epoch"])


def _tensorboard_writer(run_dir: Path):
    from torch.utils.tensorboard import SummaryWriter  # imported only when asked: tensorboard is slow to import

    return SummaryWriter(str(run_dir / "tensorboard"))
