"""How many seeds a hypothesis needs, planned from pilot runs (a 3-seed study is a pilot).

`plan_seeds(verdict, runs, delta)` takes a hypothesis judged on the pilot (hypotheses.hypothesis_verdict) and,
for each required comparison, the spread of its per-seed differences. A 2-degree-of-freedom sd is very noisy,
so the plan uses its one-sided 80 % upper confidence bound (Browne 1995, "On the use of a pilot sample for
sample size determination"): sd * sqrt((n - 1) / chi2.ppf(0.2, n - 1)). The effect to detect is the one
observed, or `delta` (in the metric's units) when given. The plan is for a paired design (the same seeds for
every arm); from a pilot whose seeds did not pair, the sd of one seed's difference is that of independent runs:
sqrt(2) x the pooled sd for two arms, 2 x the cells' rms sd for a difference of drops (four runs per seed). Then:
- the seeds one comparison needs for 80 % power with the paired t-test at alpha;
- the seeds the whole hypothesis needs: "supported" needs every one of its m required comparisons
  (intersection-union), so each needs power 0.8^(1/m) (treating them as independent), checked by a
  bounded simulation of the verdict rule at that n. m counts every required comparison: one the pilot
  cannot size (no runs there, no spread) is planned with the largest sd of the others when `delta` is given
  and said so, and leaves the hypothesis unplanned (naming it) when not;
- the exact test's floor: fewer seeds than the smallest n with 2 / 2^n < alpha can never pass it;
- the cost of the extra runs in device-hours, from the pilot runs' measured wall times.
"""

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from optbench.analysis.judging.hypotheses import Check, Verdict
from optbench.analysis.statistics.fidelity_stats import sd_upper_bound
from optbench.analysis.statistics.power import t_power
from optbench.formats.run_summary import COMPLETED
from optbench.specs.hypothesis_spec import HypothesisTest

TARGET_POWER = 0.8
MAX_SEEDS = 200  # beyond this the effect is too small to plan for: "more than 200"
SIMULATIONS = 4000  # the simulation that checks the hypothesis-level power (seconds at most)


@dataclass(frozen=True)
class ComparisonPlan:
    setting: str
    comparison: str
    n_pilot: int
    difference: float  # observed, metric units (subject - other; for drops, drop difference)
    spread: float  # sd of the per-seed differences in the pilot
    spread_upper: float  # its 80 % upper confidence bound
    effect: float  # the effect planned for (|observed| or delta), metric units
    seeds_alone: int | None  # seeds for 80 % power for this comparison alone (None: more than MAX_SEEDS)
    seeds_in_hypothesis: int | None  # for power 0.8^(1/m), so all m together reach 0.8
    power_at_pilot: float  # the paired t's power at the pilot's n against `effect` at `spread_upper`
    against_claim: bool = False  # the pilot's difference goes the other way: more seeds will not support it
    note: str = ""


@dataclass(frozen=True)
class SeedPlan:
    hypothesis: str
    alpha: float
    comparisons: list[ComparisonPlan]
    seeds_needed: int | None  # the hypothesis: the largest seeds_in_hypothesis (None: a comparison needs > MAX)
    simulated_power: float  # of "supported" at seeds_needed, by simulation
    exact_floor: int  # the fewest seeds with which the exact test can reach alpha at all
    hours_per_seed: float  # device-hours one more seed costs (every arm x setting of the hypothesis)
    n_pilot: int
    unsized: tuple[str, ...] = ()  # required comparisons the pilot cannot size and the plan could not either
    required: int = 1  # m: the hypothesis's required comparisons, sized or not

    @property
    def extra_hours(self) -> float:
        if self.seeds_needed is None:
            return math.inf
        return max(0, self.seeds_needed - self.n_pilot) * self.hours_per_seed

    def advice(self) -> str:
        if not self.comparisons:
            return f"{self.hypothesis}: no comparison has the spread a plan needs (run at least 2 paired seeds per arm)"
        against = [row.comparison for row in self.comparisons if row.against_claim]
        unsized = f"{'; '.join(self.unsized)}, a required comparison (no runs or no spread there)"
        if against:  # said first, and the comparisons it could not size named with it, never dropped
            return (
                f"{self.hypothesis}: the pilot points against it ({', '.join(against)}); more seeds would test "
                f"whether it is rejected, not support it (give --delta to plan for an effect in the stated direction)"
                + (f"; it also cannot size {unsized}" if self.unsized else "")
            )
        if self.unsized:
            return (
                f"{self.hypothesis}: the pilot cannot size {unsized}; run the pilot there, or give --delta to plan "
                f"it with the largest sd of the others"
            )
        if self.seeds_needed is None:
            return (
                f"{self.hypothesis}: at least one comparison's effect is too small to detect with {MAX_SEEDS} seeds; "
                f"plan for a larger effect (--delta) or drop the claim"
            )
        needed = max(self.seeds_needed, 2)
        more = max(0, needed - self.n_pilot)
        exact = f"; the exact test needs at least {self.exact_floor} to agree" if needed < self.exact_floor else ""
        borrowed = [row.comparison for row in self.comparisons if row.n_pilot == 0]
        unpriced = (
            f", not counting {'; '.join(borrowed)}, which has no pilot runs to price and was planned with the "
            f"largest sd of the others"
            if borrowed
            else ""
        )
        return (
            f"{self.hypothesis}: run {needed} seeds ({more} more than the pilot's {self.n_pilot}, "
            f"about {self.extra_hours:.3g} device-hours{unpriced}) for {100 * TARGET_POWER:.0f} % power to "
            f"support it with all {self.required} required comparisons (simulated: "
            f"{100 * self.simulated_power:.0f} %){exact}"
        )


def comparison_units(test: HypothesisTest) -> tuple[float, str]:
    """(scale, unit) of a hypothesis's comparisons as printed: points for accuracies, epochs for the
    epochs-to-target kind, else the metric's own units."""
    if test.kind == "epochs_to_fraction_of_reference":
        return 1.0, "epochs"
    return (100.0, "pp") if "acc" in test.metric else (1.0, test.metric)


def seeds_for_power(effect_over_sd: float, alpha: float, power: float) -> int | None:
    """The fewest paired seeds (>= 2) whose two-sided paired t-test reaches `power` against d_z; None when
    more than MAX_SEEDS would be needed."""
    if not np.isfinite(effect_over_sd) or effect_over_sd <= 0:
        return None
    for n in range(2, MAX_SEEDS + 1):
        if t_power(effect_over_sd, n - 1, math.sqrt(n), alpha) >= power:
            return n
    return None


def exact_floor(alpha: float, comparisons: int = 1) -> int:
    """The fewest paired seeds whose exact sign-flip test can give p < alpha / comparisons (Holm's first step)."""
    return next(n for n in range(2, 64) if 2 / 2**n < alpha / comparisons)


def independent_runs_per_difference(numbers: dict) -> int:
    """How many independent runs one seed's difference holds when the pilot's seeds did not pair: two (one per
    arm), or four for a difference of drops compared by the contrast of its four cells."""
    return 4 if numbers.get("test") == "Welch-Satterthwaite contrast" else 2


def plan_comparison(check: Check, alpha: float, comparisons: int, delta: float | None) -> ComparisonPlan | None:
    """None when the check has no spread to plan from (missing, or fewer than 2 paired seeds)."""
    numbers = check.numbers
    n = int(numbers.get("n_pairs") or 0) or min(int(numbers.get("n_subject", 0)), int(numbers.get("n_other", 0)))
    spread = float(numbers.get("spread", math.nan))
    if n < 2 or not np.isfinite(spread) or spread <= 0:
        return None
    if not numbers.get("n_pairs"):
        # unpaired: the sd of a difference of independent runs, each with the pooled (or rms) sd: sqrt(k) x it
        spread *= math.sqrt(independent_runs_per_difference(numbers))
    upper = sd_upper_bound(spread, n - 1)  # a spread of n values has n - 1 degrees of freedom
    difference = float(numbers.get("difference", math.nan))
    against = delta is None and difference != 0 and (difference > 0) != (check.better == "higher")
    effect = math.nan if against else (abs(delta) if delta is not None else abs(difference))
    per_comparison = TARGET_POWER ** (1 / comparisons)
    notes = [
        "against the claim" if against else "",
        ""
        if numbers.get("n_pairs")
        else f"seeds did not pair: planned as paired, one seed's difference taken as "
        f"{independent_runs_per_difference(numbers)} independent runs",
    ]
    return ComparisonPlan(
        check.setting,
        check.comparison,
        n,
        difference,
        spread,
        upper,
        effect,
        seeds_for_power(effect / upper, alpha, TARGET_POWER),
        seeds_for_power(effect / upper, alpha, per_comparison),
        t_power(effect / upper, n - 1, math.sqrt(n), alpha),
        against,
        "; ".join(filter(None, notes)),
    )


def simulated_power(plans: list[ComparisonPlan], n: int, alpha: float, rng: np.random.Generator | None = None) -> float:
    """The share of simulated studies of n paired seeds in which every comparison is significant in its
    stated direction (the verdict rule's "supported"), each drawn as normal differences with the planned
    effect and the upper-bound sd."""
    rng = rng or np.random.default_rng(0)
    supported = np.ones(SIMULATIONS, dtype=bool)
    for plan in plans:
        differences = rng.normal(plan.effect, plan.spread_upper, size=(SIMULATIONS, n))
        t = differences.mean(axis=1) / (differences.std(axis=1, ddof=1) / math.sqrt(n))
        supported &= (t > 0) & (2 * stats.t.sf(np.abs(t), n - 1) < alpha)
    return float(supported.mean())


def hours_per_seed(runs: pd.DataFrame) -> float:
    """Device-hours one more seed costs: the mean wall time of each (setting, arm) cell of the hypothesis's
    runs, summed (every cell needs a run on the new seed)."""
    done = runs[runs["status"] == COMPLETED]
    if not len(done):
        return math.nan
    return float(done.groupby(["setting", "arm"])["wall_time_s"].mean().sum() / 3600)


def borrowed_plan(check: Check, like: ComparisonPlan, alpha: float, comparisons: int, delta: float) -> ComparisonPlan:
    """A required comparison the pilot cannot size, planned for `delta` with the sd of `like` (the largest of the
    others): n_pilot 0 says it has no pilot runs of its own."""
    effect = abs(delta)
    return ComparisonPlan(
        check.setting,
        check.comparison,
        0,
        math.nan,
        like.spread,
        like.spread_upper,
        effect,
        seeds_for_power(effect / like.spread_upper, alpha, TARGET_POWER),
        seeds_for_power(effect / like.spread_upper, alpha, TARGET_POWER ** (1 / comparisons)),
        math.nan,
        note=f"no pilot spread here ({check.outcome}): planned with the largest sd of the "
        f"others ({like.setting}: {like.comparison})",
    )


def plan_seeds(verdict: Verdict, runs: pd.DataFrame, delta: float | None = None) -> SeedPlan:
    """`verdict`: hypotheses.hypothesis_verdict on the pilot; `runs`: the pilot runs of this hypothesis (its
    optimizers, in the settings it was judged on), for the cost. Every required comparison counts in m."""
    test = verdict.hypothesis.test
    comparisons = max(1, len(verdict.checks))
    sized = [plan_comparison(check, test.alpha, comparisons, delta) for check in verdict.checks]
    plans = [plan for plan in sized if plan is not None]
    unsized = [check for check, plan in zip(verdict.checks, sized) if plan is None]
    if unsized and plans and delta is not None:
        widest = max(plans, key=lambda plan: plan.spread_upper)
        plans += [borrowed_plan(check, widest, test.alpha, comparisons, delta) for check in unsized]
        unsized = []
    needed = (
        None
        if not plans or unsized or any(plan.seeds_in_hypothesis is None for plan in plans)
        else max(plan.seeds_in_hypothesis or 0 for plan in plans)  # none is None here: checked above
    )
    power = simulated_power(plans, needed, test.alpha) if needed else math.nan
    n_pilot = min((plan.n_pilot for plan in plans if plan.n_pilot), default=0)
    return SeedPlan(
        verdict.hypothesis.id,
        test.alpha,
        plans,
        needed,
        power,
        exact_floor(test.alpha),
        hours_per_seed(runs) if runs is not None else math.nan,
        n_pilot,
        tuple(f"{check.setting}: {check.comparison}" for check in unsized) if plans else (),
        comparisons,
    )


def plan_table(plan: SeedPlan, scale: float = 100.0, unit: str = "pp") -> pd.DataFrame:
    """One row per comparison, as text."""

    def seeds(value: int | None) -> str:
        return f"> {MAX_SEEDS}" if value is None else str(value)

    def seeds_text(row: ComparisonPlan, value: int | None) -> str:
        return "—" if row.against_claim else seeds(value)

    return pd.DataFrame(
        [
            {
                "setting": row.setting,
                "comparison": row.comparison,
                "pilot seeds": row.n_pilot,
                f"difference ({unit})": f"{scale * row.difference:+.2f}" if np.isfinite(row.difference) else "—",
                f"sd of differences ({unit}, 80% upper bound)": f"{scale * row.spread:.2f} ({scale * row.spread_upper:.2f})",  # noqa: E501
                f"effect planned ({unit})": "—" if row.against_claim else f"{scale * row.effect:.2f}",
                "power now": "—"
                if row.against_claim or not np.isfinite(row.power_at_pilot)
                else f"{100 * row.power_at_pilot:.0f}%",
                "seeds for 80% (alone)": seeds_text(row, row.seeds_alone),
                f"seeds for the hypothesis ({100 * TARGET_POWER ** (1 / plan.required):.0f}% each)": seeds_text(
                    row, row.seeds_in_hypothesis
                ),
                "note": row.note,
            }
            for row in plan.comparisons
        ]
    )
