"""Real human label noise (CIFAR-N): the official files' rates, the mapping onto CIFAR order and onto an
image-folder copy, the md5 check, loading without running pickled code, and a short run under `worst`."""

import os
import shutil
from pathlib import Path
from urllib.error import URLError

import numpy as np
import pytest
import torch
from conftest import REPO, compose_config

from optbench.config.validation import validate
from optbench.data import human_labels
from optbench.data.human_labels import folder_order, human_noise, label_file_path
from optbench.data.sources import ImageSet
from optbench.data.splits import DatasetSplits
from optbench.errors import ConfigError
from optbench.formats.label_file import read_label_arrays, read_labels
from optbench.registry import datasets
from optbench.training.run import train

CIFAR_N = REPO.parent / "shared" / "data" / "cifar-n"
CIFAR10_N = CIFAR_N / "CIFAR-10_human.pt"
CIFAR100_N = CIFAR_N / "CIFAR-100_human.pt"
# The paper's rates (Wei et al. 2022, Table 1), as the shared copy's README measures them.
PUBLISHED_RATES = {
    ("cifar10", "aggre"): 0.0901,
    ("cifar10", "random1"): 0.1723,
    ("cifar10", "random2"): 0.1812,
    ("cifar10", "random3"): 0.1764,
    ("cifar10", "worst"): 0.4021,
    ("cifar100", "noisy"): 0.4020,
}


@pytest.fixture
def shared_label_files():
    if not (CIFAR10_N.is_file() and CIFAR100_N.is_file()):
        pytest.skip(f"the CIFAR-N label files are not at {CIFAR_N}")
    return {"cifar10": CIFAR10_N, "cifar100": CIFAR100_N}


@pytest.mark.parametrize("dataset, label_set", sorted(PUBLISHED_RATES))
def test_realised_rates_on_the_full_training_set_are_the_published_ones(shared_label_files, dataset, label_set):
    human = datasets.describe(dataset).human
    arrays = read_label_arrays(label_file_path(human, "unused", shared_label_files[dataset]))
    clean, noisy = arrays[human.clean_key], arrays[human.label_sets[label_set]]
    assert len(clean) == len(noisy) == 50_000
    assert round(float((clean != noisy).mean()), 4) == PUBLISHED_RATES[(dataset, label_set)]


def test_the_files_follow_torchvisions_training_order(shared_label_files):
    arrays = read_label_arrays(shared_label_files["cifar10"])
    assert arrays["clean_label"][:10].tolist() == [6, 9, 9, 4, 1, 1, 2, 7, 8, 3]  # torchvision CIFAR10(train)[:10]
    assert {"clean_label", "noisy_label"} <= set(read_label_arrays(shared_label_files["cifar100"]))


def fake_splits(clean: np.ndarray, train_index: np.ndarray, val_index: np.ndarray, name="cifar10") -> DatasetSplits:
    """Splits whose labels are the label file's clean ones at the given positions (images: 1 pixel each)."""

    def part(index):
        return ImageSet(torch.zeros(len(index), 3, 1, 1, dtype=torch.uint8), torch.from_numpy(clean[index]))

    classes = datasets.describe(name).classes
    return DatasetSplits(
        name,
        part(train_index),
        part(val_index),
        part(val_index[:1]),
        classes,
        (0.5,) * 3,
        (0.2,) * 3,
        train_index,
        val_index,
    )


def test_human_noise_puts_the_label_set_on_the_training_and_validation_images(shared_label_files, tmp_path):
    arrays = read_label_arrays(shared_label_files["cifar10"])
    clean, worst = arrays["clean_label"], arrays["worse_label"]
    train_index, val_index = np.arange(0, 50_000, 7), np.arange(3, 50_000, 11)
    noise = human_noise(
        fake_splits(clean, train_index, val_index), "worst", tmp_path, label_file=shared_label_files["cifar10"]
    )
    assert noise.train.labels.tolist() == worst[train_index].tolist()
    assert noise.val_labels.tolist() == worst[val_index].tolist()
    assert noise.train.realised_rate == pytest.approx(float((clean[train_index] != worst[train_index]).mean()))
    assert 0.38 < noise.train.realised_rate < 0.42 and noise.source == "cifar10"
    counts = torch.tensor(human_labels.transition_matrix(torch.from_numpy(clean[train_index]), noise.train.labels, 10))
    assert (
        int(counts.sum()) == len(train_index)
        and int(counts.diagonal().sum()) == len(train_index) - noise.train.num_noisy
    )
    cat, dog = datasets.CIFAR10_CLASSES.index("cat"), datasets.CIFAR10_CLASSES.index("dog")
    assert counts[cat].argsort()[-2] == dog  # people mistake cats for dogs more than for anything else


def test_data_in_another_order_is_refused(shared_label_files, tmp_path):
    clean = read_label_arrays(shared_label_files["cifar10"])["clean_label"]
    shuffled = clean.copy()
    np.random.default_rng(0).shuffle(shuffled)
    with pytest.raises(ConfigError, match="disagree with the classes of .* train images"):
        human_noise(
            fake_splits(shuffled, np.arange(0, 50_000, 5), np.arange(1, 50_000, 50)),
            "aggre",
            tmp_path,
            label_file=shared_label_files["cifar10"],
        )


def test_a_label_set_of_another_dataset_is_refused_at_validation():
    validate(compose_config(["noise=human", "noise.label_set=worst"]))
    validate(compose_config(["dataset=cifar100", "noise=human", "noise.label_set=noisy"]))
    with pytest.raises(ConfigError, match="noise.label_set=worst: choose one of noisy"):
        validate(compose_config(["dataset=cifar100", "noise=human", "noise.label_set=worst"]))
    with pytest.raises(ConfigError, match="dataset synthetic has no human label sets"):
        validate(compose_config(["dataset=synthetic", "noise=human"]))
    with pytest.raises(ConfigError, match="noise=human takes its rate from the label set"):
        validate(compose_config(["noise=human", "noise.rate=0.2"]))


# ---- an image folder that copies CIFAR ------------------------------------------------------------


def make_folder(root: Path, names: dict[str, list[str]]) -> Path:
    for split in ("train", "test"):
        for class_name, files in names.items():
            folder = root / split / class_name
            folder.mkdir(parents=True)
            for file in files:
                (folder / file).write_bytes(b"not decoded: the order needs names only")
    return root


def test_folder_order_maps_each_classs_images_onto_its_original_indices(tmp_path):
    # Original order: index 0 is an automobile, 1 and 2 airplanes, 3 an automobile.
    clean = np.array([1, 0, 0, 1])
    root = make_folder(
        tmp_path / "copy", {"airplane": ["0000.jpg", "0001.jpg"], "automobile": ["0000.jpg", "0001.jpg"]}
    )
    assert folder_order(root, clean).tolist() == [1, 2, 0, 3]


def test_folder_that_is_not_numbered_in_cifar_order_or_is_incomplete_is_refused(tmp_path):
    clean = np.array([1, 0, 0, 1])
    renamed = make_folder(
        tmp_path / "renamed", {"airplane": ["0000.jpg", "0005.jpg"], "automobile": ["0000.jpg", "0001.jpg"]}
    )
    with pytest.raises(ConfigError, match="image 1 of class airplane should be named 0001"):
        folder_order(renamed, clean)
    short = make_folder(tmp_path / "short", {"airplane": ["0000.jpg"], "automobile": ["0000.jpg", "0001.jpg"]})
    with pytest.raises(ConfigError, match="holds 1 images but the label file gives class airplane 2"):
        folder_order(short, clean)


def test_a_folder_of_other_classes_gets_no_human_labels(tmp_path, shared_label_files):
    root = make_folder(tmp_path / "other", {"cats": ["0000.jpg"], "dogs": ["0000.jpg"]})
    splits = fake_splits(np.array([0, 1]), np.array([0]), np.array([1]), name="imagefolder")
    splits = DatasetSplits(
        "imagefolder",
        splits.train,
        splits.val,
        splits.test,
        ("cats", "dogs"),
        splits.mean,
        splits.std,
        splits.train_index,
        splits.val_index,
    )
    with pytest.raises(ConfigError, match="are not those of cifar10 or cifar100"):
        human_noise(splits, "worst", tmp_path, root=root, label_file=shared_label_files["cifar10"])


@pytest.mark.slow
def test_the_shared_image_folder_agrees_with_the_clean_labels_class_by_class(shared_label_files, real_cifar10_root):
    from optbench.data.fingerprint import list_image_folder

    clean = read_label_arrays(shared_label_files["cifar10"])["clean_label"]
    order = folder_order(real_cifar10_root, clean)
    classes, train_samples, _ = list_image_folder(real_cifar10_root)
    assert tuple(classes) == datasets.CIFAR10_CLASSES
    folder_labels = np.array([label for _, label in train_samples])
    for index, name in enumerate(classes):
        mapped = clean[order][folder_labels == index]
        assert len(mapped) == 5000 and (mapped == index).all(), name


# ---- the file: md5, fetching, and never running pickled code ----------------------------------


class Payload:
    """Unpickling this runs os.mkdir(marker): what a malicious label file would do."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def malicious_file(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "code-ran"
    path = tmp_path / "CIFAR-10_human.pt"
    torch.save({"clean_label": Payload(marker), "worse_label": np.zeros(3, dtype=np.int64)}, path)
    return path, marker


def test_the_malicious_file_really_runs_code_when_unpickled(tmp_path):
    path, marker = malicious_file(tmp_path)
    torch.load(path, weights_only=False)  # the control: plain pickle executes the payload
    assert marker.is_dir()


def test_a_file_with_the_wrong_md5_is_refused_and_never_unpickled(tmp_path):
    path, marker = malicious_file(tmp_path)
    with pytest.raises(ConfigError, match="has md5 .* not the official CIFAR-10_human.pt's 96644db5"):
        label_file_path(datasets.CIFAR10_N, tmp_path / "data", path)
    assert not marker.exists()


def test_the_reader_refuses_pickled_code_even_past_the_md5_check(tmp_path):
    path, marker = malicious_file(tmp_path)
    with pytest.raises(ConfigError, match=r"can be read without running code \(UnpicklingError\)"):
        read_label_arrays(path)
    assert not marker.exists()


def test_a_cached_copy_is_used_and_without_network_one_line_says_where_to_put_the_file(
    tmp_path, monkeypatch, shared_label_files
):
    import torchvision.datasets.utils as tv_utils

    def offline(url, root, filename=None, md5=None):
        raise URLError("no network")

    monkeypatch.setattr(tv_utils, "download_url", offline)
    with pytest.raises(ConfigError) as refused:
        label_file_path(datasets.CIFAR10_N, tmp_path / "data")
    expected_place = tmp_path / "data" / "cifar-n" / "CIFAR-10_human.pt"
    assert f"at {expected_place}" in str(refused.value) and "noise.label_file=PATH" in str(refused.value)
    assert "\n" not in str(refused.value)
    expected_place.parent.mkdir(parents=True)
    shutil.copy(shared_label_files["cifar10"], expected_place)
    assert label_file_path(datasets.CIFAR10_N, tmp_path / "data") == expected_place  # no download asked for
    with pytest.raises(ConfigError, match="noise.label_file=.*does not exist"):
        label_file_path(datasets.CIFAR10_N, tmp_path / "data", tmp_path / "absent.pt")


# ---- a real run -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_short_real_image_run_under_worst_completes_and_records_its_rate(
    tmp_path, real_cifar10_root, shared_label_files, one_thread
):
    cfg = compose_config(
        [
            "dataset=imagefolder",
            f"dataset.root={real_cifar10_root}",
            "noise=human",
            "noise.label_set=worst",
            f"noise.label_file={shared_label_files['cifar10']}",
            f"paths.data_dir={os.environ['OPTBENCH_TEST_DATA_DIR']}",
            "dataset.val_size=500",
            "dataset.train_subset=1000",
            "model.width=8",
            "epochs=1",
            "batch_size=100",
            "optimizer=adamw",
            "device=cpu",
            "train.progress_bar=false",
        ]
    )
    summary = train(cfg, tmp_path / "run")
    assert summary["status"] == "completed"
    noise = summary["noise"]
    assert noise["kind"] == "human" and noise["label_set"] == "worst" and noise["annotated_dataset"] == "cifar10"
    assert 0.35 < noise["realised_rate"] < 0.45 and noise["num_noisy"] == round(noise["realised_rate"] * 1000)
    assert noise["validation"]["labels"] == "noisy" and 0.35 < noise["validation"]["realised_rate"] < 0.45
    matrix = np.array(noise["transition_matrix"])
    assert matrix.shape == (10, 10) and matrix.sum() == 1000 and matrix.sum() - np.trace(matrix) == noise["num_noisy"]


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"clean_label": np.array([0, 1, 2])}, "holds no worse_label array"),
        (
            {"clean_label": np.array([0, 1, 2]), "worse_label": np.array([0, 1, 10])},
            r"worse_label is not one class index",
        ),
        (
            {"clean_label": np.array([0, 1, 2]), "worse_label": np.array([[0, 1]])},
            r"worse_label is not one class index",
        ),
        ({"clean_label": np.array([0, 1, 2]), "worse_label": np.array([0, 1])}, "differ in length"),
    ],
)
def test_a_label_file_off_its_schema_is_one_line_naming_the_file(tmp_path, arrays, message):
    """A label file that unpickles safely but is not CIFAR-N's shape: one ConfigError line, not an IndexError."""
    path = tmp_path / "labels.pt"
    torch.save(arrays, path)
    with pytest.raises(ConfigError, match=message) as raised:
        read_labels(path, ("clean_label", "worse_label"), num_classes=10)
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)
    assert set(read_labels(path, ("clean_label",), num_classes=10)) == {"clean_label"}


@pytest.mark.slow
def test_a_refused_human_noise_run_into_a_new_results_folder_leaves_no_folder(tmp_path, monkeypatch, real_cifar10_root):
    """No label file and no network: the one-line refusal, and neither the results folder the command made
    (Hydra makes the run directory before the job) nor the folder made for the label file is left behind."""
    import torchvision.datasets.utils as tv_utils

    from optbench.training.train_command import preflight, run_job

    def offline(url, root, filename=None, md5=None):
        Path(root).mkdir(parents=True, exist_ok=True)  # as torchvision does before it fetches
        raise URLError("no network")

    monkeypatch.setattr(tv_utils, "download_url", offline)
    data_dir = Path(os.environ["OPTBENCH_TEST_DATA_DIR"])  # the decoded images are cached there
    had_label_folder = (data_dir / "cifar-n").exists()
    run_dir = tmp_path / "new" / "results" / "run"
    overrides = [
        "dataset=imagefolder",
        f"dataset.root={real_cifar10_root}",
        "noise=human",
        "noise.label_set=worst",
        f"paths.results_dir={tmp_path / 'new' / 'results'}",
        f"paths.data_dir={data_dir}",
        "dataset.train_subset=1000",
        "model.width=8",
        "device=cpu",
    ]
    preflight([*overrides, f"hydra.run.dir={run_dir}"], REPO / "conf")
    run_dir.mkdir(parents=True)  # what Hydra does before calling the job
    cfg = compose_config(overrides)
    monkeypatch.setattr(human_labels, "md5_of", lambda path: "not the official one")  # any cached copy is refetched
    assert run_job(cfg, run_dir) == 2
    assert not (tmp_path / "new").exists() and (data_dir / "cifar-n").exists() == had_label_folder
