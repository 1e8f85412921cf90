"""Hydra launchers for real: two joblib workers, submitit's local executor, and the SLURM config composed."""

import json
import subprocess
import sys

from hydra import compose, initialize_config_dir

from conftest import CONF_DIR, REPO, TINY
from optbench.studies.launchers import GPU_PER_JOB_DEVICE


def run_sweep(tmp_path, *overrides: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(REPO / "src" / "train.py"), "-m", *TINY, "optimizer=sgd,adam",
               f"paths.results_dir={tmp_path / 'results'}", f"paths.data_dir={tmp_path / 'data'}", *overrides]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)


def completed_optimizers(tmp_path) -> list[str]:
    summaries = [json.loads(path.read_text()) for path in (tmp_path / "results").rglob("summary.json")]
    return sorted(summary["optimizer"] for summary in summaries if summary["status"] == "completed")


def test_joblib_launcher_runs_two_workers(tmp_path):
    # device via the per-job GPU resolver: on this CPU-only machine it resolves to auto -> cpu
    result = run_sweep(tmp_path, "hydra/launcher=parallel", "hydra.launcher.n_jobs=2", f"device={GPU_PER_JOB_DEVICE}")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Joblib.Parallel(n_jobs=2" in result.stdout + result.stderr
    assert completed_optimizers(tmp_path) == ["adam", "sgd"]
    assert result.stdout.splitlines()[-1].startswith("sweep: 2 completed, 0 diverged, 0 failed, 0 skipped")  # jobs elsewhere


def test_submitit_local_launcher_runs_the_sweep(tmp_path):
    result = run_sweep(tmp_path, "hydra/launcher=local")
    assert result.returncode == 0, result.stderr[-2000:]
    assert completed_optimizers(tmp_path) == ["adam", "sgd"]
    assert list((tmp_path / "results" / ".submitit").rglob("*_result.pkl"))  # the jobs went through submitit


def test_slurm_launcher_config_carries_cluster_settings():
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", return_hydra_config=True,
                      overrides=["hydra/launcher=slurm", "hydra.launcher.partition=gpu"])
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert (launcher.partition, launcher.gpus_per_node, launcher.timeout_min) == ("gpu", 1, 720)
    assert launcher.max_num_timeout == 3 and launcher.signal_delay_s == 120
