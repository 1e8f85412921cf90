"""Synthetic label-noise models: a draw over one split's labels (test labels are never touched).

The run applies a draw to the training split and, under the default noisy-validation protocol
(`noise.validation=noisy`), an independent one to the validation split (training/assemble.py).

`apply_label_noise(clean_labels, kind, rate, classes, seed, dataset)` returns `NoisyLabels`: the
labels training sees, a mask of the flipped samples and the realised rate.

Conventions (also in docs/configuration.md, "Label noise conventions"):
- symmetric: exactly round(rate * N) training samples, chosen uniformly at random, get a label drawn
  uniformly from the *other* C - 1 classes (so every flipped label is really wrong).
- asymmetric: within each source class of the mapping, exactly round(rate * n_class) samples flip to
  the mapped class. CIFAR-10 (Patrini et al. 2017): truck->automobile, bird->airplane,
  deer->horse, cat<->dog. CIFAR-100: each class -> the next class of its real superclass (coarse
  label), cyclically, classes ordered by fine index. Flips are decided on the clean labels, so no
  sample is flipped twice (a cat that became a dog is not turned back into a cat).
The mapping is found by class names, so an ImageFolder copy of CIFAR-10 gets the CIFAR-10 mapping.
The draw is deterministic in (seed, dataset, kind, rate).
"""

import zlib
from dataclasses import dataclass

import numpy as np
import torch

from optbench.errors import ConfigError
from optbench.registry.datasets import CIFAR10_ASYMMETRIC, CIFAR100_SUPERCLASSES, DIGITS_ASYMMETRIC

# The mappings' class facts live with each dataset's descriptor (optbench/registry/datasets.py); re-exported here.
__all__ = ["CIFAR100_SUPERCLASSES", "CIFAR10_ASYMMETRIC", "NoisyLabels", "apply_label_noise", "asymmetric_mapping"]


@dataclass(frozen=True)
class NoisyLabels:
    labels: torch.Tensor  # int64, what training sees
    is_noisy: torch.Tensor  # bool, True where labels differ from the clean ones
    realised_rate: float  # fraction of all training samples whose label was changed

    @property
    def num_noisy(self) -> int:
        return int(self.is_noisy.sum())


def asymmetric_mapping(classes: tuple[str, ...] | list[str]) -> dict[int, int] | None:
    """Source class index -> target class index, or None when no mapping fits these classes."""
    index_of = {name: index for index, name in enumerate(classes)}
    for flat in (CIFAR10_ASYMMETRIC, DIGITS_ASYMMETRIC):  # one source class -> one target class, by names
        if set(flat) | set(flat.values()) <= set(index_of) and len(classes) == 10:
            return {index_of[source]: index_of[target] for source, target in flat.items()}
    fine_names = [name for _, members in CIFAR100_SUPERCLASSES for name in members]
    if sorted(classes) == sorted(fine_names):
        mapping = {}
        for _, members in CIFAR100_SUPERCLASSES:
            ordered = sorted(members, key=index_of.__getitem__)
            for position, name in enumerate(ordered):
                mapping[index_of[name]] = index_of[ordered[(position + 1) % len(ordered)]]
        return mapping
    return None


def apply_label_noise(
    clean_labels: torch.Tensor, kind: str, rate: float, classes, seed: int, dataset: str
) -> NoisyLabels:
    labels = clean_labels.numpy().copy()
    if kind != "none" and rate > 0:
        # float(rate): numpy and Python floats of the same value must give the same draw
        rng = np.random.default_rng([seed, zlib.crc32(f"{dataset}|{kind}|{float(rate)!r}".encode())])
        flip = _symmetric_flips if kind == "symmetric" else _asymmetric_flips
        flip(labels, rate, classes, rng, dataset)
    noisy = torch.from_numpy(labels)
    is_noisy = noisy != clean_labels
    return NoisyLabels(noisy, is_noisy, int(is_noisy.sum()) / len(labels) if len(labels) else 0.0)


def _symmetric_flips(labels: np.ndarray, rate: float, classes, rng: np.random.Generator, dataset: str) -> None:
    num_classes = len(classes)
    chosen = rng.choice(len(labels), size=round(rate * len(labels)), replace=False)
    # Adding 1..C-1 modulo C picks each of the other classes with equal probability.
    labels[chosen] = (labels[chosen] + rng.integers(1, num_classes, size=len(chosen))) % num_classes


def _asymmetric_flips(labels: np.ndarray, rate: float, classes, rng: np.random.Generator, dataset: str) -> None:
    mapping = asymmetric_mapping(classes)
    if mapping is None:
        raise ConfigError(
            f"asymmetric noise has no class mapping for dataset '{dataset}' (only CIFAR-10's, "
            f"CIFAR-100's and the digits' class sets have one): use noise=symmetric"
        )
    clean = labels.copy()  # decide every flip on the clean labels: no double flips
    for source, target in sorted(mapping.items()):
        members = np.flatnonzero(clean == source)
        chosen = rng.choice(members, size=round(rate * len(members)), replace=False)
        labels[chosen] = target
