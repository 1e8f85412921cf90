"""A training step made cheap without changing a number: train_step against the formulation it replaced (every
micro-batch chunked, its loss times its share, the grad scaler always called), EpochProgress's reduction
against the running device sums it replaced (float32, in step order, the first non-finite batch), across a
mid-epoch checkpoint too, and float sequences normalised once against per batch; docs/benchmarks.md's before/after
table is benchmarks/step_overhead.py's."""

import json
import math

import pytest
import torch
from torch import nn

from optbench.data.pipelines import DevicePipeline, channel_tensor, train_batches
from optbench.device.policy import DeviceFacts, decide_policy
from optbench.training.steps import EpochProgress, train_step

pytestmark = pytest.mark.usefixtures("one_thread")
CPU_POLICY = decide_policy(DeviceFacts("cpu", bf16_supported=True, cpu_count=2), {"channels_last": False})


def replaced_train_step(model, images, labels, optimizer, policy, scaler, grad_accum=1):
    """train_step as it was before the per-step ops were cut (commit 5bbe20d4)."""
    optimizer.zero_grad(set_to_none=True)
    loss_sum = correct = None
    for micro_images, micro_labels in zip(images.chunk(grad_accum), labels.chunk(grad_accum)):
        targets = micro_labels.reshape(-1)
        with policy.autocast():
            logits = model(micro_images)
            loss = nn.functional.cross_entropy(logits, targets)
        scaler.scale(loss * (targets.numel() / labels.numel())).backward()
        micro_loss_sum = loss.detach().float() * targets.numel()
        micro_correct = (logits.detach().argmax(1) == targets).sum()
        loss_sum = micro_loss_sum if loss_sum is None else loss_sum + micro_loss_sum
        correct = micro_correct if correct is None else correct + micro_correct
    scaler.step(optimizer)
    scaler.update()
    return loss_sum, correct


def trained(step, grad_accum: int) -> tuple[list, list[torch.Tensor]]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(40, 16), nn.ReLU(), nn.Linear(16, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
    scaler = CPU_POLICY.grad_scaler_for_run()
    generator = torch.Generator().manual_seed(1)
    results = []
    for _ in range(6):
        images, labels = torch.randn(23, 1, 40, generator=generator), torch.randint(0, 10, (23,), generator=generator)
        loss_sum, correct = step(model, images, labels, optimizer, CPU_POLICY, scaler, grad_accum)
        results.append((loss_sum.item(), correct.item()))
    return results, [parameter.detach().clone() for parameter in model.parameters()]


@pytest.mark.parametrize("grad_accum", [1, 4])  # 4: micro-batches of 6, 6, 6 and 5, shares other than 1
def test_train_step_gives_the_replaced_formulations_numbers_bit_for_bit(grad_accum):
    (results, weights), (replaced_results, replaced_weights) = (
        trained(step, grad_accum) for step in (train_step, replaced_train_step)
    )
    assert results == replaced_results
    assert all(torch.equal(new, old) for new, old in zip(weights, replaced_weights))


def losses_summing_differently() -> list[float]:
    """Loss sums whose float32 sum in order differs from a pairwise or float64 one: small values after a large one
    are each lost to rounding one at a time, not when summed together."""
    return [3.0e7, *[0.75 + index / 64 for index in range(40)], 2.5e3, *[1.25] * 20]


def running_device_sum(values: list[float]) -> torch.Tensor:
    """What EpochProgress kept before: a float32 tensor, the next batch's loss sum added at each step."""
    total = torch.tensor(values[0], dtype=torch.float32)
    for value in values[1:]:
        total = total + torch.tensor(value, dtype=torch.float32)
    return total


def progress_over(values: list[float], resumed_at: int | None = None) -> EpochProgress:
    """An epoch's progress over batches of 100 with these loss sums (correct count = index), stopped after
    `resumed_at` batches and continued from its checkpoint's totals when given."""
    progress = EpochProgress()
    for index, value in enumerate(values):
        if index == resumed_at:
            progress = EpochProgress(progress.batches_done, progress.images, *progress.totals())
        progress.add(torch.tensor(value, dtype=torch.float32), torch.tensor(index), 100)
    return progress


@pytest.mark.parametrize("resumed_at", [None, 1, 30, 61])
def test_the_epoch_loss_is_the_running_float32_sum_bit_for_bit_across_a_resume(resumed_at):
    values = losses_summing_differently()
    result = progress_over(values, resumed_at).result()
    assert result["loss"] == running_device_sum(values).item() / (100 * len(values))
    assert result["loss"] != math.fsum(values) / (100 * len(values))  # the order of the additions shows
    assert result["acc"] == sum(range(len(values))) / (100 * len(values))
    assert result["images"] == 100 * len(values) and result["first_nonfinite_batch"] == -1


@pytest.mark.parametrize("resumed_at", [None, 3, 5, 6, 8])
def test_the_first_nonfinite_batch_is_named_across_a_resume(resumed_at):
    values = [2.0, 2.0, 2.0, 2.0, 2.0, math.inf, 2.0, math.nan, 2.0, 2.0]
    result = progress_over(values, resumed_at).result()
    assert result["first_nonfinite_batch"] == 5 and math.isnan(result["loss"])


def test_finite_losses_name_no_batch_and_the_checkpoint_keeps_the_dtypes():
    loss_sum, correct, first = progress_over([1.0, 2.0, 4.0]).totals()
    assert (loss_sum.item(), correct.item(), first.item()) == (7.0, 3, -1)
    assert (loss_sum.dtype, correct.dtype, first.dtype) == (torch.float32, torch.int64, torch.int64)
    with pytest.raises(ValueError, match="no batch"):
        EpochProgress().result()


def test_float_sequences_normalised_once_give_the_per_batch_numbers():
    generator = torch.Generator().manual_seed(3)
    sequences = torch.randn(250, 1, 40, generator=generator) * 3 + 1
    labels = torch.randint(0, 10, (250,), generator=generator)
    mean, std = channel_tensor([0.7], torch.device("cpu"), 3), channel_tensor([2.9], torch.device("cpu"), 3)
    pipeline = DevicePipeline(sequences, labels, 32, 5, mean, std, augment=False)
    per_batch = train_batches(sequences, labels, 32, 5, 2, mean, std, augment=False)
    pairs = list(zip(pipeline.epoch(2), per_batch, strict=True))
    assert len(pairs) == 7
    assert all(torch.equal(once[0], batch[0]) and torch.equal(once[1], batch[1]) for once, batch in pairs)
    assert not torch.equal(pairs[0][0][0], sequences[:32])  # normalised, not the raw values


def test_the_step_overhead_in_the_docs_is_the_benchmark_s():
    """docs/benchmarks.md's before/after table is benchmarks/step_overhead.py's, written from its JSON
    (`--from-json benchmarks/results/step-overhead.json --docs` rewrites it), never typed."""
    from test_fidelity import script_module

    overhead = script_module("benchmarks/step_overhead.py")
    figures = json.loads((overhead.REPO / "benchmarks" / "results" / "step-overhead.json").read_text())
    current = overhead.DOC.read_text()
    assert current == overhead.with_block(current, overhead.docs_text(figures)), (
        "stale: run python benchmarks/step_overhead.py --from-json benchmarks/results/step-overhead.json --docs"
    )
    for pair in figures["pairs"]:  # what the harness adds is its step's time less the bare step's
        for side in pair.values():
            for step in side["overhead"].values():
                assert step["adds_us"] == pytest.approx(step["harness_us"] - step["bare_us"])
