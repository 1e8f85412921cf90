"""Group-sequential decisions: add seeds at pre-set looks until a hypothesis is decided, keeping its error at alpha.

Design (fixed before the first look, kept in the study's decision record): looks at n_1 < ... < n_K seeds
(default 3, 6, 10, 16) and two-sided boundaries c_1 > ... > c_K on the z scale from the Lan-DeMets
O'Brien-Fleming-type alpha-spending function alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)), t = n_k / n_K
(Lan & DeMets 1983, Biometrika 70:659). Each boundary is solved exactly on the joint normal of the look
statistics (corr(Z_i, Z_j) = sqrt(t_i / t_j)) with scipy.stats.multivariate_normal, so for normal z the
chance of ever crossing under the null is alpha: early looks need overwhelming evidence (c_1 = 4.53 at 3 of 16
seeds), the last one about the fixed design's 1.96 (2.01). The study's z come from paired t-tests' p at few
seeds, which are not normal: simulated (scripts/sequential_price.py, looks 3, 6, 10, 16), a boundary is crossed
under the null 5.2 % of the time without the futility stop and 3.9 % with it, as shipped.

At each look (on that look's seeds only: `look_seeds`) every required comparison's paired t-test
(two_arms.two_arm_test) becomes z = Phi^-1(1 - p/2), signed + in the hypothesis's stated direction; a comparison
the verdict calls not testable (too few seeds in the test, no spread, missing runs) has no z. Then, per hypothesis:
- **supported** (stop for efficacy): every comparison has z >= c_k (intersection-union: each at alpha);
- **rejected**: some comparison has z <= -c'_k, the boundaries of alpha / m (Bonferroni over its m
  comparisons, as conservative as Holm's first step);
- **futility**: under the current trend (Lan & Wittes 1988, B-value: B = z sqrt(t), drift B / t) both the
  conditional power of "supported" (every comparison ends above c_K) and that of "rejected" (some
  comparison ends below -c'_K) are below 10 %: more seeds would very likely decide nothing. A hypothesis
  heading for rejection is kept going, so it can be rejected rather than abandoned. Stopping early for
  futility only lowers the chance of either error, so both stay at or below alpha;
- **undecided** at the last look (inconclusive), else **continue**.
A decision once taken is final: the record keeps it, and later looks never re-decide it on more data.
"""

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

# The rule's decisions, as the study's decision record (optbench.formats.decision_record.DECISIONS) spells them; the
# statistics import nothing from the formats, and tests/test_sequential.py checks the two vocabularies agree.
CONTINUE, SUPPORTED, REJECTED, FUTILITY, UNDECIDED = "continue", "supported", "rejected", "futility", "undecided"
DECISIONS = (CONTINUE, SUPPORTED, REJECTED, FUTILITY, UNDECIDED)
DEFAULT_LOOKS = (3, 6, 10, 16)
FUTILITY_POWER = 0.10
STOPPED = (SUPPORTED, REJECTED, FUTILITY, UNDECIDED)


def looks_for(first: int, max_seeds: int, planned: Sequence[int] = DEFAULT_LOOKS) -> tuple[int, ...]:
    """The study's own seeds first, then the default looks above it, ending at max_seeds."""
    return tuple(dict.fromkeys([first, *(n for n in planned if first < n < max_seeds), max(first, max_seeds)]))


def look_seeds(own: list[int], count: int) -> list[int]:
    """The seeds of a look of `count` seeds: the study's own, then the next integers after its largest. A look
    is decided on exactly these, whatever else the folder holds (a later look's seeds, copied-back runs)."""
    return (list(own) + list(range(max(own) + 1, max(own) + 1 + count)))[:count]


def spent(fraction: float, alpha: float) -> float:
    """O'Brien-Fleming-type alpha spent by information fraction t (two-sided)."""
    return float(2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - alpha / 2) / math.sqrt(fraction)))


def inside(bounds: list[float], fractions: list[float]) -> float:
    """P(|Z_i| < c_i for every look i) for the joint normal of the look statistics."""
    if len(bounds) == 1:
        return float(2 * stats.norm.cdf(bounds[0]) - 1)
    corr = np.sqrt(np.minimum.outer(fractions, fractions) / np.maximum.outer(fractions, fractions))
    upper = np.asarray(bounds, dtype=float)
    return float(
        stats.multivariate_normal(
            mean=np.zeros(len(bounds)), cov=corr, allow_singular=True, maxpts=200_000, abseps=1e-7, releps=1e-7
        ).cdf(upper, lower_limit=-upper)
    )


@functools.lru_cache(maxsize=64)  # a few seconds each; a design is asked for at every look and simulation
def boundaries(looks: tuple[int, ...], alpha: float) -> tuple[float, ...]:
    """Two-sided z boundaries c_1..c_K: crossing first at look k has null probability alpha(t_k) - alpha(t_{k-1})."""
    fractions = [n / looks[-1] for n in looks]
    bounds: list[float] = []
    stay = 1.0  # P(no crossing so far)
    for k, fraction in enumerate(fractions):
        target = stay - (spent(fraction, alpha) - (spent(fractions[k - 1], alpha) if k else 0.0))
        bound = optimize.brentq(lambda c: inside([*bounds, c], fractions[: k + 1]) - target, 0.1, 12.0, xtol=1e-6)  # noqa: B023
        bounds.append(float(bound))
        stay = target
    return tuple(bounds)


@dataclass(frozen=True)
class Design:
    looks: tuple[int, ...]
    alpha: float
    comparisons: int  # m: the hypothesis's required comparisons

    @property
    def efficacy(self) -> tuple[float, ...]:
        return boundaries(self.looks, self.alpha)

    @property
    def rejection(self) -> tuple[float, ...]:
        return boundaries(self.looks, self.alpha / max(1, self.comparisons))


def signed_z(p_value: float, difference: float, better: str) -> float:
    """The two-sided p of a comparison as a z score, + in the stated direction; NaN when untested."""
    if not (np.isfinite(p_value) and np.isfinite(difference)):
        return math.nan
    z = float(stats.norm.isf(max(p_value, 1e-300) / 2))
    return z if (difference > 0) == (better == "higher") and difference != 0 else -z


def conditional_power(z: float, fraction: float, final_bound: float) -> float:
    """P(Z at the last look >= its bound | Z now = z), the drift estimated from the data so far (a negative
    z with a negated bound gives the chance of ending below -bound)."""
    if fraction >= 1:
        return float(z >= final_bound)
    b_value = z * math.sqrt(fraction)
    drift = b_value / fraction
    return float(stats.norm.sf((final_bound - b_value - drift * (1 - fraction)) / math.sqrt(1 - fraction)))


def decision_powers(z_values: list[float], fraction: float, design: Design) -> tuple[float, float]:
    """(conditional power of "supported", of "rejected") at the last look, comparisons taken as independent."""
    support = float(np.prod([conditional_power(z, fraction, design.efficacy[-1]) for z in z_values]))
    reject = 1 - float(np.prod([1 - conditional_power(-z, fraction, design.rejection[-1]) for z in z_values]))
    return support, reject


@dataclass(frozen=True)
class Decision:
    decision: str  # continue, supported, rejected, futility, undecided
    reason: str
    conditional_power: float  # of a decision (supported or rejected) under the current trend; NaN when none


def decide(z_values: list[float], look: int, design: Design) -> Decision:
    """The decision at look index `look` (0-based) from the required comparisons' signed z scores."""
    efficacy, rejection = design.efficacy, design.rejection
    last = look == len(design.looks) - 1
    fraction = design.looks[look] / design.looks[-1]
    if any(z <= -rejection[look] for z in z_values if np.isfinite(z)):
        return Decision(REJECTED, f"a comparison crossed the rejection boundary z <= -{rejection[look]:.2f}", math.nan)
    untested = sum(not np.isfinite(z) for z in z_values)
    if z_values and not untested and all(z >= efficacy[look] for z in z_values):
        return Decision(SUPPORTED, f"every comparison crossed z >= {efficacy[look]:.2f}", math.nan)
    if last:
        return Decision(UNDECIDED, f"not decided at the last look ({design.looks[look]} seeds): inconclusive", math.nan)
    if untested or not z_values:
        return Decision(CONTINUE, f"{untested} comparison(s) not testable yet", math.nan)
    support, reject = decision_powers(z_values, fraction, design)
    powers = f"conditional power: supported {100 * support:.1f} %, rejected {100 * reject:.1f} %"
    if max(support, reject) < FUTILITY_POWER:
        return Decision(FUTILITY, f"{powers}, both < {100 * FUTILITY_POWER:.0f} %", max(support, reject))
    return Decision(CONTINUE, powers, max(support, reject))
