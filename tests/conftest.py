"""Shared fixtures: composed configs shrunk for a 2-core CPU, and the real CIFAR-10 JPEG copies.

Tests compose the real conf/ tree (so they check what users run) and shrink it: synthetic or
subset data, ResNet-18 at width 8, one epoch, CPU, a temporary results folder.
"""

import os
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir

from optbench.config.hydra_glue import register_resolvers

REPO = Path(__file__).resolve().parents[1]
CONF_DIR = REPO / "conf"
CIFAR10_JPEG = REPO.parent / "shared" / "data" / "cifar10-jpeg"
# Decoded real images are cached here across test sessions (git-ignored); CI decodes them once.
os.environ.setdefault("OPTBENCH_TEST_DATA_DIR", str(REPO / ".cache" / "test-data"))

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


@pytest.fixture
def real_cifar10_root() -> Path:
    if not CIFAR10_JPEG.is_dir():
        pytest.skip(f"real CIFAR-10 JPEG copies not found at {CIFAR10_JPEG}")
    return CIFAR10_JPEG


@pytest.fixture
def one_thread():
    """Tiny tensors gain nothing from threads, and OpenMP spinning is very slow when the CPUs are shared."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
