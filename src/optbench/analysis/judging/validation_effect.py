"""The known-effect half of a validation study: how often the harness finds an effect that all seeds show.

Two settings of one optimizer (the A/A setting and the same at half its learning rate) ran on the same seeds; a
seed fixes initialisation and batch order in both, so the harness pairs them by seed, and so does every resample
here (seeds keep their labels). The truth is what all shared seeds show: the mean of the per-seed differences, in
the direction the claim is stated (the arm with the higher mean over all pairs is the subject). Each resample
draws n pairs without replacement and judges them with the harness's code:
- power: the fixed-design verdict (hypotheses.hypothesis_verdict) says "supported", at n = 3, 6, 10, beside the
  power the harness's own power function (power.t_power) gives at the d_z all pairs show;
- coverage of the paired difference's 95 % interval (two_arms, in the verdict's numbers) of the true difference;
- the seed planner (seed_planner.plan_seeds) asked as a user would: from all pairs as its pilot (its spread at the
  80 % upper bound; the seeds it names are then fixed and measured), from a pilot of 3 pairs told the true effect
  (`--delta`), and from a pilot of 3 pairs on its own effect (no `--delta`). For a pilot, the study it names is
  the pilot's pairs plus new ones, drawn without replacement; the power reached is the share "supported" there,
  against the planner's promised 80 %.
"""

import math

import numpy as np
import pandas as pd

from optbench.analysis.judging.hypotheses import SUPPORTED, Context, Verdict, hypothesis_verdict
from optbench.analysis.judging.seed_planner import TARGET_POWER, plan_seeds
from optbench.analysis.judging.validation_figures import AT_LEAST, EQUAL, Figure
from optbench.analysis.judging.validation_null import SIZES, Tally, claim, covers
from optbench.analysis.judging.validation_runs import METRIC, resample_table
from optbench.analysis.statistics.power import ALPHA, t_power
from optbench.analysis.statistics.resampling import (
    Rate,
    disjoint_draw,
    extended_draw,
    finite_pool_coverage,
    monte_carlo_rate,
)
from optbench.formats.run_summary import COMPLETED

STUDY = "known effect"
PILOT = 3  # pairs in a user's pilot (the user's three seeds)
PLANNER_CLAIM = "seed_planner.py: the seeds it names give 80 % power (TARGET_POWER)"


class Pairs:
    """The two settings' runs on their shared seeds (row i of each the same seed), the subject first, and the
    truth all pairs show."""

    def __init__(self, a: pd.DataFrame, b: pd.DataFrame, names: tuple[str, str]):
        both = ((a["status"] == COMPLETED) & (b["status"] == COMPLETED)).to_numpy()
        differences = (a[METRIC] - b[METRIC]).to_numpy()[both]
        flip = differences.mean() < 0  # state the claim in the direction all pairs show
        self.subject, self.other = (b, a) if flip else (a, b)
        self.names = (names[1], names[0]) if flip else names
        self.differences = -differences if flip else differences
        self.truth = float(self.differences.mean())
        self.claim = claim(self.names[0], (self.names[1],))

    def __len__(self) -> int:
        return len(self.subject)

    @property
    def d_z(self) -> float:
        return self.truth / float(self.differences.std(ddof=1))

    def verdict(self, rows: np.ndarray) -> Verdict:
        """The fixed-design verdict on the pairs at positions `rows`."""
        runs = resample_table({self.names[0]: self.subject.iloc[rows], self.names[1]: self.other.iloc[rows]}, False)
        return hypothesis_verdict(self.claim, Context(runs, pd.DataFrame(), []))


def effect_figures(pairs: Pairs, resamples: int, seed: int, sizes: tuple[int, ...] = SIZES) -> list[Figure]:
    """The known-effect figures from `resamples` resamples of `pairs`; none when it holds fewer than max(sizes)."""
    if len(pairs) < max(sizes) or len(pairs.differences) < 2:
        return []
    return [
        *fixed_design_figures(pairs, resamples, np.random.default_rng([seed, 1]), sizes),
        planner_at_truth(pairs, resamples, np.random.default_rng([seed, 2])),
        planner_from_pilots(pairs, resamples, np.random.default_rng([seed, 3]), abs(pairs.truth)),
        planner_from_pilots(pairs, resamples, np.random.default_rng([seed, 4]), None),
    ]


def fixed_design_figures(pairs: Pairs, resamples: int, rng: np.random.Generator, sizes: tuple[int, ...]) -> list:
    """Power and interval coverage at each n, on nested draws (the first n of max(sizes) pairs)."""
    tally = Tally()
    for _ in range(resamples):
        draw = disjoint_draw(rng, len(pairs), 1, max(sizes))[0]
        for n in sizes:
            verdict = pairs.verdict(draw[:n])
            numbers = verdict.checks[0].numbers
            tally.add(("power", n), verdict.verdict == SUPPORTED)
            tally.add(
                ("coverage", n), covers(numbers.get("ci_low", math.nan), numbers.get("ci_high", math.nan), pairs.truth)
            )
    truth = (
        f"the {len(pairs.differences)} pairs' mean difference, {100 * pairs.truth:+.2f} points (d_z {pairs.d_z:.2f})"
    )
    rows = []
    for n in sizes:
        predicted = t_power(pairs.d_z, n - 1, math.sqrt(n), ALPHA)
        source = "power.t_power at the d_z all pairs show (normal theory, as the report's power column)"
        rows.append(
            Figure(
                STUDY,
                "power (supported)",
                "verdict, 1 comparison",
                n,
                tally.rate(("power", n)),
                predicted,
                EQUAL,
                source,
                truth,
            )
        )
    for n in sizes:  # n of the pool's pairs, drawn without replacement, against the pool's own mean difference
        rate, claimed = tally.rate(("coverage", n)), finite_pool_coverage(n, len(pairs.differences))
        source = f"nominal 95 % for {n} of {len(pairs.differences)} pairs drawn without replacement"
        rows.append(Figure(STUDY, "coverage", "paired difference's 95 % CI", n, rate, claimed, EQUAL, source, truth))
    return rows


def planner_at_truth(pairs: Pairs, resamples: int, rng: np.random.Generator) -> Figure:
    """The seeds the planner names with every pair as its pilot, then the power those seeds reach."""
    everything = pairs.verdict(np.arange(len(pairs)))
    plan = plan_seeds(everything, everything.runs)
    rule = "planner, all pairs as its pilot"
    needed = plan.seeds_needed
    if needed is None or needed > len(pairs):
        note = f"the planner names {needed or 'more than 200'} seeds; the pool has {len(pairs)} pairs"
        return Figure(
            STUDY,
            "power at the planned seeds",
            rule,
            needed or 0,
            monte_carlo_rate(0, 0),
            TARGET_POWER,
            AT_LEAST,
            PLANNER_CLAIM,
            note,
        )
    n = max(needed, PILOT)
    hits = sum(pairs.verdict(disjoint_draw(rng, len(pairs), 1, n)[0]).verdict == SUPPORTED for _ in range(resamples))
    note = f"its own simulation: {100 * plan.simulated_power:.0f} %; {n} of {len(pairs)} pairs per resample"
    return Figure(
        STUDY,
        "power at the planned seeds",
        rule,
        n,
        monte_carlo_rate(hits, resamples),
        TARGET_POWER,
        AT_LEAST,
        PLANNER_CLAIM,
        note,
    )


def planner_from_pilots(pairs: Pairs, resamples: int, rng: np.random.Generator, delta: float | None) -> Figure:
    """Per resample a pilot of PILOT pairs, the seeds the planner names from it (for `delta`, or the pilot's own
    effect), and whether the study of that many pairs (the pilot's and new ones) supports the claim."""
    hits, planned, unplanned = 0, [], 0
    for _ in range(resamples):
        pilot = disjoint_draw(rng, len(pairs), 1, PILOT)[0]
        verdict = pairs.verdict(pilot)
        needed = plan_seeds(verdict, verdict.runs, delta).seeds_needed
        if needed is None or needed > len(pairs):  # more than MAX_SEEDS, against the claim, or beyond the pool
            unplanned += 1
            continue
        n = max(needed, PILOT)
        planned.append(n)
        hits += pairs.verdict(extended_draw(rng, len(pairs), pilot, n)).verdict == SUPPORTED
    rule = f"planner, {PILOT}-pair pilot, " + ("--delta = the true effect" if delta is not None else "its own effect")
    spread = (
        f"seeds named: median {np.median(planned):.0f}, 10-90 % "
        f"{np.percentile(planned, 10):.0f}-{np.percentile(planned, 90):.0f}; "
        if planned
        else ""
    )
    note = f"{spread}{unplanned} of {resamples} pilots got no plan within the pool's {len(pairs)} pairs"
    median = int(np.median(planned)) if planned else 0
    rate: Rate = monte_carlo_rate(hits, len(planned))
    return Figure(STUDY, "power at the planned seeds", rule, median, rate, TARGET_POWER, AT_LEAST, PLANNER_CLAIM, note)
