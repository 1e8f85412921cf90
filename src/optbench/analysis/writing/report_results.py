"""report.md's sections on the numbers: the results table per setting (with a note where a setting's runs come
from mixed environments), the robust aggregates and performance profiles, where each comparison's variance comes
from (seeds or test images), the pairwise tests, and every run that did not complete or needed a warning."""

import math

import pandas as pd

from optbench.analysis.statistics.variance import RESAMPLES
from optbench.analysis.writing.report_parts import ReportParts
from optbench.analysis.writing.tables import (
    display_table,
    pairwise_display,
    problem_display,
    to_markdown,
    variance_display,
)


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
    lines += loss_workload_note(parts.results)
    lines += mixed_environment_note(parts.runs)
    for setting, group in parts.results.groupby("setting", sort=False):
        lines += [f"### {setting}", "", to_markdown(display_table(group, parts.target_acc))]
    return "\n".join(lines)


def loss_workload_note(results: pd.DataFrame) -> list[str]:
    """For settings of a workload whose headline is a loss (char_lm): what their tables report instead; [] when
    there is none (a folder of accuracy workloads reads as it always did)."""
    if "higher_is_better" not in results or not (results["higher_is_better"] == False).any():  # noqa: E712
        return []
    return [
        "**Language-model settings** (workload char_lm) report their headline, the validation loss at the best "
        "evaluation (nats per character; bits per character and test loss beside), and rank it lowest first: "
        "*rank* 1 and *p vs best* are the lowest loss. Their time to target is in steps, to a validation loss "
        "at or below the target (`--target-loss`, default the workload's registry target).",
        "",
    ]


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
