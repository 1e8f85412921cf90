"""Power of the t-tests, and the smallest effect they detect at the n at hand.

- `t_power(effect, df, root_n)`: the power of a two-sided t-test against a standardised effect (noncentral t).
- `detectable_effect(df, root_n)`, `min_detectable_d(n_a, n_b)`: the smallest standardised effect found with
  TARGET_POWER (80 %), paired (d_z at n pairs) or unpaired (Cohen's d at n_a vs n_b).
"""

import functools
import math

import numpy as np
from scipy import optimize, stats

ALPHA = 0.05  # the significance level of every test and of its power
TARGET_POWER = 0.8  # the usual power for "detectable"


def t_power(effect: float, df: float, root_n: float, alpha: float = ALPHA) -> float:
    """Power of a two-sided t-test with `df` degrees of freedom against a standardised effect whose
    noncentrality is effect * root_n (paired: sqrt(n); two samples: sqrt(n_a n_b / (n_a + n_b)))."""
    if not (np.isfinite(effect) and np.isfinite(df) and df > 0):
        return math.nan
    critical = stats.t.ppf(1 - alpha / 2, df)
    shift = abs(effect) * root_n
    # scipy's noncentral t gives NaN for a far tail (large shift): that tail is then 0
    upper, lower = (
        np.nan_to_num(tail, nan=0.0)
        for tail in (stats.nct.sf(critical, df, shift), stats.nct.cdf(-critical, df, shift))
    )
    return float(upper + lower)


@functools.lru_cache(maxsize=512)  # a pure function of the design, called for every comparison
def detectable_effect(df: float, root_n: float, alpha: float = ALPHA, power: float = TARGET_POWER) -> float:
    """Smallest standardised effect the t-test finds with `power` (NaN when none up to 64 sd)."""
    if not (np.isfinite(df) and df > 0):
        return math.nan
    upper = 1.0
    while t_power(upper, df, root_n, alpha) < power:  # bracket the root; the noncentral t is unstable far out
        upper *= 2
        if upper > 64:
            return math.nan
    return float(optimize.brentq(lambda d: t_power(d, df, root_n, alpha) - power, 1e-6, upper))


def min_detectable_d(n_a: int, n_b: int | None = None, alpha: float = ALPHA, power: float = TARGET_POWER) -> float:
    """Paired (n_b None): d_z detectable at n pairs; unpaired: Cohen's d at n_a vs n_b (pooled df)."""
    if n_b is None:
        return detectable_effect(n_a - 1, math.sqrt(n_a), alpha, power) if n_a >= 2 else math.nan
    if n_a < 2 or n_b < 2:
        return math.nan
    return detectable_effect(n_a + n_b - 2, math.sqrt(n_a * n_b / (n_a + n_b)), alpha, power)
