"""The durable mirror (paths.mirror_dir): copies out while training, survives a failing mirror, restores a
lost local directory and resumes it to an uninterrupted run's numbers, refuses a mirror of another experiment."""

import errno
import json
import logging
import shutil

import pytest
import torch
from conftest import compose_config
from test_resume import RESUME_RUN, interrupt_after, read_metrics, without_timings

from optbench.config.validation import validate
from optbench.errors import ConfigError, RunInterrupted
from optbench.training import mirror
from optbench.training.run import train

pytestmark = pytest.mark.usefixtures("one_thread")


def config(tmp_path, *extra, mirror_dir="mirror"):
    with_mirror = [f"paths.mirror_dir={tmp_path / mirror_dir}"] if mirror_dir else []
    return compose_config(
        [
            *RESUME_RUN,
            "optimizer=lion",
            f"paths.results_dir={tmp_path / 'results'}",
            f"paths.data_dir={tmp_path / 'data'}",
            "train.mirror_every_s=0",
            *with_mirror,
            *extra,
        ]
    )


def files(folder):
    return {
        path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()
    }


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("reference")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the tests that compare with it; restored, or later tests on this worker run on one
    try:
        train(config(tmp_path, mirror_dir=None), tmp_path / "results" / "run")
    finally:
        torch.set_num_threads(threads)
    return read_metrics(tmp_path / "results" / "run")


def failing_copies(monkeypatch, failing_epochs: set[int]):
    """Copies to the mirror raise ENOSPC while the loop is in one of `failing_epochs` (a full or dropped disk)."""
    real_copy, real_after_epoch, current = mirror.copy_atomically, mirror.Mirror.after_epoch, {"epoch": 0}

    def copy(source, target):
        if current["epoch"] in failing_epochs and "mirror" in target.parts:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_copy(source, target)

    def after_epoch(self, epoch, summary):
        current["epoch"] = epoch
        real_after_epoch(self, epoch, summary)
        if self.thread is not None:
            self.thread.join()  # the test decides when the disk is full: let the background copy finish in it
            self._collect_checkpoint_copy()

    def finish(self, summary, real_finish=mirror.Mirror.finish):
        current["epoch"] = "end"
        real_finish(self, summary)

    monkeypatch.setattr(mirror, "copy_atomically", copy)
    monkeypatch.setattr(mirror.Mirror, "after_epoch", after_epoch)
    monkeypatch.setattr(mirror.Mirror, "finish", finish)


@pytest.mark.slow
def test_every_file_is_mirrored_after_the_run(tmp_path):
    summary = train(config(tmp_path), tmp_path / "results" / "noisy" / "run")
    local, mirrored = tmp_path / "results" / "noisy" / "run", tmp_path / "mirror" / "noisy" / "run"
    assert summary["mirror"] == {
        "dir": str(mirrored),
        "last_epoch_mirrored": 3,
        "checkpoint_epoch": 3,
        "errors": 0,
        "last_error": None,
    }
    assert files(mirrored) == {name: data for name, data in files(local).items() if name != ".lock"}
    assert "predictions.npz" in files(mirrored)
    assert not [path for path in mirrored.rglob(".*tmp*")]  # no temporary copies left behind


@pytest.mark.slow
def test_a_mirror_failing_mid_run_never_fails_it_and_catches_up_when_writable_again(
    tmp_path, monkeypatch, caplog, uninterrupted
):
    failing_copies(monkeypatch, failing_epochs={2})
    with caplog.at_level(logging.WARNING, logger="optbench.training.mirror"):
        summary = train(config(tmp_path), tmp_path / "results" / "run")
    assert summary["status"] == "completed"
    assert without_timings(read_metrics(tmp_path / "results" / "run")) == without_timings(uninterrupted)
    assert summary["mirror"]["errors"] == 2 and "No space left" in summary["mirror"]["last_error"]  # checkpoint + files
    assert summary["mirror"]["last_epoch_mirrored"] == 3 and summary["mirror"]["checkpoint_epoch"] == 3
    assert len([record for record in caplog.records if "could not copy" in record.message]) == 1  # once per kind
    local, mirrored = tmp_path / "results" / "run", tmp_path / "mirror" / "run"
    assert files(mirrored) == {name: data for name, data in files(local).items() if name != ".lock"}


@pytest.mark.slow
def test_a_mirror_that_stays_unwritable_is_reported_in_the_summary(tmp_path, monkeypatch):
    failing_copies(monkeypatch, failing_epochs={2, 3, "end"})
    summary = train(config(tmp_path), tmp_path / "results" / "run")
    on_disk = json.loads((tmp_path / "results" / "run" / "summary.json").read_text())
    assert summary["status"] == on_disk["status"] == "completed"
    assert on_disk["mirror"]["last_epoch_mirrored"] == 1 and on_disk["mirror"]["checkpoint_epoch"] == 1
    assert on_disk["mirror"]["errors"] >= 3 and "OSError" in on_disk["mirror"]["last_error"]
    mirrored = json.loads((tmp_path / "mirror" / "run" / "summary.json").read_text())
    assert mirrored["epochs_done"] == 1  # the mirror still holds a consistent epoch-1 copy


@pytest.mark.slow
def test_a_lost_local_directory_is_restored_and_resumes_to_the_uninterrupted_numbers(
    tmp_path, monkeypatch, uninterrupted
):
    local = tmp_path / "results" / "run"
    with monkeypatch.context() as patch:
        interrupt_after(patch, 17)  # SIGTERM in the middle of epoch 2: the mirror gets the checkpoint on the way out
        with pytest.raises(RunInterrupted):
            train(config(tmp_path), local)
    shutil.rmtree(local)  # a new Colab VM, another node
    resumed = train(config(tmp_path), local)
    assert resumed["status"] == "completed" and resumed["resumes"] == 1
    assert without_timings(read_metrics(local)) == without_timings(uninterrupted)
    assert read_metrics(tmp_path / "mirror" / "run") == read_metrics(local)


def test_a_local_directory_behind_the_mirror_is_restored_then_skipped_when_finished(tmp_path):
    local = tmp_path / "results" / "run"
    train(config(tmp_path, "epochs=1"), local)
    (local / "checkpoint.pt").unlink()  # an older local copy: no checkpoint, no epoch done
    summary = json.loads((local / "summary.json").read_text())
    (local / "summary.json").write_text(json.dumps({**summary, "epochs_done": 0, "status": "running"}))
    skipped = train(config(tmp_path, "epochs=1"), local)
    assert skipped["status"] == "completed" and skipped["epochs_done"] == 1
    assert (local / "checkpoint.pt").read_bytes() == (tmp_path / "mirror" / "run" / "checkpoint.pt").read_bytes()


def test_restore_is_refused_when_the_mirror_holds_another_experiment(tmp_path, capsys):
    train(config(tmp_path, "epochs=1"), tmp_path / "results" / "run")
    mirrored = files(tmp_path / "mirror")
    other = tmp_path / "other"
    with pytest.raises(ConfigError, match="holds another experiment.*seed"):
        train(
            compose_config(
                [
                    *RESUME_RUN,
                    "optimizer=lion",
                    "epochs=1",
                    "seed=1",
                    f"paths.results_dir={other / 'results'}",
                    f"paths.data_dir={tmp_path / 'data'}",
                    f"paths.mirror_dir={tmp_path / 'mirror'}",
                ]
            ),
            other / "results" / "run",
        )
    assert files(tmp_path / "mirror") == mirrored and not (other / "results" / "run").exists()


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.mirror_every_s=-1", "train.mirror_every_s=-1"),
        ("train.mirror_every_s=often", "train.mirror_every_s=often"),
        ("paths.mirror_dir=RESULTS", "another folder than paths.results_dir"),
    ],
)
def test_bad_mirror_settings_are_one_line_errors(tmp_path, override, message):
    cfg = config(tmp_path, override.replace("RESULTS", str(tmp_path / "results")), mirror_dir=None)
    with pytest.raises(ConfigError, match=message) as refused:
        validate(cfg)
    assert "\n" not in str(refused.value)


def test_the_mirror_path_is_relative_to_the_results_folder(tmp_path):
    assert mirror.mirror_path("/m", tmp_path / "r" / "a" / "seed0", tmp_path / "r") == mirror.Path("/m/a/seed0")
    assert mirror.mirror_path("/m", tmp_path / "elsewhere" / "seed0", tmp_path / "r") == mirror.Path("/m/seed0")
