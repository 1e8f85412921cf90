"""One GPU per job when a parallel launcher runs several jobs side by side on one machine.

`${optbench_gpu_for_job:}` (GPU_PER_JOB_DEVICE; registered by `optbench.config.hydra_glue.register_resolvers`,
added as the `device` of every job by the study planner for `--launcher parallel`) resolves to the
device of a job: each worker process claims the first free GPU with an flock on
`<tmp>/optbench-gpu-<N>.lock` and keeps it for its life (joblib reuses its workers, so a worker runs
all its jobs on one GPU and two workers never share one). With one GPU or none it is `auto`; with
more workers than GPUs the extra ones share, by job number. Outside a Hydra job (the up-front checks)
it is also `auto`, so validation passes. Standard library only at import: torch loads inside a job.
"""

import fcntl
import os
import tempfile
from pathlib import Path

GPU_PER_JOB_DEVICE = "${optbench_gpu_for_job:}"  # the `device` override the planner adds for `parallel`
_claimed_gpu_lock = None  # this process's GPU lock file, kept open for the life of the process


def gpu_for_job() -> str:
    try:
        from hydra.core.hydra_config import HydraConfig

        job_number = int(HydraConfig.get().job.num)
    except Exception:  # not inside a Hydra job (up-front checks), or a single run without a job number  # noqa: BLE001
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
