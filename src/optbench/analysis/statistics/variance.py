"""Where a comparison's variance comes from: the seeds, or the finite test set (Bouthillier et al. 2021).

Each run keeps its per-image test predictions at the selected epoch. For two optimizers in one setting, paired
by seed and by test image, let
D[s, i] = correct_A[s, i] - correct_B[s, i] (-1, 0 or +1); the accuracy difference is its mean.
- **Seeds**: the variance of that mean from the seeds is var_s(delta_s) / S, where delta_s is seed s's
  accuracy difference on the whole test set (ddof 1; S paired seeds).
- **Test images**: the variance from the finite test set is var_i(m_i) / N, where m_i is image i's
  difference averaged over the seeds (ddof 1; N test images). Resampling the test set moves every
  seed's score at once, since all seeds were scored on the same images.
Each is what resampling that source alone gives (a one-way bootstrap), so the two shares say which
source a confirmatory study should buy more of: seeds, or a larger test set. The interval comes from
a two-level bootstrap: each round draws seeds with replacement, then test images with replacement,
the image draw shared by every seed and both optimizers (they were all scored on the same test set;
Owen 2007's bootstrap for such crossed data), `RESAMPLES` rounds with a fixed seed, vectorised. It
is conservative: the seed x image interaction enters both one-way variances and the crossed draw once
more, so its interval is somewhat wider than the unbiased two-way ANOVA variance would give.
`variance_summary(correct_a, correct_b, rng)` gives the difference, its interval and the two shares from the
[paired seeds, images] correctness of two arms; the table over a study's runs and their files is
optbench.analysis.judging.variance_tables.
"""

from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000  # bootstrap rounds per comparison: percentile intervals want 1,000 or more (Efron & Tibshirani 1993)
BOOTSTRAP_SEED = 0  # fixed: the same files give the same table
CHUNK = 250  # rounds drawn at once: CHUNK x N draws stay a few MB for a 10,000-image test set
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Decomposition:
    difference: float  # mean of D: accuracy of A minus accuracy of B (fraction)
    var_seeds: float  # var_s(delta_s) / S
    var_images: float  # var_i(m_i) / N

    @property
    def share_seeds(self) -> float:
        total = self.var_seeds + self.var_images
        return self.var_seeds / total if total > 0 else float("nan")

    @property
    def share_images(self) -> float:
        total = self.var_seeds + self.var_images
        return self.var_images / total if total > 0 else float("nan")


def decompose(correct_a: np.ndarray, correct_b: np.ndarray) -> Decomposition:
    """Seed and test-image variance of the mean difference; `correct_*`: [seeds, images] booleans, paired."""
    differences = correct_a.astype(np.float64) - correct_b.astype(np.float64)
    seeds, images = differences.shape
    per_seed, per_image = differences.mean(axis=1), differences.mean(axis=0)
    var_seeds = per_seed.var(ddof=1) / seeds if seeds > 1 else float("nan")
    var_images = per_image.var(ddof=1) / images if images > 1 else float("nan")
    return Decomposition(float(differences.mean()), float(var_seeds), float(var_images))


def bootstrap_differences(
    correct_a: np.ndarray, correct_b: np.ndarray, resamples: int = RESAMPLES, rng: np.random.Generator | None = None
) -> np.ndarray:
    """The mean difference in each of `resamples` rounds of the two-level bootstrap (seeds, then images,
    the image draw shared by all seeds and both arms). A round sums D over its drawn seeds (w_seeds . D,
    w the counts of each seed drawn), then averages that over its drawn images: no resampled copy of D
    is built."""
    rng = rng or np.random.default_rng(BOOTSTRAP_SEED)
    differences = correct_a.astype(np.float32) - correct_b.astype(np.float32)
    seeds, images = differences.shape
    values = []
    for start in range(0, resamples, CHUNK):
        rounds = min(CHUNK, resamples - start)
        seed_counts = np.stack([np.bincount(draw, minlength=seeds) for draw in rng.integers(0, seeds, (rounds, seeds))])
        summed_over_seeds = seed_counts.astype(np.float32) @ differences  # [rounds, images]
        drawn_images = rng.integers(0, images, (rounds, images))
        values.append(np.take_along_axis(summed_over_seeds, drawn_images, axis=1).sum(axis=1, dtype=np.float64))
    means: np.ndarray = np.concatenate(values) / (seeds * images)
    return means


def variance_summary(
    correct_a: np.ndarray, correct_b: np.ndarray, rng: np.random.Generator, resamples: int = RESAMPLES
) -> dict[str, float]:
    """The difference, its two-level bootstrap interval (at CONFIDENCE) and sd, and the variance from each source
    with its share; `correct_*`: [paired seeds (at least 2), images] booleans."""
    parts = decompose(correct_a, correct_b)
    rounds = bootstrap_differences(correct_a, correct_b, resamples, rng)
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(rounds, [tail, 1 - tail])
    return {
        "difference": parts.difference,
        "ci_low": float(low),
        "ci_high": float(high),
        "sd_bootstrap": float(rounds.std(ddof=1)),
        "var_seeds": parts.var_seeds,
        "var_images": parts.var_images,
        "share_seeds": parts.share_seeds,
        "share_images": parts.share_images,
    }
