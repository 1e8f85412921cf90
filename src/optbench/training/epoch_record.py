"""An epoch's metric record: the training pass's results, then validation, test and noisy-label fit.

`epoch_record(run, epoch, progress, train_seconds)` returns the record metrics.jsonl gets (keys
`split/name`, accuracies as fractions), the first batch whose training loss was not finite (-1:
none) and the test pass's predicted classes (a CPU tensor, None without a test split: the loop keeps
those of the selected epoch for predictions.npz, with no extra test pass). Validation is scored against the labels
model selection sees (`val/acc`, `val/loss`); under
label noise with `noise.validation: noisy` those are noisy, and `val/acc_clean` scores the same
predictions against the true labels (the oracle). Noisy runs also record how the flipped training
images are fit: predicted as their given wrong label, or as the original one. For an optimizer with an
eval mode (Schedule-Free), BatchNorm's statistics are first re-estimated at the weights evaluated.

Evaluation is made cheap (a study's epoch is a third evaluation): a copy of the model with BatchNorm folded
into the convolutions (torch.fx's fuse; the training model is untouched), in the policy's memory format
and inference mode, at the device's evaluation batch size (`train.eval_batch_size: auto`). Folding changes
the logits in their last bits only: predictions equal the unfolded model's except where two classes' logits
tie within float tolerance (tests/test_epoch_record.py). With `train.test_every: improved` the test split is
evaluated only at epochs where validation accuracy improves and at the last one, so test accuracy at the
best validation epoch is unchanged. The record carries the evaluation's own time and rate (`eval/time_s`,
`eval/images`, `eval/images_per_s`). A language model's examples are character positions: its accuracy is
next-character accuracy, and its record adds bits per character (`val/bpc`, `test/bpc`).
"""

import logging
import math
import time

import torch
from torch.fx.experimental.optimization import fuse

from optbench.data.pipelines import eval_batches
from optbench.device.policy import eval_batch_size, out_of_memory_as_error, synchronise
from optbench.formats import metrics_log
from optbench.registry import datasets, workloads
from optbench.training.optim import has_modes
from optbench.training.steps import EpochProgress, evaluate, noisy_fit, recompute_batch_norm

# Training batches whose statistics BatchNorm gets at the evaluated weights of an optimizer with an eval
# mode: the schedulefree README's recipe (50 batches before each evaluation), un-augmented here.
BATCH_NORM_BATCHES = 50
log = logging.getLogger(__name__)


def epoch_record(
    run, epoch: int, progress: EpochProgress, train_seconds: float, best_so_far: dict | None = None
) -> tuple[dict, int, torch.Tensor | None]:
    """`best_so_far`: selection key (val/acc, and val/acc_clean under noise) -> its best value over the
    epochs before; test_every=improved tests only an epoch that beats one of them, and the last."""
    evaluation_start = time.perf_counter()
    if has_modes(run.optimizer) and has_batch_norm(run.model):
        _batch_norm_at_evaluated_weights(run)
    trained = progress.result()
    record = {
        metrics_log.EPOCH: epoch,
        metrics_log.LR: run.optimizer.param_groups[0]["lr"],
        metrics_log.TRAIN_LOSS: trained["loss"],
        metrics_log.TRAIN_ACC: trained["acc"],
        metrics_log.TRAIN_IMAGES: trained["images"],
        metrics_log.TRAIN_TIME_S: train_seconds,
        metrics_log.TRAIN_IMAGES_PER_S: trained["images"] / train_seconds,
    }
    model = evaluation_model(run)
    val_metrics, _ = _split_metrics(run, model, "val", run.splits.val, run.noisy_val_labels)
    record.update(val_metrics)
    evaluated = len(run.splits.val)
    test_predicted = None
    if wants_test(run.cfg, epoch, val_metrics, best_so_far or {}):
        test_metrics, test_predicted = _split_metrics(run, model, "test", run.splits.test)
        record.update(test_metrics)
        evaluated += len(run.splits.test)
    if run.noisy.num_noisy:
        record.update(_noisy_fit_metrics(run, model))
        evaluated += int(run.noisy.num_noisy)
    synchronise(run.device)
    evaluation_seconds = time.perf_counter() - evaluation_start
    record.update(
        {
            metrics_log.EVAL_TIME_S: evaluation_seconds,
            metrics_log.EVAL_IMAGES: evaluated,
            metrics_log.EVAL_IMAGES_PER_S: evaluated / evaluation_seconds if evaluation_seconds > 0 else float("nan"),
            metrics_log.TIME_S: train_seconds + evaluation_seconds,
        }
    )
    return record, trained["first_nonfinite_batch"], test_predicted


def wants_test(cfg, epoch: int, val_metrics: dict, best_so_far: dict) -> bool:
    """Every epoch, or (test_every=improved) where a selection metric (validation accuracy, and its clean
    oracle under noise) beats every earlier epoch, and the last. Without a validation split: every epoch."""
    selection = workloads.of_config(cfg).selection_metric
    if cfg.train.get("test_every", "epoch") == "epoch" or epoch == cfg.epochs or selection.key not in val_metrics:
        return True
    clean = workloads.Metric(metrics_log.VAL_ACC_CLEAN, True)
    return any(
        key not in best_so_far or metric.better(val_metrics[key], best_so_far[key])
        for metric in (selection, clean)
        if (key := metric.key) in val_metrics
    )


def evaluation_model(run) -> torch.nn.Module:
    """A copy of the model with BatchNorm folded into the convolutions, in the policy's memory format; the
    training model itself when it cannot be traced (a model torch.fx does not follow)."""
    run.model.eval()
    if not has_batch_norm(run.model):  # nothing to fold
        return run.step_model
    try:
        folded = fuse(run.model, inplace=False)
    except Exception as error:  # noqa: BLE001  tracing is an optimisation: evaluate unfolded rather than fail
        log.warning("evaluating without folding BatchNorm (torch.fx could not trace the model: %s)", error)
        return run.step_model
    return folded.to(memory_format=run.policy.memory_format)


def _split_metrics(run, model, split_name: str, image_set, noisy_labels=None) -> tuple[dict, torch.Tensor | None]:
    """`split/loss` and `split/acc` against the labels selection sees (`noisy_labels` when given, else the
    split's own); with noisy labels also `split/acc_clean` against the true ones. Also the predicted
    classes, on the CPU (None for an empty split)."""
    if not len(image_set):
        return {}, None
    labels = image_set.labels if noisy_labels is None else noisy_labels
    batches = eval_batches(image_set.images, labels, evaluation_batch(run), run.mean, run.std)
    with evaluation_memory_guard(run):
        metrics, predicted = evaluate(model, batches, run.policy)
    record = {f"{split_name}/{name}": value for name, value in metrics.items()}
    if datasets.describe(run.cfg.dataset.name).kind == datasets.TEXT:  # nats per character -> bits per character
        record[f"{split_name}/bpc"] = metrics["loss"] / math.log(2)
    if noisy_labels is not None:
        record[f"{split_name}/acc_clean"] = (predicted == image_set.labels).float().mean().item()
    return record, predicted.cpu()


def has_batch_norm(model: torch.nn.Module) -> bool:
    return any(isinstance(module, torch.nn.modules.batchnorm._BatchNorm) for module in model.modules())


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


def evaluation_batch(run) -> int:
    return eval_batch_size(run.cfg.train.eval_batch_size, run.device.type)


def evaluation_memory_guard(run):
    size = evaluation_batch(run)
    return out_of_memory_as_error(
        run.device,
        f"evaluating batches of train.eval_batch_size={size}",
        f"try train.eval_batch_size={max(1, size // 4)}",
    )


def _noisy_fit_metrics(run, model) -> dict:
    """Predict the flipped training images, un-augmented, and compare with noisy and clean labels."""
    index = run.noisy.is_noisy.nonzero().squeeze(1)
    train = run.splits.train
    batches = eval_batches(train.images, run.noisy.labels, evaluation_batch(run), run.mean, run.std, index)
    with evaluation_memory_guard(run):
        _, predicted = evaluate(model, batches, run.policy)
    fit = noisy_fit(predicted, run.noisy.labels[index], train.labels[index])
    return {f"noisy/{name}": value for name, value in fit.items()}
