"""Tuning-budget curves from tuning records: each optimizer's expected best validation score after k trials, the
ranking at several budgets, and whether pairs of optimizers swap places as the budget grows.

Input: tuning records (formats/tuning_record.py, `tuning-<study>.json` beside the runs). Each trial counts by its
score on the trial seeds only (the record's `budget.trial_seeds`: the mean over them, as the protocol ranks
trials); the reruns of the top-k trials on the confirm seeds are left out, since only the winners got them and
they would lift exactly the best trials. A trial whose run diverged or failed is a result, never dropped (the
house rule of robust_tables.scored_runs): it counts with the selection metric its summary.json recorded, else at
chance (1/K for an accuracy, ln K nats for a loss, K the run's classes); the record's own score for such a run
is the protocol's stand-in (0, or ln 65 nats), not what the run recorded, so the summary is read. A trial whose
run has not ended (interrupted, running, not there) is not a result yet: it is counted in `not_ended` and left
out, with a warning.

`read_searches(folders)` finds every record below the folders and returns one `Search` per (workload, study, optimizer);
`curve_table` gives E_k for k = 1..n with intervals (analysis/statistics/expected_max.py), `rank_table` the order
at the budgets BUDGETS (k <= n), and `pair_table` each pair's difference at the smallest and largest budget, so a
reversal is called only where both ends are resolved. Directions come from the record's `select_on`: a loss
(char_lm's val_loss_best) is better low.
"""

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from optbench.analysis.groups import optimizer_rank
from optbench.analysis.statistics.expected_max import curve_interval, difference_interval
from optbench.errors import DamagedRunFile
from optbench.formats import aggregate_tables, run_summary, tuning_record
from optbench.formats.tuning_record import OptimizerTuning, TuningRecord
from optbench.registry import workloads
from optbench.specs.study_spec import SELECTION_METRICS, selection_sign

BUDGETS = (1, 4, 8, 16, 32)  # the trials at which the ranking is read (issue 55)
ENDED_BADLY = (run_summary.DIVERGED, run_summary.FAILED)


@dataclass
class Search:
    """One optimizer's trials in one tuning study: the scores each trial counts with, and how they were found."""

    workload: str
    study: str
    source: str  # the record, as given
    optimizer: str
    select_on: str
    higher_is_better: bool
    scores: np.ndarray  # one per trial that ended, in trial order
    diverged_or_failed: int = 0  # of those, trials whose run did not complete
    at_chance: int = 0  # of those, trials scored at chance: they recorded no score
    not_ended: int = 0  # trials left out: their run has not ended

    @property
    def trials(self) -> int:
        return len(self.scores)

    @property
    def bounds(self) -> tuple[float, float]:
        return (0.0, 1.0) if self.higher_is_better else (0.0, math.inf)


@dataclass
class Searches:
    searches: list[Search]
    warnings: list[str] = field(default_factory=list)

    @property
    def tuned_workloads(self) -> list[str]:
        return list(dict.fromkeys(search.workload for search in self.searches))

    def missing(self, expected: tuple[str, ...] = workloads.NAMES) -> list[str]:
        """The workloads in `expected` (the registry's, by default) that no record here tuned."""
        return [name for name in expected if name not in self.tuned_workloads]


# ---- reading the records -------------------------------------------------------------------------------


def read_searches(folders: list[Path]) -> Searches:
    """Every tuning record below `folders`, one Search per (workload, study, optimizer); a damaged record is one
    warning and is otherwise ignored. Two records of one study are refused (ValueError): pass one of them."""
    searches: list[Search] = []
    warnings: list[str] = []
    seen: dict[str, Path] = {}
    for folder in folders:
        for path in tuning_record.find_records(folder):
            try:
                record = tuning_record.read(path)
            except DamagedRunFile as error:
                warnings.append(f"{error}; ignored")
                continue
            if record.study in seen:
                raise ValueError(
                    f"two tuning records of study {record.study} ({seen[record.study]}, {path}): pass the folder of one"
                )
            seen[record.study] = path
            found, notes = record_searches(record, path)
            searches += found
            warnings += notes
    return Searches(searches, warnings)


def record_searches(record: TuningRecord, path: Path) -> tuple[list[Search], list[str]]:
    folder = path.parent
    select_on = record.select_on or "val_acc_best"
    workload, classes = workload_facts(record, folder)
    searches, warnings = [], []
    for name in sorted(record.optimizers, key=optimizer_rank):
        search = optimizer_search(record.optimizers[name], record, folder, workload, classes)
        search.optimizer, search.source, search.select_on = name, str(path), select_on
        if search.not_ended:
            warnings.append(
                f"{path}, {name}: {search.not_ended} trial(s) have not ended on the trial seeds and are left out"
            )
        searches.append(search)
    return searches, warnings


def workload_facts(record: TuningRecord, folder: Path) -> tuple[str, int | None]:
    """(the record's workload, its number of classes), from the first trial run's summary.json; without one, the
    workload from the run directory's dataset folder (mnist1d/..., tinyshakespeare/...) and no class count."""
    for entry in record.optimizers.values():
        for run in entry.listed_runs:
            summary = readable_summary(folder / run.run_dir)
            if summary is not None:
                named = (summary.content.get("workload") or {}).get("name") or workloads.DEFAULT
                return named, summary.dataset.num_classes
    first = next((run.run_dir for entry in record.optimizers.values() for run in entry.listed_runs), "")
    return workloads.of_dataset(first.split("/")[0].split("-")[0]).name, None


def readable_summary(run_dir: Path) -> run_summary.Summary | None:
    try:
        return run_summary.read(run_dir)
    except DamagedRunFile:
        return None


def optimizer_search(
    entry: OptimizerTuning, record: TuningRecord, folder: Path, workload: str, classes: int | None
) -> Search:
    select_on = record.select_on or "val_acc_best"
    higher = selection_sign(select_on) > 0
    trial_seeds = set(record.budget.trial_seeds)
    search = Search(workload, record.study, "", "", select_on, higher, np.array([]))
    scores = []
    for trial in entry.trials:
        runs = [run for run in trial.runs if run.seed in trial_seeds] or list(trial.runs[:1])
        if not runs or any(run.status not in run_summary.FINAL_STATUSES + (run_summary.FAILED,) for run in runs):
            search.not_ended += 1
            continue
        counted = [run_score(run, folder, select_on, classes) for run in runs]
        scores.append(float(np.mean([score for score, _ in counted])))
        search.diverged_or_failed += any(run.status in ENDED_BADLY for run in runs)
        search.at_chance += any(chance for _, chance in counted)
    search.scores = np.array(scores)
    return search


def run_score(run: tuning_record.Run, folder: Path, select_on: str, classes: int | None) -> tuple[float, bool]:
    """(the score a trial-seed run counts with, whether that is chance). A completed run: the record's score. A
    diverged or failed one: what its summary recorded, else chance; without the class count, the record's score."""
    if run.status not in ENDED_BADLY and run.score is not None:
        return float(run.score), False
    summary = readable_summary(folder / run.run_dir)
    section, key = SELECTION_METRICS[select_on]
    recorded = (getattr(summary, section, None) or {}).get(key) if summary is not None else None
    if recorded is not None and math.isfinite(recorded):
        return float(recorded), False
    classes = (summary.dataset.num_classes if summary is not None else None) or classes
    if classes:
        return (1.0 / classes if selection_sign(select_on) > 0 else math.log(classes)), True
    return float(run.score if run.score is not None else math.nan), False


# ---- the tables ----------------------------------------------------------------------------------------


def curve_table(searches: list[Search], resamples: int | None = None) -> pd.DataFrame:
    """One row per (workload, study, optimizer, k): E_k and its interval (clipped to the score's range), k = 1..n."""
    rows = []
    for search in searches:
        if not search.trials:
            continue
        extra = {} if resamples is None else {"resamples": resamples}
        estimate, low, high = curve_interval(search.scores, search.higher_is_better, **extra)
        low, high = np.clip(low, *search.bounds), np.clip(high, *search.bounds)
        for k in range(1, search.trials + 1):
            rows.append(
                {
                    **identity(search),
                    "trials": search.trials,
                    "diverged_or_failed": search.diverged_or_failed,
                    "at_chance": search.at_chance,
                    "not_ended": search.not_ended,
                    "k": k,
                    "expected_best": float(estimate[k - 1]),
                    "ci_low": float(low[k - 1]),
                    "ci_high": float(high[k - 1]),
                }
            )
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def identity(search: Search) -> dict:
    return {
        "workload": search.workload,
        "study": search.study,
        "optimizer": search.optimizer,
        "select_on": search.select_on,
        "higher_is_better": search.higher_is_better,
    }


CURVE_COLUMNS = list(aggregate_tables.COLUMNS[aggregate_tables.TUNING_BUDGET])


def rank_table(curves: pd.DataFrame, budgets: tuple[int, ...] = BUDGETS) -> pd.DataFrame:
    """One row per (workload, study, budget k, optimizer): its rank by E_k (1 best, by the score's direction; ties
    share the better rank), at each budget in `budgets` that every optimizer of the study reached (k <= its n);
    `order` spells the ranking and `same_as_first` says whether it is the ranking at the smallest budget."""
    rows = []
    for (workload, study), rows_of_study in curves.groupby(["workload", "study"], sort=False):
        reached = rows_of_study.groupby("optimizer")["trials"].first().min()
        firsts: str | None = None
        for k in [budget for budget in budgets if budget <= reached]:
            at_k = rows_of_study[rows_of_study["k"] == k].copy()
            higher = bool(at_k["higher_is_better"].iloc[0])
            at_k["rank"] = at_k["expected_best"].rank(ascending=not higher, method="min").astype(int)
            at_k = at_k.sort_values(["rank", "optimizer"], key=sort_key)
            order = " > ".join(at_k["optimizer"])
            firsts = order if firsts is None else firsts
            for row in at_k.itertuples():
                rows.append(
                    {
                        "workload": workload,
                        "study": study,
                        "k": k,
                        "rank": row.rank,
                        "optimizer": row.optimizer,
                        "expected_best": row.expected_best,
                        "ci_low": row.ci_low,
                        "ci_high": row.ci_high,
                        "trials": row.trials,
                        "order": order,
                        "same_as_first": order == firsts,
                    }
                )
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


RANK_COLUMNS = list(aggregate_tables.COLUMNS[aggregate_tables.TUNING_BUDGET_RANKS])


def sort_key(column: pd.Series) -> pd.Series:
    return column.map(optimizer_rank) if column.name == "optimizer" else column


def pair_table(searches: list[Search], ranks: pd.DataFrame, resamples: int | None = None) -> pd.DataFrame:
    """Per study and pair of optimizers, at the smallest and the largest budget of `ranks`: the difference in E_k
    (positive: the first is better) with its interval, and whether the two budgets resolve opposite orders (a
    resolved reversal: each end's interval excludes 0, on opposite sides; intervals are per pair, not adjusted for
    the ten pairs)."""
    rows = []
    extra = {} if resamples is None else {"resamples": resamples}
    for (workload, study), study_ranks in ranks.groupby(["workload", "study"], sort=False):
        smallest, largest = int(study_ranks["k"].min()), int(study_ranks["k"].max())
        members = [search for search in searches if search.study == study and search.trials]
        for index, first in enumerate(members):
            for second in members[index + 1 :]:
                ends = {
                    k: difference_interval(first.scores, second.scores, k, first.higher_is_better, **extra)
                    for k in (smallest, largest)
                }
                rows.append(pair_row(workload, study, first.optimizer, second.optimizer, ends, smallest, largest))
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


PAIR_COLUMNS = list(aggregate_tables.COLUMNS[aggregate_tables.TUNING_BUDGET_PAIRS])


def pair_row(workload: str, study: str, first: str, second: str, ends: dict, smallest: int, largest: int) -> dict:
    small, large = ends[smallest], ends[largest]
    return {
        "workload": workload,
        "study": study,
        "first": first,
        "second": second,
        "k_small": smallest,
        "difference_small": small[0],
        "ci_low_small": small[1],
        "ci_high_small": small[2],
        "k_large": largest,
        "difference_large": large[0],
        "ci_low_large": large[1],
        "ci_high_large": large[2],
        "reversal": reversal(small, large),
    }


def side(interval: tuple[float, float, float]) -> int:
    """+1: the first optimizer is resolved better; -1: the second; 0: the interval holds 0 (or is not there)."""
    _, low, high = interval
    return 1 if low > 0 else -1 if high < 0 else 0


def reversal(small: tuple[float, float, float], large: tuple[float, float, float]) -> str:
    """'resolved' when the two budgets resolve opposite orders; 'unresolved' when the point estimates swap but an
    end's interval holds 0; '' when the order does not swap."""
    if side(small) * side(large) == -1:
        return "resolved"
    if small[0] * large[0] < 0:
        return "unresolved"
    return ""
