"""Which Hydra launcher runs a study's jobs, and one GPU per job when several run side by side.

Launchers are plain Hydra configs in conf/hydra/launcher/: `parallel` (joblib, local processes),
`local` (submitit's local executor, what CI runs) and `slurm` (submitit on a SLURM cluster, through
src/hydra_plugins/optbench_slurm_launcher: sbatch's refusal is one line, `sbatch_error_line`);
`basic` is Hydra's default, one run after another in the calling process.

`${optbench_gpu_for_job:}` (registered by `optbench.hydra_glue.register_resolvers`) is the `device` of a
job run by the parallel launcher: each worker process claims the first free GPU with an flock on
`<tmp>/optbench-gpu-<N>.lock` and keeps it for its life (joblib reuses its workers, so a worker runs
all its jobs on one GPU and two workers never share one). With one GPU or none it is `auto`; with
more workers than GPUs the extra ones share, by job number. Outside a Hydra job (the up-front checks)
it is also `auto`, so validation passes.
"""

import fcntl
import os
import tempfile
from pathlib import Path

GPU_PER_JOB_DEVICE = "${optbench_gpu_for_job:}"       # the `device` override src/study.py adds for `parallel`
_claimed_gpu_lock = None  # this process's GPU lock file, kept open for the life of the process


def launcher_overrides(launcher: str) -> list[str]:
    return [] if launcher == "basic" else [f"hydra/launcher={launcher}"]


def gpu_for_job() -> str:
    try:
        from hydra.core.hydra_config import HydraConfig

        job_number = int(HydraConfig.get().job.num)
    except Exception:  # not inside a Hydra job (up-front checks), or a single run without a job number
        return "auto"
    import torch  # only inside a job, where training imports it anyway

    gpu_count = torch.cuda.device_count()
    if gpu_count <= 1:
        return "auto"
    return f"cuda:{_claim_gpu(gpu_count, job_number)}"


def _claim_gpu(gpu_count: int, job_number: int) -> int:
    """This worker's GPU: the one it already holds, else the first nobody holds, else job number mod count."""
    global _claimed_gpu_lock
    if _claimed_gpu_lock is not None:
        return int(Path(_claimed_gpu_lock.name).stem.rsplit("-", 1)[1])
    for index in range(gpu_count):
        handle = open(Path(tempfile.gettempdir()) / f"optbench-gpu-{index}.lock", "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        handle.truncate(0)
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        _claimed_gpu_lock = handle  # the kernel drops the lock when this process ends
        return index
    return job_number % gpu_count


# sbatch's complaint -> the likely fix (the first pattern found in its message wins).
SBATCH_FIXES = (
    (("gres", "generic resource"), "this cluster offers no GPUs to the job: on a CPU cluster add "
                                   "hydra.launcher.gpus_per_node=0, or pick a GPU partition (hydra.launcher.partition=NAME)"),
    (("invalid partition",), "choose a partition `sinfo` lists: hydra.launcher.partition=NAME"),
    (("unable to contact", "connection refused", "zero bytes were transmitted", "could not establish a configuration",
      "slurm_conf", "slurm.conf", "not found", "slurm cluster"),
     "sbatch cannot reach a SLURM cluster here: run from the cluster's login node, or set SLURM_CONF to its "
     "slurm.conf (scripts/local-slurm.sh up starts a one-node test cluster); --launcher local runs on this machine"),
    (("memory", "node configuration is not available", "cpus"),
     "ask for what a node has: hydra.launcher.mem_gb, hydra.launcher.cpus_per_task (sinfo -o '%P %c %m %G')"),
    (("time limit",), "ask for less time than the partition allows: hydra.launcher.timeout_min"),
)


def sbatch_error_line(complaint: str) -> str:
    """One line from sbatch's stderr: its last complaint and the likely fix."""
    lines = [line.strip() for line in str(complaint).splitlines() if line.strip()]
    said = (lines[-1] if lines else "sbatch failed").removeprefix("sbatch: error: ")
    lowered = said.lower()
    fix = next((fix for patterns, fix in SBATCH_FIXES if any(pattern in lowered for pattern in patterns)),
               "check the hydra.launcher.* settings (partition, gpus_per_node, mem_gb, timeout_min) against `sinfo`")
    return f"SLURM did not take the sweep ({said}): {fix}"
