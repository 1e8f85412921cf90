"""One training epoch and one evaluation pass; no file I/O, no config.

An example is an image, a sequence, or one position of a language model's window: a model returns logits
(examples, classes) and labels are flattened to match, so losses and accuracies are per example (per
character for the language model), and the counts are examples.

Each step's loss sum and correct count stay on the device, kept in a list, and are read once at the end
of the pass (or into a mid-epoch checkpoint), so a step never waits for the host and no op keeps a running
total: on a small model (MNIST-1D's CNN, about a millisecond a step on one CPU thread) every op besides the
model's shows (docs/benchmarks.md). `train_epoch` returns an EpochProgress whose `result()` is the
mean loss and accuracy over the images trained on (against the labels training sees, noisy or not);
it can stop between steps and be continued from its progress (graceful interruption). `evaluate` returns the same for an
evaluation split plus the predicted classes, which the noisy-label fit metrics need. The device
policy supplies autocast (AMP) and the memory format; `grad_accum` splits each batch into that many
micro-batches whose gradients add up to the whole batch's, so a small device keeps the batch size.
`train_epoch` puts the optimizer in its train mode (Schedule-Free); the loop puts it in eval mode before
evaluating (training/loop.py). `recompute_batch_norm` re-estimates BatchNorm statistics at the weights
being evaluated (Schedule-Free's average differs from the weights the training passes saw).
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from optbench.device.policy import DevicePolicy
from optbench.training.optim import set_mode

Batches = Iterable[tuple[torch.Tensor, torch.Tensor]]


def train_step(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    optimizer: torch.optim.Optimizer,
    policy: DevicePolicy,
    scaler: torch.amp.GradScaler,
    grad_accum: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimizer step on one batch; returns (summed loss, correct count) as device tensors.

    A small model's step is a few hundred microseconds on a CPU, so each tensor op besides the model's counts:
    one micro-batch is not chunked, a share of 1 is not multiplied in (x * 1.0 is x, bit for bit, and so is
    its gradient), and a disabled grad scaler (all but fp16) is not called (it would pass everything through).
    """
    images = images.contiguous(memory_format=policy.memory_format)
    optimizer.zero_grad(set_to_none=True)
    micro_batches = zip(images.chunk(grad_accum), labels.chunk(grad_accum)) if grad_accum > 1 else ((images, labels),)
    loss_sum = correct = None
    for micro_images, micro_labels in micro_batches:
        targets = micro_labels.reshape(-1)  # a language model's (batch, context) next tokens: one per position
        with policy.autocast():
            logits = model(micro_images)
            loss = nn.functional.cross_entropy(logits, targets)
        # Weight each micro-batch mean by its share, so the gradients sum to the whole batch's mean.
        share = targets.numel() / labels.numel()
        _backward(loss if share == 1 else loss * share, scaler)
        micro_loss_sum = loss.detach().float() * targets.numel()
        micro_correct = (logits.argmax(1) == targets).sum()  # argmax records no graph: nothing to detach
        loss_sum = micro_loss_sum if loss_sum is None else loss_sum + micro_loss_sum
        correct = micro_correct if correct is None else correct + micro_correct
    if loss_sum is None or correct is None:
        raise ValueError("train_step was given an empty batch")
    if scaler.is_enabled():
        scaler.step(optimizer)  # skips the step when fp16 gradients overflowed
        scaler.update()
    else:
        optimizer.step()
    return loss_sum, correct


def _backward(loss: torch.Tensor, scaler: torch.amp.GradScaler) -> None:
    (scaler.scale(loss) if scaler.is_enabled() else loss).backward()


@dataclass
class EpochProgress:
    """Where an epoch's training pass stands; saved in a mid-epoch checkpoint and continued from.

    A step only appends the device tensors train_step returned (no tensor op, no host sync); they are reduced
    when read, at the end of the epoch or into a checkpoint: the loss sums added one by one in float32, in
    step order (the numbers a running device sum gave), the correct counts summed, and the first batch whose
    loss sum is not finite found among them. `loss_sum`, `correct` and `first_nonfinite_batch` hold the
    reduced batches before `batch_loss_sums` (a restored checkpoint's), or None.
    """

    batches_done: int = 0
    images: int = 0
    loss_sum: torch.Tensor | None = None
    correct: torch.Tensor | None = None
    first_nonfinite_batch: torch.Tensor | None = None  # -1 while every loss is finite
    batch_loss_sums: list[torch.Tensor] = field(default_factory=list)  # this session's steps, in order
    batch_correct: list[torch.Tensor] = field(default_factory=list)

    def add(self, loss_sum: torch.Tensor, correct: torch.Tensor, images: int) -> None:
        self.batch_loss_sums.append(loss_sum)
        self.batch_correct.append(correct)
        self.batches_done += 1
        self.images += images

    def totals(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(loss sum float32, correct count int64, first non-finite batch int64 or -1) over the batches so far,
        as CPU tensors: what a mid-epoch checkpoint saves. Reads the device once."""
        if not self.batches_done:
            raise ValueError("no batch was trained this epoch")
        loss_sums = _on_host(self.batch_loss_sums, np.float32)
        loss_sum = _sum_in_order(None if self.loss_sum is None else np.float32(self.loss_sum.item()), loss_sums)
        correct = int(_on_host(self.batch_correct, np.int64).sum()) + int(0 if self.correct is None else self.correct)
        first = -1 if self.first_nonfinite_batch is None else int(self.first_nonfinite_batch)
        nonfinite = np.flatnonzero(~np.isfinite(loss_sums))
        if first < 0 and len(nonfinite):  # counted from the epoch's first batch, a restored checkpoint's included
            first = self.batches_done - len(loss_sums) + int(nonfinite[0])
        return torch.tensor(loss_sum, dtype=torch.float32), torch.tensor(correct), torch.tensor(first)

    def result(self) -> dict:
        loss_sum, correct, first_nonfinite_batch = self.totals()
        return {
            "loss": loss_sum.item() / self.images,
            "acc": correct.item() / self.images,
            "images": self.images,
            "first_nonfinite_batch": int(first_nonfinite_batch.item()),
        }


def _on_host(values: list[torch.Tensor], dtype) -> np.ndarray:
    """One step's device scalars after another, as one host array (one transfer)."""
    return torch.stack(values).cpu().numpy() if values else np.empty(0, dtype)


def _sum_in_order(start: np.float32 | None, values: np.ndarray) -> np.float32:
    """start + values[0] + values[1] + ..., each addition rounded to float32: the sum a running float32 tensor
    gives, bit for bit (numpy's pairwise sum and a float64 sum round otherwise). Non-finite values stay
    non-finite, without numpy's warnings."""
    total = start
    with np.errstate(over="ignore", invalid="ignore"):
        for value in values:
            total = value if total is None else total + value
    if total is None:
        raise ValueError("no loss to sum")
    return total


def train_epoch(
    model: nn.Module,
    batches: Batches,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    policy: DevicePolicy,
    scaler: torch.amp.GradScaler,
    grad_accum: int = 1,
    progress: EpochProgress | None = None,
    should_stop=lambda: False,
) -> EpochProgress:
    """Train on `batches` (the rest of an epoch when `progress` is given); stop early when `should_stop()`."""
    model.train()
    set_mode(optimizer, training=True)  # Schedule-Free steps from its gradient point, not the evaluated average
    progress = progress or EpochProgress()
    for images, labels in batches:
        batch_loss_sum, batch_correct = train_step(model, images, labels, optimizer, policy, scaler, grad_accum)
        scheduler.step()
        progress.add(batch_loss_sum, batch_correct, labels.numel())
        if should_stop():
            break
    return progress


@torch.no_grad()
def recompute_batch_norm(model: nn.Module, batches: Batches, policy: DevicePolicy) -> None:
    """Re-estimate every BatchNorm's running statistics at the current weights, as the average over `batches`
    (momentum None: a cumulative average from a reset, so the old statistics leave no trace)."""
    norms = [module for module in model.modules() if isinstance(module, nn.modules.batchnorm._BatchNorm)]
    momenta = [norm.momentum for norm in norms]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None
    model.train()
    for images, _ in batches:
        with policy.autocast():
            model(images.contiguous(memory_format=policy.memory_format))
    for norm, momentum in zip(norms, momenta):
        norm.momentum = momentum


@torch.inference_mode()
def evaluate(model: nn.Module, batches: Batches, policy: DevicePolicy) -> tuple[dict[str, float], torch.Tensor]:
    model.eval()
    loss_sum: float | torch.Tensor = 0.0
    predictions, all_labels = [], []
    for images, labels in batches:
        with policy.autocast():
            logits = model(images.contiguous(memory_format=policy.memory_format))
        targets = labels.reshape(-1)  # one per position for a language model
        loss_sum = loss_sum + nn.functional.cross_entropy(logits.float(), targets, reduction="sum")
        predictions.append(logits.argmax(1))
        all_labels.append(targets)
    predicted, labels = torch.cat(predictions), torch.cat(all_labels)
    metrics = {"loss": float(loss_sum) / len(labels), "acc": (predicted == labels).float().mean().item()}
    return metrics, predicted


def noisy_fit(predicted: torch.Tensor, noisy_labels: torch.Tensor, clean_labels: torch.Tensor) -> dict[str, float]:
    """How the noisy training samples are fit: predicted as their given (wrong) label vs the clean one.

    The memorization curve of noise papers: early on the network predicts the clean label; as it
    memorises, predictions move to the noisy label.
    """
    return {
        "fit_noisy_label": (predicted == noisy_labels).float().mean().item(),
        "fit_clean_label": (predicted == clean_labels).float().mean().item(),
    }
