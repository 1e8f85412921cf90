"""report.md's verdict sections: the table of verdicts (one row per hypothesis and scope: the sequential decision
where its study ran until decided, else the fixed-design verdict; analysis/judging/verdicts.py), the hypotheses
not tested in one line, then each hypothesis with the numbers behind every required comparison (labelled the
fixed-design evaluation where a sequential decision is the verdict) and, for an inconclusive one, the seeds that
would decide it; then the looks of the sequential studies. Also `verdict_rows` for the hypotheses CSV.
"""

import math

import numpy as np
import pandas as pd

from optbench.analysis.judging.hypotheses import Check, Verdict
from optbench.analysis.judging.seed_planner import comparison_units, plan_seeds, plan_table
from optbench.analysis.judging.verdicts import SEQUENTIAL, Judgement, NotTested, rule_text, scope_text, seeds_text
from optbench.analysis.writing.report_parts import ReportParts
from optbench.analysis.writing.tables import difference_interval, exact_text, p_text, power_text, to_markdown
from optbench.formats.decision_record import HypothesisDecision

VERDICT_MARK = {"supported": "SUPPORTED", "rejected": "REJECTED", "inconclusive": "INCONCLUSIVE"}


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


# ---- sequential decisions ---------------------------------------------------------------------------


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
