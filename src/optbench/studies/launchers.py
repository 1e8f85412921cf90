"""Which Hydra launcher runs a study's jobs, and what sbatch's refusal means.

Launchers are plain Hydra configs in conf/hydra/launcher/: `parallel` (joblib, local processes),
`local` (submitit's local executor, what CI runs) and `slurm` (submitit on a SLURM cluster, through
src/hydra_plugins/optbench_slurm_launcher: sbatch's refusal is one line, `sbatch_error_line`);
`basic` is Hydra's default, one run after another in the calling process.

One GPU per job when several run side by side is device/gpu_per_job.py's (`GPU_PER_JOB_DEVICE`, the
`device` this package adds for `parallel`): hydra_glue registers its resolver, and it sits below both.
Every sweep is `TRAIN_SCRIPT -m` in a child process with `job_environment`: a study's sweeps, and the probe
sweep its estimate may train (studies/probe.py).
"""

import os

from optbench.specs.study_spec import REPO

TRAIN_SCRIPT = REPO / "src" / "train.py"


def launcher_overrides(launcher: str) -> list[str]:
    return [] if launcher == "basic" else [f"hydra/launcher={launcher}"]


# sbatch's complaint -> the likely fix (the first pattern found in its message wins).
SBATCH_FIXES = (
    (
        ("gres", "generic resource"),
        "this cluster offers no GPUs to the job: on a CPU cluster add "
        "hydra.launcher.gpus_per_node=0, or pick a GPU partition (hydra.launcher.partition=NAME)",
    ),
    (("invalid partition",), "choose a partition `sinfo` lists: hydra.launcher.partition=NAME"),
    (
        (
            "unable to contact",
            "connection refused",
            "zero bytes were transmitted",
            "could not establish a configuration",
            "slurm_conf",
            "slurm.conf",
            "not found",
            "slurm cluster",
        ),
        "sbatch cannot reach a SLURM cluster here: run from the cluster's login node, or set SLURM_CONF to its "
        "slurm.conf (scripts/local-slurm.sh up starts a one-node test cluster); --launcher local runs on this machine",
    ),
    (
        ("memory", "node configuration is not available", "cpus"),
        "ask for what a node has: hydra.launcher.mem_gb, hydra.launcher.cpus_per_task (sinfo -o '%P %c %m %G')",
    ),
    (("time limit",), "ask for less time than the partition allows: hydra.launcher.timeout_min"),
)


def sbatch_error_line(complaint: str) -> str:
    """One line from sbatch's stderr: its last complaint and the likely fix."""
    lines = [line.strip() for line in str(complaint).splitlines() if line.strip()]
    said = (lines[-1] if lines else "sbatch failed").removeprefix("sbatch: error: ")
    lowered = said.lower()
    fix = next(
        (fix for patterns, fix in SBATCH_FIXES if any(pattern in lowered for pattern in patterns)),
        "check the hydra.launcher.* settings (partition, gpus_per_node, mem_gb, timeout_min) against `sinfo`",
    )
    return f"SLURM did not take the sweep ({said}): {fix}"


def job_environment(study_id: str = "") -> dict[str, str]:
    """This process's environment with this checkout's src/ first on PYTHONPATH: jobs that start a fresh
    Python elsewhere (submitit's pickled callables on SLURM) then import the same optbench as the sweep.
    OPTBENCH_STUDY names the study for the runs' experiment trackers (conf/config.yaml `study`)."""
    env = dict(os.environ)
    if study_id:
        env["OPTBENCH_STUDY"] = study_id
    source = str(REPO / "src")
    paths = [path for path in env.get("PYTHONPATH", "").split(os.pathsep) if path and path != source]
    env["PYTHONPATH"] = os.pathsep.join([source, *paths])
    return env
