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
    except AttributeError:   # macOS has no affinity call
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
    except Exception:   # not inside a Hydra job: a single run from Python
        return 1, ""
    if "joblib" not in str(launcher.get("_target_", "")):
        return 1, ""
    return joblib_jobs(launcher.get("n_jobs"), usable_cores()), "hydra/launcher=parallel"
