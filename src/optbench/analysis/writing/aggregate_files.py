"""The aggregator's files: every table and figure the write step (pipeline.py) puts into its output folder.

One writer per kind of file, each given what the analyse and judge steps computed; nothing here computes a
statistic or a verdict. Into `out_dir` (never into a run directory):
    summary.csv                      one row per run (status, headline metrics, flattened config)
    settings.csv                     one row per setting: the short name its figure files carry, its label,
                                     and its full setting (names.py)
    tables/results.{csv,md,tex}      per setting x optimizer
    tables/pairwise.{csv,md,tex}     tests between optimizers
    tables/verdicts.csv              one verdict per hypothesis and scope (verdicts.py): the sequential decision
                                     where its study ran until decided, else the fixed-design verdict; and the
                                     hypotheses not tested here
    tables/hypotheses.csv            every required comparison behind each verdict (the fixed-design verdict)
    tables/robust.{csv,md}           IQM with stratified bootstrap intervals, per setting and across settings
    tables/improvement.{csv,md}      probability of improvement P(A > B) of each pair, with its interval
    tables/profiles.{csv,md}         performance profiles: settings reached within tau x the best cost
    tables/variance.{csv,md}         each pair's difference, its seeds-then-images bootstrap interval, and the
                                     shares of its variance from seeds and from test images (variance.py)
    tables/runs_not_completed.{csv,md}
    tables/tuning.{csv,md}           per tuning study x optimizer: trials, runs, epochs, device-hours, winner, edge
    tables/fidelity*.{csv,md}        fidelity ladders (fidelity.py): per rung (means, intervals, ranks), agreement
                                     with the top rung (tau-b, kept orders, cost), flips, verdicts per rung (when
                                     a hypothesis is judged), and tables/fidelity_tuning.* (tuned values per
                                     budget, when tuned at several)
    figures/*.png, figures/*.pdf     figures/tuning-<study>.* : every trial of a tuning study's search;
                                     figures/fidelity_ranks*, fidelity_metric* : each ladder's bump chart and metric
report.md, the page that embeds them, is rendered by report.py. A figure that cannot be drawn is a warning in
the report, never a crash: the tables and verdicts are written regardless.
"""

import dataclasses
import functools
import sys
from collections.abc import Callable
from typing import Any

import pandas as pd

from optbench.analysis.headline import is_default_only
from optbench.analysis.judging.tuning_report import TuningRecords, tuning_display, tuning_table
from optbench.analysis.judging.verdicts import Judgement, NotTested, verdict_table
from optbench.analysis.writing.figures import accuracy as accuracy_figures
from optbench.analysis.writing.figures import curves as curve_figures
from optbench.analysis.writing.figures import ladders as ladder_figures
from optbench.analysis.writing.figures import profiles as profile_figures
from optbench.analysis.writing.figures import style as figure_style
from optbench.analysis.writing.figures import transitions as transition_figures
from optbench.analysis.writing.figures import tuning as tuning_figures
from optbench.analysis.writing.names import short_name
from optbench.analysis.writing.output import OutputDir
from optbench.analysis.writing.report_hypotheses import verdict_rows
from optbench.analysis.writing.report_parts import FidelityParts, TuningParts
from optbench.analysis.writing.tables import (
    PRIMARY_METRIC,
    display_table,
    pairwise_display,
    problem_display,
    problem_runs,
    to_latex,
    to_markdown,
    variance_display,
)
from optbench.formats.aggregate_tables import (
    HYPOTHESES,
    PAIRWISE,
    RESULTS,
    RUNS_NOT_COMPLETED,
    SETTINGS,
    SUMMARY,
    TUNING,
    VARIANCE,
    VERDICTS,
    csv_text,
    robust_table,
)

PRIMARY_LABEL = "test accuracy at best validation (%)"
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
# Columns a folder holding a non-default workload's runs adds to summary.csv (a folder of CIFAR runs keeps its
# columns): the workload, and a language model's headline (best validation loss) with bpc, test loss, steps to target.
WORKLOAD_RUN_COLUMNS = ["workload", "val_loss_best", "val_bpc_best", "test_loss_at_best_val", "steps_to_target"]
PlannedFigure = tuple[str, str, Callable[[], Any]]  # (caption, file stem, maker of a figure or None)


# ---- tables ----------------------------------------------------------------------------------------------


def write_summary_csv(out: OutputDir, runs: pd.DataFrame) -> None:
    config_columns = sorted(column for column in runs.columns if column.startswith("cfg."))
    leading = RUN_COLUMNS if is_default_only(runs) else [*RUN_COLUMNS[:4], *WORKLOAD_RUN_COLUMNS, *RUN_COLUMNS[4:]]
    columns = [column for column in leading if column in runs] + config_columns
    out.write_text(SUMMARY, csv_text(SUMMARY, runs[columns]))


def write_tables(
    out: OutputDir,
    results: pd.DataFrame,
    tests: pd.DataFrame,
    runs: pd.DataFrame,
    target_acc: float,
    stems: dict[str, str],
) -> list[str]:
    """The results, pairwise and runs-not-completed tables; returns every file written so far, summary.csv and
    settings.csv first."""
    files = [SUMMARY, SETTINGS]
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
    out.write_text(PAIRWISE, csv_text(PAIRWISE, tests))
    out.write_text("tables/pairwise.md", per_setting_markdown(tests, pairwise_display))
    out.write_text(
        "tables/pairwise.tex", per_setting_latex(tests, pairwise_display, "Pairwise tests", "pairwise", stems)
    )
    files += [PAIRWISE, "tables/pairwise.md", "tables/pairwise.tex"]
    problems = problem_runs(runs)
    out.write_text(RUNS_NOT_COMPLETED, csv_text(RUNS_NOT_COMPLETED, problems))
    out.write_text("tables/runs_not_completed.md", to_markdown(problem_display(problems)))
    files += [RUNS_NOT_COMPLETED, "tables/runs_not_completed.md"]
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


def write_robust_tables(out: OutputDir, tables: dict[str, pd.DataFrame]) -> list[str]:
    files = []
    for name, table in tables.items():
        out.write_text(robust_table(name), csv_text(robust_table(name), table))
        out.write_text(f"tables/{name}.md", to_markdown(table.round(4)))
        files += [robust_table(name), f"tables/{name}.md"]
    return files


def write_variance_table(out: OutputDir, table: pd.DataFrame) -> list[str]:
    out.write_text(VARIANCE, csv_text(VARIANCE, table))
    out.write_text("tables/variance.md", to_markdown(variance_display(table)))
    return [VARIANCE, "tables/variance.md"]


def write_verdict_tables(out: OutputDir, judgements: list[Judgement], untested: list[NotTested]) -> list[str]:
    """tables/verdicts.csv (when any hypothesis is named) and tables/hypotheses.csv (when any was judged)."""
    files = []
    if judgements or untested:
        out.write_text(VERDICTS, csv_text(VERDICTS, verdict_table(judgements, untested)))
        files.append(VERDICTS)
    if judgements:
        rows = [row for judgement in judgements for row in verdict_rows(judgement.fixed)]
        out.write_text(HYPOTHESES, csv_text(HYPOTHESES, pd.DataFrame(rows)))
        files.append(HYPOTHESES)
    return files


# ---- the main figures ------------------------------------------------------------------------------------


def write_figures(
    out: OutputDir,
    runs: pd.DataFrame,
    curves: pd.DataFrame,
    settings: list[str],
    arms: list[str],
    stems: dict[str, str],
    warnings: list[str],
) -> list[tuple[str, str]]:
    """Draw every figure the data allows; a figure that fails becomes a warning in the report, not a crash.
    `stems`: each setting's short file-name stem (names.file_stems)."""
    style = figure_style.Style(runs, arms)
    planned = [
        *summary_figures(runs, settings, arms, style),
        *per_setting_figures(runs, curves, settings, arms, style, stems),
    ]
    return draw_planned(out, planned, warnings)


def summary_figures(
    runs: pd.DataFrame, settings: list[str], arms: list[str], style: figure_style.Style
) -> list[PlannedFigure]:
    """The figures over every setting at once: accuracy per optimizer, against noise, LR and wall time; profiles."""
    metric = (PRIMARY_METRIC, PRIMARY_LABEL)
    return [
        (
            "Test accuracy per optimizer",
            "final_accuracy",
            lambda: accuracy_figures.final_accuracy(runs, settings, arms, style, *metric),
        ),
        (
            "Accuracy vs label-noise rate",
            "accuracy_vs_noise",
            lambda: accuracy_figures.accuracy_vs_noise(runs, arms, style, *metric),
        ),
        (
            "Accuracy vs learning rate",
            "accuracy_vs_lr",
            lambda: accuracy_figures.accuracy_vs_lr(runs, settings, style, *metric),
        ),
        (
            "Accuracy vs wall time",
            "accuracy_vs_wall_time",
            lambda: accuracy_figures.accuracy_vs_wall_time(runs, settings, arms, style, *metric),
        ),
        (
            "Performance profiles",
            "performance_profiles",
            lambda: profile_figures.performance_profiles(runs, settings, arms, style),
        ),
    ]


def per_setting_figures(
    runs: pd.DataFrame,
    curves: pd.DataFrame,
    settings: list[str],
    arms: list[str],
    style: figure_style.Style,
    stems: dict[str, str],
) -> list[PlannedFigure]:
    """Learning curves and memorisation curves of every setting, then the transition matrix of each setting under
    human label noise."""
    learning: list[PlannedFigure] = [
        (
            f"Learning curves: {setting}",
            f"learning_curves_{stems[setting]}",
            functools.partial(curve_figures.learning_curves, runs, curves, setting, arms, style),
        )
        for setting in settings
    ]
    memorization: list[PlannedFigure] = [
        (
            f"Memorization of noisy labels: {setting}",
            f"memorization_{stems[setting]}",
            functools.partial(curve_figures.memorization_curves, runs, curves, setting, arms, style),
        )
        for setting in settings
    ]
    transitions: list[PlannedFigure] = [
        (
            f"Human label noise, who was taken for whom: {setting}",
            f"transition_matrix_{stems[setting]}",
            functools.partial(transition_figures.transition_heatmap, runs, setting),
        )
        for setting in human_settings(runs, settings)
    ]
    return learning + memorization + transitions


def human_settings(runs: pd.DataFrame, settings: list[str]) -> list[str]:
    """The settings under human label noise whose runs recorded a transition matrix."""
    if "transition_matrix" not in runs:
        return []
    recorded = runs[runs["transition_matrix"].map(lambda matrix: isinstance(matrix, list))]
    return [setting for setting in settings if setting in set(recorded["setting"])]


def draw_planned(out: OutputDir, planned: list[PlannedFigure], warnings: list[str]) -> list[tuple[str, str]]:
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
        figure_style.close(figure)
        drawn.append((caption, f"figures/{stem}.png"))
    return drawn


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


# ---- tuning studies and fidelity ladders -----------------------------------------------------------------


def write_tuning(
    out: OutputDir,
    tuning: TuningRecords,
    runs: pd.DataFrame,
    set_aside: list[str],
    draw_figures: bool,
    warnings: list[str],
) -> TuningParts | None:
    """tables/tuning.{csv,md} and a search figure per tuning study; None when there is no tuning file.
    `runs`: the main comparison's (their optimizers keep their colours); `set_aside`: the tuning trials' run ids."""
    if not tuning.studies:
        return None
    table = tuning_table(tuning.studies)
    out.write_text(TUNING, csv_text(TUNING, table))
    out.write_text("tables/tuning.md", to_markdown(tuning_display(table)))
    names = [*runs["optimizer"].map(str), *table["optimizer"]]
    colours = figure_style.optimizer_colours(names)  # the main figures' colours, for the same optimizers
    stems = [f"tuning-{stem}" for stem in unique_names([study.name for study in tuning.studies])]
    planned: list[PlannedFigure] = [
        (f"Tuning search: {study.name}", stem, functools.partial(tuning_figures.tuning_search, study, colours))
        for study, stem in zip(tuning.studies, stems)
    ]
    drawn = {path for _, path in draw_planned(out, planned, warnings)} if draw_figures else set()
    figures = {
        study.source: f"figures/{stem}.png"
        for study, stem in zip(tuning.studies, stems)
        if f"figures/{stem}.png" in drawn
    }
    return TuningParts(studies=tuning.studies, table=table, figures=figures, set_aside=set_aside)


def write_fidelity(
    out: OutputDir, judged: FidelityParts | None, draw_figures: bool, warnings: list[str]
) -> FidelityParts | None:
    """The fidelity ladders' tables and figures; `judged`: the ladders analysed and judged rung by rung (its figures
    and table files not yet filled in), None when the runs form no ladder. Returns it with them filled in."""
    if judged is None:
        return None
    tables = {
        "fidelity": pd.concat([ladder.per_rung for ladder in judged.ladders]),
        "fidelity_agreement": pd.concat([ladder.agreement for ladder in judged.ladders]),
        "fidelity_orders": pd.concat([ladder.orders for ladder in judged.ladders]),
        "fidelity_flips": pd.concat([ladder.flips for ladder in judged.ladders]),
    }
    verdicts = pd.concat(judged.verdicts)
    if len(verdicts):  # a hypothesis judged at the rungs (none named, or a study's `hypotheses: []`: no empty file)
        tables["fidelity_verdicts"] = verdicts
    if not judged.tuned.empty:
        tables["fidelity_tuning"] = judged.tuned
    files = []
    for name, table in tables.items():
        out.write_text(f"tables/{name}.csv", csv_text(f"tables/{name}.csv", table))  # aggregate_tables checks
        out.write_text(f"tables/{name}.md", to_markdown(table.round(4)) if len(table) else "_(none)_\n")
        files += [f"tables/{name}.csv", f"tables/{name}.md"]
    drawn = draw_planned(out, fidelity_figures(judged.ladders), warnings) if draw_figures else []
    return dataclasses.replace(judged, figures=drawn, table_files=files)


def fidelity_figures(ladders: list) -> list[PlannedFigure]:
    """Per ladder (ladder_runs.Ladder, analysed): its bump chart of ranks, then its metric, against budget."""
    stems = unique_names([ladder.setting for ladder in ladders])
    styles = [figure_style.Style(pd.concat([rung.runs for rung in ladder.rungs]), ladder.arms) for ladder in ladders]
    return [
        entry
        for ladder, stem, style in zip(ladders, stems, styles)
        for entry in (
            (
                f"Rank against budget: {ladder.setting}",
                f"fidelity_ranks_{stem}",
                lambda ladder=ladder, style=style: ladder_figures.fidelity_ranks(
                    ladder.per_rung, ladder.arms, style, ladder.setting
                ),
            ),
            (
                f"Test accuracy against budget: {ladder.setting}",
                f"fidelity_metric_{stem}",
                lambda ladder=ladder, style=style: ladder_figures.fidelity_metric(
                    ladder.per_rung, ladder.arms, style, ladder.setting, PRIMARY_LABEL
                ),
            ),
        )
    ]
