"""Evaluation made cheap without changing the answer: BatchNorm folded into a copy (predictions equal the
unfolded model's except where logits tie within float tolerance), the device's batch size, evaluation
time recorded apart, and test_every=improved keeping test accuracy at the best validation epoch."""

import json

import pytest
import torch
from torch.fx.experimental.optimization import fuse

from optbench.device.policy import EVAL_BATCH_SIZES, eval_batch_size
from optbench.training.models import build_model


def test_folded_batch_norm_predicts_as_the_unfolded_model_except_on_ties(one_thread):
    torch.manual_seed(0)
    model = build_model("resnet18", num_classes=10, width=8)
    for module in model.modules():  # BatchNorm statistics far from their initial 0 / 1, so folding matters
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-1, 1)
            module.running_var.uniform_(0.5, 2)
            module.weight.data.uniform_(0.5, 1.5)
    model.eval()
    folded = fuse(model, inplace=False)
    images = torch.randn(512, 3, 32, 32)
    with torch.inference_mode():
        logits, folded_logits = model(images), folded(images)
    top2 = logits.topk(2, dim=1).values
    ties = (top2[:, 0] - top2[:, 1]).abs() <= 1e-4 * top2[:, 0].abs().clamp(min=1)
    differ = logits.argmax(1) != folded_logits.argmax(1)
    assert not (differ & ~ties).any()
    assert torch.allclose(logits, folded_logits, rtol=1e-3, atol=1e-4)
    assert any(isinstance(module, torch.nn.BatchNorm2d) for module in model.modules())  # the model is untouched


def test_the_evaluation_batch_is_the_devices_under_auto():
    assert eval_batch_size("auto", "cpu") == EVAL_BATCH_SIZES["cpu"] == 256
    assert eval_batch_size("auto", "cuda") == 1024 and eval_batch_size(64, "cuda") == 64


def metrics_of(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("test_every", ["epoch", "improved"])
def test_test_every_improved_tests_where_validation_improves_and_keeps_the_headline(
    tiny_config, tmp_path, test_every, one_thread
):
    from optbench.training.run import train

    run_dir = tmp_path / test_every
    summary = train(tiny_config("epochs=4", "optimizer=sgd", f"train.test_every={test_every}"), run_dir)
    records = metrics_of(run_dir)
    assert all(record["eval/time_s"] > 0 and record["eval/images"] >= 100 for record in records)
    assert all(
        record["eval/images_per_s"] == pytest.approx(record["eval/images"] / record["eval/time_s"])
        for record in records
    )
    best_so_far, tested = float("-inf"), []
    for record in records:
        tested.append("test/acc" in record)
        if test_every == "improved":
            assert tested[-1] == (record["val/acc"] > best_so_far or record["epoch"] == 4)
        best_so_far = max(best_so_far, record["val/acc"])
    if test_every == "epoch":
        assert all(tested)
    assert "test/acc" in summary["best"] and "test/acc" in summary["final"]
    reference = json.loads((run_dir / "summary.json").read_text())["best"]
    if test_every == "improved":  # the same seed tested every epoch gives the same headline number
        every = train(tiny_config("epochs=4", "optimizer=sgd", "train.test_every=epoch"), tmp_path / "every")
        assert every["best"]["test/acc"] == reference["test/acc"] and every["best"]["epoch"] == reference["epoch"]


def test_a_bad_test_every_is_one_line(tiny_config):
    from optbench.config.validation import validate
    from optbench.errors import ConfigError

    with pytest.raises(ConfigError, match="train.test_every=sometimes: choose epoch or improved"):
        validate(tiny_config("train.test_every=sometimes"))


def test_the_training_clock_waits_for_the_device(tiny_config, tmp_path, monkeypatch, one_thread):
    """On CUDA and MPS kernels run asynchronously: the training and evaluation times are read only after
    the device finished (device.policy.synchronise), once per training pass and once per evaluation."""
    from optbench.training import epoch_record, loop
    from optbench.training.run import train

    calls = []
    monkeypatch.setattr(loop, "synchronise", lambda device: calls.append(("train", device.type)))
    monkeypatch.setattr(epoch_record, "synchronise", lambda device: calls.append(("eval", device.type)))
    train(tiny_config("epochs=2"), tmp_path / "run")
    assert calls == [("train", "cpu"), ("eval", "cpu")] * 2
