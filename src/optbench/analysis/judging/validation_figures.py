"""One measured figure of a validation study beside the figure simulation (or theory) gave it, and whether they agree.

A `Figure` is what the harness claims for one rule at one n (its false-positive rate, its power, an interval's
coverage), measured by resampling real runs (`rate`, with its Monte Carlo interval), beside `claimed`: the figure
the docs quote from simulation, or the nominal level the rule is built to hold, and `source`, where that figure
comes from. `relation` says how the two should compare: "=" (the claim is a value: it disagrees when the claim lies
outside the Monte Carlo interval), "<=" (an upper bound such as "at most alpha": it disagrees when the whole
interval lies above it), ">=" (a promise such as the planner's 80 % power: it disagrees when the whole interval
lies below it), "within" (the claim is a range, `claimed_low` to `claimed_high`: the 95 % range a simulated pool of
the same size gives, which holds the pool's own sampling error and the Monte Carlo error of its resamples; it
disagrees when the measured figure lies outside it). The interval is Monte Carlo error given the pool of runs; how
far the pool itself is from all seeds is not in it (a pool of 400 seeds is still a sample).
"""

import math
from dataclasses import dataclass

from optbench.analysis.statistics.resampling import Rate

EQUAL, AT_MOST, AT_LEAST, WITHIN = "=", "<=", ">=", "within"


@dataclass(frozen=True)
class Figure:
    study: str  # "A/A" (no effect) or "known effect"
    figure: str  # what is measured: "false supported", "coverage", "power", ...
    rule: str  # the harness's rule or interval it is measured on
    n: int  # seeds per arm (pairs) of each resample; for the planner, the seeds it named (median over pilots)
    rate: Rate
    claimed: float  # the simulated (or nominal) figure, a fraction; NaN when none is claimed
    relation: str  # EQUAL, AT_MOST or AT_LEAST: how `rate` should compare with `claimed`
    source: str  # where `claimed` comes from
    note: str = ""
    claimed_low: float = math.nan  # WITHIN: the range's ends
    claimed_high: float = math.nan

    @property
    def disagrees(self) -> bool:
        """Real training and the claim disagree beyond Monte Carlo error."""
        if not self.rate.trials or math.isnan(self.claimed):
            return False
        if self.relation == AT_MOST:
            return self.rate.low > self.claimed
        if self.relation == AT_LEAST:
            return self.rate.high < self.claimed
        if self.relation == WITHIN:
            return not self.claimed_low <= self.rate.value <= self.claimed_high
        return not self.rate.low <= self.claimed <= self.rate.high
