"""Real human label noise (CIFAR-N): fetch the official label file, read it without running pickled code,
and put its labels onto a run's training and validation images.

`human_noise(splits, label_set, data_dir, root=None, label_file=None)` returns `HumanNoise`: the training
split's NoisyLabels (their realised rate, the fraction whose human label differs from the clean one) and
the validation split's human labels. The file (`datasets.HumanLabels`: its official URL and md5) is
`noise.label_file` when given, else the copy in `data_dir/cifar-n/`, else fetched there once with
torchvision's `download_url` (md5-checked). A file whose md5 is not the official one is refused before it
is opened, so no other bytes are ever unpickled; and the official file itself, a torch zip of pickled
numpy arrays, is read by torch's weights-only unpickler with only the numpy globals those arrays need
allowed, so even a file that passed the md5 check cannot run code (the file's format and schema:
optbench/formats/label_file.py).

Order: the arrays follow torchvision's CIFAR training order. An image folder that is a copy of CIFAR
(`train/<class>/NNNN.jpg`, numbered from 0000 within each class in that order) maps image `r` of class `c`
to the r-th original index whose clean label is `c`; every file name and class count is checked, and the
label file's clean labels must equal the images' classes wherever the run uses them, or the run is
refused with one line.
"""

from dataclasses import dataclass
from pathlib import Path
from urllib.error import URLError

import numpy as np
import torch

from optbench import rundir
from optbench.data.fingerprint import list_image_folder
from optbench.data.noise import NoisyLabels
from optbench.errors import ConfigError
from optbench.fileio import md5_of
from optbench.formats.label_file import read_labels
from optbench.registry import datasets

CACHE_FOLDER = "cifar-n"  # under paths.data_dir


@dataclass(frozen=True)
class HumanNoise:
    train: NoisyLabels  # the training split's labels under the label set
    val_labels: torch.Tensor  # the validation split's human labels (int64)
    label_set: str
    source: str  # the dataset whose annotations these are (cifar10, cifar100)


def label_file_path(human: datasets.HumanLabels, data_dir, label_file=None, download: bool = True) -> Path:
    """The checked label file: `label_file` when given (refused unless its md5 is the official one), else the
    copy under data_dir/cifar-n/, fetched from the official repository when missing or damaged."""
    if label_file:
        path = Path(str(label_file)).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"noise.label_file={path} does not exist: point it at a copy of {human.file_name} "
                f"({human.url}), or set noise.label_file=null to fetch it"
            )
        _check_md5(path, human, f"noise.label_file={path}")
        return path
    folder = Path(str(data_dir)) / CACHE_FOLDER
    path = folder / human.file_name
    if path.is_file() and md5_of(path) == human.md5:
        return path
    if not download:
        raise _missing(human, path, "downloading is off")
    from torchvision.datasets.utils import download_url  # the same fetch-and-md5 as torchvision's archives

    existed = rundir.nearest_existing(folder)
    try:
        download_url(human.url, str(folder), human.file_name, human.md5)
    except (URLError, OSError, RuntimeError) as error:  # no network, refused, or a download with the wrong md5
        rundir.remove_empty_dirs(folder, existed)  # a refused run creates nothing: the folder made for the file goes
        raise _missing(human, path, f"fetching {human.url} failed: {type(error).__name__}") from None
    _check_md5(path, human, str(path))
    return path


def _missing(human: datasets.HumanLabels, path: Path, why: str) -> ConfigError:
    return ConfigError(
        f"{human.file_name} is not in {path.parent} and {why}: put the official file "
        f"(md5 {human.md5}, {human.url}) at {path}, or set noise.label_file=PATH to a local copy"
    )


def _check_md5(path: Path, human: datasets.HumanLabels, name: str) -> None:
    found = md5_of(path)
    if found != human.md5:
        raise ConfigError(
            f"{name} has md5 {found}, not the official {human.file_name}'s {human.md5}: it is not "
            f"opened; use an unchanged copy of {human.url}"
        )


def labels_in_source_order(
    dataset_name: str, classes, label_set: str, data_dir, root=None, label_file=None, download: bool = True
) -> tuple[np.ndarray, np.ndarray, str]:
    """(clean labels, human labels, annotated dataset) of the source's training set, in the source's order
    (torchvision's for CIFAR; the sorted listing of `root/train` for an image folder that copies CIFAR)."""
    annotated, human = _annotated_dataset(dataset_name, classes, label_set)
    keys = (human.clean_key, human.label_sets[label_set])
    arrays = read_labels(label_file_path(human, data_dir, label_file, download), keys, len(annotated.classes))
    clean, noisy = arrays[keys[0]], arrays[keys[1]]
    if dataset_name in datasets.COPIES_OF:
        order = folder_order(root, clean)
        clean, noisy = clean[order], noisy[order]
    return clean, noisy, annotated.name


def _annotated_dataset(dataset_name: str, classes, label_set: str) -> tuple[datasets.Dataset, datasets.HumanLabels]:
    """The dataset whose annotations apply (the run's own, or for a folder the dataset its classes are),
    and its human labels."""
    annotated = datasets.describe(dataset_name)
    if dataset_name in datasets.COPIES_OF:
        copied = datasets.by_classes(classes)
        if copied is None or copied.name not in datasets.COPIES_OF[dataset_name]:
            raise ConfigError(
                f"noise=human: the folder's classes ({', '.join(list(classes)[:4])}, ...) are not those "
                f"of {' or '.join(datasets.COPIES_OF[dataset_name])}: human labels need a copy of one"
            )
        annotated = copied
    if annotated.human is None or label_set not in annotated.human.label_sets:
        sets = ", ".join(annotated.human.label_sets) if annotated.human else "none"
        raise ConfigError(f"noise.label_set={label_set}: {annotated.name} has the label sets {sets}")
    return annotated, annotated.human


def folder_order(root, clean: np.ndarray) -> np.ndarray:
    """Original training index of each image of `root/train` in listing order. Image r of class c must be
    named r (0000.jpg, 0001.jpg, ...) and each class must hold as many images as the label file gives it."""
    classes, train_samples, _ = list_image_folder(root)
    folder_labels = np.array([label for _, label in train_samples])
    counts, expected = np.bincount(folder_labels, minlength=len(classes)), np.bincount(clean, minlength=len(classes))
    for index, name in enumerate(classes):
        if counts[index] != expected[index]:
            raise ConfigError(
                f"{root}/train/{name} holds {counts[index]} images but the label file gives class "
                f"{name} {expected[index]}: human labels need the complete training set, unchanged"
            )
    rank = np.arange(len(folder_labels)) - np.searchsorted(folder_labels, folder_labels)  # position within its class
    for (path, label), position in zip(train_samples, rank):
        stem = Path(path).stem
        if not stem.isdigit() or int(stem) != position:
            raise ConfigError(
                f"{path}: image {position} of class {classes[label]} should be named "
                f"{position:04d}.*: the folder must number each class's images in CIFAR's order"
            )
    # Stable: the original indices of each class, ascending, in the order the folder lists that class.
    return np.argsort(clean, kind="stable")


def human_noise(splits, label_set: str, data_dir, root=None, label_file=None, download: bool = True) -> HumanNoise:
    """The label set's labels on `splits`' training and validation images (DatasetSplits with positions)."""
    clean, noisy, annotated = labels_in_source_order(
        splits.name, splits.classes, label_set, data_dir, root, label_file, download
    )
    parts = {}
    for part, positions in (("train", splits.train_index), ("validation", splits.val_index)):
        images = getattr(splits, "train" if part == "train" else "val")
        if len(clean) <= (positions.max() if len(positions) else -1):
            raise ConfigError(
                f"noise=human: the {part} split reaches image {positions.max()} but the label file "
                f"has {len(clean)}: use the dataset the labels were made for"
            )
        disagree = int((torch.from_numpy(clean[positions]) != images.labels).sum())
        if disagree:
            raise ConfigError(
                f"noise=human: the label file's clean labels disagree with the classes of {disagree} "
                f"{part} images: the data is not {annotated}'s training set in its original order"
            )
        parts[part] = torch.from_numpy(noisy[positions])
    is_noisy = parts["train"] != splits.train.labels
    rate = int(is_noisy.sum()) / len(is_noisy) if len(is_noisy) else 0.0
    return HumanNoise(NoisyLabels(parts["train"], is_noisy, rate), parts["validation"], label_set, annotated)


def transition_matrix(clean: torch.Tensor, given: torch.Tensor, num_classes: int) -> list[list[int]]:
    """Counts of (true class, given label) pairs: row = true class, column = the label training sees."""
    pairs = clean.long() * num_classes + given.long()
    return torch.bincount(pairs.cpu(), minlength=num_classes * num_classes).view(num_classes, num_classes).tolist()
