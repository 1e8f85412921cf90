"""Every registered optimizer (optbench/registry/optimizers.py), each from its conf/optimizer/<name>.yaml: the registry
and the configs agree, it builds its parameter groups, lowers the loss on a tiny problem, and its state
survives a checkpoint so that the restored optimizer takes exactly the next step. A new optimizer is one
config plus one registry entry, and every test here covers it; so is one of your own, a config carrying its
registry facts in a folder of OPTBENCH_CONFIG_PATH (`python scripts/check_optimizer.py my_conf/optimizer/NAME.yaml`
runs these tests on it: docs/your-own-optimizer.md)."""

import importlib
import io
import math
from importlib import metadata
from pathlib import Path

import pytest
import torch
from hydra.utils import get_class
from omegaconf import OmegaConf
from torch import nn

from optbench.config.config_path import option_file
from optbench.config.own_optimizers import optimizer_names, own_optimizer_files, own_specs
from optbench.registry import choices, optimizers
from optbench.studies.search_space import load_space
from optbench.training.models import build_model
from optbench.training.optim import build_optimizer, set_mode

pytestmark = pytest.mark.usefixtures("one_thread")
REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
NAMES = optimizer_names()  # the registry's, then those of the folders in OPTBENCH_CONFIG_PATH
STEPS = 30  # optimizer steps of the loss test; also the run length the own-warmup fraction is a share of


def optimizer_config(name: str) -> dict:
    path = option_file(CONF, "optimizer", name)
    assert path is not None, f"no optimizer/{name}.yaml in conf/ or OPTBENCH_CONFIG_PATH"
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)


def spec_of(name: str) -> optimizers.OptimizerSpec:
    """The entry the harness uses for the config: its own `registry:` facts, else the registry's."""
    spec = optimizers.spec_of_config(optimizer_config(name))
    assert spec is not None, f"{name}: neither a registry entry nor a `registry:` block in its config"
    return spec


def small_model(width: int = 4) -> nn.Module:
    torch.manual_seed(0)
    return build_model("resnet18", 10, width)


def build(name: str, model: nn.Module) -> torch.optim.Optimizer:
    return build_optimizer(model, total_steps=STEPS, **optimizer_config(name))


def train_steps(model, optimizer, images, labels, steps: int) -> list[float]:
    set_mode(optimizer, training=True)
    losses = []
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


# --- the registry and the configs -----------------------------------------------------------------


def test_the_registry_names_exactly_the_optimizer_configs():
    assert set(optimizers.NAMES) == {path.stem for path in (CONF / "optimizer").glob("*.yaml")}
    assert optimizers.NAMES == tuple(optimizers.REGISTRY) == choices.OPTIMIZERS
    assert NAMES == (*optimizers.NAMES, *own_optimizer_files())


@pytest.mark.parametrize("name", NAMES)
def test_registry_entry_matches_its_config(name):
    spec, config = spec_of(name), optimizer_config(name)
    assert config["name"] == name and config["_target_"].count(".") >= 1
    assert config["param_groups"] in ("standard", "muon")  # training/optim.py build_param_groups
    # the library whose version is recorded is the one the class is imported from, and it is installed
    top_package = config["_target_"].split(".")[0]
    assert spec.library.replace("-", "_") in {
        dist.replace("-", "_") for dist in metadata.packages_distributions()[top_package]
    }
    assert metadata.version(spec.library)
    assert spec.accepts(spec.default_schedule) and spec.default_schedule in choices.SCHEDULES
    assert (spec.own_warmup is not None) == ("warmup_fraction" in config)
    # default ranges: keys of the config, each default inside its range (Adam's weight decay is 0 on purpose:
    # coupled L2 it does not use by default, searched so it gets a regulariser too)
    for key, bounds in spec.search.items():
        assert float(config[key]) == 0.0 or bounds["low"] < float(config[key]) < bounds["high"], (key, bounds)
    if spec.lr_free:
        assert config["lr"] == 1.0 and "lr" not in spec.search


@pytest.mark.parametrize("name", NAMES)
def test_a_plain_run_takes_the_entry_s_own_defaults_and_an_explicit_conflict_is_refused(name):
    """`optimizer=NAME` alone composes (as train, sweeps and studies compose) with the group options its entry
    brings, marked in optimizer_defaults; a schedule it does not accept, chosen explicitly, is still one line."""
    from hydra import initialize_config_dir

    from optbench.config.hydra_glue import compose_checked, register_resolvers
    from optbench.config.validation import validate
    from optbench.errors import ConfigError

    register_resolvers()
    spec = spec_of(name)
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        plain = compose_checked([f"optimizer={name}"], CONF)
        config_default = compose_checked(["optimizer=sgd"], CONF)
        refused = [schedule for schedule in choices.SCHEDULES if not spec.accepts(schedule)]
        for schedule in refused:
            with pytest.raises(ConfigError, match=f"^scheduler={schedule}: optimizer={name} accepts"):
                validate(compose_checked([f"optimizer={name}", f"scheduler={schedule}"], CONF))
    validate(plain)
    for group, option in spec.group_defaults().items():
        assert plain[group].name == option
        assert plain.optimizer_defaults.get(group) == (option if config_default[group].name != option else None)


def test_the_search_space_file_gives_every_registered_optimizer_the_registry_ranges():
    space = load_space(REPO / "experiments" / "search_spaces" / "cifar_resnet18.yaml")
    assert set(space) == set(NAMES)
    for name in NAMES:
        assert {axis.key: axis.as_dict() for axis in space[name]} == spec_of(name).search


# --- every optimizer --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_it_builds_its_class_over_groups_that_exempt_norms_and_biases(name):
    spec, model = spec_of(name), small_model()
    optimizer = build(name, model)
    assert type(optimizer) is get_class(optimizer_config(name)["_target_"])
    grouped = [p for group in optimizer.param_groups for p in group["params"]]
    assert sorted(map(id, grouped)) == sorted(id(p) for p in model.parameters())  # each in exactly one group
    vectors = {id(p) for p in model.parameters() if p.ndim < 2}
    for group in optimizer.param_groups:
        if {id(p) for p in group["params"]} <= vectors:
            assert group["weight_decay"] == 0.0
        elif optimizer_config(name)["param_groups"] == "standard":
            assert group["weight_decay"] == optimizer_config(name).get("weight_decay", 0.0)
    assert callable(getattr(optimizer, "train", None)) == callable(getattr(optimizer, "eval", None))  # both or neither
    if spec.own_warmup:
        expected = round(optimizer_config(name)["warmup_fraction"] * STEPS)
        assert all(group[spec.own_warmup] == expected for group in optimizer.param_groups)


@pytest.mark.parametrize("name", NAMES)
def test_it_lowers_the_loss_on_a_tiny_problem(name):
    model = small_model()
    optimizer = build(name, model)
    generator = torch.Generator().manual_seed(0)
    images, labels = torch.randn(16, 3, 32, 32, generator=generator), torch.randint(0, 10, (16,), generator=generator)
    losses = train_steps(model, optimizer, images, labels, STEPS)
    assert all(math.isfinite(loss) for loss in losses)
    assert losses[-1] < 0.9 * losses[0], losses


@pytest.mark.parametrize("name", NAMES)
def test_its_state_loads_with_torch_load_defaults_and_continues_identically(name):
    """After real steps (momenta, second moments, preconditioners, Prodigy's estimate, Schedule-Free's average),
    the checkpoint the loop writes at an epoch's end (eval mode) must load under weights_only=True, and the
    restored optimizer must take exactly the step the original takes."""
    torch.manual_seed(0)
    model = small_model()
    optimizer = build(name, model)
    images, labels = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
    train_steps(model, optimizer, images, labels, 3)
    assert optimizer.state, "the optimizer kept no state after three steps"
    set_mode(optimizer, training=False)  # as the loop does before evaluating and checkpointing
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer)  # weights_only=True is the default
    twin = small_model()
    twin.load_state_dict(saved["model"])
    twin_optimizer = build(name, twin)
    twin_optimizer.load_state_dict(saved["optimizer"])
    for net, opt in ((model, optimizer), (twin, twin_optimizer)):
        train_steps(net, opt, images, labels, 1)
        set_mode(opt, training=False)
    for original, restored in zip(model.parameters(), twin.parameters()):
        assert torch.equal(original, restored)


def test_schedule_free_evaluates_other_weights_than_it_steps_from():
    """The hook matters: Schedule-Free's eval mode moves the weights to its average, train mode moves them back."""
    model = small_model()
    optimizer = build("schedulefree_adamw", model)
    images, labels = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
    train_steps(model, optimizer, images, labels, 3)
    stepped = [p.detach().clone() for p in model.parameters()]
    set_mode(optimizer, training=False)
    assert any(not torch.equal(before, p) for before, p in zip(stepped, model.parameters()))
    set_mode(optimizer, training=True)
    assert all(torch.allclose(before, p, atol=1e-6) for before, p in zip(stepped, model.parameters()))


def test_set_mode_leaves_optimizers_without_modes_alone():
    model = small_model()
    optimizer = build("adamw", model)
    before = [p.detach().clone() for p in model.parameters()]
    set_mode(optimizer, training=False)
    set_mode(optimizer, training=True)
    assert all(torch.equal(a, p) for a, p in zip(before, model.parameters()))


def test_every_registered_library_is_importable_and_has_the_version_summary_json_records():
    problems = []
    for library in {*optimizers.libraries(), *(spec.library for spec in own_specs().values())}:
        name = library.replace("-", "_")
        try:
            module = importlib.import_module(name)
        except ImportError as error:
            problems.append(f"{library}: import {name} fails ({error}): `pip install -e .` installs it")
            continue
        try:
            metadata.version(library)
        except metadata.PackageNotFoundError:
            problems.append(f"{library}: {name} imports from {module.__file__}, but no distribution {library} exists")
    assert problems == []


def test_batch_norm_statistics_are_re_estimated_at_the_current_weights():
    """What Schedule-Free's evaluation relies on: after recompute_batch_norm, a BatchNorm's running mean and
    variance are the averages over the batches of its input's batch statistics, whatever they were before."""
    from optbench.device.policy import decide_policy, facts_of
    from optbench.training.steps import recompute_batch_norm

    model = small_model()
    stem_norm = model.stem[1]
    assert isinstance(stem_norm, nn.BatchNorm2d)
    for norm in model.modules():
        if isinstance(norm, nn.BatchNorm2d):
            norm.running_mean.fill_(5.0)
            norm.running_var.fill_(7.0)
    images = torch.randn(24, 3, 32, 32)
    with torch.no_grad():
        features = model.stem[0](images)  # the stem norm's input
    batch_means = torch.stack([chunk.mean(dim=(0, 2, 3)) for chunk in features.chunk(3)])
    batch_vars = torch.stack([chunk.transpose(0, 1).flatten(1).var(dim=1) for chunk in features.chunk(3)])
    policy = decide_policy(facts_of(torch.device("cpu")), {"amp": "off", "channels_last": False}, 4)
    recompute_batch_norm(model, [(chunk, None) for chunk in images.chunk(3)], policy)
    assert torch.allclose(stem_norm.running_mean, batch_means.mean(0), atol=1e-5)
    assert torch.allclose(stem_norm.running_var, batch_vars.mean(0), atol=1e-4)
    assert stem_norm.momentum == 0.1  # restored for training
