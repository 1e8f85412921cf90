"""The fidelity half of a validation study: the fidelity rule on a real ladder, resampled, beside its simulation.

A ladder with many seeds per optimizer and rung (experiments/studies/fidelity_mnist1d.yaml: 30) is, rung by rung
below the top, a `LadderPool`: the rung's k x N matrix and the top's, on the N seeds both share (every optimizer
has a result at both; a diverged or failed run at its recorded score or chance, as the report counts it:
ladder_runs.matrix). The *truth* is what all N seeds show: each pair's change, its difference at the rung minus
its difference at the top, over every seed of the pool.

Each resample draws n of the N seeds without replacement, the same seeds at the rung and the top (the rule pairs
them by seed), and judges them with the rule's own vectorised code (fidelity_stats, fidelity_power.rule_answers,
the functions the report's power figures use; a test pins them to the report's scalar functions):
- *coverage*: the certified resolution (the largest pair's one-sided 95 % bound of |change|) covers the largest
  true |change|; and each pair's bound covers its own true |change| (the least-covered pair is shown);
- *answers*: order kept is yes (every order the top establishes on the n seeds kept at the rung), and every change
  is certified within the study's resolution.

Beside each real figure, the *simulated* one. A real figure is a property of one pool of N seeds: resampling n of
30 seeds varies less than n fresh seeds (so a t bound covers more than its nominal level), and the pool's own
draw moves its figures by more than their Monte Carlo error (two optimizers' noise correlates by about
1/sqrt(N) in a pool by chance alone). So the simulation draws whole pools of N seeds from a model fitted to the
real pool and resamples each exactly as the real one is; the real figure agrees when it lies within the range
RANGE of the simulated pools' figures give, which holds both the pool's sampling error and the Monte Carlo error
of B resamples. Two models:
- *the harness's* (the claim): fidelity_power's normal model, each optimizer's mean and own sd (Grubbs,
  fidelity.own_spreads) at the rung, at the top and of its per-seed change, optimizers independent, the magnitude
  answer drawn from the changes (as design_resolution draws them) and the order answer from independent rung and
  top draws (as keep_power and benchmarks/fidelity_coverage.py draw them);
- *normal at the pool's covariance* (in the note): the pool's means and whole sample covariance, every optimizer at
  both rungs. Where real disagrees with the harness's model but not with this one, the harness's model misses how
  this pool's cells move together; where it disagrees with both, the shape of the real noise (its tails, an
  outlying or diverged run) is the cause.
"""

from dataclasses import dataclass

import numpy as np

from optbench.analysis.judging.fidelity import own_spreads
from optbench.analysis.judging.ladder_runs import Ladder, common_seeds, matrix, result_arms
from optbench.analysis.judging.validation_figures import WITHIN, Figure
from optbench.analysis.judging.validation_null import SIZES
from optbench.analysis.statistics import fidelity_power, fidelity_stats
from optbench.analysis.statistics.power import ALPHA
from optbench.analysis.statistics.resampling import monte_carlo_rate

STUDY = "fidelity ladder"
POOLS = 400  # simulated pools per model and figure, each resampled as often as the real one
RANGE = 0.99  # the simulated pools' range a real figure should fall in: 36 figures at 95 % would flag about two by
# chance alone, at 99 % one in three studies flags one
SIMULATED = (
    "the harness's normal model (fidelity_power) fitted to the pool, pools of its size resampled as the real one "
    "is: the range 99 % of them give"
)


@dataclass(frozen=True)
class LadderPool:
    """One rung and the top on the seeds both share (columns), metric units; optimizer rows in `arms` order."""

    rung: str
    top: str
    arms: tuple[str, ...]
    seeds: tuple[int, ...]
    rung_values: np.ndarray  # k x N
    top_values: np.ndarray  # k x N
    resolution: float = fidelity_stats.DEFAULT_RESOLUTION_POINTS / 100  # the study's, metric units

    @property
    def changes(self) -> np.ndarray:
        """k x N: each optimizer's per-seed change, rung minus top."""
        return self.rung_values - self.top_values

    @property
    def truth(self) -> np.ndarray:
        """(pairs,): each pair's change over all N seeds, in fidelity_stats.pairs_of order."""
        return fidelity_stats.pair_differences(self.changes.mean(axis=1)[:, None])[:, 0]

    def pair_name(self, index: int) -> str:
        a, b = fidelity_stats.pairs_of(len(self.arms))[index]
        return f"{self.arms[a]} - {self.arms[b]}"


def ladder_pools(ladder: Ladder, metric: str) -> list[LadderPool]:
    """Every rung below the ladder's top as a pool: the optimizers with results at both, on the seeds both share."""
    pools = []
    for rung in ladder.compared[:-1] if ladder.compared and ladder.compared[-1] is ladder.top else ladder.compared:
        arms = [arm for arm in ladder.arms if arm in result_arms(rung) and arm in result_arms(ladder.top)]
        seeds = sorted(set(common_seeds(rung, arms)) & set(common_seeds(ladder.top, arms)))
        pools.append(
            LadderPool(
                rung.label,
                ladder.top.label,
                tuple(arms),
                tuple(int(seed) for seed in seeds),
                matrix(rung, arms, seeds, metric),
                matrix(ladder.top, arms, seeds, metric),
                ladder.resolution,
            )
        )
    return pools


# ---------------------------------------------------------------- pools, real and simulated


@dataclass(frozen=True)
class Pools:
    """P pools of N seeds (P, k, N): the rung and the top (the order answer reads them) and each optimizer's
    per-seed change (the magnitude answer and its bounds read it): rung - top for real runs, drawn on its own in
    the harness's model, as fidelity_power.design_resolution draws it."""

    rung: np.ndarray
    top: np.ndarray
    changes: np.ndarray

    def __len__(self) -> int:
        return self.rung.shape[0]

    def chunk(self, start: int, stop: int) -> "Pools":
        return Pools(self.rung[start:stop], self.top[start:stop], self.changes[start:stop])


def real_pools(pool: LadderPool) -> Pools:
    return Pools(pool.rung_values[None], pool.top_values[None], pool.changes[None])


def harness_pools(pool: LadderPool, count: int, rng: np.random.Generator) -> Pools:
    """`count` pools of the harness's normal model (fidelity_power.draw_runs) fitted to the real pool: each
    optimizer's mean and own sd (Grubbs, fidelity.own_spreads) at the rung, at the top and of its change, the
    optimizers independent of one another (what pairs share cancels in every pair's difference) and the rung's
    draws independent of the top's, as the harness's power simulations draw them."""
    size = len(pool.seeds)

    def draw(values: np.ndarray) -> np.ndarray:
        return fidelity_power.draw_runs(rng, values.mean(axis=1), own_spreads(values), size, count)

    return Pools(draw(pool.rung_values), draw(pool.top_values), draw(pool.changes))


def covariance_pools(pool: LadderPool, count: int, rng: np.random.Generator) -> Pools:
    """`count` pools of a normal model with the real pool's means and its whole sample covariance (every optimizer
    at the rung and at the top, and how they move together on a seed): normal noise with everything but its shape
    (tails, outliers) the pool's own."""
    k, values = len(pool.arms), np.concatenate([pool.rung_values, pool.top_values])  # 2k x N
    drawn = rng.multivariate_normal(values.mean(axis=1), np.cov(values), size=(count, len(pool.seeds)))
    drawn = np.swapaxes(drawn, -1, -2)  # (count, 2k, N)
    return Pools(drawn[:, :k], drawn[:, k:], drawn[:, :k] - drawn[:, k:])


# ---------------------------------------------------------------- the rule on a stack of resamples


def pair_bounds(rung: np.ndarray, top: np.ndarray) -> np.ndarray:
    """(..., pairs): each pair's one-sided 95 % upper bound of |change| (PairChange.bound), on a stack (..., k, n)."""
    _, low, high, _ = fidelity_stats.one_sided_bounds(fidelity_stats.pair_differences(rung - top))
    return np.maximum(high, -low)


def truth_of(changes: np.ndarray) -> np.ndarray:
    """(..., pairs): each pair's change over every seed of its pool, from (..., k, N) per-seed changes."""
    return fidelity_stats.pair_differences(changes.mean(axis=-1)[..., None])[..., 0]


@dataclass(frozen=True)
class Outcomes:
    """Per resampled ladder (P pools x B resamples): the rule's answers and whether its bounds cover the truth."""

    order_yes: np.ndarray  # (P, B) order kept is yes
    certified: np.ndarray  # (P, B) every change certified within the resolution wanted
    covers_largest: np.ndarray  # (P, B) the resolution covers the pool's largest true |change|
    pair_covers: np.ndarray  # (P, B, pairs) each pair's bound covers its pool's true |change|


def judge(rung: np.ndarray, top: np.ndarray, changes: np.ndarray, truth: np.ndarray, wanted: float) -> Outcomes:
    """The rule (fidelity_power.rule_answers) on a stack of resampled ladders (P, B, k, n) and its bounds against
    `truth` (P, 1, pairs): each pool's changes over all its seeds. The order answer reads the rung and the top, the
    magnitude answer and the bounds the per-seed changes."""
    order_yes, _ = fidelity_power.rule_answers(rung, top, ALPHA, wanted)
    bounds = pair_bounds(changes, np.zeros_like(changes))
    largest = np.abs(truth).max(axis=-1)
    return Outcomes(order_yes, bounds.max(axis=-1) <= wanted, bounds.max(axis=-1) >= largest, bounds >= np.abs(truth))


def resampled(pools: Pools, n: int, resamples: int, wanted: float, rng: np.random.Generator) -> Outcomes:
    """Each pool resampled `resamples` times: n of its seeds without replacement, the same seeds at the rung and
    the top (the rule pairs them by seed)."""
    count, _, size = pools.rung.shape
    draws = np.argsort(rng.random((count, resamples, size)), axis=-1)[..., :n]  # each row: n seeds, none twice

    def take(values: np.ndarray) -> np.ndarray:  # (P, k, N) -> (P, B, k, n)
        return np.take_along_axis(values[:, None], draws[:, :, None, :], axis=-1)

    truth = truth_of(pools.changes)[:, None]
    return judge(take(pools.rung), take(pools.top), take(pools.changes), truth, wanted)


def pool_rates(pools: Pools, n: int, resamples: int, wanted: float, rng: np.random.Generator, chunk: int = 20):
    """(order yes, certified, covers largest, pair covers (P, pairs)): each pool's share of its resamples, pools
    taken `chunk` at a time (a stack of P x B ladders at once would not fit)."""
    parts = [
        resampled(pools.chunk(start, start + chunk), n, resamples, wanted, rng) for start in range(0, len(pools), chunk)
    ]
    return tuple(
        np.concatenate([getattr(part, name).mean(axis=1) for part in parts])
        for name in ("order_yes", "certified", "covers_largest", "pair_covers")
    )


# ---------------------------------------------------------------- figures


def range_of(rates: np.ndarray) -> tuple[float, float]:
    low, high = np.quantile(rates, [(1 - RANGE) / 2, (1 + RANGE) / 2])
    return float(low), float(high)


def range_text(rates: np.ndarray) -> str:
    low, high = range_of(rates)
    return f"mean {100 * rates.mean():.1f} %, {100 * RANGE:g} % of pools {100 * low:.1f}-{100 * high:.1f} %"


@dataclass(frozen=True)
class Measured:
    """One figure of one rung at one n: the real hits, and each simulated pool's rate under the two models."""

    hits: np.ndarray  # (B,) per real resample
    harness: np.ndarray  # (P,) per pool of the harness's model
    covariance: np.ndarray  # (P,) per pool of the normal model at the pool's covariance


def figure_of(name: str, rule: str, n: int, measured: Measured, note: str) -> Figure:
    """The real rate with its Monte Carlo interval beside the harness model's: its mean, and the range RANGE of its
    pools give (the real figure disagrees outside it); the pool-covariance model's range in the note, the first
    thing to read when they disagree (inside it: the harness's model misses how this pool's cells move together;
    outside it too: the shape of the real noise, its tails or an outlying run)."""
    rate = monte_carlo_rate(int(np.count_nonzero(measured.hits)), len(measured.hits))
    low, high = range_of(measured.harness)
    note = "; ".join(
        part for part in (note, f"normal at the pool's covariance: {range_text(measured.covariance)}") if part
    )
    return Figure(
        STUDY, name, rule, n, rate, float(measured.harness.mean()), WITHIN, SIMULATED, note, float(low), float(high)
    )


def pool_figures(pool: LadderPool, n: int, resamples: int, pools: int, seed: int) -> list[Figure]:
    """The four figures of one rung at n seeds: the resolution's coverage, the least-covered pair's, and how often
    each answer is yes, each real beside the two simulated models (`pools` pools each)."""
    rngs = [np.random.default_rng([seed, 5, part, n]) for part in range(4)]
    real = resampled(real_pools(pool), n, resamples, pool.resolution, rngs[0])
    harness = pool_rates(harness_pools(pool, pools, rngs[1]), n, resamples, pool.resolution, rngs[1])
    covariance = pool_rates(covariance_pools(pool, pools, rngs[2]), n, resamples, pool.resolution, rngs[2])
    real_hits = (real.order_yes[0], real.certified[0], real.covers_largest[0])
    least = int(np.argmin(real.pair_covers[0].mean(axis=0)))
    truth = np.abs(pool.truth) * 100
    largest = int(np.argmax(truth))
    against = f"{pool.rung} vs {pool.top}"
    order, certified, covers = (Measured(real_hits[i], harness[i], covariance[i]) for i in range(3))
    # each simulated pool's least-covered pair, picked as the real one is: the least of the pairs is compared
    pair = Measured(real.pair_covers[0][:, least], harness[3].min(axis=-1), covariance[3].min(axis=-1))
    return [
        figure_of(
            "coverage",
            f"fidelity resolution covers the largest change ({against})",
            n,
            covers,
            f"truth: {pool.pair_name(largest)} {truth[largest]:.2f} points over {len(pool.seeds)} seeds; "
            "nominal >= 95 %",
        ),
        figure_of(
            "coverage",
            f"fidelity pair bound, least-covered pair ({against})",
            n,
            pair,
            f"{pool.pair_name(least)}, true |change| {truth[least]:.2f} points; simulated: each pool's least-covered "
            "pair; nominal >= 95 %",
        ),
        figure_of("order kept: yes", f"fidelity order answer ({against})", n, order, ""),
        figure_of(
            f"certified within {100 * pool.resolution:g} points",
            f"fidelity magnitude answer ({against})",
            n,
            certified,
            "",
        ),
    ]


def fidelity_figures(
    pools: list[LadderPool],
    resamples: int,
    seed: int,
    sizes: tuple[int, ...] = SIZES,
    simulated_pools: int | None = None,
) -> list[Figure]:
    """Per rung's pool and n, the real figures from `resamples` resamples beside `simulated_pools` simulated pools
    of each model, each resampled as often; a pool with no more seeds than max(sizes) (every resample would be the
    whole pool), or fewer than two optimizers, gives none."""
    return [
        figure
        for index, pool in enumerate(pools)
        if len(pool.seeds) > max(sizes) and len(pool.arms) >= 2
        for n in sizes
        for figure in pool_figures(pool, n, resamples, simulated_pools or POOLS, seed + 1000 * index)
    ]
