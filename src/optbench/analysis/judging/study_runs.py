"""The named study's runs alone, from a folder that holds other studies' too (`aggregate.py --study S --only-study`).

A published runs folder can hold several studies side by side: docs/cross-workload-study/runs holds the MNIST-1D
ladder (whose top rung is cross_mnist1d's runs), the CIFAR part, a language model's tuning trials and two tuning
records. `--study S` judges S's hypotheses on S's planned settings but reports every run in the folder;
`--only-study` reports S alone, as if the folder held nothing else:
- runs: those of the settings S plans (study_spec.planned_settings: dataset, noise and rate, epochs and budget
  overrides, at each of its rungs), chosen as a verdict's family is (hypotheses.within_plan), every status kept (a
  failed run is a result); a run whose dataset could not be read cannot be told whose it is, so it stays, named;
- tuning: the records of the tuning studies S runs with (`own_tuning`: its `tuned_by` and its rungs'); every other
  record's trials stay set aside, as without the flag, so none joins S's runs as a variant of its settings;
- decision records (`own_records`): S's own, and those deciding a hypothesis S tests (that decision is its verdict);
- the loader's warnings about S's runs, and those naming no run.
What is left out is counted (`keep_study_runs`), and the report says how many: nothing leaves unsaid.
"""

from dataclasses import dataclass, replace
from pathlib import Path

from optbench.analysis.judging.hypotheses import within_plan
from optbench.analysis.judging.tuning_report import IGNORED, TuningRecords, budget_warnings, study_warnings
from optbench.analysis.load import LoadedRuns
from optbench.formats.decision_record import DecisionRecord
from optbench.specs.study_spec import Study, planned_settings, tuning_studies_of


@dataclass(frozen=True)
class StudyRuns:
    """What --only-study keeps: the settings the study plans, and its own tuning trials (counted as set aside)."""

    planned: tuple  # study_spec.PlannedSetting, at every rung
    own_trials: frozenset[Path]  # resolved run directories of its tuning studies' trials

    @classmethod
    def of(cls, study: Study, own: TuningRecords) -> "StudyRuns":
        """`own`: the study's tuning records (own_tuning)."""
        return cls(tuple(planned_settings(study)), own.run_dirs)


def own_tuning(tuning: TuningRecords, study: Study) -> TuningRecords:
    """The records of the tuning studies the study runs with, with their warnings; a damaged record's warning stays
    (whose it was cannot be read)."""
    names = set(tuning_studies_of(study))
    kept = [entry for entry in tuning.studies if entry.name in names]
    damaged = [line for line in tuning.warnings if line.endswith(IGNORED)]
    return TuningRecords(
        kept, [*damaged, *(line for entry in kept for line in study_warnings(entry)), *budget_warnings(kept)]
    )


def own_records(records: list[DecisionRecord], study: Study, tested: list[str]) -> list[DecisionRecord]:
    """The study's own decision records, and those deciding a hypothesis it tests (`tested`: their ids)."""
    return [record for record in records if record.study == study.id or set(record.hypotheses) & set(tested)]


def keep_study_runs(loaded: LoadedRuns, results_dir: Path, only: StudyRuns) -> tuple[LoadedRuns, int]:
    """The loaded runs of the study's planned settings (with their curves, config keys and warnings) and, among
    those set aside, its own tuning trials; with the number of run directories left out (other studies' runs and
    other tunings' trials)."""
    runs = loaded.runs
    if len(runs):
        unreadable = runs["dataset"].isna() if "dataset" in runs else runs["run_id"].notna()
        runs = runs[unreadable | runs.index.isin(within_plan(runs, list(only.planned)).index)]
    unset = [key for key in loaded.config_keys if key in runs and runs[key].isna().all()]
    runs = runs.drop(columns=unset)  # keys only other studies' runs set: as if the folder held this study alone
    kept = set(runs["run_id"]) if len(runs) else set()
    others = set(loaded.runs["run_id"]) - kept if len(loaded.runs) else set()
    curves = loaded.curves[loaded.curves["run_id"].isin(kept)] if len(loaded.curves) else loaded.curves
    trials = [run_id for run_id in loaded.set_aside if (results_dir / run_id).resolve() in only.own_trials]
    selected = replace(
        loaded,
        runs=runs,
        curves=curves,
        config_keys=[key for key in loaded.config_keys if key not in unset],
        warnings=[line for line in loaded.warnings if line.split(": ", 1)[0] not in others],
        set_aside=trials,
    )
    return selected, len(others) + len(loaded.set_aside) - len(trials)
