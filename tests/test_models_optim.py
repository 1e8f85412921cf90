"""ResNet-18 shape, parameter groups, optimizer-specific settings, `_target_` overrides, and the LR schedule.

The tests every registered optimizer gets are in tests/test_optimizers.py."""

from pathlib import Path

import pytest
import pytorch_optimizer
import torch
from omegaconf import OmegaConf
from torch import nn

from optbench.errors import ConfigError
from optbench.training.models import build_model
from optbench.training.optim import build_optimizer, build_param_groups, build_scheduler, lr_factor

pytestmark = pytest.mark.usefixtures("one_thread")
CONF = Path(__file__).resolve().parents[1] / "conf"


def optimizer_config(name: str) -> dict:
    return OmegaConf.to_container(OmegaConf.load(CONF / "optimizer" / f"{name}.yaml"), resolve=True)


def small_model(width: int = 4, num_classes: int = 10) -> nn.Module:
    torch.manual_seed(0)
    return build_model("resnet18", num_classes, width)


def ids(parameters) -> list[int]:
    return sorted(id(parameter) for parameter in parameters)


# --- model -----------------------------------------------------------------------------------------


def test_resnet18_width_64_has_the_standard_parameter_count():
    model = build_model("resnet18", 10, 64)
    assert sum(parameter.numel() for parameter in model.parameters()) == 11_173_962


def test_stem_is_a_3x3_stride_1_conv_without_max_pool():
    model = small_model(width=8)
    stem_conv = model.stem[0]
    assert isinstance(stem_conv, nn.Conv2d)
    assert stem_conv.kernel_size == (3, 3) and stem_conv.stride == (1, 1) and stem_conv.padding == (1, 1)
    assert not any(isinstance(module, nn.MaxPool2d) for module in model.modules())
    # Only the three stride-2 stages downsample: 32 -> 4 at the last stage, 8 * width channels.
    features = model.stages(model.stem(torch.zeros(2, 3, 32, 32)))
    assert features.shape == (2, 64, 4, 4)


def test_output_has_one_logit_per_class():
    model = small_model(width=8, num_classes=7)
    assert model(torch.randn(3, 3, 32, 32)).shape == (3, 7)


# --- parameter groups ------------------------------------------------------------------------------


def test_standard_groups_exempt_exactly_the_1d_parameters_from_weight_decay():
    model = small_model()
    groups = build_param_groups(model, "standard")
    assert len(groups) == 2
    decayed, exempt = groups
    assert "weight_decay" not in decayed and exempt["weight_decay"] == 0.0
    assert ids(exempt["params"]) == ids(p for p in model.parameters() if p.ndim < 2)
    assert ids(decayed["params"]) == ids(p for p in model.parameters() if p.ndim >= 2)


def test_decay_norms_and_biases_leaves_weight_decay_to_the_optimizer():
    groups = build_param_groups(small_model(), "standard", decay_norms_and_biases=True)
    assert all("weight_decay" not in group for group in groups)


def test_muon_groups_put_only_hidden_matrices_in_the_muon_group():
    model = small_model()
    named = dict(model.named_parameters())
    groups = build_param_groups(model, "muon")
    muon = [group for group in groups if group["use_muon"]]
    assert len(muon) == 1
    hidden = [p for name, p in named.items() if p.ndim >= 2 and not name.startswith(("stem.", "head."))]
    assert ids(muon[0]["params"]) == ids(hidden)
    others = [p for group in groups if not group["use_muon"] for p in group["params"]]
    edge_and_vectors = [p for name, p in named.items() if p.ndim < 2 or name.startswith(("stem.", "head."))]
    assert ids(others) == ids(edge_and_vectors)
    assert ids([named["stem.0.weight"], named["head.weight"]]) == ids(p for p in others if p.ndim >= 2)
    # The 1-D group alone is exempt from weight decay.
    assert [group.get("weight_decay") for group in groups if not group["use_muon"]] == [None, 0.0]


@pytest.mark.parametrize("scheme", ["standard", "muon"])
def test_every_parameter_is_in_exactly_one_group(scheme):
    model = small_model()
    grouped = [p for group in build_param_groups(model, scheme) for p in group["params"]]
    assert len(grouped) == len(set(map(id, grouped)))
    assert ids(grouped) == ids(model.parameters())


# --- optimizers from the config files --------------------------------------------------------------

# Every registered optimizer builds, lowers the loss and round-trips its state: tests/test_optimizers.py.


def test_sgd_config_uses_nesterov_momentum():
    optimizer = build_optimizer(small_model(), **optimizer_config("sgd"))
    assert all(group["nesterov"] and group["momentum"] == 0.9 for group in optimizer.param_groups)


def test_muon_config_gives_the_adamw_groups_their_own_lr_and_decay():
    config = optimizer_config("muon")
    optimizer = build_optimizer(small_model(), **config)
    muon = [group for group in optimizer.param_groups if group["use_muon"]]
    adamw = [group for group in optimizer.param_groups if not group["use_muon"]]
    assert [group["lr"] for group in muon] == [config["lr"]]
    assert all(group["lr"] == config["adamw_lr"] for group in adamw)
    assert sorted(group["weight_decay"] for group in adamw) == [0.0, config["adamw_wd"]]


def test_lion_lr_is_3_to_10x_below_adamw_and_weight_decay_3_to_10x_above():
    lion, adamw = optimizer_config("lion"), optimizer_config("adamw")
    assert 3 <= adamw["lr"] / lion["lr"] <= 10
    assert 3 <= lion["weight_decay"] / adamw["weight_decay"] <= 10


@pytest.mark.parametrize(
    "target, options, expected",
    [
        ("torch.optim.RAdam", {"lr": 1e-3, "weight_decay": 1e-4}, torch.optim.RAdam),
        ("pytorch_optimizer.AdaBelief", {"lr": 1e-3, "weight_decay": 1e-4}, pytorch_optimizer.AdaBelief),
    ],
)
def test_overriding_target_builds_another_optimizer_class(target, options, expected):
    optimizer = build_optimizer(small_model(), name="other", _target_=target, _partial_=True, **options)
    assert type(optimizer) is expected
    assert all(group["lr"] == options["lr"] for group in optimizer.param_groups)
    assert [group["weight_decay"] for group in optimizer.param_groups] == [options["weight_decay"], 0.0]


@pytest.mark.parametrize(
    "target, options",
    [
        ("torch.optim.NoSuchOptimizer", {"lr": 0.1}),
        ("torch.optim.SGD", {"lr": 0.1, "no_such_argument": 1}),
        ("torch.optim.SGD", {"lr": -1.0}),
    ],
)
def test_bad_target_or_arguments_raise_config_error(target, options):
    with pytest.raises(ConfigError):
        build_optimizer(small_model(), name="bad", _target_=target, _partial_=True, **options)


# --- learning-rate schedule ------------------------------------------------------------------------


def test_warmup_is_linear_and_reaches_one_at_its_last_step():
    factors = [lr_factor(step, 100, 10, "cosine") for step in range(10)]
    assert factors == pytest.approx([(step + 1) / 10 for step in range(10)])
    assert factors[-1] == 1.0


def test_cosine_is_half_in_the_middle_and_ends_near_min_lr_ratio():
    total, warmup = 110, 10
    assert lr_factor(warmup, total, warmup, "cosine") == pytest.approx(1.0)
    assert lr_factor(warmup + 50, total, warmup, "cosine") == pytest.approx(0.5)
    assert lr_factor(total - 1, total, warmup, "cosine") == pytest.approx(0.0, abs=1e-3)
    assert lr_factor(total - 1, total, warmup, "cosine", min_lr_ratio=0.1) == pytest.approx(0.1, abs=1e-3)
    factors = [lr_factor(step, total, warmup, "cosine") for step in range(warmup, total)]
    assert all(later <= earlier for earlier, later in zip(factors, factors[1:]))


def test_step_schedule_multiplies_by_gamma_at_each_milestone():
    factors = [lr_factor(step, 100, 0, "step", milestones=(0.5, 0.75), gamma=0.1) for step in (0, 49, 50, 74, 75, 99)]
    assert factors == pytest.approx([1, 1, 0.1, 0.1, 0.01, 0.01])


def test_constant_schedule_is_one_after_warmup():
    assert lr_factor(0, 100, 4, "constant") == 0.25
    assert all(lr_factor(step, 100, 4, "constant") == 1.0 for step in range(4, 100))


@pytest.mark.parametrize(
    "name, options",
    [("cosine", {"min_lr_ratio": 0.05}), ("step", {"milestones": [0.5, 0.75], "gamma": 0.2}), ("constant", {})],
)
def test_scheduler_steps_per_iteration(name, options):
    optimizer = build_optimizer(small_model(), **optimizer_config("muon"))  # two different peak LRs
    peaks = [group["lr"] for group in optimizer.param_groups]
    scheduler = build_scheduler(optimizer, steps_per_epoch=5, epochs=4, name=name, warmup_fraction=0.25, **options)
    milestones = tuple(options.get("milestones", ()))
    for step in range(20):
        expected = lr_factor(step, 20, 5, name, milestones, options.get("gamma", 0.1), options.get("min_lr_ratio", 0.0))
        assert [group["lr"] for group in optimizer.param_groups] == pytest.approx([p * expected for p in peaks])
        optimizer.step()
        scheduler.step()


def test_step_milestone_lands_on_its_exact_iteration():
    """0.07 * 100 is 7.000000000000001 in floating point; the drop still belongs at iteration 7."""
    assert lr_factor(6, 100, 0, "step", milestones=(0.07,)) == 1.0
    assert lr_factor(7, 100, 0, "step", milestones=(0.07,)) == pytest.approx(0.1)
