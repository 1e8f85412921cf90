"""Batching and augmentation (loader) and the training / evaluation passes (engine)."""

import pytest
import torch
from torch import nn

from optbench.data.pipelines import (
    channel_tensor,
    eval_batches,
    normalise,
    num_train_batches,
    random_crop_flip,
    train_batches,
)
from optbench.device.policy import DeviceFacts, decide_policy
from optbench.training.models import build_model
from optbench.training.steps import evaluate, noisy_fit, train_epoch

pytestmark = pytest.mark.usefixtures("one_thread")
CPU = torch.device("cpu")
MEAN, STD = channel_tensor((0.5, 0.4, 0.3), CPU), channel_tensor((0.2, 0.25, 0.3), CPU)
FP32 = decide_policy(DeviceFacts("cpu", True, 2), {"channels_last": False})  # plain NCHW fp32 steps
NO_SCALING = FP32.grad_scaler_for_run()
IDENTITY_MEAN, IDENTITY_STD = channel_tensor((0.0, 0.0, 0.0), CPU), channel_tensor((1 / 255,) * 3, CPU)


def random_images(count: int, seed: int = 0) -> torch.Tensor:
    """uint8 images with values 1..255: zero only ever comes from the crop padding."""
    return torch.randint(1, 256, (count, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


def index_images(count: int) -> torch.Tensor:
    """Image i is constant with value i, so a batch tells which images it holds (count <= 256)."""
    return torch.arange(count, dtype=torch.uint8).view(-1, 1, 1, 1).expand(count, 3, 32, 32).contiguous()


def match_crop(output: torch.Tensor, image: torch.Tensor, padding: int = 4) -> list[tuple[int, int, bool]]:
    """Every (row offset, column offset, flipped) whose window of the zero-padded image equals `output`."""
    padded = nn.functional.pad(image, (padding,) * 4)
    windows = padded.unfold(1, 32, 1).unfold(2, 32, 1)  # (C, 2p+1, 2p+1, 32, 32)
    matches = []
    for flipped, candidates in ((False, windows), (True, windows.flip(-1))):
        equal = (candidates == output[:, None, None]).all(-1).all(-1).all(0)
        matches += [(int(row), int(column), flipped) for row, column in equal.nonzero()]
    return matches


# --- random crop and flip --------------------------------------------------------------------------


def test_crop_flip_keeps_shape_and_dtype_and_is_reproducible():
    images = random_images(8)
    first = random_crop_flip(images, torch.Generator().manual_seed(5))
    second = random_crop_flip(images, torch.Generator().manual_seed(5))
    assert first.shape == images.shape and first.dtype == torch.uint8
    assert torch.equal(first, second)
    assert not torch.equal(first, random_crop_flip(images, torch.Generator().manual_seed(6)))


def test_each_output_is_a_window_of_its_own_zero_padded_image_possibly_mirrored():
    images = random_images(400)
    outputs = random_crop_flip(images, torch.Generator().manual_seed(0))
    found = [match_crop(output, image) for output, image in zip(outputs, images)]
    assert all(len(matches) == 1 for matches in found)  # its own image, one offset, one orientation
    rows = {matches[0][0] for matches in found}
    columns = {matches[0][1] for matches in found}
    assert rows == columns == set(range(9))  # every offset 0..8 occurs
    flip_rate = sum(matches[0][2] for matches in found) / len(found)
    assert 0.4 < flip_rate < 0.6


# --- training batches ------------------------------------------------------------------------------


def collect(batches) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(images.clone(), labels.clone()) for images, labels in batches]


def batch_indices(images: torch.Tensor) -> list[int]:
    """Recover the index of each image of a batch of index_images normalised with the identity stats."""
    return images[:, 0, 16, 16].round().long().tolist()  # the centre pixel is never padding


def test_train_batches_are_a_pure_function_of_seed_and_epoch():
    images, labels = random_images(50), torch.arange(50) % 5

    def run(seed, epoch):
        return collect(train_batches(images, labels, 16, seed, epoch, MEAN, STD))

    first, again = run(0, 1), run(0, 1)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(first, again))
    assert not torch.equal(first[0][0], run(0, 2)[0][0])
    assert not torch.equal(first[0][0], run(1, 1)[0][0])


@pytest.mark.parametrize("augment", [False, True])
def test_train_batches_drop_the_last_partial_batch_and_keep_labels_paired(augment):
    count, batch_size = 50, 16
    images, labels = index_images(count), (torch.arange(count) * 7) % 10
    batches = collect(train_batches(images, labels, batch_size, 3, 1, IDENTITY_MEAN, IDENTITY_STD, augment=augment))
    assert len(batches) == num_train_batches(count, batch_size) == 3
    assert all(
        len(batch_labels) == batch_size and batch.shape == (batch_size, 3, 32, 32) for batch, batch_labels in batches
    )
    seen = [index for batch, _ in batches for index in batch_indices(batch)]
    assert len(set(seen)) == 48  # a permutation: no image twice
    for batch, batch_labels in batches:
        assert batch_labels.tolist() == labels[batch_indices(batch)].tolist()


def test_different_epochs_shuffle_differently():
    images, labels = index_images(64), torch.zeros(64, dtype=torch.int64)

    def order(epoch):
        batches = train_batches(images, labels, 16, 0, epoch, IDENTITY_MEAN, IDENTITY_STD, augment=False)
        return [index for batch, _ in batches for index in batch_indices(batch)]

    assert sorted(order(1)) == sorted(order(2)) == list(range(64))
    assert order(1) != order(2)


def test_a_split_smaller_than_one_batch_gives_exactly_one_batch():
    images, labels = index_images(10), torch.arange(10)
    batches = collect(train_batches(images, labels, 16, 0, 1, IDENTITY_MEAN, IDENTITY_STD))
    assert len(batches) == 1 and sorted(batch_indices(batches[0][0])) == list(range(10))


def test_normalise_is_fraction_of_255_minus_mean_over_std():
    images = random_images(2)
    expected = (images.double() / 255 - MEAN.double()) / STD.double()
    result = normalise(images, MEAN, STD)
    assert result.dtype == torch.float32 and torch.allclose(result.double(), expected, atol=1e-5)
    assert torch.allclose(normalise(images, IDENTITY_MEAN, IDENTITY_STD), images.float())


def test_eval_batches_cover_every_image_once_in_order():
    images, labels = random_images(10), torch.arange(10) % 3
    batches = collect(eval_batches(images, labels, 4, MEAN, STD))
    assert [len(batch_labels) for _, batch_labels in batches] == [4, 4, 2]
    assert torch.equal(torch.cat([batch for batch, _ in batches]), normalise(images, MEAN, STD))
    assert torch.equal(torch.cat([batch_labels for _, batch_labels in batches]), labels)


# --- engine ----------------------------------------------------------------------------------------


def learnable_problem(count: int = 96, num_classes: int = 3):
    """Class c images are brighter in channel c: a linear model separates them."""
    generator = torch.Generator().manual_seed(0)
    labels = torch.arange(count) % num_classes
    images = torch.randint(60, 120, (count, 3, 32, 32), dtype=torch.uint8, generator=generator)
    images[torch.arange(count), labels] += 80
    return images, labels


def linear_model(num_classes: int = 3) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(48, num_classes))


def constant_scheduler(optimizer):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)


def test_train_epoch_reports_mean_loss_and_accuracy_of_the_images_it_trained_on():
    images, labels = learnable_problem()
    model = linear_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the model stays fixed, metrics are checkable
    scheduler = constant_scheduler(optimizer)
    batches = collect(train_batches(images, labels, 20, 0, 1, MEAN, STD, augment=False))  # 4 batches, 16 dropped
    result = train_epoch(model, batches, optimizer, scheduler, FP32, NO_SCALING).result()
    inputs, targets = torch.cat([b for b, _ in batches]), torch.cat([t for _, t in batches])
    with torch.no_grad():
        logits = model(inputs)
    assert result["images"] == 80
    assert result["loss"] == pytest.approx(nn.functional.cross_entropy(logits, targets).item(), rel=1e-5)
    assert result["acc"] == pytest.approx((logits.argmax(1) == targets).float().mean().item())
    assert scheduler.last_epoch == 4  # one scheduler step per optimizer step


def test_train_epoch_lowers_the_loss_on_a_learnable_problem():
    images, labels = learnable_problem()
    model = linear_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = constant_scheduler(optimizer)
    results = [
        train_epoch(
            model, train_batches(images, labels, 16, 0, epoch, MEAN, STD), optimizer, scheduler, FP32, NO_SCALING
        ).result()
        for epoch in range(1, 6)
    ]
    assert results[-1]["loss"] < 0.5 * results[0]["loss"]
    assert results[-1]["acc"] > 0.9


def test_evaluate_returns_one_prediction_per_image_and_consistent_metrics():
    images, labels = learnable_problem(count=30)
    model = build_model("resnet18", 3, 4)
    model.train()
    metrics, predicted = evaluate(model, eval_batches(images, labels, 7, MEAN, STD), FP32)
    assert predicted.shape == (30,) and predicted.dtype == torch.int64
    assert metrics["acc"] == pytest.approx((predicted == labels).float().mean().item())
    with torch.no_grad():
        logits = model(normalise(images, MEAN, STD))  # evaluate left the model in eval mode
    assert torch.equal(predicted, logits.argmax(1))
    assert metrics["loss"] == pytest.approx(nn.functional.cross_entropy(logits, labels).item(), rel=1e-4)
    # Eval-mode BatchNorm: predictions do not depend on how the split is batched.
    _, predicted_whole = evaluate(model, eval_batches(images, labels, 30, MEAN, STD), FP32)
    assert torch.equal(predicted, predicted_whole)


def test_noisy_fit_fractions_on_a_hand_made_example():
    predicted = torch.tensor([0, 1, 2, 3, 4])
    noisy = torch.tensor([0, 1, 1, 1, 1])  # matches predictions at 0, 1
    clean = torch.tensor([2, 1, 2, 3, 0])  # matches predictions at 1, 2, 3
    assert noisy_fit(predicted, noisy, clean) == pytest.approx({"fit_noisy_label": 0.4, "fit_clean_label": 0.6})


def test_eval_batches_with_an_index_yields_exactly_that_subset_in_order():
    images, labels = index_images(20), torch.arange(20)
    index = torch.tensor([3, 7, 8, 15, 19])
    batches = list(eval_batches(images, labels, 2, IDENTITY_MEAN, IDENTITY_STD, index))
    assert [len(batch_labels) for _, batch_labels in batches] == [2, 2, 1]
    assert torch.cat([batch_labels for _, batch_labels in batches]).tolist() == index.tolist()
    assert torch.cat([batch[:, 0, 0, 0] for batch, _ in batches]).round().long().tolist() == index.tolist()
