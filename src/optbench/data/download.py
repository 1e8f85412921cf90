"""Fetch datasets before their runs (`python src/download_data.py`), on a machine with internet for those without.

A cluster's compute nodes often cannot reach the internet while its login node can: fetch there, into the folder
the runs read (`paths.data_dir`: `$OPTBENCH_DATA_DIR`, else `data/`), and the runs find everything and download
nothing. Each file is fetched by the code a run fetches it with, so it lands where a run looks: CIFAR-10/100 by the
dataset's own source (data/sources.py: torchvision's download, md5-checked, extracted), CIFAR-N's human label files
by data/human_labels.py (the official file, md5-checked). A file already there and intact is not fetched again.
A folder of images (`dataset=imagefolder`) is read where it is and generated data needs no files, so neither has
anything to fetch.
"""

from pathlib import Path

from optbench.data.human_labels import label_file_path
from optbench.data.sources import source_for
from optbench.errors import ConfigError
from optbench.registry import datasets

# The sources (data/sources.py LOADERS) that download their files; a new one that does belongs here.
FETCHING_LOADERS = ("torchvision_cifar",)


def downloadable() -> tuple[str, ...]:
    """The datasets whose files can be fetched ahead of the runs."""
    return tuple(name for name, descriptor in datasets.DATASETS.items() if descriptor.loader in FETCHING_LOADERS)


def check_request(names: list[str], data_dir: Path) -> None:
    """Every name fetchable and the folder usable, before anything is fetched: a ConfigError naming the fix."""
    for name in names:
        if name not in datasets.DATASETS:
            raise ConfigError(f"unknown dataset '{name}': choose from {', '.join(downloadable())}")
        if name not in downloadable():
            raise ConfigError(
                f"{name} has nothing to download (a folder of images is read where it is, generated "
                f"data needs no files): choose from {', '.join(downloadable())}"
            )
    if data_dir.exists() and not data_dir.is_dir():
        raise ConfigError(f"--data-dir {data_dir} is a file: name the folder the runs read (paths.data_dir)")


def fetch(name: str, data_dir: Path, human_labels: bool = False) -> list[str]:
    """Fetch dataset `name` (and, with `human_labels`, its CIFAR-N label file) into `data_dir` as a run would,
    unless it is there already; one line per thing now in place. A failed fetch is a ConfigError."""
    train, test, _ = source_for(name)(data_dir=data_dir, download=True)
    lines = [f"{name}: {len(train):,} training and {len(test):,} test images in {data_dir} (md5-checked)"]
    human = datasets.describe(name).human
    if human_labels and human is not None:
        path = label_file_path(human, data_dir, download=True)
        lines.append(f"{name}: human label sets {', '.join(human.label_sets)} in {path} (md5-checked)")
    return lines
