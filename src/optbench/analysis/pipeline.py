"""`aggregate(results_dir, out_dir, ...)`: every step of the aggregator, in order, for the CLI and tests.

Three steps, each handing the next a named record:
    analyse_step  load and label the runs (`analyse`), set the tuning trials aside (tuning-*.json,
                  tuning_report.py: reported only in the Tuning section), read the hypotheses and the decision
                  records, and compute the pairwise tests, results, robust and variance tables -> Computed; with
                  `only_study` (`--only-study`) the named study's runs and records alone
                  (analysis/judging/study_runs.py)
    judge_step    one verdict per hypothesis and scope (verdicts.py), the fidelity ladders analysed and judged
                  rung by rung (fidelity.py) -> Judged
    write_step    every table and figure (analysis/writing/aggregate_files.py lists them) and report.md into `out_dir`
                  (never into a run directory) -> Outcome
Bad input (no such folder, no runs in it, a malformed hypothesis file) raises ConfigError with one line naming
the fix before anything is written; the CLI turns it into exit status 2.
"""

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from optbench.analysis.groups import Grouping, find_grouping, label_runs, ordered_arms, ordered_settings, short_key
from optbench.analysis.headline import Headline, headline_of
from optbench.analysis.inputs import check_inputs, check_only_study
from optbench.analysis.judging import fidelity
from optbench.analysis.judging.hypotheses import Context, hypothesis_files, load_hypotheses
from optbench.analysis.judging.ladder_runs import fidelity_keys, find_ladders, planned_rungs
from optbench.analysis.judging.pairwise_tables import headline_pairwise
from optbench.analysis.judging.robust_tables import by_headline, improvement_table, iqm_table, profile_table
from optbench.analysis.judging.study_runs import StudyRuns, keep_study_runs, own_records, own_tuning
from optbench.analysis.judging.study_trials import study_runs_among_trials
from optbench.analysis.judging.tuning_report import TuningRecords, read_tuning
from optbench.analysis.judging.variance_tables import variance_table
from optbench.analysis.judging.verdicts import Judgement, NotTested, judge
from optbench.analysis.load import load_runs
from optbench.analysis.statistics.power import ALPHA
from optbench.analysis.targets import DEFAULT_TARGET_ACC, Targets, check_targets, target_for
from optbench.analysis.writing import aggregate_files
from optbench.analysis.writing.names import constant_keys, file_stems, settings_index
from optbench.analysis.writing.output import OutputDir
from optbench.analysis.writing.report import render_report
from optbench.analysis.writing.report_parts import FidelityParts, ReportParts, TuningParts
from optbench.analysis.writing.tables import completed, problem_runs, results_table
from optbench.errors import ConfigError
from optbench.formats import aggregate_tables, decision_record
from optbench.formats.run_summary import FINAL_STATUSES
from optbench.specs.study_spec import EXPERIMENTS_DIR, Study, hypotheses_folder, tested_hypotheses

# What the report does without a decision record it cannot parse (said in its one warning line).
DECISION_RECORD_IGNORED = "ignored here: its hypotheses are judged by the fixed design"


@dataclass
class Outcome:
    report: Path
    runs: int
    written: list[str]
    verdicts: dict[str, str]
    warnings: list[str]
    unfinished: list[tuple[str, str]] = field(default_factory=list)  # (run id, status) of runs without a result


@dataclass
class Analysis:
    """The loaded runs, labelled and ordered: what tables, figures and verdicts are computed from."""

    runs: pd.DataFrame  # one row per run, with `setting` and `arm` labels
    curves: pd.DataFrame  # one row per (run, epoch)
    grouping: Grouping
    settings: list[str]
    arms: list[str]
    warnings: list[str]
    set_aside: list[str]  # run ids of tuning trials, not in `runs`
    stems: dict[str, str]  # setting label -> the short name in its file names (names.file_stems)
    left_out: int = 0  # --only-study: run directories of other studies (and other tunings' trials), not read in


@dataclass(frozen=True)
class Request:
    """One call of `aggregate`, its folders and numbers checked (inputs.check_inputs)."""

    results_dir: Path
    out_dir: Path
    targets: Targets  # the time-to-target thresholds the user gave (analysis/targets.py)
    alpha: float
    experiments_dir: Path | None  # the folder holding hypotheses/*.yaml, when given
    study: Study | None  # the study that made the runs (`--study`), when known
    fidelity_extra: Sequence[str]  # budget keys a study's rungs name beyond ladder_runs.FIDELITY_KEYS
    command: str  # the command line the report quotes
    draw_figures: bool
    only_study: bool = False  # --only-study: the study's runs and records alone (analysis/judging/study_runs.py)

    @property
    def target_acc(self) -> float:
        """The accuracy workloads' validation-accuracy target."""
        return DEFAULT_TARGET_ACC if self.targets.acc is None else self.targets.acc


@dataclass
class Computed:
    """The analyse step's record: the runs, the records found beside them, and the tables computed from them."""

    analysis: Analysis
    tuning: TuningRecords  # tuning-*.json files: their trials are set aside from `analysis.runs`
    sequential: list[decision_record.DecisionRecord]  # the studies run until decided
    hypotheses: list  # parsed from the --experiments folder
    hypotheses_note: str  # where the hypotheses came from, or why there are none
    tests: pd.DataFrame  # pairwise_tables.pairwise_table
    results: pd.DataFrame  # tables.results_table
    robust: dict[str, pd.DataFrame]  # robust_tables
    variance: pd.DataFrame  # variance_tables.variance_table
    warnings: list[str]  # the loader's, the tuning files', the decision records'
    variance_warnings: list[str]  # the variance table's (listed after the judge step's)


@dataclass
class Judged:
    """The judge step's record: the verdicts, the hypotheses not tested, and the fidelity ladders judged rung by
    rung (their figures and table files are filled in by the write step)."""

    judgements: list[Judgement]  # verdicts.judge: one verdict per hypothesis and scope
    untested: list[NotTested]
    hypotheses_note: str
    fidelity: FidelityParts | None  # None when the runs form no ladder
    warnings: list[str]


def analyse(
    results_dir: Path,
    target_acc: float | Targets = DEFAULT_TARGET_ACC,
    skip: Path | None = None,
    set_aside: frozenset[Path] = frozenset(),
    only: StudyRuns | None = None,
) -> Analysis:
    """Load and label the runs; `set_aside` (resolved run directories of tuning trials) are left out.
    `target_acc`: the accuracy target, or every time-to-target threshold (targets.Targets). `only`: keep one study's
    runs (--only-study), before the grouping, so other studies' settings name none of its runs."""
    loaded = load_runs(Path(results_dir), target_acc, skip=skip, set_aside=set_aside)
    left_out = 0
    if only is not None:
        loaded, left_out = keep_study_runs(loaded, Path(results_dir), only)
    if not len(loaded.runs) and not loaded.set_aside:
        raise ConfigError(
            f"no run directories (folders holding summary.json or .hydra/config.yaml) under "
            f"{results_dir}: give the folder runs were written to, e.g. results/"
        )
    if not len(loaded.runs):  # only tuning trials here: empty tables, and the report is their Tuning section
        loaded.runs = pd.DataFrame(columns=aggregate_files.RUN_COLUMNS)
    grouping = find_grouping(loaded.runs, loaded.config_keys)
    runs = label_runs(loaded.runs, grouping)
    settings = ordered_settings(runs, grouping)
    return Analysis(
        runs=runs,
        curves=loaded.curves,
        grouping=grouping,
        settings=settings,
        arms=ordered_arms(runs, grouping),
        warnings=list(loaded.warnings),
        set_aside=loaded.set_aside,
        stems=file_stems(runs, settings),
        left_out=left_out,
    )


def aggregate(
    results_dir: Path,
    out_dir: Path | None = None,
    target_acc: float | None = None,
    experiments_dir: Path | None = None,
    alpha: float = ALPHA,
    command: str = "",
    draw_figures: bool = True,
    study: Study | None = None,
    fidelity_extra: Sequence[str] = (),
    target_loss: float | None = None,
    only_study: bool = False,
) -> Outcome:
    """`study`: the study that made the runs (`--study`), when known: only the hypotheses it tests are judged,
    each on its planned settings, and a planned setting with no runs is named as missing (verdicts.py);
    `only_study` (`--only-study`): report that study's runs and records alone (analysis/judging/study_runs.py).
    `fidelity_extra`: budget keys a study's rungs name beyond ladder_runs.FIDELITY_KEYS. `target_acc`,
    `target_loss`: the time-to-target thresholds of accuracy and loss workloads (None: 0.9, and each loss
    workload's registry target; analysis/targets.py)."""
    results_dir, out_dir = check_inputs(results_dir, out_dir, target_acc, alpha, target_loss)
    check_only_study(only_study, study is not None)
    targets = Targets(acc=target_acc, loss=target_loss)
    request = Request(
        results_dir,
        out_dir,
        targets,
        alpha,
        experiments_dir,
        study,
        tuple(fidelity_extra),
        command,
        draw_figures,
        only_study,
    )
    computed = analyse_step(request)
    judged = judge_step(request, computed)
    return write_step(request, computed, judged)


# ---- analyse: load the runs and compute the tables ---------------------------------------------------------


def analyse_step(request: Request) -> Computed:
    """Read the hypotheses (a bad folder fails first), load and label the runs with the tuning trials set aside
    (but those that are runs the named study plans: analysis/judging/study_trials.py),
    read the decision records, and compute the pairwise tests, the results, robust and variance tables. With
    --only-study, the named study's runs, tuning and decision records alone (analysis/judging/study_runs.py)."""
    hypotheses_dir = request.experiments_dir
    if request.study is not None and request.study.hypotheses_from:  # a study's own hypotheses folder
        hypotheses_dir = hypotheses_folder(request.study, request.experiments_dir or EXPERIMENTS_DIR)
    hypotheses, hypotheses_note = read_hypotheses(hypotheses_dir)
    skip = own_output(request.results_dir, request.out_dir)
    tuning = read_tuning(request.results_dir, skip=skip)
    own_runs = study_runs_among_trials(request.study, tuning.studies, request.results_dir, request.experiments_dir)
    set_aside = tuning.run_dirs - own_runs  # every record's trials: with --only-study too, none joins its runs
    only = None
    if request.only_study and request.study is not None:
        tuning = own_tuning(tuning, request.study)
        only = StudyRuns.of(request.study, tuning)
    analysis = analyse(request.results_dir, request.targets, skip=skip, set_aside=set_aside, only=only)
    runs, settings, arms = analysis.runs, analysis.settings, analysis.arms
    check_targets(runs, analysis.curves, request.targets)  # a threshold on the wrong side fails before any file
    warnings = [*analysis.warnings, *tuning.warnings]
    tests = headline_pairwise(completed(runs), settings, arms, request.alpha)
    sequential = read_decision_records(request.results_dir, skip, warnings)
    if only is not None and request.study is not None:
        tested = tested_hypotheses(request.study, [hypothesis.id for hypothesis in hypotheses])
        sequential = own_records(sequential, request.study, tested)
    variance, variance_warnings = variance_table(runs, request.results_dir, settings, arms)
    return Computed(
        analysis=analysis,
        tuning=tuning,
        sequential=sequential,
        hypotheses=hypotheses,
        hypotheses_note=hypotheses_note,
        tests=tests,
        results=results_table(runs, analysis.grouping, settings, arms, tests, workload_targets(runs, request.targets)),
        robust=robust_tables(runs, settings, arms),
        variance=variance,
        warnings=warnings,
        variance_warnings=variance_warnings,
    )


def workload_targets(runs: pd.DataFrame, targets: Targets) -> dict:
    """Workload name -> its time-to-target threshold (targets.Target), for each workload among the runs."""
    names = runs["workload"].dropna().unique() if "workload" in runs else []
    return {str(name): target_for(str(name), targets) for name in names}


def robust_tables(runs: pd.DataFrame, settings: list[str], arms: list[str]) -> dict[str, pd.DataFrame]:
    """IQM, probability of improvement and performance profiles (optbench.analysis.judging.robust_tables), with diverged
    and failed runs counted as results; each setting on its workload's headline, in its direction."""
    return {
        "robust": by_headline(iqm_table, runs, settings, arms),
        "improvement": by_headline(improvement_table, runs, settings, arms),
        "profiles": profile_table(runs, settings, arms),
    }


def own_output(results_dir: Path, out_dir: Path) -> Path | None:
    """The folder not to read runs and records from: the output folder when it lies inside the results
    (results/aggregate); none when the results lie inside it (docs/cpu-study/runs published beside its
    report in docs/cpu-study), or everything would be skipped."""
    return None if Path(results_dir).resolve().is_relative_to(Path(out_dir).resolve()) else out_dir


def read_decision_records(
    results_dir: Path, out_dir: Path | None, warnings: list[str]
) -> list[decision_record.DecisionRecord]:
    """The decision records of studies run until decided (optbench.formats.decision_record); one that does not
    parse is one warning naming the file, and is ignored: its hypotheses are judged as if by a fixed design."""
    records = []
    for path in decision_record.find_records(results_dir, skip=out_dir):
        try:
            record = decision_record.read(path)
        except ConfigError as error:
            warnings.append(f"{error} ({DECISION_RECORD_IGNORED})")
            continue
        if record is not None:  # gone since it was listed
            records.append(record)
    return records


def read_hypotheses(experiments_dir: Path | None) -> tuple[list, str]:
    """The hypotheses in `experiments_dir`/hypotheses, and the report's note on where they came from."""
    if experiments_dir is None:
        return [], "No hypotheses folder given (`--experiments DIR`)."
    experiments_dir = Path(experiments_dir)
    if not experiments_dir.is_dir():
        raise ConfigError(f"--experiments {experiments_dir} does not exist: give the folder holding hypotheses/*.yaml")
    hypotheses = load_hypotheses(experiments_dir)
    if not hypotheses:
        return [], f"No hypothesis files found in `{experiments_dir}` (expected hypotheses/*.yaml)."
    files = ", ".join(f"`{path}`" for path in hypothesis_files(experiments_dir))
    return hypotheses, f"Hypotheses from {files}. Verdict rule at the end of this section and in experiments/README.md."


# ---- judge: the hypotheses' verdicts and the fidelity ladders --------------------------------------------


def judge_step(request: Request, computed: Computed) -> Judged:
    """The verdicts (verdicts.judge), then the fidelity ladders, each judged rung by rung on the hypotheses that
    have a verdict here."""
    warnings: list[str] = []
    judgements, untested, hypotheses_note = judge_hypotheses(request, computed, warnings)
    with_verdict = judged_hypotheses(computed.hypotheses, judgements)
    analysis, tuned_on = computed.analysis, computed.tuning.seeds_tuned_on()
    ladders = judge_ladders(
        request,
        computed,
        lambda rung_runs: judge_rung(with_verdict, analysis, rung_runs, tuned_on, request.experiments_dir),
    )
    return Judged(judgements, untested, hypotheses_note, ladders, warnings)


def judge_hypotheses(
    request: Request, computed: Computed, warnings: list[str]
) -> tuple[list[Judgement], list[NotTested], str]:
    """The verdicts (verdicts.judge), the hypotheses not tested, and the note on where the hypotheses came from;
    none when every run is a tuning trial. Comparisons on the seeds a tuning study ran (tuning.seeds_tuned_on)
    are marked post-selection."""
    analysis = computed.analysis
    if not len(analysis.runs):
        return [], [], f"{computed.hypotheses_note} Every run here is a tuning trial: no verdicts."
    tuned_on = computed.tuning.seeds_tuned_on()
    winners = {
        tuning.name: {name: entry.winner.values for name, entry in tuning.optimizers.items() if entry.winner}
        for tuning in computed.tuning.studies
    }
    context = Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys, tuned_on, winners=winners)
    records, study, experiments_dir = computed.sequential, request.study, request.experiments_dir
    judgements, untested = judge(computed.hypotheses, context, records, study, experiments_dir, warnings)
    return judgements, untested, computed.hypotheses_note


def judge_rung(
    hypotheses: list,
    analysis: Analysis,
    rung_runs: pd.DataFrame,
    tuned_on: dict[str, set[int]],
    experiments_dir: Path | None,
) -> list[Judgement]:
    """The hypotheses' verdicts on one rung of a fidelity ladder: the fixed-design rule on that rung's runs alone
    (a decision record belongs to the budget its study ran at, so no rung takes it over)."""
    context = Context(rung_runs, analysis.curves, analysis.grouping.setting_keys, tuned_on)
    return judge(hypotheses, context, [], None, experiments_dir, [])[0]


def judged_hypotheses(hypotheses: list, judgements: list[Judgement]) -> list:
    """The hypotheses with a verdict in this report (those a --study tests, with runs here): the only ones its
    fidelity section judges rung by rung."""
    judged = {judgement.hypothesis.id for judgement in judgements}
    return [hypothesis for hypothesis in hypotheses if hypothesis.id in judged]


@dataclass(frozen=True)
class FidelityPlanned:
    """What the study that made the runs says about its ladder (none of it without `--study`)."""

    rungs: tuple = ()  # ladder_runs.PlannedRung, in the study's order
    seeds: tuple = ()  # the study's grid seeds and its rungs' own: seeds beyond them were added (sequential study)
    added_by: str = ""  # the studies whose decision records are here
    resolution: float | None = None  # metric units

    @classmethod
    def of(cls, study: Study | None, tuning_studies: list, records: list) -> "FidelityPlanned":
        added_by = ", ".join(sorted({record.study for record in records}))
        if study is None or not study.rungs:
            return cls(added_by=added_by)
        seeds = study.grid["seed"] if isinstance(study.grid["seed"], list) else [study.grid["seed"]]
        seeds = [*seeds, *(seed for rung in study.rungs for seed in rung.seeds)]  # a rung's own seeds are planned
        resolution = study.fidelity_resolution
        return cls(
            tuple(planned_rungs(study, tuning_studies)),
            tuple(sorted({int(seed) for seed in seeds})),
            added_by,
            None if resolution is None else resolution / 100,
        )


def judge_ladders(request: Request, computed: Computed, judge_runs) -> FidelityParts | None:
    """The fidelity ladders (fidelity.py): found, analysed, planned and judged rung by rung, their figures and table
    files left for the write step; None when the runs form no ladder. `judge_runs(runs)`: the hypotheses'
    verdicts on those runs."""
    analysis, tuning = computed.analysis, computed.tuning
    planned = FidelityPlanned.of(request.study, tuning.studies, computed.sequential)
    keys = fidelity_keys(request.fidelity_extra)
    ladders = find_ladders(analysis.runs, analysis.grouping, keys, planned.rungs)
    if not ladders:
        return None
    for ladder in ladders:
        ladder.planned_seeds, ladder.added_by = planned.seeds, planned.added_by
    headlines = [ladder_headline(ladder) for ladder in ladders]
    ladders = [
        fidelity.analyse_ladder(ladder, headline.column, request.alpha, planned.resolution, headline.higher_is_better)
        for ladder, headline in zip(ladders, headlines)
    ]
    plans = [
        fidelity.fidelity_plan(ladder, headline.column, request.alpha) for ladder, headline in zip(ladders, headlines)
    ]
    ladders = [fidelity.with_plan(ladder, plan) for ladder, plan in zip(ladders, plans)]
    verdicts = [fidelity.verdicts_by_rung(ladder, judge_runs) for ladder in ladders]
    tuned = fidelity.tuned_settings(tuning.studies)
    return FidelityParts(ladders=ladders, verdicts=verdicts, tuned=tuned, figures=[], table_files=[], plans=plans)


def ladder_headline(ladder) -> Headline:
    """The headline of the workload a ladder's runs train (a ladder is one setting: one workload)."""
    runs = ladder.top.runs
    names = runs["workload"].dropna() if "workload" in runs else pd.Series(dtype=object)
    return headline_of(str(names.iloc[0]) if len(names) else "")


# ---- write: the tables, the figures and the report --------------------------------------------------------


@dataclass
class Written:
    """What the write step put into the output folder before report.md, for the report to embed."""

    table_files: list[str]
    figures: list[tuple[str, str]]  # (caption, png path relative to report.md)
    tuning: TuningParts | None
    fidelity: FidelityParts | None
    warnings: list[str]  # every step's, in the order they were met


def write_step(request: Request, computed: Computed, judged: Judged) -> Outcome:
    """Every table and figure, then report.md, into the output folder (output.OutputDir: files an earlier
    aggregate wrote there and this one did not are removed)."""
    analysis, runs = computed.analysis, computed.analysis.runs
    warnings = [*computed.warnings, *judged.warnings, *computed.variance_warnings]
    out = OutputDir(request.out_dir)
    aggregate_files.write_summary_csv(out, runs)
    settings = settings_index(runs, analysis.settings, analysis.stems)
    out.write_text(aggregate_tables.SETTINGS, aggregate_tables.csv_text(aggregate_tables.SETTINGS, settings))
    table_files = aggregate_files.write_tables(
        out, computed.results, computed.tests, runs, request.target_acc, analysis.stems
    )
    table_files += aggregate_files.write_robust_tables(out, computed.robust)
    table_files += aggregate_files.write_variance_table(out, computed.variance)
    table_files += aggregate_files.write_verdict_tables(out, judged.judgements, judged.untested)
    figures = (
        aggregate_files.write_figures(
            out, runs, analysis.curves, analysis.settings, analysis.arms, analysis.stems, warnings
        )
        if request.draw_figures and len(runs)
        else []
    )
    tuning = aggregate_files.write_tuning(
        out, computed.tuning, runs, analysis.set_aside, request.draw_figures, warnings
    )
    fidelity_parts = aggregate_files.write_fidelity(out, judged.fidelity, request.draw_figures, warnings)
    written = Written(table_files, figures, tuning, fidelity_parts, warnings)
    report = out.write_text("report.md", render_report(report_parts(request, computed, judged, written)))
    out.finish()
    return Outcome(
        report=report,
        runs=len(runs),
        written=list(out.written),
        verdicts=verdicts_by_name(judged.judgements),
        warnings=warnings,
        unfinished=unfinished_runs(runs),
    )


def report_parts(request: Request, computed: Computed, judged: Judged, written: Written) -> ReportParts:
    """Everything report.md shows, from the three steps."""
    runs = computed.analysis.runs
    return ReportParts(
        results_dir=str(request.results_dir),
        command=request.command or f"aggregate({request.results_dir})",
        generated=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        target_acc=request.target_acc,
        alpha=request.alpha,
        runs=runs,
        results=computed.results,
        pairwise=computed.tests,
        problems=problem_runs(runs),
        judgements=judged.judgements,
        untested=judged.untested,
        hypotheses_note=judged.hypotheses_note,
        figures=written.figures,
        table_files=written.table_files,
        robust=computed.robust,
        tuning=written.tuning,
        sequential=computed.sequential,
        variance=computed.variance,
        fidelity=written.fidelity,
        varying_keys=[short_key(key) for key in computed.analysis.grouping.varying_config],
        constant_keys=constant_keys(runs),
        warnings=written.warnings,
        only_study=request.study.id if request.only_study and request.study is not None else "",
        left_out=computed.analysis.left_out,
    )


def unfinished_runs(runs: pd.DataFrame) -> list[tuple[str, str]]:
    """(run id, status) of every run that is not a result (neither completed nor diverged), in summary.csv's order."""
    if not len(runs):
        return []
    left = runs[~runs["status"].isin(FINAL_STATUSES)]
    return list(zip(left["run_id"], left["status"]))


def verdicts_by_name(judgements: list[Judgement]) -> dict[str, str]:
    """Hypothesis id -> verdict; a hypothesis judged in more than one scope is named with its study."""
    ids = [judgement.hypothesis.id for judgement in judgements]
    return {
        (name if ids.count(name) == 1 else f"{name} ({judgement.scope.study or 'folder'})"): judgement.verdict
        for name, judgement in zip(ids, judgements)
    }
