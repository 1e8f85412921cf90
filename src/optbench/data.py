"""Datasets as uint8 image tensors, split into train / validation / test.

`load_splits(name=..., data_dir=..., ...)` returns a `DatasetSplits`: every split holds its images
once as a uint8 tensor (N, 3, H, W) with int64 labels, on the CPU; the loader moves them to the
training device once. Sources:
- `cifar10`, `cifar100`: torchvision's dataset classes (download into `data_dir`, md5-checked);
- `imagefolder`: `root/train/<class>/*` and `root/test/<class>/*`, decoded once and cached in
  `data_dir/cache/` (keyed by the files' names, sizes and mtimes);
- `synthetic`: class prototypes plus pixel noise, generated from a fixed seed; learnable, offline.
The validation split is held out of the training set, stratified, with `split_seed` (independent of
the run seed, so every run of a study sees the same split); `train_subset` then keeps a stratified
subset of what is left, for quick runs.
"""

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.error import URLError

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from torchvision.datasets import CIFAR10, CIFAR100, ImageFolder
from PIL import Image
from torchvision.transforms.v2.functional import pil_to_tensor, resize

from optbench.errors import ConfigError

# Per-channel mean and std of the official training sets (fractions of 255), as used by
# kuangliu/pytorch-cifar and most CIFAR papers.
NORMALISATION = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
}


@dataclass(frozen=True)
class ImageSet:
    """One split: uint8 images (N, 3, H, W) and int64 labels (N,)."""

    images: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class DatasetSplits:
    name: str
    train: ImageSet
    val: ImageSet
    test: ImageSet
    classes: tuple[str, ...]
    mean: tuple[float, ...]  # per-channel, fraction of 255
    std: tuple[float, ...]

    @property
    def num_classes(self) -> int:
        return len(self.classes)


def load_splits(name: str, data_dir: str, val_size: int = 5000, train_subset: int | None = None,
                split_seed: int = 0, mean=None, std=None, **source_options) -> DatasetSplits:
    """Load dataset `name`, hold out `val_size` for validation, keep `train_subset` for training."""
    if name not in _SOURCES:
        raise ConfigError(f"unknown dataset '{name}': choose dataset=cifar10, cifar100, imagefolder or synthetic")
    full_train, test, classes = _SOURCES[name](data_dir=Path(data_dir), **source_options)
    train, val = _split(full_train, val_size, train_subset, split_seed, len(classes))
    if mean is None or std is None:
        mean, std = NORMALISATION.get(name) or _channel_stats(train.images)
    return DatasetSplits(name, train, val, test, tuple(classes), tuple(mean), tuple(std))


def _split(full_train: ImageSet, val_size: int, train_subset: int | None, split_seed: int,
           num_classes: int) -> tuple[ImageSet, ImageSet]:
    labels = full_train.labels.numpy()
    indices = np.arange(len(labels))
    if val_size > 0:
        _check_stratifiable("dataset.val_size", val_size, labels[indices], num_classes)
        indices, val_indices = train_test_split(indices, test_size=val_size, stratify=labels,
                                                random_state=split_seed)
    else:
        val_indices = indices[:0]
    if train_subset is not None and train_subset < len(indices):
        _check_stratifiable("dataset.train_subset", train_subset, labels[indices], num_classes)
        indices, _ = train_test_split(indices, train_size=train_subset, stratify=labels[indices],
                                      random_state=split_seed)
    return _take(full_train, np.sort(indices)), _take(full_train, np.sort(val_indices))


def _check_stratifiable(key: str, size: int, labels: np.ndarray, num_classes: int) -> None:
    # A stratified split needs at least one sample of every class on both sides.
    available = len(labels)
    if not num_classes <= size <= available - num_classes:
        raise ConfigError(f"{key}={size} does not fit {available} training images and {num_classes} classes: "
                          f"choose {num_classes}..{available - num_classes}")
    smallest = int(np.bincount(labels, minlength=num_classes).min())
    if smallest < 2:
        raise ConfigError(f"{key}={size}: a class has only {smallest} training image(s) and a stratified split "
                          f"needs 2 per class; add images to that class or set {key} to 0/null")


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


# --- sources: each returns (train ImageSet, test ImageSet, class names) -------------------------

def _load_cifar(name: str, data_dir: Path, download: bool = True):
    dataset_class = {"cifar10": CIFAR10, "cifar100": CIFAR100}[name]
    try:
        train = dataset_class(str(data_dir), train=True, download=download)
        test = dataset_class(str(data_dir), train=False, download=False)
    except (URLError, OSError) as error:  # no network, DNS failure, refused connection
        raise ConfigError(f"{name} is not in {data_dir} and downloading it failed ({error}): connect to the "
                          f"network once, or set OPTBENCH_DATA_DIR (paths.data_dir) to a folder that holds it") from error
    except RuntimeError as error:  # torchvision: "Dataset not found or corrupted"
        raise ConfigError(f"{name} is missing or corrupted in {data_dir}: set dataset.download=true with network "
                          f"access, or point OPTBENCH_DATA_DIR (paths.data_dir) at a folder that holds it") from error
    return _from_hwc(train.data, train.targets), _from_hwc(test.data, test.targets), train.classes


def _from_hwc(images_hwc: np.ndarray, targets) -> ImageSet:
    images = torch.from_numpy(np.ascontiguousarray(images_hwc.transpose(0, 3, 1, 2)))
    return ImageSet(images, torch.as_tensor(targets, dtype=torch.int64))


def _load_imagefolder(data_dir: Path, root: str | None = None, image_size: int = 32):
    root_path = Path(root or "").expanduser()
    if not root:
        raise ConfigError("dataset=imagefolder needs dataset.root=DIR with train/ and test/ class folders")
    for part in ("train", "test"):
        if not (root_path / part).is_dir():
            raise ConfigError(f"dataset.root={root_path} has no {part}/ folder: point it at a folder "
                              f"holding train/<class>/ and test/<class>/ images")
    try:
        train_folder, test_folder = ImageFolder(str(root_path / "train")), ImageFolder(str(root_path / "test"))
    except FileNotFoundError as error:  # a class folder without images
        raise ConfigError(f"dataset.root={root_path}: {error}") from error
    if train_folder.classes != test_folder.classes:
        raise ConfigError(f"dataset.root={root_path}: train/ and test/ hold different class folders; make them match")
    samples = train_folder.samples + test_folder.samples
    cache_path = data_dir / "cache" / f"imagefolder-{_fingerprint(samples, image_size)}.pt"
    if not cache_path.exists():
        _write_atomically(cache_path, {
            "train": _decode_all(train_folder.samples, image_size),
            "test": _decode_all(test_folder.samples, image_size),
        })
    cached = torch.load(cache_path, weights_only=True)
    return ImageSet(*cached["train"]), ImageSet(*cached["test"]), train_folder.classes


def _fingerprint(samples: list[tuple[str, int]], image_size: int) -> str:
    digest = hashlib.sha1(str(image_size).encode())
    for path, label in samples:
        stat = os.stat(path)
        digest.update(f"{os.path.abspath(path)}|{label}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _decode_all(samples: list[tuple[str, int]], image_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    def decode(path: str) -> torch.Tensor:
        with Image.open(path) as opened:
            image = pil_to_tensor(opened.convert("RGB"))
        if image.shape[1:] != (image_size, image_size):
            image = resize(image, [image_size, image_size], antialias=True)
        return image

    # PIL releases the GIL while decoding, so threads decode in parallel.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        images = list(pool.map(decode, [path for path, _ in samples], chunksize=256))
    labels = torch.tensor([label for _, label in samples], dtype=torch.int64)
    return torch.stack(images), labels


def _write_atomically(path: Path, payload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(payload, temporary)
    os.replace(temporary, path)


def _make_synthetic(data_dir: Path, num_classes: int = 10, train_size: int = 2000, test_size: int = 500,
                    image_size: int = 32, generator_seed: int = 0):
    """Each class is a smooth random colour prototype; samples add per-pixel Gaussian noise.

    Low-resolution prototypes (4x4, upsampled) make the classes separable by a small convnet in a
    few hundred steps, while the noise (std 64/255, well above the prototype contrast of ±24/255) keeps the task from being trivial.
    """
    del data_dir  # generated, nothing stored
    generator = torch.Generator().manual_seed(generator_seed)
    coarse = torch.rand(num_classes, 3, 4, 4, generator=generator) * 2 - 1
    prototypes = torch.nn.functional.interpolate(coarse, size=image_size, mode="bilinear", align_corners=False)

    def sample(count: int) -> ImageSet:
        labels = torch.randperm(count, generator=generator) % num_classes
        noise = torch.randn(count, 3, image_size, image_size, generator=generator)
        pixels = 128 + 24 * prototypes[labels] + 64 * noise
        return ImageSet(pixels.round().clamp(0, 255).to(torch.uint8), labels)

    train, test = sample(train_size), sample(test_size)
    return train, test, [f"class{index}" for index in range(num_classes)]


_SOURCES = {
    "cifar10": lambda **options: _load_cifar("cifar10", **options),
    "cifar100": lambda **options: _load_cifar("cifar100", **options),
    "imagefolder": _load_imagefolder,
    "synthetic": _make_synthetic,
}
DATASET_NAMES = tuple(_SOURCES)
