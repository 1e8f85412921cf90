"""`aggregate(results_dir, out_dir, ...)`: every step of the aggregator, in order, for the CLI and tests.

Load the runs, find the group keys, compute the tables, pairwise tests and hypothesis verdicts, draw
the figures, and write everything into `out_dir` (never into a run directory):
    summary.csv                      one row per run (status, headline metrics, flattened config)
    settings.csv                     one row per setting: the short name its figure files carry, its label,
                                     and its full setting (names.py)
    tables/results.{csv,md,tex}      per setting x optimizer
    tables/pairwise.{csv,md,tex}     tests between optimizers
    tables/verdicts.csv              one verdict per hypothesis and scope (verdicts.py): the sequential decision
                                     where its study ran until decided, else the fixed-design verdict; and the
                                     hypotheses not tested here
    tables/hypotheses.csv            every required comparison behind each verdict (the fixed-design evaluation)
    tables/robust.{csv,md}           IQM with stratified bootstrap intervals, per setting and across settings
    tables/improvement.{csv,md}      probability of improvement P(A > B) of each pair, with its interval
    tables/profiles.{csv,md}         performance profiles: settings reached within tau x the best cost
    tables/variance.{csv,md}         each pair's difference, its seeds-then-images bootstrap interval, and the
                                     shares of its variance from seeds and from test images (variance.py)
    tables/runs_not_completed.{csv,md}
    tables/tuning.{csv,md}           per tuning study x optimizer: trials, runs, epochs, device-hours, winner, edge
    tables/fidelity*.{csv,md}        fidelity ladders (fidelity.py): per rung (means, intervals, ranks), agreement
                                     with the top rung (tau-b, kept orders, cost), flips, verdicts per rung, and
                                     tables/fidelity_tuning.* (tuned values per budget, when tuned at several)
    figures/*.png, figures/*.pdf     figures/tuning-<study>.* : every trial of a tuning study's search;
                                     figures/fidelity_ranks*, fidelity_metric* : each ladder's bump chart and metric
    report.md                        the page that embeds them
Run directories listed in `tuning-*.json` files (tuning_report.py) are tuning trials: set aside before
loading, reported only in the Tuning section. Bad input (no such folder, no runs in it, a malformed
hypothesis file) raises ConfigError with one line naming the fix; the CLI turns it into exit status 2.
"""

import datetime
import functools
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from optbench.analysis.groups import Grouping, find_grouping, label_runs, ordered_arms, ordered_settings, short_key
from optbench.analysis.inputs import check_inputs
from optbench.analysis.judging import fidelity
from optbench.analysis.judging.hypotheses import Context, hypothesis_files, load_hypotheses
from optbench.analysis.judging.ladder_runs import fidelity_keys, find_ladders, planned_rungs
from optbench.analysis.judging.tuning_report import TuningRecords, read_tuning, tuning_display, tuning_table
from optbench.analysis.judging.verdicts import Judgement, NotTested, judge, verdict_table
from optbench.analysis.load import load_runs
from optbench.analysis.statistics import robust
from optbench.analysis.statistics.stats import ALPHA, pairwise
from optbench.analysis.statistics.variance import variance_display, variance_table
from optbench.analysis.writing import figures as figure_makers
from optbench.analysis.writing.names import constant_keys, file_stems, settings_index, short_name
from optbench.analysis.writing.output import OutputDir
from optbench.analysis.writing.report import FidelityParts, ReportParts, TuningParts, render_report, verdict_rows
from optbench.analysis.writing.tables import (
    PRIMARY_METRIC,
    completed,
    display_table,
    pairwise_display,
    problem_display,
    problem_runs,
    results_table,
    to_latex,
    to_markdown,
)
from optbench.errors import ConfigError
from optbench.formats import decision_record
from optbench.formats.aggregate_tables import HYPOTHESES, RESULTS, VERDICTS, csv_text
from optbench.formats.run_summary import FINAL_STATUSES
from optbench.specs.study_spec import Study

log = logging.getLogger(__name__)
PRIMARY_LABEL = "test accuracy at best validation (%)"
# What the report does without a decision record it cannot parse (said in its one warning line).
DECISION_RECORD_IGNORED = "ignored here: its hypotheses are judged by the fixed design"
# Columns summary.csv leads with; the flattened config (cfg.*) follows.
RUN_COLUMNS = [
    "run_id",
    "status",
    "setting",
    "arm",
    "dataset",
    "noise",
    "noise_rate",
    "label_set",
    "optimizer",
    "seed",
    "epochs_done",
    "epochs_planned",
    "best_epoch",
    "val_acc_best",
    "test_acc_at_best_val",
    "test_acc_at_best_clean_val",
    "final_val_acc",
    "final_test_acc",
    "best_test_acc",
    "final_train_loss",
    "final_train_acc",
    "epochs_to_target",
    "seconds_to_target",
    "wall_time_s",
    "train_time_s",
    "train_images_per_s",
    "realised_noise_rate",
    "num_parameters",
    "num_classes",
    "device",
    "git_commit",
    "error",
    "notes",
]


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


def analyse(
    results_dir: Path, target_acc: float = 0.9, skip: Path | None = None, set_aside: frozenset[Path] = frozenset()
) -> Analysis:
    """Load and label the runs; `set_aside` (resolved run directories of tuning trials) are left out."""
    loaded = load_runs(Path(results_dir), target_acc, skip=skip, set_aside=set_aside)
    if not len(loaded.runs) and not loaded.set_aside:
        raise ConfigError(
            f"no run directories (folders holding summary.json or .hydra/config.yaml) under "
            f"{results_dir}: give the folder runs were written to, e.g. results/"
        )
    if not len(loaded.runs):  # only tuning trials here: empty tables, and the report is their Tuning section
        loaded.runs = pd.DataFrame(columns=RUN_COLUMNS)
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
    )


def aggregate(
    results_dir: Path,
    out_dir: Path | None = None,
    target_acc: float = 0.9,
    experiments_dir: Path | None = None,
    alpha: float = ALPHA,
    command: str = "",
    draw_figures: bool = True,
    study: Study | None = None,
    fidelity_extra: Sequence[str] = (),
) -> Outcome:
    """`study`: the study that made the runs (`--study`), when known: only the hypotheses it tests are judged,
    each on its planned settings, and a planned setting with no runs is named as missing (verdicts.py).
    `fidelity_extra`: budget keys a study's rungs name beyond ladder_runs.FIDELITY_KEYS."""
    results_dir, out_dir = check_inputs(results_dir, out_dir, target_acc, alpha)
    hypotheses, hypotheses_note = read_hypotheses(experiments_dir)
    skip = own_output(results_dir, out_dir)
    tuning = read_tuning(results_dir, skip=skip)
    analysis = analyse(results_dir, target_acc, skip=skip, set_aside=tuning.run_dirs)
    runs, settings, arms, warnings = analysis.runs, analysis.settings, analysis.arms, analysis.warnings
    warnings.extend(tuning.warnings)
    tests = pairwise(completed(runs), PRIMARY_METRIC, settings, arms, alpha)
    results = results_table(runs, analysis.grouping, settings, arms, tests)
    sequential = read_decision_records(results_dir, skip, warnings)
    judgements, untested, hypotheses_note = judge_hypotheses(
        hypotheses, hypotheses_note, analysis, tuning.seeds_tuned_on(), sequential, study, experiments_dir, warnings
    )
    out = OutputDir(out_dir)
    write_summary_csv(out, runs)
    out.write_text("settings.csv", settings_index(runs, settings, analysis.stems).to_csv(index=False))
    table_files = write_tables(out, results, tests, runs, target_acc, analysis.stems)
    robust_results = robust_tables(runs, settings, arms)
    table_files += write_robust_tables(out, robust_results)
    variance, variance_warnings = variance_table(runs, results_dir, settings, arms)
    warnings.extend(variance_warnings)
    table_files += write_variance_table(out, variance)
    if judgements or untested:
        out.write_text(VERDICTS, csv_text(VERDICTS, verdict_table(judgements, untested)))
        table_files.append(VERDICTS)
    if judgements:
        out.write_text(
            HYPOTHESES,
            csv_text(
                HYPOTHESES, pd.DataFrame([row for judgement in judgements for row in verdict_rows(judgement.fixed)])
            ),
        )
        table_files.append(HYPOTHESES)
    drawn = (
        write_figures(out, runs, analysis.curves, settings, arms, analysis.stems, warnings)
        if draw_figures and len(runs)
        else []
    )
    tuning_parts = write_tuning(out, tuning, analysis, draw_figures)
    fidelity_parts = write_fidelity(
        out,
        analysis,
        tuning,
        alpha,
        draw_figures,
        fidelity_extra,
        FidelityPlanned.of(study, tuning.studies, sequential),
        lambda rung_runs: judge_rung(
            judged_hypotheses(hypotheses, judgements), analysis, rung_runs, tuning.seeds_tuned_on(), experiments_dir
        ),
    )
    parts = ReportParts(
        results_dir=str(results_dir),
        command=command or f"aggregate({results_dir})",
        generated=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        target_acc=target_acc,
        alpha=alpha,
        runs=runs,
        results=results,
        pairwise=tests,
        problems=problem_runs(runs),
        judgements=judgements,
        untested=untested,
        hypotheses_note=hypotheses_note,
        figures=drawn,
        table_files=table_files,
        robust=robust_results,
        tuning=tuning_parts,
        sequential=sequential,
        variance=variance,
        fidelity=fidelity_parts,
        varying_keys=[short_key(key) for key in analysis.grouping.varying_config],
        constant_keys=constant_keys(runs),
        warnings=warnings,
    )
    report = out.write_text("report.md", render_report(parts))
    out.finish()
    return Outcome(
        report=report,
        runs=len(runs),
        written=list(out.written),
        verdicts=verdicts_by_name(judgements),
        warnings=warnings,
        unfinished=unfinished_runs(runs),
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


def judge_hypotheses(
    hypotheses: list,
    hypotheses_note: str,
    analysis: Analysis,
    tuned_on: dict[str, set[int]],
    records: list[decision_record.DecisionRecord],
    study: Study | None,
    experiments_dir: Path | None,
    warnings: list[str],
) -> tuple[list[Judgement], list[NotTested], str]:
    """The verdicts (verdicts.judge), the hypotheses not tested, and the note on where the hypotheses came from;
    none when every run is a tuning trial. `tuned_on`: per optimizer, the seeds its tuning ran (comparisons on
    them are marked post-selection)."""
    if not len(analysis.runs):
        return [], [], f"{hypotheses_note} Every run here is a tuning trial: no verdicts."
    context = Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys, tuned_on)
    judgements, untested = judge(hypotheses, context, records, study, experiments_dir, warnings)
    return judgements, untested, hypotheses_note


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


def read_hypotheses(experiments_dir: Path | None):
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


def write_summary_csv(out: OutputDir, runs: pd.DataFrame) -> None:
    config_columns = sorted(column for column in runs.columns if column.startswith("cfg."))
    columns = [column for column in RUN_COLUMNS if column in runs] + config_columns
    out.write_text("summary.csv", runs[columns].to_csv(index=False))


def robust_tables(runs: pd.DataFrame, settings: list[str], arms: list[str]) -> dict[str, pd.DataFrame]:
    """IQM, probability of improvement and performance profiles (optbench.analysis.statistics.robust), with diverged
    and failed runs counted as results."""
    return {
        "robust": robust.iqm_table(runs, PRIMARY_METRIC, settings, arms),
        "improvement": robust.improvement_table(runs, PRIMARY_METRIC, settings, arms),
        "profiles": robust.profile_table(runs, settings, arms),
    }


def write_robust_tables(out: OutputDir, tables: dict[str, pd.DataFrame]) -> list[str]:
    files = []
    for name, table in tables.items():
        out.write_text(f"tables/{name}.csv", table.to_csv(index=False))
        out.write_text(f"tables/{name}.md", to_markdown(table.round(4)))
        files += [f"tables/{name}.csv", f"tables/{name}.md"]
    return files


def write_variance_table(out: OutputDir, table: pd.DataFrame) -> list[str]:
    out.write_text("tables/variance.csv", table.to_csv(index=False))
    out.write_text("tables/variance.md", to_markdown(variance_display(table)))
    return ["tables/variance.csv", "tables/variance.md"]


def write_tables(
    out: OutputDir,
    results: pd.DataFrame,
    tests: pd.DataFrame,
    runs: pd.DataFrame,
    target_acc: float,
    stems: dict[str, str],
) -> list[str]:
    files = ["summary.csv", "settings.csv"]
    out.write_text(RESULTS, csv_text(RESULTS, results))
    out.write_text("tables/results.md", per_setting_markdown(results, lambda group: display_table(group, target_acc)))
    out.write_text(
        "tables/results.tex",
        per_setting_latex(
            results,
            lambda group: display_table(group, target_acc),
            "Test accuracy at best validation",
            "results",
            stems,
        ),
    )
    files += [RESULTS, "tables/results.md", "tables/results.tex"]
    out.write_text("tables/pairwise.csv", tests.to_csv(index=False))
    out.write_text("tables/pairwise.md", per_setting_markdown(tests, pairwise_display))
    out.write_text(
        "tables/pairwise.tex", per_setting_latex(tests, pairwise_display, "Pairwise tests", "pairwise", stems)
    )
    files += ["tables/pairwise.csv", "tables/pairwise.md", "tables/pairwise.tex"]
    problems = problem_runs(runs)
    out.write_text("tables/runs_not_completed.csv", problems.to_csv(index=False))
    out.write_text("tables/runs_not_completed.md", to_markdown(problem_display(problems)))
    files += ["tables/runs_not_completed.csv", "tables/runs_not_completed.md"]
    return files


def per_setting_markdown(table: pd.DataFrame, render) -> str:
    if not len(table):
        return "_(none)_\n"
    return "\n".join(
        f"## {setting}\n\n{to_markdown(render(group))}" for setting, group in table.groupby("setting", sort=False)
    )


def per_setting_latex(table: pd.DataFrame, render, caption: str, label: str, stems: dict[str, str]) -> str:
    if not len(table):
        return "% no rows\n"
    return "\n".join(
        to_latex(render(group), f"{caption}: {setting}", f"tab:{label}-{stems[setting]}")
        for setting, group in table.groupby("setting", sort=False)
    )


def write_figures(
    out: OutputDir,
    runs: pd.DataFrame,
    curves: pd.DataFrame,
    settings: list[str],
    arms: list[str],
    slugs: dict[str, str],
    warnings: list[str],
) -> list[tuple[str, str]]:
    """Draw every figure the data allows; a figure that fails becomes a warning in the report, not a crash.
    `slugs`: each setting's short file-name stem (names.file_stems)."""
    style = figure_makers.Style(runs, arms)
    planned: list[tuple[str, str, Callable[[], Any]]] = [  # (caption, file stem, maker of a figure or None)
        (
            "Test accuracy per optimizer",
            "final_accuracy",
            lambda: figure_makers.final_accuracy(runs, settings, arms, style, PRIMARY_METRIC, PRIMARY_LABEL),
        ),
        (
            "Accuracy vs label-noise rate",
            "accuracy_vs_noise",
            lambda: figure_makers.accuracy_vs_noise(runs, arms, style, PRIMARY_METRIC, PRIMARY_LABEL),
        ),
        (
            "Accuracy vs learning rate",
            "accuracy_vs_lr",
            lambda: figure_makers.accuracy_vs_lr(runs, settings, style, PRIMARY_METRIC, PRIMARY_LABEL),
        ),
        (
            "Accuracy vs wall time",
            "accuracy_vs_wall_time",
            lambda: figure_makers.accuracy_vs_wall_time(runs, settings, arms, style, PRIMARY_METRIC, PRIMARY_LABEL),
        ),
        (
            "Performance profiles",
            "performance_profiles",
            lambda: figure_makers.performance_profiles(runs, settings, arms, style),
        ),
    ]
    for setting in settings:
        planned.append(
            (
                f"Learning curves: {setting}",
                f"learning_curves_{slugs[setting]}",
                functools.partial(figure_makers.learning_curves, runs, curves, setting, arms, style),
            )
        )
    for setting in settings:
        planned.append(
            (
                f"Memorization of noisy labels: {setting}",
                f"memorization_{slugs[setting]}",
                functools.partial(figure_makers.memorization_curves, runs, curves, setting, arms, style),
            )
        )
    for setting in human_settings(runs, settings):
        planned.append(
            (
                f"Human label noise, who was taken for whom: {setting}",
                f"transition_matrix_{slugs[setting]}",
                functools.partial(figure_makers.transition_heatmap, runs, setting),
            )
        )
    return draw_planned(out, planned, warnings)


def human_settings(runs: pd.DataFrame, settings: list[str]) -> list[str]:
    """The settings under human label noise whose runs recorded a transition matrix."""
    if "transition_matrix" not in runs:
        return []
    recorded = runs[runs["transition_matrix"].map(lambda matrix: isinstance(matrix, list))]
    return [setting for setting in settings if setting in set(recorded["setting"])]


def draw_planned(out: OutputDir, planned: list, warnings: list[str]) -> list[tuple[str, str]]:
    """Draw and save each (caption, file stem, maker); returns (caption, png path) of those drawn."""
    drawn = []
    for caption, stem, make in planned:
        try:
            figure = make()
        except Exception as error:  # one broken figure must not cost the tables and verdicts  # noqa: BLE001
            warnings.append(f"figure '{caption}' could not be drawn: {type(error).__name__}: {error}")
            print(f"warning: figure '{caption}' could not be drawn: {error}", file=sys.stderr)
            continue
        if figure is None:
            continue
        out.write_figure(figure, f"figures/{stem}")
        figure_makers.close(figure)
        drawn.append((caption, f"figures/{stem}.png"))
    return drawn


def write_tuning(out: OutputDir, tuning: TuningRecords, analysis: Analysis, draw_figures: bool) -> TuningParts | None:
    """tables/tuning.{csv,md} and a search figure per tuning study; None when there is no tuning file."""
    if not tuning.studies:
        return None
    table = tuning_table(tuning.studies)
    out.write_text("tables/tuning.csv", table.to_csv(index=False))
    out.write_text("tables/tuning.md", to_markdown(tuning_display(table)))
    names = [*analysis.runs["optimizer"].map(str), *table["optimizer"]]
    colours = figure_makers.optimizer_colours(names)  # the main figures' colours, for the same optimizers
    stems = [f"tuning-{stem}" for stem in unique_names([study.name for study in tuning.studies])]
    planned = [
        (f"Tuning search: {study.name}", stem, lambda study=study: figure_makers.tuning_search(study, colours))
        for study, stem in zip(tuning.studies, stems)
    ]
    drawn = {path for _, path in draw_planned(out, planned, analysis.warnings)} if draw_figures else set()
    figures = {
        study.source: f"figures/{stem}.png"
        for study, stem in zip(tuning.studies, stems)
        if f"figures/{stem}.png" in drawn
    }
    return TuningParts(studies=tuning.studies, table=table, figures=figures, set_aside=analysis.set_aside)


def unique_names(labels: list[str]) -> list[str]:
    """A short file-name stem per label (names.short_name), in order; a repeated one gets -2, -3, ..."""
    slugs, used = [], set()
    for label in labels:
        candidate, number = short_name(label), 2
        while candidate in used:
            candidate, number = f"{short_name(label)}-{number}", number + 1
        used.add(candidate)
        slugs.append(candidate)
    return slugs


@dataclass(frozen=True)
class FidelityPlanned:
    """What the study that made the runs says about its ladder (none of it without `--study`)."""

    rungs: tuple = ()  # ladder_runs.PlannedRung, in the study's order
    seeds: tuple = ()  # the study's grid seeds: seeds beyond them were added (by a sequential study)
    added_by: str = ""  # the studies whose decision records are here
    resolution: float | None = None  # metric units

    @classmethod
    def of(cls, study: Study | None, tuning_studies: list, records: list) -> "FidelityPlanned":
        added_by = ", ".join(sorted({record.study for record in records}))
        if study is None or not study.rungs:
            return cls(added_by=added_by)
        seeds = study.grid["seed"] if isinstance(study.grid["seed"], list) else [study.grid["seed"]]
        resolution = study.fidelity_resolution
        return cls(
            tuple(planned_rungs(study, tuning_studies)),
            tuple(int(seed) for seed in seeds),
            added_by,
            None if resolution is None else resolution / 100,
        )


def write_fidelity(
    out: OutputDir,
    analysis: Analysis,
    tuning: TuningRecords,
    alpha: float,
    draw_figures: bool,
    extra_keys: Sequence[str],
    planned: FidelityPlanned,
    judge_runs,
) -> FidelityParts | None:
    """The fidelity ladders' tables and figures (fidelity.py); None when the runs form no ladder.
    `judge_runs(runs)`: the hypotheses' verdicts on those runs (verdicts rung by rung)."""
    ladders = find_ladders(analysis.runs, analysis.grouping, fidelity_keys(extra_keys), planned.rungs)
    if not ladders:
        return None
    for ladder in ladders:
        ladder.planned_seeds, ladder.added_by = planned.seeds, planned.added_by
    ladders = [fidelity.analyse_ladder(ladder, PRIMARY_METRIC, alpha, planned.resolution) for ladder in ladders]
    plans = [fidelity.fidelity_plan(ladder, PRIMARY_METRIC, alpha) for ladder in ladders]
    ladders = [fidelity.with_plan(ladder, plan) for ladder, plan in zip(ladders, plans)]
    verdicts = [fidelity.verdicts_by_rung(ladder, judge_runs) for ladder in ladders]
    tuned = fidelity.tuned_settings(tuning.studies)
    tables = {
        "fidelity": pd.concat([ladder.per_rung for ladder in ladders]),
        "fidelity_agreement": pd.concat([ladder.agreement for ladder in ladders]),
        "fidelity_orders": pd.concat([ladder.orders for ladder in ladders]),
        "fidelity_flips": pd.concat([ladder.flips for ladder in ladders]),
        "fidelity_verdicts": pd.concat(verdicts),
    }
    if not tuned.empty:
        tables["fidelity_tuning"] = tuned
    files = []
    for name, table in tables.items():
        out.write_text(f"tables/{name}.csv", csv_text(f"tables/{name}.csv", table))  # aggregate_tables checks
        out.write_text(f"tables/{name}.md", to_markdown(table.round(4)) if len(table) else "_(none)_\n")
        files += [f"tables/{name}.csv", f"tables/{name}.md"]
    stems = unique_names([ladder.setting for ladder in ladders])
    styles = [figure_makers.Style(pd.concat([rung.runs for rung in ladder.rungs]), ladder.arms) for ladder in ladders]
    figures_planned = [
        entry
        for ladder, stem, style in zip(ladders, stems, styles)
        for entry in (
            (
                f"Rank against budget: {ladder.setting}",
                f"fidelity_ranks_{stem}",
                lambda ladder=ladder, style=style: figure_makers.fidelity_ranks(
                    ladder.per_rung, ladder.arms, style, ladder.setting
                ),
            ),
            (
                f"Test accuracy against budget: {ladder.setting}",
                f"fidelity_metric_{stem}",
                lambda ladder=ladder, style=style: figure_makers.fidelity_metric(
                    ladder.per_rung, ladder.arms, style, ladder.setting, PRIMARY_LABEL
                ),
            ),
        )
    ]
    drawn = draw_planned(out, figures_planned, analysis.warnings) if draw_figures else []
    return FidelityParts(ladders=ladders, verdicts=verdicts, tuned=tuned, figures=drawn, table_files=files, plans=plans)
