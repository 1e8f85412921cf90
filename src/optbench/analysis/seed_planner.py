"""How many seeds a hypothesis needs, planned from pilot runs (a 3-seed study is a pilot).

`plan_seeds(verdict, runs, delta)` takes a hypothesis evaluated on the pilot (hypotheses.evaluate) and, for
each required comparison, the spread of its per-seed differences. A 2-degree-of-freedom sd is very noisy,
so the plan uses its one-sided 80 % upper confidence bound (Browne 1995, "On the use of a pilot sample for
sample size determination"): sd * sqrt((n - 1) / chi2.ppf(0.2, n - 1)). The effect to detect is the one
observed, or `delta` (in the metric's units) when given. Then:
- the seeds one comparison needs for 80 % power with the paired t-test at alpha;
- the seeds the whole hypothesis needs: "supported" needs every one of its m comparisons
  (intersection-union), so each needs power 0.8^(1/m) (treating them as independent), checked by a
  bounded simulation of the verdict rule at that n;
- the exact test's floor: fewer seeds than the smallest n with 2 / 2^n < alpha can never pass it;
- the cost of the extra runs in device-hours, from the pilot runs' measured wall times.
"""

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from optbench.analysis.stats import t_power

TARGET_POWER = 0.8
SD_CONFIDENCE = 0.8      # one-sided upper bound of the pilot's sd (Browne 1995)
MAX_SEEDS = 200          # beyond this the effect is too small to plan for: "more than 200"
SIMULATIONS = 4000       # the simulation that checks the hypothesis-level power (seconds at most)


@dataclass(frozen=True)
class ComparisonPlan:
    setting: str
    comparison: str
    n_pilot: int
    difference: float       # observed, metric units (subject - other; for drops, drop difference)
    spread: float           # sd of the per-seed differences in the pilot
    spread_upper: float     # its 80 % upper confidence bound
    effect: float           # the effect planned for (|observed| or delta), metric units
    seeds_alone: int | None     # seeds for 80 % power for this comparison alone (None: more than MAX_SEEDS)
    seeds_in_hypothesis: int | None   # for power 0.8^(1/m), so all m together reach 0.8
    power_at_pilot: float   # the paired t's power at the pilot's n against `effect` at `spread_upper`
    against_claim: bool = False   # the pilot's difference goes the other way: more seeds will not support it
    note: str = ""


@dataclass(frozen=True)
class SeedPlan:
    hypothesis: str
    alpha: float
    comparisons: list[ComparisonPlan]
    seeds_needed: int | None        # the hypothesis: the largest seeds_in_hypothesis (None: a comparison needs > MAX)
    simulated_power: float          # of "supported" at seeds_needed, by simulation
    exact_floor: int                # the fewest seeds with which the exact test can reach alpha at all
    hours_per_seed: float           # device-hours one more seed costs (every arm x setting of the hypothesis)
    n_pilot: int

    @property
    def extra_hours(self) -> float:
        if self.seeds_needed is None:
            return math.inf
        return max(0, self.seeds_needed - self.n_pilot) * self.hours_per_seed

    def advice(self) -> str:
        if not self.comparisons:
            return f"{self.hypothesis}: no comparison has the spread a plan needs (run at least 2 paired seeds per arm)"
        against = [row.comparison for row in self.comparisons if row.against_claim]
        if against:
            return (f"{self.hypothesis}: the pilot points against it ({', '.join(against)}); more seeds would test "
                    f"whether it is rejected, not support it (give --delta to plan for an effect in the stated direction)")
        if self.seeds_needed is None:
            return (f"{self.hypothesis}: at least one comparison's effect is too small to detect with {MAX_SEEDS} seeds; "
                    f"plan for a larger effect (--delta) or drop the claim")
        needed = max(self.seeds_needed, 2)
        more = max(0, needed - self.n_pilot)
        exact = (f"; the exact test needs at least {self.exact_floor} to agree" if needed < self.exact_floor else "")
        return (f"{self.hypothesis}: run {needed} seeds ({more} more than the pilot's {self.n_pilot}, "
                f"about {self.extra_hours:.3g} device-hours) for {100 * TARGET_POWER:.0f} % power to support it "
                f"(simulated: {100 * self.simulated_power:.0f} %){exact}")


def comparison_units(test) -> tuple[float, str]:
    """(scale, unit) of a hypothesis's comparisons as printed: points for accuracies, epochs for the
    epochs-to-target kind, else the metric's own units."""
    if test.kind == "epochs_to_fraction_of_reference":
        return 1.0, "epochs"
    return (100.0, "pp") if "acc" in test.metric else (1.0, test.metric)


def sd_upper_bound(spread: float, n: int, confidence: float = SD_CONFIDENCE) -> float:
    """One-sided upper confidence bound of a standard deviation estimated from n values (chi-square)."""
    return spread * math.sqrt((n - 1) / stats.chi2.ppf(1 - confidence, n - 1))


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
    return next(n for n in range(2, 64) if 2 / 2 ** n < alpha / comparisons)


def plan_comparison(check, alpha: float, comparisons: int, delta: float | None) -> ComparisonPlan | None:
    """None when the check has no spread to plan from (missing, or fewer than 2 paired seeds)."""
    numbers = check.numbers
    n = int(numbers.get("n_pairs") or 0) or min(int(numbers.get("n_subject", 0)), int(numbers.get("n_other", 0)))
    spread = float(numbers.get("spread", math.nan))
    if n < 2 or not np.isfinite(spread) or spread <= 0:
        return None
    if not numbers.get("n_pairs"):
        spread *= math.sqrt(2)   # unpaired: the sd of a difference of two independent runs
    upper = sd_upper_bound(spread, n)
    difference = float(numbers.get("difference", math.nan))
    against = delta is None and difference != 0 and (difference > 0) != (check.better == "higher")
    effect = math.nan if against else (abs(delta) if delta is not None else abs(difference))
    per_comparison = TARGET_POWER ** (1 / comparisons)
    notes = ["against the claim" if against else "",
             "" if numbers.get("n_pairs") else "seeds did not pair: planned as paired from the pooled sd"]
    return ComparisonPlan(check.setting, check.comparison, n, difference, spread, upper, effect,
                          seeds_for_power(effect / upper, alpha, TARGET_POWER),
                          seeds_for_power(effect / upper, alpha, per_comparison),
                          t_power(effect / upper, n - 1, math.sqrt(n), alpha), against,
                          "; ".join(filter(None, notes)))


def simulated_power(plans: list[ComparisonPlan], n: int, alpha: float, rng=None) -> float:
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
    done = runs[runs["status"] == "completed"]
    if not len(done):
        return math.nan
    return float(done.groupby(["setting", "arm"])["wall_time_s"].mean().sum() / 3600)


def plan_seeds(verdict, runs: pd.DataFrame, delta: float | None = None) -> SeedPlan:
    """`verdict`: hypotheses.evaluate on the pilot; `runs`: the pilot runs of this hypothesis (its optimizers,
    after `where`), for the cost."""
    test = verdict.hypothesis.test
    tested = [check for check in verdict.checks if check.outcome != "missing"]
    plans = [plan for plan in (plan_comparison(check, test.alpha, max(1, len(tested)), delta) for check in tested)
             if plan is not None]
    needed = None if not plans or any(plan.seeds_in_hypothesis is None for plan in plans) else \
        max(plan.seeds_in_hypothesis for plan in plans)
    power = simulated_power(plans, needed, test.alpha) if needed else math.nan
    n_pilot = min((plan.n_pilot for plan in plans), default=0)
    return SeedPlan(verdict.hypothesis.id, test.alpha, plans, needed, power, exact_floor(test.alpha),
                    hours_per_seed(runs), n_pilot)


def plan_table(plan: SeedPlan, scale: float = 100.0, unit: str = "pp") -> pd.DataFrame:
    """One row per comparison, as text."""
    def seeds(value) -> str:
        return f"> {MAX_SEEDS}" if value is None else str(value)

    def seeds_text(row: ComparisonPlan, value) -> str:
        return "—" if row.against_claim else seeds(value)

    return pd.DataFrame([{
        "setting": row.setting, "comparison": row.comparison, "pilot seeds": row.n_pilot,
        f"difference ({unit})": f"{scale * row.difference:+.2f}",
        f"sd of differences ({unit}, 80% upper bound)": f"{scale * row.spread:.2f} ({scale * row.spread_upper:.2f})",
        f"effect planned ({unit})": "—" if row.against_claim else f"{scale * row.effect:.2f}",
        "power now": "—" if row.against_claim else f"{100 * row.power_at_pilot:.0f}%",
        "seeds for 80% (alone)": seeds_text(row, row.seeds_alone),
        f"seeds for the hypothesis ({100 * TARGET_POWER ** (1 / max(1, len(plan.comparisons))):.0f}% each)":
            seeds_text(row, row.seeds_in_hypothesis),
        "note": row.note} for row in plan.comparisons])
