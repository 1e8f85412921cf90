"""`train(cfg, run_dir)`: one complete run, from a composed config to a finished run directory.

The only function the entry points call (src/train.py, run_single_experiment.py, tests, the
notebook). It validates the config, loads and splits the data, applies label noise, builds model,
optimizer and schedule, then trains, validating and testing every epoch; each epoch appends one
line to metrics.jsonl and rewrites summary.json, so a crash leaves a readable partial record.
Returns the summary dict. A completed run directory is skipped unless `train.rerun=true`.
"""

import logging
import math
import random
import time
from dataclasses import dataclass, is_dataclass
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from optbench import provenance
from optbench.config import validate
from optbench.data import DatasetSplits, load_splits
from optbench.device import (DevicePolicy, apply_policy, decide_policy, facts_of, out_of_memory_as_error,
                             release_device_memory, resolve_device)
from optbench.engine import evaluate, noisy_fit, train_epoch
from optbench.fastest import fastest_device
from optbench.loader import channel_tensor, eval_batches, num_train_batches, train_batches
from optbench.models import build_model
from optbench.noise import NoisyLabels, apply_label_noise
from optbench.optim import build_optimizer, build_scheduler
from optbench.runlog import RunLog

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
    mean: torch.Tensor
    std: torch.Tensor


def train(cfg: DictConfig, run_dir: str | Path) -> dict:
    validate(cfg)
    run_log = RunLog(Path(run_dir))
    previous = run_log.read_summary()
    if previous and previous.get("status") == "completed" and not cfg.train.rerun:
        log.info("already completed, skipped: %s (train.rerun=true runs it again)", run_dir)
        return previous
    run = prepare(cfg)
    try:
        run_log.begin()
        return fit(run, run_log)
    finally:
        release_device_memory(run.device)


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
    seed_everything(cfg.seed)
    model = build_model(cfg.model.name, splits.num_classes, cfg.model.width).to(device, memory_format=policy.memory_format)
    optimizer = build_optimizer(model, **OmegaConf.to_container(cfg.optimizer, resolve=True))
    steps_per_epoch = num_train_batches(len(splits.train), cfg.batch_size)
    scheduler = build_scheduler(optimizer, steps_per_epoch, cfg.epochs, **OmegaConf.to_container(cfg.scheduler))
    step_model = torch.compile(model) if policy.compile else model
    return Run(cfg, device, policy, _to_device(splits, device), _to_device(noisy, device), model, step_model,
               optimizer, policy.grad_scaler_for_run(), scheduler,
               channel_tensor(splits.mean, device), channel_tensor(splits.std, device))


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds CUDA and MPS


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


def fit(run: Run, run_log: RunLog) -> dict:
    cfg = run.cfg
    summary = _initial_summary(run)
    run_log.write_summary(summary)
    writer = _tensorboard_writer(run_log.run_dir) if cfg.train.tensorboard else None
    started = time.perf_counter()
    try:
        for epoch in range(1, cfg.epochs + 1):
            record = run_epoch(run, epoch)
            run_log.append_metrics(record)
            _log_epoch(record, cfg.epochs, writer)
            _update_summary(summary, record, started)
            if not math.isfinite(record["train/loss"]):
                summary.update(status="diverged", diverged_at={"epoch": epoch, "train/loss": record["train/loss"]})
                log.warning("diverged at epoch %d: train loss %s", epoch, record["train/loss"])
                break
            if cfg.train.checkpoint_every and (epoch % cfg.train.checkpoint_every == 0 or epoch == cfg.epochs):
                run_log.save_checkpoint(_checkpoint_state(run, epoch))
            run_log.write_summary(summary)
        else:
            summary["status"] = "completed"
    except KeyboardInterrupt:
        summary["status"] = "interrupted"
        raise
    except Exception as error:
        summary.update(status="failed", error=f"{type(error).__name__}: {error}")
        raise
    finally:
        summary["wall_time_s"] = time.perf_counter() - started
        run_log.write_summary(summary)
        if writer:
            writer.close()
    return summary


def run_epoch(run: Run, epoch: int) -> dict:
    cfg, splits = run.cfg, run.splits
    epoch_start = time.perf_counter()
    batches = train_batches(splits.train.images, run.noisy.labels, cfg.batch_size, cfg.seed, epoch, run.mean, run.std)
    batches = tqdm(batches, total=num_train_batches(len(splits.train), cfg.batch_size), leave=False,
                   desc=f"epoch {epoch}", disable=None if cfg.train.progress_bar else True)
    micro_batch = -(-cfg.batch_size // cfg.train.grad_accum)
    with out_of_memory_as_error(run.device, f"training batch_size={cfg.batch_size} in micro-batches of {micro_batch}",
                                _training_memory_fix(cfg)):
        trained = train_epoch(run.step_model, batches, run.optimizer, run.scheduler, run.policy, run.scaler,
                              cfg.train.grad_accum)
    train_seconds = time.perf_counter() - epoch_start
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
    record["time_s"] = time.perf_counter() - epoch_start
    return record


def _training_memory_fix(cfg: DictConfig) -> str:
    micro_batch = -(-cfg.batch_size // cfg.train.grad_accum)
    if micro_batch == 1:
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


def _update_summary(summary: dict, record: dict, started: float) -> None:
    summary["epochs_done"] = record["epoch"]
    summary["final"] = record
    summary["wall_time_s"] = time.perf_counter() - started
    summary["train_time_s"] += record["train/time_s"]
    summary["train_images"] += record["train/images"]
    summary["train_images_per_s"] = summary["train_images"] / summary["train_time_s"]
    selection_key = "val/acc" if "val/acc" in record else None
    best = summary["best"]
    if best is None or selection_key is None or record[selection_key] > best[selection_key]:
        summary["best"] = {"selected_by": selection_key or "last epoch (no validation split)", **record}


def _checkpoint_state(run: Run, epoch: int) -> dict:
    return {"epoch": epoch, "model": run.model.state_dict(), "optimizer": run.optimizer.state_dict(),
            "scheduler": run.scheduler.state_dict(), "scaler": run.scaler.state_dict()}


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
