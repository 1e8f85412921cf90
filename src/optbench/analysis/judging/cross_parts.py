"""Each workload's runs in a cross-workload study: selected from one folder by the study (and rung) that made them.

A cross-workload folder holds every workload's runs side by side, with their tuning trials and, for a part reused
from a published ladder (cpu_fidelity), that ladder's other rungs. `select_parts(runs_dir, spec)` loads the folder
once with the aggregator's loader, tuning trials set aside as the aggregator sets them aside (tuning_report.py; a
trial that is a run of a part's study counts: study_trials.py), and takes, per part, the runs of its study at its
rung as `--study` takes them: the study's planned settings and budget (hypotheses.within_plan) with the values its
tuning study chose (hypothesis_checks.tuned_as, from that study's tuning record in the folder). Every status is kept:
a failed or diverged run is a result, and unfinished runs are counted, not dropped silently. A part with no runs
yet, or whose tuning has left no record here, is named as missing with the reason; one whose grid has runs not
ended yet is shown but neither ranked nor judged (`unended`); the others are labelled by
workload (setting) and optimizer (arm), which is all the cross-workload tables compare.
"""

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from optbench.analysis.headline import Headline, headline_of
from optbench.analysis.judging.hypotheses import within_plan
from optbench.analysis.judging.hypothesis_checks import tuned_as
from optbench.analysis.judging.robust_tables import RESULT_STATUSES
from optbench.analysis.judging.study_trials import as_list, study_runs_among_trials
from optbench.analysis.judging.tuning_report import TuningRecords, TuningStudy, read_tuning, study_warnings
from optbench.analysis.load import load_runs
from optbench.analysis.statistics.sequential_rule import look_seeds
from optbench.analysis.targets import Targets
from optbench.errors import ConfigError
from optbench.formats import decision_record
from optbench.formats.run_summary import COMPLETED
from optbench.specs.cross_workload_spec import CrossWorkload, Part, part_study
from optbench.specs.study_spec import EXPERIMENTS_DIR, Study, planned_settings


@dataclass
class PartRuns:
    """One workload's part: its study at its rung, its tuning record, and its runs (every status)."""

    part: Part
    study: Study  # at the part's rung: no rungs left
    tuning: TuningStudy | None  # the record of the study's tuning (None: none here)
    runs: pd.DataFrame  # labelled: setting = workload, arm = optimizer
    missing: str = ""  # why the part has no result yet; "" when it has one
    notes: list[str] = field(default_factory=list)  # optimizers without a completed run, unfinished runs

    @property
    def workload(self) -> str:
        return self.part.workload

    @property
    def headline(self) -> Headline:
        return headline_of(self.workload)

    @property
    def completed(self) -> pd.DataFrame:
        return self.runs[self.runs["status"] == COMPLETED]

    @property
    def planned_runs(self) -> int:
        """Optimizers x seeds of the study's grid at the rung (sequential looks may add seeds beyond it)."""
        return len(as_list(self.study.grid["optimizer"])) * len(as_list(self.study.grid["seed"]))

    def tuned_on(self) -> dict[str, set[int]]:
        """Per optimizer, the seeds its own tuning study ran (a main run on one is tested post-selection); another
        workload's tuning in the same folder selected nothing here."""
        if self.tuning is None:
            return {}
        return {
            name: {run.seed for run in entry.listed_runs if run.seed is not None}
            for name, entry in self.tuning.optimizers.items()
        }

    def unended(self) -> str:
        """Why the part's grid has not ended ("" when every run it plans has a result): a ranking or a verdict on
        part of a grid would be taken at a sample size nobody fixed, and read as the study's answer."""
        ended = int(self.runs["status"].isin(RESULT_STATUSES).sum())
        if ended >= self.planned_runs:
            return ""
        return f"{ended} of the {self.planned_runs} runs study {self.study.id} plans have ended: judged when all have"

    def ranked(self, optimizers: tuple[str, ...]) -> bool:
        """Its grid has ended and every optimizer has a completed run: the part has a full ranking."""
        return (
            not self.missing and not self.unended() and set(optimizers) <= set(self.completed["optimizer"].astype(str))
        )


@dataclass
class CrossRuns:
    parts: list[PartRuns]
    curves: pd.DataFrame  # one row per (run, epoch) of every run loaded
    tuning: TuningRecords
    records: list[decision_record.DecisionRecord]  # studies run until decided, found in the folder
    warnings: list[str]


def select_parts(runs_dir: Path, spec: CrossWorkload, experiments_dir: Path = EXPERIMENTS_DIR) -> CrossRuns:
    """Every part's runs from `runs_dir` (ConfigError when it is no folder, or its parts' studies are unknown)."""
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        raise ConfigError(f"{runs_dir} is not a folder: give the folder holding the cross-workload runs")
    studies = [part_study(part, experiments_dir) for part in spec.parts]
    tuning = read_tuning(runs_dir)
    own = frozenset().union(
        *(study_runs_among_trials(study, tuning.studies, runs_dir, experiments_dir) for study in studies)
    )
    loaded = load_runs(runs_dir, Targets(), set_aside=tuning.run_dirs - own)
    if not len(loaded.runs) and not loaded.set_aside:
        raise ConfigError(
            f"no run directories (folders holding summary.json or record.json) under {runs_dir}: give the folder "
            "the cross-workload runs were published to, e.g. docs/cross-workload-study/runs"
        )
    warnings: list[str] = []
    records = decision_records(runs_dir, warnings)
    parts = [
        part_runs(part, study, loaded.runs, tuning, spec.optimizers, study_seeds(study, records))
        for part, study in zip(spec.parts, studies)
    ]
    warnings = own_warnings(parts, loaded.warnings) + warnings
    used = {study.tuned_by for study in studies}  # other tunings in the folder (a ladder's other rungs) are not ours
    warnings += [line for entry in tuning.studies if entry.name in used for line in study_warnings(entry)]
    return CrossRuns(parts, loaded.curves, tuning, records, warnings)


def study_seeds(study: Study, records: list[decision_record.DecisionRecord]) -> set[int]:
    """The seeds the study ran: its grid's, and those its last sequential look took (its decision record). A run of
    the same settings on another seed is another study's: a fidelity ladder's top rung shares a main study's
    settings (fidelity_mnist1d's 60-epoch seeds 6-29 beside cross_mnist1d's 0-5) and is not its evidence."""
    own = [int(seed) for seed in as_list(study.grid["seed"])]
    record = next((entry for entry in records if entry.study == study.id and entry.looks_done), None)
    return set(look_seeds(own, record.looks[record.looks_done - 1])) if record else set(own)


def own_warnings(parts: list[PartRuns], warnings: list[str]) -> list[str]:
    """The loader's warnings about the parts' own runs (each names its run id first): a tuning trial still running
    or another study's run beside them is not this report's concern."""
    ids = {str(run_id) for part in parts if len(part.runs) for run_id in part.runs["run_id"]}
    return [warning for warning in warnings if warning.split(": ", 1)[0] in ids]


def decision_records(runs_dir: Path, warnings: list[str]) -> list[decision_record.DecisionRecord]:
    """The decision records of studies run until decided; one that does not parse is a warning, and its hypotheses
    are judged by the fixed design (as the aggregator does)."""
    records = []
    for path in decision_record.find_records(runs_dir):
        try:
            record = decision_record.read(path)
        except ConfigError as error:
            warnings.append(f"{error} (ignored here: its hypotheses are judged by the fixed design)")
            continue
        if record is not None:
            records.append(record)
    return records


def part_runs(
    part: Part, study: Study, runs: pd.DataFrame, tuning: TuningRecords, optimizers: tuple[str, ...], seeds: set[int]
) -> PartRuns:
    """The part's runs: its study's planned settings at its rung, with its tuning's winners, of `optimizers`, on
    the study's own `seeds`."""
    record = next((entry for entry in tuning.studies if entry.name == study.tuned_by), None)
    empty = PartRuns(part, study, record, runs.iloc[0:0])
    where = f"{study.id}" + (f" at {part.rung_text}" if part.rung else "")
    if study.tuned_by and record is None:
        empty.missing = (
            f"its tuning study {study.tuned_by} has no record in the runs folder (tuning not finished, or not "
            "published there): its runs cannot be told from other tunings'"
        )
        return empty
    if not len(runs):
        empty.missing = f"no runs of {where} in the runs folder yet"
        return empty
    winners = {name: entry.winner.values for name, entry in record.optimizers.items() if entry.winner} if record else {}
    mine = tuned_as(within_plan(runs, planned_settings(study)), winners)
    mine = mine[mine["optimizer"].astype(str).isin(optimizers) & mine["seed"].isin(seeds)]
    if not len(mine):
        empty.missing = f"no runs of {where} in the runs folder yet"
        return empty
    labelled = mine.assign(setting=part.workload, arm=mine["optimizer"].astype(str))
    return PartRuns(part, study, record, labelled, notes=part_notes(labelled, optimizers))


def parts_table(parts: list[PartRuns], optimizers: tuple[str, ...]) -> pd.DataFrame:
    """One row per workload: its study, rung and tuning, its runs (every status), completed runs, the runs its
    grid plans, and its status: `ranked` (every optimizer has a completed run), `incomplete`, or `missing`."""
    rows = [
        {
            "workload": part.workload,
            "study": part.study.id,
            "rung": part.part.rung_text,
            "tuned_by": part.study.tuned_by,
            "runs": len(part.runs),
            "completed": len(part.completed),
            "planned": part.planned_runs,
            "status": MISSING if part.missing else RANKED if part.ranked(optimizers) else INCOMPLETE,
            "note": part.missing or "; ".join([*filter(None, [part.unended()]), *part.notes]),
        }
        for part in parts
    ]
    return pd.DataFrame(rows, columns=PARTS_COLUMNS)


RANKED, INCOMPLETE, MISSING = "ranked", "incomplete", "missing"
PARTS_COLUMNS = ["workload", "study", "rung", "tuned_by", "runs", "completed", "planned", "status", "note"]


def part_notes(runs: pd.DataFrame, optimizers: tuple[str, ...]) -> list[str]:
    """Optimizers without a completed run, and runs that did not complete, named."""
    notes = []
    done = set(runs.loc[runs["status"] == COMPLETED, "optimizer"].astype(str))
    lacking = [name for name in optimizers if name not in done]
    if lacking:
        notes.append(f"no completed run yet: {', '.join(lacking)}")
    for status, group in runs[runs["status"] != COMPLETED].groupby("status"):
        who = ", ".join(f"{row.optimizer} seed {int(row.seed)}" for row in group.itertuples())
        kind = "results, counted as not reaching the target" if status in RESULT_STATUSES else "not finished"
        notes.append(f"{len(group)} {status} ({kind}): {who}")
    return notes
