"""Descriptive summaries of per-seed values, and the seed bookkeeping every test between arms shares.

- `describe(values)`: n, mean, sample std (ddof=1), 95 % CI mean +- t(0.975, n-1) * sd / sqrt(n).
- `scale_of`, `no_spread`: spread below SPREAD_RTOL of the values' scale is floating-point noise, not variation.
- Seeds: an arm's values are a Series indexed by seed (`by_seed`); a seed run twice (a rerun differing only in a
  numbers-free key) counts once, at the mean of its runs (`one_per_seed`); two arms pair on the seeds both ran
  when they share at least MIN_PAIRS (`shared_seeds`, `seeds_pair`); `seed_notes` says which seeds a test left
  out or merged.
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

# Pair two arms on their shared seeds only when they share at least this many (the verdicts' default min_seeds):
# a paired t on fewer pairs would test on fewer seeds than the arms ran; such arms are compared unpaired instead.
MIN_PAIRS = 3
# Spread below this fraction of the values' scale is floating-point noise, not variation: np.std of three
# equal accuracies is ~1e-16, which a t-test would divide by.
SPREAD_RTOL = 1e-9


@dataclass(frozen=True)
class Description:
    n: int
    mean: float
    std: float  # sample standard deviation (ddof=1); NaN for n < 2
    half_width: float  # of the 95 % confidence interval of the mean: t(0.975, n-1) * std / sqrt(n)

    @property
    def ci_low(self) -> float:
        return self.mean - self.half_width

    @property
    def ci_high(self) -> float:
        return self.mean + self.half_width


def finite(values: npt.ArrayLike) -> np.ndarray:
    array = np.asarray(pd.Series(values, dtype=float), dtype=float)
    return np.asarray(array[np.isfinite(array)])


def describe(values: npt.ArrayLike, confidence: float = 0.95) -> Description:
    array = finite(values)
    n = len(array)
    if n == 0:
        return Description(0, math.nan, math.nan, math.nan)
    mean = float(array.mean())
    if n == 1:
        return Description(1, mean, math.nan, math.nan)
    std = float(array.std(ddof=1)) if not no_spread(array, scale_of(array)) else 0.0
    return Description(n, mean, std, float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * std / math.sqrt(n))


def scale_of(*arrays: npt.ArrayLike) -> float:
    """The magnitude of the data, against which spread and ties are judged."""
    finite_values = [np.abs(array[np.isfinite(array)]) for array in map(np.asarray, arrays)]
    return max([float(values.max()) for values in finite_values if len(values)] or [0.0])


def no_spread(values: npt.ArrayLike, scale: float) -> bool:
    """True when the values are all equal up to floating-point noise relative to `scale`."""
    values = np.asarray(values, dtype=float)
    return len(values) > 0 and float(np.ptp(values)) <= SPREAD_RTOL * max(scale, np.finfo(float).tiny)


# ---- seeds -------------------------------------------------------------------------------------------


def by_seed(values: pd.Series, censored: bool = False) -> pd.Series:
    """Values indexed by seed, NaN dropped; +inf (a censored run: never reached) kept when `censored`."""
    values = pd.Series(values, dtype=float)
    array = values.to_numpy()
    keep = np.isfinite(array) | (censored & (array == np.inf))
    return values[keep]


def one_per_seed(values: pd.Series) -> tuple[pd.Series, list]:
    """(each seed once, the seeds that repeated): a seed run twice (a rerun that differs only in a numbers-free
    key, or a copy in another folder) is one seed, counted at the mean of its runs; counting it twice would give a
    test a seed it does not have, and would stop the arms from pairing."""
    if values.index.is_unique:
        return values, []
    repeated = sorted(set(values.index[values.index.duplicated()]))
    return values.groupby(level=0, sort=False).mean(), repeated


def shared_seeds(a: pd.Series, b: pd.Series) -> list:
    """Seeds both arms ran (the pairs); each arm's seeds counted once (one_per_seed)."""
    return sorted(set(a.index) & set(b.index))


def seeds_pair(a: pd.Series, b: pd.Series, min_pairs: int = MIN_PAIRS) -> bool:
    return len(shared_seeds(one_per_seed(a)[0], one_per_seed(b)[0])) >= min_pairs


def seeds_text(seeds: Iterable[float]) -> str:
    return ", ".join(str(int(seed)) if float(seed).is_integer() else str(seed) for seed in seeds)


def seed_notes(
    a: pd.Series, b: pd.Series, pairs: list | None, repeated: tuple[list, list], names: tuple[str, str]
) -> str:
    """What a reader needs to count the test's seeds: repeated seeds counted once, runs left out of a paired test."""
    notes = [
        f"{name}'s seed(s) {seeds_text(seeds)} ran more than once: each counted once, at the mean of its runs"
        for name, seeds in zip(names, repeated)
        if seeds
    ]
    if pairs is not None:
        unpaired = [(name, sorted(set(values.index) - set(pairs))) for name, values in zip(names, (a, b))]
        left_out = [f"{name}'s seed(s) {seeds_text(seeds)}" for name, seeds in unpaired if seeds]
        if left_out:
            notes.append(f"paired on the {len(pairs)} seeds both ran; left out (no partner): {', '.join(left_out)}")
    return "; ".join(notes)
