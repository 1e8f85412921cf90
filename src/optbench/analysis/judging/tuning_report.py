"""Tuning records: what each tuning study tried, what it cost, which runs it owns, where its winners sit.

After selecting tuned hyperparameters the study runner writes one JSON file per tuning study at
`<results_dir>/tuning-<study id>.json`. `read_tuning(results_dir)` finds every such file below the
results folder (recursively) and returns the studies, the resolved run directories they list and
warnings. Those run directories are tuning trials, not the study's runs: the pipeline sets them aside
before loading, so they enter no main table, test, verdict or figure (even a trial whose directory a
main study shares: its score chose the winner, so it is biased upward). A file that does not parse
(formats/tuning_record.py's DamagedRunFile: not JSON, a field missing, of the wrong type, not finite or out
of range, a newer format) is one warning naming the file and the field, and is otherwise ignored (any runs it
lists then stay in the main comparison). `tuning_table(studies)` gives one row per (study,
optimizer): trials, runs, epochs trained, device-hours (summed from the listed runs' wall times) and
devices, the winning values, the winner's validation score over its seeds, and any edge warning. Each study's
`setting` is what its trials ran but what a tuning varies (the optimizer's values, the seed, the budget), read
from one trial's record: two tunings' winners compare (fidelity.tuned_settings) only where it is the same.
This module only reads and summarises; analysis/writing/figures/tuning.py draws the search and
report_tuning.py writes the section.

The file's format (its name, format version and schema, `TuningRecord`, and the one reader and writer) is
optbench/formats/tuning_record.py's; the study runner writes through the same module, and this module and the
figures read the record's attributes, never the file's keys.
"""

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from optbench.analysis.groups import REPLICATE_KEYS
from optbench.analysis.load import number, read_config
from optbench.errors import DamagedRunFile
from optbench.formats import tuning_record
from optbench.formats.tuning_record import Bounds, Budget, OptimizerTuning, TuningRecord
from optbench.identity import is_numbers_free
from optbench.registry import workloads
from optbench.specs.study_spec import selection_sign

# A winner within this fraction of the searched range (in the scale's own units: decades for log) of a
# bound may have a better value beyond it: the search should have gone further.
EDGE_FRACTION = 0.1
EDGE_MARKER = "at edge of search space"
IGNORED = "ignored (any runs it lists stay in the main comparison)"
BUDGET_KEYS = ("epochs",)  # what tunings at several budgets differ in; every other setting must be alike
WORKLOAD_KEY = "workload"


@dataclass
class TuningStudy:
    source: str  # the JSON file, as found below the results folder
    record: TuningRecord  # its checked content (formats/tuning_record.py)
    run_dirs: frozenset[Path]  # resolved run directories its trials list
    edges: dict[str, list[str]]  # per optimizer: the winner's values at an edge of the space, as sentences
    # what its trials ran but the optimizer's values, the seed and the budget: sorted (key, value text) pairs,
    # the workload named; () when no trial's config can be read (trial_setting)
    setting: tuple[tuple[str, str], ...] = ()

    @property
    def workload(self) -> str:
        return dict(self.setting).get(WORKLOAD_KEY, "")

    @property
    def name(self) -> str:
        return self.record.study

    @property
    def optimizers(self) -> dict[str, OptimizerTuning]:
        return self.record.optimizers

    @property
    def selection_seeds(self) -> frozenset[int]:
        """The seeds its winners were selected on: the trial seeds and the confirm seeds."""
        return frozenset(int(seed) for seed in (*self.record.budget.trial_seeds, *self.record.budget.confirm_seeds))


@dataclass
class TuningRecords:
    studies: list[TuningStudy]
    warnings: list[str]

    @property
    def run_dirs(self) -> frozenset[Path]:
        return frozenset().union(*(study.run_dirs for study in self.studies))

    def seeds_tuned_on(self) -> dict[str, set[int]]:
        """Per optimizer, every seed a tuning trial ran: main runs on those seeds are tested post-selection."""
        seeds: dict[str, set[int]] = {}
        for study in self.studies:
            for name, entry in study.optimizers.items():
                seeds.setdefault(name, set()).update(run.seed for run in entry.listed_runs if run.seed is not None)
        return seeds


def read_tuning(results_dir: Path, skip: Path | None = None) -> TuningRecords:
    """Every tuning record below `results_dir`; a damaged one is a warning naming it (and what is wrong), ignored."""
    studies, warnings = [], []
    for path in tuning_record.find_records(results_dir, skip):
        source = path.relative_to(results_dir).as_posix()
        try:
            study = read_tuning_file(path, source)
        except DamagedRunFile as error:
            warnings.append(f"{error}; {IGNORED}")
            continue
        studies.append(study)
        warnings.extend(study_warnings(study))
    return TuningRecords(studies, warnings + budget_warnings(studies))


def budget_text(budget: Budget) -> str:
    """'8 trials at 4 epochs' (a grid: 'a grid at 4 epochs'): what one optimizer's tuning could spend."""
    trials = "a grid" if budget.trials is None else f"{budget.trials} trials"
    return f"{trials} at {listed_text(budget.epochs)} epochs"


def budget_warnings(studies: list[TuningStudy]) -> list[str]:
    """One line when the optimizers were tuned with different budgets (a newcomer tuned with 4 trials beside
    baselines tuned with 8): the comparison then favours the arm that searched more. Each optimizer's budgets
    are those of every study that tuned it, so a fidelity ladder tuning all of them at each rung agrees."""
    budgets: dict[str, set[str]] = {}
    for study in studies:
        for name in study.optimizers:
            budgets.setdefault(name, set()).add(budget_text(study.record.budget))
    if len({frozenset(texts) for texts in budgets.values()}) <= 1:
        return []
    each = "; ".join(f"{name}: {', '.join(sorted(texts))}" for name, texts in sorted(budgets.items()))
    return [f"the optimizers were tuned with different budgets ({each}): the arm that searched more is favoured"]


def read_tuning_file(path: Path, source: str) -> TuningStudy:
    """One checked tuning file; DamagedRunFile naming the file and the field when it is off the schema."""
    record = tuning_record.read(path, shown_as=source)  # named as the aggregator's other warnings name it
    run_dirs = frozenset((path.parent / run_dir).resolve() for run_dir in record.run_dirs)
    edges = {name: winner_edges(entry) for name, entry in record.optimizers.items()}
    return TuningStudy(source=source, record=record, run_dirs=run_dirs, edges=edges, setting=trial_setting(run_dirs))


def trial_setting(run_dirs) -> tuple[tuple[str, str], ...]:
    """The settings the first readable trial ran (its record, else its Hydra config), less what a tuning varies
    (optimizer.*, the seed, BUDGET_KEYS) and what changes no number; the workload named (older CIFAR runs name
    none: the default). () when no trial's config can be read."""
    for run_dir in sorted(run_dirs):
        config, _ = read_config(run_dir, [])
        if config:
            break
    else:
        return ()
    kept = {
        key: repr(value)
        for key, value in config.items()
        if not (is_numbers_free(key) or key in REPLICATE_KEYS or key in BUDGET_KEYS or key.startswith("optimizer."))
    }
    return tuple(sorted({**kept, WORKLOAD_KEY: config.get(WORKLOAD_KEY) or workloads.DEFAULT}.items()))


# ---- edges and cost --------------------------------------------------------------------------------


def winner_edges(entry: OptimizerTuning) -> list[str]:
    """The runner's `edges` when the file has them, else this module's rule on the winner's values."""
    if entry.edges is not None:
        return list(entry.edges)
    values = entry.winner.values if entry.winner else {}
    return [text for key, bounds in entry.space.items() if (text := edge_text(key, values.get(key), bounds))]


def edge_text(key: str, value: float | None, bounds: Bounds) -> str:
    """'optimizer.lr = 1.02e-05 sits at the low edge of [1e-05, 0.001] (log): widen the range', or ''."""
    scale = bounds.scale
    low, high = bounds.ends
    value = number(value)
    if not all(math.isfinite(item) for item in (value, low, high)) or low >= high or (scale == "log" and low <= 0):
        return ""  # nothing searched, or no winner: no edge to speak of
    if scale == "grid":
        position = 0.0 if value <= low else 1.0 if value >= high else 0.5  # an end of the grid, or inside it
    elif scale == "log":
        position = (math.log10(value) - math.log10(low)) / (math.log10(high) - math.log10(low)) if value > 0 else 0.0
    else:
        position = (value - low) / (high - low)
    side = "low" if position <= EDGE_FRACTION else "high" if position >= 1 - EDGE_FRACTION else ""
    fix = "extend the grid" if scale == "grid" else "widen the range"
    return f"{key} = {value:.3g} sits at the {side} edge of [{low:g}, {high:g}] ({scale}): {fix}" if side else ""


def run_totals(entry: OptimizerTuning) -> dict:
    """runs, epochs trained, device-hours and devices, from the runs the trials list."""
    runs = entry.listed_runs
    return {
        "runs": len(runs),
        "epochs_trained": sum(run.epochs_done or 0 for run in runs),
        "device_hours": sum(run.wall_time_s or 0.0 for run in runs) / 3600,
        "devices": ", ".join(sorted({run.device for run in runs if run.device})),
    }


def study_warnings(study: TuningStudy) -> list[str]:
    """Winners at an edge of the space, and totals in the file that its listed runs do not add up to."""
    warnings = []
    for name, entry in study.optimizers.items():
        warnings += [f"{study.source}, {name}: {EDGE_MARKER}: {text}" for text in study.edges[name]]
        totals = run_totals(entry)
        stated_totals = {"runs": entry.runs, "epochs_trained": entry.epochs_trained, "device_hours": entry.device_hours}
        for key, stated in stated_totals.items():
            # device_hours in the file may be rounded: 5 % or 0.01 h apart is agreement
            if stated is not None and not math.isclose(stated, totals[key], rel_tol=0.05, abs_tol=0.01):
                warnings.append(
                    f"{study.source}, {name}: the file says {key} {stated:g}, its listed runs add up to "
                    f"{totals[key]:.4g}; the tuning table uses the listed runs"
                )
    return warnings


# ---- the table -------------------------------------------------------------------------------------


def tuning_table(studies: list[TuningStudy]) -> pd.DataFrame:
    """One row per (study, optimizer): cost, winner and edge, as numbers (tables/tuning.csv)."""
    rows = [optimizer_row(study, name, entry) for study in studies for name, entry in study.optimizers.items()]
    return pd.DataFrame(rows)


def optimizer_row(study: TuningStudy, name: str, entry: OptimizerTuning) -> dict:
    winner = entry.winner
    values = winner.values if winner else {}
    return {
        "study": study.name,
        "file": study.source,
        "optimizer": name,
        "method": study.record.method,
        "select_on": study.record.select_on,
        "trials": len(entry.trials),
        **run_totals(entry),
        "winner": ", ".join(f"{key}={value_text(value)}" for key, value in values.items()),
        "winner_mean": number(winner and winner.mean),
        "winner_sd": number(winner and winner.sd),
        "winner_n": len(winner.seeds or winner.scores) if winner else 0,
        "edge": "; ".join(study.edges[name]),
    }


def score_text(mean: float, sd: float, n: int, loss: bool = False, unit_in_cell: bool = False) -> str:
    """'42.00 ± 1.00 (n=3)': the winner's validation score over its seeds, in %; a loss (a language model's
    select_on: val_loss_best) as itself, '1.952 ± 0.010 nats (n=3)'. `unit_in_cell`: the column mixes both, so
    each cell names its unit."""
    if not math.isfinite(mean):
        return "n/a"
    if loss:
        spread = f" ± {sd:.3f}" if math.isfinite(sd) else ""
        return f"{mean:.3f}{spread} nats (n={n})"
    spread = f" ± {100 * sd:.2f}" if math.isfinite(sd) else ""
    return f"{100 * mean:.2f}{spread}{' %' if unit_in_cell else ''} (n={n})"


def value_text(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def tuning_display(table: pd.DataFrame) -> pd.DataFrame:
    """The Markdown columns of `tuning_table`: accuracy scores in %, a loss as a loss (its column then says no
    unit: each cell does), the edge marked."""
    losses = [selection_sign(str(select_on)) < 0 for select_on in table["select_on"]]
    score_column = "validation score" if any(losses) else "validation score (%)"
    shown = pd.DataFrame(
        {
            "study": table["study"],
            "optimizer": table["optimizer"],
            "trials": table["trials"],
            "runs": table["runs"],
            "epochs trained": table["epochs_trained"],
            "device-hours": table["device_hours"].map(lambda hours: f"{hours:.3g}"),
            "devices": table["devices"],
            "winner": [text.replace("optimizer.", "") or "none (no trial finished)" for text in table["winner"]],
            score_column: [
                score_text(mean, sd, n, loss, unit_in_cell=any(losses))
                for mean, sd, n, loss in zip(table["winner_mean"], table["winner_sd"], table["winner_n"], losses)
            ],
            "edge": [f"**{EDGE_MARKER}**: {text}" if text else "" for text in table["edge"]],
        }
    )
    return shown


# ---- the protocol in one sentence ------------------------------------------------------------------


def listed_text(numbers: tuple[int, ...]) -> str:
    return ", ".join(str(item) for item in numbers) or "?"


def protocol_sentence(study: TuningStudy) -> str:
    """'Quasirandom search (sobol sampler, seed 0): 8 trials x 4 epochs per optimizer on seed 0; ...'."""
    record, budget = study.record, study.record.budget
    sampler = f" ({record.sampler} sampler, seed {record.sampler_seed})" if record.sampler else ""
    rerun = ""
    if budget.top_k and budget.confirm_seeds:
        rerun = f"; the top {budget.top_k} trials rerun on seeds {listed_text(budget.confirm_seeds)}"
    return (
        f"{(record.method or 'unnamed').capitalize()} search{sampler}: {budget_trials(budget)} "
        f"trials x {listed_text(budget.epochs)} epochs per optimizer on seed {listed_text(budget.trial_seeds)}"
        f"{rerun}; the winner is chosen on validation (`{record.select_on or '?'}`), never on test."
    )


def budget_trials(budget: Budget) -> str:
    return "?" if budget.trials is None else str(budget.trials)
