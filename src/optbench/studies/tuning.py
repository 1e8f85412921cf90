"""Fair learning-rate / weight-decay tuning: the per-optimizer log grid, selection on validation, tuned configs.

Every optimizer gets the same treatment: its default `optimizer.lr` and `optimizer.weight_decay`
(conf/optimizer/<name>.yaml) times the study's `tune.lr_factors` and `tune.weight_decay_factors`
(a log grid), the same short budget and seeds. A default weight decay of 0 (Adam: coupled L2 is off
on purpose) stays 0: scaling 0 gives nothing to search. For Muon, `lr` and `weight_decay` are its
Muon group's; its built-in AdamW groups (`adamw_lr`, `adamw_wd`) keep their defaults.

`select_tuned(...)` reads summary.json of every completed tuning run, averages the selection metric
over seeds per (optimizer, lr, weight decay) cell, picks the best cell per optimizer (validation
accuracy, never test) and writes `conf/optimizer/tuned/<name>.yaml`: a full optimizer config with the
winning values and a header naming the study, the grid, the winning accuracy and the date. Main
studies use it with `python src/study.py STUDY --tuned` (or `optimizer=tuned/<name>` by hand).
"""

import datetime
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from optbench.errors import ConfigError, DamagedRunFile
from optbench.hydra_glue import format_value
from optbench.rundir import FINAL_STATUSES, RunDir
from optbench.studies.spec import Study

TUNED_GROUP = "tuned"    # conf/optimizer/tuned/<name>.yaml
SELECTION_METRICS = {    # tune.select_on -> where it lives in summary.json
    "val_acc_best": ("best", "val/acc"),    # best validation accuracy over the epochs (default)
    "final_val_acc": ("final", "val/acc"),  # validation accuracy after the last epoch
}


def grid_values(defaults: DictConfig, tune: dict) -> dict[str, list[str]]:
    """`optimizer.lr` and `optimizer.weight_decay` values for one optimizer: its default times each factor."""
    values = {}
    for key, factors_key in (("lr", "lr_factors"), ("weight_decay", "weight_decay_factors")):
        default = OmegaConf.select(defaults, key)
        factors = tune.get(factors_key) or [1]
        if default is None or float(default) == 0.0:
            continue  # nothing to scale (Adam's weight decay is 0 on purpose)
        scaled = [format_value(float(default) * float(factor)) for factor in factors]
        values[f"optimizer.{key}"] = list(dict.fromkeys(scaled))  # unique, in grid order
    return values


@dataclass(frozen=True)
class Cell:
    """The runs of one optimizer at one (lr, weight decay) point of the grid."""

    optimizer: str
    lr: float
    weight_decay: float | None
    scores: tuple[float, ...]   # the selection metric of each finished seed

    @property
    def mean(self) -> float:
        return sum(self.scores) / len(self.scores)


def read_score(run_dir: Path, select_on: str) -> float | None:
    """The selection metric of a finished run (0 for a diverged one, which loses fairly); None while it is
    unfinished, missing or unreadable."""
    try:
        summary = RunDir(run_dir).read_summary()
    except DamagedRunFile:
        return None
    if summary is None or summary.get("status") not in FINAL_STATUSES:
        return None
    section, key = SELECTION_METRICS[select_on]
    record = summary.get(section) or {}
    if summary["status"] == "diverged" or key not in record:
        return 0.0
    return float(record[key])


def collect_cells(runs: list[tuple[dict, Path]], select_on: str) -> tuple[list[Cell], int]:
    """`runs`: (composed optimizer node as a dict, run dir). Cells of the finished runs, and how many are unfinished."""
    scores: dict[tuple, list[float]] = defaultdict(list)
    unfinished = 0
    for optimizer, run_dir in runs:
        score = read_score(run_dir, select_on)
        if score is None:
            unfinished += 1
            continue
        scores[(optimizer["name"], float(optimizer["lr"]), optimizer.get("weight_decay"))].append(score)
    cells = [Cell(name, lr, weight_decay, tuple(values)) for (name, lr, weight_decay), values in scores.items()]
    return cells, unfinished


def best_cells(cells: list[Cell]) -> dict[str, Cell]:
    """The best cell per optimizer by mean score; ties go to the smaller learning rate (the safer step)."""
    best: dict[str, Cell] = {}
    for cell in sorted(cells, key=lambda cell: (cell.optimizer, cell.lr)):
        if cell.optimizer not in best or cell.mean > best[cell.optimizer].mean:
            best[cell.optimizer] = cell
    return best


def tuned_config_text(default_node: dict, cell: Cell, study: Study, select_on: str, unfinished: int,
                      today: datetime.date | None = None) -> str:
    """The YAML of conf/optimizer/tuned/<name>.yaml: the default node with the winning lr and weight decay."""
    node = dict(default_node)
    node["lr"] = cell.lr
    if cell.weight_decay is not None:
        node["weight_decay"] = cell.weight_decay
    tune = study.tune or {}
    grid = study.grid
    header = [
        f"# Tuned {cell.optimizer}: written by `python src/study.py --select-tuned {study.id}` on "
        f"{(today or datetime.date.today()).isoformat()}.",
        f"# Study {study.id} ({study.source.name}): lr x {tune.get('lr_factors')}, weight_decay x "
        f"{tune.get('weight_decay_factors')} around conf/optimizer/{cell.optimizer}.yaml,",
        f"# {grid.get('epochs')} epochs, seeds {grid.get('seed')}, dataset {grid.get('dataset')}, "
        f"overrides {list(study.overrides)}.",
        f"# Selected on {select_on} (validation, never test): {cell.mean:.4f}, mean of {len(cell.scores)} seed(s)"
        + (f"; {unfinished} tuning run(s) of the study were unfinished and not considered." if unfinished else "."),
        f"# Use: python src/study.py STUDY --tuned  (or optimizer={TUNED_GROUP}/{cell.optimizer}; name stays "
        f"'{cell.optimizer}' so the hypotheses' tests still find it).",
    ]
    return "\n".join(header) + "\n" + OmegaConf.to_yaml(OmegaConf.create(node))


def write_tuned_configs(best: dict[str, Cell], default_nodes: dict[str, dict], study: Study, conf_dir: Path,
                        select_on: str, unfinished: int) -> list[Path]:
    if not best:
        raise ConfigError(f"study {study.id}: no finished tuning run to select from: run `python src/study.py "
                          f"{study.id}` first")
    folder = Path(conf_dir) / "optimizer" / TUNED_GROUP
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, cell in sorted(best.items()):
        path = folder / f"{name}.yaml"
        path.write_text(tuned_config_text(default_nodes[name], cell, study, select_on, unfinished))
        written.append(path)
    return written


def tuned_values(conf_dir: Path, optimizer: str) -> dict[str, list[str]]:
    """The overrides `--tuned` adds for one optimizer: its tuned config, plus its lr and weight decay spelled
    out so the run directory differs from the default-hyperparameter run's (and says what was used)."""
    path = Path(conf_dir) / "optimizer" / TUNED_GROUP / f"{optimizer}.yaml"
    if not path.is_file():
        raise ConfigError(f"no tuned config for {optimizer} ({path}): run `python src/study.py tune_lr_wd`, "
                          "then `python src/study.py --select-tuned tune_lr_wd`")
    node = OmegaConf.load(path)
    values = {"optimizer": [f"{TUNED_GROUP}/{optimizer}"], "optimizer.lr": [format_value(float(node.lr))]}
    if OmegaConf.select(node, "weight_decay") is not None:
        values["optimizer.weight_decay"] = [format_value(float(node.weight_decay))]
    return values
