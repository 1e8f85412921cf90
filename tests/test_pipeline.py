"""The two training pipelines: DevicePipeline (default) and DataLoaderPipeline (the classic path).

Both are pure functions of (seed, epoch), see every image once per epoch (less the dropped partial
batch) with its own label, and augment with the same distribution: crop offsets uniform on 0..8 in
both axes after 4-pixel zero padding, flip with probability 1/2 (chi-square tests at fixed seeds, so
they are deterministic). The DataLoader path reads the caller's tensor, never a copy, and gives the
same batches whatever its worker settings.
"""

import pytest
import torch
from scipy import stats

from optbench.data.pipelines import (
    DataLoaderPipeline,
    DevicePipeline,
    channel_tensor,
    classic_crop_flip,
    classic_normalise,
    crop_flip,
    normalise,
    num_train_batches,
    sample_crop_flip,
    train_batches,
)

pytestmark = pytest.mark.usefixtures("one_thread")
CPU = torch.device("cpu")
MEAN, STD = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
IDENTITY_MEAN, IDENTITY_STD = (0.0, 0.0, 0.0), (1 / 255,) * 3  # normalised values = the uint8 values
OFFSETS = 9  # 2 * padding + 1 crop positions per axis


def coordinate_images(count: int) -> torch.Tensor:
    """Channel 0 = row + 1, channel 1 = column + 1, channel 2 = image index % 256: zero only in padding."""
    rows = torch.arange(1, 33, dtype=torch.uint8).view(1, 32, 1).expand(count, 32, 32)
    index = (torch.arange(count) % 256).to(torch.uint8).view(count, 1, 1).expand(count, 32, 32)
    return torch.stack([rows, rows.transpose(1, 2), index], 1).contiguous()


def decode(batch: torch.Tensor) -> tuple[list[int], list[int], list[bool], list[int]]:
    """(row offsets, column offsets, flips, image indices) of a batch of identity-normalised coordinate images.

    Output pixel (i, j) shows original row offset + i - 4 (+1 stored); pixels 16 and 17 are never padding.
    """
    values = batch.round().long()
    flips = values[:, 1, 16, 17] < values[:, 1, 16, 16]
    rows = values[:, 0, 16, 16] - 13
    columns = values[:, 1, 16, 16] - 13 + flips.long()  # mirrored: column 16 reads window column 15
    return rows.tolist(), columns.tolist(), flips.tolist(), values[:, 2, 16, 16].tolist()


def device_pipeline(images, labels, batch_size, seed=0, mean=IDENTITY_MEAN, std=IDENTITY_STD):
    return DevicePipeline(images, labels, batch_size, seed, channel_tensor(mean, CPU), channel_tensor(std, CPU))


def loader_pipeline(images, labels, batch_size, seed=0, mean=IDENTITY_MEAN, std=IDENTITY_STD, **workers):
    return DataLoaderPipeline(images, labels, batch_size, seed, mean, std, CPU, **workers)


PIPELINES = {"device": device_pipeline, "dataloader": loader_pipeline}


def collect(batches) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(images.clone(), labels.clone()) for images, labels in batches]


def same_batches(first, second) -> bool:
    return len(first) == len(second) and all(
        torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(first, second)
    )


# --- the device pipeline is train_batches ----------------------------------------------------------


def test_device_pipeline_epoch_is_train_batches_and_len_counts_its_batches():
    images, labels = coordinate_images(70), torch.arange(70) % 10
    mean, std = channel_tensor(MEAN, CPU), channel_tensor(STD, CPU)
    pipeline = DevicePipeline(images, labels, 16, 7, mean, std)
    for epoch in (1, 2):
        assert same_batches(
            collect(pipeline.epoch(epoch)), collect(train_batches(images, labels, 16, 7, epoch, mean, std))
        )
    assert len(pipeline) == num_train_batches(70, 16) == 4
    # Plain per-channel floats work too.
    assert same_batches(collect(DevicePipeline(images, labels, 16, 7, MEAN, STD).epoch(1)), collect(pipeline.epoch(1)))


# --- both pipelines: epochs, coverage, labels ------------------------------------------------------


@pytest.mark.parametrize("kind", PIPELINES)
def test_each_epoch_sees_every_image_once_less_the_partial_batch_with_its_label(kind):
    count, batch_size = 50, 16
    images, labels = coordinate_images(count), (torch.arange(count) * 7) % 10
    pipeline = PIPELINES[kind](images, labels, batch_size)
    batches = collect(pipeline.epoch(1))
    assert len(pipeline) == len(batches) == 3
    assert all(
        batch.shape == (batch_size, 3, 32, 32)
        and batch.dtype == torch.float32
        and batch_labels.shape == (batch_size,)
        and batch_labels.dtype == torch.int64
        for batch, batch_labels in batches
    )
    seen = [index for batch, _ in batches for index in decode(batch)[3]]
    assert len(set(seen)) == 48  # a permutation: no image twice, two left out by the dropped batch
    for batch, batch_labels in batches:
        assert batch_labels.tolist() == labels[decode(batch)[3]].tolist()


@pytest.mark.parametrize("kind", PIPELINES)
def test_a_split_smaller_than_one_batch_gives_one_batch_of_all_of_it(kind):
    pipeline = PIPELINES[kind](coordinate_images(10), torch.arange(10), 16)
    batches = collect(pipeline.epoch(1))
    assert len(pipeline) == len(batches) == 1 and sorted(decode(batches[0][0])[3]) == list(range(10))


@pytest.mark.parametrize("kind", PIPELINES)
def test_batches_are_a_pure_function_of_seed_and_epoch(kind):
    images, labels = coordinate_images(40), torch.arange(40) % 10
    pipeline = PIPELINES[kind](images, labels, 8, seed=3, mean=MEAN, std=STD)
    epochs = {epoch: collect(pipeline.epoch(epoch)) for epoch in (1, 2, 3)}
    resumed = PIPELINES[kind](images, labels, 8, seed=3, mean=MEAN, std=STD)  # a fresh pipeline, started at epoch 3
    assert same_batches(collect(resumed.epoch(3)), epochs[3])
    assert same_batches(collect(pipeline.epoch(1)), epochs[1])
    assert not torch.equal(epochs[1][0][0], epochs[2][0][0])
    other_seed = PIPELINES[kind](images, labels, 8, seed=4, mean=MEAN, std=STD)
    assert not torch.equal(collect(other_seed.epoch(1))[0][0], epochs[1][0][0])


@pytest.mark.parametrize("kind", PIPELINES)
def test_an_epoch_leaves_the_global_rng_alone(kind):
    pipeline = PIPELINES[kind](coordinate_images(20), torch.arange(20), 8)
    state = torch.get_rng_state()
    collect(pipeline.epoch(1))
    assert torch.equal(torch.get_rng_state(), state)


# --- the DataLoader pipeline ----------------------------------------------------------------------


def test_dataloader_batches_do_not_depend_on_workers():
    images, labels = coordinate_images(48), torch.arange(48) % 10
    reference = loader_pipeline(images, labels, 8, seed=1, mean=MEAN, std=STD, num_workers=0)
    expected = {epoch: collect(reference.epoch(epoch)) for epoch in (1, 2)}
    for persistent in (False, True):
        pipeline = loader_pipeline(
            images, labels, 8, seed=1, mean=MEAN, std=STD, num_workers=2, persistent_workers=persistent
        )
        for epoch in (1, 2):  # a second epoch reuses the persistent workers
            assert same_batches(collect(pipeline.epoch(epoch)), expected[epoch])


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_dataset_reads_the_callers_tensor_without_a_copy(num_workers):
    images, labels = coordinate_images(16), torch.arange(16)
    pipeline = loader_pipeline(images, labels, 8, num_workers=num_workers)
    assert pipeline.dataset.images.untyped_storage().data_ptr() == images.untyped_storage().data_ptr()
    assert pipeline.dataset.labels.untyped_storage().data_ptr() == labels.untyped_storage().data_ptr()
    assert images.is_shared() == (num_workers > 0)  # moved once, in place, into shared memory for the workers
    assert len(collect(pipeline.epoch(1))) == 2


def test_dataloader_pipeline_refuses_a_device_copy_of_the_split():
    with pytest.raises(ValueError, match="CPU"):
        loader_pipeline(coordinate_images(4).to("meta"), torch.arange(4), 2)


# --- same augmentation: semantics and distribution ------------------------------------------------


def test_both_crops_give_identical_pixels_for_the_same_offsets_and_flip():
    image = torch.randint(1, 256, (3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    keys = [(row, column, flip) for row in range(OFFSETS) for column in range(OFFSETS) for flip in (False, True)]
    rows, columns, flips = (torch.tensor(values) for values in zip(*keys))
    batched = crop_flip(image.expand(len(keys), -1, -1, -1), rows, columns, flips)
    classic = torch.stack([classic_crop_flip(image, *key) for key in keys])
    assert torch.equal(batched, classic)
    assert torch.allclose(
        normalise(batched, channel_tensor(MEAN, CPU), channel_tensor(STD, CPU)),
        torch.stack([classic_normalise(crop, MEAN, STD) for crop in classic]),
        atol=1e-6,
        rtol=0,
    )


def augmentation_draws(pipeline, epochs: range) -> tuple[torch.Tensor, int, int]:
    """Counts of the 81 (row, column) offsets, flips and samples, decoded from the pipeline's batches."""
    counts, flipped, total = torch.zeros(OFFSETS * OFFSETS, dtype=torch.long), 0, 0
    for epoch in epochs:
        for batch, _ in pipeline.epoch(epoch):
            rows, columns, flips, _ = decode(batch)
            counts += torch.bincount(torch.tensor(rows) * OFFSETS + torch.tensor(columns), minlength=OFFSETS**2)
            flipped, total = flipped + sum(flips), total + len(flips)
    return counts, flipped, total


def test_both_pipelines_draw_offsets_uniformly_on_0_to_8_and_flip_half_the_images():
    images, labels = coordinate_images(1024), torch.zeros(1024, dtype=torch.long)
    draws = {
        "device": augmentation_draws(device_pipeline(images, labels, 512, seed=0), range(1, 9)),
        "dataloader": augmentation_draws(loader_pipeline(images, labels, 512, seed=0), range(1, 9)),
    }
    for counts, flipped, total in draws.values():
        assert total == 8192 and counts.sum() == total  # every decoded offset is inside 0..8
        assert counts.min() > 0
        assert stats.chisquare(counts.numpy()).pvalue > 1e-3  # uniform over the 81 offset pairs
        assert stats.binomtest(flipped, total, 0.5).pvalue > 1e-3
    table = torch.stack([draws["device"][0], draws["dataloader"][0]]).numpy()
    assert stats.chi2_contingency(table).pvalue > 1e-3  # the two pipelines: one distribution
    assert draws["device"][1] / 8192 == pytest.approx(draws["dataloader"][1] / 8192, abs=0.03)


def test_the_per_sample_draw_is_a_function_of_seed_epoch_and_index():
    draws = [sample_crop_flip(0, 1, index) for index in range(200)]
    assert draws == [sample_crop_flip(0, 1, index) for index in range(200)]
    assert draws != [sample_crop_flip(0, 2, index) for index in range(200)]
    assert draws != [sample_crop_flip(1, 1, index) for index in range(200)]
    assert all(0 <= row < OFFSETS and 0 <= column < OFFSETS for row, column, _ in draws)
