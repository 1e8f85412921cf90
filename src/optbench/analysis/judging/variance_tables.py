"""The variance table of a study: for every pair of optimizers in each setting, its seeds-vs-test-images
decomposition (optbench.analysis.statistics.variance) from the runs' predictions.npz (tables/variance).

`variance_table(runs, results_dir, settings, arms)` reads the files (format in optbench/formats/predictions.py)
and returns one row per pair of optimizers per setting, with warnings about files left out (unreadable, from
another epoch than the selected one, scored on another test set); runs without the file (made before it
existed) are simply not paired, and `seeds` says how many were. Only completed runs enter, as in the pairwise
tests.
"""

import itertools
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from optbench.analysis.statistics.variance import BOOTSTRAP_SEED, RESAMPLES, variance_summary
from optbench.errors import DamagedRunFile
from optbench.formats import predictions
from optbench.formats.run_summary import COMPLETED
from optbench.rundir import PREDICTIONS_FILE

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


def comparison_row(
    setting: str, arm_a: str, arm_b: str, correct_a: np.ndarray, correct_b: np.ndarray, resamples: int = RESAMPLES
) -> dict:
    """One table row; `correct_*`: [paired seeds, images]. The bootstrap seed depends only on the names,
    so a row does not change when other settings or arms are added."""
    seeds, images = correct_a.shape
    row = {"setting": setting, "arm_a": arm_a, "arm_b": arm_b, "seeds": seeds, "images": images}
    if seeds < 2:
        return {**row, "note": "fewer than 2 paired seeds with predictions: seed variance not estimable"}
    rng = np.random.default_rng([BOOTSTRAP_SEED, zlib.crc32(f"{setting}|{arm_a}|{arm_b}".encode())])
    return {**row, **variance_summary(correct_a, correct_b, rng, resamples), "note": ""}


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
