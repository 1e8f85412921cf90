"""A dataset as uint8 image tensors, split into train / validation / test.

`load_splits(name=..., data_dir=..., ...)` returns a `DatasetSplits`: every split holds its images
once as a uint8 tensor (N, 3, H, W) with int64 labels, on the CPU; the pipelines move them to the
training device once. The images come from `data/sources.py`. The validation split is held out of the
training set, stratified, with `split_seed` (independent of the run seed, so every run of a study sees
the same split); `train_subset` then keeps a stratified subset of what is left, for quick runs.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from sklearn.model_selection import train_test_split

from optbench.data.sources import ImageSet, source_for
from optbench.data.text import load_text_splits
from optbench.errors import ConfigError
from optbench.registry import datasets

# Per-channel mean and std of the official training sets (fractions of 255): the descriptors'
# (optbench/registry/datasets.py).
NORMALISATION = {name: (entry.mean, entry.std) for name, entry in datasets.DATASETS.items() if entry.mean}


@dataclass(frozen=True)
class DatasetSplits:
    name: str
    train: ImageSet
    val: ImageSet
    test: ImageSet
    classes: tuple[str, ...]
    mean: tuple[float, ...]  # per-channel, fraction of 255
    std: tuple[float, ...]
    # Positions of the training and validation images in the source's training set (its order: torchvision's
    # for CIFAR, the sorted listing for a folder): how per-image facts of the full set (human labels) map on.
    train_index: np.ndarray | None = None
    val_index: np.ndarray | None = None

    @property
    def num_classes(self) -> int:
        return len(self.classes)


def load_splits(
    name: str,
    data_dir: str,
    val_size: int = 5000,
    train_subset: int | None = None,
    split_seed: int = 0,
    mean=None,
    std=None,
    **source_options,
) -> DatasetSplits:
    """Load dataset `name`, hold out `val_size` for validation, keep `train_subset` for training. A text corpus
    is cut by data/text.py instead (its held-out text is fixed: nanoGPT's last 10 %)."""
    if datasets.describe(name).kind == datasets.TEXT:
        return load_text_splits(name, data_dir, **source_options)
    full_train, test, classes = source_for(name)(data_dir=Path(data_dir), **source_options)
    train_index, val_index = _split(full_train, val_size, train_subset, split_seed, len(classes))
    train, val = _take(full_train, train_index), _take(full_train, val_index)
    if mean is None or std is None:
        descriptor = datasets.describe(name)
        mean, std = (descriptor.mean, descriptor.std) if descriptor.mean else _channel_stats(train.images)
    return DatasetSplits(name, train, val, test, tuple(classes), tuple(mean), tuple(std), train_index, val_index)


def _split(
    full_train: ImageSet, val_size: int, train_subset: int | None, split_seed: int, num_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """(training positions, validation positions) in the full training set, each in ascending order."""
    labels = full_train.labels.numpy()
    indices = np.arange(len(labels))
    if val_size > 0:
        _check_stratifiable("dataset.val_size", val_size, labels[indices], num_classes)
        indices, val_indices = train_test_split(indices, test_size=val_size, stratify=labels, random_state=split_seed)
    else:
        val_indices = indices[:0]
    if train_subset is not None and train_subset < len(indices):
        _check_stratifiable("dataset.train_subset", train_subset, labels[indices], num_classes)
        indices, _ = train_test_split(
            indices, train_size=train_subset, stratify=labels[indices], random_state=split_seed
        )
    return np.sort(indices), np.sort(val_indices)


def _check_stratifiable(key: str, size: int, labels: np.ndarray, num_classes: int) -> None:
    # A stratified split needs at least one sample of every class on both sides.
    available = len(labels)
    if not num_classes <= size <= available - num_classes:
        raise ConfigError(
            f"{key}={size} does not fit {available} training images and {num_classes} classes: "
            f"choose {num_classes}..{available - num_classes}"
        )
    smallest = int(np.bincount(labels, minlength=num_classes).min())
    if smallest < 2:
        raise ConfigError(
            f"{key}={size}: a class has only {smallest} training image(s) and a stratified split "
            f"needs 2 per class; add images to that class or set {key} to 0/null"
        )


def _take(image_set: ImageSet, indices: np.ndarray) -> ImageSet:
    index = torch.from_numpy(indices)
    return ImageSet(image_set.images[index], image_set.labels[index])


def _channel_stats(images: torch.Tensor) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and std of the pixels in [0, 1], from a 256-bin histogram of each channel:
    exact, and built chunk by chunk, so memory stays small (a float64 copy of CIFAR is 1.2 GB)."""
    counts = torch.zeros(images.shape[1], 256, dtype=torch.float64)
    for chunk in images.split(4096):
        for channel in range(images.shape[1]):
            counts[channel] += torch.bincount(chunk[:, channel].reshape(-1).long(), minlength=256).double()
    values = torch.arange(256, dtype=torch.float64) / 255
    total = counts.sum(1)
    mean = (counts * values).sum(1) / total
    variance = (counts * (values - mean[:, None]) ** 2).sum(1) / (total - 1)  # unbiased, as torch.std
    return tuple(mean.tolist()), tuple(variance.sqrt().tolist())
