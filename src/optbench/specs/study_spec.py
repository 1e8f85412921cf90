"""Study files as data: experiments/studies/*.yaml and the `study:` blocks of hypothesis files.

A study lives in `experiments/studies/<name>.yaml`, or as the `study:` block of a hypothesis file in
`experiments/hypotheses/` (then its id, title and statement are the hypothesis's). Its `grid` names
optimizers, seeds, datasets, noise settings and epochs; `overrides` adds Hydra overrides; `tune`
(tuning studies) says how to search: `method: grid` (a log grid of factors around each optimizer's
default lr and weight decay) or `method: quasirandom` (trials drawn from a search space file under
experiments/search_spaces/, the top-k rerun on more seeds); `tuned_by` (main studies) names the
tuning study whose winners it runs with; `hypotheses` (main studies) lists the ids of the hypotheses it
tests (`tested_hypotheses`: the aggregator's `--study` judges only those, on its planned settings; `[]` none, the key
left out every one); `fidelity`
names a ladder of budgets (rungs, each a set of budget overrides such as epochs or model.width, optionally with
its own `tuned_by` and `seeds`), planned as rungs x grid; `newcomers` (a main study with `tuned_by`) names the
grid's optimizers tuned here with the tuning study's protocol while the others keep its published winners, and
`published` a folder of published run records whose runs of this study are copied in instead of trained
(studies/published.py; docs/your-own-optimizer.md). A key the format does not know is refused, so a typo cannot be
silently ignored. `find_study(name)` and `load_study(path)` return a frozen `Study`; plan.py expands it into runs. A
hypothesis study carries its parsed `HypothesisTest` (specs/hypothesis_spec.py).
Standard library and PyYAML only.
"""

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from optbench.errors import ConfigError, did_you_mean
from optbench.formats.metrics_log import VAL_ACC, VAL_LOSS
from optbench.formats.tuning_record import LOSS_SELECTIONS
from optbench.identity import is_numbers_free
from optbench.specs.hypothesis_spec import HUMAN, HYPOTHESIS_KEYS, HypothesisTest, parse_hypothesis

REPO = Path(__file__).resolve().parents[3]
EXPERIMENTS_DIR = REPO / "experiments"
GRID_KEYS = ("optimizer", "seed", "dataset", "noise", "epochs")  # every study grid names these
STUDY_KEYS = (
    "id",
    "title",
    "statement",
    "grid",
    "overrides",
    "tune",
    "tuned_by",
    "hypotheses",
    "hypotheses_from",
    "fidelity",
    "newcomers",
    "published",
)  # a study file's keys
# A rung may change what a run costs, never what is compared: these keys (and their sub-keys) are the question.
QUESTION_KEYS = ("optimizer", "seed", "dataset", "noise", "paths", "device", "logger")


@dataclass(frozen=True)
class Study:
    id: str
    title: str
    statement: str
    source: Path  # the YAML file it was read from
    grid: dict
    overrides: tuple[str, ...] = ()  # extra Hydra overrides for every run (e.g. dataset.train_subset=10000)
    tune: "Tuning | None" = None  # tuning studies: how the search runs and selects
    test: HypothesisTest | None = None  # a hypothesis's test, when the study is a hypothesis's
    tuned_by: str = ""  # main studies: the tuning study run first, whose winners these runs use
    # main studies: the ids of the hypotheses it tests; () none (`hypotheses: []`), None not said (every one)
    hypotheses: tuple[str, ...] | None = None
    # the folder whose hypotheses/ holds them (repository-relative, e.g. experiments/cross-workload); "": experiments/
    hypotheses_from: str = ""
    rungs: tuple["Rung", ...] = ()  # a fidelity ladder: the grid is planned once per rung
    fidelity_resolution: float | None = None  # points: the gap a faithful rung must resolve (None: the default)
    # optimizers of the grid tuned here with the `tuned_by` study's protocol, beside the others' published winners
    newcomers: tuple[str, ...] = ()
    published: str = ""  # a folder of published run records (docs/cpu-study/runs): planned runs found there are copied


# ---------------------------------------------------------------- the `fidelity:` block


@dataclass(frozen=True)
class Rung:
    """One budget of a fidelity ladder: Hydra overrides of budget keys, and the tuning study it uses."""

    overrides: tuple[str, ...]  # `epochs=2`, `model.width=32`: applied on top of the grid and `overrides`
    tuned_by: str = ""  # a tuning study for this rung only (default: the study's `tuned_by`)
    # the rung's own seeds (default: the grid's); a rung tuned at its own budget runs seeds its tuning did not
    # select on. Not part of the label: the same rung on other seeds asks the same question.
    seeds: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        """`epochs=8`; a rung with its own tuning study names it (`epochs=8,tuned_by=tune_8`): the same budget
        tuned at another budget is another rung."""
        return ",".join((*self.overrides, *((f"tuned_by={self.tuned_by}",) if self.tuned_by else ())))

    def value_of(self, key: str) -> str | None:
        return next(
            (override.split("=", 1)[1] for override in self.overrides if override.split("=", 1)[0] == key), None
        )


def parse_fidelity_resolution(path: Path, block) -> float | None:
    """`resolution:` beside the axis (`{epochs: [2, 4, 8, 16], resolution: 2}`) or the rungs
    (`{rungs: [...], resolution: 2}`): in points, the largest change of an order a rung may show and still be
    called faithful (docs/fidelity.md). None when not given."""
    if not isinstance(block, dict) or "resolution" not in block:
        return None
    value = block["resolution"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 100:
        raise ConfigError(
            f"{path}: fidelity: resolution is a gap in points between 0 and 100, e.g. resolution: 2, "
            f"not {value!r} (docs/fidelity.md)"
        )
    return float(value)


def parse_fidelity(path: Path, block) -> tuple[Rung, ...]:
    """`{epochs: [2, 4, 8, 16]}` (one axis, one rung per value) or a list of rungs, each a mapping of budget
    keys with an optional `tuned_by` and `seeds`: `[{epochs: 8}, {epochs: 8, tuned_by: tune_8, seeds: [2, 3, 6]}]`;
    either may carry a `resolution` (`{rungs: [...], resolution: 2}` for the list form)."""

    def bad(problem: str) -> ConfigError:
        return ConfigError(f"{path}: fidelity: {problem} (docs/fidelity.md)")

    if isinstance(block, dict):
        block = {key: value for key, value in block.items() if key != "resolution"}
        if set(block) == {"rungs"}:
            block = block["rungs"]
    if isinstance(block, dict):
        if len(block) != 1 or not isinstance(next(iter(block.values())), list):
            raise bad(
                "the axis form names one key and its list of values, e.g. {epochs: [2, 4, 8, 16]}; "
                "several keys per rung go in the list form [{epochs: 8, model.width: 32}, ...]"
            )
        key, values = next(iter(block.items()))
        block = [{key: value} for value in values]
    if not isinstance(block, list) or len(block) < 2 or not all(isinstance(rung, dict) and rung for rung in block):
        raise bad("give at least two rungs: {epochs: [2, 4, 8, 16]} or a list of mappings of budget keys")
    rungs = tuple(_parse_rung(rung, bad) for rung in block)
    repeated = sorted({rung.label for rung in rungs if [other.label for other in rungs].count(rung.label) > 1})
    if repeated:
        raise bad(f"the rung {repeated[0]} appears twice")
    return rungs


RUNG_OWN_KEYS = ("tuned_by", "seeds")  # a rung's keys that are not budget overrides


def _parse_rung(entry: dict, bad) -> Rung:
    budget = {str(key): value for key, value in entry.items() if key not in RUNG_OWN_KEYS}
    if not budget:
        raise bad(f"the rung {entry} names no budget key (epochs, model.width, dataset.train_subset, ...)")
    for key, value in budget.items():
        if key == "seed":
            raise bad(
                "seed changes what is compared, not the budget: a rung's own seeds are a list under seeds:, "
                "e.g. {epochs: 8, seeds: [2, 3, 4, 5, 6, 7]}"
            )
        if key.split(".")[0] in QUESTION_KEYS or key.startswith(("hydra", "~", "+")):
            raise bad(
                f"{key} changes what is compared, not the budget: a rung sets keys such as epochs, "
                "model.width or dataset.train_subset"
            )
        if isinstance(value, (dict, list)) or value is None:
            raise bad(f"{key}: one value per rung, not {value!r}")
        if key in WHOLE_BUDGET_KEYS and not _whole(value):
            raise bad(f"{key}: {value!r} is not a whole number: give whole numbers >= 1, e.g. {{{key}: [2, 4, 8, 16]}}")
    tuned_by = entry.get("tuned_by") or ""
    if not isinstance(tuned_by, str):
        raise bad(f"tuned_by names one tuning study, not {tuned_by!r}")
    return Rung(
        tuple(f"{key}={_yaml_scalar(value)}" for key, value in sorted(budget.items())),
        tuned_by,
        _rung_seeds(entry.get("seeds"), bad),
    )


def _rung_seeds(value, bad) -> tuple[int, ...]:
    """A rung's `seeds:` as a tuple of distinct whole numbers >= 0 (`2,3,6` from the command line too); () when
    not given (the grid's seeds)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [part.strip() for part in value.strip("[]").split(",") if part.strip()]
        value = [int(part) if part.isdigit() else part for part in value]
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0 for seed in value)
    ):
        raise bad(f"seeds: a list of whole numbers >= 0, e.g. seeds: [2, 3, 4, 5, 6, 7], not {value!r}")
    if len(set(value)) != len(value):
        raise bad(f"seeds: {value!r} repeats a seed")
    return tuple(value)


# Budget keys counted in whole units (planning turns epochs into a number): `.nan`, `two`, `2.5` are refused here,
# not met as a traceback when the rung is planned.
WHOLE_BUDGET_KEYS = ("epochs", "model.width", "dataset.train_subset", "batch_size")


def _whole(value) -> bool:
    """An int >= 1 as YAML reads one (not a bool) or as the command line gives one ("8")."""
    if isinstance(value, str):
        return value.strip().isdigit() and int(value) >= 1
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _yaml_scalar(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def study_at_rung(study: Study, rung: Rung) -> Study:
    """The study as it runs at one rung: the rung's epochs (and its own seeds, when it names them) in the grid,
    its other keys as overrides (replacing the study's own override of the same key), no rungs left."""
    epochs = rung.value_of("epochs")
    grid = {**study.grid, "epochs": int(epochs)} if epochs is not None else dict(study.grid)
    if rung.seeds:
        grid["seed"] = list(rung.seeds)
    rung_keys = {override.split("=", 1)[0] for override in rung.overrides if not override.startswith("epochs=")}
    kept = tuple(override for override in study.overrides if override.split("=", 1)[0] not in rung_keys)
    added = tuple(override for override in rung.overrides if not override.startswith("epochs="))
    return replace(study, grid=grid, overrides=kept + added, rungs=(), tuned_by=rung.tuned_by or study.tuned_by)


def only_rung(study: Study, overrides: list[str]) -> Study:
    """The study at one rung given on the command line (`--rung epochs=200`): one of its ladder's, or a new one
    (a 200-epoch GPU rung of a CPU ladder), checked as a rung in the file is; a rung of the ladder keeps its
    tuned_by."""
    source = f"--rung {' '.join(overrides)}"
    malformed = [override for override in overrides if "=" not in override]
    if malformed:
        raise ConfigError(f"{source}: give KEY=VALUE budget overrides, e.g. --rung epochs=200 (docs/fidelity.md)")
    rung = _parse_rung(
        dict(override.split("=", 1) for override in overrides),
        lambda problem: ConfigError(f"{source}: {problem} (docs/fidelity.md)"),
    )
    known = next((existing for existing in study.rungs if existing.label == rung.label), None)
    return replace(study, rungs=(known or rung,))


def newcomer_tuning(tuning_study: Study, newcomers: tuple[str, ...]) -> Study:
    """The tuning study as it runs for a main study's newcomers only: its protocol (tune block, seeds, epochs,
    overrides) on those optimizers, under its own id (`tune_cpu_demo+radam`), so its record and selection never
    touch the baselines' winners."""
    return replace(
        tuning_study,
        id=f"{tuning_study.id}+{'+'.join(newcomers)}",
        grid={**tuning_study.grid, "optimizer": list(newcomers)},
    )


def tuning_studies_of(study: Study) -> list[str]:
    """The tuning studies a main study uses: its own `tuned_by`, then each rung's, in order, once each."""
    return list(dict.fromkeys(name for name in [study.tuned_by, *(rung.tuned_by for rung in study.rungs)] if name))


# ---------------------------------------------------------------- the `tune:` block

TUNE_METHODS = ("grid", "quasirandom")
SELECTION_METRICS = {  # tune.select_on -> where it lives in summary.json: validation, never test
    "val_acc_best": ("best", VAL_ACC),  # best validation accuracy over the epochs (default)
    "final_val_acc": ("final", VAL_ACC),  # validation accuracy after the last epoch
    "val_loss_best": ("best", VAL_LOSS),  # a language model's: validation loss at its best evaluation (lower wins)
    "final_val_loss": ("final", VAL_LOSS),  # validation loss after the last evaluation
}
LOWER_IS_BETTER_SELECTION = LOSS_SELECTIONS  # the tuning record reads its scores' range from the same list


def selection_sign(select_on: str) -> int:
    """+1 where a higher score wins (accuracy), -1 where a lower one does (loss): ranks multiply by it."""
    return -1 if select_on in LOWER_IS_BETTER_SELECTION else 1


TUNE_KEYS = {
    "grid": ("method", "lr_factors", "weight_decay_factors", "select_on", "output"),
    "quasirandom": (
        "method",
        "space",
        "sampler",
        "sampler_seed",
        "trials",
        "top_k",
        "confirm_seeds",
        "select_on",
        "output",
    ),
}


@dataclass(frozen=True)
class Tuning:
    """A tuning study's `tune:` block with its defaults applied (docs/studies.md, Fair tuning)."""

    method: str = "grid"
    select_on: str = "val_acc_best"
    output: str = "tuned"  # conf/optimizer/<output>/<name>.yaml
    lr_factors: tuple[float, ...] = (1,)  # grid: x the default lr
    weight_decay_factors: tuple[float, ...] = (1,)
    space: str = ""  # quasirandom: experiments/search_spaces/<space>.yaml (or a path)
    sampler: str = "sobol"  # sobol | halton (scipy.stats.qmc, scrambled)
    sampler_seed: int = 0
    trials: int = 0  # per optimizer, on each of the grid's seeds
    top_k: int = 0  # the best trials rerun on confirm_seeds
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
    settings: dict[str, Any] = {key: tuple(value) if isinstance(value, list) else value for key, value in block.items()}
    tuning = Tuning(**settings)  # the settings' values are checked below
    if tuning.select_on not in SELECTION_METRICS:
        raise bad(f"select_on must be one of {', '.join(SELECTION_METRICS)}")
    if not str(tuning.output).startswith("tuned") or ".." in str(tuning.output):
        raise bad("output must be a folder under conf/optimizer/ starting with tuned (tuned, tuned/cpu_demo)")
    if method == "quasirandom":
        _check_quasirandom(tuning, bad)
    for key in ("lr_factors", "weight_decay_factors"):
        factors = getattr(tuning, key)
        if not isinstance(factors, tuple) or not all(
            isinstance(factor, (int, float)) and not isinstance(factor, bool) and math.isfinite(factor) and factor > 0
            for factor in factors
        ):
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
    hint = did_you_mean(name, [study.id for study in studies])
    raise ConfigError(f"unknown study '{name}': {hint}choose {known} (or a path to a study .yaml)")


def load_study(path: Path) -> Study:
    document = _read_yaml(path)
    if "study" in document:  # a hypothesis file: the run grid lives in its `study:` block
        _refuse_unknown(path, document, HYPOTHESIS_KEYS)
        block = document["study"] or {}
        _refuse_unknown(path, block, ("grid", "overrides"), "study.")
        test = parse_hypothesis(path).test if "test" in document else None
        return _build_study(
            path,
            {
                "id": document.get("id"),
                "title": document.get("title"),
                "statement": document.get("statement"),
                "test": test,
                **block,
            },
        )
    _refuse_unknown(path, document, STUDY_KEYS)
    return _build_study(path, document)


def _refuse_unknown(path: Path, document: dict, known: tuple[str, ...], prefix: str = "") -> None:
    unknown = sorted(set(document) - set(known))
    if unknown:
        raise ConfigError(
            f"{path}: unknown key `{prefix}{unknown[0]}`: a study file has "
            f"{', '.join(prefix + key for key in known)} (experiments/README.md)"
        )


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
        raise ConfigError(
            f"{path}: unknown grid key {unknown[0]}: use {', '.join(GRID_KEYS)}; other settings go in `overrides`"
        )
    tune = parse_tuning(path, fields["tune"]) if fields.get("tune") is not None else None
    if tune and tune.method == "quasirandom" and set(tune.confirm_seeds) & {int(seed) for seed in _seeds(grid)}:
        raise ConfigError(f"{path}: tune.confirm_seeds repeat a grid seed: confirm on new seeds")
    if tune and fields.get("tuned_by"):
        raise ConfigError(f"{path}: a tuning study cannot be tuned_by another")
    tested = fields.get("hypotheses")  # None: not said; [] says none
    if tested is not None and (not isinstance(tested, list) or not all(isinstance(name, str) for name in tested)):
        raise ConfigError(f"{path}: hypotheses must list hypothesis ids (e.g. [H1, H2])")
    hypotheses_from = parse_hypotheses_from(path, fields.get("hypotheses_from"))
    rungs = parse_fidelity(path, fields["fidelity"]) if fields.get("fidelity") is not None else ()
    resolution = parse_fidelity_resolution(path, fields.get("fidelity"))
    if tune and rungs:
        raise ConfigError(
            f"{path}: a tuning study has no fidelity ladder: give each rung its own tuning study (a rung's tuned_by)"
        )
    if any(rung.tuned_by for rung in rungs) and not fields.get("tuned_by") and not all(rung.tuned_by for rung in rungs):
        raise ConfigError(
            f"{path}: some rungs name their tuned_by and others none: give the study a tuned_by "
            "for the others, or every rung its own"
        )
    newcomers = parse_newcomers(path, fields)
    published = fields.get("published") or ""
    if not isinstance(published, str):
        raise ConfigError(f"{path}: published names one folder of published run records, e.g. docs/cpu-study/runs")
    return Study(
        id=str(fields["id"]),
        title=str(fields.get("title") or fields["id"]),
        statement=" ".join(str(fields["statement"]).split()),
        source=path,
        grid=grid,
        overrides=tuple(fields.get("overrides") or ()),
        tune=tune,
        test=fields.get("test"),
        tuned_by=str(fields.get("tuned_by") or ""),
        hypotheses=None if tested is None else tuple(tested),
        hypotheses_from=hypotheses_from,
        rungs=rungs,
        fidelity_resolution=resolution,
        newcomers=newcomers,
        published=published,
    )


def parse_hypotheses_from(path: Path, folder) -> str:
    """`hypotheses_from: experiments/cross-workload`: a folder with a hypotheses/ of its own, for hypotheses kept
    apart from experiments/hypotheses (whose published verdicts they must not join)."""
    if folder is None:
        return ""
    if not isinstance(folder, str) or not (REPO / folder / "hypotheses").is_dir():
        raise ConfigError(
            f"{path}: hypotheses_from names a folder of the repository holding hypotheses/ "
            f"(e.g. experiments/cross-workload), not {folder!r}"
        )
    return folder


def hypotheses_folder(study: Study, experiments_dir: Path) -> Path:
    """Where the study's hypotheses are: its `hypotheses_from` folder, else `experiments_dir`."""
    return REPO / study.hypotheses_from if study.hypotheses_from else experiments_dir


def parse_newcomers(path: Path, fields: dict) -> tuple[str, ...]:
    """`newcomers: [radam]`: optimizers of the grid, in a main study tuned by one tuning study (no ladder)."""
    newcomers = fields.get("newcomers") or []
    if not isinstance(newcomers, list) or not all(isinstance(name, str) for name in newcomers):
        raise ConfigError(f"{path}: newcomers lists optimizers of the grid, e.g. newcomers: [radam]")
    outside = [name for name in newcomers if name not in [str(name) for name in _as_list(fields["grid"]["optimizer"])]]
    if outside:
        raise ConfigError(f"{path}: newcomers names {outside[0]}, which the grid's optimizers do not: add it there")
    if newcomers and (not fields.get("tuned_by") or fields.get("fidelity") is not None):
        raise ConfigError(
            f"{path}: newcomers are tuned with the protocol of the study's tuned_by: give tuned_by (one tuning "
            "study, no fidelity ladder)"
        )
    return tuple(newcomers)


@dataclass(frozen=True)
class PlannedSetting:
    """One dataset x noise setting a study plans, and the optimizers it runs there."""

    dataset: str
    noise: str  # "none", "symmetric", ..., "human"
    rate: float  # 0.0 for clean labels; NaN for a human label set (its realised rate is known once run)
    optimizers: tuple[str, ...]
    label_set: str = ""  # noise "human": the label set (aggre, worst, ...)
    # (config key, value) pairs every run of the setting has: its epochs and the study's overrides that change a
    # run's numbers (model.width=16), so a folder holding the same optimizers at other budgets (a fidelity ladder
    # beside the study) keeps them out of its family
    budget: tuple[tuple[str, object], ...] = ()


def planned_settings(study: Study) -> list[PlannedSetting]:
    """The study's grid as settings (what a verdict's family is when the folder holds this study's runs); a
    fidelity ladder's, at each of its rungs."""
    if study.rungs:
        return [setting for rung in study.rungs for setting in planned_settings(study_at_rung(study, rung))]
    return [
        replace(setting, budget=(("epochs", epochs), *study_budget(study)))
        for epochs in _as_list(study.grid["epochs"])
        for setting in noise_settings(study)
    ]


def study_budget(study: Study) -> tuple[tuple[str, object], ...]:
    """The study's overrides that change a run's numbers, as (key, value): `dataset.root=...` and other
    numbers-free keys are left out."""
    pairs = [override.lstrip("+").split("=", 1) for override in study.overrides if "=" in override]
    return tuple((key, yaml.safe_load(value)) for key, value in pairs if not is_numbers_free(key))


@dataclass(frozen=True)
class NoiseEntry:
    """One entry of a study's `grid.noise`, parsed once for the planner of sweeps (studies/plan.py) and the plan
    of settings a verdict's family is (`noise_settings`): `none`, a name, or
    `{name: symmetric, rate: [0.2, 0.4], optimizer: [lion]}`; human label noise names its label sets, and may point
    at a local copy of the label file: `{name: human, label_set: [aggre, worst], label_file: PATH}`."""

    name: str
    rates: tuple = ()  # as written (a sweep spells them for Hydra as given); () for none or a name without rates
    label_sets: tuple[str, ...] = ()
    label_file: str | None = None  # md5-checked, not part of a run's identity
    optimizers: tuple[str, ...] | None = None  # the grid's optimizers that run this setting; None: every one


def noise_entries(grid: dict) -> list[NoiseEntry]:
    """The grid's noise settings; ConfigError for human noise without label sets or an optimizer outside the grid."""
    entries = []
    for written in _as_list(grid["noise"]):
        entry = {"name": written} if isinstance(written, str) else dict(written)
        name = str(entry["name"])
        if name == HUMAN and "label_set" not in entry:
            raise ConfigError("grid.noise entry human needs label_set: e.g. {name: human, label_set: [aggre, worst]}")
        chosen = tuple(str(optimizer) for optimizer in _as_list(entry["optimizer"])) if "optimizer" in entry else None
        outside = sorted(set(chosen or ()) - {str(optimizer) for optimizer in _as_list(grid["optimizer"])})
        if outside:
            raise ConfigError(f"grid.noise entry {name}: optimizer {outside[0]} is not in the grid's optimizers")
        entries.append(
            NoiseEntry(
                name,
                tuple(_as_list(entry["rate"])) if "rate" in entry and name != "none" else (),
                tuple(str(label_set) for label_set in _as_list(entry.get("label_set", []))),
                str(entry["label_file"]) if "label_file" in entry else None,
                chosen,
            )
        )
    return entries


def noise_settings(study: Study) -> list[PlannedSetting]:
    """The grid's dataset x noise settings, each with the optimizers it runs."""
    every = tuple(str(name) for name in _as_list(study.grid["optimizer"]))
    datasets = [str(dataset) for dataset in _as_list(study.grid["dataset"])]
    settings = []
    for entry in noise_entries(study.grid):
        chosen = entry.optimizers or every
        if entry.name == HUMAN:
            settings += [
                PlannedSetting(dataset, HUMAN, math.nan, chosen, label_set)
                for dataset in datasets
                for label_set in entry.label_sets
            ]
            continue
        rates = [float(rate) for rate in entry.rates] or [0.0]  # none, or a name without a rate: clean labels
        settings += [PlannedSetting(dataset, entry.name, rate, chosen) for dataset in datasets for rate in rates]
    return settings


def tested_hypotheses(study: Study, known: list[str]) -> list[str]:
    """The ids of the hypotheses a study tests, among `known` (the hypothesis files' ids): a hypothesis's own study
    tests it; a study file its `hypotheses:` list (`[]`: none, as a fidelity ladder that measures its rungs); a study
    that says nothing, every one. An id no file defines is refused, naming the known ones."""
    if study.test is not None:
        return [study.id]
    if study.hypotheses is None:
        return list(known)
    unknown = [name for name in study.hypotheses if name not in known]
    if unknown:
        raise ConfigError(
            f"{study.source}: hypotheses names {unknown[0]}, which no hypothesis file defines "
            f"(known: {', '.join(known) or 'none'})"
        )
    return list(study.hypotheses)


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def seeds_shared_with_tuning(study: Study, tuning_study: Study) -> list[int]:
    """The main study's seeds that its tuning study also ran: hyperparameters chosen on a seed and then
    tested on it make the comparison post-selection (optimistic for the tuned optimizers). In a fidelity ladder,
    the seeds of the rungs that run with that tuning's winners (a rung's own `seeds:`, else the grid's)."""
    assert tuning_study.tune is not None  # its caller checked it is a tuning study
    tuned_on = {int(seed) for seed in _seeds(tuning_study.grid)} | set(tuning_study.tune.confirm_seeds)
    grid_seeds = {int(seed) for seed in _seeds(study.grid)}
    if not study.rungs:
        return sorted(tuned_on & grid_seeds)
    runs_with_it = [rung for rung in study.rungs if (rung.tuned_by or study.tuned_by) == tuning_study.id]
    return sorted(tuned_on & {int(seed) for rung in runs_with_it for seed in (rung.seeds or grid_seeds)})


def _seeds(grid: dict) -> list:
    return list(grid["seed"]) if isinstance(grid["seed"], (list, tuple)) else [grid["seed"]]
