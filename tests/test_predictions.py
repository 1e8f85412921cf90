"""predictions.npz: the format round-trips, is written atomically, and a training run's file holds the test
predictions of its validation-selected epoch (the accuracy summary.json reports), removed by a rerun."""

import numpy as np
import pytest

from optbench.errors import DamagedRunFile
from optbench.formats import predictions
from optbench.training.run import train

pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_format_round_trips_in_the_smallest_dtype(tmp_path):
    labels = np.arange(1000) % 10
    predicted = np.where(np.arange(1000) % 3 == 0, (labels + 1) % 10, labels)
    predictions.write(tmp_path / "p.npz", predicted, labels, epoch=7, num_classes=10)
    kept = predictions.read(tmp_path / "p.npz")
    assert kept.epoch == 7 and kept.predicted.dtype == np.uint8
    assert np.array_equal(kept.predicted, predicted) and np.array_equal(kept.labels, labels)
    assert kept.accuracy == pytest.approx(np.mean(predicted == labels))
    assert kept.labels_sha256 == predictions.labels_sha256(labels)
    assert (tmp_path / "p.npz").stat().st_size < 2000  # 1000 images in well under 2 KB
    many = np.arange(300) * 3  # class 897 of 1000 does not fit in uint8
    predictions.write(tmp_path / "many.npz", many, many, epoch=1, num_classes=1000)
    assert predictions.read(tmp_path / "many.npz").predicted.dtype == np.uint16
    assert np.array_equal(predictions.read(tmp_path / "many.npz").predicted, many)


def test_missing_reads_as_none_and_damaged_names_the_file_and_the_way_out(tmp_path):
    assert predictions.read(tmp_path / "none.npz") is None
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 torn")
    with pytest.raises(DamagedRunFile, match=r"bad.npz cannot be read.*delete it"):
        predictions.read(tmp_path / "bad.npz")
    with pytest.raises(ValueError):
        predictions.write(tmp_path / "odd.npz", np.zeros(3), np.zeros(4), epoch=1, num_classes=10)
    assert not (tmp_path / "odd.npz").exists()


def test_a_write_that_fails_half_way_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "predictions.npz"
    predictions.write(path, np.zeros(50), np.zeros(50), epoch=1, num_classes=10)
    before = path.read_bytes()

    def crash(handle, **arrays):
        handle.write(b"PK half an archive")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", crash)
    with pytest.raises(OSError, match="disk full"):
        predictions.write(path, np.ones(50), np.zeros(50), epoch=2, num_classes=10)
    assert path.read_bytes() == before and predictions.read(path).epoch == 1
    assert [item.name for item in tmp_path.iterdir()] == ["predictions.npz"]  # no temporary left behind


@pytest.mark.slow
def test_a_run_keeps_the_selected_epochs_test_predictions(tiny_config, tmp_path):
    run_dir = tmp_path / "run"
    summary = train(tiny_config("epochs=3"), run_dir)
    kept = predictions.read(run_dir / "predictions.npz")
    assert kept.epoch == summary["best"]["epoch"]
    assert len(kept.labels) == summary["dataset"]["num_test"] == 200
    assert kept.accuracy == pytest.approx(summary["best"]["test/acc"], abs=1e-6)
    again = train(tiny_config("epochs=1", "train.rerun=true"), run_dir)  # a fresh start: epoch 1's predictions
    assert predictions.read(run_dir / "predictions.npz").epoch == again["best"]["epoch"] == 1


@pytest.mark.slow
def test_the_selected_epoch_is_kept_when_a_later_epoch_is_worse(tiny_config, tmp_path, monkeypatch):
    """Force the selection onto epoch 1 (validation accuracy falls afterwards): the file stays epoch 1's."""
    from optbench.training.epoch_record import epoch_record as real

    def falling_validation(run, epoch, progress, seconds, best_so_far=None):
        record, first_nonfinite, predicted = real(run, epoch, progress, seconds, best_so_far)
        record["val/acc"] = 1.0 / epoch
        return record, first_nonfinite, predicted

    monkeypatch.setattr("optbench.training.loop.epoch_record", falling_validation)
    summary = train(tiny_config("epochs=3"), tmp_path / "run")
    kept = predictions.read(tmp_path / "run" / "predictions.npz")
    assert summary["best"]["epoch"] == kept.epoch == 1
    assert kept.accuracy == pytest.approx(summary["best"]["test/acc"], abs=1e-6)
