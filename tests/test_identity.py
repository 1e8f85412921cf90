"""A run directory only ever holds one experiment: run identity in record.json, checked at skip and resume.

Four ways a directory could come to hold two experiments or lose its record (two datasets in one directory, a
record rewritten by a later command, a broken image file, empty directories left by a refused command), each
tried as a user would type it and refused in one line that changes nothing on disk, plus the lines a run ends
with.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import REPO, TINY, compose_config, copy_of
from PIL import Image

from optbench import identity, rundir
from optbench.config.hydra_glue import dataset_dir_name
from optbench.errors import ConfigError
from optbench.formats import run_record, tuning_record
from optbench.training.run import train

pytestmark = pytest.mark.usefixtures("one_thread")


def snapshot(folder: Path) -> dict[str, str]:
    """Every file below `folder` (hidden ones included) -> its content hash."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def run_cli(args: list[str], tmp_path: Path):
    env = {**os.environ, "OPTBENCH_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run(
        [sys.executable, "src/train.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )


def image_folder(root: Path, classes=("cat", "dog"), per_class: int = 12, seed: int = 0) -> Path:
    generator = torch.Generator().manual_seed(seed)
    for part, count in (("train", per_class), ("test", per_class // 2)):
        for name in classes:
            for index in range(count):
                pixels = torch.randint(0, 256, (32, 32, 3), generator=generator, dtype=torch.uint8)
                (root / part / name).mkdir(parents=True, exist_ok=True)
                Image.fromarray(pixels.numpy()).save(root / part / name / f"{index}.png")
    return root


@pytest.fixture(scope="session")
def cli_tiny_run(built_once) -> Path:
    """The tiny synthetic run trained once through src/train.py: results/ and what it printed (stdout.txt).
    Read-only: a test takes a copy of what it changes."""

    def build(folder: Path) -> None:
        done = run_cli([*TINY, f"paths.results_dir={folder / 'results'}"], folder)
        assert done.returncode == 0, done.stderr
        (folder / "stdout.txt").write_text(done.stdout)

    return built_once("identity-cli-tiny-run", build)


@pytest.fixture(scope="session")
def cli_folder_run(built_once) -> Path:
    """A two-class image folder (images/) and its run trained once through src/train.py (results/).
    Read-only: a test takes a copy of what it changes."""

    def build(folder: Path) -> None:
        root = image_folder(folder / "images")
        done = run_cli(folder_args(root, folder), folder)
        assert done.returncode == 0, done.stderr

    return built_once("identity-cli-folder-run", build)


def folder_args(root: Path, tmp_path: Path) -> list[str]:
    return [
        "dataset=imagefolder",
        f"dataset.root={root}",
        "dataset.val_size=4",
        "model.width=8",
        "epochs=1",
        "batch_size=8",
        "device=cpu",
        "train.progress_bar=false",
        f"paths.results_dir={tmp_path / 'results'}",
    ]


def test_record_holds_the_config_and_its_identity_and_is_written_once(tiny_config, tmp_path):
    run_dir = tmp_path / "run"
    summary = train(tiny_config(), run_dir)
    record = json.loads((run_dir / rundir.RECORD_FILE).read_text())
    assert record["run_id"] == summary["run_id"] == identity.run_id(record["identity"])
    assert record["config"]["optimizer"]["name"] == "sgd" and record["identity"]["data"].startswith("synthetic")
    assert "paths.results_dir" not in record["identity"]["config"] and "optimizer.lr" in record["identity"]["config"]
    before = snapshot(run_dir)
    train(tiny_config(), run_dir)  # skipped: nothing rewritten
    assert snapshot(run_dir) == before


def test_settings_that_do_not_change_the_numbers_keep_the_identity(tiny_config, tmp_path):
    train(tiny_config(), tmp_path / "run")
    again = train(
        tiny_config("train.eval_batch_size=7", "train.checkpoint_every=0", "device_policy.num_workers=3"),
        tmp_path / "run",
    )
    assert again["status"] == "completed"  # skipped as the same experiment


@pytest.mark.slow
def test_a_completed_run_with_other_settings_is_refused_and_no_byte_changes(tmp_path, cli_tiny_run):
    [trained] = [path.parent for path in (cli_tiny_run / "results").rglob(rundir.RECORD_FILE)]
    run_dir = copy_of(trained, tmp_path / "run")  # a completed run train.py made, .hydra/ included
    before = snapshot(run_dir)
    done = run_cli([*TINY, f"hydra.run.dir={run_dir}", "optimizer.lr=0.5", "epochs=3"], tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "holds another experiment" in line and "optimizer.lr: 0.1 -> 0.5" in line and "epochs: 1 -> 3" in line
    assert "train.rerun=true" in line
    assert snapshot(run_dir) == before  # .hydra/ included: Hydra no longer rewrites it


@pytest.mark.slow
def test_an_interrupted_run_refuses_other_settings_without_touching_hydra_files(tmp_path):
    run_dir = tmp_path / "run"
    cfg = compose_config([*TINY, "epochs=2"])
    train(cfg, run_dir, {"overrides.yaml": "- epochs=2\n"})
    summary = json.loads((run_dir / rundir.SUMMARY_FILE).read_text())
    summary["status"] = "interrupted"  # as a stop signal leaves it (the checkpoint is there)
    (run_dir / rundir.SUMMARY_FILE).write_text(json.dumps(summary))
    before = snapshot(run_dir)
    done = run_cli([*TINY, "epochs=2", f"hydra.run.dir={run_dir}", "optimizer.lr=0.5"], tmp_path)
    assert done.returncode == 2 and "optimizer.lr" in done.stderr
    assert snapshot(run_dir) == before and (run_dir / ".hydra" / "overrides.yaml").read_text() == "- epochs=2\n"


@pytest.mark.slow
def test_two_image_folders_get_two_directories_and_never_share_one(tmp_path, cli_folder_run):
    first = cli_folder_run / "images"  # ("cat", "dog"), trained once for every test that starts from it
    copy_of(cli_folder_run / "results", tmp_path / "results")
    second = image_folder(tmp_path / "b" / "images", ("ant", "bee"), seed=1)
    assert dataset_dir_name("imagefolder", str(first)) != dataset_dir_name("imagefolder", str(second))
    assert dataset_dir_name("imagefolder", str(first)).startswith("imagefolder-images-")
    assert run_cli(folder_args(second, tmp_path), tmp_path).returncode == 0
    assert len(list((tmp_path / "results").rglob(rundir.RECORD_FILE))) == 2
    # Forced into one directory, the second folder is refused: the data differ.
    run_dir = next((tmp_path / "results").rglob(rundir.RECORD_FILE)).parent
    root_of_run = first if str(first) in (run_dir / rundir.RECORD_FILE).read_text() else second
    other = second if root_of_run == first else first
    before = snapshot(run_dir)
    done = run_cli([*folder_args(other, tmp_path), f"hydra.run.dir='{run_dir}'"], tmp_path)
    assert done.returncode == 2 and "the data differ" in done.stderr
    assert snapshot(run_dir) == before


@pytest.mark.slow
@pytest.mark.extended
def test_changed_images_in_the_same_folder_are_other_data(tmp_path):
    """The directory is named by content: new pixels under the same names train into a new directory,
    and the runs of the old images are left as they were."""
    root = image_folder(tmp_path / "images")
    assert run_cli(folder_args(root, tmp_path), tmp_path).returncode == 0
    [first] = (tmp_path / "results").iterdir()
    before = snapshot(first)
    image_folder(root, per_class=12, seed=5)  # same names, new pixels
    done = run_cli(folder_args(root, tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "results").iterdir())) == 2 and snapshot(first) == before
    # Forced into the old directory, the new images are refused: the data differ.
    run_dir = next(first.rglob(rundir.RECORD_FILE)).parent
    done = run_cli([*folder_args(root, tmp_path), f"hydra.run.dir='{run_dir}'"], tmp_path)
    assert done.returncode == 2 and "the data differ" in done.stderr and snapshot(first) == before


def one_line_run(done) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@pytest.mark.slow
def test_a_copy_of_the_data_at_another_path_finds_the_same_runs(tmp_path, cli_folder_run):
    """The dataset level is `imagefolder-<folder>-<content fingerprint>`: another checkout's copy of the data
    (another path, fresh mtimes, even another folder name) finds the runs made on the original."""
    root = cli_folder_run / "images"  # trained through train.py at this path
    copy_of(cli_folder_run / "results", tmp_path / "results")
    [level] = (tmp_path / "results").iterdir()
    fingerprint = json.loads(next(level.rglob(rundir.RECORD_FILE)).read_text())["identity"]["data"]
    assert level.name == f"imagefolder-images-{fingerprint.split(':')[1][:8]}"
    before = snapshot(level)
    for copy in (tmp_path / "elsewhere" / "images", tmp_path / "renamed" / "cifar-copy"):
        shutil.copytree(root, copy, copy_function=shutil.copy)  # new mtimes
        assert "skipped" in one_line_run(run_cli(folder_args(copy, tmp_path), tmp_path))
        assert list((tmp_path / "results").iterdir()) == [level] and snapshot(level) == before


@pytest.mark.slow
def test_runs_named_by_the_older_path_hash_are_found_and_used(tmp_path, cli_folder_run):
    """Runs made before names were by content (`imagefolder-<folder>-<hash of its absolute path>`) are
    found by the data fingerprint their records hold, from any path of the data."""
    root = cli_folder_run / "images"  # trained through train.py at this path
    copy_of(cli_folder_run / "results", tmp_path / "results")
    [level] = (tmp_path / "results").iterdir()
    older = level.with_name(f"imagefolder-images-{hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:8]}")
    level.rename(older)
    before = snapshot(older)
    copy = tmp_path / "b" / "images"
    shutil.copytree(root, copy)
    assert "skipped" in one_line_run(run_cli(folder_args(copy, tmp_path), tmp_path))
    assert list((tmp_path / "results").iterdir()) == [older] and snapshot(older) == before


@pytest.mark.slow
def test_published_cpu_study_is_done_from_a_copy_of_the_data_at_another_path(tmp_path, real_cifar10_root, capsys):
    """docs/cpu-study/runs (named when the data lived at ../shared/data/cifar10-jpeg) planned against a copy
    of the data elsewhere: all 21 main runs are done, none new."""
    from optbench.studies import study_command

    copy = tmp_path / "elsewhere" / "cifar10-jpeg"
    copy.parent.mkdir()
    if subprocess.run(["cp", "-al", str(real_cifar10_root), str(copy)], capture_output=True).returncode:
        pytest.skip("cannot hard-link the real data into the test folder")  # another file system
    argv = [
        "cpu_demo",
        "--dry-run",
        "--no-estimate",
        "--set",
        f"paths.results_dir={REPO / 'docs/cpu-study/runs'}",
        f"dataset.root={copy}",
        f"paths.data_dir={os.environ['OPTBENCH_TEST_DATA_DIR']}",
    ]
    assert study_command.main(argv) == 0
    out = capsys.readouterr().out
    assert "50 runs in 10 sweep(s): 50 done, 0 unfinished, 0 new" in out  # the tuning study
    assert "21 runs in 7 sweep(s): 21 done, 0 unfinished, 0 new" in out


@pytest.mark.slow
def test_a_broken_image_is_one_line_naming_it_and_leaves_no_run_directory(tmp_path):
    root = image_folder(tmp_path / "images")
    (root / "train" / "cat" / "broken.jpg").write_bytes(b"this is not a JPEG")
    done = run_cli(folder_args(root, tmp_path), tmp_path)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "broken.jpg cannot be decoded" in line
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_a_refused_command_leaves_no_empty_directories(tmp_path):
    (tmp_path / "results").mkdir()
    done = run_cli(folder_args(tmp_path / "nowhere", tmp_path), tmp_path)
    assert done.returncode == 2 and "nowhere does not exist" in done.stderr
    assert list((tmp_path / "results").iterdir()) == []


def test_a_directory_without_a_record_is_refused(tiny_config, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / rundir.SUMMARY_FILE).write_text('{"status": "completed"}')
    with pytest.raises(ConfigError, match="without a record.json"):
        train(tiny_config(), run_dir)


def test_rerun_replaces_another_experiment(tiny_config, tmp_path):
    train(tiny_config(), tmp_path / "run")
    replaced = train(tiny_config("optimizer.lr=0.05", "train.rerun=true"), tmp_path / "run")
    record = json.loads((tmp_path / "run" / rundir.RECORD_FILE).read_text())
    assert replaced["run_id"] == record["run_id"] and record["config"]["optimizer"]["lr"] == 0.05


@pytest.mark.slow
def test_every_run_ends_with_one_line_naming_its_directory_status_and_headline(tmp_path, cli_tiny_run):
    first_stdout = (cli_tiny_run / "stdout.txt").read_text()  # what train.py printed training the run
    last = first_stdout.strip().splitlines()[-1]
    assert "completed: " in last and str(cli_tiny_run / "results") in last and "test acc 0." in last
    assert sum("device cpu" in line for line in first_stdout.splitlines()) == 1  # the policy is one line
    assert "reasons" not in first_stdout and "policy amp=" not in first_stdout
    log = next((cli_tiny_run / "results").rglob(rundir.LOG_FILE)).read_text()
    assert "policy amp=" in log and "policy keep_awake=" in log  # the details stay in train.log
    copy_of(cli_tiny_run / "results", tmp_path / "results")
    args = [*TINY, f"paths.results_dir={tmp_path / 'results'}"]
    again = run_cli(args, tmp_path).stdout.strip().splitlines()[-1]
    assert again.split("] ", 1)[1].startswith("skipped, already completed: ") and "test acc 0." in again


def test_flag_style_arguments_get_the_override_form_in_one_line(tmp_path):
    done = run_cli(["--optimizer", "adam", "--epochs", "10"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: src/train.py takes Hydra overrides, not flags: python src/train.py optimizer=adam epochs=10 "
        "(or python run_single_experiment.py --optimizer adam --epochs 10)"
    ]


def test_the_rename_script_gives_older_levels_their_content_names(tmp_path):
    """scripts/rename_data_levels.py: the published runs' path-hash level gets its content name, their
    tuning record follows, and the aggregator still finds the 44 main runs with the 50 trials set aside."""
    from optbench.analysis import aggregate

    runs = tmp_path / "runs"
    shutil.copytree(REPO / "docs" / "cpu-study" / "runs", runs)
    [older] = runs.glob("imagefolder-*")
    fingerprint = run_record.recorded_data(older)
    done = subprocess.run(
        [sys.executable, "scripts/rename_data_levels.py", str(runs)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert [path.name for path in runs.glob("imagefolder-*")] == [f"imagefolder-cifar10-jpeg-{fingerprint[12:20]}"]
    assert older.name not in (runs / "tuning-tune_cpu_demo.json").read_text()
    outcome = aggregate(runs, tmp_path / "out", 0.5, REPO / "experiments", draw_figures=False)
    assert outcome.runs == 44  # cpu_demo's 21 and the 23 its clean settings added until decided


def test_the_rename_script_refuses_a_damaged_tuning_record_before_it_renames_anything(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(REPO / "docs" / "cpu-study" / "runs", runs)
    record = runs / "tuning-tune_cpu_demo.json"
    record.write_text(record.read_text().replace('"epochs_done": 3', '"epochs_done": "3"', 1))
    before = snapshot(runs)
    done = subprocess.run(
        [sys.executable, "scripts/rename_data_levels.py", str(runs)], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: {record}: field optimizers.adam.trials[0].runs[0].epochs_done is '3', not a whole number >= 0: "
        f"{tuning_record.WAY_OUT}"
    ]
    assert snapshot(runs) == before
