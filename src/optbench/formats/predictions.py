"""predictions.npz: a run's per-image test predictions at its selected epoch (the one format module).

The epoch chosen by validation accuracy (summary.json `best`, whose `test/acc` the tables report) keeps
the class the model predicted for every test image, in test-set order, so the aggregator can pair two
runs image by image and tell the variance from seeds apart from the variance of the finite test set
(analysis/judging/variance_tables.py reads it, analysis/statistics/variance.py does the sums). The file is
compressed numpy (`numpy.savez_compressed`, read without pickle):
    predicted   the predicted class per test image: uint8, or uint16 past 255 classes (a few KB)
    labels      the test labels in the same order and dtype, so any two runs can be checked to be
                scored on the same images in the same order (`labels_sha256` names them in one string)
    epoch       the epoch the predictions come from (summary.json best.epoch)
    format      the format version (a file without it was written before versions existed: version 1;
                a newer one is refused as unreadable, naming the fix: upgrade optbench)
`write` replaces the file atomically (fileio.write_atomically); `read` follows rundir's error policy:
missing reads as None, present but unreadable raises DamagedRunFile. The training wing writes it, the
aggregator reads it; both import this module, nothing else knows the format.
"""

import hashlib
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from optbench.errors import DamagedRunFile
from optbench.fileio import write_atomically
from optbench.formats.fields import UPGRADE

FORMAT = 1

WAY_OUT = "delete it (the run's other results stand; only the per-image variance analysis leaves this run out)"


@dataclass(frozen=True)
class Predictions:
    predicted: np.ndarray  # class index per test image
    labels: np.ndarray  # true test label per image, same order
    epoch: int  # the selected epoch they come from

    @property
    def correct(self) -> np.ndarray:
        return np.asarray(self.predicted == self.labels)

    @property
    def accuracy(self) -> float:
        return float(self.correct.mean()) if len(self.labels) else float("nan")

    @property
    def labels_sha256(self) -> str:
        return labels_sha256(self.labels)


def class_dtype(num_classes: int) -> np.dtype:
    """The smallest unsigned integer holding every class index: uint8 up to 256 classes, else uint16."""
    return np.dtype(np.uint8) if num_classes <= 256 else np.dtype(np.uint16)


def labels_sha256(labels: np.ndarray) -> str:
    """A name for a test set's labels in order (dtype-independent: hashed as int64)."""
    return hashlib.sha256(np.ascontiguousarray(labels, dtype=np.int64).tobytes()).hexdigest()


def write(path: Path, predicted: npt.ArrayLike, labels: npt.ArrayLike, epoch: int, num_classes: int) -> None:
    """Replace `path` atomically with these predictions (array-likes of class indices)."""
    dtype = class_dtype(num_classes)
    predicted, labels = np.asarray(predicted), np.asarray(labels)
    if predicted.shape != labels.shape or predicted.ndim != 1:
        raise ValueError(f"predictions {predicted.shape} and labels {labels.shape} must be equal 1-D shapes")
    predicted, labels = predicted.astype(dtype), labels.astype(dtype)
    write_atomically(
        Path(path),
        lambda handle: np.savez_compressed(
            handle, predicted=predicted, labels=labels, epoch=np.int64(epoch), format=np.int64(FORMAT)
        ),
    )


def read(path: Path) -> Predictions | None:
    """The predictions in `path`; None when it does not exist; DamagedRunFile when it cannot be read."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            predicted, labels, epoch = archive["predicted"], archive["labels"], int(archive["epoch"])
            version = int(archive["format"]) if "format" in archive.files else 1
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError, zlib.error) as error:
        # zlib.error: a flipped byte inside a compressed member, as unreadable as a truncated file
        raise DamagedRunFile(f"{path} cannot be read ({type(error).__name__}): {WAY_OUT}") from error
    if version > FORMAT:
        raise DamagedRunFile(f"{path}: format {version}, this optbench reads up to format {FORMAT}: {UPGRADE}")
    if predicted.shape != labels.shape or predicted.ndim != 1:
        raise DamagedRunFile(f"{path} holds {predicted.shape} predictions for {labels.shape} labels: {WAY_OUT}")
    return Predictions(predicted=predicted, labels=labels, epoch=epoch)
