"""An epoch's metric record: the training pass's results, then validation, test and noisy-label fit.

`epoch_record(run, epoch, progress, train_seconds)` returns the record metrics.jsonl gets (keys
`split/name`, accuracies as fractions), the first batch whose training loss was not finite (-1:
none) and the test pass's predicted classes (a CPU tensor, None without a test split: the loop keeps
those of the selected epoch for predictions.npz, with no extra test pass). Validation is scored against the labels model selection sees (`val/acc`, `val/loss`); under
label noise with `noise.validation: noisy` those are noisy, and `val/acc_clean` scores the same
predictions against the true labels (the oracle). Noisy runs also record how the flipped training
images are fit: predicted as their given wrong label, or as the original one. For an optimizer with an
eval mode (Schedule-Free), BatchNorm's statistics are first re-estimated at the weights evaluated.
"""

import time

import torch

from optbench.device.policy import out_of_memory_as_error
from optbench.data.pipelines import eval_batches
from optbench.training.optim import has_modes
from optbench.training.steps import EpochProgress, evaluate, noisy_fit, recompute_batch_norm


# Training batches whose statistics BatchNorm gets at the evaluated weights of an optimizer with an eval
# mode: the schedulefree README's recipe (50 batches before each evaluation), un-augmented here.
BATCH_NORM_BATCHES = 50


def epoch_record(run, epoch: int, progress: EpochProgress, train_seconds: float) -> tuple[dict, int, torch.Tensor | None]:
    evaluation_start = time.perf_counter()
    if has_modes(run.optimizer):
        _batch_norm_at_evaluated_weights(run)
    trained = progress.result()
    record = {"epoch": epoch, "lr": run.optimizer.param_groups[0]["lr"],
              "train/loss": trained["loss"], "train/acc": trained["acc"],
              "train/images": trained["images"], "train/time_s": train_seconds,
              "train/images_per_s": trained["images"] / train_seconds}
    record.update(_split_metrics(run, "val", run.splits.val, run.noisy_val_labels)[0])
    test_metrics, test_predicted = _split_metrics(run, "test", run.splits.test)
    record.update(test_metrics)
    if run.noisy.num_noisy:
        record.update(_noisy_fit_metrics(run))
    record["time_s"] = train_seconds + time.perf_counter() - evaluation_start
    return record, trained["first_nonfinite_batch"], test_predicted


def _split_metrics(run, split_name: str, image_set, noisy_labels=None) -> tuple[dict, torch.Tensor | None]:
    """`split/loss` and `split/acc` against the labels selection sees (`noisy_labels` when given, else the
    split's own); with noisy labels also `split/acc_clean` against the true ones. Also the predicted
    classes, on the CPU (None for an empty split)."""
    if not len(image_set):
        return {}, None
    labels = image_set.labels if noisy_labels is None else noisy_labels
    batches = eval_batches(image_set.images, labels, run.cfg.train.eval_batch_size, run.mean, run.std)
    with evaluation_memory_guard(run):
        metrics, predicted = evaluate(run.step_model, batches, run.policy)
    record = {f"{split_name}/{name}": value for name, value in metrics.items()}
    if noisy_labels is not None:
        record[f"{split_name}/acc_clean"] = (predicted == image_set.labels).float().mean().item()
    return record, predicted.cpu()


def _batch_norm_at_evaluated_weights(run) -> None:
    """Schedule-Free evaluates its averaged weights, but BatchNorm's running statistics were gathered at the
    weights it trained at: re-estimate them at the evaluated ones, on a fixed spread of training images
    (the same every epoch and every session, drawing no random numbers, so resumed runs stay exact)."""
    train = run.splits.train
    count = min(len(train), BATCH_NORM_BATCHES * run.cfg.batch_size)
    spread = torch.randperm(len(train), generator=torch.Generator().manual_seed(0))[:count].to(run.device)
    batches = eval_batches(train.images, run.noisy.labels, run.cfg.batch_size, run.mean, run.std, spread)
    with evaluation_memory_guard(run):
        recompute_batch_norm(run.step_model, batches, run.policy)


def evaluation_memory_guard(run):
    size = run.cfg.train.eval_batch_size
    return out_of_memory_as_error(run.device, f"evaluating batches of train.eval_batch_size={size}",
                                  f"try train.eval_batch_size={max(1, size // 4)}")


def _noisy_fit_metrics(run) -> dict:
    """Predict the flipped training images, un-augmented, and compare with noisy and clean labels."""
    index = run.noisy.is_noisy.nonzero().squeeze(1)
    train = run.splits.train
    batches = eval_batches(train.images, run.noisy.labels, run.cfg.train.eval_batch_size, run.mean, run.std, index)
    with evaluation_memory_guard(run):
        _, predicted = evaluate(run.step_model, batches, run.policy)
    fit = noisy_fit(predicted, run.noisy.labels[index], train.labels[index])
    return {f"noisy/{name}": value for name, value in fit.items()}
