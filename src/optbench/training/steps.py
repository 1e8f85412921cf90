"""One training epoch and one evaluation pass; no file I/O, no config.

An example is an image, a sequence, or one position of a language model's window: a model returns logits
(examples, classes) and labels are flattened to match, so losses and accuracies are per example (per
character for the language model), and the counts are examples.

Loss sums and correct counts accumulate on the device and are read once at the end of the pass, so
a step never waits for the host. `train_epoch` returns an EpochProgress whose `result()` is the
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
from dataclasses import dataclass

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
    """One optimizer step on one batch; returns (summed loss, correct count) as device tensors."""
    images = images.contiguous(memory_format=policy.memory_format)
    optimizer.zero_grad(set_to_none=True)
    loss_sum = correct = None
    for micro_images, micro_labels in zip(images.chunk(grad_accum), labels.chunk(grad_accum)):
        targets = micro_labels.reshape(-1)  # a language model's (batch, context) next tokens: one per position
        with policy.autocast():
            logits = model(micro_images)
            loss = nn.functional.cross_entropy(logits, targets)
        # Weight each micro-batch mean by its share, so the gradients sum to the whole batch's mean.
        scaler.scale(loss * (targets.numel() / labels.numel())).backward()
        micro_loss_sum = loss.detach().float() * targets.numel()
        micro_correct = (logits.detach().argmax(1) == targets).sum()
        loss_sum = micro_loss_sum if loss_sum is None else loss_sum + micro_loss_sum
        correct = micro_correct if correct is None else correct + micro_correct
    if loss_sum is None or correct is None:
        raise ValueError("train_step was given an empty batch")
    scaler.step(optimizer)  # skips the step when fp16 gradients overflowed
    scaler.update()
    return loss_sum, correct


@dataclass
class EpochProgress:
    """Where an epoch's training pass stands; saved in a mid-epoch checkpoint and continued from."""

    batches_done: int = 0
    images: int = 0
    loss_sum: torch.Tensor | None = None  # device tensors: read once, at the end of the epoch
    correct: torch.Tensor | None = None
    first_nonfinite_batch: torch.Tensor | None = None  # -1 while every loss is finite

    def add(self, loss_sum: torch.Tensor, correct: torch.Tensor, images: int) -> None:
        if self.loss_sum is None or self.correct is None or self.first_nonfinite_batch is None:
            self.loss_sum, self.correct = loss_sum, correct
            self.first_nonfinite_batch = torch.tensor(-1, device=loss_sum.device)
        else:
            self.loss_sum, self.correct = self.loss_sum + loss_sum, self.correct + correct
        # Kept on the device (no host sync per step): the first batch whose loss was not finite.
        first_bad_here = (self.first_nonfinite_batch < 0) & ~torch.isfinite(loss_sum)
        self.first_nonfinite_batch = torch.where(first_bad_here, self.batches_done, self.first_nonfinite_batch)
        self.batches_done += 1
        self.images += images

    def result(self) -> dict:
        if self.loss_sum is None or self.correct is None or self.first_nonfinite_batch is None:
            raise ValueError("no batch was trained this epoch")
        return {
            "loss": self.loss_sum.item() / self.images,
            "acc": self.correct.item() / self.images,
            "images": self.images,
            "first_nonfinite_batch": int(self.first_nonfinite_batch.item()),
        }


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
