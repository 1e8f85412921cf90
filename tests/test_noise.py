"""Label noise: exact flip counts, determinism, and the CIFAR-10 / CIFAR-100 asymmetric mappings."""

from collections import Counter

import pytest
import torch

from optbench.data.noise import CIFAR100_SUPERCLASSES, apply_label_noise, asymmetric_mapping
from optbench.errors import ConfigError

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
# CIFAR-100's fine labels are the class names in alphabetical order.
CIFAR100_CLASSES = tuple(sorted(name for _, members in CIFAR100_SUPERCLASSES for name in members))
# The dataset's published coarse label of every fine label, in fine-index order (independent reference).
CIFAR100_COARSE = [
    4,
    1,
    14,
    8,
    0,
    6,
    7,
    7,
    18,
    3,
    3,
    14,
    9,
    18,
    7,
    11,
    3,
    9,
    7,
    11,
    6,
    11,
    5,
    10,
    7,
    6,
    13,
    15,
    3,
    15,
    0,
    11,
    1,
    10,
    12,
    14,
    16,
    9,
    11,
    5,
    5,
    19,
    8,
    8,
    15,
    13,
    14,
    17,
    18,
    10,
    16,
    4,
    17,
    4,
    2,
    0,
    17,
    4,
    18,
    17,
    10,
    3,
    2,
    12,
    12,
    16,
    12,
    1,
    9,
    19,
    2,
    10,
    0,
    1,
    16,
    12,
    9,
    13,
    15,
    13,
    16,
    19,
    2,
    4,
    6,
    19,
    5,
    5,
    8,
    19,
    18,
    1,
    2,
    15,
    6,
    0,
    17,
    8,
    14,
    13,
]
SYNTHETIC_CLASSES = tuple(f"class{index}" for index in range(10))
C10 = {name: index for index, name in enumerate(CIFAR10_CLASSES)}


def balanced_labels(count: int, num_classes: int = 10) -> torch.Tensor:
    return torch.arange(count, dtype=torch.int64) % num_classes


def unequal_cifar10_labels() -> torch.Tensor:
    """Class c has 100 + 10c samples, so per-class counts differ from a global rate * N."""
    labels = torch.cat([torch.full((100 + 10 * c,), c, dtype=torch.int64) for c in range(10)])
    return labels[torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))]


# --- symmetric -------------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [0.0, 0.2, 0.4, 0.8])
def test_symmetric_flips_exactly_round_rate_n_labels_to_a_wrong_class(rate):
    clean = balanced_labels(10_000)
    noisy = apply_label_noise(clean, "symmetric", rate, SYNTHETIC_CLASSES, seed=0, dataset="synthetic")
    changed = noisy.labels != clean
    assert noisy.labels.dtype == torch.int64 and noisy.is_noisy.dtype == torch.bool
    assert int(changed.sum()) == round(rate * 10_000) == noisy.num_noisy
    assert torch.equal(noisy.is_noisy, changed)
    assert noisy.realised_rate == noisy.num_noisy / 10_000  # exact: written to summary.json as is
    assert int(noisy.labels.min()) >= 0 and int(noisy.labels.max()) <= 9


@pytest.mark.parametrize("rate", [0.4, 0.8])
def test_symmetric_new_labels_are_roughly_uniform_over_the_other_classes(rate):
    clean = balanced_labels(10_000)
    noisy = apply_label_noise(clean, "symmetric", rate, SYNTHETIC_CLASSES, seed=1, dataset="synthetic")
    mask = noisy.is_noisy
    flipped = noisy.num_noisy
    # Offset new - clean (mod 10) must be uniform over 1..9; 0 would mean "not really flipped".
    offsets = Counter(((noisy.labels[mask] - clean[mask]) % 10).tolist())
    assert set(offsets) == set(range(1, 10))
    for count in offsets.values():
        assert abs(count - flipped / 9) < 0.25 * flipped / 9
    # Every class receives about a tenth of the flips, and loses about rate * its size.
    for count in Counter(noisy.labels[mask].tolist()).values():
        assert abs(count - flipped / 10) < 0.25 * flipped / 10
    for count in Counter(clean[mask].tolist()).values():
        assert abs(count - rate * 1000) < 0.15 * rate * 1000


def test_noise_draw_is_deterministic_and_depends_on_seed_and_dataset():
    clean = balanced_labels(2000)

    def draw(seed=0, dataset="synthetic"):
        return apply_label_noise(clean, "symmetric", 0.4, SYNTHETIC_CLASSES, seed, dataset).labels

    assert torch.equal(draw(), draw())
    assert not torch.equal(draw(), draw(seed=1))
    assert not torch.equal(draw(), draw(dataset="other"))


def test_noise_none_changes_nothing():
    clean = balanced_labels(100)
    noisy = apply_label_noise(clean, "none", 0.0, SYNTHETIC_CLASSES, seed=0, dataset="synthetic")
    assert torch.equal(noisy.labels, clean) and noisy.num_noisy == 0 and noisy.realised_rate == 0.0


@pytest.mark.parametrize("kind, classes", [("symmetric", SYNTHETIC_CLASSES), ("asymmetric", CIFAR10_CLASSES)])
def test_clean_labels_passed_in_are_not_modified(kind, classes):
    clean = balanced_labels(1000)
    before = clean.clone()
    noisy = apply_label_noise(clean, kind, 0.4, classes, seed=0, dataset="cifar10")
    assert noisy.num_noisy > 0
    assert torch.equal(clean, before)


# --- asymmetric CIFAR-10 ---------------------------------------------------------------------------


def test_cifar10_mapping_is_the_patrini_one():
    expected = {
        C10["truck"]: C10["automobile"],
        C10["bird"]: C10["airplane"],
        C10["deer"]: C10["horse"],
        C10["cat"]: C10["dog"],
        C10["dog"]: C10["cat"],
    }
    assert asymmetric_mapping(CIFAR10_CLASSES) == expected


def test_cifar10_mapping_follows_class_names_not_positions():
    shuffled = tuple(reversed(CIFAR10_CLASSES))
    index = {name: i for i, name in enumerate(shuffled)}
    mapping = asymmetric_mapping(shuffled)
    assert mapping[index["truck"]] == index["automobile"]
    assert mapping[index["cat"]] == index["dog"] and mapping[index["dog"]] == index["cat"]
    assert len(mapping) == 5


@pytest.mark.parametrize("rate", [0.2, 0.4])
def test_cifar10_asymmetric_flips_round_rate_of_each_source_class(rate):
    clean = unequal_cifar10_labels()
    noisy = apply_label_noise(clean, "asymmetric", rate, CIFAR10_CLASSES, seed=0, dataset="cifar10")
    mapping = asymmetric_mapping(CIFAR10_CLASSES)
    for source in range(10):
        members = clean == source
        flipped = members & noisy.is_noisy
        if source in mapping:
            assert int(flipped.sum()) == round(rate * int(members.sum()))
            assert torch.all(noisy.labels[flipped] == mapping[source])
        else:  # airplane, automobile, frog, horse, ship never change
            assert int(flipped.sum()) == 0
    assert torch.equal(noisy.is_noisy, noisy.labels != clean)


def test_cifar10_cat_dog_swap_decided_on_clean_labels_without_double_flips():
    clean = unequal_cifar10_labels()
    rate = 0.4
    noisy = apply_label_noise(clean, "asymmetric", rate, CIFAR10_CLASSES, seed=3, dataset="cifar10")
    cat, dog = C10["cat"], C10["dog"]
    n_cat, n_dog = int((clean == cat).sum()), int((clean == dog).sum())
    flipped_cats = int(((clean == cat) & (noisy.labels == dog)).sum())
    flipped_dogs = int(((clean == dog) & (noisy.labels == cat)).sum())
    # A cat turned dog and then back to cat would be invisible here and lower the count.
    assert flipped_cats == round(rate * n_cat) and flipped_dogs == round(rate * n_dog)
    assert set(noisy.labels[clean == cat].tolist()) == {cat, dog}
    assert set(noisy.labels[clean == dog].tolist()) == {cat, dog}
    assert int((noisy.labels == dog).sum()) == n_dog - flipped_dogs + flipped_cats


# --- asymmetric CIFAR-100 --------------------------------------------------------------------------


def test_cifar100_superclass_table_has_20_superclasses_of_5_distinct_names():
    assert len(CIFAR100_SUPERCLASSES) == 20
    assert all(len(set(members)) == 5 for _, members in CIFAR100_SUPERCLASSES)
    assert len(CIFAR100_CLASSES) == len(set(CIFAR100_CLASSES)) == 100


def test_cifar100_superclass_table_matches_published_coarse_labels():
    coarse_of = {name: coarse for coarse, (_, members) in enumerate(CIFAR100_SUPERCLASSES) for name in members}
    disagreements = [
        (fine, name, coarse_of[name], CIFAR100_COARSE[fine])
        for fine, name in enumerate(CIFAR100_CLASSES)
        if coarse_of[name] != CIFAR100_COARSE[fine]
    ]
    assert disagreements == []


def test_cifar100_mapping_is_a_5_cycle_to_the_next_fine_index_within_each_superclass():
    mapping = asymmetric_mapping(CIFAR100_CLASSES)
    assert sorted(mapping) == list(range(100)) and sorted(mapping.values()) == list(range(100))
    for source, target in mapping.items():
        assert target != source and CIFAR100_COARSE[target] == CIFAR100_COARSE[source]
    # Built independently from the reference coarse labels: fine indices of a superclass in order, cyclic.
    for coarse in range(20):
        fines = [fine for fine in range(100) if CIFAR100_COARSE[fine] == coarse]
        assert [mapping[fine] for fine in fines] == fines[1:] + fines[:1]
        cycle, fine = [], fines[0]
        for _ in range(5):
            cycle.append(fine)
            fine = mapping[fine]
        assert fine == fines[0] and sorted(cycle) == fines


def test_cifar100_mapping_is_not_the_consecutive_index_block_mapping():
    block = {i: 5 * (i // 5) + (i % 5 + 1) % 5 for i in range(100)}
    assert asymmetric_mapping(CIFAR100_CLASSES) != block


def test_cifar100_asymmetric_noise_stays_within_superclass():
    clean = balanced_labels(5000, 100)
    noisy = apply_label_noise(clean, "asymmetric", 0.4, CIFAR100_CLASSES, seed=0, dataset="cifar100")
    assert noisy.num_noisy == 100 * round(0.4 * 50)
    for source, target in zip(clean[noisy.is_noisy].tolist(), noisy.labels[noisy.is_noisy].tolist()):
        assert CIFAR100_COARSE[source] == CIFAR100_COARSE[target]


# --- no mapping ------------------------------------------------------------------------------------


def test_asymmetric_mapping_is_none_for_other_class_sets():
    assert asymmetric_mapping(SYNTHETIC_CLASSES) is None
    assert asymmetric_mapping(CIFAR10_CLASSES[:9]) is None  # CIFAR-10 names but not the 10-class set


def test_asymmetric_noise_without_mapping_raises_config_error():
    with pytest.raises(ConfigError):
        apply_label_noise(balanced_labels(100), "asymmetric", 0.2, SYNTHETIC_CLASSES, seed=0, dataset="synthetic")


def test_numpy_and_python_rates_give_the_same_draw():
    import numpy as np

    clean = torch.arange(1000) % 10
    classes = [f"class{index}" for index in range(10)]
    as_python = apply_label_noise(clean, "symmetric", 0.2, classes, seed=0, dataset="synthetic")
    as_numpy = apply_label_noise(clean, "symmetric", np.float64(0.2), classes, seed=0, dataset="synthetic")
    assert torch.equal(as_python.labels, as_numpy.labels)
