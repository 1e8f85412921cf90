"""One training epoch and one evaluation pass; no file I/O, no config.

Loss sums and correct counts accumulate on the device and are read once at the end of the pass, so
a step never waits for the host. `train_epoch` returns mean loss and accuracy over the images it
trained on (against the labels training sees, noisy or not); `evaluate` returns the same for an
evaluation split plus the predicted classes, which the noisy-label fit metrics need.
"""

from collections.abc import Iterable

import torch
from torch import nn

Batches = Iterable[tuple[torch.Tensor, torch.Tensor]]


def train_epoch(model: nn.Module, batches: Batches, optimizer: torch.optim.Optimizer,
                scheduler: torch.optim.lr_scheduler.LRScheduler) -> dict[str, float]:
    model.train()
    loss_sum = correct = count = None
    for images, labels in batches:
        logits = model(images)
        loss = nn.functional.cross_entropy(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        batch_loss_sum = loss.detach() * len(labels)
        batch_correct = (logits.detach().argmax(1) == labels).sum()
        if loss_sum is None:
            loss_sum, correct, count = batch_loss_sum, batch_correct, 0
        else:
            loss_sum, correct = loss_sum + batch_loss_sum, correct + batch_correct
        count += len(labels)
    return {"loss": loss_sum.item() / count, "acc": correct.item() / count, "images": count}


@torch.inference_mode()
def evaluate(model: nn.Module, batches: Batches) -> tuple[dict[str, float], torch.Tensor]:
    model.eval()
    loss_sum, predictions, all_labels = 0.0, [], []
    for images, labels in batches:
        logits = model(images)
        loss_sum = loss_sum + nn.functional.cross_entropy(logits, labels, reduction="sum")
        predictions.append(logits.argmax(1))
        all_labels.append(labels)
    predicted, labels = torch.cat(predictions), torch.cat(all_labels)
    metrics = {"loss": float(loss_sum) / len(labels), "acc": (predicted == labels).float().mean().item()}
    return metrics, predicted


def noisy_fit(predicted: torch.Tensor, noisy_labels: torch.Tensor, clean_labels: torch.Tensor) -> dict[str, float]:
    """How the noisy training samples are fit: predicted as their given (wrong) label vs the clean one.

    The memorization curve of noise papers: early on the network predicts the clean label; as it
    memorises, predictions move to the noisy label.
    """
    return {"fit_noisy_label": (predicted == noisy_labels).float().mean().item(),
            "fit_clean_label": (predicted == clean_labels).float().mean().item()}
