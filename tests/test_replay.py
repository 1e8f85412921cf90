"""`python src/replay.py RUN_DIR`: a run trained here replays bit-identical (exit 0) under its recorded thread count
and without its trackers, into a scratch folder, never into the run; a recorded number that is not the computed
one is found with its size and epoch (exit 1); a published run replays from scratch and names what differs in the
environment; bad input is one `error:` line, exit 2, nothing written."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
import torch
from conftest import REPO, TINY, compose_config

from optbench.training.run import train

sys.path.insert(0, str(REPO / "src"))
import replay as replay_command

PUBLISHED = REPO / "docs" / "fidelity-study" / "runs" / "imagefolder-cifar10-jpeg-3bcb403b" / "none-0.0"


def snapshot(folder):
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny two-epoch run trained with 1 thread (while torch's own count here is 2) and a CSV tracker on."""
    folder = tmp_path_factory.mktemp("trained")
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        cfg = compose_config(
            [*TINY, "epochs=2", "logger=csv", "device_policy.threads=1", f"paths.data_dir={folder / 'data'}"]
        )
        train(cfg, folder / "run")
    finally:
        torch.set_num_threads(threads)
    return folder


@pytest.fixture
def run_copy(trained, tmp_path):
    """A copy of the trained run (and its data folder), so a test can damage it."""
    shutil.copytree(trained / "run", tmp_path / "run")
    return tmp_path / "run"


def replayed(capsys, *argv) -> tuple[int, str]:
    status = replay_command.main([str(part) for part in argv])
    return status, capsys.readouterr().out


@pytest.mark.slow
def test_a_run_trained_here_replays_bit_identical_with_its_threads_and_without_its_trackers(trained, tmp_path, capsys):
    before = snapshot(trained / "run")
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # the replaying process's own count: the recorded 1 is used
    try:
        status, out = replayed(capsys, trained / "run", "--out", tmp_path / "replay", "--data-dir", trained / "data")
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    assert status == 0, out
    assert "threads=1" in out.splitlines()[0]
    assert "bit-identical: all 18 compared numbers of epochs 1-2 equal the record's" in out
    assert "compared, epoch by epoch: lr, train/loss, train/acc, train/images, val/loss, val/acc" in out
    assert "not compared (wall-clock timings" in out and "train/images_per_s" in out.split("not compared")[1]
    assert "environment: the same processor kind, threads, device, precision, versions and code" in out
    assert snapshot(trained / "run") == before  # the original is only read
    kept = tmp_path / "replay" / "run"
    assert (kept / "metrics.jsonl").is_file() and not (kept / "csv").exists()  # no tracker
    assert json.loads((kept / "summary.json").read_text())["environment"]["threads"] == 1


@pytest.mark.slow
def test_the_first_epochs_only_and_the_scratch_folder_goes(trained, capsys, monkeypatch, tmp_path):
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where the scratch folder is made
    status, out = replayed(capsys, trained / "run", "--epochs", "1", "--data-dir", trained / "data")
    assert status == 0 and "epochs 1-1 of 2" in out and "all 9 compared numbers of epochs 1-1" in out
    assert "into a scratch folder removed afterwards" in out and not any((tmp_path / "tmp").iterdir())


@pytest.mark.slow
def test_a_recorded_number_that_is_not_the_computed_one_is_named_with_its_size_and_epoch(run_copy, trained, capsys):
    lines = (run_copy / "metrics.jsonl").read_text().splitlines()
    second = json.loads(lines[1])
    second["test/acc"] += 0.0125
    lines[1] = json.dumps(second)
    (run_copy / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    status, out = replayed(capsys, run_copy, "--data-dir", trained / "data")
    assert status == 1
    rows = [line.split() for line in out.splitlines()]
    assert "different: the largest |replay - record| per metric over epochs 1-2" in out
    (row,) = [row for row in rows if row and row[0] == "test/acc"]
    assert float(row[1]) == pytest.approx(0.0125, abs=1e-9) and row[2:] == ["2", "2"]
    assert "identical: lr, train/loss" in out


@pytest.mark.slow
@pytest.mark.extended
def test_a_published_run_replays_one_epoch_from_scratch_and_names_what_differs(real_cifar10_root, monkeypatch, capsys):
    """The published ladder's runs were trained before the environment was recorded: the processor and the
    threads are named as unknown, with this machine's beside them; the record's relative data root resolves
    from the checkout's root, as it did where it was trained."""
    run = next((PUBLISHED / "adam").glob("*epochs=2,*/seed0"))
    before = snapshot(run)
    monkeypatch.chdir(REPO)  # where ../shared/data/cifar10-jpeg is the real one
    data_dir = os.environ["OPTBENCH_TEST_DATA_DIR"]
    status, out = replayed(capsys, run, "--epochs", "1", "--data-dir", data_dir)
    assert status in (0, 1)
    assert "epochs 1-1 of 2" in out and ("bit-identical" in out) == (status == 0)
    processor = next(line.split() for line in out.splitlines() if line.startswith("processor"))
    assert processor[1] == "unknown" and processor[2] != "unknown"
    assert snapshot(run) == before


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "{tmp}/missing: no such directory"),
        ("not a run", "{tmp}/empty: not a run directory (no record.json)"),
        ("damaged record", "{run}/record.json is damaged"),
        ("damaged summary", "{run}/summary.json is damaged"),
        ("no epoch", "the run has no finished epoch to compare with"),
        ("too many epochs", "--epochs 3: the run recorded 2 epoch(s): give 1 to 2"),
        ("no epochs", "--epochs 0: the run recorded 2 epoch(s)"),
        ("out in the run", "--out {run}/replay: inside the run being replayed"),
        ("out not empty", "--out {tmp}/full: not an empty folder"),
        ("data root elsewhere", "dataset.root nowhere/images is not a folder from here"),
        ("other data", "are not the data the run trained on"),
        ("flag", "unrecognized arguments: --seed"),
    ],
)
def test_bad_input_is_one_error_line_exit_2_and_writes_nothing(run_copy, tmp_path, capsys, case, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    run, data = run_copy, ["--data-dir", tmp_path / "data"]
    if case == "damaged record":
        (run / "record.json").write_text('{"format": 1, "run_')
    if case == "damaged summary":
        (run / "summary.json").write_text('{"status": "compl')
    if case == "no epoch":
        (run / "metrics.jsonl").write_text("")
    if case == "data root elsewhere":
        record = json.loads((run / "record.json").read_text())
        record["config"]["dataset"]["root"] = "nowhere/images"
        (run / "record.json").write_text(json.dumps(record))
    if case == "other data":
        record = json.loads((run / "record.json").read_text())
        record["identity"]["data"] = "0" * 16
        (run / "record.json").write_text(json.dumps(record))
    argv = {
        "missing": [tmp_path / "missing"],
        "not a run": [tmp_path / "empty"],
        "too many epochs": [run, "--epochs", "3"],
        "no epochs": [run, "--epochs", "0"],
        "out in the run": [run, "--out", run / "replay"],
        "out not empty": [run, "--out", tmp_path / "full"],
        "flag": [run, "--seed", "1"],
    }.get(case, [run])
    before = snapshot(tmp_path)
    status = replay_command.main([str(part) for part in [*argv, *data]])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert message.format(tmp=tmp_path, run=run) in err
    assert snapshot(tmp_path) == before and not (tmp_path / "data").exists()


def test_the_command_line_help_says_where_relative_paths_are_resolved_from():
    done = subprocess.run(
        [sys.executable, str(REPO / "src" / "replay.py"), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "resolved from the working directory" in " ".join(done.stdout.split())


def test_the_reproducibility_figures_in_docs_are_the_benchmarks():
    """docs/runs.md quotes benchmarks/thread_reproducibility.py's JSON, not numbers copied by hand."""
    figures = json.loads((REPO / "benchmarks" / "results" / "thread-reproducibility.json").read_text())
    text = " ".join((REPO / "docs" / "runs.md").read_text().split())
    accuracy = figures["test_acc"]
    assert f"ends at {100 * accuracy['1']:.2f} % and {100 * accuracy['2']:.2f} % test accuracy" in text
    gap = figures["threads_1_vs_2"]["differences"]["test/acc"]
    assert gap["at_epoch"] == 1 and f"{100 * gap['largest']:.2f} points apart after its first epoch" in text
    assert (
        figures["replay_of_1_thread_run"]["identical"] and "replayed from a 2-thread process is bit-identical" in text
    )
    assert f"`{figures['command']}`" in text  # the command beside the figures


# ---- telling the truth about old runs (issue 56, item 5 and fault 3) ------------------------------------------


def test_a_key_one_side_lacks_is_named_as_missing_not_a_difference_of_inf():
    from optbench.reproducibility import epoch_differences

    recorded = [{"epoch": 1, "train/loss": 2.0, "test/acc": 0.5}]  # an older run: no eval/images
    replayed_records = [{"epoch": 1, "train/loss": 2.0, "test/acc": 0.5, "eval/images": 200.0}]
    comparison = epoch_differences(recorded, replayed_records)
    assert comparison.identical and comparison.differences == []
    assert comparison.compared == ["train/loss", "test/acc"] and comparison.numbers == 2
    assert comparison.missing_from_first == ["eval/images"] and comparison.missing_from_second == []
    backwards = epoch_differences(replayed_records, recorded)
    assert backwards.missing_from_second == ["eval/images"] and backwards.identical
    # a null the run wrote (a non-finite loss) is a value, not a missing key: still a difference
    assert not epoch_differences([{"epoch": 1, "train/loss": None}], [{"epoch": 1, "train/loss": 2.0}]).identical


def without_key(run, key: str) -> None:
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    kept = [{name: value for name, value in line.items() if name != key} for line in lines]
    (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in kept))


@pytest.mark.slow
def test_identical_numbers_with_a_key_the_old_record_lacks_exit_0_and_name_it(run_copy, trained, capsys):
    without_key(run_copy, "eval/images")  # as runs recorded before eval/images existed
    status, out = replayed(capsys, run_copy, "--data-dir", trained / "data")
    assert status == 0, out
    assert "bit-identical: all 16 compared numbers of epochs 1-2 equal the record's" in out
    assert "not in the record, so not compared: eval/images (written by a version before it was recorded)" in out
    assert "inf" not in out and "different" not in out


@pytest.mark.slow
def test_an_epochs_cut_is_called_a_cut_not_interrupted(trained, capsys, caplog):
    caplog.set_level("INFO")
    status, out = replayed(capsys, trained / "run", "--epochs", "1", "--data-dir", trained / "data")
    assert status == 0, out
    ending = [record.getMessage() for record in caplog.records if "best-validation" in record.getMessage()]
    assert ending and ending[-1].startswith("cut after epoch 1 of 2, as --epochs 1 asked: "), ending
    assert not any(record.getMessage().startswith("interrupted") for record in caplog.records)


@pytest.mark.slow
def test_a_torn_first_metrics_line_is_named_and_the_readable_epochs_are_compared(run_copy, trained, capsys):
    """Fault 3: only epoch 2 is readable; the replay retrained epoch 1 alone, nothing paired, and it ended in
    `IndexError: list index out of range`. It trains to the last readable epoch and compares what both hold."""
    lines = (run_copy / "metrics.jsonl").read_text().splitlines()
    (run_copy / "metrics.jsonl").write_text(lines[0][:25] + "\n" + lines[1] + "\n")
    status, out = replayed(capsys, run_copy, "--data-dir", trained / "data")
    assert status == 0, out
    assert "epochs 1-2 of 2" in out.splitlines()[0]
    assert f"{run_copy}/metrics.jsonl line 1 is not readable: epoch 1 not compared" in out
    assert "bit-identical: all 9 compared numbers of epochs 2-2 equal the record's" in out


def test_a_torn_first_metrics_line_with_a_cut_before_any_readable_epoch_is_one_line(run_copy, tmp_path, capsys):
    lines = (run_copy / "metrics.jsonl").read_text().splitlines()
    (run_copy / "metrics.jsonl").write_text(lines[0][:25] + "\n" + lines[1] + "\n")
    status = replay_command.main([str(run_copy), "--epochs", "1", "--data-dir", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert "--epochs 1: the record holds no readable epoch up to 1 (metrics.jsonl line 1 is not readable)" in err
    assert not (tmp_path / "data").exists()
