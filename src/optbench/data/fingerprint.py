"""What identifies a dataset's data, without torch: image-folder listing, content fingerprints, data-level names.

Standard library only, so the study planner and the run-directory resolver name data without loading
torch. `list_image_folder(root)` lists `root/train/<class>/*` and `root/test/<class>/*` in the order
torchvision's ImageFolder does (sorted class folders, sorted walk, its image extensions;
tests/test_data.py keeps the two equal), but follows a symlinked folder at most once: a link back into
a folder already listed (`train/c -> .`) is refused instead of listing its images again and again.
`data_fingerprint(name, ...)` is the data part of a run's identity (identity.run_identity; from a resolved
config, `config_data_fingerprint`); `data_dir_name(name, root, ...)` the run directory's dataset level,
`imagefolder-<folder name>-<first 8 hex of the content fingerprint>`, so a copy of the folder at another
path names the same directory.
"""

import hashlib
import importlib.metadata
import os
import re
from pathlib import Path

from optbench.errors import ConfigError
from optbench.fileio import write_bytes_atomically
from optbench.registry import datasets

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")  # torchvision's
# The md5 sums torchvision checks the CIFAR files against (CIFAR10/CIFAR100.train_list + test_list;
# tests/test_data.py compares them with torchvision's): the same data wherever it is stored.
CIFAR_MD5 = {
    "cifar10": (
        "c99cafc152244af753f735de768cd75f",
        "d4bba439e000b95fd0a9bffe97cbabec",
        "54ebc095f3ab1f0389bbae665268c751",
        "634d18415352ddfa80567beed471001a",
        "482c414d41f54cd18b22e5b47cb7c3cb",
        "40351d587109b95175f43aff81a1287e",
    ),
    "cifar100": ("16019d7e3df5f24257cddd939b257f8d", "f0ef6b0ae62326f3e7ffdfab6717acfc"),
}
SYNTHETIC_KEYS = ("num_classes", "train_size", "test_size", "image_size", "generator_seed")
NAME_FINGERPRINT_HEX = 8  # hex digits of the content fingerprint in a directory name


def list_split(split_dir: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """(sorted class names, [(image path, class index)]) of one split folder, as ImageFolder lists it."""
    classes = sorted(entry.name for entry in os.scandir(split_dir) if entry.is_dir())
    if not classes:
        raise ConfigError(f"{split_dir} holds no class folders: put each class's images in {split_dir}/<class>/")
    visited = {os.path.realpath(split_dir)}
    samples = []
    for index, name in enumerate(classes):
        files = sorted(_walk_once(os.path.join(split_dir, name), visited))
        found = [
            os.path.join(root, file)
            for root, names in files
            for file in sorted(names)
            if file.lower().endswith(IMAGE_EXTENSIONS)
        ]
        if not found:
            raise ConfigError(
                f"{split_dir}/{name} holds no images ({', '.join(IMAGE_EXTENSIONS)}): add some or remove the folder"
            )
        samples += [(path, index) for path in found]
    return classes, samples


def _walk_once(folder: str, visited: set[str]) -> list[tuple[str, list[str]]]:
    """(folder, file names) of `folder` and every folder below it; symlinks followed, but a folder reached
    twice (a link loop, or two links to one folder) is a ConfigError: its images would be listed twice."""
    real = os.path.realpath(folder)
    if real in visited:
        raise ConfigError(
            f"{folder} leads to {real}, a folder already listed (a symbolic link loop or a second link): "
            "remove the link, so each image is listed once"
        )
    visited.add(real)
    entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    found = [(folder, [entry.name for entry in entries if not entry.is_dir()])]
    for entry in entries:
        if entry.is_dir():
            found += _walk_once(entry.path, visited)
    return found


def list_image_folder(root) -> tuple[list[str], list[tuple[str, int]], list[tuple[str, int]]]:
    """(class names, train samples, test samples) under `root`; ConfigError naming the fix when it cannot be used."""
    root_path = Path(str(root or "")).expanduser()
    if not root_path.is_dir():  # named as missing, not as a folder without train/
        where = "" if root_path.is_absolute() else f" (relative to {Path.cwd()})"
        state = "is a file, not a folder" if root_path.exists() else "does not exist"
        raise ConfigError(
            f"dataset.root={root_path} {state}{where}: give the folder holding train/<class>/ and "
            "test/<class>/ images, e.g. dataset.root=../shared/data/cifar10-jpeg (README: Where the data "
            "comes from)"
        )
    for part in ("train", "test"):
        if not (root_path / part).is_dir():
            raise ConfigError(
                f"dataset.root={root_path} has no {part}/ folder: point it at a folder "
                f"holding train/<class>/ and test/<class>/ images"
            )
    train_classes, train_samples = list_split(root_path / "train")
    test_classes, test_samples = list_split(root_path / "test")
    if train_classes != test_classes:
        raise ConfigError(f"dataset.root={root_path}: train/ and test/ hold different class folders; make them match")
    return train_classes, train_samples, test_samples


def imagefolder_fingerprint(root, image_size: int = 32, samples=None, data_dir=None) -> str:
    """Every file's bytes, class and path below the root: a copy of the folder (another disk, new
    mtimes) keeps it, a changed image does not. `samples`: the train + test samples when the caller
    has listed them already. Hashing reads every file (CIFAR-10's 60,000 JPEGs: about 5 s from a cold
    disk), so with a `data_dir` the result is remembered under the files' names, sizes and mtimes."""
    if samples is None:
        _, train, test = list_image_folder(root)
        samples = train + test
    base = Path(str(root)).expanduser()
    listed = [(Path(path), label) for path, label in samples]
    memo = None
    if data_dir is not None:
        memo = Path(data_dir) / "cache" / f"imagefolder-stat-{_stat_digest(listed, base, image_size)}.txt"
        if memo.exists():
            return memo.read_text().strip()
    digest = hashlib.sha1(f"imagefolder|{image_size}".encode())
    for path, label in listed:
        digest.update(
            f"{path.relative_to(base).as_posix()}|{label}|{hashlib.sha1(path.read_bytes()).hexdigest()}\n".encode()
        )
    fingerprint = f"imagefolder:{digest.hexdigest()[:16]}"
    if memo is not None:
        memo.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomically(memo, fingerprint.encode())
    return fingerprint


def _stat_digest(samples: list[tuple[Path, int]], base: Path, image_size: int) -> str:
    """Names, classes, sizes and mtimes: cheap to read, changes whenever a file may have changed."""
    digest = hashlib.sha1(f"imagefolder-stat|{image_size}".encode())
    for path, label in samples:
        stat = os.stat(path)
        digest.update(f"{path.relative_to(base).as_posix()}|{label}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def cifar_fingerprint(name: str) -> str:
    return f"{name}:" + hashlib.sha1("|".join(CIFAR_MD5[name]).encode()).hexdigest()[:16]


def synthetic_fingerprint(**parameters) -> str:
    """Generated data is a function of its parameters (and of this generator, version 1)."""
    text = "|".join(f"{key}={parameters[key]}" for key in sorted(parameters))
    return "synthetic-v1:" + hashlib.sha1(text.encode()).hexdigest()[:16]


def mnist1d_fingerprint() -> str:
    """MNIST-1D is make_dataset's output at its default arguments: a function of the generator's version."""
    try:
        version = importlib.metadata.version("mnist1d")
    except importlib.metadata.PackageNotFoundError:
        version = "not installed"
    return f"mnist1d-defaults:{version}"


def text_fingerprint(name: str) -> str:
    """A corpus is its one file, refused unless its sha256 is the descriptor's: that digest names the data."""
    return f"{name}:{datasets.describe(name).sha256}"


# A descriptor's `fingerprint` (optbench/registry/datasets.py) names one of these: (name, source options) ->
# fingerprint.
FINGERPRINTS = {
    "cifar": lambda name, options: cifar_fingerprint(name),
    "imagefolder": lambda name, options: imagefolder_fingerprint(
        options.get("root"), options.get("image_size", 32), data_dir=options.get("data_dir")
    ),
    "synthetic": lambda name, options: synthetic_fingerprint(
        **{key: options[key] for key in SYNTHETIC_KEYS if key in options}
    ),
    "mnist1d": lambda name, options: mnist1d_fingerprint(),
    "text": lambda name, options: text_fingerprint(name),
}


def data_fingerprint(name: str, **source_options) -> str:
    """Identifies the images and labels a source gives, cheaply (no decoding): part of the run identity.
    An unknown dataset is a ConfigError naming the choices (datasets.describe), never a KeyError."""
    return FINGERPRINTS[datasets.describe(name).fingerprint](name, source_options)


def config_data_fingerprint(resolved_config: dict) -> str:
    """data_fingerprint of the dataset a resolved config names."""
    dataset = {key: value for key, value in resolved_config["dataset"].items() if key != "name"}
    return data_fingerprint(
        resolved_config["dataset"]["name"], data_dir=resolved_config["paths"]["data_dir"], **dataset
    )


def readable_folder_name(root) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", Path(str(root)).expanduser().resolve().name) or "root"


def data_dir_name(name: str, root, fingerprint: str) -> str:
    """The run directory's dataset level: the dataset's name; for a folder of images its folder name and
    the first hex digits of its content fingerprint (`imagefolder-cifar10-jpeg-d65976bf`)."""
    if not root:
        return name
    return f"{name}-{readable_folder_name(root)}-{fingerprint.split(':')[-1][:NAME_FINGERPRINT_HEX]}"
