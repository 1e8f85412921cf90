"""How often the tuning-budget intervals (expected_max.curve_interval) hold the true expected best, by simulation in
the hard case: few trials and a skewed score distribution with some diverged trials.

`HARD_CASE` is a search like a real one at 8 trials (CIFAR's): a fifth of the trials diverge and score chance
(0.1, ten classes), the rest score 0.9 - 0.6 B with B ~ Beta(0.7, 3), so most trials sit close to the best and a
long tail reaches down to 0.3 (a learning rate far from the right one). The true expected best of k trials is
the integral of the quantile function Q against the density of the largest of k uniforms,
theta_k = int_0^1 Q(u) k u^(k-1) du (scipy.integrate.quad, exact to about 1e-10). `simulate_coverage` draws
`repetitions` searches of n trials, computes each curve and its interval, and returns per k the share of
intervals that held theta_k (with its Monte Carlo interval, resampling.monte_carlo_rate) and the estimator's mean
error (its bias, zero for the unbiased estimator), and beside it the bias of Dodge et al.'s with-replacement
estimator on the same searches (clearly negative).
"""

from dataclasses import dataclass

import numpy as np
from scipy import integrate, stats

from optbench.analysis.statistics.expected_max import curve_interval, with_replacement_curve
from optbench.analysis.statistics.resampling import Rate, monte_carlo_rate


@dataclass(frozen=True)
class Population:
    """Trial scores: `diverged` of them at `chance`, the rest `top - spread * Beta(a, b)`."""

    diverged: float = 0.2
    chance: float = 0.1
    top: float = 0.9
    spread: float = 0.6
    a: float = 0.7
    b: float = 3.0

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        learned = self.top - self.spread * stats.beta.rvs(self.a, self.b, size=shape, random_state=rng)
        return np.where(rng.random(shape) < self.diverged, self.chance, learned)

    def quantile(self, u: float) -> float:
        if u < self.diverged:
            return self.chance  # the diverged trials are the worst
        return self.top - self.spread * float(
            stats.beta.ppf(1 - (u - self.diverged) / (1 - self.diverged), self.a, self.b)
        )

    def expected_best(self, k: int) -> float:
        """theta_k: the expected best of k independent trials."""
        points = [self.diverged] if 0 < self.diverged < 1 else None
        value, _ = integrate.quad(lambda u: self.quantile(u) * k * u ** (k - 1), 0, 1, points=points, limit=200)
        return float(value)


HARD_CASE = Population()
HARD_CASE_TRIALS = 8  # CIFAR's trials per optimizer


@dataclass(frozen=True)
class Coverage:
    k: int
    truth: float  # theta_k
    coverage: Rate  # intervals holding theta_k, of the repetitions
    bias: float  # mean estimate - theta_k
    bias_se: float  # its Monte Carlo standard error
    mean_width: float
    with_replacement_bias: float  # Dodge et al.'s estimator on the same searches: mean estimate - theta_k
    with_replacement_bias_se: float


def simulate_coverage(
    population: Population = HARD_CASE,
    trials: int = HARD_CASE_TRIALS,
    repetitions: int = 1000,
    seed: int = 0,
    resamples: int = 2000,
) -> list[Coverage]:
    """Per k = 1..trials: the coverage of `curve_interval` over `repetitions` simulated searches of `trials`
    trials from `population`, and the bias of its estimate."""
    rng = np.random.default_rng(seed)
    truth = np.array([population.expected_best(k) for k in range(1, trials + 1)])
    held = np.zeros(trials, dtype=int)
    errors = np.zeros((repetitions, trials))
    dodge_errors = np.zeros((repetitions, trials))
    widths = np.zeros(trials)
    for repetition in range(repetitions):
        scores = population.draw(rng, (trials,))
        estimate, low, high = curve_interval(scores, resamples=resamples, seed=repetition)
        held += (low <= truth) & (truth <= high)
        errors[repetition] = estimate - truth
        dodge_errors[repetition] = with_replacement_curve(scores) - truth
        widths += high - low
    return [
        Coverage(
            k=k,
            truth=float(truth[k - 1]),
            coverage=monte_carlo_rate(int(held[k - 1]), repetitions),
            bias=float(errors[:, k - 1].mean()),
            bias_se=standard_error(errors[:, k - 1]),
            mean_width=float(widths[k - 1] / repetitions),
            with_replacement_bias=float(dodge_errors[:, k - 1].mean()),
            with_replacement_bias_se=standard_error(dodge_errors[:, k - 1]),
        )
        for k in range(1, trials + 1)
    ]


def standard_error(errors: np.ndarray) -> float:
    return float(errors.std(ddof=1) / np.sqrt(len(errors)))


def describe(population: Population) -> str:
    """The population in words, for the page."""
    return (
        f"{100 * population.diverged:g} % of trials diverge and score chance ({population.chance:g}); the rest score "
        f"{population.top:g} - {population.spread:g} B with B ~ Beta({population.a:g}, {population.b:g}), most "
        "near the top with a long tail down"
    )
