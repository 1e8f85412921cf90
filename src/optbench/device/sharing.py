"""How many cores this process may use, and how many runs share them.

A run started by the parallel launcher (Hydra's joblib launcher, `n_jobs` runs at once) shares the
machine with the others; each gets `cores // runs` threads, so runs side by side do not oversubscribe
the cores (on a 2-core CPU two runs of one thread each train more images per second in total than one
run of two threads: docs/benchmarks.md, "Runs side by side"). One run at a time keeps torch's own
count, which OMP_NUM_THREADS sets when the user wants another.
"""

import os


def usable_cores() -> int:
    """The CPUs this process may run on: SLURM's or taskset's allotment where the OS reports one, else all."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS has no affinity call
        return os.cpu_count() or 1


def joblib_jobs(n_jobs, cores: int) -> int:
    """joblib's n_jobs as a count: negative counts from the cores (-1 = all, -2 = all but one)."""
    n_jobs = int(n_jobs or 1)
    return max(1, cores + 1 + n_jobs if n_jobs < 0 else n_jobs)


def concurrent_runs() -> tuple[int, str]:
    """(runs this process's launcher runs at once on this machine, the launcher's name): the joblib
    launcher's n_jobs; 1 for everything else (basic runs one at a time; submitit sends jobs to nodes)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        launcher = HydraConfig.get().launcher
    except Exception:  # not inside a Hydra job: a single run from Python  # noqa: BLE001
        return 1, ""
    if "joblib" not in str(launcher.get("_target_", "")):
        return 1, ""
    return joblib_jobs(launcher.get("n_jobs"), usable_cores()), "hydra/launcher=parallel"


# A width-16 CIFAR run on the CPU peaks at about 1.7 GB resident (docs/benchmarks.md, "Throughput and memory").
MEMORY_PER_CPU_RUN = 2 * 1024**3


def parallel_jobs() -> int:
    """The parallel launcher's default runs at once: one per GPU on a multi-GPU machine, two on one GPU;
    on a CPU one per core (measured fastest: docs/benchmarks.md, "Runs side by side"), no more than the
    memory holds."""
    import torch  # only when the parallel launcher asks for its n_jobs

    gpus = torch.cuda.device_count()
    if gpus:
        return max(gpus, 2)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    fits = memory // MEMORY_PER_CPU_RUN if memory > 0 else usable_cores()
    return max(1, min(usable_cores(), fits))
