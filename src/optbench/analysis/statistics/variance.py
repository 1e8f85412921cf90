"""Where a comparison's variance comes from: the seeds, or the finite test set (Bouthillier et al. 2021).

Each run keeps its per-image test predictions at the selected epoch (predictions.npz, format in
optbench/formats/predictions.py). For two optimizers in one setting, paired by seed and by test image, let
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
`variance_table(runs, results_dir, settings, arms)` reads the files and returns one row per pair of
optimizers per setting, with warnings about files left out (unreadable, from another epoch than the
selected one, scored on another test set); runs without the file (made before it existed) are simply
not paired, and `seeds` says how many were. Only completed runs enter, as in the pairwise tests.
"""

import itertools
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from optbench.errors import DamagedRunFile
from optbench.formats import predictions
from optbench.formats.run_summary import COMPLETED
from optbench.rundir import PREDICTIONS_FILE

RESAMPLES = 2000  # bootstrap rounds per comparison: percentile intervals want 1,000 or more (Efron & Tibshirani 1993)
BOOTSTRAP_SEED = 0  # fixed: the same files give the same table
CHUNK = 250  # rounds drawn at once: CHUNK x N draws stay a few MB for a 10,000-image test set
CONFIDENCE = 0.95
COLUMNS = [
    "setting",
    "arm_a",
    "arm_b",
    "seeds",
    "images",
    "difference",
    "ci_low",
    "ci_high",
    "sd_bootstrap",
    "var_seeds",
    "var_images",
    "share_seeds",
    "share_images",
    "note",
]


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


def comparison_row(
    setting: str, arm_a: str, arm_b: str, correct_a: np.ndarray, correct_b: np.ndarray, resamples: int = RESAMPLES
) -> dict:
    """One table row; `correct_*`: [paired seeds, images]. The bootstrap seed depends only on the names,
    so a row does not change when other settings or arms are added."""
    seeds, images = correct_a.shape
    row = {"setting": setting, "arm_a": arm_a, "arm_b": arm_b, "seeds": seeds, "images": images}
    if seeds < 2:
        return {**row, "note": "fewer than 2 paired seeds with predictions: seed variance not estimable"}
    parts = decompose(correct_a, correct_b)
    rng = np.random.default_rng([BOOTSTRAP_SEED, zlib.crc32(f"{setting}|{arm_a}|{arm_b}".encode())])
    rounds = bootstrap_differences(correct_a, correct_b, resamples, rng)
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(rounds, [tail, 1 - tail])
    return {
        **row,
        "difference": parts.difference,
        "ci_low": float(low),
        "ci_high": float(high),
        "sd_bootstrap": float(rounds.std(ddof=1)),
        "var_seeds": parts.var_seeds,
        "var_images": parts.var_images,
        "share_seeds": parts.share_seeds,
        "share_images": parts.share_images,
        "note": "",
    }


def variance_table(
    runs: pd.DataFrame, results_dir: Path, settings: list[str], arms: list[str], resamples: int = RESAMPLES
) -> tuple[pd.DataFrame, list[str]]:
    """Every pair of arms within each setting with predictions for at least one common seed; and warnings."""
    rows: list[dict] = []
    warnings: list[str] = []
    for setting in settings:
        here = runs[(runs["setting"] == setting) & (runs["status"] == COMPLETED)]
        correct = setting_predictions(here, Path(results_dir), warnings)
        present = [arm for arm in arms if correct.get(arm)]
        for arm_a, arm_b in itertools.combinations(present, 2):
            seeds = sorted(correct[arm_a].keys() & correct[arm_b].keys())
            if seeds:
                rows.append(
                    comparison_row(
                        setting,
                        arm_a,
                        arm_b,
                        np.stack([correct[arm_a][seed] for seed in seeds]),
                        np.stack([correct[arm_b][seed] for seed in seeds]),
                        resamples,
                    )
                )
    return pd.DataFrame(rows, columns=COLUMNS), warnings


def setting_predictions(here: pd.DataFrame, results_dir: Path, warnings: list[str]) -> dict[str, dict]:
    """arm -> seed -> per-image correctness, for the runs of one setting whose predictions.npz is readable,
    comes from the selected epoch, and is scored on the setting's test set (the labels most runs have)."""
    loaded = {}
    for run in here.itertuples():
        kept = read_run_predictions(results_dir / run.run_id, run.best_epoch, warnings, run.run_id)
        if kept is not None:
            loaded[(run.arm, run.seed)] = kept
    if not loaded:
        return {}
    hashes = pd.Series({key: kept.labels_sha256 for key, kept in loaded.items()})
    common = hashes.value_counts().index[0]
    correct: dict[str, dict] = {}
    for (arm, seed), kept in loaded.items():
        if hashes[(arm, seed)] != common:
            warnings.append(
                f"{arm} seed {seed}: {PREDICTIONS_FILE} scores another test set than the other runs of "
                f"its setting; left out of the variance table"
            )
        elif seed in correct.setdefault(arm, {}):
            warnings.append(f"{arm} seed {seed}: more than one run; the variance table pairs the first")
        else:
            correct[arm][seed] = kept.correct
    return correct


def read_run_predictions(
    run_dir: Path, best_epoch: float, warnings: list[str], run_id: str
) -> predictions.Predictions | None:
    """The run's predictions when they belong to its selected epoch; None (with a warning when it matters)."""
    try:
        kept = predictions.read(run_dir / PREDICTIONS_FILE)
    except DamagedRunFile as error:
        warnings.append(f"{run_id}: {error}")
        return None
    if kept is None:
        return None  # a run from before predictions.npz: the table says how many seeds it paired
    if pd.isna(best_epoch) or kept.epoch != int(best_epoch):
        warnings.append(
            f"{run_id}: {PREDICTIONS_FILE} is from epoch {kept.epoch}, summary.json selected epoch "
            f"{best_epoch}; left out of the variance table"
        )
        return None
    return kept


def variance_display(table: pd.DataFrame) -> pd.DataFrame:
    """The Markdown view: points and percentages."""
    rows = []
    for row in table.itertuples():
        finite = pd.notna(row.difference)
        rows.append(
            {
                "setting": row.setting,
                "A": row.arm_a,
                "B": row.arm_b,
                "seeds": row.seeds,
                "images": row.images,
                "A − B (pp) [95% CI]": (
                    f"{100 * row.difference:+.2f} [{100 * row.ci_low:+.2f}, {100 * row.ci_high:+.2f}]"
                )
                if finite
                else "n/a",
                "sd (pp)": f"{100 * row.sd_bootstrap:.2f}" if finite else "n/a",
                "from seeds": share_text(row.share_seeds),
                "from test images": share_text(row.share_images),
                "note": row.note,
            }
        )
    return pd.DataFrame(rows)


def share_text(share: float) -> str:
    return f"{100 * share:.0f}%" if pd.notna(share) else "n/a"
