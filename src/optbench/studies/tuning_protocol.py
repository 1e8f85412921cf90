"""Fair tuning: score the trials, pick the winners on validation, write the tuned configs and the record.

Two methods, chosen by a tuning study's `tune.method` (optbench/specs/study_spec.py parses the block):
- `grid` (the first protocol, kept): every optimizer's default `optimizer.lr` and
  `optimizer.weight_decay` (conf/optimizer/<name>.yaml) times `lr_factors` x `weight_decay_factors`;
  a default weight decay of 0 stays 0. The winner is the grid point with the best mean score over seeds.
- `quasirandom` (AlgoPerf's external tuning): `trials` points per optimizer from a search space file
  (studies/search_space.py) on the grid's seeds; the `top_k` trials by that score are rerun on
  `confirm_seeds`; the winner is the top-k trial with the best mean over all its seeds, so one seed's
  luck cannot pick it. Ties go to the earlier trial (deterministic).
Scores are validation accuracy (`select_on`), never test; a diverged run scores 0 and loses fairly.

`select(...)` returns per optimizer the winner and the trials behind it; `write_tuned_configs` writes
`conf/optimizer/<output>/<name>.yaml` (config/config_path.py tuned_config_path: for an optimizer of one's own, its
own folder's `optimizer/<output>/`) (the default config with the winning values and a provenance
header: study, space, trials, seeds, scores, date), and `write_record` writes
`<results_dir>/tuning-<study id>.json` through optbench/formats/tuning_record.py (the format, which the aggregator
reads through too) for the tuning table, the figure and the edge warning. Main studies use the winners with
`--tuned` or `tuned_by:` (`tuned_values` spells out every tuned key so the runs get their own directory).
"""

import datetime
import os
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from optbench.config import config_path
from optbench.config.hydra_glue import format_value
from optbench.config.plain import plain_dict
from optbench.errors import ConfigError, DamagedRunFile
from optbench.fileio import write_bytes_atomically
from optbench.formats import run_summary, tuning_record
from optbench.registry import optimizers
from optbench.specs.study_spec import EXPERIMENTS_DIR, SELECTION_METRICS, Study, Tuning, selection_sign
from optbench.studies import search_space

SEARCHED = ("lr", "weight_decay")  # what the grid method scales


def grid_values(defaults: DictConfig, tune: Tuning) -> dict[str, list[str]]:
    """`optimizer.lr` and `optimizer.weight_decay` values for one optimizer: its default times each factor."""
    values = {}
    spec = optimizers.spec_of_config(defaults)
    for key, factors in (("lr", tune.lr_factors), ("weight_decay", tune.weight_decay_factors)):
        default = OmegaConf.select(defaults, key)
        if default is None or float(default) == 0.0:
            continue  # nothing to scale (Adam's weight decay is 0 on purpose)
        if key == "lr" and spec is not None and spec.lr_free:
            continue  # learning-rate-free (Prodigy): lr stays 1.0, the grid searches weight decay only
        scaled = [format_value(float(default) * float(factor)) for factor in factors or [1]]
        values[f"optimizer.{key}"] = list(dict.fromkeys(scaled))  # unique, in grid order
    return values


# What a diverged trial scores: the worst accuracy, or (a loss) a uniform guess over a language model's 65
# characters, ln 65 = 4.17 nats, above any trial that learned anything. A finite number, so the record stays JSON.
DIVERGED_SCORE = {1: 0.0, -1: 4.17}


def read_score(run_dir: Path, select_on: str) -> float | None:
    """The selection metric of a finished run (0 for a diverged one); None while it is unfinished, missing
    or unreadable."""
    return score_of(_finished_summary(run_dir), select_on)


def score_of(summary: run_summary.Summary | None, select_on: str) -> float | None:
    if summary is None:
        return None
    section, key = SELECTION_METRICS[select_on]
    record = getattr(summary, section) or {}  # the epoch record the selection metric lives in: best or final
    if summary.status == run_summary.DIVERGED or record.get(key) is None:
        return DIVERGED_SCORE[selection_sign(select_on)]
    return float(record[key])


def _finished_summary(run_dir: Path) -> run_summary.Summary | None:
    try:
        summary = run_summary.read(run_dir)
    except DamagedRunFile:
        return None
    return summary if summary is not None and summary.finished else None


# ---------------------------------------------------------------- what was tried, and what won


@dataclass
class Point:
    """One point of the search (a grid cell or a quasi-random trial) and its runs on every seed."""

    values: dict[str, float]  # override key -> value: {"optimizer.lr": 0.001, ...}
    index: int  # trial number, or the cell's place in the grid
    runs: list = field(default_factory=list)  # PlannedRun of this point, every seed
    first_scores: list[float] = field(default_factory=list)  # on the grid's seeds (ranks the trials)
    confirm_scores: list[float] = field(default_factory=list)  # on the confirm seeds (top-k only)
    top_k: bool = False

    @property
    def scores(self) -> list[float]:
        return self.first_scores + self.confirm_scores

    @property
    def mean(self) -> float:
        return statistics.fmean(self.scores)


@dataclass
class Selection:
    """One optimizer's tuning: every point, the winner, and the warnings about its search space."""

    optimizer: str
    points: list[Point]
    winner: Point
    edges: list[str]
    space: dict  # key -> {low, high, scale} or {values, scale: grid}


def point_values(run, keys) -> dict[str, float]:
    return {
        f"optimizer.{key}": float(run.cfg.optimizer[key])
        for key in keys
        if OmegaConf.select(run.cfg.optimizer, key) is not None
    }


def group_points(runs: list, study: Study) -> dict[str, list[Point]]:
    """Runs -> points per optimizer; raises when a run is unfinished (a winner needs every score)."""
    assert study.tune is not None  # a tuning study
    scores = {run.run_dir: read_score(run.run_dir, study.tune.select_on) for run in runs}
    unfinished = [run for run in runs if scores[run.run_dir] is None]
    if unfinished:
        raise ConfigError(
            f"study {study.id}: {len(unfinished)} tuning run(s) not finished ({unfinished[0].run_dir}): "
            f"run `python src/study.py {study.id}` until every run is done, then select"
        )
    finished = {directory: score for directory, score in scores.items() if score is not None}  # all of them
    confirm_seeds = set(study.tune.confirm_seeds)
    points: dict[tuple, Point] = {}
    for run in runs:
        index = run.trial.index if run.trial is not None else None
        values = point_values(run, _keys(run))
        key = (run.cfg.optimizer.name, index if index is not None else tuple(sorted(values.items())))
        point = points.setdefault(key, Point(values, index if index is not None else len(points)))
        point.runs.append(run)
        (point.confirm_scores if run.cfg.seed in confirm_seeds else point.first_scores).append(finished[run.run_dir])
    by_optimizer = defaultdict(list)
    for (optimizer, _), point in points.items():
        point.top_k = bool(point.confirm_scores)
        by_optimizer[optimizer].append(point)
    return by_optimizer


def _keys(run) -> list[str]:
    return [key.removeprefix("optimizer.") for key in run.trial.values] if run.trial is not None else list(SEARCHED)


def top_trials(runs: list, select_on: str, k: int) -> list[search_space.Trial] | None:
    """The k trials with the best mean score on their seeds; None while any of them is unfinished."""
    scores: dict[int, list[float]] = defaultdict(list)
    trials = {}
    for run in runs:
        score = read_score(run.run_dir, select_on)
        if score is None:
            return None
        scores[run.trial.index].append(score)
        trials[run.trial.index] = run.trial
    sign = selection_sign(select_on)
    ranked = sorted(scores, key=lambda index: (-sign * statistics.fmean(scores[index]), index))
    return [trials[index] for index in ranked[:k]]


def winner(points: list[Point], select_on: str = "val_acc_best") -> Point:
    """Quasi-random: the best mean over all seeds among the top-k; grid: the best mean point (highest accuracy,
    lowest loss). Ties go to the earlier trial, then (grid) the smaller learning rate: the safer step."""
    candidates = [point for point in points if point.top_k] or points
    sign = selection_sign(select_on)
    return min(candidates, key=lambda point: (-sign * point.mean, point.index, point.values.get("optimizer.lr", 0)))


def select(runs: list, study: Study, defaults: dict[str, dict]) -> dict[str, Selection]:
    """`runs`: every PlannedRun of the tuning study; `defaults`: each optimizer's default config node."""
    spaces = _spaces(study, defaults)
    selections = {}
    for optimizer, points in sorted(group_points(runs, study).items()):
        best = winner(points, study.tune.select_on if study.tune else "val_acc_best")
        ranges = spaces[optimizer]
        edge_warnings = (
            search_space.edges(ranges, best.values) if isinstance(ranges, tuple) else grid_edges(ranges, best.values)
        )
        space = {f"optimizer.{r.key}": r.as_dict() for r in ranges} if isinstance(ranges, tuple) else ranges
        selections[optimizer] = Selection(optimizer, points, best, edge_warnings, space)
    return selections


def _spaces(study: Study, defaults: dict[str, dict]) -> dict:
    assert study.tune is not None  # a tuning study
    if study.tune.method == "quasirandom":
        return search_space.load_space(study.tune.space_path(EXPERIMENTS_DIR))
    return {
        name: {
            key: {"values": [float(value) for value in values], "scale": "grid"}
            for key, values in grid_values(OmegaConf.create(node), study.tune).items()
        }
        for name, node in defaults.items()
    }


def grid_edges(space: dict, values: dict[str, float]) -> list[str]:
    """A grid winner on the first or last value of a dimension that had more than one."""
    warnings = []
    for key, dimension in space.items():
        grid = sorted(dimension["values"])
        value = values.get(key)
        if len(grid) > 1 and value is not None and value in (grid[0], grid[-1]):
            side = "low" if value == grid[0] else "high"
            warnings.append(
                f"{key} = {value:g} sits at the {side} edge of the grid {[f'{v:g}' for v in grid]}: widen the grid"
            )
    return warnings


# ---------------------------------------------------------------- writing the outcome


def tuned_config_text(
    default_node: dict,
    selection: Selection,
    study: Study,
    today: datetime.date | None = None,
    default_file: str = "",
) -> str:
    """The YAML of conf/optimizer/<output>/<name>.yaml: the default node with the winning values."""
    node = dict(default_node)
    for key, value in selection.winner.values.items():
        node[key.removeprefix("optimizer.")] = value
    best = selection.winner
    tune = study.tune
    assert tune is not None  # a tuning study
    searched = (
        (
            f"{tune.trials} {tune.sampler} trials (seed {tune.sampler_seed}) from search space {tune.space}, "
            f"top {tune.top_k} rerun on seeds {list(tune.confirm_seeds)}"
        )
        if tune.method == "quasirandom"
        else f"grid lr x {list(tune.lr_factors)}, weight_decay x {list(tune.weight_decay_factors)} around the defaults"
    )
    header = [
        f"# Tuned {selection.optimizer}: written by `python src/study.py --select-tuned {study.id}` on "
        f"{(today or datetime.date.today()).isoformat()}.",
        f"# Study {study.id} ({study.source.name}): {searched};",
        f"# {study.grid.get('epochs')} epochs, seeds {study.grid.get('seed')}, dataset {study.grid.get('dataset')}, "
        f"overrides {list(study.overrides)}.",
        f"# Selected on {tune.select_on} (validation, never test): {best.mean:.4f}, mean of {len(best.scores)} "
        f"seed(s) {[round(score, 4) for score in best.scores]}"
        + (f"; trial {best.index}." if tune.method == "quasirandom" else "."),
        *(f"# Warning: {warning}." for warning in selection.edges),
        f"# Use: python src/study.py STUDY --tuned  (or optimizer={tune.output}/{selection.optimizer}; name stays "
        f"'{selection.optimizer}' so the hypotheses' tests still find it).",
    ]
    tuned_keys = {key.removeprefix("optimizer.") for key in selection.winner.values}
    body = OmegaConf.to_yaml(OmegaConf.create(node))
    default_file = default_file or f"conf/optimizer/{selection.optimizer}.yaml"
    return "\n".join(header) + "\n" + with_origins(body, tuned_keys, default_file, study.id)


def with_origins(body: str, tuned_keys: set[str], default_file: str, study_id: str) -> str:
    """Each top-level value line of `body` with a comment saying where its value comes from, as every
    default in conf/ carries one: the tuning study, or the optimizer's default file (which says why)."""
    lines = []
    for line in body.splitlines():
        key, colon, value = line.partition(":")
        if colon and value.strip() and not line.startswith((" ", "-")):
            origin = f"tuned by {study_id}" if key in tuned_keys else f"default, {default_file}"
            line = f"{line}  # {origin}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def write_tuned_configs(
    selections: dict[str, Selection], default_nodes: dict[str, dict], study: Study, conf_dir: Path
) -> list[Path]:
    """Write each tuned config; one whose content is unchanged but for the date is left as it is."""
    assert study.tune is not None  # a tuning study
    written = []
    for name, selection in sorted(selections.items()):
        path = config_path.tuned_config_path(conf_dir, study.tune.output, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = tuned_config_text(default_nodes[name], selection, study, default_file=default_label(conf_dir, name))
        if not path.is_file() or _undated(path.read_text()) != _undated(text):
            write_bytes_atomically(path, text.encode())
        written.append(path)
    return written


def default_label(conf_dir: Path, optimizer: str) -> str:
    """How a tuned config names its optimizer's default file: conf/optimizer/<name>.yaml for the package's (as the
    published tuned configs say), the file's own path for an optimizer of one's own."""
    path = config_path.option_file(conf_dir, "optimizer", optimizer)
    return str(path) if path is not None and config_path.is_own(path, conf_dir) else f"conf/optimizer/{optimizer}.yaml"


def _undated(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("# Tuned "))


def record(selections: dict[str, Selection], study: Study, results_dir: Path) -> tuning_record.TuningRecord:
    """The tuning record the aggregator reads, built as its format's schema (optbench/formats/tuning_record.py)."""
    tune = study.tune
    assert tune is not None  # a tuning study
    quasirandom = tune.method == "quasirandom"
    return tuning_record.TuningRecord(
        version=tuning_record.FORMAT,
        study=study.id,
        method=tune.method,
        sampler=tune.sampler if quasirandom else None,
        sampler_seed=tune.sampler_seed if quasirandom else None,
        select_on=tune.select_on,
        date=datetime.date.today().isoformat(),
        budget=budget_of(study),
        optimizers={
            name: _optimizer_record(selection, results_dir, tune.select_on) for name, selection in selections.items()
        },
    )


def budget_of(study: Study) -> tuning_record.Budget:
    """A tuning study's budget per optimizer, as its record states it: trials, epochs, seeds, top-k reruns."""
    tune = study.tune
    assert tune is not None  # a tuning study
    quasirandom = tune.method == "quasirandom"
    return tuning_record.Budget(
        trials=tune.trials if quasirandom else None,
        epochs=_grid_values(study.grid.get("epochs")),
        trial_seeds=_grid_values(study.grid.get("seed")),
        confirm_seeds=tuple(tune.confirm_seeds),
        top_k=tune.top_k if quasirandom else None,
    )


def _grid_values(value) -> tuple[int, ...]:
    """A study grid's value (a number or a list of them; None when the grid leaves it out) as a tuple."""
    if value is None:
        return ()
    return tuple(int(item) for item in value) if isinstance(value, (list, tuple)) else (int(value),)


def _optimizer_record(selection: Selection, results_dir: Path, select_on: str) -> tuning_record.OptimizerTuning:
    best = selection.winner
    trials = tuple(
        tuning_record.Trial(
            index=point.index,
            values=point.values,
            score=statistics.fmean(point.first_scores),
            top_k=point.top_k,
            runs=tuple(_run_record(run, results_dir, select_on) for run in point.runs),
        )
        for point in selection.points
    )
    runs = [run for trial in trials for run in trial.runs]
    return tuning_record.OptimizerTuning(
        space={key: _bounds(dimension) for key, dimension in selection.space.items()},
        trials=trials,
        winner=tuning_record.Winner(
            index=best.index,
            values=best.values,
            mean=best.mean,
            sd=statistics.stdev(best.scores) if len(best.scores) > 1 else None,
            seeds=tuple(int(run.cfg.seed) for run in best.runs),
            scores=tuple(best.scores),
        ),
        edges=tuple(selection.edges),
        runs=len(runs),
        epochs_trained=sum(run.epochs_done or 0 for run in runs),
        device_hours=sum(run.wall_time_s or 0.0 for run in runs) / 3600,
        devices=tuple(sorted({run.device for run in runs if run.device})),
    )


def _bounds(dimension: dict) -> tuning_record.Bounds:
    """A searched dimension ({low, high, scale} or {values, scale: grid}) as the record's Bounds."""
    if dimension["scale"] == "grid":
        return tuning_record.Bounds("grid", values=tuple(dimension["values"]))
    return tuning_record.Bounds(dimension["scale"], low=dimension["low"], high=dimension["high"])


def _run_record(run, results_dir: Path, select_on: str) -> tuning_record.Run:
    summary = _finished_summary(run.run_dir)
    return tuning_record.Run(
        run_dir=os.path.relpath(run.run_dir, results_dir),
        seed=int(run.cfg.seed),
        status=summary.status if summary else None,
        score=score_of(summary, select_on),
        wall_time_s=float(summary and summary.wall_time_s or 0.0),
        epochs_done=summary.epochs_done if summary else 0,
        device=summary.device if summary else None,
    )


def write_record(selections: dict[str, Selection], study: Study, results_dir: Path) -> Path:
    return tuning_record.write(results_dir, record(selections, study, Path(results_dir)))


def tuned_values(
    conf_dir: Path, optimizer: str, output: str = "tuned", defaults_stand_in: bool = False
) -> dict[str, list[str]]:
    """The overrides `--tuned` adds for one optimizer: its tuned config, plus every value that differs from
    the default spelled out, so the run directory differs from the default run's (and says what was used).
    `defaults_stand_in`: an optimizer not tuned yet gets no overrides (a dry run before its tuning ends)."""
    path = config_path.tuned_config_path(conf_dir, output, optimizer)
    if not path.is_file() and defaults_stand_in:
        return {}
    if not path.is_file():
        raise ConfigError(
            f"no tuned config for {optimizer} ({path}): run the tuning study, then "
            "`python src/study.py --select-tuned <tuning study>`"
        )
    tuned = plain_dict(OmegaConf.load(path))
    default = plain_dict(OmegaConf.load(config_path.option_file(conf_dir, "optimizer", optimizer) or path))
    values = {"optimizer": [f"{output}/{optimizer}"], "optimizer.lr": [format_value(float(tuned["lr"]))]}
    for key, value in tuned.items():
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and (key in SEARCHED or value != default.get(key))
        ):
            values[f"optimizer.{key}"] = [format_value(float(value))]
    return values
