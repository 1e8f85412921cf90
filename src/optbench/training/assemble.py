"""Assemble a run: everything it trains with, built from a composed config and already on its device.

`prepare(cfg, run_id)` resolves the device, loads and splits the data, decides the device policy (by
the device's rules, or under device_policy.mode=measured by timing the run's model shape, which needs the
class count and the number of training images), draws the label
noise (training labels, and validation labels under `noise.validation: noisy`), seeds the RNGs, builds
model, optimizer, schedule and the batch pipeline, and returns a `Run`. It reads no run directory and
writes nothing there: a ConfigError here (missing data, an image that cannot be decoded) leaves the
directory as it was.
"""

import logging
from dataclasses import dataclass, is_dataclass, replace

import torch
from omegaconf import DictConfig, OmegaConf

from optbench.config.plain import plain_dict
from optbench.data.human_labels import HumanNoise, human_noise
from optbench.data.noise import NoisyLabels, apply_label_noise
from optbench.data.pipelines import DataLoaderPipeline, DevicePipeline, WindowPipeline, channel_tensor
from optbench.data.splits import DatasetSplits, load_splits
from optbench.device.fastest import fastest_device
from optbench.device.measured import measured_policy
from optbench.device.policy import DevicePolicy, apply_policy, decide_policy, facts_of, resolve_device
from optbench.device.sharing import concurrent_runs
from optbench.registry import datasets, workloads
from optbench.training.console import log_policy
from optbench.training.models import build_model
from optbench.training.optim import build_optimizer, build_scheduler
from optbench.training.rng import seed_everything
from optbench.training.timing import timed_model

log = logging.getLogger(__name__)


@dataclass
class Run:
    """Everything one run trains with, already on its device."""

    cfg: DictConfig
    run_id: str  # the identity hash of record.json
    device: torch.device
    policy: DevicePolicy
    splits: DatasetSplits  # moved to the device
    noisy: NoisyLabels  # training labels, moved to the device
    noisy_val_labels: torch.Tensor | None  # validation labels under the noisy protocol; None: the clean ones
    model: torch.nn.Module  # the module whose state is saved
    step_model: torch.nn.Module  # what trains and evaluates: `model`, or its torch.compile wrapper
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler  # loss scaling under fp16; a pass-through otherwise
    scheduler: torch.optim.lr_scheduler.LRScheduler
    pipeline: DevicePipeline | DataLoaderPipeline | WindowPipeline  # the training batches of each epoch
    mean: torch.Tensor
    std: torch.Tensor
    human: HumanNoise | None = None  # noise=human: the label set put on the images (summary.json records it)


def choose_device(cfg: DictConfig) -> torch.device:
    def measure_fastest() -> torch.device:
        # The data is not loaded yet: the descriptor's classes and image shape (10 classes for a folder of
        # images; the head's size barely changes the speed).
        channels, image_size, _ = datasets.image_shape(cfg.dataset)
        classes = datasets.num_classes(cfg.dataset) or 10
        return fastest_device(
            timed_model(cfg.model.name, cfg.model.width, classes, cfg.batch_size, channels, image_size)
        )[0]

    return resolve_device(cfg.device, fastest=measure_fastest)


def choose_policy(
    cfg: DictConfig, device: torch.device, splits: DatasetSplits, started_policy: dict | None = None
) -> DevicePolicy:
    """The device's policy by its rules, or with its uncertain settings timed (device_policy.mode=measured);
    applied and logged. `started_policy`: the policy a resumed run recorded, whose measurements, precision
    and thread count it keeps."""
    overrides = plain_dict(cfg.device_policy)
    mode = overrides.pop("mode", None) or "rules"
    facts = facts_of(device, concurrent_runs()[0])
    if mode == "measured":
        channels, image_size = splits.train.images.shape[1], splits.train.images.shape[-1]
        model = timed_model(cfg.model.name, cfg.model.width, splits.num_classes, cfg.batch_size, channels, image_size)
        earlier = (started_policy or {}).get("measured") if (started_policy or {}).get("mode") == "measured" else None
        policy = measured_policy(device, facts, overrides, model, cfg.epochs * len(splits.train), earlier)
    else:
        rules = workload_policy_rules(cfg)
        policy = keep_started_precision(
            decide_policy(facts, overrides, cfg.model.width, workload_rules=rules),
            facts,
            overrides,
            cfg.model.width,
            started_policy,
            rules,
        )
    policy = keep_started_threads(policy, overrides, started_policy)
    apply_policy(policy)
    log_policy(device, cfg.device, policy)
    return policy


def compiled(model: torch.nn.Module) -> torch.nn.Module:
    """torch.compile's wrapper of `model`: a module itself (torch's stubs type it as any callable)."""
    wrapper = torch.compile(model)
    if not isinstance(wrapper, torch.nn.Module):
        raise TypeError(f"torch.compile returned a {type(wrapper).__name__}, not a module")
    return wrapper


def workload_policy_rules(cfg: DictConfig) -> dict:
    """What a workload of sequences or text changes in the device's rules: no NHWC memory format (images only)
    and no torch.compile unless set (measured to pay back on the CPU ResNet only)."""
    kind = datasets.describe(cfg.dataset.name).kind
    if kind == datasets.IMAGES:
        return {}
    why = f"workload {workloads.of_config(cfg).name} feeds {kind}, not images"
    return {
        "channels_last": (False, f"{why}: NHWC is an image layout"),
        "compile": (False, f"{why}: torch.compile was measured to pay back on the CPU ResNet only"),
    }


def keep_started_precision(
    policy: DevicePolicy, facts, overrides: dict, width: int, started_policy: dict | None, rules: dict | None = None
) -> DevicePolicy:
    """A resumed run keeps the AMP it started with on the same kind of device, unless the user sets one:
    a default that changed between releases (the CPU's bf16 rule) must not switch precision half-way."""
    started_amp = (started_policy or {}).get("amp")
    same_kind = str((started_policy or {}).get("device", "")).split(":")[0] == policy.device_type
    if overrides.get("amp") is not None or not same_kind or started_amp in (None, policy.amp):
        return policy
    kept = decide_policy(facts, {**overrides, "amp": started_amp}, width, workload_rules=rules)
    kept.reasons["amp"] = (
        f"kept from the run's start (the rules now say {policy.amp}): a resumed run does not change precision half-way"
    )
    return kept


def keep_started_threads(policy: DevicePolicy, overrides: dict, started_policy: dict | None) -> DevicePolicy:
    """A resumed run keeps the intra-op thread count it started with on the same kind of device, whatever
    launcher resumes it (a parallel study gives each run 1 thread, a run alone gets the cores): the count
    changes the numbers, and a resumed run must equal an uninterrupted one. A device_policy.threads the
    user sets wins (training/run.py then notes the change in the summary)."""
    started = (started_policy or {}).get("threads")
    same_kind = str((started_policy or {}).get("device", "")).split(":")[0] == policy.device_type
    if not started or overrides.get("threads") is not None or not same_kind or started == policy.threads:
        return policy
    reason = (
        f"kept from the run's start (here the rule says {policy.threads}: {policy.reasons.get('threads', '')}): "
        "a resumed run keeps its thread count, which changes the numbers"
    )
    return replace(policy, threads=int(started), reasons={**policy.reasons, "threads": reason})


def prepare(cfg: DictConfig, run_id: str = "", started_policy: dict | None = None) -> Run:
    """`started_policy`: the device policy a resumed run recorded (its summary's), or None for a new run."""
    device = choose_device(cfg)
    splits = load_splits(data_dir=cfg.paths.data_dir, **plain_dict(cfg.dataset, resolve=True))
    policy = choose_policy(cfg, device, splits, started_policy)  # before seeding: timing draws random weights
    noisy, noisy_val_labels, human = draw_label_noise(cfg, splits)
    seed_everything(cfg.seed)  # before building the model: its initial weights come from the seed
    model = build_model(cfg.model.name, splits.num_classes, **model_options(cfg))
    # Module.to takes a device and a memory format together, an overload torch's stubs do not list
    model = model.to(device, memory_format=policy.memory_format)  # type: ignore[call-overload]
    splits_on_device, noisy_on_device = to_device(splits, device), to_device(noisy, device)
    noisy_val_labels = None if noisy_val_labels is None else noisy_val_labels.to(device)
    dims = splits.val.images.dim() if len(splits.val) else splits.train.images.dim()
    mean, std = channel_tensor(splits.mean, device, dims), channel_tensor(splits.std, device, dims)
    pipeline = training_pipeline(cfg, splits, splits_on_device, noisy, noisy_on_device, mean, std, device, policy)
    steps_per_epoch = len(pipeline)
    optimizer = build_optimizer(
        model, total_steps=steps_per_epoch * cfg.epochs, **plain_dict(cfg.optimizer, resolve=True)
    )
    scheduler = build_scheduler(optimizer, steps_per_epoch, cfg.epochs, **plain_dict(cfg.scheduler))
    step_model = compiled(model) if policy.compile else model
    return Run(
        cfg,
        run_id,
        device,
        policy,
        splits_on_device,
        noisy_on_device,
        noisy_val_labels,
        model,
        step_model,
        optimizer,
        policy.grad_scaler_for_run(),
        scheduler,
        pipeline,
        mean,
        std,
        human,
    )


def model_options(cfg: DictConfig) -> dict:
    """The model's config keys besides its name; a language model's context is its dataset's window."""
    options = plain_dict(cfg.model, resolve=True)
    options.pop("name")
    if datasets.describe(cfg.dataset.name).kind == datasets.TEXT:
        options["context"] = int(cfg.dataset.context)
    return options


def training_pipeline(cfg, splits, splits_on_device, noisy, noisy_on_device, mean, std, device, policy):
    """The batches each epoch trains on: random windows of a text, or the (augmented, for images) examples
    on the device, or the classic DataLoader (images only) reading the CPU copy with the policy's workers."""
    kind = datasets.describe(cfg.dataset.name).kind
    if kind == datasets.TEXT:
        train = splits_on_device.train
        return WindowPipeline(
            train.images,
            train.labels,
            cfg.batch_size,
            cfg.seed,
            int(cfg.dataset.context),
            int(cfg.dataset.steps_per_epoch),
        )
    if cfg.data.pipeline == "device":
        return DevicePipeline(
            splits_on_device.train.images,
            noisy_on_device.labels,
            cfg.batch_size,
            cfg.seed,
            mean,
            std,
            augment=kind == datasets.IMAGES,
        )
    return DataLoaderPipeline(
        splits.train.images,
        noisy.labels,
        cfg.batch_size,
        cfg.seed,
        splits.mean,
        splits.std,
        device,
        policy.num_workers,
        policy.pin_memory,
        policy.persistent_workers,
    )


def draw_label_noise(
    cfg: DictConfig, splits: DatasetSplits
) -> tuple[NoisyLabels, torch.Tensor | None, HumanNoise | None]:
    """(training labels, validation labels under the noisy protocol or None, the human label set or None)."""
    if cfg.noise.name == "human":
        human = human_noise(
            splits,
            cfg.noise.label_set,
            cfg.paths.data_dir,
            OmegaConf.select(cfg, "dataset.root"),
            cfg.noise.get("label_file"),
            bool(cfg.dataset.get("download", True)),
        )
        validation = (
            None if cfg.noise.get("validation", "noisy") == "clean" or not len(splits.val) else human.val_labels
        )
        return human.train, validation, human
    noisy = apply_label_noise(
        splits.train.labels, cfg.noise.name, cfg.noise.rate, splits.classes, cfg.noise.seed, splits.name
    )
    return noisy, noisy_validation_labels(cfg, splits), None


def noisy_validation_labels(cfg: DictConfig, splits: DatasetSplits) -> torch.Tensor | None:
    """Under label noise with noise.validation=noisy (default), the validation split's labels get the same
    noise process as training, drawn independently: what a practitioner selects on. None otherwise (the
    clean labels are used)."""
    if (
        cfg.noise.name == "none"
        or not cfg.noise.rate
        or cfg.noise.get("validation", "noisy") == "clean"
        or not len(splits.val)
    ):
        return None
    # Another dataset tag gives an independent draw from the same seed, kind, rate and mapping.
    return apply_label_noise(
        splits.val.labels, cfg.noise.name, cfg.noise.rate, splits.classes, cfg.noise.seed, f"{splits.name}/validation"
    ).labels


def to_device(value, device: torch.device):
    """Move every tensor field of a (nested) frozen dataclass to `device`, once per run."""
    fields = {}
    for name, field in vars(value).items():
        if isinstance(field, torch.Tensor):
            field = field.to(device)
        elif is_dataclass(field):
            field = to_device(field, device)
        fields[name] = field
    return type(value)(**fields)
