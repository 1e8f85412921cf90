"""Batches from uint8 image tensors held on the training device, augmented with batched tensor ops.

The airbench recipe: a split lives once on the device as uint8; each epoch draws a permutation and
per-image crop offsets and flips from a generator seeded by (seed, epoch), so an epoch's batches
are a pure function of those two numbers (exact resume needs no pipeline state). No per-sample
Python and no DataLoader workers.
- `train_batches(images, labels, batch_size, seed, epoch, mean, std)`: shuffled, random crop with
  4-pixel zero padding and horizontal flip, normalised floats; drops the last partial batch so
  BatchNorm never sees a batch of one (every image is still seen: the permutation changes per epoch).
- `eval_batches(images, labels, batch_size, mean, std, index=None)`: in order, no augmentation.
"""

from collections.abc import Iterator

import torch

CROP_PADDING = 4  # pixels of zero padding before the random 32x32 crop (He et al. 2016)


def epoch_generator(seed: int, epoch: int, device: torch.device) -> torch.Generator:
    # Large odd multiplier: distinct, well-spread seeds per (seed, epoch) pair.
    return torch.Generator(device=device).manual_seed(seed * 1_000_003 + epoch)


def normalise(images_uint8: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    return (images_uint8.float() / 255 - mean) / std


def channel_tensor(values, device: torch.device) -> torch.Tensor:
    """Per-channel constants shaped (1, C, 1, 1) for broadcasting over a batch."""
    return torch.tensor(values, dtype=torch.float32, device=device).view(1, -1, 1, 1)


def random_crop_flip(images: torch.Tensor, generator: torch.Generator, padding: int = CROP_PADDING) -> torch.Tensor:
    """Random crop after zero padding, then horizontal flip with probability 1/2, for a whole batch."""
    count, _, height, width = images.shape
    padded = torch.nn.functional.pad(images, (padding,) * 4)
    offsets = torch.randint(0, 2 * padding + 1, (2, count), device=images.device, generator=generator)
    flip = torch.rand(count, device=images.device, generator=generator) < 0.5
    rows = offsets[0, :, None] + torch.arange(height, device=images.device)           # (N, H)
    columns = offsets[1, :, None] + torch.arange(width, device=images.device)         # (N, W)
    columns = torch.where(flip[:, None], columns.flip(1), columns)                    # flip = read columns backwards
    batch_index = torch.arange(count, device=images.device)[:, None, None]
    cropped = padded.permute(0, 2, 3, 1)[batch_index, rows[:, :, None], columns[:, None, :]]  # (N, H, W, C)
    return cropped.permute(0, 3, 1, 2)


def train_batches(images: torch.Tensor, labels: torch.Tensor, batch_size: int, seed: int, epoch: int,
                  mean: torch.Tensor, std: torch.Tensor, augment: bool = True) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    generator = epoch_generator(seed, epoch, images.device)
    order = torch.randperm(len(labels), device=images.device, generator=generator)
    for start in range(0, num_train_batches(len(labels), batch_size) * batch_size, batch_size):
        index = order[start:start + batch_size]
        batch = images[index]
        if augment:
            batch = random_crop_flip(batch, generator)
        yield normalise(batch, mean, std), labels[index]


def num_train_batches(num_images: int, batch_size: int) -> int:
    # Drop the last partial batch, but never drop everything when the split is smaller than a batch.
    return max(1, num_images // batch_size)


def eval_batches(images: torch.Tensor, labels: torch.Tensor, batch_size: int, mean: torch.Tensor,
                 std: torch.Tensor, index: torch.Tensor | None = None) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """In order, no augmentation; `index` picks a subset batch by batch, without copying the split."""
    count = len(labels) if index is None else len(index)
    for start in range(0, count, batch_size):
        chunk = slice(start, start + batch_size) if index is None else index[start:start + batch_size]
        yield normalise(images[chunk], mean, std), labels[chunk]
