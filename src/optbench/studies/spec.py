"""Study files as data: experiments/studies/*.yaml and the `study:` blocks of hypothesis files.

A study lives in `experiments/studies/<name>.yaml`, or as the `study:` block of a hypothesis file in
`experiments/hypotheses/` (then its id, title and statement are the hypothesis's). Its `grid` names
optimizers, seeds, datasets, noise settings and epochs; `overrides` adds Hydra overrides; `tune`
(tuning studies) adds a per-optimizer log grid of learning rate and weight decay. A key the format does
not know is refused, so a typo cannot be silently ignored. `find_study(name)` and `load_study(path)`
return a frozen `Study`; plan.py expands it into runs. Standard library and PyYAML only.
"""

from dataclasses import dataclass
from pathlib import Path

import yaml

from optbench.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]
EXPERIMENTS_DIR = REPO / "experiments"
GRID_KEYS = ("optimizer", "seed", "dataset", "noise", "epochs")  # every study grid names these
STUDY_KEYS = ("id", "title", "statement", "grid", "overrides", "tune")   # a study file's keys
HYPOTHESIS_KEYS = ("id", "title", "statement", "test", "study")           # a hypothesis file's keys


@dataclass(frozen=True)
class Study:
    id: str
    title: str
    statement: str
    source: Path                  # the YAML file it was read from
    grid: dict
    overrides: tuple[str, ...] = ()   # extra Hydra overrides for every run (e.g. dataset.train_subset=10000)
    tune: dict | None = None          # tuning studies: lr_factors, weight_decay_factors, select_on
    test: dict | None = None          # a hypothesis's `test:` block, when the study is a hypothesis's


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
        return _build_study(path, {"id": document.get("id"), "title": document.get("title"),
                                   "statement": document.get("statement"), "test": document.get("test"), **block})
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
    return Study(id=str(fields["id"]), title=str(fields.get("title") or fields["id"]),
                 statement=" ".join(str(fields["statement"]).split()), source=path, grid=grid,
                 overrides=tuple(fields.get("overrides") or ()), tune=fields.get("tune"), test=fields.get("test"))
