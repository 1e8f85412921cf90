"""Where a dataset's images come from: each source returns (train ImageSet, test ImageSet, class names).

- `cifar10`, `cifar100`: torchvision's dataset classes (download into `data_dir`, md5-checked);
- `imagefolder`: `root/train/<class>/*` and `root/test/<class>/*`, decoded once and cached in
  `data_dir/cache/` (keyed by the files' contents, classes and names, and carrying a checksum of its
  tensors, checked on every load: a damaged cache is decoded again, with one warning line); a file that
  cannot be decoded is a ConfigError naming it;
- `synthetic`: class prototypes plus pixel noise, generated from a fixed seed; learnable, offline.
Which source serves a dataset is its descriptor's `loader` (optbench/registry/datasets.py); `data_fingerprint(name,
...)` (data/fingerprint.py, standard library only) identifies the data a run sees
without decoding it (the run identity); the folder listing is that module's too.
"""

import hashlib
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from urllib.error import URLError

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError
from torchvision.datasets import CIFAR10, CIFAR100
from torchvision.transforms.v2.functional import pil_to_tensor, resize

from optbench.data.fingerprint import data_fingerprint, imagefolder_fingerprint, list_image_folder  # noqa: F401 (data_fingerprint: re-exported)
from optbench.errors import ConfigError
from optbench.fileio import write_atomically
from optbench.registry import datasets

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageSet:
    """One split: uint8 images (N, 3, H, W) and int64 labels (N,)."""

    images: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return len(self.labels)


# Offline, the same images as files work: docs/configuration.md, "Datasets", e.g. the CIFAR-10 JPEG copies next to
# this checkout.
OFFLINE = (
    "; or train offline on a folder of images: dataset=imagefolder dataset.root=DIR "
    "(DIR/train/<class>/*.jpg, DIR/test/<class>/*.jpg)"
)


def _load_cifar(name: str, data_dir: Path, download: bool = True):
    dataset_class = {"cifar10": CIFAR10, "cifar100": CIFAR100}[name]
    try:
        train = dataset_class(str(data_dir), train=True, download=download)
        test = dataset_class(str(data_dir), train=False, download=False)
    except (URLError, OSError) as error:  # no network, DNS failure, refused connection
        raise ConfigError(
            f"{name} is not in {data_dir} and downloading it failed ({error}): connect to the "
            f"network once, or set OPTBENCH_DATA_DIR (paths.data_dir) to a folder that holds it{OFFLINE}"
        ) from error
    except RuntimeError as error:  # torchvision: "Dataset not found or corrupted"
        raise ConfigError(
            f"{name} is missing or corrupted in {data_dir}: set dataset.download=true with network "
            f"access, or point OPTBENCH_DATA_DIR (paths.data_dir) at a folder that holds it{OFFLINE}"
        ) from error
    return _from_hwc(train.data, train.targets), _from_hwc(test.data, test.targets), train.classes


def _from_hwc(images_hwc: np.ndarray, targets) -> ImageSet:
    images = torch.from_numpy(np.ascontiguousarray(images_hwc.transpose(0, 3, 1, 2)))
    return ImageSet(images, torch.as_tensor(targets, dtype=torch.int64))


def _load_imagefolder(data_dir: Path, root: str | None = None, image_size: int = 32):
    classes, train_samples, test_samples = list_image_folder(root)
    fingerprint = imagefolder_fingerprint(root, image_size, train_samples + test_samples, data_dir).split(":")[1]
    cache_path = data_dir / "cache" / f"imagefolder-{fingerprint}.pt"
    cached = _read_cache(cache_path) if cache_path.exists() else None
    if cached is None:
        splits = {"train": _decode_all(train_samples, image_size), "test": _decode_all(test_samples, image_size)}
        cached = {**splits, "checksum": _tensors_checksum(splits)}
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(cache_path, lambda handle: torch.save(cached, handle))
    return ImageSet(*cached["train"]), ImageSet(*cached["test"]), classes


def _tensors_checksum(splits: dict) -> str:
    """A hash of every image and label byte: torch.load does not check the zip's CRCs, so a flipped bit
    would otherwise train on altered pixels."""
    digest = hashlib.blake2b(digest_size=16)
    for part in ("train", "test"):
        for tensor in splits[part]:
            digest.update(tensor.contiguous().numpy().tobytes())
    return digest.hexdigest()


def _read_cache(cache_path: Path) -> dict | None:
    """The decoded splits when the cache reads back and matches its checksum; else None, with one warning
    line (the caller decodes the images again and replaces it)."""
    try:
        cached = torch.load(cache_path, weights_only=True)
        problem = None if _tensors_checksum(cached) == cached.get("checksum") else "its checksum does not match"
    except Exception as error:  # truncated, not a zip archive, unpickling refused, missing keys  # noqa: BLE001
        problem = f"it cannot be read: {type(error).__name__}"
    if problem is None:
        return cached
    log.warning("decoded-image cache %s is damaged (%s): decoding the images again", cache_path, problem)
    return None


def _decode(path: str, image_size: int) -> torch.Tensor:
    try:
        with Image.open(path) as opened:
            image = pil_to_tensor(opened.convert("RGB"))
    except (UnidentifiedImageError, OSError, ValueError) as error:  # not an image, truncated, unreadable
        raise ConfigError(
            f"{path} cannot be decoded as an image ({type(error).__name__}): replace it with a "
            f"readable image or remove it from the folder, then run again"
        ) from None
    if image.shape[1:] != (image_size, image_size):
        image = resize(image, [image_size, image_size], antialias=True)
    return image


def _decode_all(samples: list[tuple[str, int]], image_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    # PIL releases the GIL while decoding, so threads decode in parallel.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        images = list(pool.map(lambda path: _decode(path, image_size), [path for path, _ in samples], chunksize=256))
    labels = torch.tensor([label for _, label in samples], dtype=torch.int64)
    return torch.stack(images), labels


def _make_synthetic(
    data_dir: Path,
    num_classes: int = 10,
    train_size: int = 2000,
    test_size: int = 500,
    image_size: int = 32,
    generator_seed: int = 0,
):
    """Each class is a smooth random colour prototype; samples add per-pixel Gaussian noise.

    Low-resolution prototypes (4x4, upsampled) make the classes separable by a small convnet in a
    few hundred steps, while the noise (std 64/255, well above the prototype contrast of ±24/255) keeps the task from
    being trivial.
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


# A descriptor's `loader` (optbench/registry/datasets.py) names one of these: given the dataset's name, its source
# function.
LOADERS = {
    "torchvision_cifar": lambda name: partial(_load_cifar, name),
    "imagefolder": lambda name: _load_imagefolder,
    "synthetic": lambda name: _make_synthetic,
}


def source_for(name: str):
    """The source function of dataset `name`, by its descriptor; an unknown name is a ConfigError naming the choices."""
    return LOADERS[datasets.describe(name).loader](name)


SOURCES = {name: source_for(name) for name in datasets.NAMES}
