"""Studies as data: load a study definition (YAML) and expand it into plain Hydra multiruns.

A study lives in `experiments/studies/<name>.yaml`, or as the `study:` block of a hypothesis file
in `experiments/hypotheses/` (then its id, title and statement are the hypothesis's). Its `grid`
names optimizers, seeds, datasets, noise settings and epochs; `overrides` adds Hydra overrides;
`tune` (tuning studies) adds a per-optimizer log grid of learning rate and weight decay.

`plan_sweeps(study, ...)` turns one study into one or more `Sweep`s, each a plain
`python src/train.py -m ...` override list: clean and noisy settings are separate sweeps because
config validation refuses `noise=none` with `noise.rate>0`, and per-optimizer values (a tuning grid
around each default, or tuned values) need one sweep per optimizer. Each sweep also lists its
single runs, so the caller can find their deterministic directories without running anything.
No torch here: planning a study stays fast.
"""

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from optbench.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
EXPERIMENTS_DIR = REPO / "experiments"
GRID_KEYS = ("optimizer", "seed", "dataset", "noise", "epochs")  # every study grid names these


@dataclass(frozen=True)
class Study:
    id: str
    title: str
    statement: str
    source: Path                  # the YAML file it was read from
    grid: dict
    overrides: tuple[str, ...] = ()   # extra Hydra overrides for every run (e.g. dataset.train_subset=10000)
    tune: dict | None = None          # tuning studies: lr_factors, weight_decay_factors, select_on
    hypothesis: str | None = None     # the hypothesis id whose test these runs feed, if any
    comparison: dict | None = None    # the metric and comparison the aggregator tests (a hypothesis `test:`)


@dataclass
class Sweep:
    """One plain Hydra multirun: `values` maps each override key to its list of values (several = swept)."""

    values: dict[str, list[str]]
    label: str = ""                       # what distinguishes it from the study's other sweeps
    hydra_overrides: list[str] = field(default_factory=list)   # hydra.* / hydra/...: not part of any run

    def command_overrides(self) -> list[str]:
        """The multirun's command line: `key=v1,v2` for swept keys."""
        return [f"{key}={','.join(values)}" for key, values in self.values.items()] + self.hydra_overrides

    def runs(self) -> list[list[str]]:
        """Every single run of the sweep, as the override list Hydra hands that job."""
        keys = list(self.values)
        return [[f"{key}={value}" for key, value in zip(keys, combination)]
                for combination in itertools.product(*self.values.values())]


# ---------------------------------------------------------------- finding and reading studies

def study_files(experiments_dir: Path = EXPERIMENTS_DIR) -> list[Path]:
    """Study files, then hypothesis files that hold a `study:` block."""
    files = sorted((experiments_dir / "studies").glob("*.yaml"))
    files += [path for path in sorted((experiments_dir / "hypotheses").glob("*.yaml")) if "study" in _read_yaml(path)]
    return files


def find_study(name: str, experiments_dir: Path = EXPERIMENTS_DIR) -> Study:
    """A study by file path, file stem (`full`, `h1_convergence`) or id (`full`, `H1`, case-insensitive)."""
    if name.endswith((".yaml", ".yml")):
        path = Path(name)
        if not path.is_file():
            raise ConfigError(f"study file {name} not found")
        return load_study(path)
    studies = [load_study(path) for path in study_files(experiments_dir)]
    for study in studies:
        if name.lower() in (study.id.lower(), study.source.stem.lower()):
            return study
    known = ", ".join(study.id for study in studies)
    raise ConfigError(f"unknown study '{name}': choose {known} (or a path to a study .yaml)")


def load_study(path: Path) -> Study:
    document = _read_yaml(path)
    if "study" in document:  # a hypothesis file: the run grid lives in its `study:` block
        block = document["study"] or {}
        return _build_study(path, {"id": document.get("id"), "title": document.get("title"),
                                   "statement": document.get("statement"), "hypothesis": document.get("id"),
                                   "comparison": document.get("test"), **block})
    return _build_study(path, document)


def _read_yaml(path: Path) -> dict:
    try:
        document = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: a study file is a mapping (id, statement, grid, ...)")
    return document


def _build_study(path: Path, fields: dict) -> Study:
    for key in ("id", "statement", "grid"):
        if not fields.get(key):
            raise ConfigError(f"{path}: the study needs `{key}`")
    grid = fields["grid"]
    missing = [key for key in GRID_KEYS if key not in grid]
    if missing:
        raise ConfigError(f"{path}: grid needs {', '.join(missing)} (it has {', '.join(grid)})")
    unknown = sorted(set(grid) - set(GRID_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown grid key {unknown[0]}: use {', '.join(GRID_KEYS)}; "
                          "other settings go in `overrides`")
    return Study(id=str(fields["id"]), title=str(fields.get("title") or fields["id"]),
                 statement=" ".join(str(fields["statement"]).split()), source=path, grid=grid,
                 overrides=tuple(fields.get("overrides") or ()), tune=fields.get("tune"),
                 hypothesis=fields.get("hypothesis"), comparison=fields.get("comparison") or fields.get("compare"))


# ---------------------------------------------------------------- expanding a study into sweeps

def format_value(value) -> str:
    """A grid value as Hydra reads it back: 3 significant digits for floats (0.1 x 3 -> 0.3, not 0.30000000000000004)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def noise_settings(grid: dict) -> list[dict[str, list[str]]]:
    """One entry per noise setting: `[{name: none}, {name: symmetric, rate: [0.2, 0.4]}]` (or `none`, or a name)."""
    settings = []
    for entry in _as_list(grid["noise"]):
        entry = {"name": entry} if isinstance(entry, str) else dict(entry)
        values = {"noise": [str(entry["name"])]}
        if "rate" in entry and entry["name"] != "none":
            values["noise.rate"] = [format_value(rate) for rate in _as_list(entry["rate"])]
        settings.append(values)
    return settings


def base_values(grid: dict, default_epochs: int) -> dict[str, list[str]]:
    """optimizer, seed, dataset and (only when it differs from conf/config.yaml) epochs.

    An override equal to the default is left out on purpose: every override becomes part of the run
    directory, so leaving it out lets studies share runs (H1's clean runs are the full study's)."""
    values = {"optimizer": [str(name) for name in _as_list(grid["optimizer"])],
              "seed": [format_value(seed) for seed in _as_list(grid["seed"])],
              "dataset": [str(name) for name in _as_list(grid["dataset"])]}
    if int(grid["epochs"]) != default_epochs:
        values["epochs"] = [str(int(grid["epochs"]))]
    return values


def split_overrides(overrides: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Run overrides as key -> values (a sweep like `seed=0,1` gives several), and the hydra.* ones apart."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    values, hydra_overrides = {}, []
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception as error:  # Hydra's parse errors span lines; the first names the override
        raise ConfigError(f"bad override: {str(error).strip().splitlines()[0]}") from None
    for override in parsed:
        if override.is_hydra_override():
            hydra_overrides.append(override.input_line)
            continue
        key = override.get_key_element()
        if override.is_sweep_override():
            values[key] = [str(value) for value in override.sweep_string_iterator()]
        else:
            values[key] = [override.input_line.split("=", 1)[1]]
    return values, hydra_overrides


def merge(*layers: dict[str, list[str]]) -> dict[str, list[str]]:
    """Later layers win key by key (`--set dataset=synthetic` replaces the grid's datasets)."""
    merged: dict[str, list[str]] = {}
    for layer in layers:
        merged.update(layer)
    return merged


def plan_sweeps(study: Study, default_epochs: int, extra_overrides: list[str] = (),
                per_optimizer: "callable | None" = None) -> list[Sweep]:
    """The study's multiruns. `per_optimizer(name)` -> {key: values} gives one sweep per optimizer with
    those values added (a tuning grid, or tuned values); None runs all optimizers in one sweep."""
    study_values, study_hydra = split_overrides(list(study.overrides))
    extra_values, extra_hydra = split_overrides(list(extra_overrides))
    base = base_values(study.grid, default_epochs)
    sweeps = []
    for noise in noise_settings(study.grid):
        noise_label = "+".join(f"{key}={','.join(values)}" for key, values in noise.items())
        if per_optimizer is None:
            values = merge(base, noise, study_values, extra_values)
            sweeps.append(Sweep(values, noise_label, study_hydra + extra_hydra))
            continue
        for optimizer in base["optimizer"]:
            own = per_optimizer(optimizer)
            values = merge(base, {"optimizer": [optimizer]}, noise, own, study_values, extra_values)
            sweeps.append(Sweep(values, f"{optimizer} {noise_label}", study_hydra + extra_hydra))
    return sweeps
