"""Study files as data: experiments/studies/*.yaml and the `study:` blocks of hypothesis files.

A study lives in `experiments/studies/<name>.yaml`, or as the `study:` block of a hypothesis file in
`experiments/hypotheses/` (then its id, title and statement are the hypothesis's). Its `grid` names
optimizers, seeds, datasets, noise settings and epochs; `overrides` adds Hydra overrides; `tune`
(tuning studies) says how to search: `method: grid` (a log grid of factors around each optimizer's
default lr and weight decay) or `method: quasirandom` (trials drawn from a search space file under
experiments/search_spaces/, the top-k rerun on more seeds); `tuned_by` (main studies) names the
tuning study whose winners it runs with. A key the format does
not know is refused, so a typo cannot be silently ignored. `find_study(name)` and `load_study(path)`
return a frozen `Study`; plan.py expands it into runs. Hypothesis files are parsed here too, once, by
`load_hypotheses(folder)` / `parse_hypothesis(path)` into frozen `Hypothesis` and `HypothesisTest`
objects with every default applied in `parse_test`; the aggregator evaluates them and a hypothesis
study carries its `HypothesisTest`. Standard library and PyYAML only.
"""

import dataclasses
import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from optbench.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
EXPERIMENTS_DIR = REPO / "experiments"
HUMAN = "human"   # the noise kind whose settings are label sets (noise.label_set), not rates
GRID_KEYS = ("optimizer", "seed", "dataset", "noise", "epochs")  # every study grid names these
STUDY_KEYS = ("id", "title", "statement", "grid", "overrides", "tune", "tuned_by")   # a study file's keys
HYPOTHESIS_KEYS = ("id", "title", "statement", "test", "study")           # a hypothesis file's keys

# ---- hypothesis tests: the schema is experiments/README.md, section Hypotheses
TEST_KINDS = ("metric_comparison", "epochs_to_fraction_of_reference", "noise_drop")
METRICS = ("test_acc_at_best_val", "final_test_acc", "best_test_acc", "final_val_acc", "val_acc_best",
           "final_train_loss", "final_train_acc", "epochs_to_target", "wall_time_s", "train_images_per_s")
DEFAULT_METRIC = "test_acc_at_best_val"   # test accuracy at the best-validation epoch: the headline
DEFAULT_ALPHA = 0.05                      # two-sided, for each Holm-adjusted comparison
DEFAULT_MIN_SEEDS = 3   # completed seeds per arm; 2 seeds give 4 sign flips, so p >= 0.5 whatever the data


@dataclass(frozen=True)
class HypothesisTest:
    """A hypothesis's `test:` block with its defaults applied: what the aggregator computes."""
    kind: str                               # one of TEST_KINDS
    subject: str                            # the optimizer the claim is about
    versus: tuple[str, ...]                 # each is a required comparison
    metric: str = DEFAULT_METRIC
    better: str = "higher"                  # metric_comparison: the subject's metric is higher or lower
    where: dict = field(default_factory=dict)   # column or config key -> a value or a list of values
    alpha: float = DEFAULT_ALPHA
    min_seeds: int = DEFAULT_MIN_SEEDS
    fraction: float = 0.0                   # epochs_to_fraction_of_reference: target = fraction x reference
    reference_metric: str = "final_val_acc"
    curve_metric: str = "val/acc"           # the metrics.jsonl key compared with the target
    noise: str = ""                         # noise_drop: the noise kind
    rates: tuple[float, ...] = ()           # noise_drop: each rate is a required comparison
    label_sets: tuple[str, ...] = ()        # noise_drop with noise: human: each label set is a required comparison


@dataclass(frozen=True)
class Hypothesis:
    id: str
    title: str
    statement: str
    test: HypothesisTest
    source: str                             # the YAML file it was read from


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


# ---------------------------------------------------------------- hypotheses

def hypothesis_files(experiments_dir: Path) -> list[Path]:
    """experiments/hypotheses/*.yaml, or the folder's own *.yaml when it is the hypotheses folder itself."""
    folder = experiments_dir / "hypotheses"
    folder = folder if folder.is_dir() else experiments_dir
    return sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])


def load_hypotheses(experiments_dir: Path) -> list[Hypothesis]:
    hypotheses = [parse_hypothesis(path) for path in hypothesis_files(experiments_dir)]
    ids = [hypothesis.id for hypothesis in hypotheses]
    duplicated = sorted({name for name in ids if ids.count(name) > 1})
    if duplicated:
        raise ConfigError(f"hypothesis id {duplicated[0]} is defined twice under {experiments_dir}: give each file its own id")
    return hypotheses


def parse_hypothesis(path: Path) -> Hypothesis:
    """One hypothesis file; top-level keys other than id, title, statement and test (a `study:` grid,
    notes) are the study runner's business or comments, and are not read here."""
    def bad(problem: str) -> ConfigError:
        return ConfigError(f"{path}: {problem} (see experiments/README.md, section Hypotheses)")

    try:
        data = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as error:
        raise bad(f"not valid YAML ({str(error).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise bad("expected a mapping with id, statement and test")
    for key in ("id", "statement", "test"):
        if key not in data:
            raise bad(f"missing '{key}'")
    return Hypothesis(id=str(data["id"]), title=str(data.get("title", "")), statement=str(data["statement"]).strip(),
                      test=parse_test(data["test"], bad), source=str(path))


def parse_test(block, bad) -> HypothesisTest:
    """The `test:` block, checked, with every default applied (the one place defaults live)."""
    if not isinstance(block, dict) or block.get("kind") not in TEST_KINDS:
        raise bad(f"test.kind must be one of {', '.join(TEST_KINDS)}")
    settings = [item.name for item in dataclasses.fields(HypothesisTest)]
    for key in block:
        if key not in settings:   # a misspelt `metrc:` would silently test the default metric
            close = difflib.get_close_matches(str(key), settings, n=1)
            raise bad(f"test.{key} is not a test setting" + (f": did you mean test.{close[0]}?" if close else "")
                      + f" (the settings: {', '.join(settings)})")
    versus = [block["versus"]] if isinstance(block.get("versus"), str) else block.get("versus")
    if not isinstance(block.get("subject"), str):
        raise bad("test.subject must name one optimizer")
    if not isinstance(versus, list) or not versus or not all(isinstance(name, str) for name in versus):
        raise bad("test.versus must name an optimizer or a list of them")
    test = HypothesisTest(kind=block["kind"], subject=block["subject"], versus=tuple(versus),
                          **{key: block[key] for key in ("metric", "better", "where", "alpha", "min_seeds",
                                                         "reference_metric", "curve_metric") if key in block},
                          fraction=block.get("fraction", 0.0), noise=block.get("noise", ""),
                          rates=tuple(block.get("rates") or ()), label_sets=tuple(block.get("label_sets") or ()))
    _check_common(test, bad)
    _check_kind(test, block, bad)
    return test


def _check_common(test: HypothesisTest, bad) -> None:
    if test.metric not in METRICS:
        raise bad(f"test.metric must be one of {', '.join(METRICS)}")
    if test.better not in ("higher", "lower"):
        raise bad("test.better must be 'higher' or 'lower'")
    if isinstance(test.alpha, bool) or not isinstance(test.alpha, (int, float)) or not 0 < test.alpha < 1:
        raise bad("test.alpha must be a number between 0 and 1")
    if isinstance(test.min_seeds, bool) or not isinstance(test.min_seeds, int) or test.min_seeds < 2:
        raise bad("test.min_seeds must be a whole number >= 2 (a test needs two seeds per arm)")
    if not isinstance(test.where, dict):
        raise bad("test.where must map a column to a value or a list of values")


def _check_kind(test: HypothesisTest, block: dict, bad) -> None:
    if test.kind == "noise_drop" and block.get("noise") == HUMAN:   # real label sets: the set fixes the rate
        if not isinstance(block.get("label_sets"), list) or not test.label_sets or test.rates \
                or not all(isinstance(name, str) for name in test.label_sets):
            raise bad("noise_drop with test.noise: human needs test.label_sets (a list of label sets, e.g. "
                      "[aggre, worst]) and no test.rates")
    elif test.kind == "noise_drop":
        if not isinstance(block.get("noise"), str) or not isinstance(block.get("rates"), list) or not test.rates \
                or not all(isinstance(rate, (int, float)) and 0 < rate < 1 for rate in test.rates) or test.label_sets:
            raise bad("noise_drop needs test.noise (a noise kind) and test.rates (a list of rates in (0, 1)); "
                      "test.label_sets only with test.noise: human")
    if test.kind == "epochs_to_fraction_of_reference":
        if isinstance(test.fraction, bool) or not isinstance(test.fraction, (int, float)) or not 0 < test.fraction <= 1:
            raise bad("epochs_to_fraction_of_reference needs test.fraction in (0, 1]")
        if test.reference_metric not in METRICS:
            raise bad(f"test.reference_metric must be one of {', '.join(METRICS)}")
