"""What report.md is made from: the parts the pipeline hands the report's writers (report.py and the section
modules beside it), one dataclass for the page and one each for its tuning and fidelity sections."""

from dataclasses import dataclass, field

import pandas as pd

from optbench.analysis.judging.tuning_report import TuningStudy
from optbench.analysis.judging.verdicts import Judgement, NotTested
from optbench.formats.decision_record import DecisionRecord


@dataclass
class TuningParts:
    studies: list[TuningStudy]  # tuning.read_tuning
    table: pd.DataFrame  # tuning.tuning_table
    figures: dict[str, str]  # tuning file (study.source) -> png path relative to report.md
    set_aside: list[str]  # run ids found here that the tuning files list: not in the main comparison


@dataclass
class FidelityParts:
    ladders: list  # ladder_runs.Ladder, analysed
    verdicts: list[pd.DataFrame]  # fidelity.verdicts_by_rung, one per ladder
    tuned: pd.DataFrame  # fidelity.tuned_settings (empty unless tuned at several budgets)
    figures: list[tuple[str, str]]  # (caption, png path relative to report.md)
    table_files: list[str]
    plans: list = field(default_factory=list)  # fidelity.FidelityPlan, one per ladder


@dataclass
class ReportParts:
    results_dir: str
    command: str
    generated: str
    target_acc: float
    alpha: float
    runs: pd.DataFrame
    results: pd.DataFrame  # tables.results_table
    pairwise: pd.DataFrame  # pairwise_tables.pairwise_table
    problems: pd.DataFrame  # tables.problem_runs
    judgements: list[Judgement]  # verdicts.judge: one verdict per hypothesis and scope
    untested: list[NotTested]  # hypotheses not tested by the named study or by these runs
    hypotheses_note: str  # where hypotheses came from, or why there are none
    figures: list[tuple[str, str]]  # (caption, png path relative to report.md)
    table_files: list[str]
    varying_keys: list[str]
    warnings: list[str] = field(default_factory=list)
    constant_keys: dict[str, str] = field(default_factory=dict)  # names.constant_keys: what every run shares
    robust: dict[str, pd.DataFrame] = field(default_factory=dict)  # pipeline.robust_tables
    tuning: TuningParts | None = None  # tuning studies found (tuning-*.json), or None
    sequential: list[DecisionRecord] = field(default_factory=list)  # decision records found beside the runs
    variance: pd.DataFrame | None = None  # variance_tables.variance_table
    fidelity: FidelityParts | None = None  # fidelity ladders found (settings differing only in budget), or None
    only_study: str = ""  # --only-study: the study whose runs alone are reported
    left_out: int = 0  # --only-study: run directories here of other studies (and other tunings' trials)
