"""The one line a study prints when it reuses or resumes runs trained on another processor kind or thread count.

A finished run is reused as it is and an unfinished one resumes under the thread count it started with
(training/assemble.py), but the numbers of a run trained elsewhere are not this machine's: the processor kind and
the thread count each move them about as much as a seed (docs/runs.md, Reproducibility). `reuse_note(runs,
here)` compares what the runs recorded with `here`, what a new run of this study gets on this machine
(`this_machine`, which loads torch, so it is asked only where a run is reused).
"""

from collections import Counter

from optbench import run_states
from optbench.formats import run_summary
from optbench.studies.plan import PlannedRun

REUSED = run_states.REUSED


def reused_runs(runs: list[PlannedRun]) -> list[PlannedRun]:
    return [run for run in runs if run.status in REUSED and run.trained_on is not None]


def reuse_note(runs: list[PlannedRun], here: tuple[str, str]) -> str | None:
    """`note: ...` naming how many reused or resumed runs were trained on another processor kind or thread
    count than `here` (processor kind, threads), and where; None when none was."""
    reused = reused_runs(runs)
    elsewhere = Counter(run.trained_on for run in reused if run.trained_on is not None and run.trained_on != here)
    if not elsewhere:
        return None
    where = "; ".join(f"{count} on {kind} with {threads} thread(s)" for (kind, threads), count in elsewhere.items())
    return (
        f"note: {sum(elsewhere.values())} of the {len(reused)} runs this study reuses or resumes were trained on "
        f"another processor kind or thread count ({where}; a new run here: {here[0]} with {here[1]} thread(s)): "
        "resumed ones keep their thread count, and their numbers are not this machine's "
        "('unknown': not recorded; docs/runs.md, Reproducibility)"
    )


def this_machine(device_name: str, launcher: str, threads: int | None = None) -> tuple[str, str]:
    """(processor kind, intra-op threads) a new run of this study gets here: the device's kind as the summary
    names it, and the threads the runs are set to (`device_policy.threads`, as `--set device_policy.threads=1`
    sets it), else those the device policy gives a run under this launcher."""
    import torch

    from optbench.device.policy import resolve_device
    from optbench.device.sharing import parallel_jobs, usable_cores
    from optbench.training import provenance

    device = resolve_device(device_name)
    facts = provenance.environment(device)
    gpu = facts["gpu"] or {}
    environment = run_summary.Environment(
        processor=facts["processor"],
        cpu_capability=facts["cpu_capability"],
        cpu_features=tuple(facts["cpu_features"]),
        threads=facts["threads"],
        gpu_name=gpu.get("name"),
        gpu_compute_capability=gpu.get("compute_capability"),
        mps_chip=facts["mps_chip"],
    )
    if threads is None:
        threads = max(1, usable_cores() // parallel_jobs()) if launcher == "parallel" else torch.get_num_threads()
    return environment.processor_kind, str(threads)
