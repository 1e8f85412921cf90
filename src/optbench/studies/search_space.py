"""Search spaces as data, and quasi-random trials drawn from them.

A search space file, `experiments/search_spaces/<name>.yaml`, maps each optimizer to the
hyperparameters a tuning study searches, each with a range and a scale fixed in advance:

    lion:
      lr: {low: 1.0e-5, high: 1.0e-3, scale: log}
      weight_decay: {low: 0.01, high: 3.0, scale: log}

Keys are keys of the optimizer's config (conf/optimizer/<name>.yaml), so a trial is the override
`optimizer.lr=...`. A file with `defaults: registry` starts from every registered optimizer's default
ranges (optbench/registry/optimizers.py, and the `registry:` blocks of the optimizers in the folders of
OPTBENCH_CONFIG_PATH: config/own_optimizers.py) and its own `optimizers:` entries replace those of the optimizers they
name. `trials(space, n, sampler, seed)` draws n points of a scrambled Sobol or Halton sequence (scipy.stats.qmc,
seeded) in the unit cube and maps them onto the ranges; values keep three
significant digits, as every other override the studies write. The same seed gives every optimizer
the same unit points (when they search as many hyperparameters): the same budget, spread the same way.
`edges(...)` says when a winning value sits in the outer tenth of its range: the range was too narrow.
Standard library, PyYAML, NumPy and SciPy only (no torch).
"""

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from scipy.stats import qmc

from optbench.config import own_optimizers
from optbench.config.hydra_glue import format_value
from optbench.errors import ConfigError
from optbench.registry import optimizers

SCALES = ("log", "linear")
SAMPLERS = {"sobol": qmc.Sobol, "halton": qmc.Halton}
EDGE_FRACTION = 0.1  # a winner within the outer tenth of a range (in its scale) is "at the edge"


@dataclass(frozen=True)
class Range:
    key: str  # the optimizer config key: lr, weight_decay, betas ...
    low: float
    high: float
    scale: str  # log | linear

    def from_unit(self, unit: float) -> float:
        if self.scale == "log":
            return math.exp(math.log(self.low) + unit * (math.log(self.high) - math.log(self.low)))
        return self.low + unit * (self.high - self.low)

    def to_unit(self, value: float) -> float:
        if self.scale == "log":
            return (math.log(value) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        return (value - self.low) / (self.high - self.low)

    def as_dict(self) -> dict:
        return {"low": self.low, "high": self.high, "scale": self.scale}


@dataclass(frozen=True)
class Trial:
    index: int
    values: dict[str, str]  # override key (optimizer.lr) -> value as written on the command line

    def overrides(self) -> list[str]:
        return [f"{key}={value}" for key, value in self.values.items()]


def load_space(path: Path) -> dict[str, tuple[Range, ...]]:
    """optimizer name -> its ranges, checked: each `low < high`, log ranges positive, a known scale."""
    try:
        document = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"search space {path}: cannot be read ({str(error).splitlines()[0]})") from None
    if not isinstance(document, dict) or document.get("defaults") not in (None, "registry"):
        raise ConfigError(f"search space {path}: `defaults:` can only be `registry` (the registry's default ranges)")
    registry = {**optimizers.default_search_space(), **own_optimizers.own_search_space()}  # own ones too
    from_registry = registry if document.get("defaults") == "registry" else {}
    own = document.get("optimizers", {} if from_registry else None)
    if not isinstance(own, dict):
        raise ConfigError(
            f"search space {path}: needs `optimizers:` mapping each optimizer to its ranges, or `defaults: registry`"
        )
    return {
        str(name): tuple(_range(path, name, key, spec) for key, spec in (ranges or {}).items())
        for name, ranges in {**from_registry, **own}.items()
    }


def _range(path: Path, optimizer: str, key: str, spec) -> Range:
    where = f"search space {path}: {optimizer}.{key}"
    if not isinstance(spec, dict) or set(spec) != {"low", "high", "scale"}:
        raise ConfigError(f"{where}: give {{low: ..., high: ..., scale: log|linear}}")
    if spec["scale"] not in SCALES:
        raise ConfigError(f"{where}: scale must be log or linear, not {spec['scale']}")
    try:
        low, high = float(spec["low"]), float(spec["high"])
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: low and high must be numbers") from None
    if not (math.isfinite(low) and math.isfinite(high)):  # .inf in YAML: a sampler would draw infinities
        raise ConfigError(f"{where}: low and high must be finite numbers, e.g. {{low: 1.0e-5, high: 1.0e-2}}")
    if not low < high or (spec["scale"] == "log" and low <= 0):
        raise ConfigError(
            f"{where}: needs low < high" + (", both > 0 on a log scale" if spec["scale"] == "log" else "")
        )
    return Range(str(key), low, high, spec["scale"])


def unit_points(dimensions: int, count: int, sampler: str, seed: int) -> np.ndarray:
    """`count` scrambled quasi-random points in [0, 1)^dimensions; the same arguments give the same points."""
    if sampler == "sobol" and count & (count - 1):
        raise ConfigError(
            f"tune.trials={count} with the Sobol sampler: use a power of two (8, 16, 32), "
            "which keeps its balance, or tune.sampler=halton"
        )
    return SAMPLERS[sampler](d=dimensions, scramble=True, rng=np.random.default_rng(seed)).random(count)


def trials(ranges: tuple[Range, ...], count: int, sampler: str, seed: int) -> list[Trial]:
    points = unit_points(len(ranges), count, sampler, seed)
    return [
        Trial(
            index,
            {
                f"optimizer.{space.key}": format_value(space.from_unit(float(unit)))
                for space, unit in zip(ranges, point)
            },
        )
        for index, point in enumerate(points)
    ]


def edges(ranges: tuple[Range, ...], values: dict[str, float]) -> list[str]:
    """A warning per winning value in the outer EDGE_FRACTION of its range: widen the range and tune again."""
    warnings = []
    for space in ranges:
        value = values.get(f"optimizer.{space.key}")
        if value is None:
            continue
        unit = space.to_unit(float(value))
        side = "low" if unit < EDGE_FRACTION else "high" if unit > 1 - EDGE_FRACTION else None
        if side:
            warnings.append(
                f"optimizer.{space.key} = {float(value):g} sits at the {side} edge of "
                f"[{space.low:g}, {space.high:g}] ({space.scale}): widen the range"
            )
    return warnings
