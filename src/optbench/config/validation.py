"""Checks a composed config before any work: every key a run reads, with one line naming the fix.

`validate(cfg)` raises ConfigError (exit status 2 at the entry points). It is the one place that checks
user input and words its messages; the modules that use the values (data/, training/, device/) trust
them. Standard library, OmegaConf, `optbench.registry.choices` and the optimizer registry (its schedule rules)
only, so the checks of a whole sweep, and of a study's plan, run without loading torch. Whether a device
is available and whether the data can be read are known only when a run starts (training/assemble.py);
those errors say so in one line too.
"""

import importlib.util
import math
import os
import re
from typing import NoReturn

from omegaconf import DictConfig, OmegaConf

from optbench.errors import ConfigError
from optbench.fileio import md5_of
from optbench.registry import choices, datasets, optimizers, workloads


def _fail(key: str, value, fix: str) -> NoReturn:
    raise ConfigError(f"{key}={value}: {fix}")


def _whole_number(cfg: DictConfig, key: str, minimum: int, fix: str) -> None:
    value = OmegaConf.select(cfg, key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _fail(key, value, fix)


def _number(cfg: DictConfig, key: str, low: float, high: float, fix: str, *, high_open: bool = False) -> None:
    value = OmegaConf.select(cfg, key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _fail(key, value, fix)  # inf or nan would pass a range check with an open end, and train until it diverges
    if not (low <= value < high if high_open else low <= value <= high):
        _fail(key, value, fix)


def validate(cfg: DictConfig) -> None:
    _whole_number(cfg, "seed", 0, "the seed must be a whole number >= 0, e.g. seed=0")
    _whole_number(cfg, "epochs", 1, "train for at least one epoch, e.g. epochs=200")
    _whole_number(cfg, "batch_size", 1, "use a batch size of at least 1, e.g. batch_size=128")
    if cfg.train.eval_batch_size != "auto":
        _whole_number(
            cfg,
            "train.eval_batch_size",
            1,
            "use auto (the device's) or an evaluation batch size of at least 1, e.g. 256",
        )
    if cfg.train.get("test_every", "epoch") not in choices.TEST_EVERY:
        _fail("train.test_every", cfg.train.test_every, f"choose {' or '.join(choices.TEST_EVERY)}")
    _whole_number(cfg, "train.checkpoint_every", 0, "use 0 (only at the end) or a number of epochs")
    _whole_number(cfg, "model.width", 1, "64 is the standard ResNet-18; 8-16 for CPU tests")
    _number(cfg, "train.mirror_every_s", 0.0, float("inf"), "seconds between checkpoint copies to the mirror, e.g. 600")
    _number(cfg, "train.divergence_factor", 1.0, float("inf"), "a factor > 1 over ln(classes), e.g. 10")
    _whole_number(cfg, "train.grad_accum", 1, "use 1 (no accumulation) or more micro-batches per step, e.g. 2")
    if cfg.batch_size % cfg.train.grad_accum:
        _fail(
            "train.grad_accum",
            cfg.train.grad_accum,
            f"must divide batch_size={cfg.batch_size} into equal micro-batches",
        )
    _validate_switches(cfg)
    _validate_loggers(cfg)
    _validate_mirror(cfg)
    _validate_device(cfg)
    _validate_dataset(cfg)
    _validate_workload(cfg)
    _validate_noise(cfg)
    _validate_optimizer(cfg)
    _validate_scheduler(cfg)


def _validate_switches(cfg: DictConfig) -> None:
    for key in ("train.tensorboard", "train.progress_bar", "train.rerun", "optimizer.decay_norms_and_biases"):
        if OmegaConf.select(cfg, key) not in (True, False, None):
            _fail(key, OmegaConf.select(cfg, key), "use true or false")
    if cfg.model.name not in choices.ARCHITECTURES:
        _fail("model.name", cfg.model.name, "choose " + ", ".join(choices.ARCHITECTURES))


def _validate_loggers(cfg: DictConfig) -> None:
    """Known trackers whose package is installed (found without importing it: mlflow takes a second)."""
    chosen = OmegaConf.select(cfg, "logger") or {}
    for name in chosen:
        if name not in choices.LOGGERS:
            _fail(
                "logger", name, "choose logger=" + ", ".join(choices.LOGGERS) + " or none; several: logger=[mlflow,csv]"
            )
        package = choices.LOGGER_PACKAGES[name]
        if package and importlib.util.find_spec(package) is None:
            _fail("logger", name, f"the {package} package is not installed: pip install -e . (pyproject.toml lists it)")
    mode = OmegaConf.select(cfg, "logger.wandb.mode")
    if "wandb" in chosen and mode not in choices.WANDB_MODES:
        _fail("logger.wandb.mode", mode, "choose offline (nothing leaves the machine), online or disabled")


def _validate_mirror(cfg: DictConfig) -> None:
    mirror = OmegaConf.select(cfg, "paths.mirror_dir")
    if mirror is not None and (not isinstance(mirror, str) or not mirror.strip()):
        _fail("paths.mirror_dir", mirror, "a folder on durable storage (Drive, a shared filesystem), or null for none")
    if mirror and os.path.abspath(mirror) == os.path.abspath(str(cfg.paths.results_dir)):
        _fail("paths.mirror_dir", mirror, "the mirror must be another folder than paths.results_dir")


def _validate_device(cfg: DictConfig) -> None:
    # Availability is checked when the run starts (importing torch here would slow every sweep check).
    if not re.fullmatch(choices.DEVICE_PATTERN, str(cfg.device)):
        _fail("device", cfg.device, f"choose {choices.DEVICE_CHOICES}")
    policy = cfg.device_policy
    unknown = sorted(set(policy) - set(choices.POLICY_KEYS))
    if unknown:
        _fail(
            f"device_policy.{unknown[0]}",
            policy[unknown[0]],
            "not a policy setting: choose " + ", ".join(choices.POLICY_KEYS),
        )
    if policy.amp is not None and policy.amp not in choices.AMP_CHOICES:
        _fail("device_policy.amp", policy.amp, "choose bf16, fp16, off, or null for the device's default")
    if policy.get("mode") is not None and policy.mode not in choices.POLICY_MODES:
        _fail(
            "device_policy.mode",
            policy.mode,
            "choose rules (the device's fixed defaults, as null), or measured "
            "(time the uncertain choices on this machine)",
        )
    if policy.num_workers is not None:
        _whole_number(cfg, "device_policy.num_workers", 0, "use 0 (load in the training process) or more workers")
    if policy.get("threads") is not None:
        _whole_number(cfg, "device_policy.threads", 1, "use 1 or more threads, or null for cores / runs at once")
    for key in choices.POLICY_SWITCHES:
        if policy.get(key) not in (None, True, False):
            _fail(f"device_policy.{key}", policy[key], "use true, false, or null for the device's default")
    if cfg.data.pipeline not in choices.PIPELINES:
        _fail("data.pipeline", cfg.data.pipeline, "choose data.pipeline=device (fast, default) or dataloader (classic)")


def _validate_dataset(cfg: DictConfig) -> None:
    name = cfg.dataset.name
    if datasets.describe(name).kind != datasets.TEXT:  # a text's held-out splits are fixed (data/text.py)
        _whole_number(cfg, "dataset.val_size", 0, "hold out 0 or more images, e.g. dataset.val_size=5000")
        if cfg.dataset.train_subset is not None:
            _whole_number(cfg, "dataset.train_subset", 1, "keep at least one image per class, or null for all")
        _whole_number(cfg, "dataset.split_seed", 0, "a whole number >= 0, e.g. dataset.split_seed=0")
    for key, minimum in (
        ("num_classes", 2),
        ("train_size", 1),
        ("test_size", 1),
        ("image_size", 8),
        ("generator_seed", 0),
    ):
        if OmegaConf.select(cfg, f"dataset.{key}") is not None:
            _whole_number(cfg, f"dataset.{key}", minimum, f"a whole number >= {minimum}")
    if name == "imagefolder" and not cfg.dataset.root:
        _fail("dataset.root", None, "dataset=imagefolder needs dataset.root=DIR holding train/ and test/ class folders")


def _validate_workload(cfg: DictConfig) -> None:
    """The dataset and model are the workload's (workload=char_lm takes tinyshakespeare and gpt), and what does
    not apply to its kind of data is refused in one line: label noise on text, the classic image DataLoader,
    the NHWC layout and the device timings that feed the model images."""
    workload = workloads.of_config(cfg)
    dataset, model = cfg.dataset.name, cfg.model.name
    if not workload.takes(dataset):
        owner = workloads.of_dataset(dataset).name
        fix = f"use workload={owner}" if owner != workload.name else "choose another dataset"
        _fail("dataset", dataset, f"workload={workload.name} takes dataset={', '.join(workload.datasets)}: {fix}")
    if model not in workload.models:
        _fail("model", model, f"workload={workload.name} trains model={', '.join(workload.models)}")
    kind = datasets.describe(dataset).kind
    if kind == datasets.TEXT:
        _validate_text(cfg)
    if kind == datasets.IMAGES:
        return
    if cfg.data.pipeline != "device":
        _fail(
            "data.pipeline",
            cfg.data.pipeline,
            f"the DataLoader pipeline reads images; workload={workload.name} uses data.pipeline=device",
        )
    for key, value in (
        ("device_policy.channels_last", True),
        ("device_policy.mode", "measured"),
        ("device", "fastest"),
    ):
        if OmegaConf.select(cfg, key) == value:
            _fail(key, value, f"it applies to image models only; workload={workload.name} feeds {kind}: leave it unset")


def _validate_text(cfg: DictConfig) -> None:
    for key, minimum in (("dataset.context", 1), ("dataset.steps_per_epoch", 1)):
        _whole_number(cfg, key, minimum, f"a whole number >= {minimum}, e.g. {key}=64")
    if cfg.dataset.get("eval_windows") is not None:
        _whole_number(cfg, "dataset.eval_windows", 1, "a number of windows >= 1, or null for every window")
    if cfg.noise.name != "none":
        _fail(
            "noise",
            cfg.noise.name,
            "label noise applies to classification; a language model's labels are its text: use noise=none",
        )
    if cfg.model.width % cfg.model.heads:
        _fail("model.width", cfg.model.width, f"must be a multiple of model.heads={cfg.model.heads}")


def _validate_noise(cfg: DictConfig) -> None:
    kind = cfg.noise.name
    if kind not in choices.NOISE_KINDS:
        _fail("noise", kind, "choose noise=" + ", ".join(choices.NOISE_KINDS))
    _number(cfg, "noise.rate", 0.0, 1.0, "the noise rate is a fraction in [0, 1), e.g. noise.rate=0.2", high_open=True)
    if kind == "none" and cfg.noise.rate != 0:
        _fail("noise.rate", cfg.noise.rate, "noise=none changes no label: add noise=symmetric or noise=asymmetric")
    validation = OmegaConf.select(cfg, "noise.validation")
    if validation is not None and validation not in choices.NOISE_VALIDATION:
        _fail(
            "noise.validation",
            validation,
            "choose noisy (validation labels get the same noise, the default) or clean (the oracle)",
        )
    if kind == "asymmetric" and cfg.dataset.name not in choices.DATASETS_WITH_ASYMMETRIC_MAPPING:
        _fail("noise", kind, f"dataset {cfg.dataset.name} has no asymmetric class mapping: use noise=symmetric")
    if kind == "human":
        _validate_human_noise(cfg)


def _validate_human_noise(cfg: DictConfig) -> None:
    """A label set the dataset has (a folder: any of the datasets it may be a copy of; its classes are checked
    once it is listed), no rate (the set fixes which labels are wrong) and a label file path or null."""
    if not workloads.of_config(cfg).human_noise:
        _fail(
            "noise",
            "human",
            f"human label sets are CIFAR's: workload={workloads.of_config(cfg).name} "
            "takes noise=symmetric, asymmetric or none",
        )
    label_sets = datasets.human_label_sets(cfg.dataset.name)
    if not label_sets:
        having = [name for name in datasets.NAMES if datasets.human_label_sets(name)]
        _fail("noise", "human", f"dataset {cfg.dataset.name} has no human label sets: use dataset={', '.join(having)}")
    label_set = OmegaConf.select(cfg, "noise.label_set")
    if label_set not in label_sets:
        _fail("noise.label_set", label_set, f"choose one of {', '.join(label_sets)} for dataset={cfg.dataset.name}")
    if cfg.noise.rate != 0:
        _fail(
            "noise.rate",
            cfg.noise.rate,
            "noise=human takes its rate from the label set: leave noise.rate at 0 and choose noise.label_set",
        )
    label_file = OmegaConf.select(cfg, "noise.label_file")
    if label_file is not None and (not isinstance(label_file, str) or not label_file.strip()):
        _fail("noise.label_file", label_file, "the path of a local copy of the label file, or null to fetch it")
    if label_file and not os.path.isfile(os.path.expanduser(label_file)):  # before a study tunes or trains anything
        _fail(
            "noise.label_file",
            label_file,
            "no such file: point it at a copy of the official label file (docs/human-noise.md), or null to fetch it",
        )
    official = label_sets[label_set].human
    assert official is not None  # human_label_sets holds the datasets that have human labels
    if label_file and md5_of(os.path.expanduser(label_file)) != official.md5:  # read it now, not after tuning
        _fail(
            "noise.label_file",
            label_file,
            f"its md5 is not the official {official.file_name}'s {official.md5}: use an unchanged copy of "
            f"{official.url}, or null to fetch it",
        )


def _validate_optimizer(cfg: DictConfig) -> None:
    if not OmegaConf.select(cfg, "optimizer._target_"):
        _fail("optimizer._target_", None, "name the optimizer class, e.g. optimizer=adamw")
    scheme = OmegaConf.select(cfg, "optimizer.param_groups")
    if scheme not in choices.PARAM_GROUP_SCHEMES:
        _fail("optimizer.param_groups", scheme, "choose " + " or ".join(choices.PARAM_GROUP_SCHEMES))
    for key in ("lr", "adamw_lr"):
        if OmegaConf.select(cfg, f"optimizer.{key}") is not None:
            _number(cfg, f"optimizer.{key}", 0.0, float("inf"), "the learning rate must be a positive number")
            if cfg.optimizer[key] <= 0:
                _fail(f"optimizer.{key}", cfg.optimizer[key], "the learning rate must be > 0")
    for key in ("weight_decay", "adamw_wd"):
        if OmegaConf.select(cfg, f"optimizer.{key}") is not None:
            _number(cfg, f"optimizer.{key}", 0.0, float("inf"), "weight decay must be a number >= 0")
    if OmegaConf.select(cfg, "optimizer.momentum") is not None:
        _number(cfg, "optimizer.momentum", 0.0, 1.0, "momentum is a fraction in [0, 1), e.g. 0.9", high_open=True)
    if OmegaConf.select(cfg, "optimizer.eps") is not None:
        _number(cfg, "optimizer.eps", 0.0, 1.0, "eps is a small positive number, e.g. 1e-8")
    for key in ("betas", "adamw_betas"):
        betas = OmegaConf.select(cfg, f"optimizer.{key}")
        if betas is not None and not (len(betas) in (2, 3) and all(_is_fraction(beta) for beta in betas)):
            _fail(
                f"optimizer.{key}",
                list(betas),
                "two fractions in [0, 1), e.g. [0.9,0.999] (AdEMAMix: three, e.g. [0.9,0.999,0.9999])",
            )


def _is_fraction(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1  # false for nan


def _validate_scheduler(cfg: DictConfig) -> None:
    if cfg.scheduler.name not in choices.SCHEDULES:
        _fail("scheduler", cfg.scheduler.name, "choose scheduler=cosine, step or constant")
    _number(cfg, "scheduler.warmup_fraction", 0.0, 1.0, "a fraction of all iterations in [0, 1], e.g. 0.02")
    if OmegaConf.select(cfg, "scheduler.min_lr_ratio") is not None:
        _number(cfg, "scheduler.min_lr_ratio", 0.0, 1.0, "the final LR as a fraction of the peak, in [0, 1]")
    if OmegaConf.select(cfg, "scheduler.gamma") is not None:
        _number(cfg, "scheduler.gamma", 0.0, 1.0, "the LR factor at each milestone, in (0, 1], e.g. 0.1")
    milestones = OmegaConf.select(cfg, "scheduler.milestones")
    if milestones is not None and not all(_is_fraction(point) and point > 0 for point in milestones):
        _fail("scheduler.milestones", list(milestones), "fractions of all iterations in (0, 1), e.g. [0.5,0.75]")
    _validate_schedule_rules(cfg)


def _validate_schedule_rules(cfg: DictConfig) -> None:
    """The registry's schedule rules: an optimizer that brings its own warmup and no decay (Schedule-Free)
    runs under scheduler=constant without the scheduler's warmup."""
    spec = optimizers.spec_of_config(cfg.optimizer)  # an own optimizer's `registry:` facts, else the registry's
    if spec is None:
        return
    name = cfg.scheduler.name
    if not spec.accepts(name):
        _fail(
            "scheduler",
            name,
            f"optimizer={spec.name} accepts scheduler="
            + ", ".join(spec.schedules or ())  # not None: it refused one
            + (" (it warms up itself: optimizer.warmup_fraction)" if spec.own_warmup else ""),
        )
    if spec.own_warmup:
        if cfg.scheduler.warmup_fraction:
            _fail(
                "scheduler.warmup_fraction",
                cfg.scheduler.warmup_fraction,
                f"optimizer={spec.name} warms up itself: use scheduler.warmup_fraction=0 and "
                f"optimizer.warmup_fraction={cfg.scheduler.warmup_fraction}",
            )
        if OmegaConf.select(cfg, "optimizer.warmup_fraction") is not None:
            _number(cfg, "optimizer.warmup_fraction", 0.0, 1.0, "a fraction of all iterations in [0, 1], e.g. 0.02")
