"""Dataset loading and splitting: synthetic, ImageFolder (with its decode cache) and CIFAR files."""

import os
import pickle
import shutil
from collections import Counter
from pathlib import Path
from urllib.error import URLError

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

import optbench.data.sources
from optbench.data.splits import NORMALISATION, load_splits
from optbench.errors import ConfigError

CIFAR10_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
SHARED_CIFAR10_JPEG = Path(__file__).resolve().parents[2] / "shared/data/cifar10-jpeg"

# src decodes with torchvision.io, deprecated since torchvision 0.29 (one warning per image).


def synthetic(tmp_path, **options):
    settings = dict(num_classes=4, train_size=200, test_size=40, val_size=40, split_seed=0)
    settings.update(options)
    return load_splits(name="synthetic", data_dir=tmp_path, **settings)


def image_keys(images: torch.Tensor) -> list[bytes]:
    return [image.numpy().tobytes() for image in images]


def per_class(labels: torch.Tensor) -> dict[int, int]:
    return dict(Counter(labels.tolist()))


# --- synthetic and splitting -----------------------------------------------------------------------


def test_synthetic_shapes_dtypes_and_sizes(tmp_path):
    splits = synthetic(tmp_path)
    for image_set, size in ((splits.train, 160), (splits.val, 40), (splits.test, 40)):
        assert image_set.images.shape == (size, 3, 32, 32) and image_set.images.dtype == torch.uint8
        assert image_set.labels.shape == (size,) and image_set.labels.dtype == torch.int64
    assert splits.classes == ("class0", "class1", "class2", "class3") and splits.num_classes == 4


def test_validation_split_is_exact_and_stratified(tmp_path):
    splits = synthetic(tmp_path, val_size=40)
    assert per_class(splits.val.labels) == {c: 10 for c in range(4)}
    assert per_class(splits.train.labels) == {c: 40 for c in range(4)}


def test_train_subset_is_exact_and_stratified(tmp_path):
    splits = synthetic(tmp_path, val_size=40, train_subset=80)
    assert per_class(splits.train.labels) == {c: 20 for c in range(4)}
    assert len(splits.val) == 40  # the subset is taken after the validation split


def test_train_and_val_are_disjoint_and_together_the_full_training_set(tmp_path):
    full = synthetic(tmp_path, val_size=0).train  # every synthetic image is distinct noise
    splits = synthetic(tmp_path, val_size=40)
    train, val = image_keys(splits.train.images), image_keys(splits.val.images)
    assert not set(train) & set(val)
    assert sorted(train + val) == sorted(image_keys(full.images))
    label_of = dict(zip(image_keys(full.images), full.labels.tolist()))
    assert [label_of[key] for key in val] == splits.val.labels.tolist()


def test_same_split_seed_gives_identical_split_regardless_of_global_rng(tmp_path):
    torch.manual_seed(1), np.random.seed(1)
    first = synthetic(tmp_path, split_seed=7, train_subset=80)
    torch.manual_seed(2), np.random.seed(2)
    second = synthetic(tmp_path, split_seed=7, train_subset=80)
    assert torch.equal(first.val.images, second.val.images) and torch.equal(first.train.images, second.train.images)
    other = synthetic(tmp_path, split_seed=8, train_subset=80)
    assert not torch.equal(first.val.images, other.val.images)


def test_mean_and_std_come_from_the_training_split_for_non_cifar_data(tmp_path):
    splits = synthetic(tmp_path)
    pixels = splits.train.images.double().div(255).transpose(0, 1).reshape(3, -1)
    assert splits.mean == pytest.approx(pixels.mean(1).tolist(), abs=1e-9)
    assert splits.std == pytest.approx(pixels.std(1).tolist(), abs=1e-9)


def test_explicit_mean_and_std_are_kept(tmp_path):
    splits = synthetic(tmp_path, mean=(0.1, 0.2, 0.3), std=(0.4, 0.5, 0.6))
    assert splits.mean == (0.1, 0.2, 0.3) and splits.std == (0.4, 0.5, 0.6)


@pytest.mark.parametrize(
    "options", [dict(val_size=200), dict(val_size=197), dict(val_size=3), dict(val_size=40, train_subset=2)]
)
def test_unstratifiable_sizes_raise_config_error(tmp_path, options):
    with pytest.raises(ConfigError):
        synthetic(tmp_path, **options)


# --- imagefolder -----------------------------------------------------------------------------------


def write_image(path: Path, image: torch.Tensor) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image.permute(1, 2, 0).numpy()).save(path)  # PNG: lossless


@pytest.fixture
def image_root(tmp_path):
    """3 classes (created in non-alphabetical order) x 6 train + 3 test PNGs; zebra/test/2 is 40x40."""
    generator = torch.Generator().manual_seed(0)
    root = tmp_path / "images"
    images = {}
    for name in ("zebra", "apple", "mango"):
        for part, count in (("train", 6), ("test", 3)):
            for index in range(count):
                image = torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8, generator=generator)
                images[part, name, index] = image
                write_image(root / part / name / f"{index}.png", image)
    big = torch.empty(3, 40, 40, dtype=torch.uint8)
    big[:, :, :20], big[:, :, 20:] = 40, 200  # left half dark, right half bright
    images["test", "zebra", 2] = big
    write_image(root / "test" / "zebra" / "2.png", big)
    return root, images


def test_imagefolder_labels_follow_sorted_class_folders_and_pixels_round_trip(tmp_path, image_root):
    root, images = image_root
    splits = load_splits(name="imagefolder", data_dir=tmp_path / "data", root=str(root), val_size=0)
    assert splits.classes == ("apple", "mango", "zebra")
    # With no validation split the training split keeps ImageFolder's order: class, then file name.
    order = [(name, index) for name in splits.classes for index in range(6)]
    assert splits.train.labels.tolist() == [splits.classes.index(name) for name, _ in order]
    for position, (name, index) in enumerate(order):
        assert torch.equal(splits.train.images[position], images["train", name, index])
    assert splits.test.labels.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert torch.equal(splits.test.images[0], images["test", "apple", 0])


def test_imagefolder_resizes_other_sizes_to_image_size(tmp_path, image_root):
    root, _ = image_root
    splits = load_splits(name="imagefolder", data_dir=tmp_path / "data", root=str(root), val_size=0)
    assert splits.test.images.shape == (9, 3, 32, 32)
    resized = splits.test.images[8].int()  # the 40x40 half-dark, half-bright image, last in order
    # Scaled, not cropped: the edge moves from column 20 of 40 to column 16 of 32.
    assert (resized[:, :, :15] - 40).abs().max() <= 1 and (resized[:, :, 17:] - 200).abs().max() <= 1
    assert ((resized[:, :, 15:17] > 40) & (resized[:, :, 15:17] < 200)).all()  # the antialiased edge


def test_imagefolder_validation_split_is_stratified(tmp_path, image_root):
    root, _ = image_root
    splits = load_splits(name="imagefolder", data_dir=tmp_path / "data", root=str(root), val_size=6)
    assert per_class(splits.val.labels) == {0: 2, 1: 2, 2: 2} and len(splits.train) == 12


def test_imagefolder_decodes_once_then_reads_the_cache(tmp_path, image_root, monkeypatch):
    root, _ = image_root
    data_dir = tmp_path / "data"
    first = load_splits(name="imagefolder", data_dir=data_dir, root=str(root), val_size=3)
    assert len(list((data_dir / "cache").glob("imagefolder-*.pt"))) == 1

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded again although the cache is valid")

    monkeypatch.setattr(optbench.data.sources, "_decode_all", no_decoding)
    second = load_splits(name="imagefolder", data_dir=data_dir, root=str(root), val_size=3)
    assert torch.equal(first.train.images, second.train.images) and torch.equal(first.test.labels, second.test.labels)


def test_imagefolder_cache_is_invalidated_when_a_file_changes(tmp_path, image_root):
    root, _ = image_root
    data_dir = tmp_path / "data"
    load_splits(name="imagefolder", data_dir=data_dir, root=str(root), val_size=0)
    changed = torch.zeros(3, 32, 32, dtype=torch.uint8)
    path = root / "train" / "apple" / "0.png"
    write_image(path, changed)
    os.utime(path, ns=(1, 1))  # a different mtime even on coarse-grained filesystems
    splits = load_splits(name="imagefolder", data_dir=data_dir, root=str(root), val_size=0)
    assert torch.equal(splits.train.images[0], changed)
    assert len(list((data_dir / "cache").glob("imagefolder-*.pt"))) == 2


def test_imagefolder_fingerprint_follows_the_bytes_not_the_mtimes(tmp_path, image_root):
    """A copy with fresh mtimes (another disk, a re-staged shared folder) is the same data: runs made
    on the original must be found again. A changed image is other data, even with its old mtime."""
    from optbench.data.sources import data_fingerprint

    root, _ = image_root
    original = data_fingerprint("imagefolder", root=str(root), data_dir=tmp_path / "data")
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, copy_function=shutil.copy)  # shutil.copy does not keep mtimes
    for path in copy.rglob("*.png"):
        os.utime(path, ns=(10**18, 10**18))
    assert data_fingerprint("imagefolder", root=str(copy), data_dir=tmp_path / "data") == original
    assert data_fingerprint("imagefolder", root=str(copy)) == original  # computed afresh, no memo

    path = copy / "train" / "apple" / "0.png"
    kept = os.stat(path)
    write_image(path, torch.full((3, 32, 32), 7, dtype=torch.uint8))
    os.utime(path, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    assert data_fingerprint("imagefolder", root=str(copy)) != original


def test_imagefolder_fingerprint_is_remembered_under_the_files_stats(tmp_path, image_root, monkeypatch):
    from optbench.data.sources import data_fingerprint

    root, _ = image_root
    first = data_fingerprint("imagefolder", root=str(root), data_dir=tmp_path / "data")

    def no_reading(self):
        raise AssertionError("read the files again although none changed")

    monkeypatch.setattr(Path, "read_bytes", no_reading)
    assert data_fingerprint("imagefolder", root=str(root), data_dir=tmp_path / "data") == first


def test_imagefolder_without_root_raises_config_error(tmp_path):
    with pytest.raises(ConfigError):
        load_splits(name="imagefolder", data_dir=tmp_path, root=None)


@pytest.mark.parametrize("present", ["train", "test"])
def test_imagefolder_root_missing_train_or_test_raises_config_error(tmp_path, present):
    write_image(tmp_path / "root" / present / "a" / "0.png", torch.zeros(3, 32, 32, dtype=torch.uint8))
    with pytest.raises(ConfigError, match="train/" if present == "test" else "test/"):
        load_splits(name="imagefolder", data_dir=tmp_path, root=str(tmp_path / "root"))


def test_a_class_with_a_single_training_image_raises_config_error(tmp_path):
    for part, counts in (("train", {"a": 6, "b": 1}), ("test", {"a": 1, "b": 1})):
        for name, count in counts.items():
            for index in range(count):
                write_image(tmp_path / "root" / part / name / f"{index}.png", torch.zeros(3, 32, 32, dtype=torch.uint8))
    with pytest.raises(ConfigError, match="only 1 training image"):
        load_splits(name="imagefolder", data_dir=tmp_path / "data", root=str(tmp_path / "root"), val_size=2)


@pytest.fixture(scope="session")
def real_data_dir(decoded_real_cifar10):
    return decoded_real_cifar10


@pytest.mark.slow
def test_real_cifar10_jpeg_folder(real_data_dir):
    """The shared ImageFolder copy of CIFAR-10: 45k/5k/10k, balanced validation, CIFAR-like statistics."""
    if not SHARED_CIFAR10_JPEG.is_dir():
        pytest.skip(f"{SHARED_CIFAR10_JPEG} is absent")
    splits = load_splits(name="imagefolder", data_dir=real_data_dir, root=str(SHARED_CIFAR10_JPEG), val_size=5000)
    assert (len(splits.train), len(splits.val), len(splits.test)) == (45_000, 5_000, 10_000)
    assert splits.classes == tuple(CIFAR10_CLASSES)
    assert per_class(splits.val.labels) == {c: 500 for c in range(10)}
    assert per_class(splits.test.labels) == {c: 1000 for c in range(10)}
    # Not the hard-coded CIFAR-10 constants (the name is imagefolder), but close to them.
    assert splits.mean != NORMALISATION["cifar10"][0]
    assert splits.mean == pytest.approx(NORMALISATION["cifar10"][0], abs=0.01)


# --- CIFAR via torchvision -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cifar10", "cifar100"])
def test_cifar_download_failure_raises_config_error_naming_the_data_dir_variable(tmp_path, monkeypatch, name):
    def offline(*args, **kwargs):
        raise URLError("no network")

    monkeypatch.setattr(torchvision.datasets.cifar, "download_and_extract_archive", offline)
    with pytest.raises(ConfigError, match="OPTBENCH_DATA_DIR.*offline on a folder of images: dataset=imagefolder"):
        load_splits(name=name, data_dir=tmp_path)


def test_cifar_missing_without_download_raises_config_error(tmp_path, monkeypatch):
    def must_not_download(*args, **kwargs):
        raise AssertionError("download=False must not download")

    monkeypatch.setattr(torchvision.datasets.cifar, "download_and_extract_archive", must_not_download)
    with pytest.raises(ConfigError, match="OPTBENCH_DATA_DIR"):
        load_splits(name="cifar10", data_dir=tmp_path, download=False)


@pytest.fixture
def fake_cifar10(tmp_path, monkeypatch):
    """A tiny cifar-10-batches-py folder in torchvision's pickle format (5 train batches of 4, a test batch of 6)."""
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    generator = np.random.default_rng(0)
    batches = {}
    for index, file_name in enumerate(
        ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch"]
    ):
        count = 6 if file_name == "test_batch" else 4
        data = generator.integers(0, 256, size=(count, 3072), dtype=np.uint8)  # rows: R plane, G plane, B plane
        labels = [(4 * index + k) % 10 for k in range(count)]
        batches[file_name] = (data, labels)
        with open(folder / file_name, "wb") as handle:
            pickle.dump({"data": data, "labels": labels}, handle)
    with open(folder / "batches.meta", "wb") as handle:
        pickle.dump({"label_names": CIFAR10_CLASSES}, handle)
    # The md5 sums of the fake files cannot match the real ones.
    monkeypatch.setattr(torchvision.datasets.CIFAR10, "_check_integrity", lambda self: True)
    monkeypatch.setattr(torchvision.datasets.cifar, "check_integrity", lambda *args, **kwargs: True)
    monkeypatch.setattr(
        torchvision.datasets.cifar,
        "download_and_extract_archive",
        lambda *args, **kwargs: pytest.fail("must not download when the files are present"),
    )
    return tmp_path, batches


def test_cifar_files_are_read_as_chw_images_with_their_labels(fake_cifar10):
    data_dir, batches = fake_cifar10
    splits = load_splits(name="cifar10", data_dir=data_dir, val_size=10)
    test_data, test_labels = batches["test_batch"]
    assert splits.test.images.shape == (6, 3, 32, 32) and splits.test.images.dtype == torch.uint8
    # Pixel (channel c, row y, column x) is byte c*1024 + y*32 + x of the row.
    c, y, x = 2, 5, 17
    assert splits.test.images[3, c, y, x] == int(test_data[3, c * 1024 + y * 32 + x])
    assert torch.equal(splits.test.images, torch.from_numpy(test_data.reshape(6, 3, 32, 32)))
    assert splits.test.labels.tolist() == test_labels
    # Train and val together are the five train batches, each image with its own label.
    expected = {}
    for file_name in ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"]:
        data, labels = batches[file_name]
        expected.update(zip(image_keys(torch.from_numpy(data.reshape(-1, 3, 32, 32))), labels))
    seen = dict(zip(image_keys(splits.train.images), splits.train.labels.tolist()))
    seen.update(zip(image_keys(splits.val.images), splits.val.labels.tolist()))
    assert seen == expected and len(splits.train) == 10 and len(splits.val) == 10
    assert splits.classes == tuple(CIFAR10_CLASSES)
    assert (splits.mean, splits.std) == NORMALISATION["cifar10"]


def test_the_folder_listing_is_torchvisions_imagefolder(tmp_path, image_root):
    """data/fingerprint.py lists folders without torch (the planner names data with it): the same samples
    and classes as torchvision's ImageFolder, nested folders and other file types included."""
    from torchvision.datasets import ImageFolder

    from optbench.data.fingerprint import list_image_folder

    root, _ = image_root
    write_image(root / "train" / "apple" / "nested" / "deeper.PNG", torch.zeros(3, 32, 32, dtype=torch.uint8))
    (root / "train" / "mango" / "notes.txt").write_text("not an image")
    classes, train, test = list_image_folder(root)
    for part, listed in (("train", train), ("test", test)):
        folder = ImageFolder(str(root / part))
        assert classes == folder.classes and listed == folder.samples


def test_cifar_fingerprints_use_torchvisions_checksums():
    from torchvision.datasets import CIFAR10, CIFAR100

    from optbench.data.fingerprint import CIFAR_MD5

    for name, dataset_class in (("cifar10", CIFAR10), ("cifar100", CIFAR100)):
        assert CIFAR_MD5[name] == tuple(md5 for _, md5 in dataset_class.train_list + dataset_class.test_list)


@pytest.mark.parametrize("link", ["loop", "twice"])
def test_a_symlinked_folder_is_followed_at_most_once(tmp_path, image_root, link):
    """`train/c -> .` made a third class of the other classes' images, repeated; two links to one folder
    listed its images twice. Both are one line naming the link; a link to a new folder is followed."""
    root, _ = image_root
    data_dir = tmp_path / "data"
    elsewhere = tmp_path / "more-mangoes"
    write_image(elsewhere / "9.png", torch.zeros(3, 32, 32, dtype=torch.uint8))
    (root / "train" / "mango" / "linked").symlink_to(elsewhere)  # followed once: fine
    assert len(load_splits(name="imagefolder", data_dir=data_dir, root=str(root), val_size=0).train) == 19
    if link == "loop":
        (root / "train" / "c").symlink_to(".")
    else:
        (root / "train" / "apple" / "again").symlink_to(elsewhere)
    with pytest.raises(ConfigError, match="already listed"):
        load_splits(name="imagefolder", data_dir=data_dir, root=str(root), val_size=0)


@pytest.mark.parametrize("damage", ["truncated", "bit flipped", "no checksum"])
def test_a_damaged_decode_cache_is_rebuilt_with_one_warning(tmp_path, image_root, damage, caplog):
    """A truncated cache was a traceback and a failed run (and every later run on the folder failed); a
    bit-flipped one trained on the altered pixels (torch.load does not check the zip's CRCs)."""
    root, images = image_root
    data_dir = tmp_path / "data"
    first = load_splits(name="imagefolder", data_dir=data_dir, root=str(root), val_size=0)
    [cache] = (data_dir / "cache").glob("imagefolder-*.pt")
    payload = cache.read_bytes()
    if damage == "truncated":
        cache.write_bytes(payload[: len(payload) // 2])
    elif damage == "bit flipped":
        pixels = images["train", "apple", 0].numpy().tobytes()[:32]
        at = payload.index(pixels) + 5
        cache.write_bytes(payload[:at] + bytes([payload[at] ^ 0x10]) + payload[at + 1 :])
    else:  # a cache written before caches carried their checksum
        cached = torch.load(cache, weights_only=True)
        torch.save({"train": cached["train"], "test": cached["test"]}, cache)
    with caplog.at_level("WARNING"):
        again = load_splits(name="imagefolder", data_dir=data_dir, root=str(root), val_size=0)
    assert torch.equal(again.train.images, first.train.images) and torch.equal(again.test.images, first.test.images)
    [warning] = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert "is damaged" in warning and "decoding the images again" in warning
    caplog.clear()
    load_splits(name="imagefolder", data_dir=data_dir, root=str(root), val_size=0)  # the rebuilt cache is good
    assert not [record for record in caplog.records if record.levelname == "WARNING"]
