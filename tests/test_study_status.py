"""`python src/study.py NAME --status`: every run's state from its directory, the study's progress and the
time left, and nothing on disk changed by looking."""

import json
from pathlib import Path

import pytest
from conftest import compose_config
from omegaconf import OmegaConf
from test_study import SMALL, synthetic_grid, write_study

from optbench import identity, rundir
from optbench.formats import run_record
from optbench.studies import study_command

VARIANT = "batch_size=50,dataset.test_size=200,dataset.train_size=600,dataset.val_size=100,epochs=2,model.width=8"


def run_path(results: Path, optimizer: str, seed: int) -> Path:
    return results / "synthetic/none-0.0" / optimizer / VARIANT / f"seed{seed}"


def write_run(run_dir: Path, status: str, epochs_done: int, val_acc: float, wall_time_s: float, **extra) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    best = {"epoch": epochs_done, "val/acc": val_acc, "test/acc": val_acc}
    (run_dir / "summary.json").write_text(
        json.dumps(
            {
                "status": status,
                "epochs_done": epochs_done,
                "epochs_planned": 2,
                "best": best,
                "final": best,
                "wall_time_s": wall_time_s,
                **extra,
            }
        )
    )


def snapshot(folder: Path) -> dict:
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture
def study_with_every_state(tmp_path):
    """A 2 optimizers x 3 seeds study (2 epochs each) whose six runs stand in six different states."""
    study = write_study(tmp_path / "tiny.yaml", synthetic_grid(seed=[0, 1, 2], epochs=2))
    results = tmp_path / "results"
    write_run(run_path(results, "sgd", 0), "completed", 2, 0.61, 20.0)
    write_run(run_path(results, "sgd", 1), "diverged", 1, 0.12, 10.0)
    write_run(run_path(results, "sgd", 2), "failed", 1, 0.3, 10.0, error="RuntimeError: boom")
    write_run(run_path(results, "adam", 0), "running", 1, 0.45, 10.0)  # its trainer holds the lock (below)
    write_run(run_path(results, "adam", 1), "running", 1, 0.4, 10.0)  # killed: nobody holds the lock
    other = run_path(results, "adam", 2)  # another experiment's record
    cfg = compose_config(
        [
            *SMALL,
            "dataset=synthetic",
            "optimizer=adam",
            "seed=2",
            "epochs=2",
            "optimizer.lr=0.5",
            f"paths.results_dir={results}",
        ]
    )
    run_identity = identity.run_identity(OmegaConf.to_container(cfg, resolve=True), "data")
    other.mkdir(parents=True)
    run_record.write(other, run_record.new_record({}, run_identity, "2026-01-01T00:00:00+00:00"))
    return study, results


def test_status_shows_each_runs_state_best_accuracy_progress_and_time_left(study_with_every_state, capsys):
    study, results = study_with_every_state
    with rundir.RunDir(run_path(results, "adam", 0)).lock():  # a trainer at work on it
        before = snapshot(results)
        assert study_command.main([str(study), "--status", "--set", *SMALL, f"paths.results_dir={results}"]) == 0
        assert snapshot(results) == before  # looking changes no byte
    out = capsys.readouterr().out
    rows = {
        line.split()[-1]: line.split()
        for line in out.splitlines()
        if line.startswith(("completed", "diverged", "failed", "running", "interrupted"))
    }
    assert rows[f"synthetic/none-0.0/sgd/{VARIANT}/seed0"][:3] == ["completed", "2/2", "0.6100"]
    assert rows[f"synthetic/none-0.0/sgd/{VARIANT}/seed1"][:3] == ["diverged", "1/2", "0.1200"]
    assert rows[f"synthetic/none-0.0/adam/{VARIANT}/seed0"][:5] == ["running", "epoch", "2", "of", "2"]
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert (
        f"interrupted 1/2 0.4000 synthetic/none-0.0/adam/{VARIANT}/seed1 (its process is gone: the study command "
        "resumes it)" in lines
    )
    assert f"failed 1/2 0.3000 synthetic/none-0.0/sgd/{VARIANT}/seed2 (RuntimeError: boom)" in lines
    assert f"other experiment 0/2 - synthetic/none-0.0/adam/{VARIANT}/seed2 (optimizer.lr: 0.5 -> 0.001)" in lines
    assert (
        "progress: 2 of 6 runs finished (1 completed, 1 diverged); 1 running, 1 interrupted, 1 failed, "
        "1 other experiment; 7 of 12 epochs (58%)"
    ) in out
    # 500 training + 300 evaluation images / 3 = 600 image-passes an epoch; 6 epochs trained in 60 s: 60 a second;
    # left: one epoch each of the running, interrupted and failed runs = 3 x 600 / 60 = 30 s
    assert "remaining: about 30 s for 3 epochs, one run after another, at the rate of the 6 epochs" in out


def test_status_of_a_study_not_started_says_when_the_time_is_known(tmp_path, capsys):
    study = write_study(tmp_path / "tiny.yaml", synthetic_grid())
    results = tmp_path / "results"
    assert study_command.main([str(study), "--status", "--set", *SMALL, f"paths.results_dir={results}"]) == 0
    out = capsys.readouterr().out
    assert out.count("\nnew ") == 4 and "0 of 4 runs finished" in out and "0 of 4 epochs (0%)" in out
    assert "remaining: 4 epochs; the time is known once a run has trained an epoch (python src/study.py tiny" in out
    assert not results.exists()


def test_status_of_an_unknown_study_is_one_error_line(capsys):
    assert study_command.main(["no_such_study", "--status"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown study 'no_such_study'") and err.count("\n") == 1
