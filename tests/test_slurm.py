"""Real SLURM jobs on the one-node cluster of scripts/local-slurm.sh: a study through sbatch read back by the
aggregator, a run requeued mid-training and a run past its time limit resuming from their checkpoints.

Skipped with the reason when no cluster answers (`sinfo` fails); `scripts/local-slurm.sh up` starts one
(CI does, .ci/run). SLURM_CONF defaults to that script's slurm.conf. Every job is a fresh Python that
imports torch, so each test takes tens of seconds on 2 cores. A requeued job waits for its BeginTime
(SLURM holds requeued jobs about two minutes); the tests release it at once (`scontrol update
StartTime=now`), which changes when the job starts again, not what it does.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO, TINY

SLURM_STATE = Path(os.environ.get("OPTBENCH_SLURM_DIR", "/tmp/optbench-slurm"))
if "SLURM_CONF" not in os.environ and (SLURM_STATE / "slurm.conf").is_file():
    os.environ["SLURM_CONF"] = str(SLURM_STATE / "slurm.conf")

CPU_JOB = ["hydra.launcher.gpus_per_node=0", "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=1"]
# Long enough (16 epochs: about 10 s on a quiet core) that a requeue sent when training starts lands
# mid-training; the time-limit test holds the job instead of counting on training outlasting the warning.
# One thread so the numbers of a job and of the reference run in this process's child are the same bit for bit.
PREEMPT_RUN = [
    *[o for o in TINY if not o.startswith("epochs=")],
    "epochs=16",
    "dataset.train_size=1500",
    "optimizer=adam",
]
TIMING_KEYS = ("time_s", "per_s", "wall_time", "resumes")
JOB_TIMEOUT_S = 420


def cluster_problem() -> str | None:
    try:
        result = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"no SLURM here: sinfo cannot run ({error}); scripts/local-slurm.sh up starts a one-node cluster"
    if result.returncode != 0:
        return f"no SLURM cluster answers: sinfo: {result.stderr.strip()[:200]} (scripts/local-slurm.sh up)"
    if not {"idle", "mix", "alloc", "comp"} & set(result.stdout.split()):
        return f"the SLURM cluster has no usable node (sinfo: {result.stdout.strip()})"
    return None


PROBLEM = cluster_problem()
# Every job here takes 20-40 s (a fresh Python per job, SLURM's scheduling): the slow tier.
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.extended,
    pytest.mark.skipif(PROBLEM is not None, reason=str(PROBLEM)),
]


def job_env() -> dict[str, str]:
    """The worktree's src first (SLURM jobs unpickle optbench in a fresh Python) and one thread."""
    paths = [str(REPO / "src"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths), OMP_NUM_THREADS="1")


def comparable(metrics_path: Path) -> list[dict]:
    records = [json.loads(line) for line in metrics_path.read_text().splitlines() if line.strip()]
    return [
        {key: value for key, value in record.items() if not any(part in key for part in TIMING_KEYS)}
        for record in records
    ]


def release_requeued_jobs(stop: threading.Event) -> None:
    """Start requeued jobs now instead of after SLURM's requeue delay (their BeginTime)."""
    while not stop.wait(1):
        pending = subprocess.run(["squeue", "-h", "-t", "PD", "-o", "%i %r"], capture_output=True, text=True).stdout
        for job_id, reason in (line.split(maxsplit=1) for line in pending.splitlines() if line.strip()):
            if reason.strip() == "BeginTime":
                subprocess.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"], capture_output=True)


def run_preempted_sweep(tmp_path: Path, interrupt, *launcher: str) -> tuple[subprocess.CompletedProcess, Path]:
    """A one-run SLURM sweep of PREEMPT_RUN; `interrupt(run_dir)` acts on it while it trains."""
    results = tmp_path / "results"
    command = [
        sys.executable,
        "src/train.py",
        "-m",
        *PREEMPT_RUN,
        "hydra/launcher=slurm",
        *CPU_JOB,
        *launcher,
        f"paths.results_dir={results}",
        f"paths.data_dir={tmp_path / 'data'}",
    ]
    log = open(tmp_path / "sweep.log", "w")
    sweep = subprocess.Popen(command, cwd=REPO, env=job_env(), stdout=log, stderr=subprocess.STDOUT)
    stop = threading.Event()
    releaser = threading.Thread(target=release_requeued_jobs, args=(stop,), daemon=True)
    releaser.start()
    try:
        # An epoch recorded, not the empty metrics.jsonl a fresh run writes before its stop-signal handlers are
        # installed: a warning held there reached submitit's handler, not the run's, and training went on (CI, stop 58).
        run_dir = wait_for(
            lambda: next((path.parent for path in results.rglob("metrics.jsonl") if path.stat().st_size), None), sweep
        )
        interrupt(run_dir)
        sweep.wait(timeout=JOB_TIMEOUT_S)
    finally:
        stop.set()
        if sweep.poll() is None:
            sweep.kill()
        if our_jobs(results):
            subprocess.run(["scancel", *our_jobs(results)], capture_output=True)  # nothing of ours left queued
        log.close()
    output = (tmp_path / "sweep.log").read_text()
    return subprocess.CompletedProcess(command, sweep.returncode, output, ""), run_dir


def job_processes(results: Path) -> list[int]:
    """The pids of the sweep's job steps on this one-node cluster: submitit's Python, run on <results>/.submitit."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:  # the process ended while we looked
            continue
        if b"submitit.core._submit" in argv and any(str(results / ".submitit").encode() in arg for arg in argv):
            found.append(int(cmdline.parent.name))
    return found


def warning_pending(pid: int) -> bool:
    """Whether SIGUSR2 waits, undelivered, on the stopped process (its /proc status's pending-signal masks)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # gone: nothing left to hold
    masks = [int(line.split()[1], 16) for line in status.splitlines() if line.startswith(("SigPnd:", "ShdPnd:"))]
    return any(mask & (1 << (signal.SIGUSR2 - 1)) for mask in masks)


def hold_until_warned(results: Path, timeout_s: float = 240) -> None:
    """Stop the job's Python mid-training until SLURM's time-limit warning is waiting on it, then let it go on.

    Without the hold the warning (about 30 s into the attempt) lands mid-training only while training is slower
    than that: on a quiet machine the run finished first and the warning never came (CI, stop 50)."""
    deadline = time.monotonic() + 60  # between attempts (a requeue) there is a moment with no job process
    while not (pids := job_processes(results)):
        assert time.monotonic() < deadline, "no job process found to hold"
        time.sleep(0.2)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + timeout_s
        while not any(warning_pending(pid) for pid in pids):
            assert time.monotonic() < deadline, f"no SIGUSR2 reached the held job within {timeout_s} s"
            time.sleep(0.5)
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass


def our_jobs(results: Path) -> list[str]:
    """The SLURM job ids of a sweep: submitit_folder is <results>/.submitit/%j."""
    return sorted(path.name for path in (results / ".submitit").glob("*") if path.name.isdigit())


def wait_for(probe, sweep: subprocess.Popen, timeout_s: float = JOB_TIMEOUT_S):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        assert sweep.poll() is None, "the sweep ended before its run started training"
        time.sleep(0.2)
    raise AssertionError(f"nothing after {timeout_s} s")


@pytest.fixture(scope="module")
def uninterrupted_metrics(tmp_path_factory) -> list[dict]:
    root = tmp_path_factory.mktemp("reference")
    command = [
        sys.executable,
        "src/train.py",
        *PREEMPT_RUN,
        f"hydra.run.dir={root / 'run'}",
        f"paths.results_dir={root / 'results'}",
        f"paths.data_dir={root / 'data'}",
    ]
    result = subprocess.run(command, cwd=REPO, env=job_env(), capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
    assert result.returncode == 0, result.stderr[-2000:]
    return comparable(root / "run" / "metrics.jsonl")


def test_smoke_study_runs_every_run_through_sbatch_and_the_aggregator_reads_them(tmp_path):
    results = tmp_path / "results"
    study = [
        sys.executable,
        "src/study.py",
        "smoke",
        "--launcher",
        "slurm",
        "--set",
        *CPU_JOB,
        "device=cpu",
        "train.progress_bar=false",
        f"paths.results_dir={results}",
        f"paths.data_dir={tmp_path / 'data'}",
    ]
    result = subprocess.run(study, cwd=REPO, env=job_env(), capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
    assert result.returncode == 0, result.stderr[-3000:]
    submissions = list((results / ".submitit").rglob("*_submission.sh"))
    assert submissions and "#SBATCH" in submissions[0].read_text()  # submitted with sbatch
    assert len(list((results / ".submitit").rglob("*_result.pkl"))) == 2  # both jobs came back
    dry_run = subprocess.run(
        [*study, "--dry-run", "--no-estimate"], cwd=REPO, env=job_env(), capture_output=True, text=True, timeout=120
    )
    planned = [line.split()[1] for line in dry_run.stdout.splitlines() if line.startswith("  ")]
    assert len(planned) == 2 and all(
        line.startswith("  done") for line in dry_run.stdout.splitlines() if line.startswith("  ")
    )
    for run_dir in planned:  # each run in the directory the plan names
        assert json.loads((Path(run_dir) / "summary.json").read_text())["status"] == "completed"
    aggregate = subprocess.run(
        [sys.executable, "src/aggregate.py", str(results), "--no-figures"],
        cwd=REPO,
        env=job_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert aggregate.returncode == 0, aggregate.stderr[-2000:]
    assert aggregate.stdout.startswith("2 runs ->")
    report = (results / "aggregate" / "report.md").read_text()
    assert "lion" in report and "sgd" in report


def test_a_run_requeued_mid_training_resumes_to_the_uninterrupted_numbers(tmp_path, uninterrupted_metrics):
    def requeue(run_dir: Path) -> None:
        jobs = our_jobs(tmp_path / "results")
        assert len(jobs) == 1, jobs
        subprocess.run(["scontrol", "requeue", jobs[0]], check=True)

    result, run_dir = run_preempted_sweep(tmp_path, requeue, "hydra.launcher.timeout_min=10")
    assert result.returncode == 0, result.stdout[-3000:]
    log = (run_dir / "train.log").read_text()
    assert "SIGTERM received" in log and "resuming" in log
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert comparable(run_dir / "metrics.jsonl") == uninterrupted_metrics


def test_a_run_past_its_time_limit_is_warned_requeued_and_resumes(tmp_path, uninterrupted_metrics):
    # --time=2 --signal=USR2@90: SLURM warns about 30 s into each attempt (measured: 30 s; with --time=1 the
    # warning came after 6 s, before training starts); the job is held mid-training until the warning waits on
    # it, then the run checkpoints and submitit's handler requeues it.
    result, run_dir = run_preempted_sweep(
        tmp_path,
        lambda run_dir: hold_until_warned(tmp_path / "results"),
        "hydra.launcher.timeout_min=2",
        "hydra.launcher.signal_delay_s=90",
        "hydra.launcher.max_num_timeout=10",
    )
    assert result.returncode == 0, result.stdout[-3000:]
    log = (run_dir / "train.log").read_text()
    assert "SIGUSR2 received" in log and "resuming" in log
    submission = next((tmp_path / "results" / ".submitit").rglob("*_submission.sh")).read_text()
    assert "--signal=USR2@90" in submission and "--time=2" in submission
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "completed"
    assert comparable(run_dir / "metrics.jsonl") == uninterrupted_metrics
