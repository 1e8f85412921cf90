"""The A/A half of a validation study: how often the harness's rules find a difference between arms of one setting.

Each resample draws `ARMS` disjoint sets of max(sizes) seeds, without replacement, from the A/A pool (one optimizer
and setting on hundreds of seeds) as arms a, b, c, d, their seeds relabelled 0, 1, ... so the harness pairs them
position by position (two arms of one setting on the same seeds would be the same runs). Its first n seeds of each
arm are the study at n (n = 3, 6, 10: nested, as a study that adds seeds grows), judged by the harness's own code:
- the fixed-design verdict (hypotheses.hypothesis_verdict) of "a is higher than b" (one comparison) and of "a is
  higher than b, c and d" (three, Holm for "rejected"): a "supported" or "rejected" is a false positive;
- the Holm-adjusted pairwise tests of the four arms (pairwise_tables.pairwise_table, six pairs): any significant
  pair is a family-wise error;
- the sequential rule (sequential_rule.decide at looks 3, 6, 10, each look's z from that look's verdict, as
  `study.py --until-decided` takes it), with its futility stop as shipped and without it: crossing a boundary is
  a false positive;
- the 95 % intervals the report prints: the mean's (summaries.describe) against the mean of the whole pool, and
  the paired difference's (two_arms, in the verdict's numbers) against 0.
"""

import numpy as np
import pandas as pd

from optbench.analysis.judging.hypotheses import REJECTED, SUPPORTED, Context, hypothesis_verdict
from optbench.analysis.judging.hypothesis_rule import comparison_z
from optbench.analysis.judging.pairwise_tables import pairwise_table
from optbench.analysis.judging.validation_figures import AT_MOST, EQUAL, Figure
from optbench.analysis.judging.validation_runs import METRIC, SETTING, resample_table
from optbench.analysis.statistics.power import ALPHA
from optbench.analysis.statistics.resampling import Rate, disjoint_draw, finite_pool_coverage, monte_carlo_rate
from optbench.analysis.statistics.sequential_rule import (
    CONTINUE,
    FUTILITY,
    Design,
    decide,
    looks_for,
    spent,
)
from optbench.analysis.statistics.summaries import describe
from optbench.formats.run_summary import COMPLETED
from optbench.specs.hypothesis_spec import Hypothesis, HypothesisTest

SIZES = (3, 6, 10)  # seeds per arm: the user's design, and the sequential rule's looks up to 10
ARMS = ("a", "b", "c", "d")  # a Holm family of six pairs, and a hypothesis of three comparisons
STUDY = "A/A"
VERDICT_CLAIM = (
    "experiments/README.md, Verdict rule 5: each stays at or below alpha (tests/test_verdict_error_rates.py)"
)
SEQUENTIAL_CLAIM = "scripts/sequential_price.py, quoted in experiments/README.md and docs/results.md"
# The sequential rule's null crossing at looks 3, 6, 10, as the docs quote scripts/sequential_price.py's simulation.
QUOTED_CROSSING = {"as shipped": 0.045, "without the futility stop": 0.051}


def claim(subject: str, others: tuple[str, ...]) -> Hypothesis:
    """ "`subject` has the higher headline than each of `others`", as a hypothesis file would state it."""
    test = HypothesisTest(kind="metric_comparison", subject=subject, versus=others, metric=METRIC, alpha=ALPHA)
    return Hypothesis(f"{subject} > {', '.join(others)}", "validation", "", test, "")


ONE, THREE = claim("a", ("b",)), claim("a", ("b", "c", "d"))


class Tally:
    """Hits and trials per key (a figure's (figure, rule, n))."""

    def __init__(self) -> None:
        self.counts: dict[tuple, list[int]] = {}

    def add(self, key: tuple, hit: bool | None) -> None:
        """`hit` None: this resample cannot say (an interval not printed), not counted as a trial."""
        if hit is None:
            return
        count = self.counts.setdefault(key, [0, 0])
        count[0] += int(hit)
        count[1] += 1

    def rate(self, key: tuple) -> Rate:
        return monte_carlo_rate(*self.counts.get(key, [0, 0]))


def covers(low: float, high: float, truth: float) -> bool | None:
    return None if not (np.isfinite(low) and np.isfinite(high)) else bool(low <= truth <= high)


def judge_resample(tally: Tally, arms: dict[str, pd.DataFrame], truth: float, sizes: tuple[int, ...]) -> None:
    """Every rule on the first n seeds of each drawn arm, for each n; the sequential rule over the looks."""
    design = Design(looks_for(sizes[0], sizes[-1], sizes), ALPHA, 1)
    shipped = plain = CONTINUE
    for look, n in enumerate(sizes):
        runs = resample_table({name: drawn.iloc[:n] for name, drawn in arms.items()}, relabel=True)
        context = Context(runs, pd.DataFrame(), [])
        one, three = hypothesis_verdict(ONE, context), hypothesis_verdict(THREE, context)
        for label, verdict in (("verdict, 1 comparison", one), ("verdict, 3 comparisons", three)):
            tally.add(("false supported", label, n), verdict.verdict == SUPPORTED)
            tally.add(("false rejected", label, n), verdict.verdict == REJECTED)
        pairs = pairwise_table(runs[runs["status"] == COMPLETED], METRIC, [SETTING], list(ARMS))
        tally.add(("any pair significant", "pairwise tests, 4 arms, Holm", n), bool(pairs["significant"].any()))
        mean = describe(runs.loc[(runs["arm"] == "a") & (runs["status"] == COMPLETED), METRIC])
        tally.add(("coverage", "mean's 95 % CI", n), covers(mean.ci_low, mean.ci_high, truth))
        numbers = one.checks[0].numbers
        tally.add(("coverage", "paired difference's 95 % CI", n), covers(numbers["ci_low"], numbers["ci_high"], 0.0))
        decision = decide([comparison_z(check) for check in one.checks], look, design).decision
        if shipped == CONTINUE:
            shipped = decision
        if plain == CONTINUE:
            plain = CONTINUE if decision == FUTILITY and look < len(sizes) - 1 else decision
        tally.add(("crossed by this look", "sequential, as shipped", n), shipped in (SUPPORTED, REJECTED))
        tally.add(("crossed by this look", "sequential, without the futility stop", n), plain in (SUPPORTED, REJECTED))


def null_figures(pool: pd.DataFrame, resamples: int, seed: int, sizes: tuple[int, ...] = SIZES) -> list[Figure]:
    """The A/A figures from `resamples` resamples of `pool` (validation_runs.finished_pool), seeded by `seed`;
    none when the pool cannot hold len(ARMS) disjoint arms of max(sizes) seeds."""
    if len(pool) < len(ARMS) * max(sizes):
        return []
    rng = np.random.default_rng(seed)
    truth = float(pool.loc[pool["status"] == COMPLETED, METRIC].mean())
    tally = Tally()
    for _ in range(resamples):
        draw = disjoint_draw(rng, len(pool), len(ARMS), max(sizes))
        judge_resample(tally, {name: pool.iloc[rows] for name, rows in zip(ARMS, draw)}, truth, sizes)
    return figures(tally, sizes, int((pool["status"] == COMPLETED).sum()))


def figures(tally: Tally, sizes: tuple[int, ...], pool_size: int) -> list[Figure]:
    """The tally as figures, each beside its claim: the fixed-design rules, the sequential rule, the intervals."""
    return [
        *(row for n in sizes for row in fixed_design_figures(tally, n)),
        *sequential_figures(tally, sizes),
        *(row for n in sizes for row in coverage_figures(tally, n, pool_size)),
    ]


def coverage_figures(tally: Tally, n: int, pool_size: int) -> list[Figure]:
    """The mean's interval against the pool's mean: n of the pool's runs drawn without replacement vary less than n
    fresh seeds, so its claim is the nominal 95 % for such draws (finite_pool_coverage). The paired difference of
    two disjoint arms varies as the interval assumes (the pool's finiteness cancels), so its claim is 95 %."""
    mean_claim = finite_pool_coverage(n, pool_size)
    mean_source = (
        f"nominal 95 % for {n} of a pool of {pool_size} drawn without replacement (resampling.finite_pool_coverage)"
    )
    return [
        Figure(
            STUDY,
            "coverage",
            "mean's 95 % CI",
            n,
            tally.rate(("coverage", "mean's 95 % CI", n)),
            mean_claim,
            EQUAL,
            mean_source,
            "truth: the mean of the whole pool",
        ),
        Figure(
            STUDY,
            "coverage",
            "paired difference's 95 % CI",
            n,
            tally.rate(("coverage", "paired difference's 95 % CI", n)),
            0.95,
            EQUAL,
            "nominal",
            "truth: 0",
        ),
    ]


def fixed_design_figures(tally: Tally, n: int) -> list[Figure]:
    rows = [
        Figure(
            STUDY,
            figure,
            rule,
            n,
            tally.rate((figure, rule, n)),
            ALPHA,
            AT_MOST,
            VERDICT_CLAIM,
            "normal theory: 2.5 % (a two-sided paired t, one direction)" if rule == "verdict, 1 comparison" else "",
        )
        for figure in ("false supported", "false rejected")
        for rule in ("verdict, 1 comparison", "verdict, 3 comparisons")
    ]
    holm = ("any pair significant", "pairwise tests, 4 arms, Holm", n)
    source = "Holm (1979): family-wise error at most alpha (experiments/README.md, pairwise tables)"
    return [*rows, Figure(STUDY, holm[0], holm[1], n, tally.rate(holm), ALPHA, AT_MOST, source)]


def sequential_figures(tally: Tally, sizes: tuple[int, ...]) -> list[Figure]:
    """Crossing by each look without the futility stop, beside the alpha the design spends by then (for normal z);
    at the last look, with and without it, beside the figures the docs quote from simulation."""
    design = Design(looks_for(sizes[0], sizes[-1], sizes), ALPHA, 1)
    rows = []
    for look, n in enumerate(sizes):
        last = look == len(sizes) - 1
        for variant in ("without the futility stop", "as shipped") if last else ("without the futility stop",):
            rule = f"sequential, {variant}"
            claimed, source = (
                (QUOTED_CROSSING[variant], SEQUENTIAL_CLAIM)
                if last
                else (spent(n / sizes[-1], ALPHA), "the alpha the design spends by this look (normal z)")
            )
            key = ("crossed by this look", rule, n)
            note = f"boundary z = {design.efficacy[look]:.2f}"
            rows.append(Figure(STUDY, key[0], rule, n, tally.rate(key), claimed, EQUAL, source, note))
    return rows
