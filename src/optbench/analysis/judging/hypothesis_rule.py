"""The verdict rule: a hypothesis's required comparisons (`Check`s) -> supported, rejected or inconclusive.

Tests: two_arms.two_arm_test, a paired t on per-seed differences with the exact test beside it (hypothesis_checks.py).
Supported when every required comparison goes in the stated direction with p < alpha, each on its own
(the intersection-union test, Berger 1982); rejected when any is significant in the opposite direction
after Holm's adjustment over the required comparisons; inconclusive otherwise: a comparison not
significant or tied, missing runs (named), no spread to test (named), or a test on fewer than
`min_seeds` seeds (hypothesis_checks.too_few). The same rule on the exact tests' p values is kept beside
the verdict as a check that assumes no normality.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from optbench.analysis.statistics.exact_tests import holm
from optbench.analysis.statistics.sequential_rule import signed_z
from optbench.specs.hypothesis_spec import HUMAN, Hypothesis, HypothesisTest

SUPPORTED, REJECTED, INCONCLUSIVE = "supported", "rejected", "inconclusive"
AS_STATED, OPPOSITE = "as stated", "opposite"


@dataclass
class Check:
    """One required comparison and its outcome."""

    setting: str
    comparison: str  # "sgd vs adam", "lion vs adamw at symmetric 20%"
    expected: str  # "sgd higher", "lion fewer epochs", "lion smaller drop"
    outcome: str  # as stated / opposite (+ significant or not), tied, missing, not testable
    numbers: dict = field(default_factory=dict)
    detail: str = ""
    better: str = "higher"  # the stated direction of `difference` (subject - other)

    @property
    def testable(self) -> bool:
        return self.outcome not in ("missing", "not testable")


def comparison_z(check: Check) -> float:
    """The check's signed z, what the sequential rule decides on (studies/until_decided.py and its validation,
    analysis/judging/validation_null.py): none (NaN) when the evaluation calls it not testable or missing, whatever
    p it has."""
    if not check.testable:
        return math.nan
    return signed_z(check.numbers.get("p", math.nan), check.numbers.get("difference", math.nan), check.better)


@dataclass
class Verdict:
    hypothesis: Hypothesis
    verdict: str
    reason: str
    checks: list[Check]
    exact_verdict: str = ""  # the same rule on the exact tests' p values (no normality assumed)
    runs: pd.DataFrame | None = None  # the runs of its family: its optimizers in the settings it was judged on


def verdict_from_checks(hypothesis: Hypothesis, checks: list[Check], test: HypothesisTest) -> Verdict:
    """Supported: every required comparison significant in the stated direction, each at alpha on its own
    p (the intersection-union test, Berger 1982: the hypothesis is the intersection of its comparisons, so
    no adjustment is needed and the error stays at alpha). Rejected: any comparison significant in the
    opposite direction after Holm over the family. Inconclusive otherwise, naming what is missing. The
    same rule on the exact tests' p values is kept beside it as a check that assumes no normality."""
    if not checks:
        names = ", ".join([test.subject, *test.versus])
        under = f" under human label noise ({', '.join(test.label_sets)})" if test.noise == HUMAN else ""
        return Verdict(
            hypothesis, INCONCLUSIVE, f"missing runs: no setting has runs of {names}{under} to compare", checks
        )
    verdict, reason = rule(checks, test.alpha, "p")
    exact_verdict, _ = rule(checks, test.alpha, "exact_p")
    return Verdict(hypothesis, verdict, reason, checks, exact_verdict=exact_verdict)


def rule(checks: list[Check], alpha: float, p_key: str) -> tuple[str, str]:
    """(verdict, reason) from each check's `p_key` p value; the checks' outcomes are set from the primary p."""
    primary = p_key == "p"
    p_values = [check.numbers.get(p_key, math.nan) if check.testable else math.nan for check in checks]
    adjusted = holm(p_values)
    outcomes = [
        classify(check.numbers.get("difference", math.nan), p, check.better, alpha) if check.testable else check.outcome
        for check, p in zip(checks, p_values)
    ]
    opposite = [
        check
        for check, outcome, p_holm in zip(checks, outcomes, adjusted)
        if outcome.startswith(OPPOSITE) and p_holm < alpha
    ]
    if primary:
        for check, outcome, p_holm in zip(checks, outcomes, adjusted):
            check.outcome = outcome
            if check.testable:
                check.numbers["p_holm"] = float(p_holm)
    if opposite:
        return REJECTED, (
            f"{len(opposite)} of {len(checks)} required comparisons are significant in the opposite "
            f"direction (Holm-adjusted p < {alpha})"
        )
    if all(outcome == f"{AS_STATED}, significant" for outcome in outcomes):
        return SUPPORTED, (
            f"all {len(checks)} required comparisons go in the stated direction, each with p < {alpha} "
            f"(intersection-union test)"
        )
    return INCONCLUSIVE, inconclusive_reason(checks, outcomes, alpha)


def inconclusive_reason(checks: list[Check], outcomes: list[str], alpha: float) -> str:
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
    parts = [f"{count} of {len(checks)} {outcome}" for outcome, count in counts.items()]
    missing = [f"{check.detail} ({check.setting})" for check in checks if check.outcome in ("missing", "not testable")]
    reason = f"not every required comparison is significant in the stated direction at alpha = {alpha}: " + "; ".join(
        parts
    )
    return reason + (". Missing or not testable: " + "; ".join(missing) if missing else "")


def classify(difference: float, p_value: float, better: str, alpha: float) -> str:
    if not np.isfinite(p_value) or not np.isfinite(difference):
        return "not testable"
    if difference == 0:
        return "tied"
    direction = AS_STATED if (difference > 0) == (better == "higher") else OPPOSITE
    return f"{direction}, {'significant' if p_value < alpha else 'not significant'}"
