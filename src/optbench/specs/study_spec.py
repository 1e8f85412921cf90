"""Study files as data: experiments/studies/*.yaml and the `study:` blocks of hypothesis files.

A study lives in `experiments/studies/<name>.yaml`, or as the `study:` block of a hypothesis file in
`experiments/hypotheses/` (then its id, title and statement are the hypothesis's). Its `grid` names
optimizers, seeds, datasets, noise settings and epochs; `overrides` adds Hydra overrides; `tune`
(tuning studies) says how to search: `method: grid` (a log grid of factors around each optimizer's
default lr and weight decay) or `method: quasirandom` (trials drawn from a search space file under
experiments/search_spaces/, the top-k rerun on more seeds); `tuned_by` (main studies) names the
tuning study whose winners it runs with. A key the format does not know is refused, so a typo cannot
be silently ignored. `find_study(name)` and `load_study(path)` return a frozen `Study`; plan.py expands
it into runs. A hypothesis study carries its parsed `HypothesisTest` (specs/hypothesis_spec.py).
Standard library and PyYAML only.
"""

import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from optbench.errors import ConfigError
from optbench.specs.hypothesis_spec import HUMAN, HYPOTHESIS_KEYS, HypothesisTest, parse_hypothesis

REPO = Path(__file__).resolve().parents[3]
EXPERIMENTS_DIR = REPO / "experiments"
GRID_KEYS = ("optimizer", "seed", "dataset", "noise", "epochs")  # every study grid names these
STUDY_KEYS = ("id", "title", "statement", "grid", "overrides", "tune", "tuned_by")   # a study file's keys

@dataclass(frozen=True)
class Study:
    id: str
    title: str
    statement: str
    source: Path                  # the YAML file it was read from
    grid: dict
    overrides: tuple[str, ...] = ()   # extra Hydra overrides for every run (e.g. dataset.train_subset=10000)
    tune: "Tuning | None" = None      # tuning studies: how the search runs and selects
    test: HypothesisTest | None = None   # a hypothesis's test, when the study is a hypothesis's
    tuned_by: str = ""                # main studies: the tuning study run first, whose winners these runs use


# ---------------------------------------------------------------- the `tune:` block

TUNE_METHODS = ("grid", "quasirandom")
SELECTION_METRICS = {    # tune.select_on -> where it lives in summary.json: validation, never test
    "val_acc_best": ("best", "val/acc"),    # best validation accuracy over the epochs (default)
    "final_val_acc": ("final", "val/acc"),  # validation accuracy after the last epoch
}
TUNE_KEYS = {"grid": ("method", "lr_factors", "weight_decay_factors", "select_on", "output"),
             "quasirandom": ("method", "space", "sampler", "sampler_seed", "trials", "top_k", "confirm_seeds",
                             "select_on", "output")}


@dataclass(frozen=True)
class Tuning:
    """A tuning study's `tune:` block with its defaults applied (docs/studies.md, Fair tuning)."""
    method: str = "grid"
    select_on: str = "val_acc_best"
    output: str = "tuned"                       # conf/optimizer/<output>/<name>.yaml
    lr_factors: tuple[float, ...] = (1,)        # grid: x the default lr
    weight_decay_factors: tuple[float, ...] = (1,)
    space: str = ""                             # quasirandom: experiments/search_spaces/<space>.yaml (or a path)
    sampler: str = "sobol"                      # sobol | halton (scipy.stats.qmc, scrambled)
    sampler_seed: int = 0
    trials: int = 0                             # per optimizer, on each of the grid's seeds
    top_k: int = 0                              # the best trials rerun on confirm_seeds
    confirm_seeds: tuple[int, ...] = ()

    def space_path(self, experiments_dir: Path) -> Path:
        path = Path(self.space)
        return path if path.suffix in (".yaml", ".yml") else experiments_dir / "search_spaces" / f"{self.space}.yaml"


def parse_tuning(path: Path, block) -> Tuning:
    def bad(problem: str) -> ConfigError:
        return ConfigError(f"{path}: tune.{problem} (docs/studies.md, section Fair tuning)")

    if not isinstance(block, dict):
        raise bad("is a mapping: method, select_on, ...")
    method = block.get("method", "grid")
    if method not in TUNE_METHODS:
        raise bad(f"method must be {' or '.join(TUNE_METHODS)}, not {method}")
    unknown = sorted(set(block) - set(TUNE_KEYS[method]))
    if unknown:
        raise bad(f"{unknown[0]} is not a {method} setting: use {', '.join(TUNE_KEYS[method])}")
    tuning = Tuning(**{key: tuple(value) if isinstance(value, list) else value for key, value in block.items()})
    if tuning.select_on not in SELECTION_METRICS:
        raise bad(f"select_on must be one of {', '.join(SELECTION_METRICS)}")
    if not str(tuning.output).startswith("tuned") or ".." in str(tuning.output):
        raise bad("output must be a folder under conf/optimizer/ starting with tuned (tuned, tuned/cpu_demo)")
    if method == "quasirandom":
        _check_quasirandom(tuning, bad)
    for key in ("lr_factors", "weight_decay_factors"):
        factors = getattr(tuning, key)
        if not isinstance(factors, tuple) or not all(isinstance(factor, (int, float)) and not isinstance(factor, bool) and math.isfinite(factor)
                   and factor > 0 for factor in factors):
            raise bad(f"{key} must be finite numbers > 0 (factors of the default), e.g. [0.3, 1, 3]")
    return tuning


def _check_quasirandom(tuning: Tuning, bad) -> None:
    if not tuning.space:
        raise bad("space must name a search space (experiments/search_spaces/<name>.yaml)")
    if tuning.sampler not in ("sobol", "halton"):
        raise bad("sampler must be sobol or halton")
    for key in ("trials", "top_k", "sampler_seed"):
        value = getattr(tuning, key)
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key == "sampler_seed" else 1):
            raise bad(f"{key} must be a whole number" + (" >= 0" if key == "sampler_seed" else " >= 1"))
    if tuning.top_k > tuning.trials:
        raise bad(f"top_k={tuning.top_k} exceeds trials={tuning.trials}")
    if not all(isinstance(seed, int) and not isinstance(seed, bool) for seed in tuning.confirm_seeds):
        raise bad("confirm_seeds must be a list of whole numbers (seeds not in the grid)")


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
        _refuse_unknown(path, document, HYPOTHESIS_KEYS)
        block = document["study"] or {}
        _refuse_unknown(path, block, ("grid", "overrides"), "study.")
        test = parse_hypothesis(path).test if "test" in document else None
        return _build_study(path, {"id": document.get("id"), "title": document.get("title"),
                                   "statement": document.get("statement"), "test": test, **block})
    _refuse_unknown(path, document, STUDY_KEYS)
    return _build_study(path, document)


def _refuse_unknown(path: Path, document: dict, known: tuple[str, ...], prefix: str = "") -> None:
    unknown = sorted(set(document) - set(known))
    if unknown:
        raise ConfigError(f"{path}: unknown key `{prefix}{unknown[0]}`: a study file has "
                          f"{', '.join(prefix + key for key in known)} (experiments/README.md)")


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
    tune = parse_tuning(path, fields["tune"]) if fields.get("tune") is not None else None
    if tune and tune.method == "quasirandom" and set(tune.confirm_seeds) & {int(seed) for seed in _seeds(grid)}:
        raise ConfigError(f"{path}: tune.confirm_seeds repeat a grid seed: confirm on new seeds")
    if tune and fields.get("tuned_by"):
        raise ConfigError(f"{path}: a tuning study cannot be tuned_by another")
    return Study(id=str(fields["id"]), title=str(fields.get("title") or fields["id"]),
                 statement=" ".join(str(fields["statement"]).split()), source=path, grid=grid,
                 overrides=tuple(fields.get("overrides") or ()), tune=tune, test=fields.get("test"),
                 tuned_by=str(fields.get("tuned_by") or ""))


@dataclass(frozen=True)
class PlannedSetting:
    """One dataset x noise setting a study plans, and the optimizers it runs there."""
    dataset: str
    noise: str            # "none", "symmetric", ..., "human"
    rate: float           # 0.0 for clean labels; NaN for a human label set (its realised rate is known once run)
    optimizers: tuple[str, ...]
    label_set: str = ""   # noise "human": the label set (aggre, worst, ...)


def planned_settings(study: Study) -> list[PlannedSetting]:
    """The study's grid as settings (what a verdict's family is when the folder holds this study's runs)."""
    optimizers = tuple(str(name) for name in _as_list(study.grid["optimizer"]))
    settings = []
    for entry in _as_list(study.grid["noise"]):
        entry = {"name": entry} if isinstance(entry, str) else entry
        chosen = tuple(str(name) for name in _as_list(entry.get("optimizer", optimizers)))
        if entry["name"] == HUMAN:
            settings += [PlannedSetting(str(dataset), HUMAN, math.nan, chosen, str(label_set))
                         for dataset in _as_list(study.grid["dataset"]) for label_set in _as_list(entry["label_set"])]
            continue
        rates = [0.0] if entry["name"] == "none" else [float(rate) for rate in _as_list(entry.get("rate", 0.0))]
        settings += [PlannedSetting(str(dataset), str(entry["name"]), rate, chosen)
                     for dataset in _as_list(study.grid["dataset"]) for rate in rates]
    return settings


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def seeds_shared_with_tuning(study: Study, tuning_study: Study) -> list[int]:
    """The main study's seeds that its tuning study also ran: hyperparameters chosen on a seed and then
    tested on it make the comparison post-selection (optimistic for the tuned optimizers)."""
    tuned_on = {int(seed) for seed in _seeds(tuning_study.grid)} | set(tuning_study.tune.confirm_seeds)
    return sorted(tuned_on & {int(seed) for seed in _seeds(study.grid)})


def _seeds(grid: dict) -> list:
    return list(grid["seed"]) if isinstance(grid["seed"], (list, tuple)) else [grid["seed"]]
