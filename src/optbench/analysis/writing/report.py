"""report.md: the answer in one page, with the verdicts, tables and figures it rests on.

`render_report(parts)` (parts: report_parts.py) returns Markdown, section by section:
    header                 run counts by status and the rule that only completed runs enter means; what every
                           run shares and how settings are named (here)
    Hypotheses, Sequential decisions   the verdicts and the comparisons behind them (report_hypotheses.py)
    Results by setting, Robust aggregates, Where the variance comes from   (report_results.py)
    Figures                relative links to figures/*.png, PDFs beside them (here)
    Pairwise tests, Runs not completed or with warnings   (report_results.py)
    Tuning                 protocol, cost, winners, edge warnings, search figure (report_tuning.py)
    Fidelity               the ladders (fidelity.py: rank agreement with the top rung, flips, cost, verdicts per
                           rung, tuned values per budget) (here)
    Definitions, Warnings while reading   (here)
"""

import pandas as pd

from optbench.analysis.judging import fidelity, tuning_report
from optbench.analysis.writing import fidelity_tables
from optbench.analysis.writing.report_hypotheses import hypotheses_section, sequential_section
from optbench.analysis.writing.report_parts import ReportParts
from optbench.analysis.writing.report_results import (
    TEST_RULE,
    pairwise_section,
    problems_section,
    results_section,
    robust_section,
    variance_section,
)
from optbench.analysis.writing.report_tuning import tuning_section
from optbench.analysis.writing.tables import NOT_COMPLETED, to_markdown
from optbench.formats.run_summary import COMPLETED


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
            *left_out_note(parts),
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


def left_out_note(parts: ReportParts) -> list[str]:
    """--only-study: how many run directories of other studies this report leaves out, so none leaves unsaid."""
    if not parts.only_study:
        return []
    if not parts.left_out:
        return [f"Only study `{parts.only_study}`'s runs are reported (`--only-study`): the folder holds no other.", ""]
    return [
        f"{parts.left_out} more run directories here are other studies' (settings {parts.only_study} does not plan, "
        f"or other tuning studies' trials): left out (`--only-study`), not counted above.",
        "",
    ]


def figures_section(parts: ReportParts) -> str:
    lines = ["## Figures", "", "Each figure is also saved as PDF beside the PNG.", ""]
    if not parts.figures:
        lines.append("_No figures (`--no-figures`, or no completed run has metrics to draw)._")
    for caption, path in parts.figures:
        lines += [f"### {caption}", "", f"![{caption}]({path})", f"([PDF]({path[:-4]}.pdf))", ""]
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
        "seeds both share (n and seeds in the tables). Two answers per rung, each at 95 % and with the power "
        "its seeds give a rung that does not change. *Order kept*: an order is *established* at the top when "
        "the pairwise test (paired t by seed, Holm over the pairs, as in the pairwise tables) is significant; "
        "at a rung it is *kept* when a one-sided 95 % bound on the rung's own difference shows it on the top's "
        "side, *reversed* when it shows it on the other, else *undetermined*; order kept is yes when every "
        "established order is kept, no when one is reversed. *Magnitude*: each pair's *change* is its "
        "difference at the rung minus at the top, bounded on each side at 95 % by the pair's own per-seed "
        "changes; the *resolution certified* is the largest pair's upper bound of |change|: with 95 % "
        "confidence no pair's difference moves by more, so the rung's ranking carries to the top for gaps "
        "larger than that. Beside each answer, its power: the share of unchanged rungs that keep the top's "
        "orders at the rung's seeds, and the resolution its shared seeds certify with 80 % power. A rung is "
        "*faithful* when both answers are yes: order kept, and the resolution certified within the study's. "
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
        lines += tuned_settings_block(parts)
    return "\n".join(lines)


def tuned_settings_block(parts: ReportParts) -> list[str]:
    """The winners per tuning budget, and how each of those tunings searched (the same protocol or not)."""
    assert parts.fidelity is not None
    tuned = set(parts.fidelity.tuned["study"])
    studies = [study for study in (parts.tuning.studies if parts.tuning else []) if study.name in tuned]
    return [
        "### Tuned settings across budgets",
        "",
        "The winners of tuning studies of one workload and setting run at different budgets, and their ratio "
        "to the winners of the one with the most epochs among them (`longest_tuning`; tunings of other workloads "
        "or settings are never compared): a ratio below 1 at short budgets is short-horizon bias (Wu et al. "
        "2018). How each searched:",
        "",
        *[f"- `{study.name}`: {tuning_report.protocol_sentence(study)}" for study in studies],
        "",
        to_markdown(tuned_display(parts.fidelity.tuned)),
        "",
    ]


def tuned_display(tuned: pd.DataFrame) -> pd.DataFrame:
    """Values to 3 significant digits: a weight decay of 2.1e-06 rounded to 4 places would read 0."""
    numbers = ["lr", "weight_decay", "lr_ratio_to_top", "weight_decay_ratio_to_top"]
    return tuned.assign(**{column: tuned[column].map(lambda value: f"{value:.3g}") for column in numbers})


def fidelity_headline(ladder, plan) -> str:
    """The report's answer (README's reading follows it): the cheapest faithful rung, or why none is, each rung's
    two answers with the power its seeds give, and the planner's seeds for each answer."""
    cheapest = fidelity.cheapest_faithful_rung(ladder)
    points = ladder.resolution * 100
    if cheapest is None:
        return f"**No faithful rung at a resolution of {points:g} points.** " + (
            fidelity.why_none(ladder, plan) if plan is not None else ""
        )
    row = ladder.agreement.set_index("rung").loc[cheapest]
    whose = "" if ladder.top.label == ladder.top_label else f" (the planned top {ladder.top_label} being incomplete)"
    return (
        f"**Cheapest faithful rung: {cheapest}**: it keeps all {row['established_top']:g} orders the top establishes, "
        f"and the {cheapest} ranking carries to {ladder.top.label}{whose} for gaps larger than "
        f"{fidelity_tables.resolution_text(row)} (seeds {row['shared_seed_list']})."
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
            f"resolution certified {fidelity_tables.resolution_text(row)} on seeds {row['shared_seed_list']}; "
            f"{row['same_order']:g} of {row['pairs']:g} pairs ordered alike, tau-b "
            f"{fidelity_tables.interval_text(row['tau_b'], row['tau_low'], row['tau_high'], 1, 2)}."
        )
    lines += ["", fidelity_headline(ladder, plan), ""]
    if not ladder.orders.empty:
        lines += [
            "Each pair's change of difference from the top to the rung (points, a - b, between its one-sided 95 % "
            "bounds, from the pair's own spread) and what became of an order the top establishes (kept or reversed: "
            "a one-sided 95 % bound on the rung's own difference shows it on that side):",
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
