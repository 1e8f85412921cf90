"""Training and evaluation batches; by default from uint8 images held on the training device.

The default path is the airbench recipe: a split lives once on the device as uint8; each epoch draws
a permutation and per-image crop offsets and flips from a generator seeded by (seed, epoch), so an
epoch's batches are a pure function of those two numbers (exact resume needs no pipeline state).
No per-sample Python and no DataLoader workers.
- `train_batches(images, labels, batch_size, seed, epoch, mean, std)`: shuffled, random crop with
  4-pixel zero padding and horizontal flip, normalised floats; drops the last partial batch so
  BatchNorm never sees a batch of one (every image is still seen: the permutation changes per epoch).
  Float sequences (no augmentation) are normalised once per run by `DevicePipeline`, not per batch.
- `eval_batches(images, labels, batch_size, mean, std, index=None)`: in order, no augmentation.

Two training pipelines share one interface, `len(pipeline)` (batches per epoch) and
`pipeline.epoch(epoch)` (that epoch's normalised batches on the training device):
- `DevicePipeline` (data.pipeline=device, the default): `train_batches` over a split held on the device.
- `DataLoaderPipeline` (data.pipeline=dataloader): the classic torch DataLoader with a per-sample
  torchvision.transforms.v2 crop/flip/normalise, reading the one shared uint8 CPU tensor (never a
  per-worker copy). Its batches are a pure function of (seed, epoch) too, whatever num_workers, and
  its augmentation has the same distribution as the device path (offsets uniform on 0..2*padding,
  flip with probability 1/2, zero padding); the draws themselves differ.
"""

from collections.abc import Iterator, Sequence

import torch
import torchvision.transforms.v2.functional as tv_functional
from torch.utils.data import DataLoader, Dataset, Sampler

CROP_PADDING = 4  # pixels of zero padding before the random 32x32 crop (He et al. 2016)


def epoch_generator(seed: int, epoch: int, device: torch.device) -> torch.Generator:
    # Large odd multiplier: distinct, well-spread seeds per (seed, epoch) pair.
    return torch.Generator(device=device).manual_seed(seed * 1_000_003 + epoch)


def normalise(images_uint8: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    # (x / 255 - mean) / std, in place on the one float copy: same numbers, no further temporaries.
    return images_uint8.to(torch.float32, copy=True).div_(255).sub_(mean).div_(std)


def channel_tensor(values, device: torch.device, dims: int = 4) -> torch.Tensor:
    """Per-channel constants shaped (1, C, 1, 1) for broadcasting over a batch of images; (1, C, 1) over a batch
    of sequences (`dims` 3)."""
    return torch.tensor(values, dtype=torch.float32, device=device).view(1, -1, *[1] * max(0, dims - 2))


def model_input(raw: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """What the model is fed: uint8 images scaled to [0, 1] and normalised, float sequences standardised,
    token ids as they are."""
    if raw.dtype == torch.uint8:
        return normalise(raw, mean, std)
    if raw.is_floating_point():
        return (raw - mean) / std
    return raw


def random_crop_flip(images: torch.Tensor, generator: torch.Generator, padding: int = CROP_PADDING) -> torch.Tensor:
    """Random crop after zero padding, then horizontal flip with probability 1/2, for a whole batch."""
    count = len(images)
    offsets = torch.randint(0, 2 * padding + 1, (2, count), device=images.device, generator=generator)
    flip = torch.rand(count, device=images.device, generator=generator) < 0.5
    return crop_flip(images, offsets[0], offsets[1], flip, padding)


def crop_flip(
    images: torch.Tensor,
    row_offsets: torch.Tensor,
    column_offsets: torch.Tensor,
    flip: torch.Tensor,
    padding: int = CROP_PADDING,
) -> torch.Tensor:
    """Batched crop of each zero-padded image at its (row, column) offset (0..2*padding), mirrored where `flip`.

    Copies whole pixel rows, one `index_select` of W-byte windows of the padded batch and its mirror
    image (a flipped crop at column offset c is the mirror's crop at 2*padding - c): on a CPU ~5x
    faster than indexing single pixels, and the result is contiguous NCHW, which `normalise` runs
    over ~7x faster than over the channels-last strides pixel indexing leaves.
    """
    count, channels, height, width = images.shape
    padded = torch.nn.functional.pad(images, (padding,) * 4)
    padded_height, padded_width = height + 2 * padding, width + 2 * padding
    source = torch.cat([padded, padded.flip(-1)]).view(-1)  # images 0..N-1, then their mirrors N..2N-1
    device = images.device
    image = torch.arange(count, device=device) + flip.long() * count
    first_column = torch.where(flip, 2 * padding - column_offsets, column_offsets)
    rows = row_offsets[:, None] + torch.arange(height, device=device)  # (N, H)
    planes = image[:, None] * channels + torch.arange(channels, device=device)  # (N, C)
    starts = (planes[:, :, None] * padded_height + rows[:, None, :]) * padded_width + first_column[:, None, None]
    windows = source.as_strided((source.numel() - width + 1, width), (1, 1))  # every W-byte run of `source`
    return windows.index_select(0, starts.view(-1)).view(count, channels, height, width)


def train_batches(
    images: torch.Tensor,
    labels: torch.Tensor,
    batch_size: int,
    seed: int,
    epoch: int,
    mean: torch.Tensor,
    std: torch.Tensor,
    augment: bool = True,
    normalise_batches: bool = True,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """`normalise_batches=False`: `images` are already the model's input (normalised once for the whole split)."""
    generator = epoch_generator(seed, epoch, images.device)
    order = torch.randperm(len(labels), device=images.device, generator=generator)
    for start in range(0, num_train_batches(len(labels), batch_size) * batch_size, batch_size):
        index = order[start : start + batch_size]
        batch = images.index_select(0, index)  # on a CPU ~10x faster than images[index], same result
        if augment:
            batch = random_crop_flip(batch, generator)
        yield model_input(batch, mean, std) if normalise_batches else batch, labels.index_select(0, index)


def num_train_batches(num_images: int, batch_size: int) -> int:
    # Drop the last partial batch, but never drop everything when the split is smaller than a batch.
    return max(1, num_images // batch_size)


def eval_batches(
    images: torch.Tensor,
    labels: torch.Tensor,
    batch_size: int,
    mean: torch.Tensor,
    std: torch.Tensor,
    index: torch.Tensor | None = None,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """In order, no augmentation; `index` picks a subset batch by batch, without copying the split."""
    count = len(labels) if index is None else len(index)
    for start in range(0, count, batch_size):
        chunk = slice(start, start + batch_size) if index is None else index[start : start + batch_size]
        yield model_input(images[chunk], mean, std), labels[chunk]


# --- the two training pipelines --------------------------------------------------------------------


class DevicePipeline:
    """Default pipeline (data.pipeline=device): `train_batches` over uint8 images already on the device.

    `mean`/`std`: the (1, C, 1, 1) device tensors of `channel_tensor`, or plain per-channel floats.
    """

    def __init__(
        self,
        images: torch.Tensor,
        labels: torch.Tensor,
        batch_size: int,
        seed: int,
        mean: torch.Tensor | Sequence[float],
        std: torch.Tensor | Sequence[float],
        augment: bool = True,
    ):
        self.images, self.labels, self.batch_size, self.seed = images, labels, batch_size, seed
        self.augment = augment  # crop and flip: images only (a sequence's workload has no augmentation)
        self.mean, self.std = (
            value if isinstance(value, torch.Tensor) else channel_tensor(value, images.device, images.dim())
            for value in (mean, std)
        )
        # Float sequences, never augmented, are normalised once here rather than per batch: the same numbers
        # (elementwise), two ops fewer in a small model's step. Images are cropped as uint8 first.
        self.normalised_once = images.is_floating_point() and not augment
        if self.normalised_once:
            self.images = model_input(images, self.mean, self.std)

    def __len__(self) -> int:
        return num_train_batches(len(self.labels), self.batch_size)

    def epoch(self, epoch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return train_batches(
            self.images,
            self.labels,
            self.batch_size,
            self.seed,
            epoch,
            self.mean,
            self.std,
            self.augment,
            normalise_batches=not self.normalised_once,
        )


class WindowPipeline:
    """A character stream's training batches (nanoGPT's get_batch): each step, `batch_size` windows of
    `context` tokens at uniformly random offsets, with the next token of each position as its label. An
    "epoch" is an evaluation period of `steps_per_epoch` steps; its offsets come from a generator seeded by
    (seed, epoch), so a period's batches are a pure function of those two numbers (exact resume mid-period)."""

    def __init__(
        self, tokens: torch.Tensor, next_tokens: torch.Tensor, batch_size: int, seed: int, context: int, steps: int
    ):
        self.tokens, self.next_tokens, self.batch_size, self.seed = tokens, next_tokens, batch_size, seed
        self.context, self.steps = context, steps

    def __len__(self) -> int:
        return self.steps

    def epoch(self, epoch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        generator = epoch_generator(self.seed, epoch, self.tokens.device)
        last_start = len(self.tokens) - self.context
        starts = torch.randint(
            0, last_start + 1, (self.steps, self.batch_size), generator=generator, device=self.tokens.device
        )
        positions = torch.arange(self.context, device=self.tokens.device)
        for step_starts in starts:
            window = step_starts[:, None] + positions
            yield self.tokens[window], self.next_tokens[window]


_MASK64 = (1 << 64) - 1


def _splitmix64(value: int) -> int:
    """One step of SplitMix64 (Steele et al. 2014): a bijective 64-bit mix, every output bit well spread."""
    value = (value + 0x9E3779B97F4A7C15) & _MASK64
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK64
    return value ^ (value >> 31)


def sample_crop_flip(seed: int, epoch: int, index: int, padding: int = CROP_PADDING) -> tuple[int, int, bool]:
    """(row offset, column offset, flip) of image `index` in `epoch`: uniform on 0..2*padding, flip p=1/2.

    A counter-based draw (hash of the three numbers), so it needs no RNG state, never touches the
    global RNG, and is the same in any worker process: ~3 us per sample against ~20 us for seeding a
    torch.Generator per sample. The modulo bias of 2**64 mod (2*padding+1)**2*2 is below 1e-17.
    """
    draw = _splitmix64(_splitmix64((seed * 1_000_003 + epoch) & _MASK64) ^ index)
    span = 2 * padding + 1
    return draw % span, draw // span % span, bool(draw // (span * span) % 2)


def classic_crop_flip(
    image: torch.Tensor, row_offset: int, column_offset: int, flip: bool, padding: int = CROP_PADDING
) -> torch.Tensor:
    """One CHW image, torchvision.transforms.v2 RandomCrop(size, padding, fill=0) + RandomHorizontalFlip,
    with the random parameters given."""
    height, width = image.shape[-2:]
    image = tv_functional.pad(image, [padding], fill=0)
    image = tv_functional.crop(image, row_offset, column_offset, height, width)
    return tv_functional.horizontal_flip(image) if flip else image


def classic_normalise(image: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    """v2 ToDtype(float32, scale=True) + Normalize(mean, std); equals `normalise` up to float rounding."""
    return tv_functional.normalize(tv_functional.to_dtype(image, torch.float32, scale=True), mean, std)


class _EpochSampler(Sampler):
    """Yields (epoch, index) keys in the epoch's permutation, only as many as whole batches take.

    The permutation comes from `epoch_generator(seed, epoch, cpu)` (on the CPU the same order as
    `train_batches`); set `epoch` before each pass. Runs in the main process, so workers need no state.
    """

    def __init__(self, num_images: int, batch_size: int, seed: int):
        self.num_images, self.seed, self.epoch = num_images, seed, 1
        self.num_samples = min(num_images, num_train_batches(num_images, batch_size) * batch_size)

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self) -> Iterator[tuple[int, int]]:
        epoch = self.epoch
        order = torch.randperm(self.num_images, generator=epoch_generator(self.seed, epoch, torch.device("cpu")))
        return ((epoch, index) for index in order[: self.num_samples].tolist())


class AugmentedImages(Dataset):
    """Map-style dataset over ONE shared uint8 (N, C, H, W) CPU tensor, keyed by (epoch, index).

    Each item is the classic per-sample transform (v2 pad + crop + flip, ToDtype, Normalize) with the
    crop and flip of `sample_crop_flip(seed, epoch, index)`, and its label.
    """

    def __init__(
        self,
        images: torch.Tensor,
        labels: torch.Tensor,
        seed: int,
        mean: Sequence[float],
        std: Sequence[float],
        padding: int = CROP_PADDING,
    ):
        self.images, self.labels, self.seed, self.padding = images, labels, seed, padding
        self.mean, self.std = list(mean), list(std)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, key: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
        epoch, index = key
        row_offset, column_offset, flip = sample_crop_flip(self.seed, epoch, index, self.padding)
        image = classic_crop_flip(self.images[index], row_offset, column_offset, flip, self.padding)
        return classic_normalise(image, self.mean, self.std), self.labels[index]


class DataLoaderPipeline:
    """The classic path (data.pipeline=dataloader): torch DataLoader + per-sample torchvision v2 transforms.

    `images`/`labels`: uint8 (N, C, H, W) and int64 (N,) on the CPU, held once: the dataset keeps a
    reference (no copy); with workers the storage is moved once into shared memory
    (`share_memory_()`, in place, so the caller's tensor is that same memory), so fork, spawn and
    forkserver workers all read it without copying. `mean`/`std`: per-channel floats (a tensor of C
    values is accepted too). `pin_memory` takes effect for a CUDA `device` only (page-locked batches,
    copied with non_blocking=True). The DataLoader is built once, so persistent workers live across
    epochs; only one epoch's iterator may be in use at a time.
    """

    def __init__(
        self,
        images: torch.Tensor,
        labels: torch.Tensor,
        batch_size: int,
        seed: int,
        mean: Sequence[float] | torch.Tensor,
        std: Sequence[float] | torch.Tensor,
        device: torch.device,
        num_workers: int = 0,
        pin_memory: bool = False,
        persistent_workers: bool = False,
    ):
        if images.device.type != "cpu" or labels.device.type != "cpu":
            raise ValueError(
                "DataLoaderPipeline reads the split from CPU memory: pass the CPU tensors, not a device copy"
            )
        if num_workers > 0:  # in place, once; a no-op when already shared
            images.share_memory_()
            labels.share_memory_()
        self.device = torch.device(device)
        self.non_blocking = pin_memory and self.device.type == "cuda"
        self.sampler = _EpochSampler(len(labels), batch_size, seed)
        self.dataset = AugmentedImages(images, labels, seed, _floats(mean), _floats(std))
        self.loader = DataLoader(
            self.dataset,
            batch_size=batch_size,
            sampler=self.sampler,
            num_workers=num_workers,
            pin_memory=self.non_blocking,
            persistent_workers=persistent_workers and num_workers > 0,
            generator=torch.Generator().manual_seed(seed),
        )  # private: leaves the global RNG alone

    def __len__(self) -> int:
        return len(self.loader)

    def epoch(self, epoch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        self.sampler.epoch = epoch
        for images, labels in self.loader:
            yield (
                images.to(self.device, non_blocking=self.non_blocking),
                labels.to(self.device, non_blocking=self.non_blocking),
            )


def _floats(values: Sequence[float] | torch.Tensor) -> list[float]:
    return [float(value) for value in (values.flatten().tolist() if isinstance(values, torch.Tensor) else values)]
