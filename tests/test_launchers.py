"""Hydra launchers for real: two joblib workers, submitit's local executor, and the SLURM config composed."""

import json
import os
import subprocess
import sys

import pytest
from conftest import CONF_DIR, REPO, TINY
from hydra import compose, initialize_config_dir

from optbench.device.gpu_per_job import GPU_PER_JOB_DEVICE
from optbench.device.sharing import usable_cores


def run_sweep(tmp_path, *overrides: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        str(REPO / "src" / "train.py"),
        "-m",
        *TINY,
        "optimizer=sgd,adam",
        f"paths.results_dir={tmp_path / 'results'}",
        f"paths.data_dir={tmp_path / 'data'}",
        *overrides,
    ]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)


def completed_optimizers(tmp_path) -> list[str]:
    summaries = [json.loads(path.read_text()) for path in (tmp_path / "results").rglob("summary.json")]
    return sorted(summary["optimizer"] for summary in summaries if summary["status"] == "completed")


@pytest.mark.slow
def test_joblib_launcher_runs_two_workers(tmp_path):
    # device via the per-job GPU resolver: on this CPU-only machine it resolves to auto -> cpu
    result = run_sweep(tmp_path, "hydra/launcher=parallel", "hydra.launcher.n_jobs=2", f"device={GPU_PER_JOB_DEVICE}")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Joblib.Parallel(n_jobs=2" in result.stdout + result.stderr
    assert completed_optimizers(tmp_path) == ["adam", "sgd"]
    for path in (tmp_path / "results").rglob("summary.json"):  # the cores shared out between the two runs
        policy = json.loads(path.read_text())["device_policy"]
        assert policy["threads"] == max(1, usable_cores() // 2) and "2 runs at once" in policy["reasons"]["threads"]
    assert result.stdout.splitlines()[-1].startswith(
        "sweep: 2 completed, 0 diverged, 0 failed, 0 skipped"
    )  # jobs elsewhere


@pytest.mark.slow
def test_submitit_local_launcher_runs_the_sweep(tmp_path):
    result = run_sweep(tmp_path, "hydra/launcher=local")
    assert result.returncode == 0, result.stderr[-2000:]
    assert completed_optimizers(tmp_path) == ["adam", "sgd"]
    assert list((tmp_path / "results" / ".submitit").rglob("*_result.pkl"))  # the jobs went through submitit


def test_slurm_launcher_config_carries_cluster_settings():
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(
            config_name="config",
            return_hydra_config=True,
            overrides=["hydra/launcher=slurm", "hydra.launcher.partition=gpu"],
        )
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert (launcher.partition, launcher.gpus_per_node, launcher.timeout_min) == ("gpu", 1, 720)
    assert launcher.max_num_timeout == 3 and launcher.signal_delay_s == 120


def stub_slurm(folder, complaint: str) -> dict:
    """An environment whose `sbatch` fails as a real one does (its complaint on stderr, exit 1)."""
    folder.mkdir()
    (folder / "sbatch").write_text(f"#!/bin/sh\necho 'sbatch: error: {complaint}' >&2\nexit 1\n")
    (folder / "srun").write_text("#!/bin/sh\nexit 0\n")  # submitit looks for srun before it submits
    for name in ("sbatch", "srun"):
        (folder / name).chmod(0o755)
    return dict(os.environ, PATH=f"{folder}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize(
    ("complaint", "fix"),
    [
        (
            "Batch job submission failed: Invalid generic resource (gres) specification",
            "hydra.launcher.gpus_per_node=0",
        ),
        ("Batch job submission failed: Unable to contact slurm controller (connect failure)", "SLURM_CONF"),
        ("Batch job submission failed: Invalid partition name specified", "hydra.launcher.partition=NAME"),
    ],
)
@pytest.mark.slow
def test_a_refused_sbatch_is_one_line_naming_its_complaint_and_the_fix(tmp_path, complaint, fix):
    """It was 43 lines ending in a submitit traceback, exit 1."""
    command = [
        sys.executable,
        str(REPO / "src" / "train.py"),
        "-m",
        *TINY,
        "seed=0,1",
        "hydra/launcher=slurm",
        f"paths.results_dir={tmp_path / 'results'}",
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=REPO, timeout=300, env=stub_slurm(tmp_path / "bin", complaint)
    )
    assert done.returncode == 2, done.stderr[-2000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: SLURM did not take the sweep (" + complaint.split(": ", 1)[0]) and fix in line


def test_sbatch_complaints_map_to_their_fixes():
    from optbench.studies.launchers import sbatch_error_line

    line = sbatch_error_line(
        "sbatch: error: some preamble\nsbatch: error: Batch job submission failed: "
        "Requested node configuration is not available\n"
    )
    assert "(Batch job submission failed: Requested node configuration is not available)" in line
    assert "hydra.launcher.mem_gb" in line and "\n" not in line
    assert "check the hydra.launcher.* settings" in sbatch_error_line("sbatch: error: something new")
