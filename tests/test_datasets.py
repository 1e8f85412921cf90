"""Dataset descriptors (optbench/registry/datasets.py): one entry per dataset, read by validation, the estimate, the
device timing's input shape and the data wing; an unknown dataset is one line, never a KeyError."""

import dataclasses

import pytest
from conftest import compose_config
from omegaconf import OmegaConf

from optbench.config.validation import validate
from optbench.data.fingerprint import FINGERPRINTS, data_fingerprint
from optbench.data.sources import LOADERS
from optbench.data.splits import NORMALISATION, load_splits
from optbench.errors import ConfigError
from optbench.registry import choices, datasets
from optbench.studies.estimate import dataset_sizes, workload


def test_every_descriptor_names_a_loader_and_a_fingerprint_that_exist():
    assert choices.DATASETS == datasets.NAMES
    for entry in datasets.DATASETS.values():
        assert entry.loader in LOADERS and entry.fingerprint in FINGERPRINTS, entry.name
    assert NORMALISATION["cifar10"] == (datasets.DATASETS["cifar10"].mean, datasets.DATASETS["cifar10"].std)
    assert datasets.DATASETS["cifar100"].num_classes == 100 and len(datasets.CIFAR10_CLASSES) == 10


@pytest.mark.parametrize(
    "attempt",
    [
        lambda: validate(compose_config(["dataset.name=mnist"])),
        lambda: data_fingerprint("mnist"),
        lambda: load_splits(name="mnist", data_dir="unused"),
    ],
    ids=["validation", "fingerprint", "loading"],
)
def test_an_unknown_dataset_is_one_line_naming_the_choices(attempt):
    with pytest.raises(ConfigError) as refused:
        attempt()
    assert "dataset=mnist: not a known dataset; choose dataset=cifar10, cifar100, imagefolder, synthetic" in str(
        refused.value
    )
    assert "\n" not in str(refused.value)


def test_the_estimate_reads_sizes_and_classes_from_the_descriptor():
    cifar100 = compose_config(["dataset=cifar100", "dataset.train_subset=10000"])
    assert dataset_sizes(cifar100.dataset) == (10_000, 5_000, 10_000)
    assert workload(cifar100, 0).shape[3] == 100
    synthetic = compose_config(["dataset=synthetic", "dataset.num_classes=4", "dataset.train_size=300"])
    assert dataset_sizes(synthetic.dataset) == (100, 200, 500) and workload(synthetic, 0).shape[3] == 4
    assert dataset_sizes(compose_config(["dataset=imagefolder", "dataset.root=x"]).dataset) is None  # not a folder


def test_the_estimate_counts_a_folder_of_images_from_its_listing(tmp_path):
    for split, per_class in (("train", 7), ("test", 3)):
        for name in ("cat", "dog", "frog"):
            (tmp_path / split / name).mkdir(parents=True)
            for index in range(per_class):
                (tmp_path / split / name / f"{index}.png").write_bytes(b"")
    folder = compose_config(["dataset=imagefolder", f"dataset.root={tmp_path}", "dataset.val_size=6"])
    assert dataset_sizes(folder.dataset) == (21 - 6, 6, 9)
    assert workload(folder, 0).shape[3] == 3 and workload(folder, 0).eval_images == 6 + 9


def test_two_estimates_on_one_machine_use_one_measurement(tmp_path, monkeypatch):
    from optbench.device import fastest
    from optbench.studies import estimate

    monkeypatch.setenv("OPTBENCH_CACHE_DIR", str(tmp_path))
    timed = []
    monkeypatch.setattr(fastest, "images_per_second", lambda device, model: timed.append(model) or 500.0 + len(timed))
    shape = ("cpu", "resnet18", 8, 10, 32, 3, 32, 0)
    first, second = estimate.measure_rates({shape}), estimate.measure_rates({shape})
    assert first == second and first[shape][:2] == ("cpu", 501.0) and len(timed) == 1
    assert (tmp_path / estimate.RATE_CACHE).is_file()
    assert (
        estimate.measure_rates({("cpu", "resnet18", 8, 10, 32, 3, 16, 0)}) and len(timed) == 2
    )  # another shape: measured
    cache = fastest.read_cache(estimate.RATE_CACHE)
    fastest.write_cache({key: {"load": 0.5} for key in cache}, estimate.RATE_CACHE)  # entries without their rate
    assert estimate.measure_rates({shape})[shape][:2] == ("cpu", 503.0) and len(timed) == 3  # measured again


def test_the_input_shape_for_device_timing_comes_from_the_descriptor_or_the_config():
    assert datasets.image_shape(compose_config([]).dataset) == (3, 32, 32)
    assert datasets.image_shape(compose_config(["dataset=synthetic", "dataset.image_size=16"]).dataset) == (3, 16, 16)
    assert datasets.image_shape(compose_config(["dataset=imagefolder", "dataset.image_size=64"]).dataset) == (3, 64, 64)


def test_human_label_sets_come_from_the_descriptors():
    assert set(datasets.human_label_sets("cifar10")) == {"aggre", "random1", "random2", "random3", "worst"}
    assert set(datasets.human_label_sets("cifar100")) == {"noisy"}
    assert datasets.human_label_sets("imagefolder")["worst"].name == "cifar10"  # a folder may copy either
    assert datasets.human_label_sets("synthetic") == {}


def test_a_new_dataset_is_one_descriptor(monkeypatch, tmp_path):
    """A descriptor reusing the synthetic loader: validated, fingerprinted and loaded with no other change."""
    tiny = dataclasses.replace(datasets.DATASETS["synthetic"], name="tiny")
    monkeypatch.setitem(datasets.DATASETS, "tiny", tiny)
    cfg = compose_config(
        [
            "dataset=synthetic",
            "dataset.name=tiny",
            "dataset.train_size=60",
            "dataset.test_size=20",
            "dataset.val_size=10",
        ]
    )
    validate(cfg)
    options = OmegaConf.to_container(cfg.dataset)
    assert data_fingerprint(**options).startswith("synthetic-v1:")
    splits = load_splits(data_dir=tmp_path, **options)
    assert (len(splits.train), len(splits.val), len(splits.test)) == (50, 10, 20) and splits.name == "tiny"


def test_a_rate_timed_on_a_busy_machine_is_marked_and_replaced_by_a_quiet_measurement(tmp_path, monkeypatch):
    """Issue 56: a rate timed while other processes kept the cores busy was cached as the machine's rate, and one
    estimate assumed 22 s an epoch for a run that took 56. It is now cached marked busy (two busy estimates agree)
    and timed again once the machine is quiet, which then stands."""
    from optbench.device import fastest
    from optbench.studies import estimate

    monkeypatch.setenv("OPTBENCH_CACHE_DIR", str(tmp_path))
    timed: list = []
    monkeypatch.setattr(fastest, "images_per_second", lambda device, model: timed.append(model) or 100.0 * len(timed))
    shape = ("cpu", "resnet18", 8, 10, 32, 3, 32, 0)
    monkeypatch.setattr(estimate, "machine_load", lambda: 3.0)
    assert estimate.measure_rates({shape})[shape] == ("cpu", 100.0, 3.0)
    assert estimate.measure_rates({shape})[shape] == ("cpu", 100.0, 3.0) and len(timed) == 1  # still busy: kept
    monkeypatch.setattr(estimate, "machine_load", lambda: 0.2)
    assert estimate.measure_rates({shape})[shape] == ("cpu", 200.0, 0.2) and len(timed) == 2  # quiet: replaced
    monkeypatch.setattr(estimate, "machine_load", lambda: 3.0)
    assert estimate.measure_rates({shape})[shape] == ("cpu", 200.0, 0.2) and len(timed) == 2  # a quiet rate stands
