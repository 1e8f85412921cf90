"""Shared fixtures: composed configs shrunk for a 2-core CPU, and the real CIFAR-10 JPEG copies.

Tests compose the real conf/ tree (so they check what users run) and shrink it: synthetic or
subset data, ResNet-18 at width 8, one epoch, CPU, a temporary results folder.
"""

import fcntl
import gc
import os
import shutil
from pathlib import Path

# One intra-op thread per test process, and for the training processes tests start (they inherit it): the
# suite runs one pytest worker per core (-n auto), the tensors are tiny, and OpenMP threads spinning on cores
# the other worker holds made the slowest tests several times slower (docs/testing.md). Set before torch loads.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
import torch
from hydra import compose, initialize_config_dir

from optbench.config.hydra_glue import register_resolvers

REPO = Path(__file__).resolve().parents[1]
CONF_DIR = REPO / "conf"
CIFAR10_JPEG = REPO.parent / "shared" / "data" / "cifar10-jpeg"
# Decoded real images are cached here across test sessions (git-ignored); CI decodes them once.
os.environ.setdefault("OPTBENCH_TEST_DATA_DIR", str(REPO / ".cache" / "test-data"))
# The rates a study's estimate times (a launch estimates too) go to the checkout's cache, not the user's home.
os.environ.setdefault("OPTBENCH_CACHE_DIR", str(REPO / ".cache" / "test-cache"))

TINY = [
    "dataset=synthetic",
    "dataset.train_size=600",
    "dataset.test_size=200",
    "dataset.val_size=100",
    "model.width=8",
    "epochs=1",
    "batch_size=50",
    "device=cpu",
    "train.progress_bar=false",
]

register_resolvers()


def pytest_collection_finish(session):
    """Once every test module is imported (torch, Hydra, pandas, ... : about half a million objects that live as
    long as the worker), move them out of the garbage collector's sight. Each run trained in a worker ends with
    a full collection (device.policy.release_device_memory), and the collector's own full passes come every few
    tests: each walked all of them, about 0.25 s, hundreds of times a suite. What the tests create stays
    collected as before."""
    gc.freeze()


def compose_config(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


@pytest.fixture
def tiny_config(tmp_path):
    """compose(extra overrides) -> a tiny synthetic run config writing under tmp_path."""

    def make(*extra: str):
        return compose_config(
            [*TINY, f"paths.results_dir={tmp_path / 'results'}", f"paths.data_dir={tmp_path / 'data'}", *extra]
        )

    return make


@pytest.fixture(scope="session")
def decoded_real_cifar10() -> Path:
    """The test data folder (OPTBENCH_TEST_DATA_DIR) holding the real images decoded, done by one worker at a time:
    decoding 60,000 JPEGs is the slowest step of a fresh clone's suite, and two workers used to do it at once."""
    if not CIFAR10_JPEG.is_dir():
        pytest.skip(f"real CIFAR-10 JPEG copies not found at {CIFAR10_JPEG}")
    from optbench.data.splits import load_splits

    data_dir = Path(os.environ["OPTBENCH_TEST_DATA_DIR"])
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / "decoding.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits, then reads the cache this one wrote
        load_splits(name="imagefolder", data_dir=str(data_dir), root=str(CIFAR10_JPEG))
    return data_dir


@pytest.fixture
def real_cifar10_root(decoded_real_cifar10) -> Path:
    return CIFAR10_JPEG


@pytest.fixture(scope="session")
def built_once(tmp_path_factory):
    """built_once(name, build) -> a folder `build(folder)` filled once per test run, for every xdist worker.

    Expensive inputs several tests start from (a trained run, a run's printed lines) are made once: the first
    worker to ask builds the folder while holding a file lock, the others wait and reuse it. A failed build
    leaves nothing behind, so the next test to ask builds it again and sees the same failure. Tests must treat
    the folder as read-only: take a copy (`copy_of`) of what they change, so no test sees another's changes."""
    # Every worker's basetemp is a child of the run's one; without xdist the basetemp is the run's own.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.getbasetemp()
    shared = root / "built-once"
    shared.mkdir(exist_ok=True)

    def build_once(name: str, build) -> Path:
        folder, done = shared / name, shared / f"{name}.done"
        with open(shared / f"{name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the build raises
            if not done.exists():
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                try:
                    build(folder)
                except BaseException:
                    shutil.rmtree(folder, ignore_errors=True)
                    raise
                done.touch()
        return folder

    return build_once


def copy_of(folder: Path, destination: Path) -> Path:
    """A private copy of a built_once folder (or any part of it) that a test may change."""
    shutil.copytree(folder, destination, symlinks=True)
    return destination


@pytest.fixture
def one_thread():
    """Tiny tensors gain nothing from threads, and OpenMP spinning is very slow when the CPUs are shared."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
