"""report.md: the answer in one page, with the verdicts, tables and figures it rests on.

`render_report(parts)` returns Markdown: run counts by status and the rule that only completed runs
enter means; one verdict table (a row per hypothesis and scope: the sequential decision where its study ran
until decided, else the fixed-design verdict; analysis/judging/verdicts.py), the hypotheses not tested in one line,
then each hypothesis with the numbers behind every required comparison (labelled the fixed-design evaluation
where a sequential decision is the verdict) and, for an inconclusive one, the seeds that would decide it;
the looks of the sequential studies;
the results table per setting; the figures (relative links to figures/*.png, PDFs beside them);
the pairwise tests; where each comparison's variance comes from (seeds or test images); every run
that did not complete or needed a warning; the tuning studies (protocol, cost, winners, edge warnings,
search figure); the fidelity ladders (fidelity.py: rank agreement with the top rung, flips, cost, verdicts
per rung, tuned values per budget); and the definitions used.
Also `verdict_rows` for the hypotheses CSV.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from optbench.analysis.judging import fidelity
from optbench.analysis.judging.hypotheses import Check, Verdict
from optbench.analysis.judging.seed_planner import comparison_units, plan_seeds, plan_table
from optbench.analysis.judging.tuning_report import TuningStudy, protocol_sentence, tuning_display
from optbench.analysis.judging.verdicts import SEQUENTIAL, Judgement, NotTested, rule_text, scope_text, seeds_text
from optbench.analysis.statistics.variance import RESAMPLES, variance_display
from optbench.analysis.writing import fidelity_tables
from optbench.analysis.writing.tables import (
    NOT_COMPLETED,
    difference_interval,
    display_table,
    exact_text,
    p_text,
    pairwise_display,
    power_text,
    problem_display,
    to_markdown,
)
from optbench.formats.decision_record import DecisionRecord, HypothesisDecision
from optbench.formats.run_summary import COMPLETED

VERDICT_MARK = {"supported": "SUPPORTED", "rejected": "REJECTED", "inconclusive": "INCONCLUSIVE"}


@dataclass
class TuningParts:
    studies: list[TuningStudy]  # tuning.read_tuning
    table: pd.DataFrame  # tuning.tuning_table
    figures: dict[str, str]  # tuning file (study.source) -> png path relative to report.md
    set_aside: list[str]  # run ids found here that the tuning files list: not in the main comparison


@dataclass
class FidelityParts:
    ladders: list  # fidelity.Ladder, analysed
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
    pairwise: pd.DataFrame  # stats.pairwise
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
    variance: pd.DataFrame | None = None  # variance.variance_table
    fidelity: FidelityParts | None = None  # fidelity ladders found (settings differing only in budget), or None


def render_report(parts: ReportParts) -> str:
    sections = [
        header(parts),
        hypotheses_section(parts),
        sequential_section(parts),
        results_section(parts),
        robust_section(parts),
        variance_section(parts),
        figures_section(parts),
        pairwise_section(parts),
        problems_section(parts),
        tuning_section(parts),
        fidelity_section(parts),
        method_section(parts),
        warnings_section(parts),
    ]
    return "\n".join(section for section in sections if section)


def header(parts: ReportParts) -> str:
    counts = parts.runs["status"].value_counts()
    count_text = ", ".join(f"{counts[status]} {status}" for status in [COMPLETED, *NOT_COMPLETED] if status in counts)
    others = [status for status in counts.index if status not in [COMPLETED, *NOT_COMPLETED]]
    count_text += "".join(f", {counts[status]} {status}" for status in others)
    varying = ", ".join(f"`{key}`" for key in parts.varying_keys) or "none"
    return "\n".join(
        [
            f"# Results: `{parts.results_dir}`",
            "",
            f"Generated {parts.generated} by `{parts.command}`.",
            "",
            f"**{len(parts.runs)} runs**: {count_text or 'none outside the tuning studies'}.",
            "",
            *set_aside_note(parts),
            "> Only **completed** runs enter means, intervals and tests. Diverged and failed runs are results (the "
            "optimizer failed at that setting): they are counted in the tables, drawn apart in the figures, rank "
            "and enter the robust aggregates at their recorded score (or chance), cost infinity in the performance "
            "profiles, and a required arm left with fewer than `min_seeds` completed runs makes a verdict "
            "inconclusive. Interrupted, running and unfinished runs are counted and listed under "
            "[Runs not completed](#runs-not-completed-or-with-warnings).",
            "",
            f"Runs are grouped by dataset, noise, noise rate and optimizer, plus every config field that differs "
            f"between runs (here: {varying}), so different settings are never averaged together.",
            "",
            *names_note(parts),
        ]
    )


def names_note(parts: ReportParts) -> list[str]:
    """What every run shares, said once (labels show only what differs), and where the file names are explained."""
    shared = ", ".join(f"`{key}={value}`" for key, value in parts.constant_keys.items())
    lines = [f"Same in every run (left out of the names below): {shared}.", ""] if shared else []
    return lines + [
        "Settings are named by dataset, noise and the fields that differ; "
        "[`settings.csv`](settings.csv) maps each short name in the figure files to its full setting.",
        "",
    ]


def set_aside_note(parts: ReportParts) -> list[str]:
    if parts.tuning is None or not parts.tuning.set_aside:
        return []
    return [
        f"{len(parts.tuning.set_aside)} more run directories are tuning trials (listed in `tuning-*.json`): set "
        f"aside, not counted above; see [Tuning](#tuning).",
        "",
    ]


# ---- hypotheses ---------------------------------------------------------------------------------------


def hypotheses_section(parts: ReportParts) -> str:
    lines = [
        "## Hypotheses",
        "",
        parts.hypotheses_note,
        "",
        "Each hypothesis is judged once, on the settings of the study that tests it (*judged on*): the study "
        "run until decided whose decision record is here, else the study named with `--study`, else every "
        "setting here that matches its `where:`. Where its study ran until decided, the sequential decision "
        "is the verdict; the fixed-design evaluation of the same runs is in the hypothesis's section below.",
        "",
    ]
    if parts.judgements:
        lines += ["| hypothesis | judged on | verdict | rule | seeds | why |", "|---|---|---|---|---|---|"]
        lines += [
            f"| {judgement.hypothesis.id} {judgement.hypothesis.title} | {scope_text(judgement)} | "
            f"**{VERDICT_MARK[judgement.verdict]}** | {rule_text(judgement)} | {seeds_text(judgement)} | "
            f"{judgement.reason.replace('|', '/')} |"
            for judgement in parts.judgements
        ]
        lines.append("")
    lines += untested_lines(parts.untested)
    for judgement in parts.judgements:
        lines += judgement_block(judgement, parts.alpha)
        if judgement.verdict == "inconclusive":
            lines += seed_plan_lines(judgement.fixed)
    return "\n".join(lines)


def untested_lines(untested: list[NotTested]) -> list[str]:
    """One line naming the hypotheses not tested here, grouped by why."""
    if not untested:
        return []
    by_why: dict[str, list[str]] = {}
    for entry in untested:
        by_why.setdefault(entry.why, []).append(entry.hypothesis.id)
    return ["Not judged here: " + "; ".join(f"{', '.join(names)} ({why})" for why, names in by_why.items()) + ".", ""]


def seed_plan_lines(verdict: Verdict) -> list[str]:
    """How many seeds would decide it (analysis/judging/seed_planner.py), as `python src/study.py ID --plan-seeds`
    prints, from the runs and settings the verdict was judged on."""
    test = verdict.hypothesis.test
    plan = plan_seeds(verdict, verdict.runs)
    if not plan.comparisons:
        return []
    scale, unit = comparison_units(test)
    return [
        f"**Seeds needed** (these runs as a pilot, on the settings judged above: paired t, 80 % power against the "
        f"observed effect, the sd at its 80 % upper bound; `python src/study.py {verdict.hypothesis.id} "
        f"--plan-seeds --pilot DIR`):",
        "",
        to_markdown(plan_table(plan, scale, unit)),
        plan.advice() + ".",
        "",
    ]


def judgement_block(judgement: Judgement, alpha: float) -> list[str]:
    """The hypothesis's section: its verdict and why, then the comparisons behind it. Under a sequential decision
    those are the fixed-design evaluation of the same runs, labelled as such: not a second verdict."""
    hypothesis, verdict = judgement.hypothesis, judgement.fixed
    lines = [
        f"### {hypothesis.id}: {hypothesis.title}: {VERDICT_MARK[judgement.verdict]}",
        "",
        f"> {hypothesis.statement}",
        "",
        f"*Defined in* `{hypothesis.source}`. *Judged on* {scope_text(judgement)}, by the {rule_text(judgement)}: "
        f"{judgement.reason}.",
        "",
    ]
    if judgement.scope.rule == SEQUENTIAL:
        lines += [
            f"Fixed-design evaluation of the same runs (the {judgement.seeds_spent} seeds of that look), for "
            f"reference only: it treats a seed count chosen by looking at the data as fixed in advance, so it "
            f"over-states the evidence and is not the verdict. The comparisons at a fixed alpha: "
            f"{verdict.reason}.",
            "",
        ]
    if verdict.checks:
        lines.append(to_markdown(pd.DataFrame(verdict_rows(verdict))))
    lines += verdict_notes(verdict, sequential=judgement.scope.rule == SEQUENTIAL)
    return lines


def verdict_notes(verdict: Verdict, sequential: bool = False) -> list[str]:
    """The exact tests' verdict where it differs (not under a sequential decision, whose rule is the verdict),
    post-selection, and how to read an inconclusive verdict."""
    lines = []
    if verdict.exact_verdict and verdict.exact_verdict != verdict.verdict and not sequential:
        floors = sorted(
            {
                check.numbers["exact_min_p"]
                for check in verdict.checks
                if np.isfinite(check.numbers.get("exact_min_p", math.nan))
            }
        )
        floor = f" (their smallest possible p here: {', '.join(p_text(p) for p in floors)})" if floors else ""
        lines += [
            f"A check, not the verdict: the same rule on the exact sign-flip/permutation tests alone, which "
            f"assume no normality, would say *{verdict.exact_verdict}*{floor}.",
            "",
        ]
    if any(check.numbers.get("post_selection") for check in verdict.checks):
        lines += [
            "Post-selection: some configurations were chosen by validation accuracy on seeds they are tested "
            "on here (among several arms in the folder, or by a tuning study whose record is in it), which "
            "favours them; confirm on seeds the selection did not see.",
            "",
        ]
    if verdict.verdict == "inconclusive" and not sequential:
        lines += [
            "Inconclusive says these runs cannot decide, not that the optimizers are equal. Look at each "
            "comparison's interval and *detects*: an interval that straddles 0 but is narrow rules out large "
            "differences; a *detects* value larger than the differences you care about says more seeds are "
            "needed.",
            "",
        ]
    return lines


def is_accuracy(metric: str) -> bool:
    return "acc" in metric and "epochs" not in metric


def value_text(value: float, metric: str) -> str:
    if value is None or not np.isfinite(value):
        return "n/a"
    return f"{100 * value:.2f}%" if is_accuracy(metric) else f"{value:.3g}"


def difference_text(value: float, metric: str) -> str:
    if value is None or not np.isfinite(value):
        return "n/a"
    return f"{100 * value:+.2f} pp" if is_accuracy(metric) else f"{value:+.3g}"


def verdict_rows(verdict: Verdict) -> list[dict]:
    test = verdict.hypothesis.test
    kind, metric = test.kind, test.metric
    return [check_row(verdict.hypothesis.id, check, kind, metric, test.alpha) for check in verdict.checks]


def check_row(hypothesis_id: str, check: Check, kind: str, metric: str, alpha: float) -> dict:
    numbers = check.numbers
    if check.outcome == "missing":
        subject = other = "—"
    elif kind == "noise_drop":
        subject = drop_text(numbers, "subject", metric)
        other = drop_text(numbers, "other", metric)
    else:
        shown = "epochs" if kind == "epochs_to_fraction_of_reference" else metric
        subject = f"{value_text(numbers.get('mean_subject', math.nan), shown)} (n={numbers.get('n_subject', 0)})"
        other = f"{value_text(numbers.get('mean_other', math.nan), shown)} (n={numbers.get('n_other', 0)})"
        metric = shown
    notes = check.detail
    if kind == "epochs_to_fraction_of_reference" and "target" in numbers:
        notes = "; ".join(filter(None, [f"target val acc {100 * numbers['target']:.2f}%", notes]))
    scale, unit = (100.0, "pp") if is_accuracy(metric) else (1.0, metric)
    return {
        "hypothesis": hypothesis_id,
        "setting": check.setting,
        "comparison": check.comparison,
        "expected": check.expected,
        "subject": subject,
        "other": other,
        f"difference ({unit}) [{100 * (1 - alpha):g}% CI]": difference_interval(
            numbers.get("difference", math.nan),
            numbers.get("ci_low", math.nan),
            numbers.get("ci_high", math.nan),
            scale,
        ),
        "test": numbers.get("test", "—"),
        "p": p_text(numbers.get("p", math.nan)),
        "p (Holm)": p_text(numbers.get("p_holm", math.nan)),
        "exact p (smallest possible)": exact_text(
            numbers.get("exact_p", math.nan), numbers.get("exact_min_p", math.nan)
        ),
        "effect size": "n/a"
        if not np.isfinite(numbers.get("effect_size", math.nan))
        else f"{numbers.get('effect_kind', 'd')} = {numbers['effect_size']:.2f}",
        "power": power_text(power_row(numbers), scale, unit) if "p" in numbers else "—",
        "outcome": check.outcome,
        "notes": notes or "",
    }


def power_row(numbers: dict) -> dict:
    """A check's numbers in the shape tables.power_text reads (a pairwise row's field names)."""
    return {
        "p_value": numbers.get("p", math.nan),
        "power": numbers.get("power", math.nan),
        "min_detectable_difference": numbers.get("min_detectable_difference", math.nan),
        "min_detectable_d": numbers.get("min_detectable_d", math.nan),
        "effect_kind": numbers.get("effect_kind", "d"),
        "note": "",
    }


def drop_text(numbers: dict, who: str, metric: str) -> str:
    if f"drop_{who}" not in numbers:
        return "n/a"
    return (
        f"drop {difference_text(numbers[f'drop_{who}'], metric).lstrip('+')} "
        f"(clean {value_text(numbers[f'mean_{who}_clean'], metric)}, noisy {value_text(numbers[f'mean_{who}_noisy'], metric)}; "  # noqa: E501
        f"n={numbers[f'n_{who}_clean']}/{numbers[f'n_{who}_noisy']})"
    )


def sequential_section(parts: ReportParts) -> str:
    """Each look of a study run until decided (`study.py --until-decided`): seeds, and each decision: the record
    behind the sequential verdicts above."""
    if not parts.sequential:
        return ""
    lines = [
        "## Sequential decisions",
        "",
        "These studies added seeds at pre-set looks until each hypothesis was decided, each look on its own "
        "seeds and on the study's planned settings (*settings*). The decision a hypothesis stopped at is its "
        "verdict in the table above; this is the record of every look.",
        "",
    ]
    for record in parts.sequential:
        lines += [
            f"Study `{record.study}`, looks at {', '.join(map(str, record.looks))} seeds: {record.rule}.",
            "",
        ]
        rows = [
            {
                "look": look.look + 1,
                "seeds": look.seeds,
                "hypothesis": name,
                "settings": decided_over(decision),
                "decision": decision.decision,
                "why": decision.reason,
                "seeds spent": decision.seeds,
            }
            for look in record.decisions
            for name, decision in look.hypotheses.items()
        ]
        lines += [to_markdown(pd.DataFrame(rows)) if rows else "_No look taken yet._", ""]
    return "\n".join(lines)


def decided_over(decision: HypothesisDecision) -> str:
    """The settings a look's decision compared in (its study's plan)."""
    return "; ".join(dict.fromkeys(key.rsplit(": ", 1)[0] for key in decision.z)) or "—"


# ---- tables, figures, pairwise tests, problem runs ----------------------------------------------------


def results_section(parts: ReportParts) -> str:
    lines = [
        "## Results by setting",
        "",
        "Test accuracy at the epoch with the best validation accuracy is the headline number (model selection "
        "on validation, reported on test); mean ± sd over completed seeds, with the 95% confidence interval "
        "of the mean. *Best test acc* takes the best epoch by looking at the test set: optimistic, shown for "
        "comparison with papers that report it. *seeds* = completed runs / all runs. *rank* counts diverged "
        "and failed runs at their recorded score (or chance). *p vs best (Holm)*: the pairwise test against "
        "the top-ranked optimizer, Holm-adjusted over every pair of the setting since the top is chosen "
        "after looking; a rank whose p is large is a tie.",
        "",
        "Files: " + ", ".join(f"[`{path}`]({path})" for path in parts.table_files),
        "",
    ]
    if not len(parts.results):
        return "\n".join(lines + ["_No runs._", ""])
    lines += mixed_environment_note(parts.runs)
    for setting, group in parts.results.groupby("setting", sort=False):
        lines += [f"### {setting}", "", to_markdown(display_table(group, parts.target_acc))]
    return "\n".join(lines)


def environment_value(value) -> str:
    """A runs-table cell as the note shows it: 'unknown' where not recorded, 2 not 2.0."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "unknown"
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def mixed_environment_note(runs: pd.DataFrame) -> list[str]:
    """One paragraph naming each setting whose runs come from more than one processor kind, thread count or
    precision: each changes the numbers like a seed does (docs/runs.md#reproducibility); [] when none does."""
    columns = [column for column in ("processor", "threads", "precision") if column in runs.columns]
    mixed = []
    for setting, group in runs.groupby("setting", sort=False):
        kinds = {column: sorted(group[column].map(environment_value).unique()) for column in columns}
        named = [f"{column} {' / '.join(values)}" for column, values in kinds.items() if len(values) > 1]
        if named:
            mixed.append(f"*{setting}* ({'; '.join(named)})")
    if not mixed:
        return []
    return [
        f"**Mixed environments.** The runs of {len(mixed)} setting(s) were trained on more than one processor kind, "
        "thread count or precision, each of which moves the numbers about as much as a seed "
        "(docs/runs.md, Reproducibility): "
        + ", ".join(mixed)
        + " ('unknown': not recorded; `python src/replay.py RUN_DIR` re-trains one here).",
        "",
    ]


def robust_section(parts: ReportParts) -> str:
    """Robust aggregates across settings (Agarwal et al. 2021) and performance profiles; details in the tables."""
    if not parts.robust:
        return ""
    improvement, profiles = parts.robust["improvement"], parts.robust["profiles"]
    across = improvement[improvement["setting"].str.startswith("all ")] if len(improvement) else improvement
    lines = [
        "## Robust aggregates and performance profiles",
        "",
        "Interquartile mean (IQM) of test accuracy at best validation with 95% stratified bootstrap intervals "
        "(runs resampled within each setting): [`tables/robust.md`](tables/robust.md); across settings each "
        "run's accuracy is first normalised per setting, (accuracy - chance) / (best arm's mean - chance), so "
        "every setting weighs alike. Probability of improvement P(A > B), the chance a run of A beats a run of "
        "B (ties half), averaged over settings, with its bootstrap interval; per setting in "
        "[`tables/improvement.md`](tables/improvement.md). Diverged and failed runs count here at their "
        "recorded score, or chance when they recorded none. *under_covering*: fewer than 5 runs per setting, "
        "where a 95% percentile interval covers only about 80%.",
        "",
        to_markdown(across.round(3)) if len(across) else "_Fewer than two settings: per setting only._",
        "",
        "Performance profiles: the fraction of the settings an optimizer ran in where it reaches the "
        "validation target within tau times the best optimizer's cost (median over seeds; a run that never "
        "reaches it, diverges or fails costs infinity), in epochs and in wall-clock seconds.",
        "",
        to_markdown(profiles.round(3)),
        "",
    ]
    return "\n".join(lines)


def variance_section(parts: ReportParts) -> str:
    """Seeds vs the finite test set as sources of each comparison's variance (analysis/statistics/variance.py)."""
    if parts.variance is None:
        return ""
    lines = [
        "## Where the variance comes from: seeds or test images",
        "",
        "From each run's per-image test predictions at its selected epoch (`predictions.npz`), paired by "
        "seed and by image: *from seeds* is the share of var_s(per-seed difference) / S, *from test images* "
        "the share of var_i(per-image difference averaged over seeds) / N, the variance each source alone "
        "gives (Bouthillier et al. 2021). A large seed share asks for more seeds; a large test-image share "
        "means the test set's size, not the seeds, limits how precisely the difference is known. Interval: "
        f"{RESAMPLES} rounds of a two-level bootstrap with a fixed seed, seeds then test images, the image draw shared by every seed and both optimizers (same test set); it counts the "  # noqa: E501
        "seed x image interaction more than once, so it is conservative (wider). Completed runs only: "
        "[`tables/variance.md`](tables/variance.md).",
        "",
    ]
    if not len(parts.variance):
        return "\n".join(
            lines
            + [
                "_No pair of optimizers has runs with `predictions.npz` for a common seed (runs "
                "made before it was kept have none)._",
                "",
            ]
        )
    return "\n".join(lines + [to_markdown(variance_display(parts.variance)), ""])


def figures_section(parts: ReportParts) -> str:
    lines = ["## Figures", "", "Each figure is also saved as PDF beside the PNG.", ""]
    if not parts.figures:
        lines.append("_No figures (`--no-figures`, or no completed run has metrics to draw)._")
    for caption, path in parts.figures:
        lines += [f"### {caption}", "", f"![{caption}]({path})", f"([PDF]({path[:-4]}.pdf))", ""]
    return "\n".join(lines)


def pairwise_section(parts: ReportParts) -> str:
    lines = [
        "## Pairwise tests",
        "",
        f"Test accuracy at best validation, every pair of optimizers within a setting, two-sided at alpha = "
        f"{parts.alpha}. {TEST_RULE} p (Holm) corrects for the number of pairs in the setting (the family); "
        f"*significant* in pairwise.csv uses it. *effect*: d_z (paired) is the mean difference over the sd of "
        f"the per-seed differences; g (unpaired) is Hedges' g. *power*: the test's chance of p < alpha "
        f"against the observed effect at the observed spread, and the smallest difference it detects 80% of "
        f"the time at this n.",
        "",
    ]
    if not len(parts.pairwise):
        return "\n".join(lines + ["_No setting has two optimizers with completed runs._", ""])
    for setting, group in parts.pairwise.groupby("setting", sort=False):
        lines += [f"### {setting}", "", to_markdown(pairwise_display(group))]
    return "\n".join(lines)


def problems_section(parts: ReportParts) -> str:
    lines = ["## Runs not completed or with warnings", ""]
    if not len(parts.problems):
        return "\n".join(lines + ["All runs completed and read cleanly.", ""])
    lines += [
        "Runs that did not complete enter no mean. A completed run listed here does count; it had a file "
        "problem, noted beside it.",
        "",
        to_markdown(problem_display(parts.problems)),
    ]
    return "\n".join(lines)


def tuning_section(parts: ReportParts) -> str:
    """How the hyperparameters were tuned, what it cost, and whether the search was wide enough."""
    tuning = parts.tuning
    if tuning is None or not tuning.studies:
        return ""
    listed = len(frozenset().union(*(study.run_dirs for study in tuning.studies)))
    devices = (
        ", ".join(
            sorted({device.strip() for text in tuning.table["devices"] for device in text.split(",") if device.strip()})
        )
        or "devices not recorded"
    )
    lines = [
        "## Tuning",
        "",
        f"{len(tuning.set_aside)} run directories found here are tuning trials (the tuning files list {listed}): "
        "they are set aside and enter no table, test, verdict or figure above, because their validation scores "
        "chose the hyperparameters.",
        "",
        f"**Total tuning cost: {tuning.table['device_hours'].sum():.3g} device-hours** over "
        f"{int(tuning.table['runs'].sum())} runs ({devices}). Device-hours are the listed runs' wall times "
        f"summed; scores are validation accuracy, in %, mean ± sd over the winner's seeds.",
        "",
        "Files: [`tables/tuning.csv`](tables/tuning.csv), [`tables/tuning.md`](tables/tuning.md)",
        "",
    ]
    for study in tuning.studies:
        lines += tuning_study_block(study, tuning)
    return "\n".join(lines)


def fidelity_section(parts: ReportParts) -> str:
    """Does the cheap budget rank the optimizers as the top one does? One block per ladder (docs/fidelity.md)."""
    if parts.fidelity is None:
        return ""
    lines = [
        "## Fidelity: what the cheaper budgets got right",
        "",
        "Runs whose settings differ only in budget keys (epochs, width, training images) form a ladder, one "
        "rung per budget (with `--study`, the study's rungs: one tuned at its own budget is a rung of its own); "
        "the top rung is the planned top, the largest budget. Every run that ended is a result: a diverged or "
        "failed run counts at its recorded score, or chance, and is named. One seed set per comparison: a "
        "rung's means, ranks and tests use the seeds every optimizer ran there, a rung against the top the "
        "seeds both share (n and seeds in the tables). An order is *established* when the pairwise test "
        "(paired t by seed, Holm over the pairs, as in the pairwise tables) is significant; at a rung it is "
        "*reproduced* (established there too, same direction), *contradicted* (established, opposite "
        "direction) or *undetermined*. Each pair's *change* is its difference at the rung minus at the top, "
        "with simultaneous 95 % intervals over the pairs (Tukey's studentized range on the optimizer x seed "
        "residual); a rung's *resolution* is the largest |change| those intervals allow: its ranking carries "
        "to the top for gaps larger than that. A rung is *faithful* only when the top establishes at least one "
        "order, the rung reproduces every one and contradicts none, and its resolution is within the study's. "
        "Tau-b's interval is the projection of the two rungs' simultaneous intervals (conservative). Cost: "
        "the training-compute share (epochs x images x width^2), which compares like with like; device-hours "
        "as measured are shown beside it, and differ with the machine and its load.",
        "",
        "Files: " + ", ".join(f"[`{path}`]({path})" for path in parts.fidelity.table_files),
        "",
    ]
    plans = parts.fidelity.plans or [None] * len(parts.fidelity.ladders)
    for ladder, verdicts, plan in zip(parts.fidelity.ladders, parts.fidelity.verdicts, plans):
        lines += fidelity_ladder_block(ladder, verdicts, parts, plan)
    if not parts.fidelity.tuned.empty:
        lines += [
            "### Tuned settings across budgets",
            "",
            "The winners of tuning studies run at different budgets, and their ratio to the winners of the one "
            "with the most epochs: a ratio below 1 at short budgets is short-horizon bias (Wu et al. 2018).",
            "",
            to_markdown(parts.fidelity.tuned.round(4)),
            "",
        ]
    return "\n".join(lines)


def fidelity_headline(ladder, plan) -> str:
    """The report's one-sentence answer (README's reading follows it)."""
    cheapest = fidelity.cheapest_faithful_rung(ladder)
    points = ladder.resolution * 100
    if cheapest is None:
        return f"**No faithful rung at a resolution of {points:g} points.** " + (
            fidelity.why_none(ladder, plan) if plan is not None else ""
        )
    row = ladder.agreement.set_index("rung").loc[cheapest]
    whose = "" if ladder.top.label == ladder.top_label else f" (the planned top {ladder.top_label} being incomplete)"
    return (
        f"**Cheapest faithful rung: {cheapest}**: the {cheapest} ranking carries to {ladder.top.label}{whose} for "
        f"gaps larger than {fidelity_tables.resolution_text(row)}, reproducing all {row['established_top']:g} orders "
        f"the top establishes (seeds {row['shared_seed_list']})."
    )


def fidelity_ladder_block(ladder, verdicts: pd.DataFrame, parts: ReportParts, plan=None) -> list[str]:
    assert parts.fidelity is not None  # fidelity_section returned before its ladders without one
    lines = [
        f"### {ladder.setting}: rungs {', '.join(rung.label for rung in ladder.rungs)}",
        "",
        to_markdown(fidelity_tables.per_rung_display(ladder)),
        "",
        to_markdown(fidelity_tables.agreement_display(ladder)),
        "",
    ]
    lines += [f"- {text}." for text in ladder.notes]
    lines += [f"- Not compared: {text}." for text in ladder.not_yet]
    lines += [f"- Missing: {text}." for text in ladder.missing]
    for _, row in ladder.agreement.iterrows():
        if row["rung"] == ladder.top.label:
            continue
        lines.append(
            f"- The {row['rung']} rung cost {row['cost_share'] * 100:.0f} % of the top rung's device-hours "
            f"per run as measured ({row['devices']}; machines and load differ) and {row['budget_share'] * 100:.0f} % "
            f"of its training compute, the figure that compares like with like; {fidelity_tables.orders_text(row)}; "
            f"resolution {fidelity_tables.resolution_text(row)} on seeds {row['shared_seed_list']}; "
            f"{row['same_order']:g} of {row['pairs']:g} pairs ordered alike, tau-b "
            f"{fidelity_tables.interval_text(row['tau_b'], row['tau_low'], row['tau_high'], 1, 2)}."
        )
    lines += ["", fidelity_headline(ladder, plan), ""]
    if not ladder.orders.empty:
        lines += [
            "Each pair's change of difference from the top to the rung (points, a - b, simultaneous 95 % "
            "intervals) and what became of an order the top establishes:",
            "",
            to_markdown(fidelity_tables.orders_display(ladder)),
            "",
        ]
    if not ladder.flips.empty:
        lines += [
            "Pairs ordered differently at a rung and at the top (differences in points, a - b; unadjusted tests):",
            "",
            to_markdown(fidelity_tables.flips_display(ladder.flips)),
            "",
        ]
    if not verdicts.empty:
        lines += [
            "Each hypothesis's verdict at each rung, by the fixed-design rule on that rung's runs alone (the "
            "verdict in the Hypotheses table is the one that counts; this shows how it moves with the budget):",
            "",
            to_markdown(fidelity_tables.verdicts_display(verdicts, ladder)),
            "",
        ]
    lines += [f"![{caption}]({path})" for caption, path in parts.fidelity.figures if ladder.setting in caption]
    return lines + [""]


def tuning_study_block(study: TuningStudy, tuning: TuningParts) -> list[str]:
    rows = tuning.table[tuning.table["file"] == study.source]
    date = f", {study.record.date}" if study.record.date else ""
    lines = [
        f"### Tuning study {study.name}",
        "",
        f"From `{study.source}`{date}. {protocol_sentence(study)}",
        "",
        to_markdown(tuning_display(rows).drop(columns="study")),
        f"Device-hours for this study: {rows['device_hours'].sum():.3g}.",
        "",
    ]
    figure = tuning.figures.get(study.source)
    if figure:
        lines += [f"![Tuning search: {study.name}]({figure})", f"([PDF]({figure[:-4]}.pdf))", ""]
    edges = [f"- {name}: {text}" for name, texts in study.edges.items() for text in texts]
    if edges:
        lines += [
            "**Winners at the edge of the search space** (a better value may lie beyond it: widen the range "
            "and tune again):",
            "",
            *edges,
            "",
        ]
    else:
        lines += ["No winner sits at an edge of its search space.", ""]
    return lines


def method_section(parts: ReportParts) -> str:
    return "\n".join(
        [
            "## Definitions",
            "",
            "- **test acc @ best val**: test accuracy at the epoch with the highest validation accuracy "
            "(summary.json `best`); under label noise on the protocol's validation labels (`noise.validation`, "
            "noisy by default: what a practitioner has). This is the headline, and what H3 uses. "
            "**test acc @ best clean val (oracle)**: at the epoch chosen on the true validation labels "
            "(summary.json `best_clean_val`, noisy runs only): it stops just before memorisation, so it is optimistic.",
            "- **final test acc**: test accuracy after the last epoch. **best test acc (optimistic)**: the highest "
            "test accuracy over all epochs, i.e. selected on test.",
            f"- **epochs to val acc ≥ {100 * parts.target_acc:g}%**: when validation accuracy reaches the target "
            "(`--target-acc`), interpolated linearly between the last evaluation below it and the first at or above "
            "it (the first evaluation's epoch when it is already there); runs that never reach it are counted as "
            "*not reached*, not averaged.",
            "- **mean ± sd**: sample standard deviation (ddof = 1). **95% CI**: mean ± t(0.975, n−1)·sd/√n.",
            "- **wall time**: whole run including evaluation; **throughput**: training images per second.",
            f"- **Tests**: {TEST_RULE} Pairwise tables' *significant* uses Holm-adjusted p within each setting.",
            f"- **Verdicts**: {VERDICT_RULE} Rules and file format: experiments/README.md, section Hypotheses.",
            "",
        ]
    )


TEST_RULE = (
    "Seeds that both arms ran are paired when they share at least 3 (a seed fixes initialisation, data order "
    "and noise draw for every optimizer): the primary test is the paired t-test on the per-seed differences "
    "on those seeds, which assumes they are roughly normal; arms sharing fewer seeds get Welch's t-test on "
    "all their runs. A seed run twice counts once, at the mean of its runs, and *n* counts the values the "
    "test used. An arm whose runs (or per-seed "
    "differences) are all equal has no spread and is *not testable*, never p = 0. Beside it, the exact "
    "sign-flip (or permutation) test assumes nothing but cannot go below its smallest possible p "
    "(3 paired seeds: 0.25). Runs that never reach a target are censored and compared by the exact test "
    "on ranks, tied worst. Intervals are t intervals of the difference."
)
VERDICT_RULE = (
    "**supported** when every required comparison goes in the stated direction with p < alpha, each on "
    "its own (intersection-union test, Berger 1982); **rejected** when any is significant in the "
    "opposite direction after Holm over the required comparisons; **inconclusive** otherwise, "
    "including missing runs, no spread, ties, and a test on fewer than `min_seeds` (default 3) seeds "
    "(its pairs, or an arm's runs with a value) in any setting of the family (every setting of the "
    "hypothesis's scope matching `where:` in which an optimizer it names has runs). The exact tests' "
    "verdict is given where it differs. Where the study that tests a hypothesis ran until decided, its "
    "sequential decision is the verdict instead."
)


def warnings_section(parts: ReportParts) -> str:
    if not parts.warnings:
        return ""
    return "\n".join(["## Warnings while reading", "", *[f"- {warning}" for warning in parts.warnings], ""])
