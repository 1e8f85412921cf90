"""Optimizer, parameter groups and per-iteration learning-rate schedule, built from config values.

`build_optimizer(model, **optimizer_options)` builds the parameter groups first (timm style: no weight
decay on 1-D parameters, i.e. norms and biases, unless asked), then instantiates the optimizer from
its Hydra `_target_` (`_partial_: true`), so any torch.optim or pytorch-optimizer class works by
overriding `optimizer._target_`. Muon (`param_groups: muon`) gets Muon on the hidden conv/linear
weights and its built-in AdamW on the stem, head, norms and biases, as Muon's authors prescribe.
An optimizer with its own warmup (optbench/registry/optimizers.py: Schedule-Free) gets `optimizer.warmup_fraction`
as its warmup argument in steps of the run. `set_mode(optimizer, training)` switches an optimizer that
has train and eval modes (Schedule-Free evaluates its averaged iterate), and is a no-op for the others.
`build_scheduler(...)` wraps `lr_factor(step, ...)`, a pure function of the iteration.
"""

import math

import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from torch import nn

from optbench.errors import ConfigError
from optbench.registry.optimizers import REGISTRY_KEY, spec_of_config


def build_param_groups(model: nn.Module, scheme: str = "standard", decay_norms_and_biases: bool = False) -> list[dict]:
    no_decay = {} if decay_norms_and_biases else {"weight_decay": 0.0}
    hidden, edge, vectors = [], [], []
    for name, parameter in model.named_parameters():
        if parameter.ndim < 2:
            vectors.append(parameter)
        elif name.startswith(("stem.", "head.")):
            edge.append(parameter)
        else:
            hidden.append(parameter)
    if scheme == "muon":
        groups = [
            dict(params=hidden, use_muon=True),
            dict(params=edge, use_muon=False),
            dict(params=vectors, use_muon=False, **no_decay),
        ]
    else:
        groups = [dict(params=hidden + edge), dict(params=vectors, **no_decay)]
    return [group for group in groups if group["params"]]


def build_optimizer(
    model: nn.Module,
    name: str,
    param_groups: str = "standard",
    decay_norms_and_biases: bool = False,
    total_steps: int = 0,
    **factory_options,
) -> torch.optim.Optimizer:
    """`factory_options` is the optimizer's Hydra node: `_target_`, `_partial_: true` and its kwargs;
    `total_steps`: the run's optimizer steps, which an optimizer's own warmup fraction is a share of."""
    groups = build_param_groups(model, param_groups, decay_norms_and_biases)
    # an own optimizer's registry facts say how the harness treats it; they are no argument of its class
    spec = spec_of_config({"name": name, REGISTRY_KEY: factory_options.pop(REGISTRY_KEY, None)})
    if spec is not None and spec.own_warmup and "warmup_fraction" in factory_options:
        factory_options[spec.own_warmup] = round(factory_options.pop("warmup_fraction") * total_steps)
    try:
        # _convert_=all: plain lists/dicts in param groups, so checkpoints load with weights_only=True
        factory = instantiate(factory_options, _convert_="all")
        return factory(groups)
    except (InstantiationException, TypeError, ValueError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigError(
            f"optimizer '{name}' ({factory_options.get('_target_')}) cannot be built: {first_line}; "
            f"check optimizer._target_ and its arguments"
        ) from error


def has_modes(optimizer: torch.optim.Optimizer) -> bool:
    """Whether it has train and eval modes (duck-typed, so `optimizer._target_=schedulefree.SGDScheduleFree`
    counts too); torch.optim optimizers have neither."""
    return callable(getattr(optimizer, "train", None)) and callable(getattr(optimizer, "eval", None))


def set_mode(optimizer: torch.optim.Optimizer, training: bool) -> None:
    """train() before training steps, eval() before evaluating or saving the evaluated weights, for the
    optimizers that have the two modes; the others are left alone."""
    if has_modes(optimizer):
        getattr(optimizer, "train" if training else "eval")()


def lr_factor(
    step: int,
    total_steps: int,
    warmup_steps: int,
    schedule: str,
    milestones: tuple[float, ...] = (),
    gamma: float = 0.1,
    min_lr_ratio: float = 0.0,
) -> float:
    """Multiplier of the peak learning rate at iteration `step` (0-based)."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps  # linear warmup; the first step already moves
    if schedule == "cosine":
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))
    if schedule == "step":
        # round: 0.07 * 100 is 7.000000000000001 in floating point, and the drop belongs at step 7
        return gamma ** sum(step >= round(fraction * total_steps) for fraction in milestones)
    return 1.0


def build_scheduler(
    optimizer: torch.optim.Optimizer,
    steps_per_epoch: int,
    epochs: int,
    name: str,
    warmup_fraction: float = 0.0,
    milestones=(),
    gamma: float = 0.1,
    min_lr_ratio: float = 0.0,
) -> torch.optim.lr_scheduler.LambdaLR:
    total_steps = steps_per_epoch * epochs
    warmup_steps = round(warmup_fraction * total_steps)
    milestones = tuple(milestones)

    def factor(step: int) -> float:
        return lr_factor(step, total_steps, warmup_steps, name, milestones, gamma, min_lr_ratio)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
