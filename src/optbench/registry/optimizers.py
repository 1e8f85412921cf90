"""The optimizer registry: one entry per conf/optimizer/<name>.yaml, with what the harness must know about it.

A config says how to build an optimizer (`_target_`, how its parameter groups are cut, its arguments); its
entry here says how to treat it: which library it comes from (its version goes into summary.json), whether it
is learning-rate-free (Prodigy), which schedules it accepts and which it defaults to, its own warmup argument,
and the ranges a tuning study searches by default. What the config already says (the class, the parameter
groups) is not repeated here, and train/eval modes (Schedule-Free) are found on the optimizer itself
(training/optim.py has_modes), so an overridden `_target_` is treated by what it is. Standard library only,
so config validation, the study planner and `choices` read it without loading torch. tests/test_optimizers.py
checks that the registry and conf/optimizer/*.yaml name the same optimizers and that each config's class comes
from its entry's library, and runs every test over every entry: adding an optimizer is one config plus one
entry here (docs/adding-an-optimizer.md). An optimizer of one's own, in a config folder outside the package,
carries the same facts in its YAML under `registry:` (REGISTRY_KEY); `spec_from_facts` reads them into the same
OptimizerSpec and `spec_of_config` finds the entry of any optimizer config node, its own facts first
(config/own_optimizers.py finds such configs; docs/your-own-optimizer.md).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from optbench.errors import ConfigError

LOG = "log"


def log_range(low: float, high: float) -> dict:
    return {"low": low, "high": high, "scale": LOG}


@dataclass(frozen=True)
class OptimizerSpec:
    name: str  # the config's file stem and its `name:`, the run directory's optimizer level
    library: str  # distribution whose version summary.json records
    source: str  # where the algorithm and its defaults come from
    search: dict  # config key -> {low, high, scale}: the default search-space ranges, fixed in advance
    lr_free: bool = False  # learning-rate-free: lr stays 1.0 unless set; tuning never scales it
    schedules: tuple | None = None  # the scheduler= options it accepts; None: every one
    default_schedule: str = (
        "cosine"  # what a run gets when no scheduler= is given (conf/config.yaml's default for most)
    )
    own_warmup: str | None = None  # its warmup argument (steps), set from optimizer.warmup_fraction

    def accepts(self, schedule: str) -> bool:
        return self.schedules is None or schedule in self.schedules

    def group_defaults(self) -> dict[str, str]:
        """The config-group options this optimizer brings when a command leaves the group unchosen
        (config/hydra_glue.py with_optimizer_defaults): its schedule; a new default is one more item here."""
        return {"scheduler": self.default_schedule}


REGISTRY: dict[str, OptimizerSpec] = {
    spec.name: spec
    for spec in (
        # --- the core five ------------------------------------------------------------------------------
        OptimizerSpec(
            "sgd",
            "torch",
            "He et al. 2016; kuangliu/pytorch-cifar",
            {"lr": log_range(0.01, 1.0), "weight_decay": log_range(5.0e-5, 5.0e-3)},
        ),
        OptimizerSpec(
            "adam",
            "torch",
            "Kingma & Ba 2015",
            # weight decay: three decades, coupled L2 whose useful values are less known
            {"lr": log_range(1.0e-4, 1.0e-2), "weight_decay": log_range(1.0e-6, 1.0e-3)},
        ),
        OptimizerSpec(
            "adamw",
            "torch",
            "Loshchilov & Hutter 2019",
            {"lr": log_range(1.0e-4, 1.0e-2), "weight_decay": log_range(1.0e-3, 1.0e-1)},
        ),
        OptimizerSpec(
            "lion",
            "lion-pytorch",
            "Chen et al. 2023; lion-pytorch README",
            {"lr": log_range(1.0e-5, 1.0e-3), "weight_decay": log_range(1.0e-2, 1.0)},
        ),
        # pytorch-optimizer's Muon: torch.optim.Muon refuses parameters that are not 2-D (ResNet's conv filters)
        OptimizerSpec(
            "muon",
            "pytorch_optimizer",
            "Jordan et al. 2024 (Muon README)",
            {"lr": log_range(2.0e-3, 0.2), "weight_decay": log_range(1.0e-3, 1.0e-1)},
        ),
        # --- what a 2026 comparison measures against ------------------------------------------------------
        OptimizerSpec(
            "nadamw",
            "torch",
            "Dozat 2016; AlgoPerf's NAdamW baseline (Dahl et al. 2023)",
            {"lr": log_range(1.0e-4, 1.0e-2), "weight_decay": log_range(1.0e-3, 1.0e-1)},
        ),
        # averages its iterates: evaluated (BatchNorm statistics re-estimated) and checkpointed in eval mode;
        # no decay schedule, and its own warmup (optimizer.warmup_fraction -> warmup_steps)
        OptimizerSpec(
            "schedulefree_adamw",
            "schedulefree",
            "Defazio et al. 2024 (AlgoPerf 2024 self-tuning winner); schedulefree README",
            {"lr": log_range(2.5e-4, 2.5e-2), "weight_decay": log_range(1.0e-3, 1.0e-1)},
            schedules=("constant",),
            default_schedule="constant",
            own_warmup="warmup_steps",
        ),
        OptimizerSpec(
            "soap",
            "pytorch_optimizer",
            "Vyas et al. 2024 (SOAP)",
            {"lr": log_range(3.0e-4, 3.0e-2), "weight_decay": log_range(1.0e-3, 1.0e-1)},
        ),
        OptimizerSpec(
            "ademamix",
            "pytorch_optimizer",
            "Pagliardini et al. 2024 (AdEMAMix)",
            {"lr": log_range(1.0e-4, 1.0e-2), "weight_decay": log_range(1.0e-3, 1.0e-1)},
        ),
        OptimizerSpec(
            "prodigy",
            "pytorch_optimizer",
            "Mishchenko & Defazio 2024 (Prodigy)",
            # learning-rate-free: d_coef scales its estimated step size instead of lr
            {"d_coef": log_range(0.1, 10.0), "weight_decay": log_range(1.0e-3, 1.0e-1)},
            lr_free=True,
        ),
        OptimizerSpec(
            "mars",
            "pytorch_optimizer",
            "Yuan et al. 2024 (MARS)",
            {"lr": log_range(3.0e-4, 3.0e-2), "weight_decay": log_range(1.0e-3, 1.0e-1)},
        ),
        OptimizerSpec(
            "adopt",
            "pytorch_optimizer",
            "Taniguchi et al. 2024 (ADOPT)",
            {"lr": log_range(1.0e-4, 1.0e-2), "weight_decay": log_range(1.0e-3, 1.0e-1)},
        ),
    )
}

NAMES = tuple(REGISTRY)


def spec_of(name: str) -> OptimizerSpec | None:
    """The entry of a config's `optimizer.name`; None for an optimizer the registry does not know
    (`optimizer._target_=...` with a name of one's own), which gets no special treatment."""
    return REGISTRY.get(name)


# The key of an optimizer config that holds its registry facts (an optimizer outside the package); the optimizer
# factory leaves it out of the class's arguments, and the run identity leaves it out (optbench/identity.py).
REGISTRY_KEY = "registry"
REQUIRED_FACTS = ("library", "source", "search")


def spec_from_facts(name: str, facts) -> OptimizerSpec:
    """The entry an optimizer config's `registry:` block describes: the OptimizerSpec fields but its name (the
    config's). Types are checked here, in one line naming the field; ranges by the search-space loader."""
    where = f"optimizer {name}: {REGISTRY_KEY}"
    known = tuple(field.name for field in fields(OptimizerSpec) if field.name != "name")
    if not isinstance(facts, Mapping):
        raise ConfigError(f"{where}: give a mapping of {', '.join(known)} (docs/your-own-optimizer.md)")
    unknown = sorted(set(facts) - set(known))
    missing = [key for key in REQUIRED_FACTS if key not in facts]
    if unknown or missing:
        problem = f"unknown field {unknown[0]}" if unknown else f"needs {', '.join(missing)}"
        raise ConfigError(f"{where}: {problem}; its fields are {', '.join(known)} (docs/your-own-optimizer.md)")
    _check_fact_types(where, facts)
    schedules = facts.get("schedules")
    return OptimizerSpec(
        name=name,
        library=facts["library"],
        source=facts["source"],
        search={str(key): dict(bounds) for key, bounds in facts["search"].items()},
        lr_free=bool(facts.get("lr_free", False)),
        schedules=tuple(schedules) if schedules is not None else None,
        default_schedule=facts.get("default_schedule", "cosine"),
        own_warmup=facts.get("own_warmup"),
    )


def _check_fact_types(where: str, facts: Mapping) -> None:
    expected: dict[str, tuple[type | tuple[type, ...], str]] = {
        "library": (str, "the distribution the class comes from, e.g. torch"),
        "source": (str, "where the algorithm and its defaults come from, e.g. Liu et al. 2020"),
        "search": (Mapping, "config key -> {low, high, scale}, e.g. lr: {low: 1.0e-4, high: 1.0e-2, scale: log}"),
        "lr_free": (bool, "true or false"),
        "schedules": ((Sequence, type(None)), "a list of scheduler options, e.g. [constant], or null"),
        "default_schedule": (str, "a scheduler option, e.g. cosine"),
        "own_warmup": ((str, type(None)), "the name of its warmup argument in steps, or null"),
    }
    for key, value in facts.items():
        kind, example = expected[key]
        wrong = not isinstance(value, kind) or (key == "schedules" and isinstance(value, str))
        if wrong or (key == "search" and not all(isinstance(bounds, Mapping) for bounds in value.values())):
            raise ConfigError(f"{where}.{key}: {value!r} is not {example}")


def spec_of_config(node: Mapping) -> OptimizerSpec | None:
    """The entry of an optimizer config node (a plain mapping): its own `registry:` facts when it has them (an
    optimizer from a config folder of one's own, or its tuned config), else the registry's entry of its name."""
    if node.get(REGISTRY_KEY) is not None:
        return spec_from_facts(str(node.get("name")), node[REGISTRY_KEY])
    return spec_of(str(node.get("name")))


def libraries() -> tuple[str, ...]:
    return tuple(dict.fromkeys(spec.library for spec in REGISTRY.values()))


def default_search_space() -> dict[str, dict]:
    """name -> {key: {low, high, scale}}, the shape of a search space file's `optimizers:`."""
    return {name: {key: dict(bounds) for key, bounds in spec.search.items()} for name, spec in REGISTRY.items()}
